//! Per-session failure counts: a plugin that fails too often in a session is
//! not called again in it.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::loaded::LoadedPlugin;
use crate::log::{LogLevel, LogSource};

/// Failures (traps, timeouts, memory exhaustion, invalid output) after which a
/// plugin is disabled for the rest of the session.
pub const DISABLE_AFTER_FAILURES: u32 = 3;

/// (plugin name, session id) → failures.
#[derive(Debug, Default)]
pub(crate) struct Failures(Mutex<HashMap<(String, String), u32>>);

impl Failures {
    pub(crate) fn count(&self, plugin: &str, session_id: &str) -> u32 {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&(plugin.to_owned(), session_id.to_owned()))
            .copied()
            .unwrap_or(0)
    }

    /// Counts one failure; logs when it disables the plugin.
    pub(crate) fn record(&self, plugin: &LoadedPlugin, session_id: &str) {
        let name = plugin.name();
        let count = {
            let mut map = self
                .0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let count = map
                .entry((name.to_owned(), session_id.to_owned()))
                .or_insert(0);
            *count += 1;
            *count
        };
        if count == DISABLE_AFTER_FAILURES {
            plugin.log().push(
                LogLevel::Error,
                LogSource::Host,
                &format!(
                    "plugin {name} is disabled for session {session_id} after {count} failures"
                ),
            );
        }
    }
}
