//! The supervisor local commands run under, so they do not outlive the agent.
//!
//! A process whose parent is killed is adopted by init and keeps running; the
//! kernel's parent-death signal (`PR_SET_PDEATHSIG`) is the only notice, and
//! it must be set by the child itself, which a safe `Command` cannot do
//! between fork and exec. So a local command is started as
//! `talaria __supervise <agent pid> -- program args…`: that small process
//! leads the command's process group, starts the command in that group, asks
//! for SIGTERM when its parent dies (then checks the parent is still the
//! agent), and on that signal kills the group.
//! It exits like the command did (same code, or the same signal).
//!
//! The death signal fires when the *thread* that forked the supervisor ends,
//! so every spawn goes through one long-lived thread (see
//! [`supervise::spawn`](crate::supervise)).

use std::ffi::OsString;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, ExitStatus};
use std::sync::OnceLock;

use nix::sys::prctl;
use nix::sys::signal::{SigSet, Signal, killpg, raise};
use nix::unistd::{Pid, getpgrp, getpid, getppid, setpgid};

use crate::ExecError;
use crate::confine::{CONFINE_FLAG, Confinement, PROBE_FLAG};

/// The hidden subcommand of the `talaria` binary that runs [`supervise_main`].
pub const SUPERVISE_ARG: &str = "__supervise";

/// Exit code for the supervisor's own failures (bad arguments, the agent
/// already gone), as `env` and `timeout` use it.
const FAILED: u8 = 125;

static SUPERVISOR: OnceLock<PathBuf> = OnceLock::new();

/// Starts every later local command through `exe` [`SUPERVISE_ARG`], so it is
/// killed with its whole process group when this process dies, even by
/// SIGKILL. `exe` must be a program whose `main` hands that subcommand to
/// [`supervise_main`] (the `talaria` binary). Without this call (the exec
/// crate's own tests, other embedders) commands start directly. Only the
/// first call counts.
pub fn enable_supervisor(exe: PathBuf) {
    let _ = SUPERVISOR.set(exe);
}

/// The supervisor program, if enabled. If the file was removed since (an
/// upgrade replaced the binary), this process's own image still runs it.
pub(crate) fn supervisor() -> Option<&'static Path> {
    let exe = SUPERVISOR.get()?;
    if exe.exists() {
        Some(exe)
    } else {
        Some(Path::new("/proc/self/exe"))
    }
}

/// A command running `program` with `args` on this machine: under the
/// supervisor when it is enabled, directly otherwise. Long-lived helpers the
/// host starts itself use [`confined_command`] instead.
pub fn local_command(program: &str, args: &[String]) -> Command {
    command_for(program, args, None)
}

/// [`local_command`] with the supervisor applying `confinement` before it starts `program`
/// (see [`Confinement`]): local commands, MCP servers and the browser all start this way, so
/// none of them can read the agent's keys through `/proc` or change the profile's controls.
/// Without a supervisor (the exec crate's own tests, other embedders) nothing is confined.
pub fn confined_command(program: &str, args: &[String], confinement: &Confinement) -> Command {
    command_for(program, args, Some(confinement))
}

fn command_for(program: &str, args: &[String], confinement: Option<&Confinement>) -> Command {
    match supervisor() {
        Some(exe) => supervised_command(exe, confinement, program, args),
        None => {
            let mut command = Command::new(program);
            command.args(args);
            command
        }
    }
}

/// `exe __supervise <this pid> [--confine …] -- program args…`.
pub(crate) fn supervised_command(
    exe: &Path,
    confinement: Option<&Confinement>,
    program: &str,
    args: &[String],
) -> Command {
    let mut command = Command::new(exe);
    // What `ps` shows, also when `exe` is /proc/self/exe.
    command.arg0("talaria");
    command
        .arg(SUPERVISE_ARG)
        .arg(std::process::id().to_string());
    if let Some(confinement) = confinement {
        command.args(confinement.to_args());
    }
    command.arg("--").arg(program).args(args);
    command
}

/// Makes this process non-dumpable: its `/proc/PID/environ`, `mem`, `fd/`…
/// become readable by root only (and it cannot be ptraced by its own user),
/// so the commands it runs cannot read the provider keys of its initial
/// environment block, which unsetting a variable does not erase. The
/// process itself still reads its own `/proc/self`; children are dumpable
/// again after `exec`. Call first thing in `main`.
pub fn protect_agent_process() -> Result<(), ExecError> {
    prctl::set_dumpable(false)
        .map_err(|e| ExecError::Failed(format!("cannot make the process non-dumpable: {e}")))
}

/// The arguments after [`SUPERVISE_ARG`].
#[derive(Debug, PartialEq, Eq)]
struct Invocation {
    agent: Pid,
    confinement: Option<Confinement>,
    /// Apply the confinement and report it instead of running anything.
    probe: bool,
    program: OsString,
    args: Vec<OsString>,
}

fn parse(args: Vec<OsString>) -> Result<Invocation, String> {
    let mut args = args.into_iter().peekable();
    let agent = args
        .next()
        .and_then(|pid| pid.to_str()?.parse::<i32>().ok())
        .filter(|pid| *pid > 1)
        .ok_or("expected the agent's process id first")?;
    let confinement = if args.peek().is_some_and(|arg| arg == CONFINE_FLAG) {
        args.next();
        Some(Confinement::from_args(&mut args)?)
    } else {
        None
    };
    if args.peek().is_some_and(|arg| arg == PROBE_FLAG) {
        return Ok(Invocation {
            agent: Pid::from_raw(agent),
            confinement,
            probe: true,
            program: OsString::new(),
            args: Vec::new(),
        });
    }
    if args.next().as_deref() != Some("--".as_ref()) {
        return Err("expected `--` after the agent's process id".to_owned());
    }
    let program = args.next().ok_or("expected a program after `--`")?;
    Ok(Invocation {
        agent: Pid::from_raw(agent),
        confinement,
        probe: false,
        program,
        args: args.collect(),
    })
}

/// Runs the supervisor; `args` are the arguments after [`SUPERVISE_ARG`]:
/// `<agent pid> -- program args…`. Stdin, stdout, stderr, the working
/// directory and the environment pass to the command unchanged. Returns (or
/// dies by the same signal as) the command.
pub fn supervise_main(args: Vec<OsString>) -> ExitCode {
    match supervise(args) {
        Ok(code) => code,
        Err(message) => {
            eprintln!("talaria {SUPERVISE_ARG}: {message}");
            ExitCode::from(FAILED)
        }
    }
}

fn supervise(args: Vec<OsString>) -> Result<ExitCode, String> {
    let invocation = parse(args)?;
    // Killing "our group" must never reach the agent's own group.
    if getpgrp() != getpid() {
        setpgid(Pid::from_raw(0), Pid::from_raw(0))
            .map_err(|e| format!("cannot lead a process group: {e}"))?;
    }
    // The agent may have died before we got here: don't start anything then.
    if getppid() != invocation.agent {
        return Err("the agent that started it is gone".to_owned());
    }
    // Still one thread: a user namespace can only be entered by a single-threaded process.
    let protection = invocation.confinement.as_ref().map(Confinement::apply);
    if invocation.probe {
        let protection = protection.unwrap_or_else(|| Confinement::new().apply());
        print!("{}", protection.to_lines());
        return Ok(ExitCode::SUCCESS);
    }
    // std does not reset the signal mask of a child it spawns: start the
    // command with a clean one (whatever mask the spawning thread had).
    SigSet::empty()
        .thread_set_mask()
        .map_err(|e| format!("cannot clear the signal mask: {e}"))?;
    let mut child = match Command::new(&invocation.program)
        .args(&invocation.args)
        .spawn()
    {
        Ok(child) => child,
        Err(e) => {
            eprintln!(
                "talaria {SUPERVISE_ARG}: cannot run {}: {e}",
                invocation.program.to_string_lossy()
            );
            // The shell's codes: 127 not found, 126 found but not runnable.
            let code = if e.kind() == std::io::ErrorKind::NotFound {
                127
            } else {
                126
            };
            return Ok(ExitCode::from(code));
        }
    };
    // Blocked, then taken with sigwait: no handler (which would need
    // `unsafe`), and nothing lost once blocked.
    let mut watched = SigSet::empty();
    for signal in [
        Signal::SIGTERM,
        Signal::SIGINT,
        Signal::SIGHUP,
        Signal::SIGQUIT,
        Signal::SIGCHLD,
    ] {
        watched.add(signal);
    }
    let armed = watched
        .thread_block()
        .and_then(|()| prctl::set_pdeathsig(Signal::SIGTERM));
    // Rechecked now that the death signal is set: had the agent died before,
    // nobody would signal us.
    if let Err(e) = armed {
        kill_group(&mut child);
        return Err(format!("cannot watch the agent: {e}"));
    }
    if getppid() != invocation.agent {
        kill_group(&mut child);
        return Err("the agent that started it is gone".to_owned());
    }
    loop {
        // Before each wait: a SIGCHLD from before the block was discarded.
        match child.try_wait() {
            Ok(Some(status)) => return Ok(exit_like(status, &watched)),
            Ok(None) => {}
            Err(e) => {
                kill_group(&mut child);
                return Err(format!("waiting for the command failed: {e}"));
            }
        }
        let signal = match watched.wait() {
            Ok(signal) => signal,
            Err(e) => {
                kill_group(&mut child);
                return Err(format!("waiting for signals failed: {e}"));
            }
        };
        if signal != Signal::SIGCHLD {
            // The agent died (or someone asked us to stop): take the command
            // and everything it started with us.
            kill_group(&mut child);
            return Ok(ExitCode::from(128 + signal as u8));
        }
    }
}

/// Kills our process group (the command, what it started, and us).
fn kill_group(child: &mut std::process::Child) {
    let _ = killpg(getpgrp(), Signal::SIGKILL);
    // Not reached unless the group kill failed.
    let _ = child.kill();
}

/// The command's exit code, or its death by the same signal.
fn exit_like(status: ExitStatus, watched: &SigSet) -> ExitCode {
    if let Some(code) = status.code() {
        return ExitCode::from(u8::try_from(code).unwrap_or(1));
    }
    let Some(number) = status.signal() else {
        return ExitCode::from(1);
    };
    if let Ok(signal) = Signal::try_from(number) {
        if watched.contains(signal) {
            let mut only = SigSet::empty();
            only.add(signal);
            let _ = only.thread_unblock();
        }
        // Default disposition (std only ignores SIGPIPE), so this ends us.
        let _ = raise(signal);
    }
    // Still here: an ignored signal such as SIGPIPE; report it as a shell does.
    ExitCode::from(128u8.saturating_add(u8::try_from(number).unwrap_or(0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(words: &[&str]) -> Vec<OsString> {
        words.iter().map(OsString::from).collect()
    }

    #[test]
    fn parses_pid_separator_program_and_args() {
        assert_eq!(
            parse(os(&["1234", "--", "sh", "-c", "echo hi"])),
            Ok(Invocation {
                agent: Pid::from_raw(1234),
                confinement: None,
                probe: false,
                program: "sh".into(),
                args: os(&["-c", "echo hi"]),
            })
        );
    }

    #[test]
    fn rejects_bad_invocations() {
        for bad in [
            &[][..],
            &["x", "--", "sh"],
            &["1", "--", "sh"],
            &["-5", "--", "sh"],
            &["1234", "sh"],
            &["1234", "--"],
        ] {
            assert!(parse(os(bad)).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_confinement_reaches_the_supervisor() {
        let confinement = Confinement::new()
            .read_only("/h/.talaria")
            .hidden("/h/.talaria/.env");
        let command = supervised_command(Path::new("/t"), Some(&confinement), "sh", &[]);
        let invocation = parse(command.get_args().skip(1).map(OsString::from).collect()).unwrap();
        assert_eq!(invocation.confinement, Some(confinement));
        assert_eq!(invocation.program, "sh");
        assert!(!invocation.probe);
        let probe = parse(os(&["1234", CONFINE_FLAG, "--ro", "/x", PROBE_FLAG])).unwrap();
        assert!(probe.probe);
    }

    #[test]
    fn supervised_command_names_this_process_as_the_agent() {
        let command = supervised_command(Path::new("/bin/talaria"), None, "ls", &["-l".to_owned()]);
        let args: Vec<_> = command.get_args().collect();
        let pid = std::process::id().to_string();
        assert_eq!(command.get_program(), "/bin/talaria");
        assert_eq!(args, [SUPERVISE_ARG, pid.as_str(), "--", "ls", "-l"]);
    }
}
