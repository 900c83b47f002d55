//! Who wrote a message, beyond the nick anyone may take once it is free.
//!
//! A sender is identified by their services account when the server says
//! which one they are signed in to — the `account` tag on the message
//! (IRCv3 `account-tag`), the accounts of channel members followed through
//! `extended-join` and `account-notify`, or else a `WHOIS` (numeric 330)
//! whose user and host match the message's — and otherwise by their whole
//! `nick!user@host`. The sender id is `$a:ACCOUNT` or that mask, folded to
//! lower case, so sessions, pairing, approvals and `clarify` follow the
//! person and not the nick. A message waits for its `WHOIS` only when it
//! addresses the bot; the rest go on at once.

use std::collections::BTreeMap;

use talaria_plugin_sdk::chat_types::InboundMessage;
use talaria_plugin_sdk::{IdStrength, SenderIdentity};

use crate::message::{Prefix, fold};

/// How long a message waits for its sender's `WHOIS` before it goes on,
/// identified by its mask.
pub const WHOIS_PATIENCE_MS: u64 = 10_000;

/// The IRCv3 capabilities that tell accounts, in the order requested.
pub const ACCOUNT_CAPS: [&str; 3] = ["account-tag", "extended-join", "account-notify"];

/// The prefix of an account id and of `allowed_users` entries naming one.
pub const ACCOUNT_PREFIX: &str = "$a:";

/// The capabilities the server acknowledged.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    pub account_tag: bool,
    pub extended_join: bool,
    pub account_notify: bool,
}

impl Caps {
    /// Sets or clears `name` (an `ACK` or `DEL`); other names are ignored.
    pub fn set(&mut self, name: &str, on: bool) {
        match name {
            "account-tag" => self.account_tag = on,
            "extended-join" => self.extended_join = on,
            "account-notify" => self.account_notify = on,
            _ => {}
        }
    }

    /// Whether channel members' accounts can be followed: their account at
    /// join and every change after it.
    fn tracks_members(self) -> bool {
        self.extended_join && self.account_notify
    }
}

/// A channel member followed through `extended-join` and `account-notify`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Member {
    user: String,
    host: String,
    account: Option<String>,
}

/// A message waiting for the `WHOIS` of its sender.
#[derive(Debug)]
struct Waiting {
    /// Folded nick.
    nick: String,
    prefix: Prefix,
    message: InboundMessage,
    since_ms: u64,
}

/// What a `WHOIS` answered so far.
#[derive(Debug, Default)]
struct Whois {
    user: Option<String>,
    host: Option<String>,
    account: Option<String>,
}

/// What [`Identities::identify`] decided for a message.
#[derive(Debug)]
pub enum Decided {
    /// Ready for the host.
    Ready(Box<InboundMessage>),
    /// Held until the `WHOIS` of its sender; send this line (none when one
    /// is asked already).
    Asking(Option<String>),
}

/// The accounts the server told of, and the messages waiting for a `WHOIS`.
#[derive(Debug, Default)]
pub struct Identities {
    pub caps: Caps,
    /// By folded nick.
    members: BTreeMap<String, Member>,
    /// In arrival order.
    waiting: Vec<Waiting>,
    /// `WHOIS` asked, by folded nick.
    asked: BTreeMap<String, Whois>,
}

impl Identities {
    /// Sets `message`'s sender id (its `prefix` came with it, `account_tag`
    /// is the value of its `account` tag), or holds it for a `WHOIS`.
    pub fn identify(
        &mut self,
        mut message: InboundMessage,
        prefix: &Prefix,
        account_tag: Option<&str>,
        now_ms: u64,
    ) -> Decided {
        let nick = fold(&prefix.nick);
        let account = if self.caps.account_tag {
            // With the capability, no tag means no account.
            Some(account_tag.map(str::to_owned))
        } else if self.caps.tracks_members() {
            self.members
                .get(&nick)
                .filter(|member| same_origin(prefix, &member.user, &member.host))
                .map(|member| member.account.clone())
        } else {
            None
        };
        if let Some(account) = account {
            set_sender(&mut message, prefix, account.as_deref());
            return Decided::Ready(Box::new(message));
        }
        // Only a message the host will act on is worth the wait.
        if !message.addressed || prefix.user.is_none() || prefix.host.is_none() {
            set_sender(&mut message, prefix, None);
            return Decided::Ready(Box::new(message));
        }
        let ask = (!self.asked.contains_key(&nick)).then(|| format!("WHOIS {}", prefix.nick));
        self.asked.entry(nick.clone()).or_default();
        self.waiting.push(Waiting {
            nick,
            prefix: prefix.clone(),
            message,
            since_ms: now_ms,
        });
        Decided::Asking(ask)
    }

    /// RPL_WHOISUSER (311): the user and host of `nick` now.
    pub fn whois_user(&mut self, nick: &str, user: &str, host: &str) {
        if let Some(whois) = self.asked.get_mut(&fold(nick)) {
            whois.user = Some(user.to_owned());
            whois.host = Some(host.to_owned());
        }
    }

    /// RPL_WHOISACCOUNT (330): the account `nick` is signed in to.
    pub fn whois_account(&mut self, nick: &str, account: &str) {
        if let Some(whois) = self.asked.get_mut(&fold(nick)) {
            whois.account = Some(account.to_owned());
        }
    }

    /// Whether a `WHOIS` of `nick` is under way (its 401 is expected).
    pub fn asking(&self, nick: &str) -> bool {
        self.asked.contains_key(&fold(nick))
    }

    /// RPL_ENDOFWHOIS (318): the messages of `nick` go on, with the account
    /// when the `WHOIS` was of the connection that sent them (the nick may
    /// have changed hands since).
    pub fn whois_end(&mut self, nick: &str) -> Vec<InboundMessage> {
        let nick = fold(nick);
        let Some(whois) = self.asked.remove(&nick) else {
            return Vec::new();
        };
        let (ready, still): (Vec<Waiting>, Vec<Waiting>) = std::mem::take(&mut self.waiting)
            .into_iter()
            .partition(|waiting| waiting.nick == nick);
        self.waiting = still;
        ready
            .into_iter()
            .map(|mut waiting| {
                let same = match (&whois.user, &whois.host) {
                    (Some(user), Some(host)) => same_origin(&waiting.prefix, user, host),
                    _ => false,
                };
                let account = whois.account.as_deref().filter(|_| same);
                set_sender(&mut waiting.message, &waiting.prefix, account);
                waiting.message
            })
            .collect()
    }

    /// The messages that waited [`WHOIS_PATIENCE_MS`] for a `WHOIS` the
    /// server never finished: they go on identified by their masks.
    pub fn overdue(&mut self, now_ms: u64) -> Vec<InboundMessage> {
        let (late, still): (Vec<Waiting>, Vec<Waiting>) = std::mem::take(&mut self.waiting)
            .into_iter()
            .partition(|waiting| now_ms.saturating_sub(waiting.since_ms) >= WHOIS_PATIENCE_MS);
        self.waiting = still;
        for waiting in &late {
            self.asked.remove(&waiting.nick);
        }
        late.into_iter()
            .map(|mut waiting| {
                set_sender(&mut waiting.message, &waiting.prefix, None);
                waiting.message
            })
            .collect()
    }

    /// Milliseconds until the oldest waiting message is overdue.
    pub fn next_due_in(&self, now_ms: u64) -> Option<u64> {
        self.waiting
            .iter()
            .map(|waiting| (waiting.since_ms + WHOIS_PATIENCE_MS).saturating_sub(now_ms))
            .min()
    }

    /// Someone joined a channel of ours; with `extended-join`, `account` is
    /// their account (`*`: none).
    pub fn joined(&mut self, prefix: &Prefix, account: Option<&str>) {
        if !self.caps.tracks_members() {
            return;
        }
        let (Some(user), Some(host), Some(account)) = (&prefix.user, &prefix.host, account) else {
            return;
        };
        self.members.insert(
            fold(&prefix.nick),
            Member {
                user: user.clone(),
                host: host.clone(),
                account: (account != "*").then(|| account.to_owned()),
            },
        );
    }

    /// `account-notify`: `prefix` signed in to `account` (`*`: signed out).
    pub fn account_changed(&mut self, prefix: &Prefix, account: &str) {
        self.joined(prefix, Some(account));
    }

    /// `old` is now called `new`.
    pub fn renamed(&mut self, old: &str, new: &str) {
        if let Some(member) = self.members.remove(&fold(old)) {
            self.members.insert(fold(new), member);
        }
    }

    /// `nick` quit, left or was kicked from a channel: forgotten (they may
    /// share another channel with us, but a `WHOIS` is always right).
    pub fn left(&mut self, nick: &str) {
        self.members.remove(&fold(nick));
    }

    /// We left a channel: nobody's changes are certain to reach us now.
    pub fn forget_members(&mut self) {
        self.members.clear();
    }
}

/// Whether `prefix` is the connection whose user and host are these.
fn same_origin(prefix: &Prefix, user: &str, host: &str) -> bool {
    prefix.user.as_deref().is_some_and(|u| u == user)
        && prefix
            .host
            .as_deref()
            .is_some_and(|h| h.eq_ignore_ascii_case(host))
}

/// The sender id of `prefix`: `$a:ACCOUNT` when signed in, else the whole
/// mask (a bare nick only when the server sent no user and host), nick and
/// account folded as the server compares them.
pub fn sender_id(prefix: &Prefix, account: Option<&str>) -> String {
    if let Some(account) = account {
        return format!("{ACCOUNT_PREFIX}{}", fold(account));
    }
    match (&prefix.user, &prefix.host) {
        (Some(user), Some(host)) => format!(
            "{}!{}@{}",
            fold(&prefix.nick),
            user,
            host.to_ascii_lowercase()
        ),
        _ => fold(&prefix.nick),
    }
}

/// Sets the sender id of `message` and records the account in its raw JSON.
fn set_sender(message: &mut InboundMessage, prefix: &Prefix, account: Option<&str>) {
    message.sender.id = sender_id(prefix, account);
    if let Ok(serde_json::Value::Object(mut raw)) = serde_json::from_str(&message.raw) {
        raw.insert("account".into(), account.into());
        message.raw = serde_json::Value::Object(raw).to_string();
    }
}

/// How the sender of `message` is identified: by account (strong, also
/// known by their mask), by mask (weak: the user part is the client's to
/// choose where the server runs no ident, and the host is shared behind a
/// NAT or a bouncer), or by a bare nick (trusted for nothing).
pub fn identify(message: &InboundMessage) -> SenderIdentity {
    let id = &message.sender.id;
    if id.starts_with(ACCOUNT_PREFIX) {
        let raw: serde_json::Value = serde_json::from_str(&message.raw).unwrap_or_default();
        let mask = match (
            raw["nick"].as_str(),
            raw["user"].as_str(),
            raw["host"].as_str(),
        ) {
            (Some(nick), Some(user), Some(host)) => vec![sender_id(
                &Prefix {
                    nick: nick.to_owned(),
                    user: Some(user.to_owned()),
                    host: Some(host.to_owned()),
                },
                None,
            )],
            _ => Vec::new(),
        };
        return SenderIdentity {
            kind: "account".into(),
            strength: IdStrength::Strong,
            also_known_as: mask,
        };
    }
    let (kind, strength) = if id.contains('!') && id.contains('@') {
        ("mask", IdStrength::Weak)
    } else {
        ("nick", IdStrength::NameOnly)
    };
    SenderIdentity {
        kind: kind.into(),
        strength,
        also_known_as: Vec::new(),
    }
}

/// Whether `entry` of `allowed_users` can name someone: a services account
/// `$a:ACCOUNT` or a mask `nick!user@host` (`*` and `?` match anything),
/// never a bare nick.
pub fn check_allowed_user(entry: &str) -> Result<(), String> {
    let forms = "write a mask nick!user@host (* and ? are wildcards; the host is what \
                 protects it) or a services account $a:ACCOUNT";
    if entry.contains(char::is_whitespace) || entry.is_empty() {
        return Err(format!("{entry:?} contains spaces; {forms}"));
    }
    if let Some(account) = entry.strip_prefix(ACCOUNT_PREFIX) {
        if account.is_empty() {
            return Err(format!("{entry:?} names no account; {forms}"));
        }
        return Ok(());
    }
    let parts = entry
        .split_once('!')
        .and_then(|(nick, rest)| Some((nick, rest.split_once('@')?)));
    match parts {
        Some((nick, (user, host))) if !nick.is_empty() && !user.is_empty() && !host.is_empty() => {
            Ok(())
        }
        Some(_) => Err(format!("{entry:?} is not a whole mask; {forms}")),
        None => Err(format!(
            "{entry:?} is a bare nick, which anyone can take once it is free; {forms}, \
             e.g. {entry}!{entry}@your.host or $a:{entry}"
        )),
    }
}

#[cfg(test)]
#[path = "identity_tests.rs"]
mod tests;
