//! The `terminal` plugin: `terminal` runs a shell command (foreground, with a
//! timeout, or in the background) and `process` manages background processes.
//! Every command goes through the host's `exec`/`process` imports, so the
//! approval layer and the configured execution backend (local, bwrap, ssh)
//! apply; the plugin itself has no other capability.

use schemars::JsonSchema;
use serde::Deserialize;
use talaria_plugin_sdk::exec::{self, Command};
use talaria_plugin_sdk::{
    CallContext, HostError, Tool, ToolError, ToolFlags, Value, json, process,
};

/// Default and largest foreground timeout, in seconds.
const DEFAULT_TIMEOUT_SECS: u64 = 180;
const MAX_TIMEOUT_SECS: u64 = 600;
/// How much output `poll` and `wait` show (the end of it).
const TAIL_BYTES: u64 = 4_000;
/// Default and largest `log` read.
const DEFAULT_LOG_BYTES: u32 = 50_000;
const MAX_LOG_BYTES: u32 = 1_000_000;

fn shell(command: &str, workdir: Option<&str>) -> Command {
    let mut cmd = Command::new("bash").args(["-c", command]);
    if let Some(dir) = workdir.filter(|d| !d.is_empty()) {
        cmd = cmd.cwd(dir);
    }
    cmd
}

fn host_error(e: HostError) -> ToolError {
    ToolError::from(e)
}

#[derive(Deserialize, JsonSchema)]
pub struct TerminalArgs {
    /// The shell command (run with `bash -c`).
    pub command: String,
    /// Run in the background and return its id at once; manage it with the
    /// `process` tool.
    pub background: Option<bool>,
    /// Seconds before a foreground command is killed (default 180, at most 600).
    pub timeout: Option<u64>,
    /// Working directory (default: the session's). Commands in a directory
    /// outside the session's working directory always need the user's
    /// approval (and are refused where nobody can answer).
    pub workdir: Option<String>,
    /// Ask for a pseudo-terminal. Not supported: the command runs without one.
    pub pty: Option<bool>,
}

/// `terminal`: runs a shell command.
#[derive(Default)]
pub struct Terminal;

impl Tool for Terminal {
    const NAME: &'static str = "terminal";
    const DESCRIPTION: &'static str = "Run a shell command with bash in the working directory. \
        Foreground commands return their output and exit code when they finish or after \
        `timeout` seconds (default 180, max 600). For servers, watchers and other long-running \
        commands set background: true and use the `process` tool to read output, wait or kill. \
        Commands that can destroy data need the user's approval; some are never allowed.";
    type Args = TerminalArgs;

    fn flags() -> ToolFlags {
        ToolFlags::default()
    }

    fn call(&self, args: TerminalArgs, _ctx: &CallContext) -> Result<Value, ToolError> {
        if args.command.trim().is_empty() {
            return Err(ToolError::InvalidArguments("command is empty".into()));
        }
        let note = args
            .pty
            .unwrap_or(false)
            .then_some("pty is not supported; the command ran without a terminal");
        let command = shell(&args.command, args.workdir.as_deref());
        if args.background.unwrap_or(false) {
            let id = process::spawn(&command).map_err(host_error)?;
            return Ok(json!({
                "session_id": id.to_string(),
                "status": "running",
                "note": note,
                "hint": "use the process tool (poll, log, wait, kill, write) with this session_id",
            }));
        }
        let timeout = args
            .timeout
            .unwrap_or(DEFAULT_TIMEOUT_SECS)
            .clamp(1, MAX_TIMEOUT_SECS);
        let output = exec::run(&command.timeout_ms(timeout * 1000)).map_err(host_error)?;
        let mut text = output.stdout_text();
        let stderr = output.stderr_text();
        if !stderr.is_empty() {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&stderr);
        }
        let error = if output.timed_out {
            Some(format!(
                "the command timed out after {timeout} s and was killed; use background: true for long-running commands"
            ))
        } else {
            None
        };
        Ok(json!({
            "output": text,
            "exit_code": output.status,
            "error": error,
            "note": note,
        }))
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Every background process of this session.
    List,
    /// Status and the end of the output.
    Poll,
    /// Output from `offset` (bytes), at most `limit` bytes.
    Log,
    /// Wait up to `timeout` seconds for it to end.
    Wait,
    /// Kill it and everything it started.
    Kill,
    /// Write `data` to its stdin.
    Write,
}

#[derive(Deserialize, JsonSchema)]
pub struct ProcessArgs {
    /// What to do.
    pub action: Action,
    /// The id `terminal` returned (not needed for `list`).
    pub session_id: Option<String>,
    /// For `write`: the text to send (add "\n" to end a line). It is screened
    /// like a command: what would need approval as a command needs it here.
    pub data: Option<String>,
    /// For `wait`: seconds to wait (default 30, max 600).
    pub timeout: Option<u64>,
    /// For `log`: the byte offset to read from (default 0).
    pub offset: Option<u64>,
    /// For `log`: most bytes to return (default 50000).
    pub limit: Option<u32>,
}

fn process_id(args: &ProcessArgs) -> Result<u64, ToolError> {
    let id = args.session_id.as_deref().ok_or_else(|| {
        ToolError::InvalidArguments("session_id is required for this action".into())
    })?;
    id.trim()
        .parse()
        .map_err(|_| ToolError::InvalidArguments(format!("{id:?} is not a process session_id")))
}

fn chunk_json(id: u64, chunk: &process::Chunk) -> Value {
    json!({
        "session_id": id.to_string(),
        "status": if chunk.running { "running" } else { "exited" },
        "exit_code": chunk.status,
        "output": String::from_utf8_lossy(&chunk.data),
        "next_offset": chunk.next_offset,
        "dropped_bytes": chunk.dropped,
    })
}

/// Reads the last [`TAIL_BYTES`] of output of `id`.
fn tail(id: u64, wait_ms: Option<u64>) -> Result<Value, ToolError> {
    // Learn the total first (a zero-byte read), then read its tail.
    let probe = match wait_ms {
        Some(ms) => process::wait(id, ms, u64::MAX, 0),
        None => process::read(id, u64::MAX, 0),
    }
    .map_err(host_error)?;
    let from = probe.next_offset.saturating_sub(TAIL_BYTES);
    let chunk = process::read(id, from, TAIL_BYTES as u32).map_err(host_error)?;
    Ok(chunk_json(id, &chunk))
}

/// `process`: manages background processes started by `terminal`.
#[derive(Default)]
pub struct Process;

impl Tool for Process {
    const NAME: &'static str = "process";
    const DESCRIPTION: &'static str = "Manage background processes started with terminal \
        (background: true): list them, poll (status and the end of the output), log (output \
        from a byte offset), wait (until it ends or `timeout` seconds), kill, or write to its \
        stdin (screened like a command).";
    type Args = ProcessArgs;

    fn flags() -> ToolFlags {
        ToolFlags::default()
    }

    fn call(&self, args: ProcessArgs, _ctx: &CallContext) -> Result<Value, ToolError> {
        match args.action {
            Action::List => {
                let processes: Vec<Value> = process::list()
                    .into_iter()
                    .map(|p| {
                        json!({
                            "session_id": p.id.to_string(),
                            "command": p.command,
                            "status": if p.running { "running" } else { "exited" },
                            "exit_code": p.status,
                            "started_ms": p.started_ms,
                        })
                    })
                    .collect();
                Ok(json!({ "processes": processes }))
            }
            Action::Poll => tail(process_id(&args)?, None),
            Action::Wait => {
                let secs = args.timeout.unwrap_or(30).clamp(1, MAX_TIMEOUT_SECS);
                tail(process_id(&args)?, Some(secs * 1000))
            }
            Action::Log => {
                let id = process_id(&args)?;
                let limit = args.limit.unwrap_or(DEFAULT_LOG_BYTES).min(MAX_LOG_BYTES);
                let chunk =
                    process::read(id, args.offset.unwrap_or(0), limit).map_err(host_error)?;
                Ok(chunk_json(id, &chunk))
            }
            Action::Kill => {
                let id = process_id(&args)?;
                process::kill(id).map_err(host_error)?;
                Ok(json!({ "session_id": id.to_string(), "status": "killed" }))
            }
            Action::Write => {
                let id = process_id(&args)?;
                let data = args.data.as_deref().ok_or_else(|| {
                    ToolError::InvalidArguments("data is required for write".into())
                })?;
                process::write(id, data.as_bytes()).map_err(host_error)?;
                Ok(json!({ "session_id": id.to_string(), "written_bytes": data.len() }))
            }
        }
    }
}

talaria_plugin_sdk::export_tools!(Terminal, Process);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_validate() {
        talaria_plugin_sdk::validate::<(Terminal, Process)>().unwrap();
    }

    #[test]
    fn arguments_follow_the_hermes_names() {
        let schema = talaria_plugin_sdk::parameters_schema::<TerminalArgs>();
        let props = schema["properties"].as_object().unwrap();
        for key in ["command", "background", "timeout", "workdir", "pty"] {
            assert!(props.contains_key(key), "{key}");
        }
        let schema = talaria_plugin_sdk::parameters_schema::<ProcessArgs>();
        let props = schema["properties"].as_object().unwrap();
        for key in ["action", "session_id", "data", "timeout", "offset", "limit"] {
            assert!(props.contains_key(key), "{key}");
        }
    }

    #[test]
    fn ids_must_be_numbers() {
        let args = ProcessArgs {
            action: Action::Kill,
            session_id: Some("abc".into()),
            data: None,
            timeout: None,
            offset: None,
            limit: None,
        };
        assert!(matches!(
            process_id(&args),
            Err(ToolError::InvalidArguments(_))
        ));
    }
}
