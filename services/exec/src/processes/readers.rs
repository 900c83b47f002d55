//! Who reads a background process's stdin right now, and so how text written to it is judged.
//!
//! Text written to a program's input is a command to that program: a shell runs it as a
//! script, a debugger (`shell …`), `sqlite3` (`.shell …`), `ed` (`!…`) or a REPL run their
//! own commands, `cat` only copies it. The program first started says little (a background
//! `bash` that has since started `python3 -i` is a Python REPL now), so the readers are found
//! in `/proc`: every process descended from the one started that holds the same pipe as its
//! fd 0. The strictest of them decides ([`InputReader`]), since whichever is left reads what
//! the others did not.

use std::collections::HashMap;

/// How text for a process's stdin is judged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum InputReader {
    /// Only programs that treat their input as data (`cat`, `grep`, `sort` …): anything goes.
    Data,
    /// A shell reads it (and no other program that runs commands): screened as a command.
    Shell,
    /// This program may run what it reads as commands of its own: it needs approval like a
    /// dangerous command.
    Program(String),
}

/// Shells, whose input is screened as a command line.
const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox"];

/// Programs that only ever treat their standard input as data (their command lines, which
/// say what they do with it, were screened when they started).
const DATA_PROGRAMS: &[&str] = &[
    "cat",
    "tac",
    "tee",
    "head",
    "tail",
    "wc",
    "sort",
    "uniq",
    "grep",
    "egrep",
    "fgrep",
    "rg",
    "sed",
    "awk",
    "gawk",
    "mawk",
    "tr",
    "cut",
    "paste",
    "nl",
    "od",
    "xxd",
    "hexdump",
    "base64",
    "base32",
    "md5sum",
    "sha1sum",
    "sha256sum",
    "sha512sum",
    "b2sum",
    "cksum",
    "gzip",
    "gunzip",
    "zcat",
    "bzip2",
    "xz",
    "zstd",
    "lz4",
    "tar",
    "jq",
    "yq",
    "sleep",
    "true",
    "false",
    "yes",
    "dd",
    "split",
    "fold",
    "fmt",
    "column",
    "iconv",
    "strings",
    "file",
    "cmp",
    "pv",
    "nc",
    "ncat",
    "socat",
    "rev",
    "expand",
    "unexpand",
    "comm",
    "join",
    "shuf",
    "stdbuf",
    "timeout",
];

/// Our own wrappers around a command (bubblewrap, the supervisor), which pass its stdin on
/// and never read it.
fn is_wrapper(pid: u32, name: &str) -> bool {
    if name == "bwrap" {
        return true;
    }
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    cmdline
        .split(|b| *b == 0)
        .nth(1)
        .is_some_and(|arg| arg == crate::SUPERVISE_ARG.as_bytes())
}

/// Who reads stdin of the process tree started as `root` (its pid), when its stdin is the
/// pipe `inode`. `None` when `/proc` names no reader but our wrappers (no such process, no
/// `/proc`, or the command not started yet: its fork still looks like the supervisor): the
/// caller then screens the text as a command line, since whoever reads it later is unknown.
pub(crate) fn readers(root: u32, inode: u64) -> Option<InputReader> {
    let children = children_by_parent()?;
    let mut stack = vec![root];
    let mut verdict: Option<InputReader> = None;
    while let Some(pid) = stack.pop() {
        stack.extend(children.get(&pid).into_iter().flatten().copied());
        if !holds_pipe(pid, inode) {
            continue;
        }
        let name = program_of(pid);
        if is_wrapper(pid, &name) {
            continue;
        }
        verdict = Some(stricter(verdict, classify(&name)));
    }
    verdict
}

/// The stricter of two verdicts.
fn stricter(current: Option<InputReader>, next: InputReader) -> InputReader {
    match (current, next) {
        (Some(program @ InputReader::Program(_)), _) => program,
        (_, program @ InputReader::Program(_)) => program,
        (Some(InputReader::Shell), _) | (_, InputReader::Shell) => InputReader::Shell,
        _ => InputReader::Data,
    }
}

/// How a program of this name treats its input (version suffixes like `python3.11` ignored).
pub(crate) fn classify(name: &str) -> InputReader {
    let base = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    if SHELLS.contains(&name) || SHELLS.contains(&base) {
        InputReader::Shell
    } else if DATA_PROGRAMS.contains(&name) || DATA_PROGRAMS.contains(&base) {
        InputReader::Data
    } else {
        InputReader::Program(name.to_owned())
    }
}

/// Every process's children, from `/proc/*/stat`.
fn children_by_parent() -> Option<HashMap<u32, Vec<u32>>> {
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid …`: the name may hold spaces and parentheses.
        let Some(after) = stat.rfind(')').map(|at| &stat[at + 1..]) else {
            continue;
        };
        if let Some(parent) = after.split_whitespace().nth(1).and_then(|p| p.parse().ok()) {
            children.entry(parent).or_default().push(pid);
        }
    }
    Some(children)
}

/// Whether any of `pid`'s file descriptors is the pipe `inode`: a shell that moved it off
/// fd 0 (`exec 3<&0 0</dev/null`) still reads it later.
fn holds_pipe(pid: u32, inode: u64) -> bool {
    let pipe = format!("pipe:[{inode}]");
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.flatten().any(|fd| {
        std::fs::read_link(fd.path()).is_ok_and(|link| link.as_os_str().to_string_lossy() == pipe)
    })
}

/// The program's name: its executable's file name, else its `comm`.
fn program_of(pid: u32) -> String {
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).unwrap_or_default();
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|c| c.trim().to_owned())
        .unwrap_or_default();
    exe.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .filter(|n| !n.is_empty() && n != "busybox")
        .unwrap_or(comm)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programs_are_judged_by_what_they_do_with_input() {
        assert_eq!(classify("bash"), InputReader::Shell);
        assert_eq!(classify("dash"), InputReader::Shell);
        assert_eq!(classify("cat"), InputReader::Data);
        assert_eq!(classify("sha256sum"), InputReader::Data);
        for program in ["python3.11", "gdb", "sqlite3", "ed", "node", "perl", "less"] {
            assert_eq!(
                classify(program),
                InputReader::Program(program.to_owned()),
                "{program}"
            );
        }
    }

    #[test]
    fn the_strictest_reader_decides() {
        let python = InputReader::Program("python3".into());
        assert_eq!(
            stricter(Some(InputReader::Shell), python.clone()),
            python.clone()
        );
        assert_eq!(stricter(Some(python.clone()), InputReader::Data), python);
        assert_eq!(
            stricter(Some(InputReader::Data), InputReader::Shell),
            InputReader::Shell
        );
        assert_eq!(stricter(None, InputReader::Data), InputReader::Data);
    }

    #[test]
    fn a_pipe_nobody_known_holds_has_no_verdict() {
        use std::os::unix::fs::MetadataExt as _;
        let mut cat = std::process::Command::new("cat")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let stdin = cat.stdin.take().unwrap();
        let inode = std::fs::metadata(format!("/proc/self/fd/{}", {
            use std::os::fd::AsRawFd as _;
            stdin.as_raw_fd()
        }))
        .unwrap()
        .ino();
        let pid = cat.id();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while readers(pid, inode) != Some(InputReader::Data) {
            assert!(std::time::Instant::now() < deadline, "cat never seen");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        // Another pipe, which no process of the tree holds: unknown, not "data".
        assert_eq!(readers(pid, inode + 1), None);
        drop(stdin);
        cat.wait().unwrap();
    }
}
