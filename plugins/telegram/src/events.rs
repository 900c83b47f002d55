//! `next-events`: the long-poll loop, over an I/O port so the component's
//! `wasi:http` + pollable layer and the unit tests' scripted port share it.
//!
//! A `getUpdates` that has not answered when host work arrives (or the
//! call's time is up) stays in flight in the loop; the next call waits on
//! the same request, so no update is lost and none is fetched twice. A new
//! request, carrying the offset that confirms what was returned, starts only
//! on the call after the messages went to the host.

use serde_json::Value;
use talaria_plugin_sdk::chat_types::InboundMessage;

use crate::inbound::BotIdentity;
use crate::poller::Poller;

/// The pause after an empty `getUpdates` that came back before half its long-poll timeout,
/// in nanoseconds: a server that answers at once instead of holding the request
/// (telegram-test-api does) is not asked in a tight loop. Any other answer — messages, or a
/// long poll held until it timed out — is followed by the next `getUpdates` at once, so a
/// message is never delayed by a pause.
pub const MIN_POLL_INTERVAL_NS: u64 = 500_000_000;

/// What ended a wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wake {
    /// The request in flight answered (or failed).
    Answered,
    /// The host has work for the connection.
    HostWork,
    /// The time waited for is up.
    Deadline,
}

/// The I/O `next-events` needs.
pub trait PollIo {
    /// A `getUpdates` in flight.
    type Pending;
    /// Monotonic time, in nanoseconds.
    fn now(&mut self) -> u64;
    fn host_work_ready(&mut self) -> bool;
    /// Sends `getUpdates` with these parameters.
    fn start(&mut self, body: &Value) -> Result<Self::Pending, String>;
    /// Waits for `pending` to answer (an answer wins over the others when
    /// several are ready), host work, or the time `until`.
    fn wait(&mut self, pending: Option<&Self::Pending>, until: u64) -> Wake;
    /// The `result` of an answered request.
    fn finish(&mut self, pending: Self::Pending) -> Result<Value, String>;
}

/// The polling state of one connection.
#[derive(Debug)]
pub struct EventLoop<P> {
    poller: Poller,
    in_flight: Option<P>,
    /// No new `getUpdates` starts before this time.
    not_before: u64,
    /// When the request in flight started.
    started_at: u64,
    poll_timeout_secs: u32,
}

impl<P> EventLoop<P> {
    pub fn new(poll_timeout_secs: u32) -> Self {
        Self {
            poller: Poller::default(),
            in_flight: None,
            not_before: 0,
            started_at: 0,
            poll_timeout_secs,
        }
    }

    /// The messages that arrived, waiting at most `timeout_ms` for the
    /// first; none when host work comes first. An error means the
    /// connection is lost.
    pub fn next_events<I: PollIo<Pending = P>>(
        &mut self,
        io: &mut I,
        bot: &BotIdentity,
        timeout_ms: u32,
    ) -> Result<Vec<InboundMessage>, String> {
        let deadline = io
            .now()
            .saturating_add(u64::from(timeout_ms).saturating_mul(1_000_000));
        loop {
            let pending = match self.in_flight.take() {
                Some(pending) => pending,
                None => {
                    let now = io.now();
                    if now < self.not_before {
                        if now >= deadline || io.host_work_ready() {
                            return Ok(Vec::new());
                        }
                        io.wait(None, self.not_before.min(deadline));
                        continue;
                    }
                    let body = self.poller.request(self.poll_timeout_secs);
                    self.started_at = now;
                    io.start(&body)?
                }
            };
            match io.wait(Some(&pending), deadline) {
                Wake::Answered => {
                    let result = io.finish(pending)?;
                    let messages = self.poller.take(&result, bot)?;
                    if !messages.is_empty() {
                        return Ok(messages);
                    }
                    let now = io.now();
                    let held_for = now.saturating_sub(self.started_at);
                    let long_poll = u64::from(self.poll_timeout_secs).saturating_mul(1_000_000_000);
                    if held_for < long_poll / 2 {
                        self.not_before = now.saturating_add(MIN_POLL_INTERVAL_NS);
                    }
                }
                Wake::HostWork | Wake::Deadline => {
                    self.in_flight = Some(pending);
                    return Ok(Vec::new());
                }
            }
        }
    }

    /// Drops the request in flight (what it may bring stays unconfirmed, so
    /// Telegram keeps it for the next connection) and gives the
    /// `getUpdates` parameters that confirm what was returned, if any.
    pub fn close(&mut self) -> Option<Value> {
        self.in_flight = None;
        self.poller.acknowledgement()
    }
}

#[cfg(test)]
#[path = "events_tests.rs"]
mod tests;
