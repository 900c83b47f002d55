//! The frozen memory snapshot: read once at session start and rendered into the system prompt,
//! so the prompt prefix stays byte-identical (and cacheable) for the whole session.

use crate::scan::Threat;
use crate::store::{Target, Usage};

/// An entry left out of the snapshot because it tripped the threat scanner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockedEntry {
    /// The file it is in.
    pub target: Target,
    /// Its position, counting from 1.
    pub index: usize,
    /// The rule it tripped.
    pub threat: Threat,
}

/// MEMORY.md and USER.md as they were when the session started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemorySnapshot {
    /// MEMORY.md entries separated by `\n§\n`, blocked ones replaced by `[BLOCKED: …]` markers.
    pub memory: String,
    /// USER.md entries, likewise.
    pub user: String,
    /// How full MEMORY.md was.
    pub memory_usage: Usage,
    /// How full USER.md was.
    pub user_usage: Usage,
    /// Entries that were replaced by markers, for the caller to report.
    pub blocked: Vec<BlockedEntry>,
}

impl MemorySnapshot {
    /// Whether both files were empty.
    pub fn is_empty(&self) -> bool {
        self.memory.is_empty() && self.user.is_empty()
    }

    /// The system prompt section: a heading with usage per file, then its entries.
    ///
    /// ```text
    /// ## MEMORY (734/2200 chars)
    /// Your notes from earlier sessions …
    /// first entry
    /// §
    /// second entry
    ///
    /// ## USER PROFILE (120/1375 chars)
    /// …
    /// ```
    ///
    /// The output depends only on the snapshot, so equal snapshots render byte-for-byte equal.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for (target, text, usage) in [
            (Target::Memory, &self.memory, &self.memory_usage),
            (Target::User, &self.user, &self.user_usage),
        ] {
            if !out.is_empty() {
                out.push_str("\n\n");
            }
            out.push_str(&format!("## {} ({usage})\n", target.heading()));
            out.push_str(intro(target));
            out.push('\n');
            if text.is_empty() {
                out.push_str("(no entries yet)");
            } else {
                out.push_str(text);
            }
        }
        out
    }
}

/// One line on what a section holds and when changes show.
fn intro(target: Target) -> &'static str {
    match target {
        Target::Memory => {
            "Your own notes from earlier sessions (frozen at session start; changes you make with \
             the `memory` tool are saved at once and appear here from the next session)."
        }
        Target::User => "What you have learned about the user (same rules).",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(chars: usize, limit: usize, entries: usize) -> Usage {
        Usage {
            chars,
            limit,
            entries,
        }
    }

    #[test]
    fn renders_headings_usage_and_entries() {
        let snapshot = MemorySnapshot {
            memory: "a\n§\nb".to_owned(),
            user: String::new(),
            memory_usage: usage(5, 2200, 2),
            user_usage: usage(0, 1375, 0),
            blocked: Vec::new(),
        };
        let text = snapshot.render();
        assert!(text.starts_with("## MEMORY (5/2200 chars)\n"), "{text}");
        assert!(
            text.contains("\na\n§\nb\n\n## USER PROFILE (0/1375 chars)\n"),
            "{text}"
        );
        assert!(text.ends_with("(no entries yet)"), "{text}");
        assert!(!snapshot.is_empty());
        assert_eq!(text, snapshot.clone().render());
    }
}
