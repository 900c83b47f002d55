//! One profile, many people (issue 47): two users of one gateway, on a real ngIRCd, cannot
//! list, resume or search each other's conversations, nor read each other's memory; the
//! owner's command line still sees everything.

use talaria_testkit::{Script, ScriptedServer, Step, ToolCall};

use crate::common::*;
use crate::gateway::gateway_command;
use crate::gateway_irc::IrcUser;

const SECRET: &str = "alice-secret-777";

#[test]
fn chat_users_see_only_their_own_sessions_and_memory() {
    let (_irc_dir, port, _server) = crate::gateway_irc::plain_ngircd();
    let model = ScriptedServer::spawn(Script::new([
        // Alice's turn: she asks the agent to remember her secret.
        Step::tool_calls([ToolCall::new(
            "memory",
            serde_json::json!({"action": "add", "target": "user", "content": format!("Alice's secret is {SECRET}")}).to_string(),
        )]),
        Step::text("noted"),
        // Bob's turn: the agent searches past conversations for a secret.
        Step::tool_calls([ToolCall::new(
            "session_search",
            r#"{"query": "secret"}"#,
        )]),
        Step::text("I know of no secret of yours"),
    ]))
    .unwrap();
    let home = Home::new();
    let work = home.workdir();
    home.write_config(&format!(
        "model:\n  provider: openai\n  name: test-model\n  base_url: {}\n  api_key: sk-test\n\
         retry:\n  base_delay_ms: 20\n  max_delay_ms: 100\n\
         gateway:\n  platforms:\n    irc:\n      server: 127.0.0.1\n      port: {port}\n      \
         nick: talaria\n      allowed_users: ['alice!~alice@*', 'bob!~bob@*']\n",
        model.openai_base_url()
    ));
    let gateway = gateway_command(&home, &model, &[])
        .current_dir(work.path())
        .spawn()
        .unwrap();
    let _stop = KillOnDrop(gateway.id());

    let mut alice = IrcUser::connect(port, "alice");
    // What is sent before the bot is on the network is lost.
    crate::gateway_irc_identity::wait_for_bot(&mut alice, "talaria");
    alice.send(&format!("PRIVMSG talaria :remember my secret: {SECRET}"));
    assert_contains(&alice.expect("PRIVMSG alice :"), "noted");

    // The owner's command line sees Alice's session; its id is what Bob will try.
    let listed = stdout(&run(home.talaria(&["session", "list"])));
    let alice_session = listed
        .lines()
        .find(|line| line.contains(SECRET))
        .and_then(|line| line.split_whitespace().next())
        .unwrap_or_else(|| panic!("the owner does not see Alice's session:\n{listed}"))
        .to_owned();

    let mut bob = IrcUser::connect(port, "bob");
    bob.send("PRIVMSG talaria :/sessions 50");
    let sessions = bob.expect("PRIVMSG bob :");
    assert!(!sessions.contains(SECRET), "{sessions}");
    assert!(!sessions.contains(&alice_session), "{sessions}");
    bob.send(&format!("PRIVMSG talaria :/resume {alice_session}"));
    let resumed = bob.expect("PRIVMSG bob :");
    assert_contains(&resumed, "no session matches");
    bob.send("PRIVMSG talaria :what is my secret?");
    assert_contains(&bob.expect("PRIVMSG bob :"), "I know of no secret of yours");

    // Nothing of Alice's reached Bob's turns: not her conversation, not her memory, not
    // her session in a search.
    let requests = model.requests();
    assert_eq!(requests.len(), 4);
    for request in &requests[2..] {
        let sent = format!("{}\n{:?}", request.system_prompt_raw(), request.messages());
        assert!(
            !sent.contains(SECRET),
            "Bob's request holds Alice's secret:\n{sent}"
        );
    }
    // Alice's memory is her own file, not the owner's.
    assert!(!home.read("USER.md").contains(SECRET));
    let memories = std::fs::read_dir(home.path().join("memories")).unwrap();
    let alice_memory: Vec<String> = memories
        .flatten()
        .filter_map(|entry| std::fs::read_to_string(entry.path().join("USER.md")).ok())
        .collect();
    assert!(
        alice_memory.iter().any(|text| text.contains(SECRET)),
        "{alice_memory:?}"
    );
    // The owner sees whose memories there are: Alice's, with her one USER.md entry, and
    // Bob's, empty.
    let others = stdout(&run(home.talaria(&["memory", "others"])));
    let line_of = |who: &str| {
        others
            .lines()
            .find(|line| line.contains(who))
            .unwrap_or_else(|| panic!("no memory of {who}: {others}"))
            .to_owned()
    };
    assert_eq!(others.lines().count(), 2, "{others}");
    assert_contains(&line_of("irc_alice"), "0 note(s), 1 about them");
    assert_contains(&line_of("irc_bob"), "0 note(s), 0 about them");

    assert_code(&run(home.talaria(&["gateway", "stop"])), 0);
    let output = wait(gateway);
    assert!(output.status.success(), "{}", stderr(&output));
}
