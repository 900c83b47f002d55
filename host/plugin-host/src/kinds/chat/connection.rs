//! One chat account held open: a long-lived instance of a chat adapter in a
//! store of its own, called by one task, one call at a time.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use wasmtime::Store;
use wasmtime::component::ResourceAny;

use super::types::{
    ChatCapabilities, ChatDetails, InboundMessage, Outbound, SendOutcome, WebhookRequest,
    WebhookResponse,
};
use crate::bindings::chat_identity_world::exports::talaria::plugin::chat_identity::Guest as IdentityGuest;
use crate::bindings::chat_world::ChatAdapterPlugin;
use crate::bindings::chat_world::exports::talaria::plugin::chat_adapter::Guest;
use crate::bindings::chat_world::talaria::plugin::chat_types as wit;
use crate::error::CallError;
use crate::imports::chat::{ChatHostState, HostWork};
use crate::invoke::{CallFor, Invocation, classify, prepare, race};
use crate::loaded::LoadedPlugin;
use crate::resident::{Resident, Unusable};
use crate::sandbox::Sandbox;
use crate::state::PluginState;

/// What `next-events` may take beyond its own timeout before the call is
/// cut off (and the instance with it): it legitimately waits the whole
/// timeout, so the plugin's per-call limit does not apply to it.
pub const NEXT_EVENTS_MARGIN: Duration = Duration::from_secs(5);

/// Why a call on a chat connection gave no result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChatError {
    /// The adapter answered with an error: `open` refused, the connection
    /// lost (`next-events`: drop it and open a new one), a chat or an
    /// attachment it could not get.
    #[error("plugin {plugin}: {call}: {message}")]
    Adapter {
        /// The plugin name.
        plugin: String,
        /// The call (`open`, `next-events`…).
        call: &'static str,
        /// The adapter's message.
        message: String,
    },
    /// The call did not complete (a trap, the time or memory limit): the
    /// instance is dead and later calls say [`ChatError::Dead`].
    #[error(transparent)]
    Call(#[from] CallError),
    /// An earlier call killed the instance.
    #[error("plugin {plugin}: the chat connection is dead: {reason}")]
    Dead {
        /// The plugin name.
        plugin: String,
        /// What ended it.
        reason: String,
    },
    /// The connection was closed with [`ChatConnection::close`].
    #[error("plugin {plugin}: the chat connection is closed")]
    Closed {
        /// The plugin name.
        plugin: String,
    },
    /// The plugin is not a chat adapter.
    #[error("plugin {plugin} is not a chat adapter")]
    NotAnAdapter {
        /// The plugin name.
        plugin: String,
    },
}

impl ChatError {
    /// Whether the connection can take no more calls (open a new one).
    pub fn is_fatal(&self) -> bool {
        matches!(
            self,
            Self::Call(_) | Self::Dead { .. } | Self::Closed { .. }
        )
    }
}

/// One account of a chat platform held open by its adapter: a long-lived
/// instance of the plugin in a store of its own, with the account's config
/// section over the manifest's `[config]`.
///
/// Calls take `&mut self`: one task drives it, one call at a time. Each call
/// runs within the plugin's time limit, except
/// [`next_events`](Self::next_events), which may take its timeout plus
/// [`NEXT_EVENTS_MARGIN`]. A trap, a timeout or running out of memory is
/// [`ChatError::Call`] and kills the instance; later calls say
/// [`ChatError::Dead`].
pub struct ChatConnection {
    plugin: LoadedPlugin,
    resident: Resident,
    adapter: ChatAdapterPlugin,
    /// `chat-identity`, when the component exports it (0.1.3).
    identity: Option<IdentityGuest>,
    connection: ResourceAny,
    work: HostWork,
}

impl std::fmt::Debug for ChatConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatConnection")
            .field("plugin", &self.plugin.name())
            .field("platform", &self.plugin.chat_platform())
            .field("usable", &self.is_usable())
            .finish_non_exhaustive()
    }
}

impl ChatConnection {
    /// Opens an account of `plugin`'s platform: a new instance whose
    /// `config.get` sees `config` (the `gateway.platforms.<name>` settings,
    /// see [`super::config_section`]) over the manifest's `[config]`, then
    /// `connection.open(attempt)`; `attempt` counts reconnects since the
    /// last success (0 first).
    pub async fn open(
        plugin: &LoadedPlugin,
        config: &BTreeMap<String, String>,
        attempt: u32,
    ) -> Result<Self, ChatError> {
        Self::open_with_work(plugin, config, attempt, HostWork::new()).await
    }

    /// [`open`](Self::open) with `work` as the connection's host-work
    /// signal, so one signal serves an account across reconnects.
    pub async fn open_with_work(
        plugin: &LoadedPlugin,
        config: &BTreeMap<String, String>,
        attempt: u32,
        work: HostWork,
    ) -> Result<Self, ChatError> {
        let name = plugin.name().to_owned();
        let pre = super::adapter_pre(plugin).await?;
        let base = &plugin.inner.shared;
        let mut merged = base.config.clone();
        merged.extend(config.iter().map(|(k, v)| (k.clone(), v.clone())));
        let shared = Arc::new(base.with_config(merged));
        let inv = Invocation {
            engine: &plugin.inner.host.engine,
            shared: &shared,
        };
        let sandbox = Sandbox::resolve(&shared, None).map_err(|message| CallError::Host {
            plugin: name.clone(),
            message,
        })?;
        let call_for = CallFor {
            session_id: "",
            tool: "open",
        };
        let mut prepared = prepare(&inv, &sandbox, call_for)?;
        prepared.store.data_mut().chat = Some(ChatHostState {
            work: work.clone(),
            tls: plugin.inner.host.egress.tls.clone(),
        });
        let store = &mut prepared.store;
        let opening = async {
            let instance = pre.instance.instantiate_async(&mut *store).await?;
            let adapter = pre.adapter.load(&mut *store, &instance)?;
            let identity = match &pre.identity {
                Some(indices) => Some(
                    indices
                        .load(&mut *store, &instance)?
                        .talaria_plugin_chat_identity()
                        .clone(),
                ),
                None => None,
            };
            let opened = adapter
                .talaria_plugin_chat_adapter()
                .connection()
                .call_open(&mut *store, attempt)
                .await?;
            Ok((adapter, identity, opened))
        };
        let raced = race(opening, shared.timeout(), None).await;
        let (adapter, identity, opened) = classify(raced, &prepared, &shared, "open")?;
        let connection = opened.map_err(|message| ChatError::Adapter {
            plugin: name,
            call: "open",
            message,
        })?;
        Ok(Self {
            plugin: plugin.clone(),
            resident: Resident::new(shared, prepared),
            adapter,
            identity,
            connection,
            work,
        })
    }

    /// The connection's host-work signal: raise it to make a waiting
    /// [`next_events`](Self::next_events) return early (see [`HostWork`]).
    pub fn work(&self) -> HostWork {
        self.work.clone()
    }

    /// The plugin it runs.
    pub fn plugin(&self) -> &LoadedPlugin {
        &self.plugin
    }

    /// Whether it can take calls (not dead, not closed).
    pub fn is_usable(&self) -> bool {
        self.resident.is_usable()
    }

    /// What the platform can do.
    pub async fn capabilities(&mut self) -> Result<ChatCapabilities, ChatError> {
        let limit = self.resident.shared.timeout();
        self.call("capabilities", limit, async |store, guest, conn| {
            guest.connection().call_capabilities(store, conn).await
        })
        .await
        .map(Into::into)
    }

    /// The messages that arrived, waiting at most `timeout` for the first;
    /// early (maybe with none) when the host-work signal is raised, which
    /// this lowers once the call returns. An [`ChatError::Adapter`] here
    /// means the connection is lost: drop it and open a new one.
    pub async fn next_events(
        &mut self,
        timeout: Duration,
    ) -> Result<Vec<InboundMessage>, ChatError> {
        let timeout_ms = u32::try_from(timeout.as_millis()).unwrap_or(u32::MAX);
        let limit = Duration::from_millis(timeout_ms.into()) + NEXT_EVENTS_MARGIN;
        let identity = self.identity.clone();
        let result = self
            .call("next-events", limit, async |store, guest, conn| {
                let events = guest
                    .connection()
                    .call_next_events(&mut *store, conn, timeout_ms)
                    .await?;
                match events {
                    Ok(events) => Ok(Ok(identified(store, identity.as_ref(), events).await?)),
                    Err(message) => Ok(Err(message)),
                }
            })
            .await;
        self.work.lower();
        result?.map_err(|message| self.adapter_error("next-events", message))
    }

    /// Sends one message (no longer than the capabilities allow).
    pub async fn send(&mut self, message: Outbound) -> Result<SendOutcome, ChatError> {
        let limit = self.resident.shared.timeout();
        let message = message.into();
        self.call("send", limit, async |store, guest, conn| {
            guest.connection().call_send(store, conn, &message).await
        })
        .await
        .map(Into::into)
    }

    /// Shows that the bot is writing in `chat_id`, where the platform can.
    pub async fn typing(&mut self, chat_id: &str, thread: Option<&str>) -> Result<(), ChatError> {
        let limit = self.resident.shared.timeout();
        self.call("typing", limit, async |store, guest, conn| {
            guest
                .connection()
                .call_typing(store, conn, chat_id, thread)
                .await
        })
        .await
    }

    /// What the platform says about `chat_id`.
    pub async fn chat_info(&mut self, chat_id: &str) -> Result<ChatDetails, ChatError> {
        let limit = self.resident.shared.timeout();
        let details = self
            .call("chat-info", limit, async |store, guest, conn| {
                guest
                    .connection()
                    .call_chat_info(store, conn, chat_id)
                    .await
            })
            .await?;
        details
            .map(Into::into)
            .map_err(|message| self.adapter_error("chat-info", message))
    }

    /// The bytes of attachment `id`, refused when over `max_bytes` (by the
    /// adapter, and by the host if the adapter returns more).
    pub async fn fetch_attachment(
        &mut self,
        id: &str,
        max_bytes: u64,
    ) -> Result<Vec<u8>, ChatError> {
        let limit = self.resident.shared.timeout();
        let bytes = self
            .call("fetch-attachment", limit, async |store, guest, conn| {
                guest
                    .connection()
                    .call_fetch_attachment(store, conn, id, max_bytes)
                    .await
            })
            .await?
            .map_err(|message| self.adapter_error("fetch-attachment", message))?;
        if u64::try_from(bytes.len()).unwrap_or(u64::MAX) > max_bytes {
            let message = format!(
                "returned {} bytes for {id}, over the limit of {max_bytes}",
                bytes.len()
            );
            return Err(self.adapter_error("fetch-attachment", message));
        }
        Ok(bytes)
    }

    /// A request to the platform's webhook route: the response for the
    /// caller and the messages it carried.
    pub async fn webhook(
        &mut self,
        request: WebhookRequest,
    ) -> Result<(WebhookResponse, Vec<InboundMessage>), ChatError> {
        let limit = self.resident.shared.timeout();
        let request = request.into();
        let identity = self.identity.clone();
        let (response, events) = self
            .call("webhook", limit, async |store, guest, conn| {
                let (response, events) = guest
                    .connection()
                    .call_webhook(&mut *store, conn, &request)
                    .await?;
                Ok((
                    response,
                    identified(store, identity.as_ref(), events).await?,
                ))
            })
            .await?;
        Ok((response.into(), events))
    }

    /// Whether the adapter says how it identifies senders (`chat-identity`,
    /// 0.1.3); without it every sender's identity is unstated.
    pub fn states_identity(&self) -> bool {
        self.identity.is_some()
    }

    /// Signs off and drops the connection; later calls say
    /// [`ChatError::Closed`].
    pub async fn close(&mut self) -> Result<(), ChatError> {
        let limit = self.resident.shared.timeout();
        self.call("close", limit, async |store, guest, conn| {
            guest.connection().call_close(&mut *store, conn).await?;
            conn.resource_drop_async(store).await
        })
        .await?;
        self.resident.close();
        Ok(())
    }

    fn adapter_error(&self, call: &'static str, message: String) -> ChatError {
        ChatError::Adapter {
            plugin: self.plugin.name().to_owned(),
            call,
            message,
        }
    }

    /// Runs one call on the connection within `limit`; an error that leaves
    /// the instance unusable marks it dead.
    async fn call<R>(
        &mut self,
        name: &'static str,
        limit: Duration,
        call: impl AsyncFnOnce(&mut Store<PluginState>, &Guest, ResourceAny) -> wasmtime::Result<R>,
    ) -> Result<R, ChatError> {
        let plugin = self.plugin.name().to_owned();
        let guest = self.adapter.talaria_plugin_chat_adapter();
        let connection = self.connection;
        match self
            .resident
            .call(name, limit, async |store| {
                call(store, guest, connection).await
            })
            .await
        {
            Ok(result) => Ok(result?),
            Err(Unusable::Dead(reason)) => Err(ChatError::Dead { plugin, reason }),
            Err(Unusable::Closed) => Err(ChatError::Closed { plugin }),
        }
    }
}

/// `events` as the host's messages, each sender's identity as the adapter's
/// `chat-identity` says (unstated without it).
async fn identified(
    store: &mut Store<PluginState>,
    identity: Option<&IdentityGuest>,
    events: Vec<wit::InboundMessage>,
) -> wasmtime::Result<Vec<InboundMessage>> {
    let mut messages = Vec::with_capacity(events.len());
    for event in events {
        let said = match identity {
            Some(guest) => Some(guest.call_identify(&mut *store, &event).await?),
            None => None,
        };
        let mut message = InboundMessage::from(event);
        if let Some(said) = said {
            message.sender.identity = said.into();
        }
        messages.push(message);
    }
    Ok(messages)
}
