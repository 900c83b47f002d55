//! Test plugin `memory-probe`: a memory provider written against the frozen
//! `talaria:plugin@0.1.1` WIT with raw `wit-bindgen` bindings, so it exports
//! `memory-provider` without the 0.1.2 lifecycle. `prefetch` answers with the
//! query it was given and the session id; `sync-turn` logs how many messages
//! the turn had.

// Only the generated component glue is unsafe; nothing here is written by hand.
#![allow(unsafe_code)]

wit_bindgen::generate!({
    world: "memory-plugin",
    path: "../../../wit/versions/0.1.1",
});

use exports::talaria::plugin::memory_provider::Guest;
use talaria::plugin::log::{Level, log};
use talaria::plugin::types::{Message, SessionInfo};

struct Probe;

impl Guest for Probe {
    fn prefetch(session: SessionInfo, query: String) -> Result<String, String> {
        Ok(format!(
            "memory-probe recalls {query:?} (session {})",
            session.session_id
        ))
    }

    fn sync_turn(_session: SessionInfo, turn: Vec<Message>) -> Result<(), String> {
        log(
            Level::Info,
            &format!("memory-probe learnt a turn of {} messages", turn.len()),
        );
        Ok(())
    }

    fn shutdown() {}
}

export!(Probe);
