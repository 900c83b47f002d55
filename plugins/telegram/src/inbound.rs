//! Bot API updates to the host's inbound messages, and whether the bot was
//! addressed.
//!
//! Forwarded: `message` (private chats, groups, supergroups and their forum
//! topics) and `channel_post` (channels the bot administers), and their
//! edits (`edited_message`, `edited_channel_post`) marked `edit-of` the
//! message they replace, for the host to decide on. Acknowledged but not
//! forwarded: service messages without text or files (members joining,
//! pins), and every other update type (`getUpdates` asks only for the
//! forwarded ones through `allowed_updates`).

use serde_json::Value;
use talaria_plugin_sdk::chat_types::{Attachment, Chat, ChatKind, InboundMessage, Sender};
use talaria_plugin_sdk::{IdStrength, SenderIdentity};

/// The update types `getUpdates` asks for.
pub const ALLOWED_UPDATES: [&str; 4] = [
    "message",
    "channel_post",
    "edited_message",
    "edited_channel_post",
];

/// Who the bot is, from `getMe`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BotIdentity {
    pub id: i64,
    /// Without the `@`.
    pub username: String,
}

impl BotIdentity {
    /// The identity in a `getMe` result.
    pub fn from_get_me(result: &Value) -> Result<Self, String> {
        let id = result["id"]
            .as_i64()
            .ok_or("getMe answered without the bot's id")?;
        let username = result["username"]
            .as_str()
            .filter(|name| !name.is_empty())
            .ok_or("getMe answered without the bot's username")?
            .to_owned();
        Ok(Self { id, username })
    }
}

/// The inbound message an update carries, if it is one the host wants.
pub fn map_update(update: &Value, bot: &BotIdentity) -> Option<InboundMessage> {
    let (message, edited) = [
        ("message", false),
        ("channel_post", false),
        ("edited_message", true),
        ("edited_channel_post", true),
    ]
    .into_iter()
    .find_map(|(key, edited)| Some((update.get(key).filter(|m| m.is_object())?, edited)))?;
    let chat = chat_of(message)?;
    let sender = sender_of(message)?;
    let attachments = attachments_of(message);
    let text = message["text"]
        .as_str()
        .or_else(|| message["caption"].as_str())
        .unwrap_or_default();
    if text.is_empty() && attachments.is_empty() {
        return None;
    }
    let reply = &message["reply_to_message"];
    let replies_to_bot = reply["from"]["id"].as_i64() == Some(bot.id);
    let (addressed, text) = addressing(text, &bot.username, chat.kind, replies_to_bot);
    let message_id = message["message_id"].as_i64().map(|id| id.to_string());
    Some(InboundMessage {
        chat,
        sender,
        text,
        // An edit keeps the id of the message it changes.
        edit_of: if edited { message_id.clone() } else { None },
        message_id,
        reply_to: reply["message_id"].as_i64().map(|id| id.to_string()),
        addressed,
        attachments,
        raw: update.to_string(),
    })
}

fn chat_of(message: &Value) -> Option<Chat> {
    let chat = &message["chat"];
    let id = chat["id"].as_i64()?;
    // Only forum topics are threads: in other supergroups a
    // `message_thread_id` names a reply thread, which is just a reply.
    let topic = message["message_thread_id"]
        .as_i64()
        .filter(|_| message["is_topic_message"] == Value::Bool(true));
    let kind = match (chat["type"].as_str()?, topic) {
        ("private", _) => ChatKind::Dm,
        ("channel", _) => ChatKind::Channel,
        (_, Some(_)) => ChatKind::Thread,
        _ => ChatKind::Group,
    };
    let title = chat["title"]
        .as_str()
        .map(str::to_owned)
        .or_else(|| person_name(chat));
    Some(Chat {
        id: id.to_string(),
        thread: topic.map(|t| t.to_string()),
        kind,
        title,
    })
}

/// "First Last", else the username.
fn person_name(person: &Value) -> Option<String> {
    let full = [&person["first_name"], &person["last_name"]]
        .iter()
        .filter_map(|part| part.as_str())
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    if full.is_empty() {
        person["username"].as_str().map(str::to_owned)
    } else {
        Some(full)
    }
}

/// The user who wrote, or the chat a message was sent as: a channel post,
/// an anonymous group admin, a linked channel's automatic forward. For those
/// Telegram fills `from` with a stand-in bot user (`GroupAnonymousBot`),
/// which must not make the message look like a bot's.
fn sender_of(message: &Value) -> Option<Sender> {
    if let Some(chat) = message.get("sender_chat").filter(|c| c.is_object()) {
        let id = chat["id"].as_i64()?;
        return Some(Sender {
            id: id.to_string(),
            name: chat["title"]
                .as_str()
                .map_or_else(|| id.to_string(), str::to_owned),
            is_bot: false,
        });
    }
    let user = message.get("from").filter(|u| u.is_object())?;
    let id = user["id"].as_i64()?;
    Some(Sender {
        id: id.to_string(),
        name: person_name(user).unwrap_or_else(|| id.to_string()),
        is_bot: user["is_bot"] == Value::Bool(true),
    })
}

/// How a sender is identified: Telegram's numeric ids are assigned by
/// Telegram and never reused, so both a user's id and a chat's (a channel or
/// an anonymous admin writing as the group, negative) are strong.
pub fn identity_of(sender: &Sender) -> SenderIdentity {
    let (kind, strength) = match sender.id.parse::<i64>() {
        Ok(id) if id > 0 => ("user-id", IdStrength::Strong),
        Ok(_) => ("chat-id", IdStrength::Strong),
        // Not an id this adapter makes: trusted for nothing.
        Err(_) => ("name", IdStrength::NameOnly),
    };
    SenderIdentity {
        kind: kind.into(),
        strength,
        also_known_as: Vec::new(),
    }
}

fn attachments_of(message: &Value) -> Vec<Attachment> {
    let mut attachments = Vec::new();
    // Telegram sends a photo in several sizes, smallest first.
    if let Some(largest) = message["photo"].as_array().and_then(|sizes| {
        sizes.iter().max_by_key(|size| {
            size["width"].as_u64().unwrap_or(0) * size["height"].as_u64().unwrap_or(0)
        })
    }) && let Some(attachment) = file_attachment(largest, "photo.jpg", "image/jpeg")
    {
        attachments.push(attachment);
    }
    for (field, default_name, default_mime) in [
        ("document", "document", "application/octet-stream"),
        ("audio", "audio", "audio/mpeg"),
        ("voice", "voice.ogg", "audio/ogg"),
        ("video", "video.mp4", "video/mp4"),
    ] {
        if let Some(attachment) = file_attachment(&message[field], default_name, default_mime) {
            attachments.push(attachment);
        }
    }
    attachments
}

fn file_attachment(file: &Value, default_name: &str, default_mime: &str) -> Option<Attachment> {
    let id = file["file_id"].as_str()?;
    Some(Attachment {
        id: id.to_owned(),
        name: file["file_name"]
            .as_str()
            .filter(|name| !name.is_empty())
            .unwrap_or(default_name)
            .to_owned(),
        mime: file["mime_type"]
            .as_str()
            .filter(|mime| !mime.is_empty())
            .unwrap_or(default_mime)
            .to_owned(),
        size: file["file_size"].as_u64(),
    })
}

/// Whether the bot was addressed, and the text without the bot's name.
///
/// Always in a private chat. Elsewhere: a mention of `@username`, a
/// `/command` (bare, or `/command@username`; one for another bot is not
/// ours), or a reply to one of the bot's messages. The mention and the
/// `@username` of a command are removed from the text.
pub fn addressing(
    text: &str,
    username: &str,
    kind: ChatKind,
    replies_to_bot: bool,
) -> (bool, String) {
    let mut addressed = matches!(kind, ChatKind::Dm) || replies_to_bot;
    let mut text = text.trim().to_owned();
    if let Some(rest) = text.strip_prefix('/') {
        let command_end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let command = &rest[..command_end];
        match command.split_once('@') {
            Some((name, target)) if target.eq_ignore_ascii_case(username) => {
                addressed = true;
                text = format!("/{name}{}", &rest[command_end..]);
            }
            Some(_) => {}
            None if !command.is_empty() => addressed = true,
            None => {}
        }
    }
    let (mentioned, stripped) = strip_mentions(&text, username);
    if mentioned {
        addressed = true;
        text = stripped;
    }
    (addressed, text)
}

/// Whether `@username` occurs as a whole mention, and the text without it
/// (with the comma or colon of "@bot, do this" and doubled spaces gone).
fn strip_mentions(text: &str, username: &str) -> (bool, String) {
    let is_name_char = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let needle = format!("@{}", username.to_ascii_lowercase());
    // ASCII lowercasing keeps byte offsets, so they index `text` too.
    let lower = text.to_ascii_lowercase();
    let mut kept = String::new();
    let mut mentioned = false;
    let mut copied_up_to = 0;
    let mut search_from = 0;
    while let Some(found) = lower[search_from..].find(&needle) {
        let start = search_from + found;
        let end = start + needle.len();
        let whole =
            !text[..start].ends_with(is_name_char) && !text[end..].starts_with(is_name_char);
        if whole {
            mentioned = true;
            kept.push_str(&text[copied_up_to..start]);
            copied_up_to = end;
            if text[end..].starts_with([',', ':']) {
                copied_up_to += 1;
            }
        }
        search_from = end;
    }
    if !mentioned {
        return (false, text.to_owned());
    }
    kept.push_str(&text[copied_up_to..]);
    let tidy = kept
        .split(' ')
        .filter(|word| !word.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    (true, tidy.trim().to_owned())
}

#[cfg(test)]
#[path = "inbound_tests.rs"]
mod tests;
