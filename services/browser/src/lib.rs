//! The engine behind the browser tools: one headless Chromium per session,
//! started on first use and killed with its session (or its agent), driven
//! over the DevTools protocol. Every request the browser makes goes through
//! an egress proxy that keeps the private-address rule on the resolved
//! address, as the plugin host does for the web tools.

mod actions;
mod cdp;
mod keeper;
mod keys;
mod launch;
mod proxy;
mod session;
mod snapshot;

pub use actions::{ActionOutcome, PageImage};
pub use keeper::BrowserKeeper;
pub use launch::find_executable;
pub use proxy::{EgressProxy, Refusal};
pub use session::{Browser, BrowserSettings, ConsoleEntry, PageInfo};
pub use snapshot::Ref;

/// Why a browser call failed; the text is what the model reads.
#[derive(Debug, thiserror::Error)]
pub enum BrowserError {
    /// The browser did not start.
    #[error("the browser could not start: {0}")]
    Start(String),
    /// The DevTools connection failed or timed out.
    #[error("the browser's DevTools connection failed: {0}")]
    Protocol(String),
    /// The browser answered a command with an error.
    #[error("the browser refused the command: {0}")]
    Command(String),
    /// The browser went away.
    #[error("the browser closed unexpectedly; the next browser call starts a new one")]
    Closed,
    /// The address is not one the browser may open.
    #[error("{0}")]
    Refused(String),
    /// The model's arguments do not fit the page (a stale ref, an unknown key…).
    #[error("{0}")]
    Input(String),
    /// The page did not open.
    #[error("{0}")]
    Navigation(String),
}

#[cfg(test)]
mod tests;
