//! The process group of one started command, killed as a whole.

use std::sync::{Mutex, PoisonError};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// The process group a command leads (it was spawned with `process_group(0)`,
/// so the group id is its pid). Killing it reaches the background children
/// the command left behind too. Dropping it kills the group: a guard for
/// futures dropped mid-run.
#[derive(Debug)]
pub(crate) struct ProcessGroup {
    /// `None` once killed: after SIGKILL nobody is left in the group, and
    /// signalling the id again could hit a group that reused the number.
    pgid: Mutex<Option<Pid>>,
}

impl ProcessGroup {
    /// The group led by the process `leader`.
    pub(crate) fn new(leader: Pid) -> Self {
        Self {
            pgid: Mutex::new(Some(leader)),
        }
    }

    /// SIGKILLs every process of the group, once; later calls do nothing.
    pub(crate) fn kill(&self) {
        let taken = self
            .pgid
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(pgid) = taken {
            // ESRCH just means everyone is gone already.
            let _ = killpg(pgid, Signal::SIGKILL);
        }
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.kill();
    }
}
