//! Test plugin `memory-probe`: a memory provider. `prefetch` answers with the
//! query it was given and the session id; `sync-turn` logs how many messages
//! the turn had.

use talaria_plugin_sdk::{MemoryProvider, Message, SessionInfo, log};

pub struct Probe;

impl MemoryProvider for Probe {
    fn prefetch(session: SessionInfo, query: String) -> Result<String, String> {
        Ok(format!(
            "memory-probe recalls {query:?} (session {})",
            session.session_id
        ))
    }

    fn sync_turn(_session: SessionInfo, turn: Vec<Message>) -> Result<(), String> {
        log::info(format!(
            "memory-probe learnt a turn of {} messages",
            turn.len()
        ));
        Ok(())
    }

    fn shutdown() {}
}

#[cfg(target_arch = "wasm32")]
talaria_plugin_sdk::memory_bindings::__export_memory_plugin!(
    Probe with_types_in talaria_plugin_sdk::memory_bindings
);
