//! The gateway's sessions share one MCP server per identical entry (the reference
//! server-everything over stdio, its processes counted), and a change to the entry reaches
//! the next session's server while a running session keeps the one it started with.

use std::time::Duration;

use talaria_testkit::telegram::{BotAction, FakeChat, FakeUser, TelegramFake};
use talaria_testkit::{Script, ScriptedServer, Step, ToolCall};

use crate::common::*;
use crate::gateway::spawn_gateway;

const TOKEN: &str = "7000002:test-token-of-the-fake";
const GET_ENV: &str = "mcp_everything_get-env";

fn config(fake: &TelegramFake, entry: &std::path::Path, mark: &str) -> String {
    format!(
        "retry:\n  base_delay_ms: 20\n  max_delay_ms: 100\n\
         gateway:\n  platforms:\n    telegram:\n      bot_token: ${{TG_TOKEN}}\n      \
         api_base: {}\n      poll_timeout_secs: 1\n      allowed_users: ['1001', '1002']\n\
         mcp_servers:\n  everything:\n    command: node\n    args: [\"{}\", stdio]\n    \
         env:\n      MARK: {mark}\n",
        fake.api_base(),
        entry.display()
    )
}

/// The server-everything processes (node itself, not the supervisor confining it) started
/// for `home`: their environment names it.
fn everything_processes(home: &Home) -> Vec<u32> {
    let wanted = format!("HOME={}", home.path().display());
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().filter_map(Result::ok) {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
        let mut args = cmdline.split(|b| *b == 0);
        let program = args.next().unwrap_or_default();
        if program.ends_with(b"node")
            && String::from_utf8_lossy(&cmdline).contains("server-everything")
            && environ
                .split(|b| *b == 0)
                .any(|var| var == wanted.as_bytes())
        {
            found.push(pid);
        }
    }
    found.sort_unstable();
    found
}

fn answers_to(fake: &TelegramFake, chat: i64) -> usize {
    fake.sent()
        .into_iter()
        .filter(|action| matches!(action, BotAction::Message { chat_id, .. } if *chat_id == chat))
        .count()
}

fn get_env() -> Step {
    Step::tool_calls([ToolCall::new(GET_ENV, "{}")])
}

/// The MARK the server reported in the `n`th recorded request's last tool result.
fn mark_seen(model: &ScriptedServer, n: usize) -> String {
    let request = &model.requests()[n];
    let result = request
        .messages()
        .iter()
        .rev()
        .find(|m| m.text.contains("MARK"))
        .map(|m| m.text.clone())
        .unwrap_or_else(|| panic!("no get-env result in request {n}"));
    ["one", "two"]
        .into_iter()
        .find(|mark| {
            result.contains(&format!("\\\"MARK\\\": \\\"{mark}\\\""))
                || result.contains(&format!("\"MARK\": \"{mark}\""))
        })
        .unwrap_or_else(|| panic!("no MARK in {result}"))
        .to_owned()
}

#[test]
fn two_chats_share_one_mcp_server_and_a_changed_entry_reaches_the_next_session() {
    let Some(entry) = crate::mcp::everything() else {
        return;
    };
    build_plugins();
    let fake = TelegramFake::spawn(TOKEN).unwrap();
    let model = ScriptedServer::spawn(Script::new([
        // Ann, then Bob: one get-env each.
        get_env(),
        Step::text("a1"),
        get_env(),
        Step::text("b1"),
        // Ann again: get-env, then (while the entry changes) get-env again.
        get_env(),
        get_env().delayed(3000),
        Step::text("a2"),
        // Bob again, after the change.
        get_env(),
        Step::text("b2"),
    ]))
    .unwrap();
    let home = Home::new();
    home.write_config(&config(&fake, &entry, "one"));
    let gateway = spawn_gateway(&home, &model, &[("TG_TOKEN", TOKEN)]);
    let _kill = KillOnDrop(gateway.id());
    let ann = FakeUser::new(1001, "Ann");
    let bob = FakeUser::new(1002, "Bob");

    fake.push_user_message(&FakeChat::private(&ann), &ann, "env?");
    wait_until("Ann's answer", Duration::from_secs(60), || {
        answers_to(&fake, 1001) == 1
    });
    fake.push_user_message(&FakeChat::private(&bob), &bob, "env?");
    wait_until("Bob's answer", Duration::from_secs(60), || {
        answers_to(&fake, 1002) == 1
    });
    let shared = everything_processes(&home);
    assert_eq!(shared.len(), 1, "two chats, one server: {shared:?}");
    assert_eq!(
        (mark_seen(&model, 1), mark_seen(&model, 3)),
        ("one".into(), "one".into())
    );

    fake.push_user_message(&FakeChat::private(&ann), &ann, "env again?");
    wait_until("Ann's second get-env sent", Duration::from_secs(60), || {
        model.requests().len() == 6
    });
    // The entry changes while Ann's turn waits for the model.
    home.write_config(&config(&fake, &entry, "two"));
    wait_until("Ann's second answer", Duration::from_secs(60), || {
        answers_to(&fake, 1001) == 2
    });
    assert_eq!(
        mark_seen(&model, 6),
        "one",
        "the running session's server changed"
    );
    assert_eq!(
        everything_processes(&home),
        shared,
        "a server was restarted mid-session"
    );

    fake.push_user_message(&FakeChat::private(&bob), &bob, "env again?");
    wait_until("Bob's second answer", Duration::from_secs(60), || {
        answers_to(&fake, 1002) == 2
    });
    assert_eq!(
        mark_seen(&model, 8),
        "two",
        "the next session kept the old entry"
    );
    let now = everything_processes(&home);
    assert_eq!(now.len(), 1, "the replaced server was not ended: {now:?}");
    assert_ne!(now, shared);

    assert_code(&run(home.talaria(&["gateway", "stop"])), 0);
    let output = wait(gateway);
    assert!(output.status.success(), "{}", stderr(&output));
    wait_until("the shared server's end", Duration::from_secs(10), || {
        now.iter()
            .all(|pid| !std::path::Path::new(&format!("/proc/{pid}")).exists())
    });
}
