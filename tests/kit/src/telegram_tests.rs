#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::*;

const TOKEN: &str = "123456:TEST-token";

/// One request on a fresh connection: the status and the body.
fn raw(
    fake: &TelegramFake,
    method: &str,
    target: &str,
    content_type: &str,
    body: &[u8],
) -> (u16, Vec<u8>) {
    let mut stream = TcpStream::connect(fake.addr()).unwrap();
    let head = format!(
        "{method} {target} HTTP/1.1\r\nHost: api.telegram.org\r\nContent-Type: {content_type}\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).unwrap();
    let split = answer.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let status_line = String::from_utf8_lossy(&answer[..split]).into_owned();
    let status = status_line
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    (status, answer[split + 4..].to_vec())
}

/// `POST /bot<token>/<method>` with a JSON body.
fn call_as(fake: &TelegramFake, token: &str, method: &str, params: &Value) -> (u16, Value) {
    let target = format!("/bot{token}/{method}");
    let (status, body) = raw(
        fake,
        "POST",
        &target,
        "application/json",
        params.to_string().as_bytes(),
    );
    (status, serde_json::from_slice(&body).unwrap())
}

fn call(fake: &TelegramFake, method: &str, params: &Value) -> (u16, Value) {
    call_as(fake, TOKEN, method, params)
}

fn update_texts(answer: &Value) -> Vec<String> {
    answer["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["message"]["text"].as_str().unwrap().to_owned())
        .collect()
}

fn alice() -> FakeUser {
    FakeUser::new(42, "Alice").with_username("alice")
}

#[test]
fn get_me_describes_the_bot_and_a_wrong_token_is_unauthorized() {
    let fake = TelegramFake::spawn(TOKEN).unwrap();
    let (status, me) = call(&fake, "getMe", &json!({}));
    assert_eq!(status, 200);
    assert_eq!(me["ok"], true);
    assert_eq!(me["result"]["username"], "talaria_test_bot");
    assert_eq!(me["result"]["is_bot"], true);
    let (status, refused) = call_as(&fake, "123456:wrong", "getMe", &json!({}));
    assert_eq!(status, 401);
    assert_eq!(
        refused,
        json!({"ok": false, "error_code": 401, "description": "Unauthorized"})
    );
    let (status, _) = call(&fake, "noSuchMethod", &json!({}));
    assert_eq!(status, 404);
    assert_eq!(fake.calls(), ["getme", "nosuchmethod"]);
}

#[test]
fn a_long_poll_is_held_until_a_message_is_pushed() {
    let fake = TelegramFake::spawn(TOKEN).unwrap();
    let chat = FakeChat::private(&alice());
    std::thread::scope(|scope| {
        let poll = scope.spawn(|| call(&fake, "getUpdates", &json!({"timeout": 50})));
        // Wait (without asserting on time) until the request is being held.
        let give_up = Instant::now() + Duration::from_secs(30);
        while fake.holding_polls() == 0 {
            assert!(Instant::now() < give_up, "the poll was never held");
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(!poll.is_finished());
        fake.push_user_message(&chat, &alice(), "wake up");
        let (status, answer) = poll.join().unwrap();
        assert_eq!(status, 200);
        assert_eq!(update_texts(&answer), ["wake up"]);
        let update = &answer["result"][0];
        assert_eq!(update["message"]["chat"]["type"], "private");
        assert_eq!(update["message"]["from"]["id"], 42);
    });
    assert_eq!(fake.holding_polls(), 0);
}

#[test]
fn a_long_poll_without_updates_ends_empty_and_timeout_zero_answers_at_once() {
    let fake = TelegramFake::spawn(TOKEN).unwrap();
    let (_, answer) = call(&fake, "getUpdates", &json!({"timeout": 1}));
    assert_eq!(answer, json!({"ok": true, "result": []}));
    let (_, answer) = call(&fake, "getUpdates", &json!({}));
    assert_eq!(answer["result"], json!([]));
}

#[test]
fn an_offset_confirms_the_updates_below_it() {
    let fake = TelegramFake::spawn(TOKEN).unwrap();
    let group = FakeChat::supergroup(-100_555, "Readers");
    fake.push_user_message(&group, &alice(), "one");
    fake.push_user_message(&group, &alice(), "two");
    let (_, first) = call(&fake, "getUpdates", &json!({"timeout": 0}));
    assert_eq!(update_texts(&first), ["one", "two"]);
    // Not confirmed: asked again, the same updates come back.
    let (_, again) = call(&fake, "getUpdates", &json!({"limit": 1}));
    assert_eq!(update_texts(&again), ["one"]);
    let second_id = first["result"][1]["update_id"].as_i64().unwrap();
    let (_, rest) = call(&fake, "getUpdates", &json!({"offset": second_id}));
    assert_eq!(update_texts(&rest), ["two"]);
    assert_eq!(fake.pending_updates(), [second_id]);
    // Form-encoded parameters work as well as JSON.
    let form = format!("offset={}&timeout=0", second_id + 1);
    let target = format!("/bot{TOKEN}/getUpdates");
    let (_, body) = raw(
        &fake,
        "POST",
        &target,
        "application/x-www-form-urlencoded",
        form.as_bytes(),
    );
    let answer: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(answer["result"], json!([]));
    assert!(fake.pending_updates().is_empty());
}

#[test]
fn the_throttle_switch_answers_the_next_send_with_429_once() {
    let fake = TelegramFake::spawn(TOKEN).unwrap();
    let chat = FakeChat::private(&alice());
    fake.add_chat(&chat);
    fake.throttle_next_send(7);
    let (status, refused) = call(&fake, "sendMessage", &json!({"chat_id": 42, "text": "hi"}));
    assert_eq!(status, 429);
    assert_eq!(refused["error_code"], 429);
    assert_eq!(refused["parameters"]["retry_after"], 7);
    assert_eq!(refused["description"], "Too Many Requests: retry after 7");
    let (status, sent) = call(&fake, "sendMessage", &json!({"chat_id": 42, "text": "hi"}));
    assert_eq!(status, 200);
    assert_eq!(sent["result"]["text"], "hi");
    assert_eq!(fake.sent().len(), 1);
}

#[test]
fn messages_edits_and_chat_actions_are_recorded() {
    let fake = TelegramFake::spawn(TOKEN).unwrap();
    let forum = FakeChat::forum(-100_777, "Team");
    let asked = fake.push(UserMessage::new(&forum, &alice(), "@talaria_test_bot hi").in_topic(5));
    let (_, updates) = call(&fake, "getUpdates", &json!({}));
    let message = &updates["result"][0]["message"];
    assert_eq!(
        (
            message["message_thread_id"].clone(),
            message["is_topic_message"].clone()
        ),
        (json!(5), json!(true))
    );

    let (_, typing) = call(
        &fake,
        "sendChatAction",
        &json!({"chat_id": "-100777", "action": "typing", "message_thread_id": 5}),
    );
    assert_eq!(typing["result"], true);
    let (_, sent) = call(
        &fake,
        "sendMessage",
        &json!({"chat_id": -100_777, "text": "hello", "message_thread_id": 5,
                "reply_parameters": {"message_id": asked}}),
    );
    let answer_id = sent["result"]["message_id"].as_i64().unwrap();
    assert_eq!(
        sent["result"]["reply_to_message"]["text"],
        "@talaria_test_bot hi"
    );
    assert_eq!(sent["result"]["from"]["id"], fake.bot().id);
    let (_, edited) = call(
        &fake,
        "editMessageText",
        &json!({"chat_id": -100_777, "message_id": answer_id, "text": "hello!"}),
    );
    assert_eq!(edited["result"]["text"], "hello!");
    let (status, same) = call(
        &fake,
        "editMessageText",
        &json!({"chat_id": -100_777, "message_id": answer_id, "text": "hello!"}),
    );
    assert_eq!(status, 400);
    assert!(
        same["description"]
            .as_str()
            .unwrap()
            .contains("message is not modified")
    );
    let (status, _) = call(
        &fake,
        "editMessageText",
        &json!({"chat_id": -100_777, "message_id": asked, "text": "x"}),
    );
    assert_eq!(status, 400, "only the bot's own messages can be edited");

    assert_eq!(
        fake.sent(),
        [
            BotAction::ChatAction {
                chat_id: -100_777,
                action: "typing".into(),
                thread: Some(5)
            },
            BotAction::Message {
                chat_id: -100_777,
                message_id: answer_id,
                text: "hello".into(),
                thread: Some(5),
                reply_to: Some(asked)
            },
            BotAction::Edit {
                chat_id: -100_777,
                message_id: answer_id,
                text: "hello!".into()
            },
        ]
    );
    let (_, info) = call(&fake, "getChat", &json!({"chat_id": -100_777}));
    assert_eq!(
        (
            info["result"]["title"].clone(),
            info["result"]["is_forum"].clone()
        ),
        (json!("Team"), json!(true))
    );
    let (_, count) = call(&fake, "getChatMemberCount", &json!({"chat_id": -100_777}));
    assert_eq!(count["result"], 2);
}

#[test]
fn unknown_blocked_and_empty_sends_are_refused_as_telegram_does() {
    let fake = TelegramFake::spawn(TOKEN).unwrap();
    let (status, unknown) = call(&fake, "sendMessage", &json!({"chat_id": 5, "text": "hi"}));
    assert_eq!(
        (status, unknown["description"].as_str().unwrap()),
        (400, "Bad Request: chat not found")
    );
    let chat = FakeChat::private(&alice());
    fake.add_chat(&chat);
    let (status, empty) = call(&fake, "sendMessage", &json!({"chat_id": 42, "text": ""}));
    assert_eq!(
        (status, empty["description"].as_str().unwrap()),
        (400, "Bad Request: message text is empty")
    );
    let (status, _) = call(
        &fake,
        "sendMessage",
        &json!({"chat_id": 42, "text": "😀".repeat(2049)}),
    );
    assert_eq!(status, 400, "4098 UTF-16 code units are too long");
    fake.block(42);
    let (status, blocked) = call(&fake, "sendMessage", &json!({"chat_id": 42, "text": "hi"}));
    assert_eq!(
        (status, blocked["description"].as_str().unwrap()),
        (403, "Forbidden: bot was blocked by the user")
    );
    assert!(fake.sent().is_empty());
}

#[test]
fn files_are_found_with_get_file_and_downloaded_with_the_token() {
    let fake = TelegramFake::spawn(TOKEN).unwrap();
    let file_id = fake.add_file("notes.txt", "text/plain", b"remember the milk");
    let chat = FakeChat::private(&alice());
    fake.push(UserMessage::new(&chat, &alice(), "see attached").with_document(&file_id));
    let (_, updates) = call(&fake, "getUpdates", &json!({}));
    let document = &updates["result"][0]["message"]["document"];
    assert_eq!(document["file_id"], file_id.as_str());
    assert_eq!(document["file_name"], "notes.txt");
    assert_eq!(document["file_size"], 17);
    assert_eq!(updates["result"][0]["message"]["caption"], "see attached");

    let (_, file) = call(&fake, "getFile", &json!({"file_id": file_id}));
    let path = file["result"]["file_path"].as_str().unwrap().to_owned();
    let (status, bytes) = raw(
        &fake,
        "GET",
        &format!("/file/bot{TOKEN}/{path}"),
        "text/plain",
        b"",
    );
    assert_eq!((status, bytes.as_slice()), (200, &b"remember the milk"[..]));
    let (status, _) = raw(
        &fake,
        "GET",
        &format!("/file/botWRONG/{path}"),
        "text/plain",
        b"",
    );
    assert_eq!(status, 404);
    let (status, _) = call(&fake, "getFile", &json!({"file_id": "nope"}));
    assert_eq!(status, 400);
}
