//! The bubblewrap backend: a read-only view of this machine with only the
//! working directory writable.

use std::path::PathBuf;
use std::process::Command;

use super::{Backend, check_env, check_local_cwd, check_program, find_program, scrub_env};
use crate::{ExecError, ExecRequest};

/// Runs commands inside bubblewrap: the whole file system read-only, a
/// private `/dev`, `/proc` and `/tmp`, the working directory bound
/// read-write, every namespace unshared (the network too unless `network`),
/// all capabilities dropped, and the sandbox killed with its parent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BwrapBackend {
    /// Keep the host's network (otherwise only a private loopback exists).
    pub network: bool,
    /// The `bwrap` executable.
    pub bwrap: PathBuf,
}

impl BwrapBackend {
    /// Uses the `bwrap` found on `PATH`; an error says how to install it.
    pub fn new(network: bool) -> Result<Self, ExecError> {
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
        let bwrap = find_program("bwrap", &cwd, std::env::var_os("PATH").as_deref()).ok_or_else(|| {
            ExecError::Failed(
                "bubblewrap (`bwrap`) is not on PATH; install it (Debian package `bubblewrap`) to run sandboxed commands"
                    .to_owned(),
            )
        })?;
        Ok(Self { network, bwrap })
    }
}

impl Backend for BwrapBackend {
    fn name(&self) -> &str {
        "bwrap"
    }

    fn sandboxed(&self) -> bool {
        true
    }

    fn command(&self, request: &ExecRequest) -> Result<Command, ExecError> {
        check_env(request)?;
        check_local_cwd(request)?;
        check_program(request)?;
        // Bind the real directory: a symlinked path could otherwise point the
        // bind somewhere else than the user sees.
        let cwd = request.cwd.canonicalize().map_err(|e| {
            ExecError::Failed(format!(
                "cannot resolve the working directory {}: {e}",
                request.cwd.display()
            ))
        })?;
        if cwd.parent().is_none() {
            return Err(ExecError::Failed(
                "refusing to sandbox with / as the working directory: it would make everything writable"
                    .to_owned(),
            ));
        }
        let mut command = Command::new(&self.bwrap);
        command
            .args(["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"])
            .args(["--tmpfs", "/tmp", "--bind"])
            .arg(&cwd)
            .arg(&cwd)
            .arg("--chdir")
            .arg(&cwd)
            .arg("--unshare-all");
        if self.network {
            command.arg("--share-net");
        }
        // Run as root, bwrap would keep CAP_SYS_ADMIN, enough to remount / read-write.
        command.args([
            "--cap-drop",
            "ALL",
            "--die-with-parent",
            "--new-session",
            "--",
        ]);
        command.arg(&request.program).args(&request.args);
        scrub_env(&mut command, &[], &request.env);
        Ok(command)
    }
}
