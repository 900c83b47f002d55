//! The component's I/O: the `chat-adapter` exports over the pure core.
//!
//! `next-events` long-polls `getUpdates` without blocking (see `events`):
//! the request is started with `wasi:http`'s outgoing handler and its
//! response future's pollable is polled together with
//! `chat-host.host-work()` and a timer for the call's `timeout-ms`.

use std::cell::RefCell;

use serde_json::json;
use talaria_plugin_sdk::chat_bindings::exports::talaria::plugin::chat_adapter::Connection;
use talaria_plugin_sdk::chat_types::{
    Capabilities, ChatDetails, InboundMessage, Outbound, SendOutcome, WebhookRequest,
    WebhookResponse,
};
use talaria_plugin_sdk::{
    ChatAdapter, ChatConnection, ChatIdentity, SenderIdentity, chat_host, config, log,
};
use wasip2::clocks::monotonic_clock;
use wasip2::io::poll::{Pollable, poll};

use crate::api::{ApiFailure, send_outcome};
use crate::events::{EventLoop, PollIo, Wake};
use crate::inbound::BotIdentity;
use crate::outbound::{chat_details, chat_request, send_request, typing_request};
use crate::settings::Settings;
use crate::transport::{PendingReply, call, start};

/// Wait for an ordinary call (send, typing, getChat, getFile).
const CALL_TIMEOUT_MS: u64 = 30_000;
/// Extra wait for a long-poll beyond its own timeout, for the network.
const POLL_GRACE_MS: u64 = 15_000;

/// The plugin's export.
pub struct Telegram;

impl ChatAdapter for Telegram {
    type Connection = TelegramConnection;

    fn platform() -> String {
        crate::PLATFORM.into()
    }
}

impl ChatIdentity for Telegram {
    fn identify(message: InboundMessage) -> SenderIdentity {
        crate::inbound::identity_of(&message.sender)
    }

    /// Entries are compared with the numeric ids as they are; any text is
    /// accepted (a Hermes import may bring usernames, which match nobody).
    fn check_allowed_user(_entry: String) -> Result<(), String> {
        Ok(())
    }
}

/// A signed-in bot account.
pub struct TelegramConnection {
    settings: Settings,
    bot: BotIdentity,
    events: RefCell<EventLoop<PendingReply>>,
}

impl TelegramConnection {
    fn failure(&self, failure: &ApiFailure) -> String {
        self.settings.redact(&failure.to_string())
    }
}

/// `next-events`' port: `wasi:http` requests, the host's work and timers.
struct WasiIo<'a> {
    settings: &'a Settings,
    host_work: Pollable,
}

impl PollIo for WasiIo<'_> {
    type Pending = PendingReply;

    fn now(&mut self) -> u64 {
        monotonic_clock::now()
    }

    fn host_work_ready(&mut self) -> bool {
        self.host_work.ready()
    }

    fn start(&mut self, body: &serde_json::Value) -> Result<PendingReply, String> {
        let timeout_ms = u64::from(self.settings.poll_timeout_secs) * 1_000 + POLL_GRACE_MS;
        start(
            &self.settings.method_url("getUpdates"),
            Some(body),
            timeout_ms,
        )
        .map_err(|f| format!("getUpdates: {}", self.settings.redact(&f.to_string())))
    }

    fn wait(&mut self, pending: Option<&PendingReply>, until: u64) -> Wake {
        let timer = monotonic_clock::subscribe_instant(until);
        match pending {
            Some(pending) => {
                let answered = pending.subscribe();
                let ready = poll(&[&answered, &self.host_work, &timer]);
                if ready.contains(&0) {
                    Wake::Answered
                } else if ready.contains(&1) {
                    Wake::HostWork
                } else {
                    Wake::Deadline
                }
            }
            None => {
                let ready = poll(&[&self.host_work, &timer]);
                if ready.contains(&0) {
                    Wake::HostWork
                } else {
                    Wake::Deadline
                }
            }
        }
    }

    fn finish(&mut self, pending: PendingReply) -> Result<serde_json::Value, String> {
        pending
            .result()
            .map_err(|f| format!("getUpdates: {}", self.settings.redact(&f.to_string())))
    }
}

impl ChatConnection for TelegramConnection {
    fn open(attempt: u32) -> Result<Connection, String> {
        talaria_plugin_sdk::install_panic_hook();
        let settings = Settings::load(|name| config::get(name).map_err(|e| e.to_string()))?;
        let me = call(&settings, "getMe", &json!({}), CALL_TIMEOUT_MS).map_err(|failure| {
            match failure.status {
                // 401 for a revoked or wrong token, 404 for a malformed one.
                401 | 404 => format!(
                    "Telegram refused the bot token ({}: {}): check bot_token \
                     (TELEGRAM_BOT_TOKEN) against @BotFather",
                    failure.status, failure.description
                ),
                _ => format!("getMe: {failure}"),
            }
        })?;
        let bot = BotIdentity::from_get_me(&me)?;
        log::info(format!(
            "signed in to Telegram as @{} (attempt {attempt})",
            bot.username
        ));
        Ok(Connection::new(Self {
            events: RefCell::new(EventLoop::new(settings.poll_timeout_secs)),
            settings,
            bot,
        }))
    }

    fn capabilities(&self) -> Capabilities {
        crate::capabilities()
    }

    fn next_events(&self, timeout_ms: u32) -> Result<Vec<InboundMessage>, String> {
        let mut io = WasiIo {
            settings: &self.settings,
            host_work: chat_host::host_work(),
        };
        let mut messages = self
            .events
            .borrow_mut()
            .next_events(&mut io, &self.bot, timeout_ms)?;
        // Some Bot API look-alikes echo the token inside updates.
        for message in &mut messages {
            message.raw = self.settings.redact(&message.raw);
        }
        Ok(messages)
    }

    fn send(&self, message: Outbound) -> SendOutcome {
        let (method, body) = match send_request(&message) {
            Ok(request) => request,
            Err(why) => return SendOutcome::Failed(why),
        };
        let reply = call(&self.settings, method, &body, CALL_TIMEOUT_MS);
        send_outcome(reply, message.edit.as_deref()).into()
    }

    fn typing(&self, chat_id: String, thread: Option<String>) {
        let body = typing_request(&chat_id, thread.as_deref());
        // Best effort: a missing "typing…" is not worth an error.
        if let Err(failure) = call(&self.settings, "sendChatAction", &body, CALL_TIMEOUT_MS) {
            log::debug(format!("sendChatAction: {}", self.failure(&failure)));
        }
    }

    fn chat_info(&self, chat_id: String) -> Result<ChatDetails, String> {
        let body = chat_request(&chat_id);
        let chat = call(&self.settings, "getChat", &body, CALL_TIMEOUT_MS)
            .map_err(|f| format!("getChat: {}", self.failure(&f)))?;
        let members = if chat["type"] == "private" {
            None
        } else {
            call(&self.settings, "getChatMemberCount", &body, CALL_TIMEOUT_MS)
                .ok()
                .and_then(|count| count.as_u64())
                .and_then(|count| u32::try_from(count).ok())
        };
        chat_details(&chat, members)
    }

    fn fetch_attachment(&self, id: String, max_bytes: u64) -> Result<Vec<u8>, String> {
        let file = call(
            &self.settings,
            "getFile",
            &json!({"file_id": id}),
            CALL_TIMEOUT_MS,
        )
        .map_err(|f| format!("getFile: {}", self.failure(&f)))?;
        if let Some(size) = file["file_size"].as_u64().filter(|size| *size > max_bytes) {
            return Err(format!(
                "the file is {size} bytes, over the limit of {max_bytes}"
            ));
        }
        let path = file["file_path"]
            .as_str()
            .ok_or("getFile gave no file_path (Telegram serves bots files up to 20 MB)")?;
        let (status, bytes) = start(&self.settings.file_url(path), None, CALL_TIMEOUT_MS)
            .and_then(|pending| pending.finish(max_bytes))
            .map_err(|f| format!("downloading the file: {}", self.failure(&f)))?;
        if status != 200 {
            return Err(format!("downloading the file: Telegram answered {status}"));
        }
        Ok(bytes)
    }

    fn webhook(&self, _request: WebhookRequest) -> (WebhookResponse, Vec<InboundMessage>) {
        // This adapter long-polls; Telegram refuses getUpdates while a
        // webhook is set, so none is ever registered.
        let body = b"this Telegram adapter long-polls getUpdates; it takes no webhooks".to_vec();
        let response = WebhookResponse {
            status: 404,
            headers: vec![("content-type".into(), "text/plain".into())],
            body,
        };
        (response, Vec::new())
    }

    fn close(&self) {
        let acknowledgement = self.events.borrow_mut().close();
        if let Some(body) = acknowledgement
            && let Err(failure) = call(&self.settings, "getUpdates", &body, CALL_TIMEOUT_MS)
        {
            log::debug(format!(
                "confirming the last updates: {}",
                self.failure(&failure)
            ));
        }
    }
}
