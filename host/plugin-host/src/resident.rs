//! A long-lived instance: one plugin instance in a store of its own, kept
//! between calls (a chat connection, a session's memory provider) and called
//! one call at a time. Each call gets its own deadline; a call that traps,
//! times out, runs out of memory or is abandoned mid-way leaves the instance
//! dead, and later calls say so.

use std::sync::Arc;
use std::time::{Duration, Instant};

use wasmtime::Store;

use crate::error::CallError;
use crate::invoke::{Prepared, classify, race};
use crate::state::{PluginShared, PluginState};

/// Why a resident instance took no call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Unusable {
    /// An earlier call killed it (the reason is that call's error).
    Dead(String),
    /// It was closed on purpose.
    Closed,
}

/// Where the instance stands.
enum State {
    Open,
    /// A call is running; still so at the next call if the caller dropped
    /// the previous one mid-way, which leaves the instance unusable.
    Busy,
    Dead(String),
    Closed,
}

/// One instance and its store, with the plugin's shared state.
pub(crate) struct Resident {
    pub(crate) shared: Arc<PluginShared>,
    pub(crate) prepared: Prepared,
    state: State,
}

impl Resident {
    /// An instance already created in `prepared`'s store.
    pub(crate) fn new(shared: Arc<PluginShared>, prepared: Prepared) -> Self {
        Self {
            shared,
            prepared,
            state: State::Open,
        }
    }

    /// Whether it can take calls.
    pub(crate) fn is_usable(&self) -> bool {
        matches!(self.state, State::Open)
    }

    /// Takes no more calls.
    pub(crate) fn close(&mut self) {
        self.state = State::Closed;
    }

    /// Runs one call named `name` within `limit`. `Err(Unusable)` when the
    /// instance could not take it; otherwise the call's own result, an
    /// error of which kills the instance.
    pub(crate) async fn call<R>(
        &mut self,
        name: &str,
        limit: Duration,
        call: impl AsyncFnOnce(&mut Store<PluginState>) -> wasmtime::Result<R>,
    ) -> Result<Result<R, CallError>, Unusable> {
        match &self.state {
            State::Open => {}
            State::Busy => {
                let reason = "an earlier call was abandoned before it returned".to_owned();
                self.state = State::Dead(reason.clone());
                return Err(Unusable::Dead(reason));
            }
            State::Dead(reason) => return Err(Unusable::Dead(reason.clone())),
            State::Closed => return Err(Unusable::Closed),
        }
        self.state = State::Busy;
        let data = self.prepared.store.data_mut();
        data.host.deadline = Instant::now() + limit;
        name.clone_into(&mut data.host.tool);
        data.timed_out = false;
        data.http_policy.refused.clear();
        let raced = race(call(&mut self.prepared.store), limit, None).await;
        let mut result = classify(raced, &self.prepared, &self.shared, name);
        // The limit was this call's, which may not be the plugin's.
        if let Err(CallError::Timeout { timeout_ms, .. }) = &mut result {
            *timeout_ms = u64::try_from(limit.as_millis()).unwrap_or(u64::MAX);
        }
        self.state = match &result {
            Ok(_) => State::Open,
            Err(error) => State::Dead(error.to_string()),
        };
        Ok(result)
    }
}
