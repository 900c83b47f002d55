//! Talaria plugin `facts`: a local fact store, kept in the plugin's
//! key-value store, with the tools `fact_store` and `fact_feedback` (names
//! as in Hermes Agent) and a memory provider that recalls the facts relevant
//! to each user message.
//!
//! The tools run in fresh instances per call; the memory provider is one
//! long-lived instance per session that keeps the facts indexed in memory.
//! They share nothing but the store: every save bumps a generation counter,
//! which the provider reads (one key) before recalling and reloads on change.
//!
//! Settings (`plugin.toml`'s `[config]`): `extract` (default false: the
//! auxiliary model lists each turn's durable facts) and `recall_limit`
//! (default 5). The logic is plain Rust over the [`kv::Kv`] and
//! [`extract::Model`] traits, unit-tested natively (`cargo test
//! --manifest-path plugins/Cargo.toml -p talaria-plugin-facts`).

pub mod extract;
pub mod fact;
pub mod index;
pub mod kv;
pub mod provider;
pub mod recall;
pub mod settings;
pub mod store;
pub mod tools;

use std::time::{SystemTime, UNIX_EPOCH};

/// The host clock in Unix seconds (0 if it is before 1970).
pub fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs())
}

talaria_plugin_sdk::export_tools!(tools::FactStoreTool, tools::FactFeedbackTool);
talaria_plugin_sdk::export_memory!(provider::Provider);
