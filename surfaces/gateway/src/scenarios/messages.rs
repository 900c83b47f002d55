//! Who gets answered, how answers are cut, and which session a chat continues.

use crate::ports::{ChatKind, CommandEffect, CommandReply};
use crate::split::LengthUnit;

use super::fakes::{dm, message};
use super::{Harness, allowing};

#[tokio::test(start_paused = true)]
async fn a_stranger_in_private_gets_a_pairing_code_once_per_ten_minutes() {
    let mut h = Harness::start(allowing(&["ann"]));
    h.platform.write(dm("eve", "hello"));
    let answer = h.next_sent().await;
    assert_eq!(answer.chat_id, "eve");
    assert!(answer.text.contains("pairing code"), "{answer:?}");
    assert!(
        answer.text.contains("talaria pairing approve irc"),
        "{answer:?}"
    );

    h.platform.write(dm("eve", "hello again?"));
    h.quiet_for(9 * 60).await;
    assert!(
        h.runner.log().is_empty(),
        "a stranger never reaches the agent"
    );
}

#[tokio::test(start_paused = true)]
async fn strangers_in_groups_bots_and_unaddressed_chatter_are_ignored() {
    let mut h = Harness::start(allowing(&["ann"]));
    let mut stranger = message("#team", ChatKind::Group, "eve", "hey bot");
    stranger.addressed = true;
    h.platform.write(stranger);
    let unaddressed = message("#team", ChatKind::Group, "ann", "lunch?");
    h.platform.write(unaddressed);
    let mut bot = dm("ann", "I am a bot");
    bot.sender.is_bot = true;
    h.platform.write(bot);
    h.quiet_for(600).await;
    assert!(h.runner.log().is_empty(), "{:?}", h.runner.log());

    let mut addressed = message("#team", ChatKind::Group, "ann", "bot: hi");
    addressed.addressed = true;
    h.platform.write(addressed);
    assert_eq!(h.next_text().await, "re: bot: hi");
}

#[tokio::test(start_paused = true)]
async fn an_allowed_user_gets_the_answer_split_under_the_platform_limit() {
    let mut h = Harness::start(allowing(&["ann"]));
    {
        let mut capabilities = h.platform.capabilities.lock().unwrap();
        capabilities.max_message_length = 120;
        capabilities.length_unit = LengthUnit::Bytes;
    }
    let mut question = dm("ann", "long");
    question.message_id = Some("m1".into());
    h.platform.write(question);
    let mut parts = Vec::new();
    let mut text = String::new();
    while text.split_whitespace().count() < 200 {
        let part = h.next_sent().await;
        text.push_str(&part.text);
        text.push(' ');
        parts.push(part);
    }
    assert!(
        parts.len() >= 8,
        "1,000 bytes in 120-byte parts: {}",
        parts.len()
    );
    assert!(parts.iter().all(|p| p.text.len() <= 120), "{parts:?}");
    assert_eq!(parts[0].reply_to.as_deref(), Some("m1"));
    assert!(parts[1..].iter().all(|p| p.reply_to.is_none()));
    assert_eq!(
        text.split_whitespace().filter(|w| *w == "word").count(),
        200
    );
    // One 10 s model call: shown at 0 and 5 s.
    assert_eq!(
        h.platform.typing_log.lock().unwrap().as_slice(),
        ["ann", "ann"]
    );
}

#[tokio::test(start_paused = true)]
async fn new_starts_a_fresh_session_for_the_chat_only() {
    let mut h = Harness::start(allowing(&["ann", "bob"]));
    h.platform.write(dm("ann", "one"));
    assert_eq!(h.next_text().await, "re: one");
    h.platform.write(dm("bob", "b1"));
    assert_eq!(h.next_text().await, "re: b1");
    h.platform.write(dm("ann", "two"));
    assert_eq!(h.next_text().await, "re: two");
    h.platform.write(dm("ann", "/new"));
    assert_eq!(h.next_text().await, "Fresh session started.");
    h.platform.write(dm("ann", "three"));
    assert_eq!(h.next_text().await, "re: three");
    h.platform.write(dm("bob", "b2"));
    assert_eq!(h.next_text().await, "re: b2");
    let sessions = h.runner.sessions();
    let [ann1, bob1, ann2, ann3, bob2] = sessions.as_slice() else {
        panic!("{sessions:?}");
    };
    assert_eq!(ann1, ann2, "a chat continues its session");
    assert_ne!(ann2, ann3, "/new changes it");
    assert_eq!(bob1, bob2, "another chat keeps its own");
    assert_ne!(ann1, bob1);
    assert!(
        !h.runner.log().iter().any(|l| l.starts_with("command")),
        "/new is the gateway's own"
    );
}

#[tokio::test(start_paused = true)]
async fn a_chat_idle_longer_than_the_reset_gets_a_fresh_session() {
    let mut h = Harness::start_with(allowing(&["ann"]), 1);
    h.platform.write(dm("ann", "one"));
    h.next_text().await;
    tokio::time::sleep(std::time::Duration::from_secs(50 * 60)).await;
    h.platform.write(dm("ann", "two"));
    h.next_text().await;
    tokio::time::sleep(std::time::Duration::from_secs(61 * 60)).await;
    h.platform.write(dm("ann", "three"));
    h.next_text().await;
    let sessions = h.runner.sessions();
    assert_eq!(sessions[0], sessions[1], "50 minutes is not idle enough");
    assert_ne!(sessions[1], sessions[2], "61 minutes is");
}

#[tokio::test(start_paused = true)]
async fn other_commands_go_to_the_registry_and_their_effects_apply() {
    let mut h = Harness::start(allowing(&["ann"]));
    h.platform.write(dm("ann", "hi"));
    h.next_text().await;
    h.runner.commands.lock().unwrap().push((
        "/skill-x do it".into(),
        CommandReply {
            text: String::new(),
            effect: CommandEffect::Send("skill prompt".into()),
        },
    ));
    h.platform.write(dm("ann", "/help"));
    assert_eq!(h.next_text().await, "ran /help");
    h.platform.write(dm("ann", "/skill-x do it"));
    assert_eq!(h.next_text().await, "re: skill prompt");
    h.platform.write(dm("ann", "//etc/hosts is a file"));
    assert_eq!(h.next_text().await, "re: /etc/hosts is a file");
    let log = h.runner.log();
    let session = &h.runner.sessions()[0];
    assert!(log.contains(&format!("command {session} /help")), "{log:?}");
}

#[tokio::test(start_paused = true)]
async fn new_during_a_running_turn_holds_after_the_turn_ends() {
    let mut h = Harness::start(allowing(&["ann"]));
    h.platform.write(dm("ann", "slow task"));
    tokio::time::sleep(std::time::Duration::from_secs(15)).await;
    h.platform.write(dm("ann", "/new"));
    assert_eq!(h.next_text().await, "Fresh session started.");
    assert_eq!(
        h.next_text().await,
        "re: slow task",
        "the running turn finishes"
    );
    h.platform.write(dm("ann", "next"));
    assert_eq!(h.next_text().await, "re: next");
    let sessions = h.runner.sessions();
    assert_ne!(sessions[0], sessions[1], "{sessions:?}");
}

#[tokio::test(start_paused = true)]
async fn attachments_are_saved_under_the_session_and_named_to_the_agent_by_path() {
    use crate::ports::Attachment;

    let mut h = Harness::start(allowing(&["ann"]));
    h.platform.capabilities.lock().unwrap().max_message_length = 4000;
    h.platform
        .files
        .lock()
        .unwrap()
        .insert("f1".into(), b"hello".to_vec());
    let attachment = |id: &str, name: &str, size: Option<u64>| Attachment {
        id: id.into(),
        name: name.into(),
        mime: "text/plain".into(),
        size,
    };
    let mut sent = dm("ann", "see these");
    sent.attachments = vec![
        attachment("f1", "../notes.txt", Some(5)),
        attachment("gone", "lost.txt", None),
        attachment("f3", "huge.bin", Some(1 << 40)),
    ];
    h.platform.write(sent);
    let answer = h.next_text().await;
    let session = h.runner.sessions()[0].clone();
    let saved = h
        .shared
        .sessions_dir
        .join(&session)
        .join("attachments/1-notes.txt");
    assert_eq!(std::fs::read(&saved).unwrap(), b"hello");
    assert!(answer.starts_with("re: see these\n\n"), "{answer}");
    assert!(
        answer.contains(&format!(
            "[attached file \"../notes.txt\" (text/plain, 5 bytes) saved at {}]",
            saved.display()
        )),
        "{answer}"
    );
    assert!(
        answer
            .contains("[attachment \"lost.txt\" (text/plain): could not be fetched: no file gone]"),
        "{answer}"
    );
    assert!(
        answer.contains("\"huge.bin\" (text/plain): not fetched"),
        "{answer}"
    );
    assert_eq!(
        std::fs::read_dir(saved.parent().unwrap()).unwrap().count(),
        1,
        "only the file fetched is written"
    );

    // A file alone, without words, still reaches the agent.
    let mut bare = dm("ann", "");
    bare.attachments = vec![attachment("f1", "again.txt", Some(5))];
    h.platform.write(bare);
    assert!(
        h.next_text()
            .await
            .starts_with("re: [attached file \"again.txt\"")
    );
}

#[tokio::test(start_paused = true)]
async fn attachments_whose_bytes_are_images_go_to_the_runner_as_images() {
    use crate::ports::Attachment;

    let mut h = Harness::start(allowing(&["ann"]));
    let files = [
        ("p1", b"\x89PNG\r\n\x1a\n-a-png".to_vec()),
        // Named and typed as a text file, but its bytes are a JPEG.
        ("p2", vec![0xFF, 0xD8, 0xFF, 0xE0, 1, 2]),
        ("t1", b"plain words".to_vec()),
    ];
    for (id, bytes) in files {
        h.platform.files.lock().unwrap().insert(id.into(), bytes);
    }
    let attachment = |id: &str, name: &str, mime: &str| Attachment {
        id: id.into(),
        name: name.into(),
        mime: mime.into(),
        size: None,
    };
    let mut sent = dm("ann", "what are these?");
    sent.attachments = vec![
        attachment("p1", "photo.png", "image/png"),
        attachment("p2", "odd.txt", "text/plain"),
        attachment("t1", "fake.png", "image/png"),
    ];
    h.platform.write(sent);
    let answer = h.next_text().await;
    assert!(answer.contains("saved at"), "{answer}");
    let session = h.runner.sessions()[0].clone();
    let dir = h.shared.sessions_dir.join(&session).join("attachments");
    let images = format!(
        "images {} {}",
        dir.join("1-photo.png").display(),
        dir.join("2-odd.txt").display()
    );
    assert!(h.runner.log().contains(&images), "{:?}", h.runner.log());
}

#[tokio::test(start_paused = true)]
async fn a_pushed_request_is_answered_by_the_adapter_and_its_messages_handled() {
    use crate::ports::WebhookRequest;

    let mut h = Harness::start(allowing(&["ann"]));
    let response = h
        .outbox
        .webhook(WebhookRequest {
            method: "POST".into(),
            path: "/events".into(),
            headers: Vec::new(),
            body: b"hi from a push".to_vec(),
        })
        .await
        .unwrap();
    assert_eq!(response.status, 200);
    assert_eq!(response.body, b"POST /events");
    assert_eq!(h.next_text().await, "re: hi from a push");
}
