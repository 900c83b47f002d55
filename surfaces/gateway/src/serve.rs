//! `talaria gateway run`: the gateway of one profile, in the foreground.
//! Holds the profile's gateway lock, loads the chat adapter plugins, opens
//! one account per platform configured under `gateway.platforms`, and runs
//! until `shutdown` is cancelled. Logs go to standard error.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use talaria_agent::{MessageTarget, Messenger};
use talaria_plugin_host::{ExecServices, PluginChatAdapters, check_allowed_users, config_section};
use talaria_profile::{ChatAddress, GatewayConfig, Overrides, ProfileHome};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::cron;
use crate::delivery::{Destination, deliver, post};
use crate::driver::Outbox;
use crate::lock::{GatewayLock, LockError};
use crate::plugin_port::PluginConnector;
use crate::ports::{WebhookRequest, WebhookResponse};
use crate::webhook::{
    self, ChatPoster, DeliveryLog, PlatformWebhooks, QUEUED_JOBS, WebhookLimits, WebhookRoute,
    WebhookService, job_queue, run_jobs,
};
use crate::{AccountSettings, AgentRunner, Shared, spawn_account};

/// Why the gateway could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// config.yaml could not be read or is invalid.
    #[error("{0}")]
    Config(String),
    /// Nothing to serve.
    #[error(
        "no platform is configured: add one under gateway.platforms in {0}, e.g.\n\
         gateway:\n  platforms:\n    irc:\n      server: irc.libera.chat\n      tls: true\n      \
         channels: \"#mychannel\"\n      allowed_users: [\"$a:myaccount\"]\n\
         (or a webhook route under gateway.webhook.routes)"
    )]
    NoPlatform(String),
    /// An `allowed_users` entry the platform's adapter says can name no one
    /// (on IRC, a bare nick).
    #[error("{0}")]
    AllowedUsers(String),
    /// The webhook listener's address cannot be bound.
    #[error("cannot listen for webhooks on {address}: {reason} (set gateway.webhook.port)")]
    Webhook {
        /// The address configured.
        address: String,
        /// Why binding failed.
        reason: String,
    },
    /// Another gateway of this profile runs.
    #[error(transparent)]
    Locked(#[from] LockError),
    /// The webhook routes' delivery log cannot be opened.
    #[error(transparent)]
    DeliveryLog(#[from] webhook::LogError),
    /// No plugin serves any configured platform (and no webhook route is set).
    #[error("no chat adapter plugin serves {platform} (installed: {installed}){notices}")]
    NoAdapter {
        /// The platform configured.
        platform: String,
        /// The platforms the loaded adapters serve.
        installed: String,
        /// What plugin loading reported.
        notices: String,
    },
}

/// What the gateway needs to start.
#[derive(Debug)]
pub struct GatewayOptions {
    /// The profile's home.
    pub home: ProfileHome,
    /// The profile's name (part of every session key).
    pub profile: String,
    /// Command-line overrides of the model settings.
    pub overrides: Overrides,
    /// The agents' working directory.
    pub cwd: PathBuf,
}

/// Runs the gateway until `shutdown`.
pub async fn run(options: GatewayOptions, shutdown: CancellationToken) -> Result<(), StartError> {
    let GatewayOptions {
        home,
        profile,
        overrides,
        cwd,
    } = options;
    let (_, config) =
        talaria_profile::load_profile(&home).map_err(|e| StartError::Config(e.to_string()))?;
    let gateway = config.gateway.clone();
    if gateway.platforms.is_empty() && gateway.webhook.routes.is_empty() {
        return Err(StartError::NoPlatform(
            home.config_file().display().to_string(),
        ));
    }
    let _lock = GatewayLock::acquire(&home.root().join("gateway"))?;
    for note in gateway.notes() {
        crate::log(format_args!("note: {note}"));
    }
    let exec = ExecServices::deny_all(&home.root().join("gateway").join("approvals.always"))
        .map_err(StartError::Config)?;
    let plugins = talaria_agent::plugins::load_plugins(
        &home,
        &config,
        &cwd,
        "gateway",
        exec,
        talaria_agent::plugins::PluginServices::default(),
    )
    .await;
    let adapters = plugins
        .chats
        .unwrap_or_else(|| PluginChatAdapters::new(&[]));
    let mut installed = adapters
        .adapters()
        .into_iter()
        .map(|a| a.platform)
        .collect::<Vec<_>>()
        .join(", ");
    if installed.is_empty() {
        installed = "none".into();
    }
    let mut connectors = Vec::new();
    let mut missing = Vec::new();
    for platform in gateway.platforms.keys() {
        let Some(connector) = connector(&adapters, &gateway, platform) else {
            // The others still start (a Hermes import brings platforms that
            // have no adapter yet); the user is told which.
            crate::log(format_args!(
                "note: no chat adapter plugin serves gateway.platforms.{platform}; it is \
                 skipped (installed: {installed})"
            ));
            missing.push(platform.clone());
            continue;
        };
        connectors.push((platform.clone(), connector));
    }
    if connectors.is_empty() && gateway.webhook.routes.is_empty() {
        // Platform webhooks need a running platform: only routes run alone.
        return Err(StartError::NoAdapter {
            platform: missing.join(", "),
            installed,
            notices: notices(&plugins.notices),
        });
    }
    check_allowlists(&adapters, &gateway).await?;
    let webhook_listener = bind_webhook(&gateway).await?;
    let delivery_log = match webhook_listener {
        Some(_) => Some(DeliveryLog::open(&home.root().join("gateway.db"))?),
        None => None,
    };

    let approval_timeout = Duration::from_secs(config.approvals.timeout_secs);
    let clarify_timeout = Duration::from_secs(config.clarify.timeout_secs);
    let shared = Shared::for_home(&home, &gateway);
    let messenger = Arc::new(GatewayMessenger::new(&gateway));
    let runner =
        Arc::new(AgentRunner::new(home.clone(), overrides, cwd).with_messenger(messenger.clone()));
    for (platform, connector) in connectors {
        let settings = AccountSettings::new(
            &profile,
            &platform,
            &gateway,
            approval_timeout,
            clarify_timeout,
        );
        let outbox = spawn_account(connector, runner.clone(), settings, shared.clone());
        crate::log(format_args!("{platform}: started"));
        messenger.add(platform, outbox);
    }
    let cron = start_cron(
        &home,
        &gateway,
        runner.clone(),
        messenger.clone(),
        &shutdown,
    );
    let webhook_jobs = webhook_listener.zip(delivery_log).map(|(listener, log)| {
        start_webhook(
            listener,
            log,
            &gateway,
            runner,
            messenger.clone(),
            &shutdown,
        )
    });
    shutdown.cancelled().await;
    crate::log(format_args!("stopping"));
    messenger.shutdown();
    if let Some(jobs) = webhook_jobs {
        // The running webhook turn was told to stop; let it say how it ended.
        let _ = tokio::time::timeout(Duration::from_secs(10), jobs).await;
    }
    // Running jobs were told to stop too: their runs are recorded as stopped.
    let _ = tokio::time::timeout(Duration::from_secs(10), cron).await;
    // Let the drivers sign off (QUIT, a last acknowledgement) before exit.
    tokio::time::sleep(Duration::from_millis(500)).await;
    Ok(())
}

/// Asks each platform's adapter whether its `allowed_users` entries can name
/// anyone; the gateway does not start while one cannot (an IRC nick alone
/// would let in whoever takes it).
async fn check_allowlists(
    adapters: &PluginChatAdapters,
    gateway: &GatewayConfig,
) -> Result<(), StartError> {
    let mut problems = Vec::new();
    for (platform, settings) in &gateway.platforms {
        let Some(plugin) = adapters.find(platform) else {
            continue;
        };
        if settings.allowed_users.is_empty() {
            continue;
        }
        match check_allowed_users(plugin, &settings.allowed_users).await {
            Ok(refused) => problems.extend(
                refused
                    .into_iter()
                    .map(|(_, why)| format!("gateway.platforms.{platform}.allowed_users: {why}")),
            ),
            Err(error) => problems.push(format!(
                "gateway.platforms.{platform}.allowed_users could not be checked: {error}"
            )),
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(StartError::AllowedUsers(problems.join("\n")))
    }
}

/// How often the gateway looks for due jobs.
const CRON_TICK: Duration = Duration::from_secs(60);

/// Ticks the profile's scheduled jobs every minute until `shutdown`, each
/// tick on a task of its own (a long run does not hold up the next tick's
/// claims); answers go out through the gateway's accounts.
fn start_cron(
    home: &ProfileHome,
    gateway: &GatewayConfig,
    runner: Arc<AgentRunner>,
    messenger: Arc<GatewayMessenger>,
    shutdown: &CancellationToken,
) -> tokio::task::JoinHandle<()> {
    let delivery = Arc::new(cron::CronDelivery {
        poster: Some(messenger as Arc<dyn ChatPoster>),
        home_channels: home_channels(gateway),
    });
    let store = Arc::new(talaria_cron::JobStore::new(home.cron_dir()));
    let (home, shutdown) = (home.clone(), shutdown.clone());
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(CRON_TICK);
        let mut running = tokio::task::JoinSet::new();
        loop {
            tokio::select! {
                () = shutdown.cancelled() => break,
                _ = ticks.tick() => {}
            }
            while running.try_join_next().is_some() {}
            let (tz, limits) = match cron::settings(&home) {
                Ok(settings) => settings,
                Err(message) => {
                    crate::log(format_args!("cron: not ticking: {message}"));
                    continue;
                }
            };
            let (store, delivery, runner, shutdown) = (
                store.clone(),
                delivery.clone(),
                runner.clone(),
                shutdown.clone(),
            );
            running.spawn(async move {
                let runner = runner as Arc<dyn cron::CronRunner>;
                match cron::tick(&store, &tz, runner, &delivery, limits, &shutdown).await {
                    Ok(Some((_, runs))) => {
                        for run in runs {
                            let how = run
                                .error
                                .map_or("ran".to_owned(), |e| format!("failed: {e}"));
                            crate::log(format_args!("cron {}: {how}", run.job));
                        }
                    }
                    Ok(None) => {}
                    Err(message) => crate::log(format_args!("cron: tick failed: {message}")),
                }
            });
        }
        while running.join_next().await.is_some() {}
    })
}

/// The connector of `platform`'s account: its adapter plugin with the
/// platform's settings as its config section; `None` when no plugin serves it.
pub(crate) fn connector(
    adapters: &PluginChatAdapters,
    gateway: &GatewayConfig,
    platform: &str,
) -> Option<PluginConnector> {
    let plugin = adapters.find(platform)?;
    let settings = gateway.platforms.get(platform)?;
    let section: serde_json::Map<String, serde_json::Value> = settings
        .settings
        .iter()
        .filter_map(|(key, value)| Some((key.clone(), serde_json::to_value(value).ok()?)))
        .collect();
    Some(PluginConnector::new(
        plugin.clone(),
        config_section(&section),
    ))
}

/// Each platform's home channel, where one is configured.
pub(crate) fn home_channels(gateway: &GatewayConfig) -> BTreeMap<String, ChatAddress> {
    gateway
        .platforms
        .iter()
        .filter_map(|(platform, settings)| {
            let home = settings.home_channel()?;
            Some((
                platform.clone(),
                ChatAddress {
                    platform: platform.clone(),
                    chat_id: home.chat_id,
                    thread: home.thread,
                },
            ))
        })
        .collect()
}

/// The webhook listener's socket, when routes are configured.
async fn bind_webhook(gateway: &GatewayConfig) -> Result<Option<TcpListener>, StartError> {
    if !gateway.webhook.is_used() {
        return Ok(None);
    }
    let host = gateway.webhook.host.trim_matches(|c| c == '[' || c == ']');
    let address = format!("{host}:{}", gateway.webhook.port);
    TcpListener::bind((host, gateway.webhook.port))
        .await
        .map(Some)
        .map_err(|error| StartError::Webhook {
            address,
            reason: error.to_string(),
        })
}

/// Serves the webhook routes on `listener`, their turns run one at a time
/// by the task returned.
fn start_webhook(
    listener: TcpListener,
    log: DeliveryLog,
    gateway: &GatewayConfig,
    runner: Arc<AgentRunner>,
    messenger: Arc<GatewayMessenger>,
    shutdown: &CancellationToken,
) -> tokio::task::JoinHandle<()> {
    let routes = gateway
        .webhook
        .routes
        .iter()
        .map(|(name, route)| (name.clone(), WebhookRoute::from_config(route)))
        .collect();
    let (queue, jobs) = job_queue(QUEUED_JOBS);
    messenger.set_webhook_platforms(&gateway.webhook.platforms);
    let service = Arc::new(
        WebhookService::new(routes, Arc::new(queue), WebhookLimits::default(), log)
            .with_platforms(messenger.clone()),
    );
    if let Ok(address) = listener.local_addr() {
        let mut paths: Vec<String> = gateway
            .webhook
            .routes
            .keys()
            .map(|route| format!("/hooks/{route}"))
            .collect();
        paths.extend(
            gateway
                .webhook
                .platforms
                .iter()
                .map(|platform| format!("/platforms/{platform}")),
        );
        crate::log(format_args!(
            "webhook: listening on http://{address} ({})",
            paths.join(", ")
        ));
    }
    tokio::spawn(webhook::serve(listener, service, shutdown.clone()));
    tokio::spawn(run_jobs(jobs, runner, messenger, shutdown.clone()))
}

fn notices(notices: &[String]) -> String {
    if notices.is_empty() {
        String::new()
    } else {
        format!("\n{}", notices.join("\n"))
    }
}

/// `send_message` through the gateway's accounts, to the home channels the
/// user configured.
struct GatewayMessenger {
    targets: Vec<MessageTarget>,
    outboxes: std::sync::Mutex<BTreeMap<String, Outbox>>,
    /// The platforms whose servers push to `/platforms/<name>`.
    webhook_platforms: std::sync::Mutex<Vec<String>>,
}

impl GatewayMessenger {
    fn new(gateway: &GatewayConfig) -> Self {
        let targets = gateway
            .platforms
            .iter()
            .filter_map(|(platform, config)| {
                let home = config.home_channel()?;
                Some(MessageTarget {
                    platform: platform.clone(),
                    chat_id: home.chat_id,
                    thread: home.thread,
                    label: Some("home channel".into()),
                    current: false,
                })
            })
            .collect();
        Self {
            targets,
            outboxes: std::sync::Mutex::default(),
            webhook_platforms: std::sync::Mutex::default(),
        }
    }

    fn set_webhook_platforms(&self, platforms: &[String]) {
        if let Ok(mut listed) = self.webhook_platforms.lock() {
            *listed = platforms.to_vec();
        }
    }

    fn add(&self, platform: String, outbox: Outbox) {
        if let Ok(mut outboxes) = self.outboxes.lock() {
            outboxes.insert(platform, outbox);
        }
    }

    fn outbox(&self, platform: &str) -> Option<Outbox> {
        self.outboxes.lock().ok()?.get(platform).cloned()
    }

    fn shutdown(&self) {
        if let Ok(outboxes) = self.outboxes.lock() {
            outboxes.values().for_each(Outbox::shutdown);
        }
    }
}

/// How long a platform's pushed request waits for its connection.
const PLATFORM_WEBHOOK_WAIT: Duration = Duration::from_secs(30);

#[async_trait]
impl PlatformWebhooks for GatewayMessenger {
    fn accepts(&self, platform: &str) -> bool {
        self.webhook_platforms
            .lock()
            .is_ok_and(|listed| listed.iter().any(|p| p == platform))
            && self.outbox(platform).is_some()
    }

    async fn deliver(
        &self,
        platform: &str,
        request: WebhookRequest,
    ) -> Result<WebhookResponse, String> {
        let outbox = self
            .outbox(platform)
            .ok_or_else(|| format!("{platform} is not running"))?;
        tokio::time::timeout(PLATFORM_WEBHOOK_WAIT, outbox.webhook(request))
            .await
            .map_err(|_| format!("{platform} did not take the request within 30 s"))?
    }
}

/// How long a webhook's answer waits for its platform to connect.
const CONNECT_WAIT: Duration = Duration::from_secs(120);

#[async_trait]
impl ChatPoster for GatewayMessenger {
    async fn post(&self, to: &ChatAddress, text: &str) -> Result<(), String> {
        let outbox = self
            .outbox(&to.platform)
            .ok_or_else(|| format!("{} is not one of the gateway's platforms", to.platform))?;
        post(&outbox, to, text, CONNECT_WAIT).await
    }
}

#[async_trait]
impl Messenger for GatewayMessenger {
    fn targets(&self) -> Vec<MessageTarget> {
        self.targets.clone()
    }

    async fn send(&self, target: &MessageTarget, text: &str) -> Result<Option<String>, String> {
        let outbox = self
            .outbox(&target.platform)
            .ok_or_else(|| format!("{} is not connected", target.platform))?;
        let capabilities = outbox
            .capabilities()
            .ok_or_else(|| format!("{} has not connected yet", target.platform))?;
        let to = Destination {
            chat_id: target.chat_id.clone(),
            thread: target.thread.clone(),
            reply_to: None,
        };
        let ids = deliver(&outbox, &capabilities, &to, text)
            .await
            .map_err(|e| e.to_string())?;
        Ok(ids.into_iter().flatten().next())
    }
}
