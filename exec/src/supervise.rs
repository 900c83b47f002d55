//! Starting a request in its own process group and following it to its end:
//! pumping its pipes while waiting for it, then cleaning up its group.

use std::future::Future;
use std::io;
use std::os::unix::process::CommandExt;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use nix::unistd::Pid;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStdin};

use crate::backend::Backend;
use crate::group::ProcessGroup;
use crate::{ExecError, ExecRequest};

/// How long output is still drained after the main process exited and its
/// group was killed; only a process that escaped the group (e.g. via
/// `setsid`) can hold the pipes open that long.
const DRAIN_GRACE: Duration = Duration::from_secs(5);

/// Size of one read from a pipe.
const CHUNK: usize = 64 * 1024;

/// Spawns `request` on `backend` as the leader of a new process group, with
/// stdout and stderr piped and stdin piped when `stdin` is set (else empty).
pub(crate) fn spawn(
    backend: &dyn Backend,
    request: &ExecRequest,
    stdin: bool,
) -> Result<(Child, ProcessGroup), ExecError> {
    let mut command = backend.command(request)?;
    command
        .process_group(0)
        .stdin(if stdin { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let program = command.get_program().to_string_lossy().into_owned();
    let mut command = tokio::process::Command::from(command);
    // Belt and braces with the group guard: the direct child dies with its handle.
    command.kill_on_drop(true);
    let child = command.spawn().map_err(|e| {
        ExecError::Failed(format!(
            "could not start {program} ({} backend): {e}",
            backend.name()
        ))
    })?;
    let pid = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .ok_or_else(|| ExecError::Failed(format!("{program} started without a process id")))?;
    Ok((child, ProcessGroup::new(Pid::from_raw(pid))))
}

/// Reads `reader` to its end, handing each chunk to `sink`. A read error
/// ends it like end-of-file: there is nothing better to do with a broken pipe.
pub(crate) async fn pump<R: AsyncRead + Unpin>(reader: Option<R>, mut sink: impl FnMut(&[u8])) {
    let Some(mut reader) = reader else { return };
    let mut buf = vec![0; CHUNK];
    while let Ok(n @ 1..) = reader.read(&mut buf).await {
        sink(&buf[..n]);
    }
}

/// Writes `data` to `stdin` and closes it. Errors (the command exited
/// without reading everything) are not the caller's problem.
pub(crate) async fn feed(stdin: Option<ChildStdin>, data: Option<&[u8]>) {
    if let (Some(mut stdin), Some(data)) = (stdin, data) {
        let _ = stdin.write_all(data).await;
        let _ = stdin.shutdown().await;
    }
}

/// Waits for `child` while `io` (its pipe pumps) runs. When `kill` completes
/// the child is killed. Once the child exited, the rest of its group is
/// killed — background children must not hold the pipes open forever — and
/// `io` gets [`DRAIN_GRACE`] to finish reading what is left.
pub(crate) async fn wait_and_drain(
    child: &mut Child,
    group: &ProcessGroup,
    io: impl Future<Output = ()>,
    kill: impl Future<Output = ()>,
) -> io::Result<ExitStatus> {
    tokio::pin!(io, kill);
    let mut io_done = false;
    let mut killed = false;
    let status = loop {
        tokio::select! {
            status = child.wait() => break status,
            () = &mut io, if !io_done => io_done = true,
            () = &mut kill, if !killed => {
                killed = true;
                group.kill();
                // In case the child moved itself out of its group.
                let _ = child.start_kill();
            }
        }
    };
    group.kill();
    if !io_done {
        let _ = tokio::time::timeout(DRAIN_GRACE, io).await;
    }
    status
}
