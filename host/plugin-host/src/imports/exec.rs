//! The `exec` and `process` host imports: every command goes through the
//! approval gate and the execution backend the agent configured; the plugin
//! only needs the `exec` grant.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use talaria_approval::{ApprovalPolicy, DenyAll};
use talaria_exec::{
    CwdKind, ExecError, ExecOrigin, ExecRequest, Executor, GatedExecutor, LocalBackend,
    ProcessTable,
};
use tokio_util::sync::CancellationToken;

use crate::bindings::HostError;
use crate::bindings::talaria::plugin::{exec, process};
use crate::imports::editor::Editor;
use crate::log::{LogLevel, LogSource};
use crate::state::HostCtx;

/// Most stdout (and, separately, stderr) bytes `exec.run` returns.
pub const MAX_EXEC_OUTPUT_BYTES: usize = 1024 * 1024;

/// Where plugin commands go: the gate (approval + backend) for `exec.run`,
/// and the session's background processes for `process`.
#[derive(Clone)]
pub struct ExecServices {
    /// Approval, then the backend.
    pub executor: Arc<GatedExecutor>,
    /// Background processes, started through the same executor.
    pub processes: Arc<ProcessTable>,
}

impl std::fmt::Debug for ExecServices {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExecServices")
            .field("backend", &self.executor.backend().name())
            .finish_non_exhaustive()
    }
}

impl ExecServices {
    /// Services over `executor`, with a process table of their own.
    pub fn new(executor: Arc<GatedExecutor>) -> Self {
        Self {
            processes: Arc::new(ProcessTable::new(executor.clone())),
            executor,
        }
    }

    /// Local commands; anything that needs approval is denied (nobody to
    /// ask). "Always" approvals are read from `always_file`.
    pub fn deny_all(always_file: &Path) -> Result<Self, String> {
        let policy = ApprovalPolicy::load(always_file).map_err(|e| e.to_string())?;
        Ok(Self::new(Arc::new(GatedExecutor::new(
            Arc::new(LocalBackend::new()),
            Arc::new(policy),
            Arc::new(DenyAll),
        ))))
    }
}

fn host_error(error: ExecError) -> HostError {
    match error {
        ExecError::Denied(message) => HostError::Denied(message),
        ExecError::NoSuchProcess(id) => HostError::NotFound(format!("no background process {id}")),
        other => HostError::Failed(other.to_string()),
    }
}

impl HostCtx {
    fn check_exec(&self) -> Result<(), HostError> {
        if self.plugin.caps.exec {
            Ok(())
        } else {
            Err(HostError::Denied(self.plugin.denied("exec")))
        }
    }

    /// Who runs commands: this plugin's tool in this session, confined to
    /// the call's working directory (a command elsewhere needs approval).
    fn origin(&self) -> ExecOrigin {
        ExecOrigin::new(
            self.plugin.name.clone(),
            self.tool.clone(),
            self.session_id.clone(),
        )
        .with_workspace(self.base_dir())
    }

    /// The call's working directory, or the plugin's data directory when
    /// the call has none.
    fn base_dir(&self) -> PathBuf {
        self.cwd
            .clone()
            .unwrap_or_else(|| self.plugin.data_dir.clone())
    }

    /// The request for `command`: its cwd relative to the call's working
    /// directory, its time within what is left of the call's own.
    fn request(&self, command: exec::Command) -> ExecRequest {
        let base = self.base_dir();
        let cwd = match &command.cwd {
            Some(dir) if Path::new(dir).is_absolute() => PathBuf::from(dir),
            Some(dir) => base.join(dir),
            None => base,
        };
        let limit = self
            .deadline
            .saturating_duration_since(std::time::Instant::now());
        let timeout = command
            .timeout_ms
            .map(Duration::from_millis)
            .map_or(limit, |t| t.min(limit));
        let mut request = ExecRequest::new(command.program, command.args, cwd);
        request.env = command.env;
        request.stdin = command.stdin;
        request.timeout = timeout;
        request.output_cap = MAX_EXEC_OUTPUT_BYTES;
        request
    }

    /// The editor whose terminal runs `request`: only when the editor runs
    /// commands, the backend is this machine unsandboxed (an editor's
    /// terminal is no sandbox and no remote host, so it never stands in for
    /// one) and nothing goes to stdin (a terminal takes none).
    fn editor_terminal(&self, request: &ExecRequest) -> Option<Arc<dyn Editor>> {
        let backend = self.plugin.exec.executor.backend();
        let local = !backend.sandboxed() && backend.cwd_kind() == CwdKind::Host;
        self.plugin
            .editor
            .clone()
            .filter(|editor| editor.runs_commands() && local && request.stdin.is_none())
    }

    fn note(&self, what: &str, request: &ExecRequest) {
        self.plugin.log.push(
            LogLevel::Info,
            LogSource::Host,
            &format!(
                "{what} {} {:?} in {} ({})",
                request.program,
                request.args,
                request.cwd.display(),
                self.plugin.exec.executor.backend().name()
            ),
        );
    }
}

impl exec::Host for HostCtx {
    async fn run(&mut self, command: exec::Command) -> Result<exec::Output, HostError> {
        self.check_exec()?;
        let mut request = self.request(command);
        // Cancelling the plugin call drops this future, which kills the
        // command (its process group, or the editor's terminal).
        let output = match self.editor_terminal(&request) {
            Some(editor) => {
                self.note("exec in the editor's terminal:", &request);
                let executor = &self.plugin.exec.executor;
                executor
                    .approve(&mut request, &self.origin())
                    .await
                    .map_err(host_error)?;
                editor.run_command(&self.tool, &request).await
            }
            None => {
                self.note("exec", &request);
                self.plugin
                    .exec
                    .executor
                    .execute(request, &self.origin(), &CancellationToken::new())
                    .await
            }
        }
        .map_err(host_error)?;
        Ok(exec::Output {
            status: output.status,
            stdout: output.stdout,
            stderr: output.stderr,
            timed_out: output.timed_out,
        })
    }
}

fn chunk(
    table: &ProcessTable,
    session: &str,
    id: u64,
    offset: u64,
    max: u32,
) -> Result<process::Chunk, HostError> {
    let read = table
        .read(session, id, offset, max as usize)
        .map_err(host_error)?;
    Ok(process::Chunk {
        data: read.data,
        next_offset: read.next_offset,
        dropped: read.dropped_bytes,
        running: read.running,
        status: read.status,
    })
}

impl process::Host for HostCtx {
    async fn spawn(&mut self, command: exec::Command) -> Result<u64, HostError> {
        self.check_exec()?;
        let request = self.request(command);
        self.note("spawn", &request);
        self.plugin
            .exec
            .processes
            .start(request, &self.origin())
            .await
            .map_err(host_error)
    }

    async fn read(
        &mut self,
        id: u64,
        offset: u64,
        max_bytes: u32,
    ) -> Result<process::Chunk, HostError> {
        self.check_exec()?;
        chunk(
            &self.plugin.exec.processes,
            &self.session_id,
            id,
            offset,
            max_bytes,
        )
    }

    async fn wait(
        &mut self,
        id: u64,
        timeout_ms: u64,
        offset: u64,
        max_bytes: u32,
    ) -> Result<process::Chunk, HostError> {
        self.check_exec()?;
        let limit = self
            .deadline
            .saturating_duration_since(std::time::Instant::now());
        let timeout = Duration::from_millis(timeout_ms).min(limit);
        let table = &self.plugin.exec.processes;
        table
            .wait(&self.session_id, id, timeout)
            .await
            .map_err(host_error)?;
        chunk(table, &self.session_id, id, offset, max_bytes)
    }

    async fn write(&mut self, id: u64, data: Vec<u8>) -> Result<(), HostError> {
        self.check_exec()?;
        self.plugin
            .exec
            .processes
            .write(&self.origin(), id, &data)
            .await
            .map_err(host_error)
    }

    async fn kill(&mut self, id: u64) -> Result<(), HostError> {
        self.check_exec()?;
        self.plugin
            .exec
            .processes
            .kill(&self.session_id, id)
            .map_err(host_error)
    }

    async fn list(&mut self) -> Vec<process::ProcessInfo> {
        if self.check_exec().is_err() {
            return Vec::new();
        }
        self.plugin
            .exec
            .processes
            .list(&self.session_id)
            .into_iter()
            .map(|p| process::ProcessInfo {
                id: p.id,
                command: p.command,
                running: p.running,
                status: p.status,
                started_ms: p
                    .started
                    .duration_since(UNIX_EPOCH)
                    .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bindings::talaria::plugin::exec::Host as _;
    use crate::bindings::talaria::plugin::process::Host as _;
    use talaria_plugin_manifest::Capabilities;

    fn command(program: &str, args: &[&str], timeout_ms: Option<u64>) -> exec::Command {
        exec::Command {
            program: program.into(),
            args: args.iter().map(std::string::ToString::to_string).collect(),
            cwd: None,
            env: vec![("GREETING".into(), "hello".into())],
            stdin: Some(b"from stdin".to_vec()),
            timeout_ms,
        }
    }

    fn error<T>(result: Result<T, HostError>) -> String {
        match result {
            Ok(_) => "ok".into(),
            Err(HostError::Denied(m)) => format!("denied: {m}"),
            Err(HostError::NotFound(m)) => format!("not found: {m}"),
            Err(HostError::Failed(m)) => format!("failed: {m}"),
        }
    }

    fn granted(dir: &Path) -> HostCtx {
        HostCtx::for_tests(
            Capabilities {
                exec: true,
                ..Capabilities::default()
            },
            dir,
        )
    }

    #[tokio::test]
    async fn exec_and_process_need_the_grant() {
        let dir = tempfile::tempdir().unwrap();
        let mut host = HostCtx::for_tests(Capabilities::default(), dir.path());
        assert_eq!(
            error(host.run(command("true", &[], None)).await),
            "denied: p was not granted exec"
        );
        assert_eq!(
            error(host.spawn(command("true", &[], None)).await),
            "denied: p was not granted exec"
        );
        assert!(process::Host::list(&mut host).await.is_empty());
    }

    #[tokio::test]
    async fn commands_run_in_the_call_directory_with_stdin_env_and_caps() {
        let dir = tempfile::tempdir().unwrap();
        let mut host = granted(dir.path());
        let out = host
            .run(command(
                "sh",
                &["-c", "cat; echo \" $GREETING\"; pwd; echo err >&2; exit 3"],
                None,
            ))
            .await
            .ok()
            .unwrap();
        assert_eq!(out.status, Some(3));
        assert!(!out.timed_out);
        let canonical = dir.path().canonicalize().unwrap();
        let stdout = String::from_utf8(out.stdout).unwrap();
        assert!(
            stdout == format!("from stdin hello\n{}\n", dir.path().display())
                || stdout == format!("from stdin hello\n{}\n", canonical.display()),
            "{stdout}"
        );
        assert_eq!(out.stderr, b"err\n");

        let out = host
            .run(command("sleep", &["30"], Some(200)))
            .await
            .ok()
            .unwrap();
        assert!(out.timed_out);
        assert_eq!(out.status, None);

        let out = host
            .run(command("sh", &["-c", "head -c 3000000 /dev/zero"], None))
            .await
            .ok()
            .unwrap();
        assert_eq!(out.stdout.len(), MAX_EXEC_OUTPUT_BYTES);

        let err = error(host.run(command("/no/such/program", &[], None)).await);
        assert!(
            err.starts_with("failed:") && err.contains("/no/such/program"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn dangerous_commands_go_through_approval() {
        let dir = tempfile::tempdir().unwrap();
        let mut host = granted(dir.path());
        let err = error(host.run(command("sh", &["-c", "rm -rf build"], None)).await);
        assert!(err.starts_with("denied:"), "{err}");
        let err = error(host.run(command("sh", &["-c", "rm -rf /"], None)).await);
        assert!(err.contains("hardline"), "{err}");
        let err = error(
            host.spawn(command("sh", &["-c", "sudo reboot"], None))
                .await,
        );
        assert!(err.starts_with("denied:"), "{err}");
    }

    #[tokio::test]
    async fn commands_stay_in_the_call_directory_and_shell_input_is_screened() {
        let (dir, outside) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::create_dir(outside.path().join("keep")).unwrap();
        let shown = outside.path().canonicalize().unwrap().display().to_string();
        let mut host = granted(dir.path());
        let in_dir = |script: &str, cwd: &str| exec::Command {
            cwd: Some(cwd.into()),
            stdin: None,
            ..command("sh", &["-c", script], None)
        };
        let relative = format!(
            "../{}",
            outside.path().file_name().unwrap().to_str().unwrap()
        );
        for cwd in [outside.path().to_str().unwrap(), relative.as_str()] {
            let err = error(host.run(in_dir("ls", cwd)).await);
            assert!(err.starts_with("denied:") && err.contains(&shown), "{err}");
            let err = error(host.spawn(in_dir("rm -rf keep", cwd)).await);
            assert!(err.starts_with("denied:") && err.contains(&shown), "{err}");
        }
        assert!(outside.path().join("keep").is_dir());
        let out = host.run(in_dir("pwd", "sub")).await.ok().unwrap();
        assert_eq!(out.status, Some(0));

        let id = host.spawn(in_dir("cat", "sub")).await.ok().unwrap();
        let err = error(host.write(id, b"rm -rf /tmp/x\n".to_vec()).await);
        assert!(err.starts_with("denied:"), "{err}");
        assert_eq!(error(host.write(id, b"hello\n".to_vec()).await), "ok");
        host.kill(id).await.ok().unwrap();
    }

    #[tokio::test]
    async fn background_processes_belong_to_their_session() {
        let dir = tempfile::tempdir().unwrap();
        let mut host = granted(dir.path());
        let id = host
            .spawn(command("sh", &["-c", "echo one; cat; echo done"], None))
            .await
            .ok()
            .unwrap();
        let listed = process::Host::list(&mut host).await;
        assert_eq!(listed.len(), 1);
        assert!(listed[0].running, "cat keeps it running");
        // Its first line arrives while it runs (generous bound; no timing asserted).
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            let chunk = host.read(id, 0, 1_000).await.ok().unwrap();
            if chunk.data.starts_with(b"one\n") {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "no output from the process"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        host.kill(id).await.ok().unwrap();
        let chunk = host.wait(id, 5_000, 0, 1_000).await.ok().unwrap();
        assert!(!chunk.running);
        assert!(String::from_utf8_lossy(&chunk.data).starts_with("one\n"));

        let mut other = granted(dir.path());
        other.session_id = "other".into();
        assert!(error(other.read(id, 0, 10).await).starts_with("not found"));
        assert!(process::Host::list(&mut other).await.is_empty());
    }
}
