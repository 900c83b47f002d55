//! The host's own types for a chat connection (`chat-types` in chat.wit), so
//! that users of [`crate::ChatConnection`] need not know the bindings.

use std::time::Duration;

use crate::bindings::chat_identity_world::exports::talaria::plugin::chat_identity as identity;
use crate::bindings::chat_world::talaria::plugin::chat_types as wit;

/// What kind of conversation a chat is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChatKind {
    /// A direct conversation with one user.
    Dm,
    /// A group of users.
    Group,
    /// A channel (broadcast or many members).
    Channel,
    /// A thread inside a chat.
    Thread,
}

/// A chat a message came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chat {
    /// The platform's id of the chat.
    pub id: String,
    /// A thread or topic inside the chat, when the message is in one.
    pub thread: Option<String>,
    /// What kind of chat it is.
    pub kind: ChatKind,
    /// A display name, when the platform has one.
    pub title: Option<String>,
}

/// Who sent a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sender {
    /// Stable id of the user on the platform (what allowlists name).
    pub id: String,
    /// Display name.
    pub name: String,
    /// Another bot or a service: never answered.
    pub is_bot: bool,
    /// What kind of id `id` is and how far to trust it, as the adapter
    /// says (`chat-identity`, 0.1.3).
    pub identity: SenderIdentity,
}

/// How hard it is for someone else to be reported with a sender's id.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum IdStrength {
    /// The platform vouches for it (a services account, a numeric user id).
    Strong,
    /// Anyone with the same traits gets it (an IRC `nick!user@host`).
    Weak,
    /// Anyone may claim it once it is free (a bare nick): never matched
    /// against allowlists, never paired.
    NameOnly,
    /// The adapter does not say (a 0.1.2 component): taken at its word, as
    /// before 0.1.3.
    #[default]
    Unstated,
}

/// What the adapter says about a sender's id.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SenderIdentity {
    /// The platform's word for the kind of id (`account`, `mask`,
    /// `user-id`); empty when unstated.
    pub kind: String,
    /// How far to trust it.
    pub strength: IdStrength,
    /// Other names of the sender `allowed_users` entries may match.
    pub also_known_as: Vec<String>,
}

/// A file sent with a message, fetched with
/// [`crate::ChatConnection::fetch_attachment`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attachment {
    /// What `fetch_attachment` takes.
    pub id: String,
    /// The file name.
    pub name: String,
    /// MIME type (`application/octet-stream` when unknown).
    pub mime: String,
    /// Size in bytes, when the platform says.
    pub size: Option<u64>,
}

/// A message that arrived.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InboundMessage {
    /// Where.
    pub chat: Chat,
    /// From whom.
    pub sender: Sender,
    /// The text.
    pub text: String,
    /// The platform's id of the message, for replies.
    pub message_id: Option<String>,
    /// The message this one answers.
    pub reply_to: Option<String>,
    /// Whether the bot was addressed (always in a DM).
    pub addressed: bool,
    /// Files sent with it.
    pub attachments: Vec<Attachment>,
    /// The message an edit replaces (its text is the new text).
    pub edit_of: Option<String>,
    /// The platform's own payload as JSON (`null` when none).
    pub raw: String,
}

/// A message to send.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outbound {
    /// The chat to send to.
    pub chat_id: String,
    /// The thread inside it.
    pub thread: Option<String>,
    /// At most the capabilities' `max_message_length`.
    pub text: String,
    /// The message answered.
    pub reply_to: Option<String>,
    /// An earlier message of the bot to replace (when the platform edits).
    pub edit: Option<String>,
}

/// What became of a send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SendOutcome {
    /// Delivered, with the platform's id of the new message when it has one.
    Sent(Option<String>),
    /// Not now: try again after this long.
    Retryable(Duration),
    /// The chat is gone or the bot may not write there: never retry.
    DeadTarget(String),
    /// Any other failure: retry a few times with backoff.
    Failed(String),
}

/// How a platform counts a message's length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LengthUnit {
    /// Unicode scalar values.
    Chars,
    /// UTF-8 bytes.
    Bytes,
    /// UTF-16 code units.
    Utf16,
}

/// What a connection's platform can do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatCapabilities {
    /// The platform's name, as in `gateway.platforms.<name>`.
    pub platform: String,
    /// The longest message `send` takes.
    pub max_message_length: u32,
    /// How that length counts.
    pub length_unit: LengthUnit,
    /// Markdown is rendered.
    pub markdown: bool,
    /// `Outbound::edit` works.
    pub edit: bool,
    /// `typing` shows something.
    pub typing: bool,
    /// One line for the system prompt on writing for this platform.
    pub prompt_hint: String,
}

/// What `chat_info` tells about a chat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatDetails {
    /// The chat.
    pub chat: Chat,
    /// Number of members, when known.
    pub members: Option<u32>,
    /// Its topic or description.
    pub topic: Option<String>,
}

/// An HTTP request that reached the gateway's webhook route of the platform.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WebhookRequest {
    /// `GET`, `POST`…
    pub method: String,
    /// The path below the route, with its query.
    pub path: String,
    /// Its headers.
    pub headers: Vec<(String, String)>,
    /// Its body.
    pub body: Vec<u8>,
}

/// The adapter's answer to a webhook request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookResponse {
    /// HTTP status.
    pub status: u16,
    /// Headers.
    pub headers: Vec<(String, String)>,
    /// Body.
    pub body: Vec<u8>,
}

impl From<wit::ChatKind> for ChatKind {
    fn from(kind: wit::ChatKind) -> Self {
        match kind {
            wit::ChatKind::Dm => Self::Dm,
            wit::ChatKind::Group => Self::Group,
            wit::ChatKind::Channel => Self::Channel,
            wit::ChatKind::Thread => Self::Thread,
        }
    }
}

impl From<wit::Chat> for Chat {
    fn from(chat: wit::Chat) -> Self {
        Self {
            id: chat.id,
            thread: chat.thread,
            kind: chat.kind.into(),
            title: chat.title,
        }
    }
}

impl From<wit::InboundMessage> for InboundMessage {
    fn from(m: wit::InboundMessage) -> Self {
        Self {
            chat: m.chat.into(),
            sender: Sender {
                id: m.sender.id,
                name: m.sender.name,
                is_bot: m.sender.is_bot,
                identity: SenderIdentity::default(),
            },
            text: m.text,
            message_id: m.message_id,
            reply_to: m.reply_to,
            addressed: m.addressed,
            attachments: m
                .attachments
                .into_iter()
                .map(|a| Attachment {
                    id: a.id,
                    name: a.name,
                    mime: a.mime,
                    size: a.size,
                })
                .collect(),
            edit_of: m.edit_of,
            raw: m.raw,
        }
    }
}

impl From<Outbound> for wit::Outbound {
    fn from(o: Outbound) -> Self {
        Self {
            chat_id: o.chat_id,
            thread: o.thread,
            text: o.text,
            reply_to: o.reply_to,
            edit: o.edit,
        }
    }
}

impl From<wit::SendOutcome> for SendOutcome {
    fn from(outcome: wit::SendOutcome) -> Self {
        match outcome {
            wit::SendOutcome::Sent(id) => Self::Sent(id),
            wit::SendOutcome::Retryable(ms) => Self::Retryable(Duration::from_millis(ms)),
            wit::SendOutcome::DeadTarget(why) => Self::DeadTarget(why),
            wit::SendOutcome::Failed(why) => Self::Failed(why),
        }
    }
}

impl From<wit::Capabilities> for ChatCapabilities {
    fn from(c: wit::Capabilities) -> Self {
        Self {
            platform: c.platform,
            max_message_length: c.max_message_length,
            length_unit: match c.length_unit {
                wit::LengthUnit::Chars => LengthUnit::Chars,
                wit::LengthUnit::Bytes => LengthUnit::Bytes,
                wit::LengthUnit::Utf16 => LengthUnit::Utf16,
            },
            markdown: c.markdown,
            edit: c.edit,
            typing: c.typing,
            prompt_hint: c.prompt_hint,
        }
    }
}

impl From<wit::ChatDetails> for ChatDetails {
    fn from(d: wit::ChatDetails) -> Self {
        Self {
            chat: d.chat.into(),
            members: d.members,
            topic: d.topic,
        }
    }
}

impl From<WebhookRequest> for wit::WebhookRequest {
    fn from(r: WebhookRequest) -> Self {
        Self {
            method: r.method,
            path: r.path,
            headers: r.headers,
            body: r.body,
        }
    }
}

impl From<wit::WebhookResponse> for WebhookResponse {
    fn from(r: wit::WebhookResponse) -> Self {
        Self {
            status: r.status,
            headers: r.headers,
            body: r.body,
        }
    }
}

impl From<identity::SenderIdentity> for SenderIdentity {
    fn from(i: identity::SenderIdentity) -> Self {
        Self {
            kind: i.kind,
            strength: match i.strength {
                identity::IdStrength::Strong => IdStrength::Strong,
                identity::IdStrength::Weak => IdStrength::Weak,
                identity::IdStrength::NameOnly => IdStrength::NameOnly,
            },
            also_known_as: i.also_known_as,
        }
    }
}
