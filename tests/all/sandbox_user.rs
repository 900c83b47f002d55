//! The sandbox as an ordinary user (issue 46): the suite runs as root, so these run Talaria as
//! the unprivileged `talaria-test` (made by `scripts/system-deps`) through `setpriv`. Without
//! root the local backend's mount namespace lives in a user namespace, the agent's process is
//! not dumpable, and bubblewrap runs unprivileged.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Command;

use crate::common::*;
use talaria_testkit::{Script, ScriptedServer, Step};

const USER: &str = "talaria-test";

/// A key that must never reach a command.
const CANARY_KEY: &str = "sk-user-canary-0123456789abcdefghijkl";

/// The test user's uid and gid; `None` (the test is skipped) when not root or the user is
/// missing — which fails instead when the peers are required (`scripts/test`).
fn test_user() -> Option<(u32, u32)> {
    let root = std::fs::metadata("/proc/self").is_ok_and(|meta| meta.uid() == 0);
    let id = |flag: &str| -> Option<u32> {
        let output = Command::new("id").args([flag, USER]).output().ok()?;
        String::from_utf8_lossy(&output.stdout).trim().parse().ok()
    };
    match (root, id("-u"), id("-g")) {
        (true, Some(uid), Some(gid)) => Some((uid, gid)),
        (true, _, _) if std::env::var_os("TALARIA_REQUIRE_PEERS").is_some() => {
            panic!("the test user {USER} is missing: run scripts/system-deps as root")
        }
        _ => {
            eprintln!("skipped: needs root and the user {USER}");
            None
        }
    }
}

/// `command` run as `uid:gid` with no supplementary groups.
fn as_user(command: &Command, (uid, gid): (u32, u32)) -> Command {
    let (uid, gid) = (uid.to_string(), gid.to_string());
    let before = [
        "--reuid",
        uid.as_str(),
        "--regid",
        gid.as_str(),
        "--clear-groups",
        "--",
    ];
    wrapped("setpriv", &before, command)
}

fn give_to(path: &Path, (uid, gid): (u32, u32)) {
    let status = Command::new("chown")
        .arg("-R")
        .arg(format!("{uid}:{gid}"))
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success());
}

/// Item 1 without root, on both backends: the home inside the working directory stays
/// read-only and its secrets empty.
#[test]
fn an_ordinary_users_home_inside_the_working_directory_stays_read_only() {
    let Some(user) = test_user() else { return };
    for backend in ["local", "bwrap"] {
        let work = tempfile::tempdir().unwrap();
        let home = Home::inside(work.path());
        home.write_config(&format!(
            "terminal:\n  backend: {backend}\napprovals:\n  mode: deny\nretry:\n  base_delay_ms: 20\n"
        ));
        std::fs::write(
            home.path().join(".env"),
            format!("ANTHROPIC_API_KEY={CANARY_KEY}\n"),
        )
        .unwrap();
        give_to(work.path(), user);
        let before = home.read("config.yaml");
        // Written by a tool and run later: the text rules cannot see what it does.
        let script = "echo 'approvals: {mode: yolo}' >> .talaria/config.yaml\n\
                      cat .talaria/.env\necho mine > mine.txt\nid -u\n";
        let server = ScriptedServer::spawn(Script::new([
            Step::tool_call(
                "write_file",
                serde_json::json!({"path": "fix.sh", "content": script}).to_string(),
            ),
            Step::tool_calls([terminal_call("sh fix.sh")]),
            Step::text("done"),
        ]))
        .unwrap();
        let mut command = home.query_in(work.path(), &server, "go", &[]);
        command.env("HOME", work.path());
        let output = run(as_user(&command, user));
        assert_code(&output, 0);
        let result = tool_results(&server, 2).pop().unwrap();
        assert_contains(&result, &user.0.to_string());
        assert_eq!(home.read("config.yaml"), before, "{backend}: {result}");
        assert!(!result.contains(CANARY_KEY), "{backend}: {result}");
        assert!(
            work.path().join("mine.txt").is_file(),
            "{backend}: {result}"
        );
    }
}

/// Item 4 without root: the agent is not dumpable, so a command of the same user cannot read
/// its environment (which holds no key anyway) or memory.
#[test]
fn an_ordinary_users_commands_cannot_read_the_agents_process() {
    let Some(user) = test_user() else { return };
    let home = Home::new();
    let work = home.workdir();
    give_to(home.path(), user);
    give_to(work.path(), user);
    let command = "A=$(tr '\\0' ' ' < /proc/$PPID/cmdline | cut -d' ' -f3); echo agent=$A; \
                   cat /proc/$A/environ; head -c 8 /proc/$A/mem; echo end";
    let server = ScriptedServer::spawn(Script::new([
        Step::tool_calls([terminal_call(command)]),
        Step::text("done"),
    ]))
    .unwrap();
    let mut run_it = home.query_in(work.path(), &server, "look", &["--yolo"]);
    run_it.env("OPENAI_API_KEY", CANARY_KEY);
    let output = run(as_user(&run_it, user));
    assert_code(&output, 0);
    let result = tool_results(&server, 1).pop().unwrap();
    assert_contains(&result, "agent=");
    assert_contains(&result, "Permission denied");
    assert!(!result.contains(CANARY_KEY), "{result}");
    assert!(
        !result.contains("TALARIA_HOME="),
        "the environment was read: {result}"
    );
}

/// Where no user namespace can be made (here: inside bubblewrap with `--disable-userns`),
/// the Landlock domain itself keeps the control paths: writes under the home and reads of
/// its secrets are refused by rules, and — the price, which `talaria doctor` names — no new
/// file can be created directly in the directory holding the home.
#[test]
fn without_user_namespaces_landlock_rules_keep_the_controls() {
    let Some(user) = test_user() else { return };
    let work = tempfile::tempdir().unwrap();
    let home = Home::inside(work.path());
    home.write_config("approvals:\n  mode: deny\nretry:\n  base_delay_ms: 20\n");
    std::fs::write(
        home.path().join(".env"),
        format!("ANTHROPIC_API_KEY={CANARY_KEY}\n"),
    )
    .unwrap();
    std::fs::create_dir(work.path().join("project")).unwrap();
    give_to(work.path(), user);
    let before = home.read("config.yaml");
    let script = "echo 'approvals: {mode: yolo}' >> .talaria/config.yaml\n\
                  cat .talaria/.env\necho made > project/made.txt\necho top > top.txt\n";
    let server = ScriptedServer::spawn(Script::new([
        Step::tool_call(
            "write_file",
            serde_json::json!({"path": "project/fix.sh", "content": script}).to_string(),
        ),
        Step::tool_calls([terminal_call("sh project/fix.sh")]),
        Step::text("done"),
    ]))
    .unwrap();
    let in_bwrap = |command: &Command| {
        let before = ["--unshare-user", "--disable-userns", "--bind", "/", "/"];
        let before = [&before[..], &["--dev", "/dev", "--proc", "/proc", "--"]].concat();
        wrapped("bwrap", &before, command)
    };
    let mut command = home.query_in(work.path(), &server, "go", &[]);
    command.env("HOME", work.path());
    let output = run(as_user(&in_bwrap(&command), user));
    assert_code(&output, 0);
    let result = tool_results(&server, 2).pop().unwrap();
    assert_eq!(home.read("config.yaml"), before, "{result}");
    assert!(!result.contains(CANARY_KEY), "{result}");
    assert!(work.path().join("project/made.txt").is_file(), "{result}");
    assert!(!work.path().join("top.txt").exists(), "{result}");

    let mut doctor = home.talaria(&["doctor", "--json"]);
    doctor.env("HOME", work.path());
    let report = stdout(&run(as_user(&in_bwrap(&doctor), user)));
    let sandbox = report
        .lines()
        .find(|line| line.contains("\"sandbox\""))
        .unwrap_or_default()
        .to_owned();
    assert_contains(&sandbox, "\"warn\"");
    assert_contains(&sandbox, "Landlock rules only");
}
