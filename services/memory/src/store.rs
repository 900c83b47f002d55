//! The memory store: MEMORY.md (the agent's notes) and USER.md (the user profile) in the profile
//! home, edited entry by entry, every write scanned and saved atomically at once.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::atomic::{DirLock, write_atomic};
use crate::entries::{self, char_count, preview};
use crate::error::MemoryError;
use crate::scan::Scanner;
use crate::snapshot::{BlockedEntry, MemorySnapshot};

/// Default limit of MEMORY.md, in characters (Unicode scalar values).
pub const MEMORY_CHAR_LIMIT: usize = 2_200;

/// Default limit of USER.md, in characters (Unicode scalar values).
pub const USER_CHAR_LIMIT: usize = 1_375;

/// How many characters of each entry error messages show.
const PREVIEW_CHARS: usize = 60;

/// Which file an operation works on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Target {
    /// MEMORY.md: the agent's own notes (environment facts, conventions, lessons learned).
    Memory,
    /// USER.md: what the agent knows about the user (preferences, role, habits).
    User,
}

impl Target {
    /// Both targets, in prompt order.
    pub const ALL: [Target; 2] = [Target::Memory, Target::User];

    /// The name used by the `memory` tool: `memory` or `user`.
    pub fn as_str(self) -> &'static str {
        match self {
            Target::Memory => "memory",
            Target::User => "user",
        }
    }

    /// Parses the `memory` tool's `target` argument.
    pub fn parse(name: &str) -> Option<Target> {
        Target::ALL.into_iter().find(|t| t.as_str() == name)
    }

    /// The file in the profile home.
    pub fn file_name(self) -> &'static str {
        match self {
            Target::Memory => "MEMORY.md",
            Target::User => "USER.md",
        }
    }

    /// The section heading in the system prompt.
    pub fn heading(self) -> &'static str {
        match self {
            Target::Memory => "MEMORY",
            Target::User => "USER PROFILE",
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How full a file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    /// Characters in the file as written.
    pub chars: usize,
    /// The file's limit.
    pub limit: usize,
    /// Number of entries.
    pub entries: usize,
}

impl fmt::Display for Usage {
    /// "734/2200 chars".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{} chars", self.chars, self.limit)
    }
}

/// The result of a successful write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteOutcome {
    /// Usage after the write.
    pub usage: Usage,
    /// False when nothing needed to change (adding an entry that already exists).
    pub changed: bool,
}

/// MEMORY.md and USER.md in one directory (the profile home).
#[derive(Debug, Clone)]
pub struct MemoryStore {
    dir: PathBuf,
    scanner: &'static Scanner,
    memory_limit: usize,
    user_limit: usize,
}

impl MemoryStore {
    /// A store in `dir` (created on the first write) with the built-in threat scanner and the
    /// default limits.
    pub fn open(dir: impl Into<PathBuf>) -> Result<Self, MemoryError> {
        Ok(Self {
            dir: dir.into(),
            scanner: Scanner::builtin()?,
            memory_limit: MEMORY_CHAR_LIMIT,
            user_limit: USER_CHAR_LIMIT,
        })
    }

    /// The same store with other character limits (from configuration).
    pub fn with_limits(mut self, memory_chars: usize, user_chars: usize) -> Self {
        self.memory_limit = memory_chars;
        self.user_limit = user_chars;
        self
    }

    /// The directory holding the files.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The path of a target's file.
    pub fn path(&self, target: Target) -> PathBuf {
        self.dir.join(target.file_name())
    }

    /// The character limit of a target.
    pub fn limit(&self, target: Target) -> usize {
        match target {
            Target::Memory => self.memory_limit,
            Target::User => self.user_limit,
        }
    }

    /// The current entries of a target, read from disk (so they include this session's writes).
    pub fn entries(&self, target: Target) -> Result<Vec<String>, MemoryError> {
        Ok(entries::parse(&self.read(target)?))
    }

    /// How full a target is now.
    pub fn usage(&self, target: Target) -> Result<Usage, MemoryError> {
        let text = self.read(target)?;
        Ok(self.usage_of(target, &text))
    }

    /// Adds an entry. Adding an entry that already exists changes nothing.
    pub fn add(&self, target: Target, content: &str) -> Result<WriteOutcome, MemoryError> {
        let content = self.check_content(target, content)?;
        let _lock = DirLock::acquire(&self.dir)?;
        let text = self.read(target)?;
        let mut list = entries::parse(&text);
        if list.contains(&content) {
            return Ok(WriteOutcome {
                usage: self.usage_of(target, &text),
                changed: false,
            });
        }
        list.push(content);
        self.write(target, &text, &list)
    }

    /// Replaces the one entry containing `old_text` with `content`.
    pub fn replace(
        &self,
        target: Target,
        old_text: &str,
        content: &str,
    ) -> Result<WriteOutcome, MemoryError> {
        let content = self.check_content(target, content)?;
        let _lock = DirLock::acquire(&self.dir)?;
        let text = self.read(target)?;
        let mut list = entries::parse(&text);
        let index = find_one(target, &list, old_text)?;
        list[index] = content;
        // Replacing an entry with the text of another one would leave a duplicate.
        let mut seen = std::collections::HashSet::new();
        list.retain(|e| seen.insert(e.clone()));
        self.write(target, &text, &list)
    }

    /// Removes the one entry containing `old_text`.
    pub fn remove(&self, target: Target, old_text: &str) -> Result<WriteOutcome, MemoryError> {
        let _lock = DirLock::acquire(&self.dir)?;
        let text = self.read(target)?;
        let mut list = entries::parse(&text);
        let index = find_one(target, &list, old_text)?;
        list.remove(index);
        self.write(target, &text, &list)
    }

    /// Reads both files once for the system prompt. Entries that trip the scanner are replaced by
    /// a `[BLOCKED: …]` marker and listed in [`MemorySnapshot::blocked`].
    pub fn snapshot(&self) -> Result<MemorySnapshot, MemoryError> {
        let mut blocked = Vec::new();
        let (memory, memory_usage) = self.snapshot_section(Target::Memory, &mut blocked)?;
        let (user, user_usage) = self.snapshot_section(Target::User, &mut blocked)?;
        Ok(MemorySnapshot {
            memory,
            user,
            memory_usage,
            user_usage,
            blocked,
        })
    }

    /// One file's text for the snapshot, with blocked entries replaced by markers.
    fn snapshot_section(
        &self,
        target: Target,
        blocked: &mut Vec<BlockedEntry>,
    ) -> Result<(String, Usage), MemoryError> {
        let text = self.read(target)?;
        let shown: Vec<String> = entries::parse(&text)
            .into_iter()
            .enumerate()
            .map(|(i, entry)| match self.scanner.scan(&entry) {
                None => entry,
                Some(threat) => {
                    let marker = format!(
                        "[BLOCKED: {} entry {} — {}]",
                        target.file_name(),
                        i + 1,
                        threat.rule_id
                    );
                    blocked.push(BlockedEntry {
                        target,
                        index: i + 1,
                        threat,
                    });
                    marker
                }
            })
            .collect();
        Ok((entries::serialize(&shown), self.usage_of(target, &text)))
    }

    /// Trims `content`, rejects empty or separator-holding text and scans it.
    fn check_content(&self, target: Target, content: &str) -> Result<String, MemoryError> {
        let content = content.trim();
        if content.is_empty() {
            return Err(MemoryError::EmptyContent);
        }
        if entries::contains_separator(content) {
            return Err(MemoryError::ContainsSeparator);
        }
        if let Some(threat) = self.scanner.scan(content) {
            return Err(MemoryError::Blocked {
                file: target.file_name(),
                threat,
            });
        }
        Ok(content.to_owned())
    }

    /// Writes `list` if it fits the limit; `old_text` is the file as it was, for the usage report.
    fn write(
        &self,
        target: Target,
        old_text: &str,
        list: &[String],
    ) -> Result<WriteOutcome, MemoryError> {
        let new_text = entries::serialize(list);
        let limit = self.limit(target);
        let would_be = char_count(&new_text);
        let used = char_count(old_text);
        // A change that shrinks an over-full file (edited by hand) is always allowed.
        if would_be > limit && would_be > used {
            return Err(MemoryError::Full {
                file: target.file_name(),
                used,
                limit,
                would_be,
            });
        }
        write_atomic(&self.path(target), &new_text)?;
        Ok(WriteOutcome {
            usage: Usage {
                chars: would_be,
                limit,
                entries: list.len(),
            },
            changed: true,
        })
    }

    /// The file's text; a missing file is empty.
    fn read(&self, target: Target) -> Result<String, MemoryError> {
        let path = self.path(target);
        match std::fs::read_to_string(&path) {
            Ok(text) => Ok(text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
            Err(e) => Err(MemoryError::io(path, e)),
        }
    }

    fn usage_of(&self, target: Target, text: &str) -> Usage {
        Usage {
            chars: char_count(text),
            limit: self.limit(target),
            entries: entries::parse(text).len(),
        }
    }
}

/// The index of the one entry containing `old_text`. Several identical matching entries count as
/// one (the first is used).
fn find_one(target: Target, list: &[String], old_text: &str) -> Result<usize, MemoryError> {
    let needle = old_text.trim();
    if needle.is_empty() {
        return Err(MemoryError::EmptyOldText);
    }
    let matches: Vec<usize> = (0..list.len())
        .filter(|&i| list[i].contains(needle))
        .collect();
    match matches.as_slice() {
        [] => Err(MemoryError::NoMatch {
            file: target.file_name(),
            old_text: needle.to_owned(),
            starts: list.iter().map(|e| preview(e, PREVIEW_CHARS)).collect(),
        }),
        [one] => Ok(*one),
        [first, rest @ ..] if rest.iter().all(|&i| list[i] == list[*first]) => Ok(*first),
        _ => Err(MemoryError::Ambiguous {
            file: target.file_name(),
            old_text: needle.to_owned(),
            count: matches.len(),
            starts: matches
                .iter()
                .map(|&i| preview(&list[i], PREVIEW_CHARS))
                .collect(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn find_one_picks_the_single_substring_match() {
        let l = list(&["tabs over spaces", "uses zsh", "dark theme"]);
        assert_eq!(find_one(Target::User, &l, "zsh").unwrap(), 1);
        assert_eq!(find_one(Target::User, &l, "  dark ").unwrap(), 2);
    }

    #[test]
    fn find_one_reports_none_several_and_empty() {
        let l = list(&["tabs over spaces", "tabs in Makefiles", "dark theme"]);
        match find_one(Target::User, &l, "light") {
            Err(MemoryError::NoMatch { starts, .. }) => assert_eq!(starts.len(), 3),
            other => panic!("{other:?}"),
        }
        match find_one(Target::User, &l, "tabs") {
            Err(MemoryError::Ambiguous { count, starts, .. }) => {
                assert_eq!(count, 2);
                assert_eq!(starts, ["tabs over spaces", "tabs in Makefiles"]);
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            find_one(Target::User, &l, " "),
            Err(MemoryError::EmptyOldText)
        ));
    }

    #[test]
    fn identical_duplicates_are_one_match() {
        let l = list(&["same", "other", "same"]);
        assert_eq!(find_one(Target::Memory, &l, "sam").unwrap(), 0);
    }

    #[test]
    fn target_names_round_trip() {
        for target in Target::ALL {
            assert_eq!(Target::parse(target.as_str()), Some(target));
        }
        assert_eq!(Target::parse("MEMORY"), None);
        assert_eq!(Target::Memory.file_name(), "MEMORY.md");
        assert_eq!(Target::User.file_name(), "USER.md");
    }

    #[test]
    fn usage_displays_as_used_over_limit() {
        let usage = Usage {
            chars: 734,
            limit: 2200,
            entries: 3,
        };
        assert_eq!(usage.to_string(), "734/2200 chars");
    }
}
