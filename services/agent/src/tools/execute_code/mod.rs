//! `execute_code`: programmatic tool calling. The model writes a Python
//! script; it runs through the session's execution layer with a generated
//! `talaria_tools` module whose functions call back into the host over a
//! Unix socket ([`rpc`]), limited to the file, terminal and web tools the
//! session offers. Only what the script prints comes back, so many tool calls
//! cost the model one turn — and the kernel refunds a turn whose only calls
//! are `execute_code`.
//!
//! The script is code that runs with the user's rights, so it follows the
//! terminal's rules ([`ExecuteCodeTool::offered`], `GatedExecutor::approve_code`):
//! - On a sandbox backend (`bwrap`) it runs inside the sandbox, without
//!   asking; its scratch directory (script, module, socket) is under the
//!   profile home, which the sandbox sees read-only wherever it is, under
//!   `/tmp` too (the socket still connects).
//! - On `local` under `ask` the whole script is shown to the user, who
//!   allows it once, for the session or always (finding `execute-code`; a
//!   script whose text matches a rule is judged by that rule's finding, as a
//!   command would be, so approving plain scripts does not approve those).
//! - On `local` under `deny` the tool is not offered at all (nobody could
//!   approve a script); under `--yolo` scripts run without asking.
//! - The script's text is screened like a command everywhere: a hardline
//!   shape in it refuses the script, also under `--yolo` and in a sandbox.
//! - The script's own calls go through the session's tool hooks (a plugin's
//!   veto holds, see [`ToolsHandle`]) and, for `terminal`, through the
//!   approval gate like any command.
//!
//! Known limits:
//! - Screening the text is a heuristic: what an approved (or yolo) script
//!   does at run time (subprocesses, file writes through Python) is not
//!   classified, only what its text shows. `bwrap` is the recommended
//!   setting for unattended use.
//! - Calls made by the script are not shown as tool events; the
//!   dispatcher's result limits still apply to each of them.
//! - The script runs on this machine: the `ssh` backend is not supported.

mod python;
mod rpc;

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::{Value, json};
use talaria_approval::Finding;
use talaria_exec::{ExecError, ExecOrigin, ExecOutput, ExecRequest, Executor, GatedExecutor};
use talaria_kernel::{CancellationToken, Hooks, ToolContext, ToolDispatcher, ToolSpec};
use talaria_plugin_host::ExecServices;
use talaria_tools::HookedTools;
use tokio::net::UnixListener;

use super::NativeTool;
use python::{MODULE_FILE, PY_TOOLS, RUNNER_FILE, RUNNER_SOURCE, SCRIPT_FILE, module_source};
use rpc::{Bridge, serve};

/// The tool's name.
pub const EXECUTE_CODE_TOOL: &str = "execute_code";

/// Most tool calls one script may make.
pub const MAX_TOOL_CALLS: usize = 50;
/// How long a script may run.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);
/// Most stdout bytes returned; kept below the dispatcher's default result
/// limit (50,000 bytes) so the whole JSON result is not cut again.
pub const MAX_STDOUT_BYTES: usize = 40_000;
/// Most stderr bytes returned (the end is kept: that is where a traceback is).
pub const MAX_STDERR_BYTES: usize = 8_000;
/// The environment variable naming the socket in the script's process.
pub const SOCKET_ENV: &str = "TALARIA_TOOLS_SOCKET";
/// The approval finding of a script ("session" and "always" approvals are
/// remembered by it).
pub const SCRIPT_FINDING: &str = "execute-code";

/// Longest socket path the OS accepts (`sun_path` less its NUL).
const MAX_SOCKET_PATH: usize = 107;
/// The interpreter.
const PYTHON: &str = "python3";

/// The session's tool dispatcher, known only once it is built — and it is
/// built from the native tools, `execute_code` among them. Create the handle
/// first, give a clone to [`ExecuteCodeTool::new`], and [`set`](Self::set)
/// it as soon as the dispatcher exists. It holds a weak reference, so the
/// dispatcher and this tool do not keep each other alive. Calls through it
/// pass the session's tool hooks ([`HookedTools`]): the loop runs them only
/// for the model's own calls.
#[derive(Clone, Default)]
pub struct ToolsHandle(Arc<OnceLock<Connected>>);

struct Connected {
    tools: Weak<dyn ToolDispatcher>,
    hooks: Arc<dyn Hooks>,
    model: String,
}

impl ToolsHandle {
    /// An empty handle: calls fail until it is set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Points the handle at `dispatcher`, whose calls pass `hooks` (the
    /// session's, told that `model` answers). Only the first call counts.
    pub fn set<D: ToolDispatcher + 'static>(
        &self,
        dispatcher: &Arc<D>,
        hooks: Arc<dyn Hooks>,
        model: impl Into<String>,
    ) {
        let weak: Weak<D> = Arc::downgrade(dispatcher);
        let tools: Weak<dyn ToolDispatcher> = weak;
        let _ = self.0.set(Connected {
            tools,
            hooks,
            model: model.into(),
        });
    }

    /// The dispatcher behind the hooks, while it is alive.
    fn get(&self) -> Option<Arc<dyn ToolDispatcher>> {
        let connected = self.0.get()?;
        let tools = connected.tools.upgrade()?;
        Some(Arc::new(HookedTools::new(
            tools,
            connected.hooks.clone(),
            connected.model.clone(),
        )))
    }
}

/// Limits of one script run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodeLimits {
    /// Most tool calls (see [`MAX_TOOL_CALLS`]).
    pub max_tool_calls: usize,
    /// Wall-clock limit (see [`DEFAULT_TIMEOUT`]).
    pub timeout: Duration,
    /// Most stdout bytes returned (see [`MAX_STDOUT_BYTES`]).
    pub max_stdout_bytes: usize,
    /// Most stderr bytes returned (see [`MAX_STDERR_BYTES`]).
    pub max_stderr_bytes: usize,
}

impl Default for CodeLimits {
    fn default() -> Self {
        Self {
            max_tool_calls: MAX_TOOL_CALLS,
            timeout: DEFAULT_TIMEOUT,
            max_stdout_bytes: MAX_STDOUT_BYTES,
            max_stderr_bytes: MAX_STDERR_BYTES,
        }
    }
}

/// The `execute_code` tool of one session.
pub struct ExecuteCodeTool {
    executor: Arc<GatedExecutor>,
    tools: ToolsHandle,
    cwd: PathBuf,
    scratch_root: PathBuf,
    limits: CodeLimits,
    python: String,
}

impl ExecuteCodeTool {
    /// Runs scripts in `cwd` through `exec`'s executor (approval, then the
    /// configured backend), calling tools through `tools`. Each run gets a
    /// fresh directory under `scratch_root` (created when missing) for the
    /// script, the generated module and the socket, removed afterwards. It
    /// must be visible to the backend's commands (the profile home is, read-only,
    /// wherever it is) and short enough for a socket path; `<profile home>/tmp`
    /// fits both.
    pub fn new(
        exec: &ExecServices,
        cwd: impl Into<PathBuf>,
        scratch_root: impl Into<PathBuf>,
        tools: ToolsHandle,
    ) -> Self {
        Self {
            executor: exec.executor.clone(),
            tools,
            cwd: cwd.into(),
            scratch_root: scratch_root.into(),
            limits: CodeLimits::default(),
            python: PYTHON.to_owned(),
        }
    }

    /// The same tool with other limits.
    pub fn with_limits(mut self, limits: CodeLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Whether scripts can run on `exec`'s backend: the script must reach a
    /// socket and files on this machine, which rules out `ssh`.
    pub fn supports(exec: &ExecServices) -> bool {
        exec.executor.backend().name() != "ssh"
    }

    /// Whether the model is offered the tool: the backend supports it, and a
    /// script could ever run — in a sandbox, in yolo mode, or when
    /// `someone_can_approve` (approvals are asked, not denied). A tool that
    /// can only be refused is left out of the model's list.
    pub fn offered(exec: &ExecServices, someone_can_approve: bool) -> bool {
        Self::supports(exec)
            && (exec.executor.sandboxed() || exec.executor.policy().yolo() || someone_can_approve)
    }

    async fn run(&self, code: &str, context: &ToolContext) -> Result<Value, String> {
        if self.executor.backend().name() == "ssh" {
            return Err(
                "execute_code runs Python on this machine and cannot use the ssh backend; \
                 use terminal instead"
                    .to_owned(),
            );
        }
        let tools = self.tools.get().ok_or(
            "execute_code is not ready: the session's tools are not connected yet; try again",
        )?;
        let origin = ExecOrigin::new("core", EXECUTE_CODE_TOOL, context.session_id.clone())
            .with_workspace(self.cwd.clone());
        // The runner's command line (`python3 -I …`) says nothing: the script
        // itself is what the user judges.
        self.executor
            .approve_code(code, &origin, script_finding())
            .await
            .map_err(|error| match error {
                ExecError::Denied(message) => format!("the script was not run: {message}"),
                other => format!("the script was not run: {other}"),
            })?;
        let scratch = self.scratch_dir()?;
        let dir = scratch.path();
        let socket = dir.join("tools.sock");
        if socket.as_os_str().len() > MAX_SOCKET_PATH {
            return Err(format!(
                "cannot run the script: the socket path {} is longer than a Unix socket \
                 allows ({MAX_SOCKET_PATH} bytes)",
                socket.display()
            ));
        }
        write(dir, SCRIPT_FILE, code)?;
        write(dir, MODULE_FILE, &module_source(self.limits.max_tool_calls))?;
        write(dir, RUNNER_FILE, RUNNER_SOURCE)?;
        let listener = UnixListener::bind(&socket)
            .map_err(|e| format!("cannot open the tool socket {}: {e}", socket.display()))?;

        // Dropping this call (a cancelled turn) cancels the tool calls in
        // flight; the runner kills the script's process group on drop.
        let cancel = CancellationToken::new();
        let _cancel_on_drop = cancel.clone().drop_guard();
        let bridge = Arc::new(Bridge::new(
            tools,
            context.clone(),
            self.limits.max_tool_calls,
            cancel.clone(),
        ));
        let mut request = ExecRequest::new(
            self.python.clone(),
            vec!["-I".to_owned(), dir.join(RUNNER_FILE).display().to_string()],
            self.cwd.clone(),
        );
        // `-I` ignores PYTHON* variables, so the runner puts its directory on
        // `sys.path` itself rather than through PYTHONPATH.
        request.env = vec![(SOCKET_ENV.to_owned(), socket.display().to_string())];
        request.timeout = self.limits.timeout;
        // One byte more than is returned, to know whether stdout was cut.
        request.output_cap = self
            .limits
            .max_stdout_bytes
            .max(self.limits.max_stderr_bytes)
            + 1;

        let started = Instant::now();
        let run = self.executor.execute(request, &origin, &cancel);
        let server = serve(listener, bridge.clone());
        tokio::pin!(run, server);
        // The server lives as long as the script; it only ends early when
        // accepting fails, and then the script still runs to its end.
        let outcome = tokio::select! {
            outcome = &mut run => outcome,
            () = &mut server => run.await,
        };
        let seconds = started.elapsed().as_secs_f64();
        let output = outcome.map_err(|error| match error {
            ExecError::Failed(message) if message.contains("not found") => format!(
                "execute_code needs Python 3 ({}) on PATH, where commands run: {message}",
                self.python
            ),
            other => format!("the script could not run: {other}"),
        })?;
        self.report(&output, bridge.calls(), seconds)
    }

    /// A fresh directory for one run under the scratch root.
    fn scratch_dir(&self) -> Result<tempfile::TempDir, String> {
        let cannot = |e: std::io::Error| {
            format!(
                "cannot create a scratch directory under {}: {e}",
                self.scratch_root.display()
            )
        };
        std::fs::create_dir_all(&self.scratch_root).map_err(cannot)?;
        tempfile::Builder::new()
            .prefix("code-")
            .tempdir_in(&self.scratch_root)
            .map_err(cannot)
    }

    /// The tool result: stdout (capped, with a note when cut), the exit
    /// code, stderr when it says something; an error result when the script
    /// failed or timed out.
    fn report(&self, output: &ExecOutput, calls: usize, seconds: f64) -> Result<Value, String> {
        let limits = &self.limits;
        let stdout = String::from_utf8_lossy(&output.stdout);
        let (stdout, cut) = head(&stdout, limits.max_stdout_bytes);
        let stderr = String::from_utf8_lossy(&output.stderr);
        let stderr = tail(&stderr, limits.max_stderr_bytes);
        let status = if output.timed_out {
            "timeout"
        } else if output.status == Some(0) {
            "success"
        } else {
            "error"
        };
        let mut result = json!({
            "status": status,
            "output": stdout,
            "exit_code": output.status,
            "tool_calls_made": calls,
            "duration_seconds": (seconds * 100.0).round() / 100.0,
        });
        if cut {
            result["note"] = json!(format!(
                "the output was cut at {} bytes; print less, or write large results to a file",
                limits.max_stdout_bytes
            ));
        }
        if status != "success" || !stderr.trim().is_empty() {
            result["stderr"] = json!(stderr);
        }
        match status {
            "success" => Ok(result),
            "timeout" => {
                result["error"] = json!(format!(
                    "the script was stopped after {} s (the limit)",
                    limits.timeout.as_secs()
                ));
                Err(result.to_string())
            }
            _ => {
                if output.status.is_none() {
                    result["error"] = json!("the script was killed by a signal");
                }
                Err(result.to_string())
            }
        }
    }
}

/// What the user judges when asked about a script that matches no rule.
fn script_finding() -> Finding {
    Finding {
        id: SCRIPT_FINDING.to_owned(),
        description: "runs a Python script with your rights".to_owned(),
    }
}

fn write(dir: &Path, name: &str, text: &str) -> Result<(), String> {
    std::fs::write(dir.join(name), text).map_err(|e| format!("cannot write {name}: {e}"))
}

/// The first `max` bytes of `text` (on a character boundary) and whether
/// anything was cut.
fn head(text: &str, max: usize) -> (String, bool) {
    if text.len() <= max {
        return (text.to_owned(), false);
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    (text[..end].to_owned(), true)
}

/// The last `max` bytes of `text` (on a character boundary), marked when cut.
fn tail(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    format!("[… earlier stderr cut]\n{}", &text[start..])
}

fn description() -> String {
    let functions: Vec<String> = PY_TOOLS
        .iter()
        .map(|tool| {
            let params: Vec<&str> = tool.params.iter().map(|(name, _)| *name).collect();
            format!("{}({})", tool.name, params.join(", "))
        })
        .collect();
    format!(
        "Run a Python 3 script that calls tools programmatically. Use it to chain several tool \
         calls with logic in between (read or search many files, filter, aggregate, edit in a \
         loop): only what the script prints comes back to you, which saves turns and context. \
         In the script, `from talaria_tools import …` any of: {functions}; keyword arguments \
         are named as in the tools. Each returns the tool's result (parsed JSON, usually a \
         dict, e.g. read_file(...)[\"content\"]) and raises talaria_tools.ToolError on \
         failure. Only the tools this session offers work. Limits: {MAX_TOOL_CALLS} tool \
         calls, {timeout} s, {MAX_STDOUT_BYTES} bytes of printed output. The script runs in \
         the working directory with the standard library only; print the results you need.",
        functions = functions.join(", "),
        timeout = DEFAULT_TIMEOUT.as_secs(),
    )
}

#[async_trait]
impl NativeTool for ExecuteCodeTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: EXECUTE_CODE_TOOL.into(),
            description: description(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "code": {
                        "type": "string",
                        "description": "The Python script. Print what you want to see."
                    }
                },
                "required": ["code"]
            }),
            // One script doing many tool calls is one step of the loop: a turn
            // that only ran scripts gives its iteration back.
            refunds_iteration: true,
        }
    }

    fn toolset(&self) -> &'static str {
        "code_execution"
    }

    async fn call(&self, arguments: &Value, context: &ToolContext) -> Result<Value, String> {
        let code = arguments["code"]
            .as_str()
            .filter(|code| !code.trim().is_empty())
            .ok_or("code must be a non-empty string holding a Python script")?;
        self.run(code, context).await
    }
}

#[cfg(test)]
mod tests;
