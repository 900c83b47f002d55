//! `execute_code` with a real `python3` on the local (and, when it works,
//! bwrap) backend, calling a fake dispatcher.

use std::collections::HashMap;
use std::sync::Mutex;

use talaria_approval::{ApprovalPolicy, Approver, Decision, DenyAll};
use talaria_exec::{BwrapBackend, GatedExecutor, LocalBackend};
use talaria_kernel::{HookSession, HookVerdict, NoHooks, ToolResult, ValidatedCall};

use super::*;
use crate::test_support::Recording;

/// `read_file` / `write_file` over an in-memory map, plus `memory` (offered
/// to the model but not to scripts).
#[derive(Default)]
struct FakeTools {
    files: Mutex<HashMap<String, String>>,
    sessions: Mutex<Vec<String>>,
}

#[async_trait]
impl ToolDispatcher for FakeTools {
    fn specs(&self) -> Vec<ToolSpec> {
        ["read_file", "write_file", "memory"]
            .into_iter()
            .map(|name| ToolSpec {
                name: name.into(),
                description: String::new(),
                parameters: json!({"type": "object"}),
                refunds_iteration: false,
            })
            .collect()
    }

    async fn execute(
        &self,
        calls: &[ValidatedCall],
        context: &ToolContext,
        _cancel: &CancellationToken,
    ) -> Vec<ToolResult> {
        self.sessions
            .lock()
            .unwrap()
            .push(context.session_id.clone());
        calls
            .iter()
            .map(|call| {
                let path = call.arguments["path"].as_str().unwrap_or_default();
                let mut files = self.files.lock().unwrap();
                match call.call.name.as_str() {
                    "write_file" => {
                        let content = call.arguments["content"].as_str().unwrap_or_default();
                        files.insert(path.to_owned(), content.to_owned());
                        ToolResult::ok(&call.call, json!({"written": path}).to_string())
                    }
                    "read_file" => match files.get(path) {
                        Some(content) => {
                            ToolResult::ok(&call.call, json!({"content": content}).to_string())
                        }
                        None => ToolResult::error(&call.call, format!("no such file: {path}")),
                    },
                    _ => ToolResult::ok(&call.call, "plain text"),
                }
            })
            .collect()
    }
}

fn have_python() -> bool {
    let found = std::process::Command::new(PYTHON)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        eprintln!("skipped: {PYTHON} is not installed");
    }
    found
}

struct Setup {
    tool: ExecuteCodeTool,
    fake: Arc<FakeTools>,
    work: tempfile::TempDir,
    scratch: tempfile::TempDir,
    _state: tempfile::TempDir,
}

fn setup_with(exec: ExecServices, scratch: tempfile::TempDir, state: tempfile::TempDir) -> Setup {
    setup_hooked(exec, scratch, state, Arc::new(NoHooks))
}

fn setup_hooked(
    exec: ExecServices,
    scratch: tempfile::TempDir,
    state: tempfile::TempDir,
    hooks: Arc<dyn Hooks>,
) -> Setup {
    let work = tempfile::tempdir().unwrap();
    let fake = Arc::new(FakeTools::default());
    let handle = ToolsHandle::new();
    handle.set(&fake, hooks, "test-model");
    let tool = ExecuteCodeTool::new(&exec, work.path(), scratch.path().join("tmp"), handle);
    Setup {
        tool,
        fake,
        work,
        scratch,
        _state: state,
    }
}

/// Services on the local backend with `approver`, in yolo mode or not.
fn local(state: &tempfile::TempDir, yolo: bool, approver: Arc<dyn Approver>) -> ExecServices {
    let policy = ApprovalPolicy::load(state.path().join("approvals.toml"))
        .unwrap()
        .with_yolo(yolo);
    ExecServices::new(Arc::new(GatedExecutor::new(
        Arc::new(LocalBackend::new()),
        Arc::new(policy),
        approver,
    )))
}

/// A local setup in yolo mode (scripts run without asking).
fn setup() -> Setup {
    let state = tempfile::tempdir().unwrap();
    let exec = local(&state, true, Arc::new(DenyAll));
    setup_with(exec, tempfile::tempdir().unwrap(), state)
}

fn context() -> ToolContext {
    ToolContext {
        session_id: "sess-1".into(),
    }
}

async fn run(setup: &Setup, code: &str) -> Result<Value, Value> {
    setup
        .tool
        .call(&json!({ "code": code }), &context())
        .await
        .map_err(|e| serde_json::from_str(&e).unwrap_or(Value::String(e)))
}

/// Scratch directories left behind.
fn leftovers(setup: &Setup) -> Vec<PathBuf> {
    std::fs::read_dir(setup.scratch.path().join("tmp"))
        .map(|dir| dir.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default()
}

#[tokio::test]
async fn a_script_calls_tools_and_its_output_is_the_result() {
    if !have_python() {
        return;
    }
    let setup = setup();
    let code = "from talaria_tools import read_file, write_file\n\
                write_file('a.txt', 'alpha')\n\
                write_file(path='b.txt', content='beta')\n\
                a = read_file('a.txt')['content']\n\
                b = read_file(path='b.txt')['content']\n\
                print(a + '+' + b)\n";
    let result = run(&setup, code).await.unwrap();
    assert_eq!(result["status"], "success", "{result}");
    assert_eq!(result["output"], "alpha+beta\n");
    assert_eq!(result["exit_code"], 0);
    assert_eq!(result["tool_calls_made"], 4);
    assert!(result.get("stderr").is_none(), "{result}");
    assert_eq!(
        *setup.fake.sessions.lock().unwrap(),
        vec!["sess-1"; 4],
        "calls run in the caller's session"
    );
    assert!(leftovers(&setup).is_empty(), "{:?}", leftovers(&setup));
}

#[tokio::test]
async fn failed_and_refused_calls_are_tool_errors_in_python() {
    if !have_python() {
        return;
    }
    let setup = setup();
    let code = r#"import talaria_tools as t
for attempt in (lambda: t.read_file('missing.txt'),
                lambda: t._call('memory', {}),
                lambda: t.web_search('rust')):
    try:
        attempt()
    except t.ToolError as e:
        print('error:', e)
"#;
    let result = run(&setup, code).await.unwrap();
    let output = result["output"].as_str().unwrap();
    let lines: Vec<&str> = output.lines().collect();
    assert_eq!(lines.len(), 3, "{output}");
    assert_eq!(lines[0], "error: no such file: missing.txt");
    assert!(
        lines[1].contains("'memory' cannot be called from execute_code"),
        "{output}"
    );
    assert!(
        lines[2].contains("'web_search' is not available in this session")
            && lines[2].contains("available: read_file, write_file"),
        "{output}"
    );
    assert_eq!(result["tool_calls_made"], 1);
}

#[tokio::test]
async fn a_failing_script_is_an_error_result_with_its_traceback() {
    if !have_python() {
        return;
    }
    let setup = setup();
    let result = run(&setup, "print('before')\n1 / 0\n").await.unwrap_err();
    assert_eq!(result["status"], "error", "{result}");
    assert_eq!(result["exit_code"], 1);
    assert_eq!(result["output"], "before\n");
    let stderr = result["stderr"].as_str().unwrap();
    assert!(stderr.contains("ZeroDivisionError"), "{stderr}");
    assert!(stderr.contains("script.py\", line 2"), "{stderr}");
    assert!(
        !stderr.contains("talaria_run.py"),
        "the runner's frames are left out: {stderr}"
    );
    let result = run(&setup, "import sys\nsys.exit(3)\n").await.unwrap_err();
    assert_eq!(result["exit_code"], 3, "{result}");
}

#[tokio::test]
async fn the_call_limit_and_the_output_cap_apply() {
    if !have_python() {
        return;
    }
    let mut setup = setup();
    setup.tool = setup.tool.with_limits(CodeLimits {
        max_tool_calls: 3,
        max_stdout_bytes: 20,
        ..CodeLimits::default()
    });
    let code = r#"import talaria_tools as t
refused = 0
for i in range(5):
    try:
        t.write_file('f.txt', str(i))
    except t.ToolError as e:
        refused += 1
        msg = str(e)
print(refused, msg)
print('x' * 100)
"#;
    let result = run(&setup, code).await.unwrap();
    assert_eq!(result["tool_calls_made"], 3, "{result}");
    assert_eq!(result["output"], "2 tool call limit re", "{result}");
    assert!(
        result["note"].as_str().unwrap().contains("cut at 20 bytes"),
        "{result}"
    );
}

#[tokio::test]
async fn a_script_past_its_time_is_stopped_with_its_output_so_far() {
    if !have_python() {
        return;
    }
    let mut setup = setup();
    setup.tool = setup.tool.with_limits(CodeLimits {
        timeout: Duration::from_millis(1500),
        ..CodeLimits::default()
    });
    let result = run(&setup, "import time\nprint('started')\ntime.sleep(60)\n")
        .await
        .unwrap_err();
    assert_eq!(result["status"], "timeout", "{result}");
    assert_eq!(result["output"], "started\n");
    assert!(result["error"].as_str().unwrap().contains("stopped after"));
    assert!(leftovers(&setup).is_empty());
}

#[tokio::test]
async fn the_working_directory_is_importable_but_cannot_shadow_the_stdlib() {
    if !have_python() {
        return;
    }
    let setup = setup();
    std::fs::write(
        setup.work.path().join("json.py"),
        "raise SystemExit('shadowed')\n",
    )
    .unwrap();
    std::fs::write(setup.work.path().join("helper.py"), "VALUE = 42\n").unwrap();
    let code = "import os, helper, talaria_tools\nprint(helper.VALUE, os.getcwd())\n";
    let result = run(&setup, code).await.unwrap();
    let cwd = setup.work.path().canonicalize().unwrap();
    assert_eq!(
        result["output"],
        format!("42 {}\n", cwd.display()),
        "{result}"
    );
}

#[tokio::test]
async fn unusable_setups_are_clear_errors() {
    let setup = setup();
    let err = setup
        .tool
        .call(&json!({"code": "  "}), &context())
        .await
        .unwrap_err();
    assert!(err.contains("non-empty"), "{err}");

    let state = tempfile::tempdir().unwrap();
    let exec = ExecServices::deny_all(&state.path().join("approvals.toml")).unwrap();
    let unset = ExecuteCodeTool::new(&exec, "/", state.path(), ToolsHandle::new());
    let err = unset
        .call(&json!({"code": "print(1)"}), &context())
        .await
        .unwrap_err();
    assert!(err.contains("not ready"), "{err}");

    // A dispatcher that is gone is the same as none.
    let handle = ToolsHandle::new();
    handle.set(&Arc::new(FakeTools::default()), Arc::new(NoHooks), "m");
    let gone = ExecuteCodeTool::new(&exec, "/", state.path(), handle);
    let err = gone
        .call(&json!({"code": "print(1)"}), &context())
        .await
        .unwrap_err();
    assert!(err.contains("not ready"), "{err}");

    let mut missing = setup_with(
        local(&state, true, Arc::new(DenyAll)),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    missing.tool.python = "python3-talaria-no-such".into();
    let err = run(&missing, "print(1)").await.unwrap_err();
    let err = err.as_str().unwrap();
    assert!(
        err.contains("needs Python 3") && err.contains("python3-talaria-no-such"),
        "{err}"
    );
    assert!(leftovers(&missing).is_empty());
}

/// Whether process `pid` still runs (a zombie does not count).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_call_kills_the_script_and_removes_its_files() {
    if !have_python() {
        return;
    }
    let setup = Arc::new(setup());
    let pid_file = setup.work.path().join("pid");
    let code = "import os, time\n\
                open('pid.tmp', 'w').write(str(os.getpid()))\n\
                os.rename('pid.tmp', 'pid')\n\
                time.sleep(60)\n";
    let running = {
        let setup = setup.clone();
        tokio::spawn(async move { run(&setup, code).await })
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    let pid: u32 = loop {
        if let Ok(text) = std::fs::read_to_string(&pid_file) {
            break text.parse().unwrap();
        }
        assert!(Instant::now() < deadline, "the script never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(alive(pid));
    assert_eq!(leftovers(&setup).len(), 1);
    running.abort();
    let _ = running.await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while alive(pid) {
        assert!(Instant::now() < deadline, "the script survived its call");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(leftovers(&setup).is_empty(), "{:?}", leftovers(&setup));
}

#[tokio::test]
async fn scripts_reach_the_tools_from_inside_bwrap() {
    if !have_python() {
        return;
    }
    let Ok(backend) = BwrapBackend::new(false) else {
        eprintln!("skipped: bwrap is not installed");
        return;
    };
    let probe = std::process::Command::new(&backend.bwrap)
        .args(["--ro-bind", "/", "/", "--unshare-all", "--", "true"])
        .output();
    if !probe.is_ok_and(|o| o.status.success()) {
        eprintln!("skipped: bwrap cannot create a sandbox here");
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let policy = ApprovalPolicy::load(state.path().join("approvals.toml")).unwrap();
    let exec = ExecServices::new(Arc::new(GatedExecutor::new(
        Arc::new(backend),
        Arc::new(policy),
        Arc::new(DenyAll),
    )));
    // bwrap's /tmp is private: the scratch directory must live elsewhere —
    // next to the test binary, or under $HOME when the checkout is in /tmp.
    let exe = std::env::current_exe().unwrap();
    let mut base = exe.parent().unwrap().to_path_buf();
    if base.starts_with("/tmp") {
        base = std::path::PathBuf::from(std::env::var_os("HOME").unwrap())
            .join(".cache/talaria-tests");
        std::fs::create_dir_all(&base).unwrap();
    }
    let scratch = tempfile::tempdir_in(&base).unwrap();
    let setup = setup_with(exec, scratch, state);
    setup
        .fake
        .files
        .lock()
        .unwrap()
        .insert("in.txt".into(), "sandboxed".into());
    let code = "from talaria_tools import read_file\nprint(read_file('in.txt')['content'])\n";
    let result = run(&setup, code).await.unwrap();
    assert_eq!(result["output"], "sandboxed\n", "{result}");
    assert!(leftovers(&setup).is_empty());
}

#[test]
fn the_spec_names_the_functions_and_the_limits() {
    let setup = setup();
    let spec = setup.tool.spec();
    assert_eq!(spec.name, "execute_code");
    assert_eq!(spec.parameters["required"], json!(["code"]));
    for needle in [
        "read_file(path, offset, limit)",
        "web_extract(urls, char_limit)",
        "50 tool calls",
        "300 s",
    ] {
        assert!(spec.description.contains(needle), "{needle}");
    }
    assert_eq!(setup.tool.toolset(), "code_execution");
}

/// A script that leaves a file `ran` in the working directory.
const LEAVES_A_MARK: &str = "open('ran', 'w').write('x')\nprint('ran')\n";

#[tokio::test]
async fn on_local_a_script_needs_approval_and_a_refused_one_never_runs() {
    if !have_python() {
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let denying = Recording::new(Decision::Deny);
    let setup = setup_with(
        local(&state, false, denying.clone()),
        tempfile::tempdir().unwrap(),
        state,
    );
    let err = run(&setup, LEAVES_A_MARK).await.unwrap_err();
    let err = err.as_str().unwrap();
    assert!(err.contains("the script was not run"), "{err}");
    assert!(!setup.work.path().join("ran").exists(), "it never ran");
    let asked = denying.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].command, LEAVES_A_MARK, "the whole script is shown");
    assert_eq!(asked[0].tool, "execute_code");
    assert_eq!(asked[0].finding.id, SCRIPT_FINDING);
    assert!(
        asked[0].finding.description.contains("with your rights"),
        "{:?}",
        asked[0].finding
    );
    assert!(leftovers(&setup).is_empty());
}

#[tokio::test]
async fn a_session_approval_covers_plain_scripts_not_dangerous_ones() {
    if !have_python() {
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let approving = Recording::new(Decision::Session);
    let setup = setup_with(
        local(&state, false, approving.clone()),
        tempfile::tempdir().unwrap(),
        state,
    );
    assert_eq!(run(&setup, LEAVES_A_MARK).await.unwrap()["output"], "ran\n");
    assert_eq!(run(&setup, "print(2)\n").await.unwrap()["output"], "2\n");
    assert_eq!(approving.asked.lock().unwrap().len(), 1, "asked once");
    // A dangerous shape in the text is its own finding: asked again.
    let dangerous = "import os\n# os.system('rm -rf build')\nprint(3)\n";
    assert_eq!(run(&setup, dangerous).await.unwrap()["output"], "3\n");
    let asked = approving.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert_ne!(
        asked[1].finding.id, SCRIPT_FINDING,
        "{:?}",
        asked[1].finding
    );
}

#[tokio::test]
async fn a_hardline_shape_in_a_script_is_refused_even_in_yolo_mode() {
    if !have_python() {
        return;
    }
    let setup = setup();
    let code = format!("{LEAVES_A_MARK}print('rm -rf /')\n");
    let err = run(&setup, &code).await.unwrap_err();
    let err = err.as_str().unwrap();
    assert!(err.contains("hardline"), "{err}");
    assert!(!setup.work.path().join("ran").exists(), "it never ran");
}

#[test]
fn the_tool_is_offered_only_where_a_script_could_run() {
    let state = tempfile::tempdir().unwrap();
    let deny = local(&state, false, Arc::new(DenyAll));
    assert!(!ExecuteCodeTool::offered(&deny, false), "deny on local");
    assert!(ExecuteCodeTool::offered(&deny, true), "ask on local");
    let yolo = local(&state, true, Arc::new(DenyAll));
    assert!(ExecuteCodeTool::offered(&yolo, false), "yolo on local");
}

/// Vetoes `write_file`; tags every result.
struct Veto;

#[async_trait]
impl Hooks for Veto {
    async fn pre_tool(&self, _session: HookSession<'_>, call: &ValidatedCall) -> HookVerdict {
        if call.call.name == "write_file" {
            HookVerdict::Block("no writes".into())
        } else {
            HookVerdict::Continue
        }
    }

    async fn post_tool(
        &self,
        session: HookSession<'_>,
        _call: &talaria_kernel::ToolCall,
        result: &mut ToolResult,
    ) {
        if !result.is_error {
            result.content = json!({"content": format!("tagged by {}", session.model)}).to_string();
        }
    }
}

#[tokio::test]
async fn a_scripts_calls_pass_the_sessions_hooks() {
    if !have_python() {
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let exec = local(&state, true, Arc::new(DenyAll));
    let setup = setup_hooked(exec, tempfile::tempdir().unwrap(), state, Arc::new(Veto));
    setup
        .fake
        .files
        .lock()
        .unwrap()
        .insert("in.txt".into(), "plain".into());
    let code = r#"import talaria_tools as t
try:
    t.write_file('out.txt', 'x')
except t.ToolError as e:
    print('refused:', e)
print(t.read_file('in.txt')['content'])
"#;
    let result = run(&setup, code).await.unwrap();
    assert_eq!(
        result["output"], "refused: Blocked: no writes\ntagged by test-model\n",
        "{result}"
    );
    assert!(
        !setup.fake.files.lock().unwrap().contains_key("out.txt"),
        "the vetoed call never reached the tools"
    );
}
