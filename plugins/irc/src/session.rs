//! The IRC client's protocol state, free of I/O: lines in, [`Event`]s out.
//! Registration (CAP, PASS/NICK/USER, nick-in-use retries), PING, joining
//! after the welcome and rejoining after a kick, and turning `PRIVMSG`s into
//! inbound messages from identified senders ([`crate::identity`]) are
//! handled here; the component only moves lines.

use std::collections::BTreeMap;

use talaria_plugin_sdk::chat_types::{
    Capabilities, Chat, ChatDetails, ChatKind, InboundMessage, LengthUnit, Sender,
};

use crate::identity::{ACCOUNT_CAPS, Decided, Identities};
use crate::message::{Line, fold, is_channel, parse, same_name, strip_formatting};
use crate::outgoing::{CHANNEL_BUDGET, text_limit};
use crate::settings::Settings;

/// How many underscores a nick in use gets before registration gives up.
const MAX_NICK_RETRIES: usize = 9;

/// What a line asks the component to do.
#[derive(Debug, Clone)]
pub enum Event {
    /// Write this line now (protocol replies go around flood control).
    Send(String),
    /// The server welcomed us (RPL_WELCOME): the connection is usable.
    Registered,
    /// A message for the host.
    Message(Box<InboundMessage>),
    /// Worth a line in the host's log (a failed join, an unknown target).
    Warn(String),
    /// The server ended or refused the session.
    Fatal(String),
}

/// A channel the bot is in.
#[derive(Debug, Default, Clone)]
struct Channel {
    name: String,
    topic: Option<String>,
    members: Option<u32>,
    /// Names counted from RPL_NAMREPLY until RPL_ENDOFNAMES.
    counting: u32,
}

#[derive(Debug)]
pub struct Session {
    settings: Settings,
    nick: String,
    nick_retries: usize,
    registered: bool,
    /// By folded name.
    channels: BTreeMap<String, Channel>,
    /// Senders' accounts, and messages waiting for a `WHOIS`.
    identities: Identities,
    /// Account capabilities the server offers, gathered over `CAP LS` lines.
    offered: Vec<String>,
    /// Milliseconds on the component's monotonic clock, as of the last [`Session::tick`].
    now_ms: u64,
}

impl Session {
    pub fn new(settings: Settings) -> Self {
        Self {
            nick: settings.nick.clone(),
            settings,
            nick_retries: 0,
            registered: false,
            channels: BTreeMap::new(),
            identities: Identities::default(),
            offered: Vec::new(),
            now_ms: 0,
        }
    }

    /// The time is `now_ms`: messages that waited too long for a `WHOIS`
    /// go on without it.
    pub fn tick(&mut self, now_ms: u64) -> Vec<Event> {
        self.now_ms = now_ms;
        self.identities
            .overdue(now_ms)
            .into_iter()
            .map(|message| Event::Message(Box::new(message)))
            .collect()
    }

    /// Milliseconds until [`Session::tick`] has a message to let go.
    pub fn next_tick_in(&self, now_ms: u64) -> Option<u64> {
        self.identities.next_due_in(now_ms)
    }

    /// The account capabilities the server acknowledged.
    pub fn caps(&self) -> crate::identity::Caps {
        self.identities.caps
    }

    /// The nick the server knows us by.
    pub fn nick(&self) -> &str {
        &self.nick
    }

    pub fn is_registered(&self) -> bool {
        self.registered
    }

    /// The channels joined, as the server spelled them.
    pub fn joined(&self) -> Vec<&str> {
        self.channels.values().map(|c| c.name.as_str()).collect()
    }

    /// The registration lines, sent once connected. `CAP LS` first: a server
    /// that knows it holds the welcome until `CAP END`, one that does not
    /// answers 421 and goes on.
    pub fn registration(&self) -> Vec<String> {
        let mut lines = vec!["CAP LS 302".to_owned()];
        if let Some(password) = &self.settings.password {
            lines.push(format!("PASS :{password}"));
        }
        lines.push(format!("NICK {}", self.nick));
        lines.push(format!(
            "USER {} 0 * :{}",
            self.settings.username(),
            self.settings.realname
        ));
        lines
    }

    /// The goodbye.
    pub fn quit_line() -> &'static str {
        "QUIT :Talaria signing off"
    }

    pub fn capabilities(&self) -> Capabilities {
        let longest_channel = self
            .settings
            .channels
            .iter()
            .map(String::len)
            .max()
            .unwrap_or(0);
        let limit = text_limit(&self.nick, longest_channel.max(CHANNEL_BUDGET));
        Capabilities {
            platform: "irc".into(),
            max_message_length: u32::try_from(limit).unwrap_or(u32::MAX),
            length_unit: LengthUnit::Bytes,
            markdown: false,
            edit: false,
            typing: false,
            prompt_hint: "This is IRC: plain text only, no Markdown or code fences; keep lines short, a few lines per answer.".into(),
        }
    }

    /// What is known about `chat_id`: a channel's topic and member count
    /// (from the server's replies since joining), or a direct chat.
    pub fn chat_details(&self, chat_id: &str) -> ChatDetails {
        let channel = self.channels.get(&fold(chat_id));
        ChatDetails {
            chat: Chat {
                id: chat_id.to_owned(),
                thread: None,
                kind: if is_channel(chat_id) {
                    ChatKind::Channel
                } else {
                    ChatKind::Dm
                },
                title: is_channel(chat_id).then(|| chat_id.to_owned()),
            },
            members: channel.and_then(|c| c.members),
            topic: channel.and_then(|c| c.topic.clone()),
        }
    }

    /// Handles one line from the server.
    pub fn handle(&mut self, raw: &str) -> Vec<Event> {
        let Some(line) = parse(raw) else {
            return Vec::new();
        };
        match line.command.as_str() {
            "PING" => vec![Event::Send(format!("PONG :{}", line.param(0)))],
            "ERROR" => vec![Event::Fatal(format!(
                "the server closed the session: {}",
                line.param(0)
            ))],
            "001" => self.welcome(&line),
            "433" | "436" if !self.registered => self.retry_nick(),
            "432" if !self.registered => vec![Event::Fatal(format!(
                "the server refuses the nick {}: {}",
                self.nick,
                line.param(2)
            ))],
            "464" | "465" => vec![Event::Fatal(format!(
                "the server refuses the connection: {}",
                line.params.last().map_or("", String::as_str)
            ))],
            "CAP" => self.cap(&line),
            "NICK" => {
                if line.source_nick().is_some_and(|n| same_name(n, &self.nick)) {
                    self.nick = line.param(0).to_owned();
                } else if let Some(old) = line.source_nick() {
                    self.identities.renamed(old, line.param(0));
                }
                Vec::new()
            }
            "JOIN" => {
                if self.is_me(&line) {
                    let name = line.param(0).to_owned();
                    self.channels.insert(
                        fold(&name),
                        Channel {
                            name,
                            ..Channel::default()
                        },
                    );
                } else if let Some(prefix) = &line.prefix {
                    // extended-join: `JOIN #chan account :realname`.
                    let account = (line.params.len() >= 2).then(|| line.param(1));
                    self.identities.joined(prefix, account);
                }
                Vec::new()
            }
            "PART" => {
                if self.is_me(&line) {
                    self.channels.remove(&fold(line.param(0)));
                    self.identities.forget_members();
                } else if let Some(nick) = line.source_nick() {
                    self.identities.left(nick);
                }
                Vec::new()
            }
            "QUIT" => {
                if let Some(nick) = line.source_nick() {
                    self.identities.left(nick);
                }
                Vec::new()
            }
            "ACCOUNT" => {
                if let Some(prefix) = &line.prefix {
                    self.identities.account_changed(prefix, line.param(0));
                }
                Vec::new()
            }
            "311" => {
                // RPL_WHOISUSER: me, nick, user, host, *, realname.
                self.identities
                    .whois_user(line.param(1), line.param(2), line.param(3));
                Vec::new()
            }
            "330" => {
                // RPL_WHOISACCOUNT: me, nick, account.
                self.identities.whois_account(line.param(1), line.param(2));
                Vec::new()
            }
            "318" => self
                .identities
                .whois_end(line.param(1))
                .into_iter()
                .map(|message| Event::Message(Box::new(message)))
                .collect(),
            // The sender of a message asked about left already: 318 follows.
            "401" if self.identities.asking(line.param(1)) => Vec::new(),
            "KICK" => self.kicked(&line),
            "TOPIC" => {
                self.set_topic(line.param(0), line.param(1));
                Vec::new()
            }
            "332" => {
                self.set_topic(line.param(1), line.param(2));
                Vec::new()
            }
            "353" => {
                // RPL_NAMREPLY: me, channel type, channel, names.
                if let Some(channel) = self.channels.get_mut(&fold(line.param(2))) {
                    let names = line.param(3).split_whitespace().count();
                    channel.counting += u32::try_from(names).unwrap_or(0);
                }
                Vec::new()
            }
            "366" => {
                if let Some(channel) = self.channels.get_mut(&fold(line.param(1))) {
                    channel.members = Some(channel.counting);
                    channel.counting = 0;
                }
                Vec::new()
            }
            "401" | "403" | "404" | "471" | "473" | "474" | "475" => {
                vec![Event::Warn(format!("{}: {}", line.param(1), line.param(2)))]
            }
            "PRIVMSG" => self.privmsg(&line, raw),
            _ => Vec::new(),
        }
    }

    /// Capability negotiation: the account capabilities the server offers
    /// are requested, and registration goes on once it answered.
    fn cap(&mut self, line: &Line) -> Vec<Event> {
        // `CAP <nick or *> <subcommand> [*] :<capabilities>`
        let names = line.params.last().map_or("", String::as_str);
        let names = names
            .split_whitespace()
            .map(|cap| cap.split_once('=').map_or(cap, |(name, _)| name));
        match line.param(1).to_ascii_uppercase().as_str() {
            "LS" => {
                self.offered.extend(
                    names
                        .filter(|name| ACCOUNT_CAPS.contains(name))
                        .map(str::to_owned),
                );
                let more = line.params.len() >= 4 && line.param(2) == "*";
                if more || self.registered {
                    return Vec::new();
                }
                let wanted: Vec<&str> = ACCOUNT_CAPS
                    .into_iter()
                    .filter(|cap| self.offered.iter().any(|o| o == cap))
                    .collect();
                self.offered.clear();
                if wanted.is_empty() {
                    vec![Event::Send("CAP END".into())]
                } else {
                    vec![Event::Send(format!("CAP REQ :{}", wanted.join(" ")))]
                }
            }
            "ACK" => {
                for name in names {
                    match name.strip_prefix('-') {
                        Some(name) => self.identities.caps.set(name, false),
                        None => self.identities.caps.set(name, true),
                    }
                }
                self.cap_end()
            }
            "NAK" => self.cap_end(),
            "DEL" => {
                for name in names {
                    self.identities.caps.set(name, false);
                }
                Vec::new()
            }
            _ => Vec::new(),
        }
    }

    fn cap_end(&self) -> Vec<Event> {
        if self.registered {
            Vec::new()
        } else {
            vec![Event::Send("CAP END".into())]
        }
    }

    fn is_me(&self, line: &Line) -> bool {
        line.source_nick().is_some_and(|n| same_name(n, &self.nick))
    }

    fn welcome(&mut self, line: &Line) -> Vec<Event> {
        self.registered = true;
        // The server may have cut the nick to its NICKLEN: it says which.
        if !line.param(0).is_empty() {
            self.nick = line.param(0).to_owned();
        }
        let mut events = vec![Event::Registered];
        events.extend(
            self.settings
                .channels
                .iter()
                .map(|channel| Event::Send(format!("JOIN {channel}"))),
        );
        events
    }

    fn retry_nick(&mut self) -> Vec<Event> {
        if self.nick_retries >= MAX_NICK_RETRIES {
            return vec![Event::Fatal(format!(
                "the nicks {}…{} are all in use",
                self.settings.nick, self.nick
            ))];
        }
        self.nick_retries += 1;
        self.nick = format!("{}{}", self.settings.nick, "_".repeat(self.nick_retries));
        vec![Event::Send(format!("NICK {}", self.nick))]
    }

    fn kicked(&mut self, line: &Line) -> Vec<Event> {
        let channel = line.param(0);
        if !same_name(line.param(1), &self.nick) {
            self.identities.left(line.param(1));
            return Vec::new();
        }
        self.channels.remove(&fold(channel));
        self.identities.forget_members();
        vec![
            Event::Warn(format!(
                "kicked from {channel} by {}: {}",
                line.source_nick().unwrap_or("?"),
                line.param(2)
            )),
            Event::Send(format!("JOIN {channel}")),
        ]
    }

    fn set_topic(&mut self, channel: &str, topic: &str) {
        if let Some(known) = self.channels.get_mut(&fold(channel)) {
            known.topic = (!topic.is_empty()).then(|| topic.to_owned());
        }
    }

    /// A `PRIVMSG` as a message, once its sender is identified (at once, or
    /// after the `WHOIS` this asks for).
    fn privmsg(&mut self, line: &Line, raw: &str) -> Vec<Event> {
        let Some(message) = self.privmsg_message(line, raw) else {
            return Vec::new();
        };
        let Some(prefix) = &line.prefix else {
            return Vec::new();
        };
        match self
            .identities
            .identify(message, prefix, line.tag("account"), self.now_ms)
        {
            Decided::Ready(message) => vec![Event::Message(message)],
            Decided::Asking(Some(whois)) => vec![Event::Send(whois)],
            Decided::Asking(None) => Vec::new(),
        }
    }

    /// The message a `PRIVMSG` carries, its sender not yet identified.
    fn privmsg_message(&self, line: &Line, raw: &str) -> Option<InboundMessage> {
        let prefix = line.prefix.as_ref()?;
        if same_name(&prefix.nick, &self.nick) || line.params.len() < 2 {
            return None;
        }
        let target = line.param(0);
        let mut text = line.param(1).to_owned();
        if let Some(ctcp) = text.strip_prefix('\x01') {
            let ctcp = ctcp.strip_suffix('\x01').unwrap_or(ctcp);
            // Only ACTION (/me) is a message; VERSION, PING and the rest are not.
            let action = ctcp
                .strip_prefix("ACTION")
                .filter(|rest| rest.is_empty() || rest.starts_with(' '))?;
            text = format!("* {}{action}", prefix.nick);
        }
        let mut text = strip_formatting(&text);
        let in_channel = is_channel(target);
        let addressed = if in_channel {
            match strip_address(&text, &self.nick) {
                Some(rest) => {
                    text = rest.to_owned();
                    true
                }
                None => false,
            }
        } else {
            true
        };
        let chat = if in_channel {
            Chat {
                id: target.to_owned(),
                thread: None,
                kind: ChatKind::Channel,
                title: Some(target.to_owned()),
            }
        } else {
            Chat {
                id: prefix.nick.clone(),
                thread: None,
                kind: ChatKind::Dm,
                title: None,
            }
        };
        let tags: serde_json::Map<String, serde_json::Value> = line
            .tags
            .iter()
            .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
            .collect();
        let raw_json = serde_json::json!({
            "line": raw,
            "tags": tags,
            "nick": prefix.nick,
            "user": prefix.user,
            "host": prefix.host,
            "target": target,
        });
        Some(InboundMessage {
            chat,
            sender: Sender {
                // Replaced by the identified id before the message leaves.
                id: prefix.nick.clone(),
                name: prefix.nick.clone(),
                // IRCv3 bot mode marks bots' messages; plain IRC cannot tell.
                is_bot: line.tag("bot").is_some() || line.tag("draft/bot").is_some(),
            },
            text,
            message_id: line.tag("msgid").map(str::to_owned),
            reply_to: line.tag("+draft/reply").map(str::to_owned),
            addressed,
            attachments: Vec::new(),
            edit_of: None,
            raw: raw_json.to_string(),
        })
    }
}

/// The text after a leading `nick:` or `nick,` (casemapped), spaces trimmed.
pub fn strip_address<'a>(text: &'a str, nick: &str) -> Option<&'a str> {
    let head = text.get(..nick.len())?;
    if !same_name(head, nick) {
        return None;
    }
    let rest = text.get(nick.len()..)?;
    let rest = rest.strip_prefix(':').or_else(|| rest.strip_prefix(','))?;
    Some(rest.trim_start())
}

#[cfg(test)]
#[path = "session_tests.rs"]
mod tests;
