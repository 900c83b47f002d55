//! Background processes of sessions: started through the approval gate,
//! their combined output kept in a bounded log, killed as process groups.
//! Text written to their stdin is screened by the gate like a command.

mod input;
mod log;
mod readers;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime};

use tokio::io::AsyncWriteExt;
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use talaria_approval::{Approval, Finding};

use self::input::InputWindow;
use self::log::OutputLog;
use self::readers::InputReader;
use crate::backend::CwdKind;
use crate::gate::{ExecOrigin, GatedExecutor, command_text};
use crate::group::ProcessGroup;
use crate::supervise::{pump, spawn, wait_and_drain};
use crate::{ExecError, ExecRequest};

/// Output read from a background process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessChunk {
    /// Combined stdout and stderr bytes, from the requested offset.
    pub data: Vec<u8>,
    /// The offset to read from next.
    pub next_offset: u64,
    /// Whether it is still running. Read before the data: when `false`,
    /// `data` reaches the end of all output it will ever have.
    pub running: bool,
    /// Its exit code once it exited normally.
    pub status: Option<i32>,
    /// Bytes after the requested offset that were dropped from the log (it
    /// keeps only the newest bytes) before they could be read.
    pub dropped_bytes: u64,
}

/// A background process as listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessInfo {
    /// Its id (unique in the table).
    pub id: u64,
    /// Its command line as the approval layer saw it.
    pub command: String,
    /// Whether it is still running.
    pub running: bool,
    /// Its exit code once it exited normally (`None` when killed).
    pub status: Option<i32>,
    /// When it was started.
    pub started: SystemTime,
}

/// Background processes, each owned by a session: another session's process
/// ids are reported as [`ExecError::NoSuchProcess`]. Processes keep running
/// until they exit, are killed, their session ends, or the table is dropped.
///
/// A background request's `timeout` and `output_cap` are not used: it runs
/// until stopped, and its output goes to a log keeping the newest
/// [`log_cap`](Self::with_log_cap) bytes.
pub struct ProcessTable {
    executor: Arc<GatedExecutor>,
    log_cap: usize,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    next_id: u64,
    processes: BTreeMap<u64, Arc<Process>>,
}

struct Process {
    id: u64,
    session: String,
    command: String,
    started: SystemTime,
    group: ProcessGroup,
    /// Fired by `kill`, so the supervisor kills the main process even if it
    /// left its group.
    kill: CancellationToken,
    log: Mutex<OutputLog>,
    /// `None` while running, then its exit code (`None` inside when killed).
    exit: watch::Sender<Option<Option<i32>>>,
    /// `None` once closed or exited.
    stdin: Arc<tokio::sync::Mutex<Option<ChildStdin>>>,
    /// Whether it runs sandboxed inside the session's working directory, so
    /// dangerous input may run without asking, like a command there.
    sandboxed: bool,
    /// Where it runs, for reading relative paths in its input.
    cwd: Option<PathBuf>,
    /// Recent input, screened together with each write; held across the
    /// approval so writes are screened and sent one at a time.
    input: tokio::sync::Mutex<InputWindow>,
    /// The started process and the pipe that is its stdin, to find who reads
    /// it (`None` off this machine, e.g. over ssh).
    reader_key: Option<(u32, u64)>,
}

impl ProcessTable {
    /// Bytes of combined output kept per process by default (4 MiB).
    pub const DEFAULT_LOG_CAP: usize = 4 * 1024 * 1024;

    /// A table starting processes on `executor`'s backend after its approval.
    pub fn new(executor: Arc<GatedExecutor>) -> Self {
        Self {
            executor,
            log_cap: Self::DEFAULT_LOG_CAP,
            state: Mutex::new(State::default()),
        }
    }

    /// Keep the newest `cap` bytes of each process's output.
    pub fn with_log_cap(mut self, cap: usize) -> Self {
        self.log_cap = cap;
        self
    }

    /// Starts `request` in the background for `origin`'s session once the
    /// approval gate allows it, and returns its id. `request.stdin`, if any,
    /// is written first; stdin stays open for [`write`](Self::write).
    pub async fn start(
        &self,
        mut request: ExecRequest,
        origin: &ExecOrigin,
    ) -> Result<u64, ExecError> {
        let admission = self.executor.admit(&mut request, origin).await?;
        let command = command_text(&request);
        let (mut child, group) = spawn(self.executor.backend().as_ref(), &request, true)?;
        let reader_key = match (self.executor.backend().cwd_kind(), &child.stdin) {
            (CwdKind::Host, Some(pipe)) => child
                .id()
                .zip(nix::sys::stat::fstat(pipe).ok())
                .map(|(pid, stat)| (pid, stat.st_ino)),
            _ => None,
        };
        let stdin = Arc::new(tokio::sync::Mutex::new(child.stdin.take()));
        // Taken before the supervisor starts, so later writes queue behind the initial bytes.
        let initial = match request.stdin {
            Some(data) => Some((Arc::clone(&stdin).lock_owned().await, data)),
            None => None,
        };
        let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
        let mut state = lock(&self.state);
        state.next_id += 1;
        let process = Arc::new(Process {
            id: state.next_id,
            session: origin.session_id.clone(),
            command,
            started: SystemTime::now(),
            group,
            kill: CancellationToken::new(),
            log: Mutex::new(OutputLog::new(self.log_cap)),
            exit: watch::Sender::new(None),
            stdin,
            sandboxed: admission.sandboxed,
            cwd: self.executor.screen_cwd(&request.cwd),
            input: tokio::sync::Mutex::new(InputWindow::default()),
            reader_key,
        });
        state.processes.insert(process.id, Arc::clone(&process));
        drop(state);
        let id = process.id;
        tokio::spawn(supervise(child, stdout, stderr, initial, process));
        Ok(id)
    }

    /// Up to `max_bytes` of the process's combined output from `offset`.
    pub fn read(
        &self,
        session: &str,
        id: u64,
        offset: u64,
        max_bytes: usize,
    ) -> Result<ProcessChunk, ExecError> {
        let process = self.find(session, id)?;
        // State first: if it has exited, all its output is in the log already.
        let exit = *process.exit.borrow();
        let slice = lock(&process.log).read(offset, max_bytes);
        Ok(ProcessChunk {
            data: slice.data,
            next_offset: slice.next_offset,
            running: exit.is_none(),
            status: exit.flatten(),
            dropped_bytes: slice.dropped,
        })
    }

    /// Waits up to `timeout` for the process to exit and returns its state
    /// (still `running` if the timeout passed first).
    pub async fn wait(
        &self,
        session: &str,
        id: u64,
        timeout: Duration,
    ) -> Result<ProcessInfo, ExecError> {
        let process = self.find(session, id)?;
        let mut exit = process.exit.subscribe();
        // Err: the timeout passed; the state says it is still running.
        let _ = tokio::time::timeout(timeout, exit.wait_for(Option::is_some)).await;
        Ok(process.info())
    }

    /// Writes `data` to the process's stdin for `origin` (its session must
    /// own the process). Input to a running program is a command to whichever
    /// program reads it now (found in `/proc`, see [`readers`]): to a shell it
    /// is screened by the gate like a command (with the input written just
    /// before it, so a command split over several writes is seen whole); to
    /// a program that runs its own commands (a debugger, a database shell, a
    /// REPL) it needs approval like a dangerous command; to programs that
    /// only take data (`cat`, `grep` …) it goes as it is. A refusal is
    /// [`ExecError::Denied`] and nothing is written. Waits while the pipe is
    /// full.
    pub async fn write(&self, origin: &ExecOrigin, id: u64, data: &[u8]) -> Result<(), ExecError> {
        let process = self.find(&origin.session_id, id)?;
        let mut input = process.input.lock().await;
        let text = input.with(data);
        let reader = process
            .reader_key
            .and_then(|(pid, inode)| readers::readers(pid, inode));
        let cwd = process.cwd.as_deref();
        let approval = match reader {
            Some(InputReader::Data) => Approval::Safe,
            Some(InputReader::Program(program)) => {
                let finding = Finding {
                    id: format!("input-to-program:{program}"),
                    description: format!(
                        "text written to the input of `{program}`, which may run it as \
                         commands of its own"
                    ),
                };
                self.executor
                    .screen(&text, origin, cwd, process.sandboxed, Some(finding))
                    .await?
            }
            // A shell, or nothing known of the reader (off this machine): a command line.
            Some(InputReader::Shell) | None => {
                self.executor
                    .screen(&text, origin, cwd, process.sandboxed, None)
                    .await?
            }
        };
        let mut stdin = process.stdin.lock().await;
        let pipe = stdin
            .as_mut()
            .ok_or_else(|| ExecError::Failed(format!("process {id}: stdin is closed")))?;
        let written = match pipe.write_all(data).await {
            Ok(()) => pipe.flush().await,
            Err(e) => Err(e),
        };
        written.map_err(|e| {
            // A broken pipe will not heal: close our end.
            stdin.take();
            ExecError::Failed(format!("process {id}: writing to stdin failed: {e}"))
        })?;
        input.record(text, &approval);
        Ok(())
    }

    /// Closes the process's stdin, so it reads end-of-file.
    pub async fn close_stdin(&self, session: &str, id: u64) -> Result<(), ExecError> {
        let process = self.find(session, id)?;
        process.stdin.lock().await.take();
        Ok(())
    }

    /// Kills the process and its whole process group. Its output stays
    /// readable until [`remove`](Self::remove) or the end of the session.
    pub fn kill(&self, session: &str, id: u64) -> Result<(), ExecError> {
        self.find(session, id)?.kill();
        Ok(())
    }

    /// Kills the process if it still runs and forgets it.
    pub fn remove(&self, session: &str, id: u64) -> Result<(), ExecError> {
        let process = self.find(session, id)?;
        process.kill();
        lock(&self.state).processes.remove(&id);
        Ok(())
    }

    /// The session's processes, oldest first.
    pub fn list(&self, session: &str) -> Vec<ProcessInfo> {
        lock(&self.state)
            .processes
            .values()
            .filter(|p| p.session == session)
            .map(|p| p.info())
            .collect()
    }

    /// Kills and forgets all processes of `session`.
    pub fn end_session(&self, session: &str) {
        let mut state = lock(&self.state);
        state.processes.retain(|_, process| {
            let keep = process.session != session;
            if !keep {
                process.kill();
            }
            keep
        });
    }

    fn find(&self, session: &str, id: u64) -> Result<Arc<Process>, ExecError> {
        lock(&self.state)
            .processes
            .get(&id)
            .filter(|p| p.session == session)
            .cloned()
            .ok_or(ExecError::NoSuchProcess(id))
    }
}

impl Drop for ProcessTable {
    fn drop(&mut self) {
        for process in lock(&self.state).processes.values() {
            process.kill();
        }
    }
}

impl Process {
    fn kill(&self) {
        self.group.kill();
        self.kill.cancel();
    }

    fn info(&self) -> ProcessInfo {
        let exit = *self.exit.borrow();
        ProcessInfo {
            id: self.id,
            command: self.command.clone(),
            running: exit.is_none(),
            status: exit.flatten(),
            started: self.started,
        }
    }
}

/// Follows one background process: pumps its output into the log, writes
/// the initial stdin, waits for it (or a kill), then records how it ended.
async fn supervise(
    mut child: Child,
    stdout: Option<ChildStdout>,
    stderr: Option<ChildStderr>,
    initial: Option<(tokio::sync::OwnedMutexGuard<Option<ChildStdin>>, Vec<u8>)>,
    process: Arc<Process>,
) {
    let append = |chunk: &[u8]| lock(&process.log).push(chunk);
    let feed_initial = async move {
        if let Some((mut stdin, data)) = initial
            && let Some(pipe) = stdin.as_mut()
        {
            let _ = pipe.write_all(&data).await;
            let _ = pipe.flush().await;
        }
    };
    let io = async {
        tokio::join!(pump(stdout, append), pump(stderr, append), feed_initial);
    };
    let status = wait_and_drain(&mut child, &process.group, io, process.kill.cancelled()).await;
    process.stdin.lock().await.take();
    process
        .exit
        .send_replace(Some(status.ok().and_then(|s| s.code())));
}

/// A poisoned lock only means a panic elsewhere mid-update; the data is still usable.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
