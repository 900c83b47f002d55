//! Delivering a scheduled job's answer when no gateway runs (`talaria cron
//! tick` and `run`). The chat adapter plugins are loaded on the first
//! delivery; each delivery opens the platform's account only to send — it
//! reads no events, so it takes nothing a gateway should answer later —
//! and closes it again.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use talaria_plugin_host::{ExecServices, PluginChatAdapters};
use talaria_profile::{ChatAddress, GatewayConfig, ProfileHome};
use tokio::sync::OnceCell;

use crate::cron::CronDelivery;
use crate::delivery::post;
use crate::driver::send_only_account;
use crate::serve::{connector, home_channels};
use crate::webhook::ChatPoster;

/// How long a delivery waits for its account to connect.
const CONNECT_WAIT: Duration = Duration::from_secs(60);
/// How long an account has to close (an IRC QUIT after its queued lines,
/// which take up to 20 s at its flood rate).
const CLOSE_WAIT: Duration = Duration::from_secs(30);

impl CronDelivery {
    /// Delivery without a gateway, through accounts opened only to send,
    /// with the platforms' settings under `gateway.platforms`; the plugins
    /// are loaded for agents working in `cwd`.
    pub fn send_only(home: &ProfileHome, cwd: PathBuf) -> Result<Self, String> {
        let (_, config) = talaria_profile::load_profile(home).map_err(|e| e.to_string())?;
        let gateway = config.gateway;
        Ok(Self {
            home_channels: home_channels(&gateway),
            poster: Some(Arc::new(SendOnlyPoster {
                home: home.clone(),
                cwd,
                gateway,
                adapters: OnceCell::new(),
            })),
        })
    }
}

/// Opens an account per message.
struct SendOnlyPoster {
    home: ProfileHome,
    cwd: PathBuf,
    gateway: GatewayConfig,
    adapters: OnceCell<Result<PluginChatAdapters, String>>,
}

impl SendOnlyPoster {
    /// The chat adapter plugins, loaded once, as `talaria gateway run` loads them.
    async fn adapters(&self) -> Result<&PluginChatAdapters, String> {
        let loaded = self
            .adapters
            .get_or_init(|| async {
                let approvals = self.home.root().join("gateway").join("approvals.always");
                let exec = ExecServices::deny_all(&approvals)?;
                // Chat adapters only: no web settings or private URLs to apply.
                let plugins = talaria_agent::plugins::load_plugins(
                    &self.home,
                    &talaria_profile::ConfigFile::default(),
                    &self.cwd,
                    "gateway",
                    exec,
                    talaria_agent::plugins::PluginServices::default(),
                )
                .await;
                Ok(plugins
                    .chats
                    .unwrap_or_else(|| PluginChatAdapters::new(&[])))
            })
            .await;
        loaded.as_ref().map_err(Clone::clone)
    }
}

#[async_trait]
impl ChatPoster for SendOnlyPoster {
    async fn post(&self, to: &ChatAddress, text: &str) -> Result<(), String> {
        let platform = &to.platform;
        if !self.gateway.platforms.contains_key(platform) {
            return Err(format!(
                "{platform} is not configured under gateway.platforms in config.yaml"
            ));
        }
        let adapters = self.adapters().await?;
        let connector = connector(adapters, &self.gateway, platform)
            .ok_or_else(|| format!("no chat adapter plugin serves {platform}"))?;
        let (driver, outbox) = send_only_account(connector);
        let running = tokio::spawn(driver.run());
        let sent = post(&outbox, to, text, CONNECT_WAIT).await;
        outbox.shutdown();
        let _ = tokio::time::timeout(CLOSE_WAIT, running).await;
        sent
    }
}
