//! The `config` import: the manifest's `[config]`, then granted env vars.

use crate::bindings::HostError;
use crate::bindings::talaria::plugin::config;
use crate::state::HostCtx;

impl config::Host for HostCtx {
    async fn get(&mut self, name: String) -> Result<Option<String>, HostError> {
        let plugin = &self.plugin;
        if let Some(value) = plugin.config.get(&name) {
            return Ok(Some(value.clone()));
        }
        if plugin.caps.env.contains(&name) {
            return Ok(talaria_environ::var(&name));
        }
        if plugin.requested_env.contains(&name) {
            return Err(HostError::Denied(plugin.denied(&format!("env {name}"))));
        }
        Ok(None)
    }
}
