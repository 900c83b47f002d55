//! Project context files (AGENTS.md and friends) from the working directory, scanned before they
//! reach the system prompt.

use std::collections::HashSet;
use std::path::Path;

use crate::scan::{Scanner, Scope, Threat};

/// The files read, in prompt order. CLAUDE.md and .hermes.md are read for compatibility with
/// projects set up for those agents.
pub const CONTEXT_FILE_NAMES: [&str; 4] = ["AGENTS.md", ".talaria.md", "CLAUDE.md", ".hermes.md"];

/// Characters of one file that reach the prompt; the rest is cut with a note.
pub const CONTEXT_FILE_CHAR_LIMIT: usize = 20_000;

/// One context file as it goes into the prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextFile {
    /// The file name, e.g. `AGENTS.md`.
    pub name: String,
    /// The text for the prompt: the file (cut to the limit, with a note), a `[BLOCKED: …]` marker
    /// or an `[UNREADABLE: …]` note.
    pub text: String,
    /// The rule the file tripped, when it was blocked.
    pub blocked: Option<Threat>,
}

/// Reads the context files in `cwd`, in [`CONTEXT_FILE_NAMES`] order. Missing files are skipped;
/// a name that resolves to a file already read (a symlink `CLAUDE.md -> AGENTS.md`) is skipped
/// too. Text that trips a threat rule is replaced by `[BLOCKED: <file> — <rule description>]`.
/// If the scanner cannot be loaded, every file is withheld rather than passed unchecked.
pub fn load_context_files(cwd: &Path) -> Vec<ContextFile> {
    let scanner = Scanner::builtin();
    let mut seen = HashSet::new();
    let mut files = Vec::new();
    for name in CONTEXT_FILE_NAMES {
        let path = cwd.join(name);
        if !path.is_file() {
            continue;
        }
        if let Ok(canonical) = path.canonicalize()
            && !seen.insert(canonical)
        {
            continue;
        }
        let text = match std::fs::read(&path) {
            Ok(bytes) => truncate(name, &String::from_utf8_lossy(&bytes)),
            Err(e) => {
                files.push(ContextFile {
                    name: name.to_owned(),
                    text: format!("[UNREADABLE: {name} — {e}]"),
                    blocked: None,
                });
                continue;
            }
        };
        let file = match &scanner {
            Ok(scanner) => match scanner.scan_in(&text, Scope::Document) {
                None => ContextFile {
                    name: name.to_owned(),
                    text,
                    blocked: None,
                },
                Some(threat) => ContextFile {
                    name: name.to_owned(),
                    text: format!("[BLOCKED: {name} — {}]", threat.description),
                    blocked: Some(threat),
                },
            },
            Err(e) => ContextFile {
                name: name.to_owned(),
                text: format!("[UNREADABLE: {name} — {e}]"),
                blocked: None,
            },
        };
        files.push(file);
    }
    files
}

/// The prompt section for the loaded files: a short heading, then each file under its name.
/// No files give an empty string.
pub fn render_context_files(files: &[ContextFile]) -> String {
    if files.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "# Project context\nThese files come from the current working directory and describe \
         the project.",
    );
    for file in files {
        out.push_str("\n\n## ");
        out.push_str(&file.name);
        out.push('\n');
        out.push_str(file.text.trim_end());
    }
    out
}

/// Cuts `text` to [`CONTEXT_FILE_CHAR_LIMIT`] characters with a note saying so.
fn truncate(name: &str, text: &str) -> String {
    let total = text.chars().count();
    if total <= CONTEXT_FILE_CHAR_LIMIT {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(CONTEXT_FILE_CHAR_LIMIT).collect();
    cut.push_str(&format!(
        "\n\n[… truncated: {name} has {total} characters; only the first \
         {CONTEXT_FILE_CHAR_LIMIT} are shown. Read the file for the rest.]"
    ));
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncates_long_text_with_a_note() {
        let long = "é".repeat(CONTEXT_FILE_CHAR_LIMIT + 5);
        let cut = truncate("AGENTS.md", &long);
        assert!(cut.starts_with(&"é".repeat(CONTEXT_FILE_CHAR_LIMIT)));
        assert!(cut.contains("AGENTS.md has 20005 characters"), "{cut}");
        assert_eq!(truncate("AGENTS.md", "short"), "short");
    }

    #[test]
    fn renders_nothing_for_no_files() {
        assert_eq!(render_context_files(&[]), "");
    }
}
