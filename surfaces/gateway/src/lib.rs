//! The gateway: one agent behind chat platforms (issue 24).
//!
//! - [`ports`]: what the gateway needs from outside — a platform
//!   [`Connection`](ports::Connection) opened by a [`Connector`](ports::Connector)
//!   (the chat adapter plugin), and a [`TurnRunner`](ports::TurnRunner) (the agent).
//! - [`driver`]: one task per account holds its connection, reconnecting with
//!   backoff; others reach it through an [`Outbox`].
//! - [`gateway`]: each inbound message is authorized (`talaria-pairing`),
//!   routed to its session ([`router`]), and run under its session's lease
//!   with the platform's busy mode ([`turns`]); approvals and `clarify`
//!   questions are asked in the chat ([`approvals`], [`clarify`]); answers are split and sent with retries ([`delivery`]).
//! - `runner` (feature `agent`, on by default): the real turn runner, an agent
//!   built from the profile per turn.
//! - [`webhook`]: the listener for signed webhook deliveries.
//! - [`cron`]: a tick of the scheduled jobs (run, saved, delivered; without
//!   a gateway through accounts opened only to send, `send_only`).
//! - [`GatewayLock`]: one gateway per profile; [`ServiceUnit`]: the systemd
//!   user unit of `talaria gateway install`.

pub mod approvals;
pub mod attachments;
pub mod clarify;
pub mod clock;
pub mod cron;
pub mod delivery;
pub mod driver;
pub mod gateway;
mod lock;
#[cfg(feature = "agent")]
mod plugin_port;
pub mod ports;
pub mod router;
#[cfg(feature = "agent")]
pub mod runner;
#[cfg(feature = "agent")]
mod send_only;
#[cfg(feature = "agent")]
pub mod serve;
mod service;
mod split;
pub mod turns;
pub mod webhook;

#[cfg(test)]
mod scenarios;

pub use driver::{AccountDriver, Outbox, account, send_only_account};
pub use gateway::{AccountSettings, Gateway, Shared, spawn_account};
pub use lock::{GatewayLock, LockError, PID_FILE, running};
#[cfg(feature = "agent")]
pub use runner::AgentRunner;
pub use service::{ServiceError, ServiceUnit, user_unit_dir};
pub use split::{LengthUnit, split_message};

/// A line on standard error: the gateway runs as a daemon and logs there.
pub(crate) fn log(line: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "talaria gateway: {line}");
}
