//! Every integration test of this crate, in one binary (each test binary links
//! the whole dependency tree; one per crate keeps builds and CI short).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

mod common;

#[path = "all/acp.rs"]
mod acp;
#[path = "all/api_principals.rs"]
mod api_principals;
#[path = "all/api_server.rs"]
mod api_server;
#[path = "all/batch.rs"]
mod batch;
#[path = "all/browser.rs"]
mod browser;
#[path = "all/cli.rs"]
mod cli;
#[path = "all/cron.rs"]
mod cron;
#[path = "all/delegation.rs"]
mod delegation;
#[path = "all/dist.rs"]
mod dist;
#[path = "all/execute_code.rs"]
mod execute_code;
#[path = "all/file_modes.rs"]
mod file_modes;
#[path = "all/gateway.rs"]
mod gateway;
#[path = "all/gateway_irc.rs"]
mod gateway_irc;
#[path = "all/gateway_irc_identity.rs"]
mod gateway_irc_identity;
#[path = "all/gateway_load.rs"]
mod gateway_load;
#[path = "all/gateway_mcp.rs"]
mod gateway_mcp;
#[path = "all/gateway_principals.rs"]
mod gateway_principals;
#[path = "all/gateway_telegram.rs"]
mod gateway_telegram;
#[path = "all/gateway_webhook.rs"]
mod gateway_webhook;
#[path = "all/hostile_text.rs"]
mod hostile_text;
#[path = "all/images.rs"]
mod images;
#[path = "all/knowledge.rs"]
mod knowledge;
#[path = "all/languages.rs"]
mod languages;
#[path = "all/listeners.rs"]
mod listeners;
#[path = "all/load_by_need.rs"]
mod load_by_need;
#[path = "all/mcp.rs"]
mod mcp;
#[path = "all/mcp_principals.rs"]
mod mcp_principals;
#[path = "all/mcp_serve.rs"]
mod mcp_serve;
#[path = "all/memory_providers.rs"]
mod memory_providers;
#[path = "all/model_errors.rs"]
mod model_errors;
#[path = "all/pairing.rs"]
mod pairing;
#[path = "all/plugin_group.rs"]
mod plugin_group;
#[cfg(any(feature = "extism", feature = "native"))]
#[path = "all/plugin_runtimes.rs"]
mod plugin_runtimes;
#[path = "all/plugin_templates.rs"]
mod plugin_templates;
#[path = "all/profiles.rs"]
mod profiles;
#[path = "all/registry.rs"]
mod registry;
#[path = "all/repl.rs"]
mod repl;
#[path = "all/responses.rs"]
mod responses;
#[path = "all/sandbox.rs"]
mod sandbox;
#[path = "all/sandbox_user.rs"]
mod sandbox_user;
#[path = "all/sessions.rs"]
mod sessions;
#[path = "all/smart_approval.rs"]
mod smart_approval;
#[path = "all/terminal.rs"]
mod terminal;
#[path = "all/tool_schemas.rs"]
mod tool_schemas;
#[path = "all/web.rs"]
mod web;
