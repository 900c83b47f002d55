//! The real [`Connector`]: a chat adapter plugin's `connection` resource,
//! opened in its own instance with the platform's settings as its config
//! section. A failure of the plugin becomes a value the driver reads; a
//! connection whose instance died is reported lost, so the driver reopens it.

use std::collections::BTreeMap;
use std::time::Duration;

use async_trait::async_trait;
use talaria_plugin_host::{ChatConnection, ChatError, LoadedPlugin};

use crate::ports::{
    ChatCapabilities, Connection, Connector, HostWork, InboundMessage, Outbound, SendOutcome,
    WebhookRequest, WebhookResponse, fallback_capabilities,
};

/// Opens connections of one account through its adapter plugin.
pub struct PluginConnector {
    plugin: LoadedPlugin,
    config: BTreeMap<String, String>,
}

impl std::fmt::Debug for PluginConnector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The settings hold the account's secrets: never printed.
        f.debug_struct("PluginConnector")
            .field("plugin", &self.plugin.name())
            .finish_non_exhaustive()
    }
}

impl PluginConnector {
    /// A connector for `plugin` with the platform's settings as its config.
    pub fn new(plugin: LoadedPlugin, config: BTreeMap<String, String>) -> Self {
        Self { plugin, config }
    }
}

#[async_trait]
impl Connector for PluginConnector {
    type Connection = PluginConnection;

    async fn open(&self, attempt: u32, work: HostWork) -> Result<PluginConnection, String> {
        let inner = ChatConnection::open_with_work(&self.plugin, &self.config, attempt, work)
            .await
            .map_err(|e| e.to_string())?;
        Ok(PluginConnection { inner })
    }
}

/// One open account.
pub struct PluginConnection {
    inner: ChatConnection,
}

fn log_failure(call: &str, error: &ChatError) {
    crate::log(format_args!("{call}: {error}"));
}

#[async_trait]
impl Connection for PluginConnection {
    async fn capabilities(&mut self) -> ChatCapabilities {
        match self.inner.capabilities().await {
            Ok(capabilities) => capabilities,
            Err(error) => {
                log_failure("capabilities", &error);
                fallback_capabilities(self.inner.plugin().name())
            }
        }
    }

    async fn next_events(&mut self, timeout_ms: u32) -> Result<Vec<InboundMessage>, String> {
        self.inner
            .next_events(Duration::from_millis(u64::from(timeout_ms)))
            .await
            .map_err(|e| e.to_string())
    }

    async fn send(&mut self, message: Outbound) -> SendOutcome {
        match self.inner.send(message).await {
            Ok(outcome) => outcome,
            // A dead instance cannot send: the driver reopens on its next poll.
            Err(error) => SendOutcome::Failed(error.to_string()),
        }
    }

    async fn typing(&mut self, chat_id: &str, thread: Option<&str>) {
        if let Err(error) = self.inner.typing(chat_id, thread).await {
            log_failure("typing", &error);
        }
    }

    async fn fetch_attachment(&mut self, id: &str, max_bytes: u64) -> Result<Vec<u8>, String> {
        self.inner
            .fetch_attachment(id, max_bytes)
            .await
            .map_err(|e| e.to_string())
    }

    async fn webhook(
        &mut self,
        request: WebhookRequest,
    ) -> Result<(WebhookResponse, Vec<InboundMessage>), String> {
        self.inner.webhook(request).await.map_err(|e| e.to_string())
    }

    async fn close(&mut self) {
        if let Err(error) = self.inner.close().await {
            log_failure("close", &error);
        }
    }
}
