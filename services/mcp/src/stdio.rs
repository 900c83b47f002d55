//! Stdio servers: a child process in its own process group with a minimal environment (no
//! provider keys unless configured), its stderr kept (the last few KiB) for error messages, and
//! the whole group killed when the connection is dropped or shut down.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::AsyncReadExt;
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use talaria_exec::{Backend, BwrapBackend, ExecRequest};

use crate::error::McpError;
use crate::spec::ServerSpec;

/// Variables a stdio server inherits from Talaria's environment (plus every `XDG_*`).
pub const PASSED_ENV: &[&str] = &[
    "PATH", "HOME", "USER", "LANG", "LC_ALL", "TERM", "SHELL", "TMPDIR",
];
/// How much of a server's stderr is kept.
const STDERR_KEEP: usize = 8 * 1024;
/// How much of it an error message shows.
const STDERR_SHOW: usize = 2 * 1024;
/// Steps of 10 ms waited for the end of an exiting server's stderr.
const STDERR_SETTLE_STEPS: u32 = 30;
/// How long a shut-down server may take to exit after its stdin closes.
const EXIT_GRACE: Duration = Duration::from_millis(500);

/// The environment a stdio server starts with: [`PASSED_ENV`] and `XDG_*` from `parent`, then
/// the configured variables.
pub fn minimal_env(
    parent: impl IntoIterator<Item = (OsString, OsString)>,
    configured: &BTreeMap<String, String>,
) -> BTreeMap<OsString, OsString> {
    let mut env: BTreeMap<OsString, OsString> = parent
        .into_iter()
        .filter(|(name, _)| {
            let name = name.to_string_lossy();
            PASSED_ENV.contains(&name.as_ref()) || name.starts_with("XDG_")
        })
        .collect();
    for (name, value) in configured {
        env.insert(name.into(), value.into());
    }
    env
}

/// The end of a child's stderr.
#[derive(Debug, Default)]
pub(crate) struct StderrTail {
    bytes: Mutex<Vec<u8>>,
    closed: AtomicBool,
}

impl StderrTail {
    /// Waits a moment for the rest of the stderr of a server that is exiting.
    pub(crate) async fn settle(&self) {
        for _ in 0..STDERR_SETTLE_STEPS {
            if self.closed.load(Ordering::Acquire) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    fn push(&self, chunk: &[u8]) {
        let Ok(mut bytes) = self.bytes.lock() else {
            return;
        };
        bytes.extend_from_slice(chunk);
        if bytes.len() > STDERR_KEEP {
            let excess = bytes.len() - STDERR_KEEP;
            bytes.drain(..excess);
        }
    }

    /// The last [`STDERR_SHOW`] bytes, from a line start when there is one.
    pub(crate) fn text(&self) -> String {
        let Ok(bytes) = self.bytes.lock() else {
            return String::new();
        };
        let start = bytes.len().saturating_sub(STDERR_SHOW);
        let text = String::from_utf8_lossy(&bytes[start..]).into_owned();
        match (start > 0, text.find('\n')) {
            (true, Some(at)) if at + 1 < text.len() => text[at + 1..].to_owned(),
            _ => text,
        }
    }
}

/// A running stdio server. Dropping it kills its process group.
#[derive(Debug)]
pub(crate) struct StdioProcess {
    child: Child,
    group: Option<Pid>,
    pub(crate) stderr: Arc<StderrTail>,
}

impl StdioProcess {
    /// Starts the server's command; returns it with the pipes the transport uses.
    pub(crate) fn spawn(spec: &ServerSpec) -> Result<(Self, ChildStdout, ChildStdin), McpError> {
        let config = &spec.config;
        let program = config.command.clone().unwrap_or_default();
        let spawn_error = |reason: String| McpError::Spawn {
            server: spec.name.clone(),
            command: spec.clean(&program),
            reason: spec.clean(&reason),
        };
        let mut command = if config.sandboxed() {
            in_bwrap(spec, &program)?
        } else {
            // Under the supervisor: it dies with the agent and cannot reach its process or
            // the profile's controls.
            let mut command = Command::from(talaria_exec::confined_command(
                &program,
                &config.args,
                &spec.confinement,
            ));
            command
                .env_clear()
                .envs(minimal_env(std::env::vars_os(), &config.env));
            if let Some(cwd) = &config.cwd {
                command.current_dir(cwd);
            }
            command
        };
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        let mut child = command.spawn().map_err(|e| spawn_error(e.to_string()))?;
        let group = child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .map(Pid::from_raw);
        let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
            return Err(spawn_error("its stdin/stdout could not be opened".into()));
        };
        let stderr = Arc::new(StderrTail::default());
        if let Some(mut pipe) = child.stderr.take() {
            let tail = stderr.clone();
            tokio::spawn(async move {
                let mut buffer = [0u8; 4096];
                while let Ok(read) = pipe.read(&mut buffer).await {
                    if read == 0 {
                        break;
                    }
                    tail.push(&buffer[..read]);
                }
                tail.closed.store(true, Ordering::Release);
            });
        }
        Ok((
            Self {
                child,
                group,
                stderr,
            },
            stdout,
            stdin,
        ))
    }

    /// The process id of the server (its group's id too).
    pub(crate) fn id(&self) -> Option<u32> {
        self.group.and_then(|pid| u32::try_from(pid.as_raw()).ok())
    }

    /// Waits a moment for the server to exit on its own (its stdin is closed by then), then
    /// kills the group.
    pub(crate) async fn shutdown(mut self) {
        let _ = tokio::time::timeout(EXIT_GRACE, self.child.wait()).await;
        self.kill_group();
    }

    fn kill_group(&mut self) {
        if let Some(group) = self.group.take() {
            // The leader may be gone while its children live on: the group still exists.
            let _ = killpg(group, Signal::SIGKILL);
        }
        let _ = self.child.start_kill();
    }
}

/// The server's command inside bubblewrap, as the `bwrap` terminal backend runs commands: the
/// file system read-only but for its working directory (`cwd`, else Talaria's), private `/tmp`,
/// the profile's controls read-only and secrets hidden, capabilities dropped; the network stays
/// (servers call APIs).
fn in_bwrap(spec: &ServerSpec, program: &str) -> Result<Command, McpError> {
    let config = &spec.config;
    let refused = |reason: String| McpError::Spawn {
        server: spec.name.clone(),
        command: spec.clean(program),
        reason: spec.clean(&format!("cannot run it in bubblewrap: {reason}")),
    };
    let cwd = match &config.cwd {
        Some(dir) => std::path::PathBuf::from(dir),
        None => std::env::current_dir().map_err(|e| refused(e.to_string()))?,
    };
    // The server's files named in its (configured, trusted) arguments — a script under /tmp,
    // say — are there in the sandbox's private /tmp too, read-only.
    let confinement = config
        .args
        .iter()
        .map(std::path::Path::new)
        .filter(|arg| arg.is_absolute() && arg.starts_with("/tmp") && arg.exists())
        .fold(spec.confinement.clone(), |confinement, arg| {
            confinement.read_only(arg)
        });
    let backend = BwrapBackend::new(true)
        .map_err(|e| refused(e.to_string()))?
        .with_confinement(confinement);
    let mut request = ExecRequest::new(program, config.args.clone(), cwd);
    request.env = minimal_env(std::env::vars_os(), &config.env)
        .into_iter()
        .map(|(name, value)| {
            (
                name.to_string_lossy().into_owned(),
                value.to_string_lossy().into_owned(),
            )
        })
        .collect();
    let command = backend
        .command(&request)
        .map_err(|e| refused(e.to_string()))?;
    Ok(Command::from(command))
}

impl Drop for StdioProcess {
    fn drop(&mut self) {
        self.kill_group();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_allowed_variables_pass_and_configured_ones_win() {
        let parent = [
            ("PATH", "/bin"),
            ("HOME", "/home/u"),
            ("XDG_CONFIG_HOME", "/home/u/.config"),
            ("OPENAI_API_KEY", "sk-secret"),
            ("ANTHROPIC_API_KEY", "sk-ant-secret"),
            ("AWS_SECRET_ACCESS_KEY", "x"),
            ("LANG", "C.UTF-8"),
        ]
        .map(|(k, v)| (OsString::from(k), OsString::from(v)));
        let configured = BTreeMap::from([
            ("GITHUB_TOKEN".to_string(), "ghp_x".to_string()),
            ("LANG".to_string(), "fr_FR.UTF-8".to_string()),
        ]);
        let env = minimal_env(parent, &configured);
        let names: Vec<String> = env
            .keys()
            .map(|k| k.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            ["GITHUB_TOKEN", "HOME", "LANG", "PATH", "XDG_CONFIG_HOME"]
        );
        assert_eq!(env[&OsString::from("LANG")], "fr_FR.UTF-8");
    }

    #[test]
    fn the_stderr_tail_is_bounded_and_starts_at_a_line() {
        let tail = StderrTail::default();
        for i in 0..2000 {
            tail.push(format!("line {i}\n").as_bytes());
        }
        let text = tail.text();
        assert!(
            text.len() <= STDERR_SHOW && text.starts_with("line "),
            "{text}"
        );
        assert!(text.ends_with("line 1999\n"));
        assert!(tail.bytes.lock().unwrap().len() <= STDERR_KEEP);
    }
}
