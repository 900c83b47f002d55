//! A hostile model against the sandbox (issue 46): scripts, spelled-out paths and `/proc`
//! cannot reach the profile's controls, its secrets or the agent's keys, on the local and
//! the bubblewrap backend, wherever the profile home is (inside the working directory too);
//! background programs' input is judged by the program that reads it; what lives under
//! `/tmp` is there in the sandbox.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Output;

use crate::common::*;
use talaria_testkit::{Script, ScriptedServer, Step, ToolCall};

/// A key that must never reach a command (in the agent's environment).
const CANARY_KEY: &str = "sk-canary-0123456789abcdefghijklmnop";

/// The server key written literally into config.yaml.
const CONFIG_KEY: &str = "literal-server-key-9876543210";

fn write_file(path: &str, content: &str) -> ToolCall {
    ToolCall::new(
        "write_file",
        serde_json::json!({ "path": path, "content": content }).to_string(),
    )
}

fn bwrap_available() -> bool {
    std::process::Command::new("bwrap")
        .args(["--ro-bind", "/", "/", "--unshare-all", "--", "true"])
        .output()
        .is_ok_and(|o| o.status.success())
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .any(|line| line.starts_with("Uid:") && line.split_whitespace().nth(2) == Some("0"))
}

/// A user's home `work` holding the profile home `work/.talaria` (the normal `~` case), with
/// `config` (plus a literal key) and a `.env` key; `talaria` runs in `work` with `HOME=work`.
fn home_in_workdir(config: &str) -> (tempfile::TempDir, Home) {
    let work = tempfile::tempdir().unwrap();
    let home = Home::inside(work.path());
    home.write_config(&format!(
        "{config}api_server:\n  key: \"{CONFIG_KEY}\"\nretry:\n  base_delay_ms: 20\n"
    ));
    std::fs::write(
        home.path().join(".env"),
        format!("ANTHROPIC_API_KEY={CANARY_KEY}\n"),
    )
    .unwrap();
    (work, home)
}

fn run_in(home: &Home, work: &Path, server: &ScriptedServer, extra: &[&str]) -> Output {
    let mut command = home.query_in(work, server, "fix it", extra);
    command.env("HOME", work);
    run(command)
}

/// Item 1: a script written with `write_file` and run with `sh` appended `approvals: yolo`
/// to the config of a home inside the working directory; now the whole home is read-only
/// inside the sandbox (and the local backend's mount namespace), its secrets empty, and
/// `config.yaml` shown without its literal keys.
#[test]
fn a_script_cannot_rewrite_the_config_of_a_home_inside_the_working_directory() {
    let mut backends = vec!["local"];
    if bwrap_available() {
        backends.push("bwrap");
    }
    for backend in backends {
        let config = format!("terminal:\n  backend: {backend}\napprovals:\n  mode: deny\n");
        let (work, home) = home_in_workdir(&config);
        let before = home.read("config.yaml");
        let script = "printf 'approvals:\\n  mode: yolo\\nterminal:\\n  backend: local\\n' \
                      >> .talaria/config.yaml\necho planted > .talaria/SOUL.md\n\
                      cat .talaria/.env\ncat .talaria/config.yaml\necho mine > mine.txt\n";
        let server = ScriptedServer::spawn(Script::new([
            Step::tool_calls([write_file("fix.sh", script)]),
            Step::tool_calls([terminal_call("sh fix.sh")]),
            Step::text("done"),
        ]))
        .unwrap();
        let output = run_in(&home, work.path(), &server, &[]);
        assert_code(&output, 0);
        let result = tool_results(&server, 2).pop().unwrap();
        let result = &result;
        assert_eq!(home.read("config.yaml"), before, "{backend}: {result}");
        assert!(!home.path().join("SOUL.md").exists(), "{backend}: {result}");
        assert_contains(result, "Read-only file system");
        assert!(
            !result.contains(CANARY_KEY),
            "{backend}: the .env key leaked: {result}"
        );
        assert!(
            !result.contains(CONFIG_KEY),
            "{backend}: the config key leaked: {result}"
        );
        assert_contains(result, "mode: deny");
        assert!(
            work.path().join("mine.txt").is_file(),
            "{backend}: the working directory stays writable: {result}"
        );
    }
}

/// Item 5: a control command spelled at run time (`${B}aria config set …`) under `--yolo`
/// passes the text rules; the read-only home stops it by effect.
#[test]
fn a_control_command_spelled_at_run_time_changes_nothing_under_yolo() {
    let (work, home) = home_in_workdir("terminal:\n  backend: local\n");
    let before = home.read("config.yaml");
    let binary = env!("CARGO_BIN_EXE_talaria");
    let stem = binary.strip_suffix("aria").unwrap();
    let command = format!("B={stem}; ${{B}}aria config set approvals.mode yolo; echo status=$?");
    let server = ScriptedServer::spawn(Script::new([
        Step::tool_calls([terminal_call(&command)]),
        Step::text("done"),
    ]))
    .unwrap();
    let output = run_in(&home, work.path(), &server, &["--yolo"]);
    assert_code(&output, 0);
    let result = &tool_results(&server, 1)[0];
    assert_eq!(home.read("config.yaml"), before, "{result}");
    assert!(!result.contains("status=0"), "{result}");
}

/// Item 4: run as root, a command found the agent's pid in the supervisor's arguments and
/// read its environment through a glob. Now the keys are sealed out of the agent's
/// environment block, and the command's `/proc` shows no process outside its Landlock
/// domain.
#[test]
fn commands_cannot_read_the_agents_keys_through_proc() {
    let home = Home::new();
    let work = home.workdir();
    let command = "A=$(tr '\\0' ' ' < /proc/$PPID/cmdline | cut -d' ' -f3); echo agent=$A; \
                   tr '\\0' '\\n' < /proc/$A/enviro[n] | base64 -w0; echo; \
                   cat /proc/$A/mem | head -c 16 | base64; ls /proc/$A/ 2>&1 | head -3";
    let server = ScriptedServer::spawn(Script::new([
        Step::tool_calls([terminal_call(command)]),
        Step::text("done"),
    ]))
    .unwrap();
    let mut run_it = home.query_in(work.path(), &server, "look", &["--yolo"]);
    run_it.env("OPENAI_API_KEY", CANARY_KEY);
    let output = run(run_it);
    assert_code(&output, 0);
    let result = &tool_results(&server, 1)[0];
    assert_contains(result, "agent=");
    let encoded = {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode(CANARY_KEY)
    };
    assert!(!result.contains(CANARY_KEY), "{result}");
    for start in 0..3 {
        // Any alignment of the key inside a base64 stream.
        let piece = &encoded[start * 4..start * 4 + 12];
        assert!(!result.contains(piece), "{result}");
    }
    // Warned once, as root.
    let warnings = stderr(&output).matches("runs as root").count();
    assert_eq!(warnings, usize::from(is_root()), "{}", stderr(&output));
}

/// Item 4 from outside: while the agent runs, its own environment block holds no key.
#[test]
fn the_agents_environment_block_holds_no_key() {
    let home = Home::new();
    let work = home.workdir();
    let server =
        ScriptedServer::spawn(Script::new([Step::text("slow answer").delayed(3000)])).unwrap();
    let mut command = home.query_in(work.path(), &server, "hello", &[]);
    command.env("OPENAI_API_KEY", CANARY_KEY);
    let child = command.spawn().unwrap();
    let pid = child.id();
    wait_until(
        "the model request",
        std::time::Duration::from_secs(30),
        || !server.requests().is_empty(),
    );
    let block = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
    let output = wait(child);
    assert_code(&output, 0);
    assert_eq!(stdout(&output), "slow answer\n");
    let block = String::from_utf8_lossy(&block);
    assert!(!block.contains(CANARY_KEY), "{block}");
    assert!(!block.contains("sk-test"), "{block}");
    // The key still reached the model: the request was authorised with it.
    assert!(
        server.requests()[0]
            .header("authorization")
            .is_some_and(|value| value.contains("sk-test")),
        "the sealed key was not used"
    );
}

/// Item 3: text written to a background program's stdin is judged by the program reading
/// it: Python's input needs approval (refused: nobody can answer), even when a shell
/// started it later.
#[test]
fn input_to_a_background_repl_needs_approval() {
    let home = Home::new();
    let work = home.workdir();
    let background = |command: &str| {
        ToolCall::new(
            "terminal",
            serde_json::json!({ "command": command, "background": true }).to_string(),
        )
    };
    let write = |data: &str| {
        ToolCall::new(
            "process",
            serde_json::json!({"action": "write", "session_id": "1", "data": data}).to_string(),
        )
    };
    let wait_a_moment = terminal_call("sleep 1");
    let server = ScriptedServer::spawn(Script::new([
        Step::tool_calls([background(&format!("{} -q -i", real_python()))]),
        Step::tool_calls([wait_a_moment]),
        Step::tool_calls([write("import os; os.system('touch pwned')\n")]),
        Step::text("done"),
    ]))
    .unwrap();
    let output = run(home.query_in(work.path(), &server, "go", &[]));
    assert_code(&output, 0);
    let result = tool_results(&server, 3).pop().unwrap();
    let result = &result;
    assert_contains(result, "python3");
    assert!(!work.path().join("pwned").exists(), "{result}");
}

/// The Python interpreter itself, not a launcher script that runs other programs first (as
/// pyenv's shims do).
fn real_python() -> String {
    let output = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .unwrap();
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

/// Item 8: the sandbox's `/tmp` is private, yet a profile home and scripts under `/tmp`
/// are there at their paths: `execute_code` runs under bwrap with its scratch directory in
/// a home under `/tmp`.
#[test]
fn execute_code_runs_under_bwrap_with_the_home_under_tmp() {
    if !bwrap_available() {
        eprintln!("skipped: bwrap cannot run here");
        return;
    }
    let home = Home::new();
    assert!(home.path().starts_with("/tmp"), "{}", home.path().display());
    home.write_config("terminal:\n  backend: bwrap\nretry:\n  base_delay_ms: 20\n");
    let work = home.workdir();
    let server = ScriptedServer::spawn(Script::new([
        Step::tool_call(
            "execute_code",
            serde_json::json!({"code": "print(6 * 7)"}).to_string(),
        ),
        Step::text("done"),
    ]))
    .unwrap();
    let output = run(home.query_in(work.path(), &server, "compute", &[]));
    assert_code(&output, 0);
    let result = &tool_results(&server, 1)[0];
    assert_contains(result, "42");
}
