//! The gateway against a fake platform and a fake runner, in paused time.

mod approvals;
mod busy;
mod clarify;
mod delivery;
mod fakes;
mod identity;
mod messages;
mod reconnect;

use std::sync::Arc;
use std::time::Duration;

use talaria_pairing::PairingStore;
use talaria_profile::{BusyMode, PlatformConfig};
use tokio::sync::mpsc;

use crate::clock::Clock;
use crate::driver::Outbox;
use crate::gateway::{AccountSettings, Shared, spawn_account};
use crate::ports::Outbound;
use crate::router::Router;
use fakes::{FakeConnector, FakePlatform, FakeRunner};

/// 2027-01-15, a fixed start for the wall clock.
const T0: u64 = 1_800_000_000;

struct Harness {
    platform: Arc<FakePlatform>,
    runner: Arc<FakeRunner>,
    sent: mpsc::UnboundedReceiver<Outbound>,
    outbox: Outbox,
    shared: Shared,
    _dir: tempfile::TempDir,
}

fn allowing(users: &[&str]) -> PlatformConfig {
    PlatformConfig {
        allowed_users: users.iter().map(|u| (*u).to_owned()).collect(),
        ..PlatformConfig::default()
    }
}

fn with_mode(users: &[&str], busy_mode: BusyMode) -> PlatformConfig {
    PlatformConfig {
        busy_mode,
        ..allowing(users)
    }
}

impl Harness {
    /// A gateway for platform `irc` with `config`, running.
    fn start(config: PlatformConfig) -> Self {
        Self::start_with(config, 24)
    }

    fn start_with(config: PlatformConfig, idle_reset_hours: u32) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let (platform, sent) = FakePlatform::new();
        let shared = Shared {
            router: Router::new(dir.path().join("gateway.db"), idle_reset_hours),
            sessions_dir: dir.path().join("sessions"),
            turns: Arc::default(),
            approvals: Arc::default(),
            clarifications: Arc::default(),
            pairing: PairingStore::new(dir.path().join("pairing")),
            clock: Clock::starting_at(T0),
            running: Arc::new(tokio::sync::Semaphore::new(2)),
        };
        let settings = AccountSettings {
            profile: "default".into(),
            platform: "irc".into(),
            allow_all: false,
            config,
            approval_timeout: Duration::from_secs(60),
            clarify_timeout: Duration::from_secs(300),
        };
        let runner = Arc::new(FakeRunner::default());
        let outbox = spawn_account(
            FakeConnector(platform.clone()),
            runner.clone(),
            settings,
            shared.clone(),
        );
        Self {
            platform,
            runner,
            sent,
            outbox,
            shared,
            _dir: dir,
        }
    }

    /// The next message the bot sends (waiting up to an hour of paused time).
    async fn next_sent(&mut self) -> Outbound {
        tokio::time::timeout(Duration::from_secs(3600), self.sent.recv())
            .await
            .expect("the bot sends something within an hour")
            .expect("the platform is still there")
    }

    /// The next message's text.
    async fn next_text(&mut self) -> String {
        self.next_sent().await.text
    }

    /// Asserts the bot sends nothing for `secs` seconds.
    async fn quiet_for(&mut self, secs: u64) {
        if let Ok(Some(message)) =
            tokio::time::timeout(Duration::from_secs(secs), self.sent.recv()).await
        {
            panic!("expected silence, the bot sent {message:?}");
        }
    }
}
