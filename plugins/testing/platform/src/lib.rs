//! Test plugin `platform-probe`: a platform adapter whose `platform()` is the
//! manifest's `[config] platform` (so tests can tell the name was read from
//! the component). A payload is one message per line; a reply is a POST.

use talaria_plugin_sdk::platform_bindings::exports::talaria::plugin::platform_adapter::{
    Inbound, OutboundRequest,
};
use talaria_plugin_sdk::{Json, PlatformAdapter, config};

pub struct Probe;

impl PlatformAdapter for Probe {
    fn platform() -> String {
        config::get("platform")
            .ok()
            .flatten()
            .unwrap_or_else(|| "unnamed".into())
    }

    fn parse_event(payload: Json) -> Result<Vec<Inbound>, String> {
        Ok(payload
            .lines()
            .filter(|line| !line.trim().is_empty())
            .map(|line| Inbound {
                chat_id: "chat".into(),
                user_id: "user".into(),
                text: line.to_owned(),
                message_id: None,
            })
            .collect())
    }

    fn render_reply(
        chat_id: String,
        text: String,
        reply_to: Option<String>,
    ) -> Result<OutboundRequest, String> {
        Ok(OutboundRequest {
            method: "POST".into(),
            url: format!("https://probe.invalid/{chat_id}"),
            headers: Vec::new(),
            body: Some(format!(
                "{}{text}",
                reply_to.map(|r| format!("{r}: ")).unwrap_or_default()
            )),
        })
    }
}

#[cfg(target_arch = "wasm32")]
talaria_plugin_sdk::platform_bindings::__export_platform_plugin!(
    Probe with_types_in talaria_plugin_sdk::platform_bindings
);
