//! Talaria plugin `irc`: a chat adapter for IRC (RFC 1459/2812), over plain
//! TCP or the host's TLS. The protocol is in [`session`] (lines in, events
//! out), [`outgoing`] (PRIVMSG splitting, flood control) and [`message`]
//! (parsing), all tested natively; this file only moves lines between them
//! and the connection.
//!
//! A send to a channel the bot is not in, or to a nick that is not online,
//! cannot be refused synchronously: IRC answers such a PRIVMSG later, if at
//! all, with 401/403/404, which the next `next-events` logs as a warning.
//! `send` returns `sent` once the lines are queued: flood control paces
//! them out and `next-events` writes the rest as their turn comes.

pub mod identity;
pub mod keepalive;
pub mod message;
pub mod outgoing;
pub mod session;
pub mod settings;

use std::cell::RefCell;
use std::time::Duration;

use talaria_plugin_sdk::chat::{ConnectionError, LineConnection, Woken};
use talaria_plugin_sdk::chat_bindings::exports::talaria::plugin::chat_adapter::Connection;
use talaria_plugin_sdk::chat_types::{
    Capabilities, ChatDetails, InboundMessage, Outbound, SendOutcome, WebhookRequest,
    WebhookResponse,
};
use talaria_plugin_sdk::{ChatAdapter, ChatConnection, ChatIdentity, SenderIdentity, config, log};
use wasip2::clocks::monotonic_clock;

use keepalive::{Check, Keepalive};
use outgoing::{Admission, FloodControl, OutQueue, privmsg_lines, text_limit, valid_target};
use session::{Event, Session};
use settings::Settings;

/// The longest line read: 512 bytes plus IRCv3's 8191 bytes of tags.
const MAX_INBOUND_LINE: usize = 512 + 8191;
/// Connecting and registering stay within the host's default call limit
/// (30 s): servers that look up ident and DNS take up to ~15 s to welcome.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(8);
/// How long the server has to welcome us after connecting.
const REGISTRATION_MS: u64 = 20_000;
/// Flood control: 5 lines at once, then one per 500 ms, at most 40 waiting
/// (20 s of output) before `send` asks for a retry.
const FLOOD_BURST: u32 = 5;
const FLOOD_INTERVAL_MS: u64 = 500;
const MAX_BACKLOG: usize = 40;
/// The longest a closing connection spends writing its queued lines: a full
/// backlog at the flood rate.
const CLOSE_DRAIN_MS: u64 = MAX_BACKLOG as u64 * FLOOD_INTERVAL_MS;

pub struct Irc;

impl ChatAdapter for Irc {
    type Connection = IrcConnection;

    fn platform() -> String {
        "irc".into()
    }
}

/// Senders are identified by services account or by their whole mask
/// ([`identity`]).
impl ChatIdentity for Irc {
    fn identify(message: InboundMessage) -> SenderIdentity {
        identity::identify(&message)
    }

    fn check_allowed_user(entry: String) -> Result<(), String> {
        identity::check_allowed_user(&entry).map_err(|why| format!("irc: {why}"))
    }
}

/// The `connection` resource. The host never calls one from two places at
/// once, so the `RefCell` is never contended.
pub struct IrcConnection {
    live: RefCell<Live>,
}

impl ChatConnection for IrcConnection {
    fn open(attempt: u32) -> Result<Connection, String> {
        talaria_plugin_sdk::install_panic_hook();
        let settings = Settings::load(|key| config::get(key).ok().flatten())?;
        log::info(format!(
            "connecting to {}:{}{} as {} (attempt {attempt})",
            settings.server,
            settings.port,
            if settings.tls { " with TLS" } else { "" },
            settings.nick
        ));
        let line = if settings.tls {
            LineConnection::connect_tls(&settings.server, settings.port, MAX_INBOUND_LINE)
        } else {
            LineConnection::connect_tcp(
                &settings.server,
                settings.port,
                CONNECT_TIMEOUT,
                MAX_INBOUND_LINE,
            )
        }
        .map_err(|e| format!("irc: {e}"))?;
        let mut live = Live {
            line,
            session: Session::new(settings),
            queue: OutQueue::new(
                FloodControl::new(FLOOD_BURST, FLOOD_INTERVAL_MS),
                MAX_BACKLOG,
            ),
            keepalive: Keepalive::new(now_ms()),
        };
        live.register()?;
        let caps = live.session.caps();
        log::info(format!(
            "registered as {}; senders identified by {}",
            live.session.nick(),
            if caps.account_tag {
                "the account tag"
            } else if caps.extended_join && caps.account_notify {
                "the accounts of channel members, else WHOIS"
            } else {
                "WHOIS"
            }
        ));
        Ok(Connection::new(Self {
            live: RefCell::new(live),
        }))
    }

    fn capabilities(&self) -> Capabilities {
        self.live.borrow().session.capabilities()
    }

    fn next_events(&self, timeout_ms: u32) -> Result<Vec<InboundMessage>, String> {
        self.live.borrow_mut().next_events(u64::from(timeout_ms))
    }

    fn send(&self, message: Outbound) -> SendOutcome {
        self.live.borrow_mut().send(&message.chat_id, &message.text)
    }

    /// IRC shows no typing.
    fn typing(&self, _chat_id: String, _thread: Option<String>) {}

    fn chat_info(&self, chat_id: String) -> Result<ChatDetails, String> {
        if !valid_target(&chat_id) {
            return Err(format!("{chat_id:?} is not an IRC channel or nick"));
        }
        Ok(self.live.borrow().session.chat_details(&chat_id))
    }

    fn fetch_attachment(&self, _id: String, _max_bytes: u64) -> Result<Vec<u8>, String> {
        Err("IRC has no attachments".into())
    }

    fn webhook(&self, _request: WebhookRequest) -> (WebhookResponse, Vec<InboundMessage>) {
        let response = WebhookResponse {
            status: 404,
            headers: vec![("content-type".into(), "text/plain".into())],
            body: b"IRC has no webhooks".to_vec(),
        };
        (response, Vec::new())
    }

    fn close(&self) {
        let mut live = self.live.borrow_mut();
        // Best effort: the server may be gone already. Lines still queued
        // (a long answer sent just before, as a delivery without a gateway
        // does) go out first.
        live.drain_queue(CLOSE_DRAIN_MS);
        let _ = live.line.write_line(Session::quit_line());
    }
}

struct Live {
    line: LineConnection,
    session: Session,
    queue: OutQueue,
    keepalive: Keepalive,
}

impl Live {
    /// Sends the registration and handles lines until the welcome.
    fn register(&mut self) -> Result<(), String> {
        self.session.tick(now_ms());
        for line in self.session.registration() {
            self.write(&line)?;
        }
        let deadline = now_ms() + REGISTRATION_MS;
        let mut ignored = Vec::new();
        loop {
            while let Some(raw) = self.line.read_line().map_err(lost)? {
                let events = self.session.handle(&raw);
                self.apply(events, &mut ignored)?;
                if self.session.is_registered() {
                    return Ok(());
                }
            }
            let now = now_ms();
            if now >= deadline {
                return Err(format!(
                    "irc: the server did not welcome us within {} s",
                    REGISTRATION_MS / 1000
                ));
            }
            self.line
                .wait_readable(Duration::from_millis(deadline - now));
        }
    }

    fn next_events(&mut self, timeout_ms: u64) -> Result<Vec<InboundMessage>, String> {
        let deadline = now_ms() + timeout_ms;
        let mut messages = Vec::new();
        loop {
            self.flush_queue()?;
            let events = self.session.tick(now_ms());
            self.apply(events, &mut messages)?;
            while let Some(raw) = self.line.read_line().map_err(lost)? {
                self.keepalive.heard(now_ms());
                let events = self.session.handle(&raw);
                self.apply(events, &mut messages)?;
            }
            let now = now_ms();
            match self.keepalive.check(now) {
                Check::Fine => {}
                Check::Ping => self.write("PING :talaria")?,
                Check::GiveUp => return Err("irc: the server stopped answering".into()),
            }
            if !messages.is_empty() || now >= deadline {
                return Ok(messages);
            }
            let mut wait = (deadline - now).min(self.keepalive.next_check_in(now).max(1));
            if let Some(next_line) = self.queue.next_in(now) {
                wait = wait.min(next_line.max(1));
            }
            if let Some(overdue) = self.session.next_tick_in(now) {
                wait = wait.min(overdue.max(1));
            }
            if self.line.wait(Duration::from_millis(wait)) == Woken::HostWork {
                return Ok(messages);
            }
        }
    }

    fn send(&mut self, chat_id: &str, text: &str) -> SendOutcome {
        if !valid_target(chat_id) {
            return SendOutcome::DeadTarget(format!("{chat_id:?} is not an IRC channel or nick"));
        }
        let limit = text_limit(self.session.nick(), chat_id.len());
        let lines = privmsg_lines(chat_id, text, limit);
        if lines.is_empty() {
            return SendOutcome::Sent(None);
        }
        match self.queue.admit(lines, now_ms()) {
            Admission::RetryAfter(ms) => SendOutcome::Retryable(ms),
            Admission::Queued => match self.flush_queue() {
                Ok(()) => SendOutcome::Sent(None),
                Err(why) => SendOutcome::Failed(why),
            },
        }
    }

    /// Writes every queued line at the flood rate, for at most `limit_ms`.
    fn drain_queue(&mut self, limit_ms: u64) {
        let deadline = now_ms() + limit_ms;
        while let Some(wait) = self.queue.next_in(now_ms()) {
            if now_ms() + wait > deadline {
                return;
            }
            std::thread::sleep(Duration::from_millis(wait));
            if self.flush_queue().is_err() {
                return;
            }
        }
    }

    /// Writes the queued lines flood control lets through now.
    fn flush_queue(&mut self) -> Result<(), String> {
        for line in self.queue.take_ready(now_ms()) {
            self.write(&line)?;
        }
        Ok(())
    }

    fn apply(
        &mut self,
        events: Vec<Event>,
        messages: &mut Vec<InboundMessage>,
    ) -> Result<(), String> {
        for event in events {
            match event {
                Event::Send(line) => self.write(&line)?,
                Event::Registered => {}
                Event::Message(message) => messages.push(*message),
                Event::Warn(why) => log::warn(format!("irc: {why}")),
                Event::Fatal(why) => return Err(format!("irc: {why}")),
            }
        }
        Ok(())
    }

    fn write(&mut self, line: &str) -> Result<(), String> {
        self.line.write_line(line).map_err(lost)
    }
}

fn lost(error: ConnectionError) -> String {
    format!("irc: connection lost: {error}")
}

fn now_ms() -> u64 {
    monotonic_clock::now() / 1_000_000
}

#[cfg(target_arch = "wasm32")]
talaria_plugin_sdk::chat_bindings::__export_chat_adapter_plugin!(
    Irc with_types_in talaria_plugin_sdk::chat_bindings
);
