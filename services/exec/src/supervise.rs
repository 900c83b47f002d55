//! Starting a request in its own process group and following it to its end:
//! pumping its pipes while waiting for it, then cleaning up its group.

use std::future::Future;
use std::io;
use std::os::unix::process::CommandExt;
use std::panic::{self, AssertUnwindSafe};
use std::process::{ExitStatus, Stdio};
use std::sync::{OnceLock, mpsc};
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
    let child = spawn_on_long_lived_thread(command).map_err(|e| {
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

/// A spawn request for the spawner thread: the command, the runtime its
/// pipes and exit notice register with, and where the child goes.
struct SpawnJob {
    command: tokio::process::Command,
    runtime: tokio::runtime::Handle,
    reply: mpsc::SyncSender<io::Result<Child>>,
}

/// The one thread all commands are forked from, for the life of the process.
/// A parent-death signal (the supervisor's, bwrap's `--die-with-parent`)
/// fires when the *thread* that forked ends, and runtime threads come and
/// go (tokio's blocking pool, a runtime per command-line call).
fn spawner() -> Option<&'static mpsc::Sender<SpawnJob>> {
    static SPAWNER: OnceLock<Option<mpsc::Sender<SpawnJob>>> = OnceLock::new();
    SPAWNER
        .get_or_init(|| {
            let (jobs, queue) = mpsc::channel::<SpawnJob>();
            std::thread::Builder::new()
                .name("talaria-spawner".to_owned())
                .spawn(move || {
                    for mut job in queue {
                        let result = {
                            let _context = job.runtime.enter();
                            // A panic must not end the thread: that would fire the death signals.
                            panic::catch_unwind(AssertUnwindSafe(|| job.command.spawn()))
                                .unwrap_or_else(|_| Err(io::Error::other("spawning panicked")))
                        };
                        let _ = job.reply.send(result);
                    }
                })
                .ok()
                .map(|_| jobs)
        })
        .as_ref()
}

/// Spawns `command` from the spawner thread (inline if that thread could
/// not be started or there is no runtime, as a plain spawn would).
fn spawn_on_long_lived_thread(mut command: tokio::process::Command) -> io::Result<Child> {
    let (Some(spawner), Ok(runtime)) = (spawner(), tokio::runtime::Handle::try_current()) else {
        return command.spawn();
    };
    let (reply, answer) = mpsc::sync_channel(1);
    let job = SpawnJob {
        command,
        runtime,
        reply,
    };
    if let Err(mpsc::SendError(job)) = spawner.send(job) {
        let mut command = job.command;
        return command.spawn();
    }
    // Forking takes a moment, as it did on this thread before.
    answer
        .recv()
        .map_err(|_| io::Error::other("the spawner thread is gone"))?
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LocalBackend;

    /// The supervisor's death signal (and bwrap's `--die-with-parent`) fires
    /// when the *thread* that forked the process ends: a command started
    /// from a thread that then finishes must keep running. Shown with a
    /// Python child that asks for SIGKILL on its parent's death itself.
    #[test]
    fn commands_survive_the_thread_that_started_them() {
        if std::process::Command::new("python3")
            .arg("-V")
            .output()
            .is_err()
        {
            eprintln!("skipped: python3 is not installed");
            return;
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let handle = runtime.handle().clone();
        let work = tempfile::tempdir().unwrap();
        // PR_SET_PDEATHSIG = 1, SIGKILL = 9.
        let script = "import ctypes, time\nctypes.CDLL(None).prctl(1, 9)\n\
                      print('armed', flush=True)\ntime.sleep(0.5)\nprint('alive')";
        let request = ExecRequest::new("python3", vec!["-c".into(), script.into()], work.path());
        let (mut child, group, first) = std::thread::spawn(move || {
            let (mut child, group) = {
                let _context = handle.enter();
                spawn(&LocalBackend::new(), &request, false).unwrap()
            };
            // Armed while this thread still lives; then the thread ends.
            let mut stdout = child.stdout.take().unwrap();
            let mut first = vec![0; 6];
            handle.block_on(stdout.read_exact(&mut first)).unwrap();
            child.stdout = Some(stdout);
            (child, group, first)
        })
        .join()
        .unwrap();
        assert_eq!(first, b"armed\n");
        let mut rest = String::new();
        let mut stdout = child.stdout.take().unwrap();
        runtime.block_on(stdout.read_to_string(&mut rest)).unwrap();
        drop(group);
        assert_eq!(rest, "alive\n");
    }
}
