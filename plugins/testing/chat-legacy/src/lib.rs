//! Test plugin `chat-legacy`: a chat adapter written against the frozen
//! `talaria:plugin@0.1.2` WIT with raw `wit-bindgen` bindings, so it exports
//! `chat-adapter` without 0.1.3's `chat-identity`. Its first `next-events`
//! returns one direct message (config `say` from `user`); later ones wait
//! briefly and return nothing. `send` always succeeds.

// Only the generated component glue is unsafe; nothing here is written by hand.
#![allow(unsafe_code)]

wit_bindgen::generate!({
    world: "chat-adapter-plugin",
    path: "../../../wit/versions/0.1.2",
    generate_all,
});

use std::cell::Cell;
use std::time::Duration;

use exports::talaria::plugin::chat_adapter::{Connection, Guest, GuestConnection};
use talaria::plugin::chat_types::{
    Capabilities, Chat, ChatDetails, ChatKind, InboundMessage, LengthUnit, Outbound, SendOutcome,
    Sender, WebhookRequest, WebhookResponse,
};
use talaria::plugin::config;

struct Legacy;

fn setting(name: &str, default: &str) -> String {
    config::get(name)
        .ok()
        .flatten()
        .unwrap_or_else(|| default.to_owned())
}

impl Guest for Legacy {
    type Connection = Said;

    fn platform() -> String {
        setting("platform", "legacy")
    }
}

/// A connection that has or has not said its line yet.
struct Said(Cell<bool>);

impl GuestConnection for Said {
    fn open(_attempt: u32) -> Result<Connection, String> {
        Ok(Connection::new(Said(Cell::new(false))))
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            platform: setting("platform", "legacy"),
            max_message_length: 400,
            length_unit: LengthUnit::Chars,
            markdown: false,
            edit: false,
            typing: false,
            prompt_hint: String::new(),
        }
    }

    fn next_events(&self, timeout_ms: u32) -> Result<Vec<InboundMessage>, String> {
        if self.0.replace(true) {
            std::thread::sleep(Duration::from_millis(u64::from(timeout_ms.min(50))));
            return Ok(Vec::new());
        }
        let user = setting("user", "ann");
        Ok(vec![InboundMessage {
            chat: Chat {
                id: user.clone(),
                thread: None,
                kind: ChatKind::Dm,
                title: None,
            },
            sender: Sender {
                id: user.clone(),
                name: user,
                is_bot: false,
            },
            text: setting("say", "hello"),
            message_id: None,
            reply_to: None,
            addressed: true,
            attachments: Vec::new(),
            edit_of: None,
            raw: "null".into(),
        }])
    }

    fn send(&self, _message: Outbound) -> SendOutcome {
        SendOutcome::Sent(None)
    }

    fn typing(&self, _chat_id: String, _thread: Option<String>) {}

    fn chat_info(&self, chat_id: String) -> Result<ChatDetails, String> {
        Err(format!("no details of {chat_id}"))
    }

    fn fetch_attachment(&self, _id: String, _max_bytes: u64) -> Result<Vec<u8>, String> {
        Err("no attachments".into())
    }

    fn webhook(&self, _request: WebhookRequest) -> (WebhookResponse, Vec<InboundMessage>) {
        let response = WebhookResponse {
            status: 404,
            headers: Vec::new(),
            body: Vec::new(),
        };
        (response, Vec::new())
    }

    fn close(&self) {}
}

export!(Legacy);
