#![allow(clippy::unwrap_used)]
use serde_json::{Value, json};

use super::*;

fn bot() -> BotIdentity {
    BotIdentity {
        id: 999,
        username: "TalariaBot".into(),
    }
}

fn alice() -> Value {
    json!({"id": 42, "is_bot": false, "first_name": "Alice", "last_name": "Liddell", "username": "alice"})
}

fn update(message: Value) -> Value {
    json!({"update_id": 100, "message": message})
}

fn group_message(text: &str) -> Value {
    update(json!({
        "message_id": 5,
        "date": 1_700_000_000,
        "chat": {"id": -100_123, "type": "supergroup", "title": "Readers"},
        "from": alice(),
        "text": text,
    }))
}

fn mapped(update: &Value) -> InboundMessage {
    map_update(update, &bot()).unwrap()
}

#[test]
fn a_private_message_is_a_dm_and_always_addressed() {
    let update = update(json!({
        "message_id": 1,
        "date": 1_700_000_000,
        "chat": {"id": 42, "type": "private", "first_name": "Alice", "last_name": "Liddell"},
        "from": alice(),
        "text": "hello",
    }));
    let message = mapped(&update);
    assert_eq!(message.chat.id, "42");
    assert!(matches!(message.chat.kind, ChatKind::Dm));
    assert_eq!(message.chat.thread, None);
    assert_eq!(message.chat.title.as_deref(), Some("Alice Liddell"));
    assert_eq!(message.sender.id, "42");
    assert_eq!(message.sender.name, "Alice Liddell");
    assert!(!message.sender.is_bot);
    assert_eq!(message.text, "hello");
    assert_eq!(message.message_id.as_deref(), Some("1"));
    assert_eq!(message.reply_to, None);
    assert!(message.addressed);
    assert!(message.attachments.is_empty());
    assert_eq!(serde_json::from_str::<Value>(&message.raw).unwrap(), update);
}

#[test]
fn a_plain_group_message_is_not_addressed() {
    let message = mapped(&group_message("nice weather today"));
    assert!(matches!(message.chat.kind, ChatKind::Group));
    assert_eq!(message.chat.id, "-100123");
    assert_eq!(message.chat.title.as_deref(), Some("Readers"));
    assert!(!message.addressed);
    assert_eq!(message.text, "nice weather today");
}

#[test]
fn a_mention_addresses_the_bot_and_is_stripped() {
    let message = mapped(&group_message("@talariabot, what time is it?"));
    assert!(message.addressed);
    assert_eq!(message.text, "what time is it?");
    let inside = mapped(&group_message("ask @TalariaBot about it"));
    assert!(inside.addressed);
    assert_eq!(inside.text, "ask about it");
    // Another bot whose name starts with ours is not a mention of ours.
    let other = mapped(&group_message("@TalariaBotter hi"));
    assert!(!other.addressed);
    assert_eq!(other.text, "@TalariaBotter hi");
    let email = mapped(&group_message("write to x@TalariaBot.example"));
    assert!(!email.addressed);
}

#[test]
fn commands_address_the_bot_unless_meant_for_another() {
    let bare = mapped(&group_message("/status now"));
    assert!(bare.addressed);
    assert_eq!(bare.text, "/status now");
    let ours = mapped(&group_message("/status@TalariaBot now"));
    assert!(ours.addressed);
    assert_eq!(ours.text, "/status now");
    let theirs = mapped(&group_message("/status@OtherBot now"));
    assert!(!theirs.addressed);
    assert_eq!(theirs.text, "/status@OtherBot now");
    assert!(!mapped(&group_message("/ alone")).addressed);
}

#[test]
fn a_reply_to_the_bot_addresses_it() {
    let mut update = group_message("and tomorrow?");
    update["message"]["reply_to_message"] = json!({
        "message_id": 4,
        "from": {"id": 999, "is_bot": true, "first_name": "Talaria", "username": "TalariaBot"},
        "chat": {"id": -100_123, "type": "supergroup"},
        "text": "Sunny.",
    });
    let message = mapped(&update);
    assert!(message.addressed);
    assert_eq!(message.reply_to.as_deref(), Some("4"));

    update["message"]["reply_to_message"]["from"] = alice();
    let to_someone_else = mapped(&update);
    assert!(!to_someone_else.addressed);
    assert_eq!(to_someone_else.reply_to.as_deref(), Some("4"));
}

#[test]
fn a_forum_topic_message_is_a_thread_and_a_reply_thread_is_not() {
    let mut update = group_message("@TalariaBot hi");
    update["message"]["message_thread_id"] = json!(77);
    update["message"]["is_topic_message"] = json!(true);
    let message = mapped(&update);
    assert!(matches!(message.chat.kind, ChatKind::Thread));
    assert_eq!(message.chat.id, "-100123");
    assert_eq!(message.chat.thread.as_deref(), Some("77"));

    update["message"]["is_topic_message"] = Value::Null;
    let reply_thread = mapped(&update);
    assert!(matches!(reply_thread.chat.kind, ChatKind::Group));
    assert_eq!(reply_thread.chat.thread, None);
}

#[test]
fn a_channel_post_comes_from_the_channel() {
    let update = json!({"update_id": 3, "channel_post": {
        "message_id": 9,
        "chat": {"id": -100_777, "type": "channel", "title": "News"},
        "sender_chat": {"id": -100_777, "type": "channel", "title": "News"},
        "text": "Release day",
    }});
    let message = mapped(&update);
    assert!(matches!(message.chat.kind, ChatKind::Channel));
    assert_eq!(message.sender.id, "-100777");
    assert_eq!(message.sender.name, "News");
    assert!(!message.addressed);
}

#[test]
fn an_anonymous_admin_writes_as_the_group_not_as_a_bot() {
    let mut update = group_message("@TalariaBot status?");
    update["message"]["from"] = json!({"id": 1_087_968_824, "is_bot": true,
        "first_name": "Group", "username": "GroupAnonymousBot"});
    update["message"]["sender_chat"] =
        json!({"id": -100_123, "type": "supergroup", "title": "Readers"});
    let message = mapped(&update);
    assert_eq!(
        (message.sender.id.as_str(), message.sender.name.as_str()),
        ("-100123", "Readers")
    );
    assert!(!message.sender.is_bot);
    assert!(message.addressed);
}

#[test]
fn another_bot_is_marked_as_one() {
    let mut update = group_message("@TalariaBot ping");
    update["message"]["from"] =
        json!({"id": 5, "is_bot": true, "first_name": "Echo", "username": "echo_bot"});
    assert!(mapped(&update).sender.is_bot);
}

#[test]
fn attachments_carry_file_ids_names_and_sizes_and_captions_are_text() {
    let update = update(json!({
        "message_id": 6,
        "chat": {"id": 42, "type": "private", "first_name": "Alice"},
        "from": alice(),
        "caption": "see these",
        "photo": [
            {"file_id": "small", "file_unique_id": "s", "width": 90, "height": 60, "file_size": 900},
            {"file_id": "large", "file_unique_id": "l", "width": 1280, "height": 853, "file_size": 90_000},
            {"file_id": "medium", "file_unique_id": "m", "width": 320, "height": 213},
        ],
        "document": {"file_id": "doc", "file_unique_id": "d", "file_name": "report.pdf",
                     "mime_type": "application/pdf", "file_size": 1234},
    }));
    let message = mapped(&update);
    assert_eq!(message.text, "see these");
    let summary: Vec<_> = message
        .attachments
        .iter()
        .map(|a| (a.id.as_str(), a.name.as_str(), a.mime.as_str(), a.size))
        .collect();
    assert_eq!(
        summary,
        [
            ("large", "photo.jpg", "image/jpeg", Some(90_000)),
            ("doc", "report.pdf", "application/pdf", Some(1234)),
        ]
    );
    let voice = mapped(&json!({"update_id": 1, "message": {
        "message_id": 7, "chat": {"id": 42, "type": "private"}, "from": alice(),
        "voice": {"file_id": "v", "file_unique_id": "v", "duration": 2},
    }}));
    assert_eq!(voice.text, "");
    assert_eq!(voice.attachments[0].name, "voice.ogg");
    assert_eq!(voice.attachments[0].mime, "audio/ogg");
    assert_eq!(voice.attachments[0].size, None);
}

#[test]
fn an_edit_is_forwarded_as_an_edit_of_its_message() {
    let edited = json!({"update_id": 1, "edited_message": {
        "message_id": 5, "chat": {"id": 42, "type": "private"}, "from": alice(), "text": "typo fixed",
    }});
    let message = map_update(&edited, &bot()).unwrap();
    assert_eq!(message.edit_of.as_deref(), Some("5"));
    assert_eq!(message.text, "typo fixed");
    assert_eq!(
        mapped(&update(json!({
            "message_id": 6, "chat": {"id": 42, "type": "private"}, "from": alice(), "text": "new",
        })))
        .edit_of,
        None
    );
}

#[test]
fn service_messages_and_other_updates_are_skipped() {
    let joined = update(json!({
        "message_id": 8, "chat": {"id": -5, "type": "group", "title": "G"}, "from": alice(),
        "new_chat_members": [alice()],
    }));
    assert!(map_update(&joined, &bot()).is_none());
    let callback =
        json!({"update_id": 2, "callback_query": {"id": "1", "from": alice(), "data": "x"}});
    assert!(map_update(&callback, &bot()).is_none());
    assert!(map_update(&json!({"update_id": 3, "message": "nonsense"}), &bot()).is_none());
}

#[test]
fn get_me_gives_the_identity() {
    let me = json!({"id": 999, "is_bot": true, "first_name": "Talaria", "username": "TalariaBot"});
    assert_eq!(BotIdentity::from_get_me(&me).unwrap(), bot());
    assert!(BotIdentity::from_get_me(&json!({"id": 1})).is_err());
}

#[test]
fn numeric_ids_are_strong_identities() {
    let from_user = mapped(&update(json!({
        "message_id": 9, "chat": {"id": 42, "type": "private"}, "from": alice(), "text": "hi",
    })));
    let identity = identity_of(&from_user.sender);
    assert_eq!(identity.kind, "user-id");
    assert!(matches!(identity.strength, IdStrength::Strong));
    let as_channel = mapped(&update(json!({
        "message_id": 10, "chat": {"id": -100_777, "type": "channel", "title": "News"},
        "sender_chat": {"id": -100_777, "type": "channel", "title": "News"}, "text": "post",
    })));
    let identity = identity_of(&as_channel.sender);
    assert_eq!(identity.kind, "chat-id");
    assert!(matches!(identity.strength, IdStrength::Strong));
    let named = Sender {
        id: "ann".into(),
        name: "ann".into(),
        is_bot: false,
    };
    assert!(matches!(identity_of(&named).strength, IdStrength::NameOnly));
}
