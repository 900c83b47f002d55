//! The `talaria:plugin` host imports. Every one is linked for every plugin; a
//! call the plugin was not granted returns `host-error::denied`, never a trap.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use crate::bindings::HostError;
use crate::bindings::talaria::plugin::{config, exec, host_types, kv, log, session_search, types};
use crate::log::{LogLevel, LogSource};
use crate::state::HostCtx;

/// Most stdout (and, separately, stderr) bytes `exec.run` returns.
pub const MAX_EXEC_OUTPUT_BYTES: usize = 1024 * 1024;

impl types::Host for HostCtx {}

impl host_types::Host for HostCtx {}

impl log::Host for HostCtx {
    async fn log(&mut self, level: log::Level, message: String) {
        let level = match level {
            log::Level::Trace => LogLevel::Trace,
            log::Level::Debug => LogLevel::Debug,
            log::Level::Info => LogLevel::Info,
            log::Level::Warn => LogLevel::Warn,
            log::Level::Error => LogLevel::Error,
        };
        self.plugin.log.push(level, LogSource::Plugin, &message);
    }
}

impl config::Host for HostCtx {
    async fn get(&mut self, name: String) -> Result<Option<String>, HostError> {
        let plugin = &self.plugin;
        if let Some(value) = plugin.config.get(&name) {
            return Ok(Some(value.clone()));
        }
        if plugin.caps.env.contains(&name) {
            return Ok(std::env::var(&name).ok());
        }
        if plugin.requested_env.contains(&name) {
            return Err(HostError::Denied(plugin.denied(&format!("env {name}"))));
        }
        Ok(None)
    }
}

impl HostCtx {
    fn kv(&self) -> Result<&crate::kv::KvStore, HostError> {
        self.plugin
            .kv
            .as_ref()
            .ok_or_else(|| HostError::Denied(self.plugin.denied("kv")))
    }
}

impl kv::Host for HostCtx {
    async fn get(&mut self, key: String) -> Result<Option<Vec<u8>>, HostError> {
        self.kv()?.get(&key).map_err(HostError::Failed)
    }

    async fn set(&mut self, key: String, value: Vec<u8>) -> Result<(), HostError> {
        self.kv()?.set(&key, &value).map_err(HostError::Failed)
    }

    async fn delete(&mut self, key: String) -> Result<(), HostError> {
        self.kv()?.delete(&key).map_err(HostError::Failed)
    }

    async fn list_keys(&mut self, prefix: String) -> Result<Vec<String>, HostError> {
        self.kv()?.list_keys(&prefix).map_err(HostError::Failed)
    }
}

impl session_search::Host for HostCtx {
    async fn search(
        &mut self,
        _query: String,
        _limit: u32,
    ) -> Result<Vec<session_search::Hit>, HostError> {
        if !self.plugin.caps.session_search {
            return Err(HostError::Denied(self.plugin.denied("session-search")));
        }
        Err(HostError::Failed(
            "session search is not available yet".into(),
        ))
    }
}

impl exec::Host for HostCtx {
    async fn run(&mut self, command: exec::Command) -> Result<exec::Output, HostError> {
        if !self.plugin.caps.exec {
            return Err(HostError::Denied(self.plugin.denied("exec")));
        }
        let base = self
            .cwd
            .clone()
            .unwrap_or_else(|| self.plugin.data_dir.clone());
        let cwd = match &command.cwd {
            Some(dir) if Path::new(dir).is_absolute() => PathBuf::from(dir),
            Some(dir) => base.join(dir),
            None => base,
        };
        // Within what is left of the call's own time.
        let limit = self
            .deadline
            .saturating_duration_since(std::time::Instant::now());
        let timeout = command
            .timeout_ms
            .map(Duration::from_millis)
            .map_or(limit, |t| t.min(limit));
        self.plugin.log.push(
            LogLevel::Info,
            LogSource::Host,
            &format!(
                "exec {} {:?} in {}",
                command.program,
                command.args,
                cwd.display()
            ),
        );
        run_process(command, &cwd, timeout)
            .await
            .map_err(HostError::Failed)
    }
}

async fn run_process(
    command: exec::Command,
    cwd: &Path,
    timeout: Duration,
) -> Result<exec::Output, String> {
    let mut cmd = tokio::process::Command::new(&command.program);
    cmd.args(&command.args)
        .env_clear()
        .current_dir(cwd)
        .stdin(if command.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if let Some(path) = std::env::var_os("PATH") {
        cmd.env("PATH", path);
    }
    cmd.envs(command.env.iter().map(|(k, v)| (k, v)));
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("starting {}: {e}", command.program))?;

    if let (Some(input), Some(mut stdin)) = (command.stdin, child.stdin.take()) {
        tokio::spawn(async move {
            let _ = stdin.write_all(&input).await;
            let _ = stdin.shutdown().await;
        });
    }
    let stdout = child
        .stdout
        .take()
        .map(|s| tokio::spawn(read_capped(s, MAX_EXEC_OUTPUT_BYTES)));
    let stderr = child
        .stderr
        .take()
        .map(|s| tokio::spawn(read_capped(s, MAX_EXEC_OUTPUT_BYTES)));

    let (status, timed_out) = match tokio::time::timeout(timeout, child.wait()).await {
        Ok(status) => (status.ok().and_then(|s| s.code()), false),
        Err(_) => {
            let _ = child.start_kill();
            let _ = child.wait().await;
            (None, true)
        }
    };
    // A grandchild may still hold the pipes open: give the readers a moment.
    let collect = |handle: Option<tokio::task::JoinHandle<Vec<u8>>>| async move {
        match handle {
            Some(handle) => {
                let abort = handle.abort_handle();
                match tokio::time::timeout(Duration::from_millis(200), handle).await {
                    Ok(Ok(bytes)) => bytes,
                    _ => {
                        abort.abort();
                        Vec::new()
                    }
                }
            }
            None => Vec::new(),
        }
    };
    Ok(exec::Output {
        status,
        stdout: collect(stdout).await,
        stderr: collect(stderr).await,
        timed_out,
    })
}

/// Reads everything, keeping the first `cap` bytes (the rest is drained so
/// the child never blocks on a full pipe).
async fn read_capped(mut reader: impl AsyncRead + Unpin, cap: usize) -> Vec<u8> {
    let mut kept = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match reader.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = cap.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::bindings::talaria::plugin::{exec::Host as _, kv::Host as _};
    use crate::bindings::talaria::plugin::{log::Host as _, session_search::Host as _};
    use crate::kv::KvStore;
    use crate::log::PluginLog;
    use crate::manifest::{Capabilities, Limits};
    use crate::net::NetPolicy;
    use crate::state::PluginShared;

    fn ctx(caps: Capabilities, data: &Path) -> HostCtx {
        let kv = caps.kv.then(|| KvStore::new(data.join("kv")));
        HostCtx {
            plugin: Arc::new(PluginShared {
                name: "p".into(),
                requested_env: vec!["CARGO_PKG_NAME".into(), "HOME".into()],
                config: [("greeting".to_string(), "hi".to_string())].into(),
                limits: Limits::default(),
                log: PluginLog::default(),
                kv,
                net: NetPolicy::default(),
                data_dir: data.to_path_buf(),
                caps,
            }),
            cwd: Some(data.to_path_buf()),
            deadline: std::time::Instant::now() + Duration::from_secs(10),
        }
    }

    /// An error as text (`HostError` has no `PartialEq`).
    fn error<T>(result: Result<T, HostError>) -> String {
        match result {
            Ok(_) => "ok".into(),
            Err(HostError::Denied(m)) => format!("denied: {m}"),
            Err(HostError::NotFound(m)) => format!("not found: {m}"),
            Err(HostError::Failed(m)) => format!("failed: {m}"),
        }
    }

    #[tokio::test]
    async fn ungranted_imports_are_denied() {
        let dir = tempfile::tempdir().unwrap();
        let mut host = ctx(Capabilities::default(), dir.path());
        assert_eq!(
            error(kv::Host::get(&mut host, "k".into()).await),
            "denied: p was not granted kv"
        );
        assert_eq!(
            error(host.set("k".into(), vec![1]).await),
            "denied: p was not granted kv"
        );
        assert_eq!(
            error(host.search("q".into(), 5).await),
            "denied: p was not granted session-search"
        );
        let command = exec::Command {
            program: "true".into(),
            args: vec![],
            cwd: None,
            env: vec![],
            stdin: None,
            timeout_ms: None,
        };
        assert_eq!(
            error(host.run(command).await),
            "denied: p was not granted exec"
        );
        assert_eq!(
            error(config::Host::get(&mut host, "HOME".into()).await),
            "denied: p was not granted env HOME"
        );
        assert_eq!(
            config::Host::get(&mut host, "greeting".into()).await.ok(),
            Some(Some("hi".into()))
        );
        assert_eq!(
            config::Host::get(&mut host, "PATH".into()).await.ok(),
            Some(None)
        );
        host.log(log::Level::Warn, "careful".into()).await;
        assert!(host.plugin.log.contains("careful"));
    }

    #[tokio::test]
    async fn granted_imports_work() {
        let dir = tempfile::tempdir().unwrap();
        let caps = Capabilities {
            exec: true,
            kv: true,
            session_search: true,
            env: vec!["CARGO_PKG_NAME".into()],
            ..Capabilities::default()
        };
        let mut host = ctx(caps, dir.path());
        assert_eq!(
            config::Host::get(&mut host, "CARGO_PKG_NAME".into())
                .await
                .ok(),
            Some(Some(env!("CARGO_PKG_NAME").into()))
        );
        assert_eq!(error(host.set("a".into(), b"1".to_vec()).await), "ok");
        assert_eq!(
            kv::Host::get(&mut host, "a".into()).await.ok(),
            Some(Some(b"1".to_vec()))
        );
        assert_eq!(
            host.list_keys(String::new()).await.ok(),
            Some(vec!["a".to_string()])
        );
        assert_eq!(error(host.delete("a".into()).await), "ok");
        assert_eq!(kv::Host::get(&mut host, "a".into()).await.ok(), Some(None));
        assert_eq!(
            error(host.search("q".into(), 5).await),
            "failed: session search is not available yet"
        );

        let command = |program: &str, args: &[&str], timeout_ms| exec::Command {
            program: program.into(),
            args: args.iter().map(|a| a.to_string()).collect(),
            cwd: None,
            env: vec![("GREETING".into(), "hello".into())],
            stdin: Some(b"from stdin".to_vec()),
            timeout_ms,
        };
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
        let stdout = String::from_utf8(out.stdout).unwrap();
        assert_eq!(
            stdout,
            format!("from stdin hello\n{}\n", dir.path().display())
        );
        assert_eq!(out.stderr, b"err\n");

        let start = std::time::Instant::now();
        let out = host
            .run(command("sleep", &["5"], Some(200)))
            .await
            .ok()
            .unwrap();
        assert!(out.timed_out);
        assert_eq!(out.status, None);
        assert!(start.elapsed() < Duration::from_secs(2));

        let out = host
            .run(command("sh", &["-c", "head -c 3000000 /dev/zero"], None))
            .await
            .ok()
            .unwrap();
        assert_eq!(out.stdout.len(), MAX_EXEC_OUTPUT_BYTES);

        let err = error(host.run(command("/no/such/program", &[], None)).await);
        assert!(
            err.starts_with("failed: starting /no/such/program"),
            "{err}"
        );
    }
}
