//! Talaria plugin `telegram`: a Telegram bot account through the Bot API, as
//! a `chat-adapter-plugin` component.
//!
//! Settings (`gateway.platforms.telegram` in config.yaml): `bot_token`
//! (required, a secret: write `"${TELEGRAM_BOT_TOKEN}"`), `api_base`
//! (default `https://api.telegram.org`; a self-hosted Bot API server or a
//! test server, which then needs its own network grant) and
//! `poll_timeout_secs` (default 25).
//!
//! The logic is a pure core, unit-tested natively
//! (`cargo test --manifest-path plugins/Cargo.toml -p talaria-plugin-telegram`):
//! [`settings`] (config, URLs, token redaction), [`api`] (replies, error
//! mapping), [`inbound`] (updates to messages, addressing), [`poller`]
//! (offsets), [`events`] (the long-poll loop over an I/O port: returning
//! early on host work with the request kept in flight), [`outbound`]
//! (request bodies, UTF-16 lengths). The I/O layer
//! (`connection`, `transport`: `wasi:http` and the host's pollable) exists
//! only in the wasm build.

pub mod api;
pub mod events;
pub mod inbound;
pub mod outbound;
pub mod poller;
pub mod settings;

#[cfg(target_arch = "wasm32")]
mod connection;
#[cfg(target_arch = "wasm32")]
mod transport;

use talaria_plugin_sdk::chat_types::{Capabilities, LengthUnit};

/// The platform's key in `gateway.platforms`.
pub const PLATFORM: &str = "telegram";

/// Plain text for now: Telegram's MarkdownV2 needs every one of
/// `_*[]()~`>#+-=|{}.!` escaped outside formatting, and an unescaped one
/// fails the whole message.
const PROMPT_HINT: &str = "You are writing in Telegram. Messages are sent as plain text: \
                           do not use Markdown or HTML markup; keep answers short and \
                           readable on a phone.";

/// What the connection offers.
pub fn capabilities() -> Capabilities {
    Capabilities {
        platform: PLATFORM.into(),
        max_message_length: outbound::MAX_MESSAGE_UTF16,
        length_unit: LengthUnit::Utf16,
        markdown: false,
        edit: true,
        typing: true,
        prompt_hint: PROMPT_HINT.into(),
    }
}

#[cfg(target_arch = "wasm32")]
use connection::Telegram;

#[cfg(target_arch = "wasm32")]
talaria_plugin_sdk::chat_bindings::__export_chat_adapter_plugin!(
    Telegram with_types_in talaria_plugin_sdk::chat_bindings
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capabilities_count_utf16_and_send_plain_text() {
        let capabilities = capabilities();
        assert_eq!(capabilities.platform, "telegram");
        assert_eq!(capabilities.max_message_length, 4096);
        assert!(matches!(capabilities.length_unit, LengthUnit::Utf16));
        assert!(!capabilities.markdown);
        assert!(capabilities.edit && capabilities.typing);
        assert!(capabilities.prompt_hint.contains("plain text"));
    }
}
