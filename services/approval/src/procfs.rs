//! Another process's environment and memory: `/proc/PID/environ`, `mem` and `map_files` hold its
//! secrets (API keys, tokens). The lists match their plain spellings; the syntax screen asks
//! this module about each word, spelled as far as the line says, to see what a regex cannot: a
//! glob (`/proc/*/enviro[n]`, `/proc/1/*`), a brace (`/proc/1/{maps,mem}`), a variable or
//! command substitution (`/proc/$(pgrep x)/environ`, `$P/environ`), a `cd` into `/proc/PID`
//! before a relative name, and paths built in code (`'/proc/' + pid + '/environ'`).
//!
//! `/proc/self` (and `thread-self`) is the reading process itself: its environment is what
//! `env` prints (the command's own, scrubbed by the executor), so it is not flagged. `$$` is a
//! variable, and is.

use crate::paths::expand_braces;

/// Stands for text built at run time in a spelled word: any text, `/` included.
pub(crate) const UNKNOWN: char = '\u{1}';

/// What of another process a word reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ProcessRead {
    /// `/proc/PID/environ`.
    Environment,
    /// `/proc/PID/mem`, `/proc/PID/map_files/…`.
    Memory,
}

impl ProcessRead {
    /// The finding id (the lists use the same ones for the plain spellings).
    pub(crate) fn id(self) -> &'static str {
        match self {
            ProcessRead::Environment => "read-process-environ",
            ProcessRead::Memory => "read-process-memory",
        }
    }

    pub(crate) fn description(self) -> &'static str {
        match self {
            ProcessRead::Environment => {
                "reads a process's environment (its secrets, e.g. API keys)"
            }
            ProcessRead::Memory => "reads a process's memory (its secrets, e.g. API keys)",
        }
    }
}

/// What the word `text` (as spelled, [`UNKNOWN`] for parts built at run time) reaches as a path
/// or as code, and whether it is a process's directory; relative names are read against `cwd`
/// (the directory a `cd` on the line moved to). Runs for every word of every line: each check
/// is skipped unless a byte scan finds what it needs.
pub(crate) fn judge_word(text: &str, cwd: Option<&str>) -> (Option<ProcessRead>, bool) {
    let proc = mentions_proc(text);
    let read = in_path(text, cwd).or_else(|| if proc { in_text(text) } else { None });
    let directory = (proc || cwd.is_some()) && is_process_directory(text, cwd);
    (read, directory)
}

/// What the path `word` reaches: `word` as spelled ([`UNKNOWN`] for the parts built at run
/// time), relative names read against `cwd` (the directory a `cd` on the line moved to).
pub(crate) fn in_path(word: &str, cwd: Option<&str>) -> Option<ProcessRead> {
    if !may_name_secret(word) {
        return None;
    }
    expand_braces(word).iter().find_map(|path| {
        let joined;
        let path = match cwd {
            Some(dir) if !path.starts_with(['/', '~', UNKNOWN]) => {
                joined = format!("{dir}/{path}");
                &joined
            }
            _ => path,
        };
        reached(&parts(path), path.starts_with('/'))
    })
}

/// Whether `word` holds a secret's name, a glob or an unknown part: only such a word can name a
/// secret. One pass over the bytes: this runs for every word of every line.
fn may_name_secret(word: &str) -> bool {
    let bytes = word.as_bytes();
    bytes.iter().enumerate().any(|(at, byte)| match byte {
        b'*' | b'?' | b'[' | 1 => true,
        b'e' => bytes[at..].starts_with(b"environ"),
        b'm' => bytes[at..].starts_with(b"mem") || bytes[at..].starts_with(b"map_files"),
        _ => false,
    })
}

/// Whether `text` holds `/proc` (a byte scan: most words hold no `/`).
pub(crate) fn mentions_proc(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes
        .iter()
        .enumerate()
        .any(|(at, byte)| *byte == b'/' && bytes[at..].starts_with(b"/proc"))
}

/// Programs that read the directories they are given recursively (or copy them).
pub(crate) const DIRECTORY_READERS: &[&str] = &[
    "grep", "egrep", "fgrep", "zgrep", "rg", "ag", "ack", "tar", "zip", "7z", "cp", "rsync", "scp",
];

/// Whether the path `word` names another process's directory (`/proc/PID/`, `…/task/TID`) or
/// `/proc` itself: a program that reads directories recursively reads the secrets in it.
/// Relative names count only against a `cwd` the line moved to.
fn is_process_directory(word: &str, cwd: Option<&str>) -> bool {
    let joined;
    let word = match cwd {
        Some(dir) if !word.starts_with(['/', '~', UNKNOWN]) => {
            joined = format!("{dir}/{word}");
            &joined
        }
        _ => word,
    };
    let absolute = word.starts_with('/');
    expand_braces(word).iter().any(|path| {
        let parts = parts(path);
        parts.iter().enumerate().any(|(i, part)| {
            let proc = (*part == "proc" && (i > 0 || absolute))
                || (i == 0 && absolute && is_pattern(part) && names(part, "proc"));
            proc && match &parts[i + 1..] {
                [] => true,
                [pid] => is_process(pid),
                [pid, task] => is_process(pid) && names(task, "task"),
                [pid, task, tid] => is_process(pid) && names(task, "task") && is_process(tid),
                _ => false,
            }
        })
    })
}

/// What code, or a command's words read together, reach when they name `/proc` and a secret
/// apart: `open('/proc/' + str(pid) + '/environ')`, `find /proc -name environ`.
pub(crate) fn in_text(text: &str) -> Option<ProcessRead> {
    if !mentions_proc(text) {
        return None;
    }
    let (mut other, mut whole) = (false, false);
    for (at, _) in text.match_indices("/proc") {
        let rest = &text[at + "/proc".len()..];
        match rest.chars().next() {
            Some('/') => {
                let name: String = rest[1..]
                    .chars()
                    .take_while(|&c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
                    .collect();
                // A process built in code (`'/proc/' + pid`, `/proc/%d`) or a number; not
                // `self` or a named file (`/proc/meminfo`).
                if name.chars().all(|c| c.is_ascii_digit()) {
                    other = true;
                    whole |= name.is_empty() && rest.len() == 1;
                }
            }
            Some(c) if c.is_ascii_alphanumeric() || c == '_' || c == '-' => {}
            _ => (other, whole) = (true, true),
        }
    }
    if !other {
        None
    } else if has_token(text, "environ") {
        Some(ProcessRead::Environment)
    } else if has_token(text, "map_files")
        || has_token(text, "/mem")
        || (whole && has_token(text, "mem"))
    {
        Some(ProcessRead::Memory)
    } else {
        None
    }
}

/// Whether `token` stands in `text` as a name of its own (not `os.environ`, not `memory`).
fn has_token(text: &str, token: &str) -> bool {
    let part_of_name = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let starts_name = token.starts_with(part_of_name);
    text.match_indices(token).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + token.len()..].chars().next();
        let joined = starts_name && before.is_some_and(|c| part_of_name(c) || c == '.');
        !joined && !after.is_some_and(part_of_name)
    })
}

/// The parts of `path`, `.` and `..` resolved lexically (`..` after a part built at run time
/// keeps that part: it may be anything).
fn parts(path: &str) -> Vec<&str> {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|last| !last.contains(UNKNOWN)) {
                    parts.pop();
                }
            }
            _ => parts.push(part),
        }
    }
    parts
}

/// What the resolved `parts` reach, trying each place `proc` may stand: a literal `proc`
/// anywhere (`/proc/self/root/proc/1/…`, `if=/proc/1/mem`), a glob for it at the root
/// (`/p*/1/environ`), or a part built at run time, which may also hold `/proc/PID` itself.
fn reached(parts: &[&str], absolute: bool) -> Option<ProcessRead> {
    for (i, part) in parts.iter().enumerate() {
        let unknown = part.contains(UNKNOWN);
        let proc = *part == "proc" || unknown || (i == 0 && absolute && names(part, "proc"));
        if proc && let Some(found) = after_proc(&parts[i + 1..]) {
            return Some(found);
        }
        if unknown && let Some(found) = in_process(&parts[i + 1..], true) {
            return Some(found);
        }
    }
    None
}

/// After `/proc`: a process, then what is in it.
fn after_proc(rest: &[&str]) -> Option<ProcessRead> {
    let (pid, rest) = rest.split_first()?;
    if is_process(pid) {
        in_process(rest, true)
    } else {
        None
    }
}

/// In a process's (or with `tasks`, also a thread's) directory: `environ`, `mem`,
/// `map_files/…`, or `task/TID/` and the same.
fn in_process(rest: &[&str], tasks: bool) -> Option<ProcessRead> {
    match rest {
        [leaf] if names(leaf, "environ") => Some(ProcessRead::Environment),
        [leaf] if names(leaf, "mem") => Some(ProcessRead::Memory),
        [first, ..] if names(first, "map_files") => Some(ProcessRead::Memory),
        [task, tid, rest @ ..] if tasks && names(task, "task") && is_process(tid) => {
            in_process(rest, false)
        }
        _ => None,
    }
}

/// Whether a part may name another process: a number, a glob that fits one, a part built at run
/// time; not `self` or `thread-self` (the reading process itself) or a named file.
fn is_process(part: &str) -> bool {
    if is_pattern(part) {
        return ["1", "12", "123", "1234", "12345", "123456", "1234567"]
            .iter()
            .any(|pid| glob(part, pid));
    }
    !part.is_empty() && part.chars().all(|c| c.is_ascii_digit())
}

/// Whether a part (a glob, or built at run time) may be `name`.
fn names(part: &str, name: &str) -> bool {
    if is_pattern(part) {
        glob(part, name)
    } else {
        part == name
    }
}

fn is_pattern(part: &str) -> bool {
    part.contains(['*', '?', '[', UNKNOWN])
}

/// One element of a glob.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Glob {
    /// `*` or a part built at run time: any text.
    Any,
    /// `?` or a `[…]` class (read as any one character: conservative).
    One,
    Char(char),
}

/// Whether the glob `pattern` fits `name`. Matched by backtracking to the last `*` only, so no
/// pattern takes long.
fn glob(pattern: &str, name: &str) -> bool {
    let mut elements = Vec::new();
    let mut chars = pattern.chars().peekable();
    while let Some(c) = chars.next() {
        elements.push(match c {
            '*' | UNKNOWN => Glob::Any,
            '?' => Glob::One,
            '[' if pattern.contains(']') => {
                // Past the class's `]` (a `]` first in the class is part of it).
                chars.next_if_eq(&']');
                for c in chars.by_ref() {
                    if c == ']' {
                        break;
                    }
                }
                Glob::One
            }
            c => Glob::Char(c),
        });
    }
    let name: Vec<char> = name.chars().collect();
    let (mut at, mut to) = (0, 0);
    let mut last_any: Option<(usize, usize)> = None;
    while to < name.len() {
        match elements.get(at) {
            Some(Glob::Any) => {
                last_any = Some((at, to));
                at += 1;
            }
            Some(Glob::One) => (at, to) = (at + 1, to + 1),
            Some(Glob::Char(c)) if *c == name[to] => (at, to) = (at + 1, to + 1),
            _ => match last_any {
                Some((any, from)) => {
                    last_any = Some((any, from + 1));
                    (at, to) = (any + 1, from + 1);
                }
                None => return false,
            },
        }
    }
    elements[at..].iter().all(|element| *element == Glob::Any)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(word: &str) -> Option<ProcessRead> {
        in_path(&word.replace('$', &UNKNOWN.to_string()), None)
    }

    #[test]
    fn spellings_of_another_process_are_seen() {
        use ProcessRead::{Environment, Memory};
        assert_eq!(path("/proc/1/environ"), Some(Environment));
        assert_eq!(path("/proc/$/environ"), Some(Environment));
        assert_eq!(path("$/environ"), Some(Environment));
        assert_eq!(path("/proc/$A/enviro[n]"), Some(Environment));
        assert_eq!(path("/proc/[0-9]*/environ"), Some(Environment));
        assert_eq!(path("/proc/1/*"), Some(Environment));
        assert_eq!(path("/proc/1/{maps,mem}"), Some(Memory));
        assert_eq!(path("/proc/1/task/2/environ"), Some(Environment));
        assert_eq!(path("/proc/1/task/*/mem"), Some(Memory));
        assert_eq!(path("/proc/1/map_files/7f-80"), Some(Memory));
        assert_eq!(path("if=/proc/1/mem"), Some(Memory));
        assert_eq!(path("/proc/self/../1/environ"), Some(Environment));
        assert_eq!(path("/proc/self/root/proc/1/environ"), Some(Environment));
        assert_eq!(path("/p*/1/e*"), Some(Environment));
        assert_eq!(in_path("environ", Some("/proc/1")), Some(Environment));
        assert_eq!(in_path("1/mem", Some("/proc")), Some(Memory));
    }

    #[test]
    fn the_own_process_and_other_files_are_not() {
        for word in [
            "/proc/self/environ",
            "/proc/thread-self/environ",
            "/proc/self/task/1/environ",
            "/proc/1/status",
            "/proc/*/status",
            "/proc/1/maps",
            "/proc/meminfo",
            "/proc/s*/environ",
            "src/mem.rs",
            "$",
            "$/notes/environ",
            "environ",
        ] {
            assert_eq!(path(word), None, "{word}");
        }
        assert_eq!(in_path("environ", Some("/proc/self")), None);
    }

    #[test]
    fn process_directories_are_known() {
        assert!(is_process_directory("/proc", None));
        assert!(is_process_directory("/proc/1/", None));
        assert!(is_process_directory("/proc/[0-9]*", None));
        assert!(is_process_directory("/proc/1/task/2", None));
        assert!(is_process_directory(".", Some("/proc/1")));
        assert!(!is_process_directory("/proc/self", None));
        assert!(!is_process_directory("/proc/sys", None));
        assert!(!is_process_directory("/proc/1/fd", None));
        assert!(!is_process_directory("proc", None));
        assert!(!is_process_directory("src", None));
    }

    #[test]
    fn globs_fit_as_the_shell_would() {
        assert!(glob("enviro[n]", "environ"));
        assert!(glob("e*n", "environ"));
        assert!(glob("*", "environ"));
        assert!(glob("m?m", "mem"));
        assert!(glob("[]x]em", "mem"));
        assert!(!glob("e*x", "environ"));
        assert!(!glob("mem?", "mem"));
        assert!(glob("[", "["));
        // Many stars stay quick.
        let many = format!("{}b", "*a".repeat(200));
        assert!(!glob(&many, &"a".repeat(300)));
    }

    #[test]
    fn code_naming_proc_and_a_secret_apart_is_seen() {
        use ProcessRead::{Environment, Memory};
        assert_eq!(
            in_text("open('/proc/'+str(pid)+'/environ')"),
            Some(Environment)
        );
        assert_eq!(in_text("open('/proc/%d/mem' % pid)"), Some(Memory));
        assert_eq!(in_text("find /proc -name environ"), Some(Environment));
        assert_eq!(in_text("find /proc -name mem"), Some(Memory));
        assert_eq!(in_text("grep -i mem /proc/meminfo"), None);
        assert_eq!(in_text("cat /proc/self/environ"), None);
        assert_eq!(in_text("ls /proc/1/; print(os.environ)"), None);
    }
}
