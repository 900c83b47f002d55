//! The shell parser in a throwaway process, for builds where a panic aborts.
//!
//! A line the parser panics on is unparseable, never a crash: where panics unwind,
//! [`crate::syntax`] catches the panic. A build with `panic = "abort"` (the slim
//! distributions) cannot, so before classifying a line it has a child parse it, and every line
//! it runs, first (one child per command): the parser is deterministic, so a line the child
//! survived cannot take this process down, and a child that died (or could not run) makes the
//! line unparseable: at least dangerous, so the user is asked. The child is this same program started with [`PARSE_CHECK_ARG`].

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::OnceLock;

/// The argument that makes a process a parse check: [`parse_check_main`].
pub const PARSE_CHECK_ARG: &str = "__approval-parse-check";

static CHECKER: OnceLock<PathBuf> = OnceLock::new();

/// Has later lines parsed first by `exe` [`PARSE_CHECK_ARG`] when panics abort. `exe` must be
/// a program whose `main` hands that argument to [`parse_check_main`] (the `talaria` binary).
/// Without this call a build whose panics abort parses in-process only. Only the first call
/// counts.
pub fn enable_parse_check(exe: PathBuf) {
    let _ = CHECKER.set(exe);
}

/// The parse check's `main`: parses its standard input as a command line, and every line it
/// runs, and exits 0 whatever the parser made of them; a panic kills it (abort) or makes it
/// exit 101 (unwind).
pub fn parse_check_main() -> ExitCode {
    let mut line = String::new();
    if std::io::stdin().read_to_string(&mut line).is_err() {
        return ExitCode::FAILURE;
    }
    crate::classifier::parse_all(&line, 0);
    ExitCode::SUCCESS
}

/// Whether parsing `command` in this process is safe: always where panics unwind (they are
/// caught); where they abort, whether the enabled checker parsed it and lived.
pub(crate) fn parser_survives(command: &str) -> bool {
    if cfg!(panic = "unwind") {
        return true;
    }
    match CHECKER.get() {
        // As the supervisor does: if an upgrade removed the file, this process's own image.
        Some(exe) if exe.exists() => survives_in(exe, command),
        Some(_) => survives_in(Path::new("/proc/self/exe"), command),
        None => true,
    }
}

/// Whether `checker` [`PARSE_CHECK_ARG`] parsed `command` and exited 0.
pub(crate) fn survives_in(checker: &Path, command: &str) -> bool {
    let child = Command::new(checker)
        .arg(PARSE_CHECK_ARG)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    let Ok(mut child) = child else {
        return false;
    };
    // Lines are small (bounded by the model's output); a child that stopped reading early has
    // died, which its status says.
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(command.as_bytes());
    }
    child.wait().is_ok_and(|status| status.success())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_checker_that_dies_or_cannot_run_makes_the_line_unsafe() {
        // `true` reads nothing and lives; `false` stands for a checker the parser killed.
        assert!(survives_in(Path::new("/bin/true"), "ls -la"));
        assert!(!survives_in(Path::new("/bin/false"), "ls -la"));
        assert!(!survives_in(Path::new("/nonexistent/checker"), "ls -la"));
        // A checker killed by a signal mid-read (an abort is SIGABRT).
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("checker");
        std::fs::write(&script, "#!/bin/sh\nkill -ABRT $$\n").unwrap();
        std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        assert!(!survives_in(&script, &"x".repeat(1 << 20)));
        // The same script exiting 0 lives: the status decides, not the signal's absence.
        std::fs::write(&script, "#!/bin/sh\nexit 0\n").unwrap();
        assert!(survives_in(&script, "ls"));
    }

    #[test]
    fn where_panics_unwind_the_line_is_parsed_in_process() {
        // This test build unwinds, so no checker runs even if one is enabled.
        enable_parse_check(PathBuf::from("/bin/false"));
        assert!(parser_survives("ls -la"));
    }
}
