//! The local backend: a plain process of this machine.

use std::process::Command;

use super::{Backend, check_env, check_local_cwd, check_program, scrub_env};
use crate::confine::Confinement;
use crate::supervisor::confined_command;
use crate::{ExecError, ExecRequest};

/// Runs commands directly on this machine, in the request's working
/// directory, with a scrubbed environment. Not a sandbox: commands do what
/// the user could, except what the [`Confinement`] keeps from them (the
/// profile's controls and secrets, the agent's process). Once
/// [`enable_supervisor`](crate::enable_supervisor) was called, each command
/// runs under the supervisor, which applies the confinement and kills the
/// command (and its process group) when this process dies.
#[derive(Debug, Clone, Default)]
pub struct LocalBackend {
    /// Host variables passed to commands besides [`PASSED_ENV`](crate::PASSED_ENV)
    /// (`terminal.env_passthrough`).
    passthrough: Vec<String>,
    /// What commands may not touch.
    confinement: Confinement,
}

impl LocalBackend {
    /// The local backend.
    pub fn new() -> Self {
        Self::default()
    }

    /// Also passes the host's values of `names` to commands.
    pub fn with_passthrough(mut self, names: impl IntoIterator<Item = String>) -> Self {
        self.passthrough.extend(names);
        self
    }

    /// Confines commands with `confinement`.
    pub fn with_confinement(mut self, confinement: Confinement) -> Self {
        self.confinement = confinement;
        self
    }
}

impl Backend for LocalBackend {
    fn name(&self) -> &str {
        "local"
    }

    fn sandboxed(&self) -> bool {
        false
    }

    fn command(&self, request: &ExecRequest) -> Result<Command, ExecError> {
        check_env(request)?;
        check_local_cwd(request)?;
        check_program(request)?;
        // Under the supervisor, its environment is the scrubbed one below, which the command inherits.
        let confinement = self.confinement.for_controls(request.controls);
        let mut command = confined_command(&request.program, &request.args, &confinement);
        command.current_dir(&request.cwd);
        let passed: Vec<&str> = self.passthrough.iter().map(String::as_str).collect();
        scrub_env(&mut command, &passed, &request.env);
        Ok(command)
    }
}
