//! Running commands for tools: execution backends and the approval gate.
//!
//! - [`Backend`]: how a command is started — [`LocalBackend`] (a process of
//!   this machine in its own process group), [`BwrapBackend`] (inside
//!   bubblewrap: read-only system, read-write working directory, optionally no
//!   network; counts as sandboxed) and [`SshBackend`] (on a remote host).
//! - [`run`]: starts a request on a backend with stdin, output caps, a
//!   timeout, and the whole process group killed on timeout, on cancellation
//!   and when the future is dropped.
//! - [`GatedExecutor`]: the [`Executor`] tools use — classifies the command
//!   with the approval policy, asks the surface's approver when needed, then
//!   runs it on the backend.
//! - [`ProcessTable`]: background processes of a session (start, read output,
//!   wait, write stdin, kill, list); all are killed when the table is dropped.
//! - [`enable_supervisor`]: local commands then start under
//!   `talaria __supervise` ([`supervise_main`]), which kills their process
//!   group when the agent dies, even by SIGKILL. Every command is forked from
//!   one long-lived thread, since parent-death signals follow the forking
//!   thread.
#![warn(missing_docs)]

mod backend;
mod confine;
mod gate;
mod group;
mod processes;
mod runner;
mod shell;
mod supervise;
mod supervisor;
mod workspace;

use std::path::PathBuf;
use std::time::Duration;

pub use backend::{Backend, BwrapBackend, CwdKind, LocalBackend, SshBackend, SshConfig};
pub use confine::{Confinement, Controls, FileProtection, Mount, Protection, probe};
pub use gate::{ExecOrigin, Executor, GatedExecutor, command_text};
pub use processes::{ProcessChunk, ProcessInfo, ProcessTable};
pub use runner::run;
pub use shell::shell_quote;
pub use supervisor::{
    SUPERVISE_ARG, confined_command, enable_supervisor, local_command, protect_agent_process,
    supervise_main,
};
pub use workspace::lexical;

/// Environment variables passed from the host's environment to local and
/// bwrap commands; everything else (API keys, tokens…) is scrubbed unless a
/// request names it in [`ExecRequest::env`].
pub const PASSED_ENV: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TZ",
    "TMPDIR",
];

/// Default cap on stdout and (separately) stderr bytes kept per command.
pub const DEFAULT_OUTPUT_CAP: usize = 1024 * 1024;

/// One command to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecRequest {
    /// The program (looked up on `PATH`).
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// The working directory (absolute).
    pub cwd: PathBuf,
    /// Extra environment variables, on top of [`PASSED_ENV`].
    pub env: Vec<(String, String)>,
    /// Bytes written to stdin (then closed); `None`: stdin is empty.
    pub stdin: Option<Vec<u8>>,
    /// Wall-clock limit; the process group is killed when it passes.
    pub timeout: Duration,
    /// Most bytes kept of stdout and (separately) stderr; the rest is drained
    /// and dropped so the command never blocks on a full pipe.
    pub output_cap: usize,
    /// How much of the backend's [`Confinement`] protects the profile's controls from it
    /// (the gate relaxes it only for what the user approved).
    pub controls: Controls,
}

impl ExecRequest {
    /// `program args…` in `cwd` with the default timeout (120 s) and cap.
    pub fn new(program: impl Into<String>, args: Vec<String>, cwd: impl Into<PathBuf>) -> Self {
        Self {
            program: program.into(),
            args,
            cwd: cwd.into(),
            env: Vec::new(),
            stdin: None,
            timeout: Duration::from_secs(120),
            output_cap: DEFAULT_OUTPUT_CAP,
            controls: Controls::Protected,
        }
    }
}

/// How a command ended.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ExecOutput {
    /// The exit code; `None` when killed by a signal or the timeout.
    pub status: Option<i32>,
    /// Up to `output_cap` bytes of stdout.
    pub stdout: Vec<u8>,
    /// Up to `output_cap` bytes of stderr.
    pub stderr: Vec<u8>,
    /// The timeout killed it.
    pub timed_out: bool,
    /// Output beyond the cap was dropped.
    pub truncated: bool,
}

/// Why a command did not run to an [`ExecOutput`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExecError {
    /// The approval layer (or the user) refused it; the message says why.
    #[error("{0}")]
    Denied(String),
    /// It could not be started (missing program, bad working directory…).
    #[error("{0}")]
    Failed(String),
    /// The caller cancelled it; its process group was killed.
    #[error("cancelled; the command's processes were killed")]
    Cancelled,
    /// No background process with this id in the caller's session.
    #[error("no such process: {0}")]
    NoSuchProcess(u64),
}
