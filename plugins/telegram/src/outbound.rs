//! What the bot sends: the bodies of `sendMessage`, `editMessageText`,
//! `sendChatAction`, and the chat details from `getChat`.

use serde_json::{Value, json};
use talaria_plugin_sdk::chat_types::{Chat, ChatDetails, ChatKind, Outbound};

/// Telegram's limit on a message's text, in UTF-16 code units.
pub const MAX_MESSAGE_UTF16: u32 = 4096;

/// The length of `text` as Telegram counts it (UTF-16 code units: an emoji
/// outside the BMP counts twice).
pub fn utf16_len(text: &str) -> usize {
    text.encode_utf16().count()
}

/// A chat id as the Bot API takes it: the integer, or an `@channelusername`.
fn chat_id_value(chat_id: &str) -> Value {
    chat_id
        .trim()
        .parse::<i64>()
        .map_or_else(|_| json!(chat_id.trim()), |id| json!(id))
}

fn integer(what: &str, text: &str) -> Result<i64, String> {
    text.trim()
        .parse::<i64>()
        .map_err(|_| format!("{what} {text:?} is not a Telegram id (an integer)"))
}

/// The Bot API method and body that deliver `message`, or why it cannot be
/// sent as it is.
pub fn send_request(message: &Outbound) -> Result<(&'static str, Value), String> {
    if message.text.trim().is_empty() {
        return Err("the message is empty: Telegram refuses empty texts".into());
    }
    let length = utf16_len(&message.text);
    if length > MAX_MESSAGE_UTF16 as usize {
        return Err(format!(
            "the message is {length} UTF-16 code units long; Telegram takes at most {MAX_MESSAGE_UTF16}"
        ));
    }
    let chat_id = chat_id_value(&message.chat_id);
    if let Some(edited) = &message.edit {
        let body = json!({
            "chat_id": chat_id,
            "message_id": integer("the edited message id", edited)?,
            "text": message.text,
        });
        return Ok(("editMessageText", body));
    }
    let mut body = json!({"chat_id": chat_id, "text": message.text});
    if let Some(thread) = &message.thread {
        body["message_thread_id"] = json!(integer("the thread id", thread)?);
    }
    if let Some(reply_to) = &message.reply_to {
        // Still sent when the message answered was deleted meanwhile.
        body["reply_parameters"] = json!({
            "message_id": integer("the message id replied to", reply_to)?,
            "allow_sending_without_reply": true,
        });
    }
    Ok(("sendMessage", body))
}

/// The body of `sendChatAction` showing "typing…".
pub fn typing_request(chat_id: &str, thread: Option<&str>) -> Value {
    let mut body = json!({"chat_id": chat_id_value(chat_id), "action": "typing"});
    if let Some(thread) = thread.and_then(|t| t.trim().parse::<i64>().ok()) {
        body["message_thread_id"] = json!(thread);
    }
    body
}

/// The body of `getChat` (and `getChatMemberCount`).
pub fn chat_request(chat_id: &str) -> Value {
    json!({"chat_id": chat_id_value(chat_id)})
}

/// The details in a `getChat` result (a ChatFullInfo), with the member
/// count when it was asked for.
pub fn chat_details(result: &Value, members: Option<u32>) -> Result<ChatDetails, String> {
    let id = result["id"]
        .as_i64()
        .ok_or("getChat answered without an id")?;
    let kind = match result["type"].as_str() {
        Some("private") => ChatKind::Dm,
        Some("channel") => ChatKind::Channel,
        _ => ChatKind::Group,
    };
    let person = [&result["first_name"], &result["last_name"]]
        .iter()
        .filter_map(|part| part.as_str())
        .collect::<Vec<_>>()
        .join(" ");
    let title = result["title"]
        .as_str()
        .map(str::to_owned)
        .or_else(|| (!person.is_empty()).then_some(person));
    Ok(ChatDetails {
        chat: Chat {
            id: id.to_string(),
            thread: None,
            kind,
            title,
        },
        members,
        topic: result["description"]
            .as_str()
            .or_else(|| result["bio"].as_str())
            .filter(|text| !text.is_empty())
            .map(str::to_owned),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn outbound(text: &str) -> Outbound {
        Outbound {
            chat_id: "-100123".into(),
            thread: None,
            text: text.into(),
            reply_to: None,
            edit: None,
        }
    }

    #[test]
    fn utf16_length_counts_astral_characters_twice() {
        assert_eq!(utf16_len("abc"), 3);
        assert_eq!(utf16_len("é"), 1);
        assert_eq!(utf16_len("😀"), 2);
        // 2048 emoji are 4096 code units: the limit exactly; one more is over.
        let at_limit = "😀".repeat(2048);
        assert!(send_request(&outbound(&at_limit)).is_ok());
        let over = format!("{at_limit}a");
        assert_eq!(over.chars().count(), 2049);
        let error = send_request(&outbound(&over)).unwrap_err();
        assert!(error.contains("4097"), "{error}");
    }

    #[test]
    fn a_message_goes_to_the_chat_topic_and_message_it_answers() {
        let mut message = outbound("hi");
        message.thread = Some("77".into());
        message.reply_to = Some("5".into());
        let (method, body) = send_request(&message).unwrap();
        assert_eq!(method, "sendMessage");
        assert_eq!(
            body,
            json!({"chat_id": -100_123, "text": "hi", "message_thread_id": 77,
                   "reply_parameters": {"message_id": 5, "allow_sending_without_reply": true}})
        );
        let mut channel = outbound("news");
        channel.chat_id = "@mychannel".into();
        assert_eq!(send_request(&channel).unwrap().1["chat_id"], "@mychannel");
    }

    #[test]
    fn an_edit_replaces_the_text_of_the_message() {
        let mut message = outbound("better");
        message.edit = Some("41".into());
        let (method, body) = send_request(&message).unwrap();
        assert_eq!(method, "editMessageText");
        assert_eq!(
            body,
            json!({"chat_id": -100_123, "message_id": 41, "text": "better"})
        );
    }

    #[test]
    fn bad_ids_and_empty_texts_are_refused_before_sending() {
        let mut message = outbound("x");
        message.reply_to = Some("five".into());
        assert!(send_request(&message).is_err());
        assert!(send_request(&outbound("  ")).is_err());
    }

    #[test]
    fn typing_and_chat_details() {
        assert_eq!(
            typing_request("42", Some("7")),
            json!({"chat_id": 42, "action": "typing", "message_thread_id": 7})
        );
        let details = chat_details(
            &json!({"id": -1005, "type": "supergroup", "title": "Readers", "description": "Books"}),
            Some(12),
        )
        .unwrap();
        assert!(matches!(details.chat.kind, ChatKind::Group));
        assert_eq!(details.chat.title.as_deref(), Some("Readers"));
        assert_eq!(
            (details.members, details.topic.as_deref()),
            (Some(12), Some("Books"))
        );
        let private = chat_details(
            &json!({"id": 42, "type": "private", "first_name": "Alice"}),
            None,
        )
        .unwrap();
        assert!(matches!(private.chat.kind, ChatKind::Dm));
        assert_eq!(private.chat.title.as_deref(), Some("Alice"));
    }
}
