//! The terminal plugin through the real binary: commands run in the working
//! directory, dangerous ones need approval (denied when nobody can answer,
//! allowed with --yolo), hardline ones never run, background processes are
//! managed with `process`, and a disabled toolset never reaches the model.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Output;
use std::time::Duration;

use crate::common::*;
use talaria_testkit::{Script, ScriptedServer, Step, ToolCall};

fn query(home: &Home, work: &std::path::Path, server: &ScriptedServer, extra: &[&str]) -> Output {
    run(home.query_in(work, server, "do it", extra))
}

fn results(server: &ScriptedServer, index: usize) -> Vec<String> {
    tool_results(server, index)
}

#[test]
fn commands_run_in_the_working_directory() {
    let home = Home::new();
    let work = home.workdir();
    let server = ScriptedServer::spawn(Script::new([
        Step::tool_calls([terminal_call(
            "echo hello > made.txt && cat made.txt && pwd; exit 3",
        )]),
        Step::text("done"),
    ]))
    .unwrap();
    let output = query(&home, work.path(), &server, &[]);
    assert_code(&output, 0);
    let result: serde_json::Value = serde_json::from_str(&results(&server, 1)[0]).unwrap();
    let canonical = work.path().canonicalize().unwrap();
    assert_eq!(
        result["output"],
        format!("hello\n{}\n", canonical.display()),
        "{result}"
    );
    assert_eq!(result["exit_code"], 3);
    assert!(work.path().join("made.txt").is_file());
}

#[test]
fn dangerous_commands_are_denied_without_a_terminal_and_run_with_yolo() {
    let home = Home::new();
    let work = home.workdir();
    std::fs::create_dir(work.path().join("build")).unwrap();
    let script = || {
        Script::new([
            Step::tool_calls([terminal_call("rm -rf build")]),
            Step::text("done"),
        ])
    };
    let server = ScriptedServer::spawn(script()).unwrap();
    assert_code(&query(&home, work.path(), &server, &[]), 0);
    let denied = &results(&server, 1)[0];
    assert!(denied.contains("denied"), "{denied}");
    assert!(work.path().join("build").is_dir(), "nothing was deleted");

    let server = ScriptedServer::spawn(script()).unwrap();
    assert_code(&query(&home, work.path(), &server, &["--yolo"]), 0);
    assert!(!work.path().join("build").exists(), "--yolo let it run");
}

#[test]
fn hardline_commands_never_run_even_with_yolo() {
    let home = Home::new();
    let work = home.workdir();
    // Harmless if it did run (there is no such device), but mkfs is hardline.
    let server = ScriptedServer::spawn(Script::new([
        Step::tool_calls([terminal_call("mkfs.ext4 /dev/talaria-no-such-disk")]),
        Step::text("done"),
    ]))
    .unwrap();
    assert_code(&query(&home, work.path(), &server, &["--yolo"]), 0);
    let blocked = &results(&server, 1)[0];
    assert!(blocked.contains("hardline"), "{blocked}");
}

#[test]
fn commands_inside_options_are_screened_and_quoted_text_is_not() {
    let home = Home::new();
    let work = home.workdir();
    std::fs::create_dir(work.path().join("build")).unwrap();
    // The pager git would start is a recursive delete: dangerous, so refused with nobody to ask.
    // The quoted "(reboot)" is only text for echo: it runs.
    let server = ScriptedServer::spawn(Script::new([
        Step::tool_calls([terminal_call("git -c core.pager='rm -rf build' log")]),
        Step::tool_calls([terminal_call("echo \"(reboot) later\" > said.txt")]),
        Step::text("done"),
    ]))
    .unwrap();
    assert_code(&query(&home, work.path(), &server, &[]), 0);
    let denied = &results(&server, 1)[0];
    assert!(denied.contains("denied"), "{denied}");
    assert!(work.path().join("build").is_dir(), "nothing was deleted");
    let said = std::fs::read_to_string(work.path().join("said.txt")).unwrap();
    assert_eq!(said, "(reboot) later\n");
}

#[test]
fn keys_in_command_output_reach_the_model_redacted_and_are_never_written_back() {
    let home = Home::new();
    let work = home.workdir();
    // A key in OpenAI's project format (not a real one).
    let key = "sk-proj-T4lariaTestKeyNotRealAbCdEfGhIjKlMnOpQr";
    let env_file = format!("OPENAI_API_KEY={key}\nDEBUG=1\n");
    std::fs::write(work.path().join(".env"), &env_file).unwrap();
    let server = ScriptedServer::spawn(Script::new([
        Step::tool_calls([terminal_call("cat .env")]),
        Step::tool_calls([terminal_call(
            "echo 'OPENAI_API_KEY=sk-pro…[REDACTED]' > .env",
        )]),
        Step::text("done"),
    ]))
    .unwrap();
    assert_code(&query(&home, work.path(), &server, &["--yolo"]), 0);
    let shown = &results(&server, 1)[0];
    assert!(!shown.contains(key), "the model saw the key: {shown}");
    assert!(
        shown.contains("OPENAI_API_KEY=sk-pro…[REDACTED]"),
        "{shown}"
    );
    assert!(shown.contains("DEBUG=1"), "{shown}");
    let refused = results(&server, 2).pop().unwrap();
    assert!(refused.contains("redaction marker"), "{refused}");
    assert_eq!(
        std::fs::read_to_string(work.path().join(".env")).unwrap(),
        env_file,
        "the file on disk is untouched"
    );
}

#[test]
fn background_processes_are_polled_waited_for_and_listed() {
    let home = Home::new();
    let work = home.workdir();
    let background = ToolCall::new(
        "terminal",
        serde_json::json!({ "command": "echo started; sleep 0.3; echo finished", "background": true })
            .to_string(),
    );
    let process = |args: serde_json::Value| ToolCall::new("process", args.to_string());
    // The scripted model cannot read the id; the table numbers from 1.
    let server = ScriptedServer::spawn(Script::new([
        Step::tool_calls([background]),
        Step::tool_calls([process(
            serde_json::json!({"action": "wait", "session_id": "1", "timeout": 30}),
        )]),
        Step::tool_calls([process(serde_json::json!({"action": "list"}))]),
        Step::tool_calls([process(
            serde_json::json!({"action": "kill", "session_id": "99"}),
        )]),
        Step::text("done"),
    ]))
    .unwrap();
    assert_code(&query(&home, work.path(), &server, &[]), 0);
    let started: serde_json::Value = serde_json::from_str(&results(&server, 1)[0]).unwrap();
    assert_eq!(started["session_id"], "1", "{started}");
    let waited: serde_json::Value = serde_json::from_str(&results(&server, 2)[1]).unwrap();
    assert_eq!(waited["status"], "exited", "{waited}");
    assert_eq!(waited["exit_code"], 0);
    assert_eq!(waited["output"], "started\nfinished\n");
    let listed: serde_json::Value = serde_json::from_str(&results(&server, 3)[2]).unwrap();
    assert_eq!(listed["processes"][0]["session_id"], "1", "{listed}");
    let missing = &results(&server, 4)[3];
    assert!(missing.contains("no background process 99"), "{missing}");
}

#[test]
fn a_disabled_toolset_never_reaches_the_model() {
    let home = Home::new();
    home.write_config("tools:\n  disabled: [terminal]\n");
    let work = home.workdir();
    let server = ScriptedServer::spawn(Script::new([Step::text("done")])).unwrap();
    assert_code(&query(&home, work.path(), &server, &[]), 0);
    let tools = server.requests()[0].tools_raw();
    assert!(
        !tools.contains("\"terminal\"") && !tools.contains("\"process\""),
        "{tools}"
    );
    assert!(tools.contains("\"read_file\""), "{tools}");
}

#[test]
fn interrupting_a_running_command_kills_its_whole_process_group() {
    let home = Home::new();
    let work = home.workdir();
    // A duration no other process uses, to find exactly these sleeps.
    let marker = format!("{}", 7000 + std::process::id() % 1000);
    let server = ScriptedServer::spawn(Script::new([
        Step::tool_calls([terminal_call(&format!(
            "sleep {marker} & sleep {marker}; wait"
        ))]),
        Step::text("never reached"),
    ]))
    .unwrap();
    let child = home
        .query_in(work.path(), &server, "wait", &[])
        .spawn()
        .unwrap();
    wait_until("the sleeps start", Duration::from_secs(60), || {
        processes_running(&["sleep", &marker]).len() == 2
    });
    interrupt(&child);
    let output = wait(child);
    assert_code(&output, 130);
    wait_until(
        "no sleep survives the interrupt",
        Duration::from_secs(10),
        || processes_running(&["sleep", &marker]).is_empty(),
    );
}

#[test]
fn json_mode_reports_an_interrupt_mid_tool_and_answers_the_call() {
    let home = Home::new();
    let work = home.workdir();
    let marker = format!("{}", 6000 + std::process::id() % 1000);
    let server = ScriptedServer::spawn(Script::new([
        Step::tool_calls([terminal_call(&format!("sleep {marker}"))]),
        Step::text("never reached"),
    ]))
    .unwrap();
    let child = home
        .query_in(work.path(), &server, "wait", &["--json"])
        .spawn()
        .unwrap();
    wait_until("the command starts", Duration::from_secs(60), || {
        !processes_running(&["sleep", &marker]).is_empty()
    });
    interrupt(&child);
    let output = wait(child);
    assert_code(&output, 130);
    let events: Vec<serde_json::Value> = stdout(&output)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let finished = events
        .iter()
        .find(|e| e["type"] == "tool_finished")
        .unwrap_or_else(|| panic!("no tool_finished event: {events:?}"));
    assert_eq!(finished["is_error"], true);
    assert!(
        finished["content"]
            .as_str()
            .unwrap()
            .contains("interrupted by user"),
        "{finished}"
    );
    assert_eq!(events.last().unwrap()["type"], "interrupted", "{events:?}");
}

/// Command lines (NUL-separated argv) of the processes whose command line
/// contains `marker`, with their pids.
fn processes_with(marker: &str) -> Vec<(u32, String)> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            cmdline.contains(marker).then_some((pid, cmdline))
        })
        .collect()
}

#[test]
fn commands_die_with_a_killed_agent() {
    let home = Home::new();
    kill_the_agent_during_commands(&home, "25");
}

/// On the ssh backend the local client runs under the supervisor too, and
/// the remote command ends with the connection (here the remote host is a
/// real sshd on this machine).
#[test]
fn remote_commands_die_with_a_killed_agent() {
    if !talaria_testkit::sshd::Sshd::installed() {
        return;
    }
    let home = Home::new();
    let keys = tempfile::tempdir().unwrap();
    let sshd = talaria_testkit::sshd::Sshd::start(keys.path()).unwrap();
    home.write_config(&format!(
        "terminal:\n  backend: ssh\n  ssh:\n    host: 127.0.0.1\n    port: {}\n    user: {}\n    identity_file: {}\n",
        sshd.port,
        sshd.user,
        sshd.identity_file.display()
    ));
    kill_the_agent_during_commands(&home, "35");
}

/// Starts a background and a foreground command, kills the agent with
/// SIGKILL and checks that none of them is left after a few seconds.
fn kill_the_agent_during_commands(home: &Home, tag: &str) {
    let work = home.workdir();
    // Sleep durations no other process uses, to find exactly this session's processes.
    let marker = format!("{}.{tag}", 400_000 + std::process::id() % 100_000);
    let background = format!("sleep 1{marker}");
    let foreground = format!("sleep 2{marker} & sleep 3{marker}; wait");
    let server = ScriptedServer::spawn(Script::new([
        Step::tool_calls([ToolCall::new(
            "terminal",
            serde_json::json!({ "command": background, "background": true }).to_string(),
        )]),
        Step::tool_calls([terminal_call(&foreground)]),
        Step::text("never reached"),
    ]))
    .unwrap();
    let mut child = home
        .query_in(work.path(), &server, "wait", &[])
        .spawn()
        .unwrap();
    wait_until("the three sleeps start", Duration::from_secs(60), || {
        ["1", "2", "3"]
            .iter()
            .all(|n| !processes_running(&["sleep", &format!("{n}{marker}")]).is_empty())
    });
    child.kill().unwrap(); // SIGKILL: no cleanup code of talaria runs.
    child.wait().unwrap();
    // Generous: the kernel delivers the death signal at once, but the machine may be busy.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let mut left = processes_with(&marker);
    while !left.is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        left = processes_with(&marker);
    }
    for (pid, _) in &left {
        // Don't leave them behind for the next run.
        let _ = std::process::Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    }
    assert!(left.is_empty(), "outlived the agent: {left:?}");
}

/// Makes `path` and everything under it owned by `uid` (so the agent can
/// run as that user in it).
fn chown_tree(path: &std::path::Path, uid: u32) {
    std::os::unix::fs::lchown(path, Some(uid), Some(uid)).unwrap();
    if path.is_dir() && !path.is_symlink() {
        for entry in std::fs::read_dir(path).unwrap() {
            chown_tree(&entry.unwrap().path(), uid);
        }
    }
}

#[test]
fn commands_cannot_read_the_agents_keys_through_proc() {
    const NOBODY: u32 = 65534;
    let secret = "sk-test-secret-4f9c2e7a";
    let home = Home::new();
    let work = home.workdir();
    // Root reads any process's environ; the protection is against the same
    // (non-root) user, so run the agent as nobody when the tests run as root.
    let root = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/proc/self").unwrap()) == 0;
    if root
        && std::process::Command::new("setpriv")
            .arg("--help")
            .output()
            .is_err()
    {
        eprintln!("skipped: running as root and setpriv (util-linux) is missing");
        return;
    }
    if root {
        chown_tree(home.path(), NOBODY);
        chown_tree(work.path(), NOBODY);
    }
    // $PPID is the command's parent (the supervisor); its parent is the agent.
    let read_both = "cat /proc/$PPID/environ; echo; \
                     cat /proc/$(cut -d' ' -f4 /proc/$PPID/stat)/environ; echo; echo read-done";
    let server = ScriptedServer::spawn(Script::new([
        Step::tool_calls([terminal_call(read_both)]),
        Step::text("done"),
    ]))
    .unwrap();
    let query = home.query_in(work.path(), &server, "do it", &["--yolo"]);
    let mut command = if root {
        let mut wrapped = std::process::Command::new("setpriv");
        wrapped
            .arg(format!("--reuid={NOBODY}"))
            .arg(format!("--regid={NOBODY}"))
            .args(["--clear-groups", "--"])
            .arg(query.get_program())
            .args(query.get_args())
            .env_clear()
            .envs(
                query
                    .get_envs()
                    .filter_map(|(name, value)| Some((name, value?))),
            )
            .current_dir(work.path())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        wrapped
    } else {
        query
    };
    command
        .env("OPENAI_API_KEY", secret)
        .env("TALARIA_API_KEY", secret);
    assert_code(&run(command), 0);
    let result = &results(&server, 1)[0];
    assert!(result.contains("read-done"), "the command ran: {result}");
    assert!(!result.contains(secret), "a key leaked: {result}");
}

/// A throwaway directory beside the working directory holding `keep/file`.
fn outside_dir() -> tempfile::TempDir {
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir(outside.path().join("keep")).unwrap();
    std::fs::write(outside.path().join("keep/file"), "precious").unwrap();
    outside
}

#[test]
fn workdir_outside_the_working_directory_needs_approval_even_in_bwrap() {
    if std::process::Command::new("bwrap")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skipped: bwrap is not installed (./scripts/system-deps installs it)");
        return;
    }
    let home = Home::new();
    home.write_config("terminal:\n  backend: bwrap\napprovals:\n  mode: deny\n");
    let work = home.workdir();
    let outside = outside_dir();
    let in_dir = |command: &str, dir: &std::path::Path| {
        ToolCall::new(
            "terminal",
            serde_json::json!({ "command": command, "workdir": dir.to_str().unwrap() }).to_string(),
        )
    };
    let relative = format!(
        "../{}",
        outside.path().file_name().unwrap().to_str().unwrap()
    );
    let server = ScriptedServer::spawn(Script::new([
        Step::tool_calls([in_dir("rm -rf keep", outside.path())]),
        // `..` and a symlink inside the working directory lead there too.
        Step::tool_calls([in_dir("rm -rf keep", std::path::Path::new(&relative))]),
        Step::tool_calls([in_dir("rm -rf keep", &work.path().join("link"))]),
        Step::tool_calls([ToolCall::new(
            "terminal",
            serde_json::json!({
                "command": "rm -rf keep", "workdir": outside.path().to_str().unwrap(),
                "background": true,
            })
            .to_string(),
        )]),
        // Inside the working directory the sandbox still runs it unasked.
        Step::tool_calls([terminal_call("rm -rf build")]),
        Step::text("done"),
    ]))
    .unwrap();
    std::fs::create_dir(work.path().join("build")).unwrap();
    std::os::unix::fs::symlink(outside.path(), work.path().join("link")).unwrap();
    assert_code(&query(&home, work.path(), &server, &[]), 0);
    let shown = outside.path().canonicalize().unwrap().display().to_string();
    for (index, call) in [(1, 0), (2, 1), (3, 2), (4, 3)] {
        let result = &results(&server, index)[call];
        assert!(result.contains(&shown), "call {call}: {result}");
    }
    assert_eq!(
        std::fs::read_to_string(outside.path().join("keep/file")).unwrap(),
        "precious"
    );
    assert!(
        !work.path().join("build").exists(),
        "{:?}",
        results(&server, 5)
    );
}

#[test]
fn writing_a_command_to_a_background_shell_is_screened() {
    let home = Home::new();
    home.write_config("approvals:\n  mode: deny\n");
    let work = home.workdir();
    std::fs::create_dir(work.path().join("victim")).unwrap();
    let process = |args: serde_json::Value| ToolCall::new("process", args.to_string());
    let server = ScriptedServer::spawn(Script::new([
        Step::tool_calls([ToolCall::new(
            "terminal",
            serde_json::json!({ "command": "bash", "background": true }).to_string(),
        )]),
        Step::tool_calls([process(serde_json::json!({
            "action": "write", "session_id": "1", "data": "rm -rf victim\n",
        }))]),
        Step::tool_calls([process(serde_json::json!({
            "action": "write", "session_id": "1", "data": "echo alive; exit\n",
        }))]),
        Step::tool_calls([process(
            serde_json::json!({"action": "wait", "session_id": "1", "timeout": 30}),
        )]),
        Step::text("done"),
    ]))
    .unwrap();
    assert_code(&query(&home, work.path(), &server, &[]), 0);
    let refused = &results(&server, 2)[1];
    assert!(
        refused.contains("denied") || refused.contains("recursive"),
        "{refused}"
    );
    let waited: serde_json::Value = serde_json::from_str(&results(&server, 4)[3]).unwrap();
    assert_eq!(waited["output"], "alive\n", "{waited}");
    assert!(work.path().join("victim").is_dir(), "nothing was deleted");
}

/// The parse check a build whose panics abort runs before parsing a line in-process: the real
/// binary answers it, and exits 0 for any line the parser survives, even one bash rejects.
#[test]
fn the_binary_answers_the_approval_parse_check() {
    use std::io::Write;
    let home = Home::new();
    for line in ["git -c core.pager='rm -rf build' log", "if then fi ((", ""] {
        let mut check = home.talaria(&["__approval-parse-check"]);
        check
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped());
        let mut child = check.spawn().unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(line.as_bytes())
            .unwrap();
        let output = child.wait_with_output().unwrap();
        assert_code(&output, 0);
        assert!(output.stdout.is_empty(), "{line}: {output:?}");
    }
}
