//! Backends: how a request becomes an OS command (local, bubblewrap, ssh).

mod bwrap;
mod local;
mod ssh;

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

pub use bwrap::BwrapBackend;
pub use local::LocalBackend;
pub use ssh::{SshBackend, SshConfig};

use crate::{ExecError, ExecRequest, PASSED_ENV};

/// How a request is started: builds the OS command that runs it. Stdio, the
/// process group, the timeout and killing are [`run`](crate::run)'s job.
pub trait Backend: Send + Sync {
    /// A short name for messages ("local", "bwrap", "ssh").
    fn name(&self) -> &str;

    /// Whether commands are confined so that a dangerous one cannot harm the
    /// host; the approval policy then does not ask the user.
    fn sandboxed(&self) -> bool;

    /// The command that runs `request`, or why it cannot run (bad working
    /// directory, missing program, invalid environment).
    fn command(&self, request: &ExecRequest) -> Result<Command, ExecError>;

    /// What a request's `cwd` names, so the gate can keep it inside the
    /// session's working directory.
    fn cwd_kind(&self) -> CwdKind {
        CwdKind::Host
    }
}

/// What a request's working directory is to a backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CwdKind {
    /// A directory of this machine: the gate resolves it (symlinks, `..`).
    Host,
    /// A path on another machine: the gate can only normalise it lexically.
    Remote,
    /// Not used: commands always run in a directory the backend was configured with.
    Fixed,
}

/// Clears the command's environment, then sets the host's values of
/// [`PASSED_ENV`], the `also` names, and finally `extra` — so secrets in the
/// host's environment only reach a command that is explicitly given them.
pub(crate) fn scrub_env(command: &mut Command, also: &[&str], extra: &[(String, String)]) {
    command.env_clear();
    for name in PASSED_ENV.iter().chain(also) {
        if let Some(value) = talaria_environ::var_os(name) {
            command.env(name, value);
        }
    }
    command.envs(extra.iter().map(|(k, v)| (k, v)));
}

/// Rejects variable names the OS (or `env`) would misread.
pub(crate) fn check_env(request: &ExecRequest) -> Result<(), ExecError> {
    for (name, value) in &request.env {
        if name.is_empty() || name.contains(['=', '\0']) || value.contains('\0') {
            return Err(ExecError::Failed(format!(
                "invalid environment variable name or value: {name:?}"
            )));
        }
    }
    Ok(())
}

/// The working directory must be an existing absolute directory on this host.
pub(crate) fn check_local_cwd(request: &ExecRequest) -> Result<(), ExecError> {
    if !request.cwd.is_absolute() {
        return Err(ExecError::Failed(format!(
            "the working directory must be absolute: {}",
            request.cwd.display()
        )));
    }
    if !request.cwd.is_dir() {
        return Err(ExecError::Failed(format!(
            "the working directory does not exist: {}",
            request.cwd.display()
        )));
    }
    Ok(())
}

/// Checks up front that the program exists, so a typo is a clear error
/// rather than an exit code from deep inside a sandbox. Uses the `PATH` the
/// command will have.
pub(crate) fn check_program(request: &ExecRequest) -> Result<(), ExecError> {
    let path = request
        .env
        .iter()
        .rev()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.into())
        .or_else(|| std::env::var_os("PATH"));
    match find_program(&request.program, &request.cwd, path.as_deref()) {
        Some(_) => Ok(()),
        None if request.program.contains('/') => Err(ExecError::Failed(format!(
            "program not found or not executable: {} (in {})",
            request.program,
            request.cwd.display()
        ))),
        None => Err(ExecError::Failed(format!(
            "program not found on PATH: {}",
            request.program
        ))),
    }
}

/// Resolves `program` like `execvp`: a name with a `/` is relative to `cwd`,
/// anything else is looked up in `path`.
pub(crate) fn find_program(program: &str, cwd: &Path, path: Option<&OsStr>) -> Option<PathBuf> {
    if program.is_empty() {
        return None;
    }
    if program.contains('/') {
        let candidate = cwd.join(program);
        return is_executable(&candidate).then_some(candidate);
    }
    std::env::split_paths(path?)
        .map(|dir| cwd.join(dir).join(program))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}
