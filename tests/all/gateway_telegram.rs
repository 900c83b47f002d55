//! `talaria gateway run` on Telegram: the first-party adapter plugin against
//! the Bot API fake of the testkit (long-poll, offsets, typing, files), its
//! `api_base` reached through the `$config.api_base` network grant.

use std::time::Duration;

use talaria_testkit::telegram::{BotAction, FakeChat, FakeUser, TelegramFake, UserMessage};
use talaria_testkit::{Script, ScriptedServer, Step};

use crate::common::*;
use crate::gateway::spawn_gateway;

const TOKEN: &str = "7000001:test-token-of-the-fake";

/// What the bot wrote to `chat`, in order.
fn messages_to(fake: &TelegramFake, chat: i64) -> Vec<String> {
    fake.sent()
        .into_iter()
        .filter_map(|action| match action {
            BotAction::Message { chat_id, text, .. } if chat_id == chat => Some(text),
            _ => None,
        })
        .collect()
}

#[test]
fn the_gateway_answers_on_telegram_and_hands_the_agent_a_sent_file() {
    build_plugins();
    let fake = TelegramFake::spawn(TOKEN).unwrap();
    let model = ScriptedServer::spawn(Script::new([
        Step::text("hello Ann"),
        Step::text("the file says hi"),
    ]))
    .unwrap();
    let home = Home::new();
    home.write_config(&format!(
        "retry:\n  base_delay_ms: 20\n  max_delay_ms: 100\n\
         gateway:\n  platforms:\n    telegram:\n      bot_token: ${{TG_TOKEN}}\n      \
         api_base: {}\n      poll_timeout_secs: 1\n      allowed_users: ['1001']\n",
        fake.api_base()
    ));
    let gateway = spawn_gateway(&home, &model, &[("TG_TOKEN", TOKEN)]);

    let ann = FakeUser::new(1001, "Ann").with_username("ann");
    let chat = FakeChat::private(&ann);
    let first = fake.push_user_message(&chat, &ann, "hi there");
    wait_until("the answer to Ann", Duration::from_secs(60), || {
        !messages_to(&fake, 1001).is_empty()
    });
    assert_eq!(messages_to(&fake, 1001), ["hello Ann"]);
    assert!(
        fake.sent().iter().any(|action| matches!(
            action,
            BotAction::ChatAction { chat_id: 1001, action, .. } if action == "typing"
        )),
        "the bot showed it was writing: {:?}",
        fake.sent()
    );

    // A stranger gets a pairing code and never reaches the model.
    let eve = FakeUser::new(2002, "Eve");
    fake.push_user_message(&FakeChat::private(&eve), &eve, "hello?");
    wait_until("Eve's pairing code", Duration::from_secs(60), || {
        !messages_to(&fake, 2002).is_empty()
    });
    assert_contains(
        &messages_to(&fake, 2002)[0],
        "talaria pairing approve telegram ",
    );

    // A document: fetched with getFile, saved under the session, named by path.
    let file = fake.add_file("notes.txt", "text/plain", b"hi from the file");
    fake.push(UserMessage::new(&chat, &ann, "read this").with_document(&file));
    wait_until("the answer about the file", Duration::from_secs(60), || {
        messages_to(&fake, 1001).len() == 2
    });
    assert_eq!(messages_to(&fake, 1001)[1], "the file says hi");
    let requests = model.requests();
    assert_eq!(requests.len(), 2, "Eve's words never reached the model");
    let asked = requests[1].messages().last().unwrap().text.clone();
    assert_contains(&asked, "read this");
    let path = asked
        .split("saved at ")
        .nth(1)
        .and_then(|rest| rest.split(']').next())
        .unwrap_or_else(|| panic!("no path in {asked:?}"));
    assert!(
        path.starts_with(&home.path().join("sessions").display().to_string()),
        "{path}"
    );
    assert_eq!(std::fs::read(path).unwrap(), b"hi from the file");

    // An edit of an answered message is acknowledged and let be.
    fake.push_update(serde_json::json!({"edited_message": {
        "message_id": first, "date": 0, "text": "hi there, again",
        "chat": {"id": 1001, "type": "private", "first_name": "Ann"},
        "from": {"id": 1001, "is_bot": false, "first_name": "Ann", "username": "ann"},
    }}));

    // Every update was acknowledged (the next getUpdates carried its offset).
    wait_until("acknowledged updates", Duration::from_secs(30), || {
        fake.pending_updates().is_empty()
    });
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(model.requests().len(), 2, "the edit started no turn");

    assert_code(&run(home.talaria(&["gateway", "stop"])), 0);
    let output = wait(gateway);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_contains(&stderr(&output), "talaria gateway: telegram: started");
}

/// telegram-test-api (scripts/install-gateway-peers) on a free port: the
/// process (its stdin held open) and its URL.
fn start_emulator() -> Option<(std::process::Child, String)> {
    use std::io::BufRead;

    let package = peer("gateway", "node_modules/telegram-test-api")?;
    let launcher =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/all/telegram_emulator.mjs");
    let mut child = std::process::Command::new("node")
        .arg(launcher)
        .env("TELEGRAM_TEST_API", package)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .expect("node runs the emulator");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let started: serde_json::Value =
        serde_json::from_str(&line).unwrap_or_else(|_| panic!("the emulator printed {line:?}"));
    Some((child, started["url"].as_str().unwrap().to_owned()))
}

/// A JSON POST to the emulator's client side; the parsed answer.
fn client_call(url: &str, method: &str, body: &serde_json::Value) -> serde_json::Value {
    let port: u16 = url.rsplit(':').next().unwrap().parse().unwrap();
    let (status, _, reply) = http_request(
        port,
        "POST",
        &format!("/{method}"),
        &[],
        body.to_string().as_bytes(),
    );
    assert_eq!(status, 200, "{method}: {reply}");
    serde_json::from_str(&reply).unwrap()
}

#[test]
fn the_gateway_answers_through_the_telegram_test_api_emulator() {
    let Some((mut emulator, url)) = start_emulator() else {
        return;
    };
    build_plugins();
    let model =
        ScriptedServer::spawn(Script::new([Step::text("hello from the emulator")])).unwrap();
    let home = Home::new();
    home.write_config(&format!(
        "retry:\n  base_delay_ms: 20\n  max_delay_ms: 100\n\
         gateway:\n  platforms:\n    telegram:\n      bot_token: {TOKEN}\n      \
         api_base: {url}\n      poll_timeout_secs: 1\n      allowed_users: ['1001']\n"
    ));
    let gateway = spawn_gateway(&home, &model, &[]);

    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    client_call(
        &url,
        "sendMessage",
        &serde_json::json!({
            "botToken": TOKEN,
            "from": {"id": 1001, "first_name": "Ann", "username": "ann", "is_bot": false},
            "chat": {"id": 1001, "type": "private", "first_name": "Ann"},
            "date": now,
            "text": "hi bot",
        }),
    );
    let mut answers = Vec::new();
    wait_until("the bot's answer", Duration::from_secs(60), || {
        let reply = client_call(
            &url,
            "getUpdates",
            &serde_json::json!({"token": TOKEN, "chatId": 1001}),
        );
        answers.extend(
            reply["result"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|update| update["message"]["text"].as_str().map(str::to_owned)),
        );
        !answers.is_empty()
    });
    assert_eq!(answers, ["hello from the emulator"]);
    assert_eq!(model.requests().len(), 1);
    assert_contains(
        &model.requests()[0].messages().last().unwrap().text,
        "hi bot",
    );

    assert_code(&run(home.talaria(&["gateway", "stop"])), 0);
    let output = wait(gateway);
    assert!(output.status.success(), "{}", stderr(&output));
    drop(emulator.stdin.take());
    let _ = emulator.wait();
}

#[test]
fn a_message_sent_during_a_turn_steers_it_in_steer_mode() {
    build_plugins();
    let fake = TelegramFake::spawn(TOKEN).unwrap();
    // The first answer is a tool call that takes 3 s to arrive: Ann writes
    // again meanwhile.
    let todo = r#"{"todos":[{"id":"1","content":"greet","status":"in_progress"}]}"#;
    let model = ScriptedServer::spawn(Script::new([
        Step::tool_call("todo", todo).delayed(3000),
        Step::text("bonjour"),
    ]))
    .unwrap();
    let home = Home::new();
    home.write_config(&format!(
        "retry:\n  base_delay_ms: 20\n  max_delay_ms: 100\n\
         gateway:\n  platforms:\n    telegram:\n      bot_token: {TOKEN}\n      \
         api_base: {}\n      poll_timeout_secs: 1\n      allowed_users: ['1001']\n      \
         busy_mode: steer\n",
        fake.api_base()
    ));
    let gateway = spawn_gateway(&home, &model, &[]);
    let ann = FakeUser::new(1001, "Ann");
    let chat = FakeChat::private(&ann);
    fake.push_user_message(&chat, &ann, "greet me");
    wait_until("the first model call", Duration::from_secs(60), || {
        !model.requests().is_empty()
    });
    fake.push_user_message(&chat, &ann, "in French please");
    wait_until("the answer", Duration::from_secs(60), || {
        !messages_to(&fake, 1001).is_empty()
    });
    let requests = model.requests();
    assert_eq!(requests.len(), 2, "one turn, two model calls");
    assert_eq!(
        requests[1].messages().last().unwrap().text,
        "[The user added while you were working:]\nin French please"
    );
    // The note was taken by the turn: no second turn answers it.
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(messages_to(&fake, 1001), ["bonjour"]);
    assert_eq!(model.requests().len(), 2);

    assert_code(&run(home.talaria(&["gateway", "stop"])), 0);
    let output = wait(gateway);
    assert!(output.status.success(), "{}", stderr(&output));
}

#[test]
fn clarify_asks_in_the_chat_and_the_next_message_answers() {
    build_plugins();
    let fake = TelegramFake::spawn(TOKEN).unwrap();
    let ask = r#"{"question": "Which target?", "choices": ["staging", "prod"]}"#;
    let model = ScriptedServer::spawn(Script::new([
        Step::tool_call("clarify", ask),
        Step::text("deploying to prod"),
        Step::tool_call("clarify", r#"{"question": "Anything else?"}"#),
        Step::text("done without an answer"),
    ]))
    .unwrap();
    let home = Home::new();
    home.write_config(&format!(
        "retry:\n  base_delay_ms: 20\n  max_delay_ms: 100\n\
         clarify:\n  timeout_secs: 2\n\
         gateway:\n  platforms:\n    telegram:\n      bot_token: {TOKEN}\n      \
         api_base: {}\n      poll_timeout_secs: 1\n      allowed_users: ['1001']\n",
        fake.api_base()
    ));
    let gateway = spawn_gateway(&home, &model, &[]);
    let ann = FakeUser::new(1001, "Ann");
    let chat = FakeChat::private(&ann);
    fake.push_user_message(&chat, &ann, "deploy it");
    wait_until("the question", Duration::from_secs(60), || {
        !messages_to(&fake, 1001).is_empty()
    });
    assert_eq!(
        messages_to(&fake, 1001)[0],
        "Question: Which target?\n1. staging\n2. prod\n\
         Reply with a number or your own answer — within 2 s."
    );
    fake.push_user_message(&chat, &ann, "2");
    wait_until("the answer", Duration::from_secs(60), || {
        messages_to(&fake, 1001).len() >= 2
    });
    assert_eq!(messages_to(&fake, 1001)[1], "deploying to prod");
    let requests = model.requests();
    assert_contains(&requests[0].tools_raw(), "\"clarify\"");
    let answer: serde_json::Value = serde_json::from_str(&tool_results(&model, 1)[0]).unwrap();
    assert_eq!(answer["user_response"], "prod");
    assert_eq!(requests.len(), 2, "the answer started no turn of its own");

    // Unanswered: the turn goes on after `clarify.timeout_secs`.
    fake.push_user_message(&chat, &ann, "one more thing");
    wait_until(
        "the end of the second turn",
        Duration::from_secs(60),
        || messages_to(&fake, 1001).len() >= 5,
    );
    let sent = messages_to(&fake, 1001);
    assert_contains(&sent[2], "Question: Anything else?");
    assert_eq!(sent[3], "No answer in time: going on without it.");
    assert_eq!(sent[4], "done without an answer");
    let unanswered = tool_results(&model, 3);
    assert_contains(
        unanswered.last().unwrap(),
        "did not answer within 2 seconds",
    );

    assert_code(&run(home.talaria(&["gateway", "stop"])), 0);
    let output = wait(gateway);
    assert!(output.status.success(), "{}", stderr(&output));
}
