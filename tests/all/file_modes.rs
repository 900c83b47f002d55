//! The profile home stays private under the usual umask (022): every file and
//! directory Talaria writes while a one-shot run adds memory and a skill, a cron
//! job runs, `talaria serve` answers a client and the gateway answers a webhook
//! is unreadable to other users (issue 47: chat users and local users apart).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::json;
use talaria_testkit::{Script, ScriptedServer, Step, ToolCall};

use crate::common::*;

/// `command` started by a shell that first sets the umask most systems default to.
fn under_umask_022(command: Command) -> Command {
    wrapped("sh", &["-c", "umask 022; exec \"$0\" \"$@\""], &command)
}

/// Every file and directory below `root` (links are not followed) that other users
/// may read, write or enter, with its mode.
fn open_to_others(root: &Path) -> Vec<(PathBuf, u32)> {
    let mut open = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.file_type().is_symlink() {
                continue;
            }
            let mode = meta.permissions().mode() & 0o7777;
            if mode & 0o077 != 0 {
                open.push((path.clone(), mode));
            }
            if meta.is_dir() {
                pending.push(path);
            }
        }
    }
    open
}

#[test]
fn what_talaria_writes_in_the_home_is_private_whatever_the_umask() {
    let skill =
        "---\nname: release-notes\ndescription: Write release notes\n---\n\nGroup by type.\n";
    let model = ScriptedServer::spawn(Script::new([
        Step::tool_calls([
            ToolCall::new(
                "memory",
                json!({"action": "add", "target": "memory", "content": "The build uses cargo"})
                    .to_string(),
            ),
            ToolCall::new(
                "skill_manage",
                json!({"action": "create", "name": "release-notes", "category": "writing",
                       "content": skill})
                .to_string(),
            ),
        ]),
        Step::text("noted"),
        Step::text("cron answer"),
        Step::text("serve answer"),
        Step::text("webhook answer"),
    ]))
    .unwrap();
    let home = Home::new();
    let port = crate::gateway::free_port();
    home.write_config(&format!(
        "model:\n  provider: openai\n  name: test-model\n  base_url: {}\n  api_key: sk-test\n\
         retry:\n  base_delay_ms: 20\n  max_delay_ms: 100\n\
         gateway:\n  webhook:\n    port: {port}\n    routes:\n      github:\n        \
         secret: hook-secret\n        events: [issue_comment]\n",
        model.openai_base_url()
    ));
    let work = home.workdir();

    let one_shot = run(under_umask_022(home.query_in(
        work.path(),
        &model,
        "go",
        &[],
    )));
    assert_code(&one_shot, 0);
    assert!(
        home.path()
            .join("skills/writing/release-notes/SKILL.md")
            .is_file()
    );

    let added =
        run(under_umask_022(home.talaria(&[
            "cron", "add", "1h", "Report", "--name", "report",
        ])));
    assert_code(&added, 0);
    let ran = run(under_umask_022(home.talaria(&["cron", "run", "report"])));
    assert_code(&ran, 0);
    assert_contains(&stdout(&ran), "report: ran");

    {
        let served = crate::api_server::spawn_served(under_umask_022(
            crate::api_server::serve_command(&home, &model, &[]),
        ));
        let (answer, _) =
            crate::api_server::chat(served.port, json!([crate::api_server::user("hello")]));
        assert_eq!(answer, "serve answer");
    }

    let gateway = under_umask_022(crate::gateway::gateway_command(&home, &model, &[]))
        .spawn()
        .unwrap();
    wait_until("the webhook listener", Duration::from_secs(60), || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    let comment = json!({
        "action": "created",
        "issue": {"number": 7, "title": "Crash on start"},
        "comment": {"body": "The build is red", "user": {"login": "ann"}},
    })
    .to_string();
    let (status, reply) = crate::gateway::post_hook(
        port,
        "github",
        "issue_comment",
        "d1",
        Some(b"hook-secret"),
        comment.as_bytes(),
    );
    assert_eq!(status, 202, "{reply}");
    wait_until("the webhook's turn", Duration::from_secs(60), || {
        stdout(&run(home.talaria(&["sessions", "list"])))
            .lines()
            .any(|line| line.contains("webhook:github") && line.contains(" 2 msgs"))
    });
    assert_code(&run(home.talaria(&["gateway", "stop"])), 0);
    let stopped = wait(gateway);
    assert!(stopped.status.success(), "{}", stderr(&stopped));
    assert_eq!(model.requests().len(), 5, "every surface reached the model");

    let home_mode = std::fs::metadata(home.path()).unwrap().permissions().mode();
    assert_eq!(home_mode & 0o077, 0, "the home itself: {home_mode:o}");
    let open = open_to_others(home.path());
    assert!(
        open.is_empty(),
        "open to other users:\n{}",
        open.iter()
            .map(|(path, mode)| format!("{mode:o} {}", path.display()))
            .collect::<Vec<_>>()
            .join("\n")
    );
}
