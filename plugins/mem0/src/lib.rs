//! Talaria plugin `mem0`: a memory provider backed by mem0's REST API
//! (version 1). Before each turn it searches the user's memories for the
//! user's message; after it, it sends the turn's user and assistant
//! messages, from which mem0 infers memories; writes of the built-in memory
//! tool are sent too.
//!
//! Settings (`plugin.toml`'s `[config]`): `base_url`, `user_id`, `agent_id`,
//! `recall_limit`. The API key never enters the plugin: requests carry
//! `Token {{secret:MEM0_API_KEY}}` and the host fills it in. The logic is
//! plain Rust over [`api::Transport`], unit-tested natively (`cargo test
//! --manifest-path plugins/Cargo.toml -p talaria-plugin-mem0`).

pub mod api;
pub mod provider;
pub mod settings;

talaria_plugin_sdk::export_memory!(provider::Mem0);
