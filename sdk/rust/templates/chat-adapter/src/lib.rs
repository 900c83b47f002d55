//! A Talaria chat adapter for a plain-text line chat over TCP: a small,
//! working adapter to start from (`talaria plugin new NAME --kind adapter`).
//!
//! The protocol, one message per line (UTF-8, LF or CRLF):
//!
//! - on connecting, the adapter signs in with `HELLO <nick>`;
//! - `<user>: <text>` from the server is a direct message from `<user>`;
//! - `#<room> <user>: <text>` is a message in the group chat `#<room>`; it
//!   addresses the bot when the text starts with `<nick>:` or `<nick>,`;
//! - the adapter writes `@<chat> <text>` for each line of an answer, and
//!   signs off with `BYE`.
//!
//! To speak another protocol, change [`parse_line`] and [`outgoing_lines`]
//! (the wire format), [`Settings`] (what config.yaml says) and
//! `capabilities`. The host does the rest: who may talk to the agent,
//! sessions, splitting long answers, retries and reconnecting.

use std::cell::RefCell;
use std::time::Duration;

use talaria_plugin_sdk::chat::{ConnectionError, LineConnection, Woken};
use talaria_plugin_sdk::chat_bindings::exports::talaria::plugin::chat_adapter::Connection;
use talaria_plugin_sdk::chat_types::{
    Capabilities, Chat, ChatDetails, ChatKind, InboundMessage, LengthUnit, Outbound, SendOutcome,
    Sender, WebhookRequest, WebhookResponse,
};
use talaria_plugin_sdk::{
    ChatAdapter, ChatConnection, ChatIdentity, IdStrength, SenderIdentity, config, log, serde_json,
};

/// The platform's name: its key in config.yaml (`gateway.platforms.<name>`).
/// The crate's name, which is the plugin's.
const PLATFORM: &str = env!("CARGO_PKG_NAME");

/// The defaults of the settings (plugin.toml's network grant names this
/// host and port).
const DEFAULT_HOST: &str = "127.0.0.1";
const DEFAULT_PORT: u16 = 7777;
const DEFAULT_NICK: &str = "talaria";

/// The longest line read from the server; longer ones are dropped.
const MAX_INBOUND_LINE: usize = 4096;
/// The longest text `send` is given (the host splits longer answers).
const MAX_MESSAGE_BYTES: u32 = 1000;
/// How long connecting may take (within the host's 30 s call limit).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The adapter's settings: the plugin's config section, i.e. the keys of
/// `gateway.platforms.<name>` the host does not use itself, every value a
/// string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// The chat server's host name or address.
    pub host: String,
    pub port: u16,
    /// The bot's name on the server.
    pub nick: String,
}

impl Settings {
    /// Reads the settings through `get` (a config lookup, `None` when unset).
    pub fn load(get: impl Fn(&str) -> Option<String>) -> Result<Self, String> {
        let value = |key: &str| {
            get(key)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        let host = value("host").unwrap_or_else(|| DEFAULT_HOST.to_owned());
        if host.contains(char::is_whitespace) {
            return Err(format!("{PLATFORM}: `host` {host:?} contains spaces"));
        }
        let port = match value("port") {
            None => DEFAULT_PORT,
            Some(raw) => raw
                .parse::<u16>()
                .ok()
                .filter(|&port| port != 0)
                .ok_or_else(|| format!("{PLATFORM}: `port` {raw:?} is not a port number"))?,
        };
        let nick = value("nick").unwrap_or_else(|| DEFAULT_NICK.to_owned());
        if !valid_name(&nick) {
            return Err(format!(
                "{PLATFORM}: `nick` {nick:?} must be a word without ':' or ',' (and not start with # or @)"
            ));
        }
        Ok(Self { host, port, nick })
    }
}

/// A user's name: one word, without the characters the protocol uses.
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(['#', '@'])
        && !name.contains(|c: char| c.is_whitespace() || c.is_control() || c == ':' || c == ',')
}

/// A chat: a user (direct messages) or `#room`.
fn valid_chat(chat: &str) -> bool {
    match chat.strip_prefix('#') {
        Some(room) => valid_name(room),
        None => valid_name(chat),
    }
}

/// The message a line from the server carries, if it is one (other lines,
/// such as a server's greeting, are not). The bot's own lines (from `nick`)
/// are not messages either.
pub fn parse_line(line: &str, nick: &str) -> Option<InboundMessage> {
    let (room, rest) = if line.starts_with('#') {
        let (room, rest) = line.split_once(' ')?;
        (Some(room), rest)
    } else {
        (None, line)
    };
    let (user, text) = rest.split_once(':')?;
    let text = text.trim();
    if !valid_name(user) || user == nick {
        return None;
    }
    let (chat, kind, addressed, text) = match room {
        None => (user, ChatKind::Dm, true, text),
        Some(room) if valid_chat(room) => match mention(text, nick) {
            Some(rest) => (room, ChatKind::Group, true, rest),
            None => (room, ChatKind::Group, false, text),
        },
        Some(_) => return None,
    };
    if text.is_empty() {
        return None;
    }
    Some(InboundMessage {
        chat: Chat {
            id: chat.to_owned(),
            thread: None,
            kind,
            title: None,
        },
        sender: Sender {
            id: user.to_owned(),
            name: user.to_owned(),
            is_bot: false,
        },
        text: text.to_owned(),
        message_id: None,
        reply_to: None,
        // Always true in a DM; in a group, the host answers unaddressed
        // messages only where the user configured it.
        addressed,
        attachments: Vec::new(),
        edit_of: None,
        // The platform's own payload, for hooks: here the line itself.
        raw: serde_json::Value::String(line.to_owned()).to_string(),
    })
}

/// The text after `nick:` or `nick,` at its start, when it names the bot.
fn mention<'a>(text: &'a str, nick: &str) -> Option<&'a str> {
    let rest = text.strip_prefix(nick)?;
    let rest = rest.strip_prefix(':').or_else(|| rest.strip_prefix(','))?;
    Some(rest.trim_start())
}

/// The lines that send `text` to `chat`: one `@<chat> <line>` per line of
/// text that is not blank (a line break inside a line would end it early).
pub fn outgoing_lines(chat: &str, text: &str) -> Vec<String> {
    text.lines()
        .map(|line| line.replace(['\r', '\0'], " "))
        .filter(|line| !line.trim().is_empty())
        .map(|line| format!("@{chat} {}", line.trim_end()))
        .collect()
}

pub struct Adapter;

impl ChatAdapter for Adapter {
    type Connection = LineChat;

    fn platform() -> String {
        PLATFORM.to_owned()
    }
}

/// How the adapter identifies senders. The host binds sessions, pairing and
/// `allowed_users` to `sender.id`, trusting it as far as this says: here the
/// server names each user, so an id is as strong as the server's sign-in.
/// Say `Strong` for an account or a numeric id the platform vouches for, and
/// `NameOnly` for a name anyone may take once it is free (the host then
/// never matches or pairs it).
impl ChatIdentity for Adapter {
    fn identify(_message: InboundMessage) -> SenderIdentity {
        SenderIdentity {
            kind: "user".into(),
            strength: IdStrength::Weak,
            also_known_as: Vec::new(),
        }
    }

    /// An `allowed_users` entry must be a user name as the server sends it.
    fn check_allowed_user(entry: String) -> Result<(), String> {
        if entry.is_empty() || entry.contains(char::is_whitespace) {
            return Err(format!("{entry:?} is not a user name (no spaces)"));
        }
        Ok(())
    }
}

/// The `connection` resource: one open connection to the server. The host
/// never calls it from two places at once, so the `RefCell` is never
/// contended.
pub struct LineChat {
    line: RefCell<LineConnection>,
    nick: String,
}

impl ChatConnection for LineChat {
    /// Connects and signs in. After a lost connection the host calls this
    /// again, with backoff; `attempt` counts the tries since the last success.
    fn open(attempt: u32) -> Result<Connection, String> {
        talaria_plugin_sdk::install_panic_hook();
        let settings = Settings::load(|key| config::get(key).ok().flatten())?;
        log::info(format!(
            "connecting to {}:{} as {} (attempt {attempt})",
            settings.host, settings.port, settings.nick
        ));
        let mut line = LineConnection::connect_tcp(
            &settings.host,
            settings.port,
            CONNECT_TIMEOUT,
            MAX_INBOUND_LINE,
        )
        .map_err(lost)?;
        line.write_line(&format!("HELLO {}", settings.nick))
            .map_err(lost)?;
        Ok(Connection::new(Self {
            line: RefCell::new(line),
            nick: settings.nick,
        }))
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            platform: PLATFORM.to_owned(),
            max_message_length: MAX_MESSAGE_BYTES,
            length_unit: LengthUnit::Bytes,
            markdown: false,
            edit: false,
            typing: false,
            prompt_hint: "This chat shows plain text only (no Markdown); keep answers short, \
                          each line arrives as a message of its own."
                .to_owned(),
        }
    }

    /// The messages that arrived: those already there, else the first to
    /// arrive within `timeout_ms`. Returns early, maybe with none, when the
    /// host has work (a message to send); an error means the connection is
    /// lost, and the host opens a new one.
    fn next_events(&self, timeout_ms: u32) -> Result<Vec<InboundMessage>, String> {
        let mut line = self.line.borrow_mut();
        let mut messages = self.read_messages(&mut line)?;
        if messages.is_empty()
            && line.wait(Duration::from_millis(timeout_ms.into())) == Woken::Readable
        {
            messages = self.read_messages(&mut line)?;
        }
        Ok(messages)
    }

    fn send(&self, message: Outbound) -> SendOutcome {
        if !valid_chat(&message.chat_id) {
            return SendOutcome::DeadTarget(format!(
                "{:?} is neither a user nor a #room",
                message.chat_id
            ));
        }
        let mut line = self.line.borrow_mut();
        for out in outgoing_lines(&message.chat_id, &message.text) {
            if let Err(error) = line.write_line(&out) {
                return SendOutcome::Failed(lost(error));
            }
        }
        SendOutcome::Sent(None)
    }

    /// The protocol shows no typing.
    fn typing(&self, _chat_id: String, _thread: Option<String>) {}

    fn chat_info(&self, chat_id: String) -> Result<ChatDetails, String> {
        if !valid_chat(&chat_id) {
            return Err(format!("{chat_id:?} is neither a user nor a #room"));
        }
        let kind = if chat_id.starts_with('#') {
            ChatKind::Group
        } else {
            ChatKind::Dm
        };
        Ok(ChatDetails {
            chat: Chat {
                id: chat_id,
                thread: None,
                kind,
                title: None,
            },
            members: None,
            topic: None,
        })
    }

    fn fetch_attachment(&self, _id: String, _max_bytes: u64) -> Result<Vec<u8>, String> {
        Err(format!("{PLATFORM} has no attachments"))
    }

    fn webhook(&self, _request: WebhookRequest) -> (WebhookResponse, Vec<InboundMessage>) {
        let response = WebhookResponse {
            status: 404,
            headers: vec![("content-type".into(), "text/plain".into())],
            body: format!("{PLATFORM} has no webhooks").into_bytes(),
        };
        (response, Vec::new())
    }

    fn close(&self) {
        // Best effort: the server may be gone already.
        let _ = self.line.borrow_mut().write_line("BYE");
    }
}

impl LineChat {
    /// Every message among the complete lines received so far.
    fn read_messages(&self, line: &mut LineConnection) -> Result<Vec<InboundMessage>, String> {
        let mut messages = Vec::new();
        while let Some(raw) = line.read_line().map_err(lost)? {
            match parse_line(&raw, &self.nick) {
                Some(message) => messages.push(message),
                None => log::debug(format!("ignored the line {raw:?}")),
            }
        }
        Ok(messages)
    }
}

fn lost(error: ConnectionError) -> String {
    format!("{PLATFORM}: connection lost: {error}")
}

#[cfg(target_arch = "wasm32")]
talaria_plugin_sdk::chat_bindings::__export_chat_adapter_plugin!(
    Adapter with_types_in talaria_plugin_sdk::chat_bindings
);

// The protocol is plain Rust: `cargo test` runs these natively.
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_from_a_user_is_an_addressed_direct_message() {
        let message = parse_line("ann: hello there", "talaria").unwrap();
        assert_eq!(message.chat.id, "ann");
        assert!(matches!(message.chat.kind, ChatKind::Dm));
        assert_eq!(message.sender.id, "ann");
        assert_eq!(message.text, "hello there");
        assert!(message.addressed);
        assert_eq!(message.raw, r#""ann: hello there""#);
    }

    #[test]
    fn in_a_room_only_a_mention_addresses_the_bot() {
        let asked = parse_line("#team ann: talaria, what time is it?", "talaria").unwrap();
        assert_eq!(asked.chat.id, "#team");
        assert!(matches!(asked.chat.kind, ChatKind::Group));
        assert!(asked.addressed);
        assert_eq!(asked.text, "what time is it?");
        let chatter = parse_line("#team ann: lunch?", "talaria").unwrap();
        assert!(!chatter.addressed);
        assert_eq!(chatter.text, "lunch?");
    }

    #[test]
    fn other_lines_and_the_bots_own_are_not_messages() {
        for line in [
            "welcome to the chat",
            "talaria: an echo of our own",
            "ann:   ",
            "#team nobody",
            "# ann: hi",
            "two words: hi",
        ] {
            assert!(parse_line(line, "talaria").is_none(), "{line:?}");
        }
    }

    #[test]
    fn an_answer_becomes_one_line_per_line_of_text() {
        assert_eq!(
            outgoing_lines("ann", "first\r\n\nsecond\rhalf\n"),
            ["@ann first", "@ann second half"]
        );
        assert!(outgoing_lines("#team", " \n").is_empty());
    }

    #[test]
    fn settings_have_defaults_and_bad_values_are_explained() {
        let none = Settings::load(|_| None).unwrap();
        assert_eq!(
            none,
            Settings {
                host: DEFAULT_HOST.into(),
                port: DEFAULT_PORT,
                nick: DEFAULT_NICK.into()
            }
        );
        let set = Settings::load(|key| match key {
            "host" => Some("chat.example.org".into()),
            "port" => Some("7000".into()),
            "nick" => Some("bot".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(
            (set.host.as_str(), set.port, set.nick.as_str()),
            ("chat.example.org", 7000, "bot")
        );
        let error = Settings::load(|key| (key == "port").then(|| "seventy".into())).unwrap_err();
        assert!(error.contains("`port` \"seventy\""), "{error}");
        let error = Settings::load(|key| (key == "nick").then(|| "a b".into())).unwrap_err();
        assert!(error.contains("`nick`"), "{error}");
    }
}
