//! One server as the client uses it: its name, its validated entry from `config.yaml`, the
//! hash that keys its tools cache, and the reconnect policy.

use std::time::Duration;

use sha2::{Digest, Sha256};
use talaria_profile::{McpServerConfig, McpTransport};

use crate::error::{McpError, Scrubber};

/// When a server that keeps failing is left alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReconnectPolicy {
    /// Wait before the second attempt after a failure; doubles with each further failure.
    pub backoff_base: Duration,
    /// Longest wait between attempts.
    pub backoff_max: Duration,
    /// Consecutive failed attempts after which the server is parked.
    pub park_after: u32,
    /// How long a parked server answers at once with an error before it is probed again.
    pub park_for: Duration,
}

impl Default for ReconnectPolicy {
    fn default() -> Self {
        Self {
            backoff_base: Duration::from_secs(1),
            backoff_max: Duration::from_secs(30),
            park_after: 3,
            park_for: Duration::from_secs(300),
        }
    }
}

impl ReconnectPolicy {
    /// The wait after `failures` consecutive failed attempts (none after a server that was
    /// connected died: the next request reconnects at once).
    pub fn delay(&self, failures: u32) -> Duration {
        if failures == 0 {
            return Duration::ZERO;
        }
        let doublings = (failures - 1).min(16);
        self.backoff_base
            .saturating_mul(1 << doublings)
            .min(self.backoff_max)
    }
}

/// A server ready to connect to.
#[derive(Debug, Clone)]
pub struct ServerSpec {
    /// Its name (`mcp_servers.<name>`).
    pub name: String,
    /// Its entry, `${VAR}`-expanded and validated.
    pub config: McpServerConfig,
    /// Reconnects and parking.
    pub policy: ReconnectPolicy,
    /// What the server may not touch on this machine (the profile's controls and secrets,
    /// the agent's process), in bubblewrap or not.
    pub confinement: talaria_exec::Confinement,
    scrubber: Scrubber,
}

impl ServerSpec {
    /// Checks the entry (the profile validated it already; a hand-built one is checked here).
    pub fn new(name: &str, config: McpServerConfig) -> Result<Self, McpError> {
        config.validate(name).map_err(|message| McpError::Config {
            server: name.to_owned(),
            message,
        })?;
        Ok(Self {
            name: name.to_owned(),
            scrubber: Scrubber::for_config(&config),
            config,
            policy: ReconnectPolicy::default(),
            confinement: talaria_exec::Confinement::new(),
        })
    }

    /// The same server confined by `confinement`.
    pub fn with_confinement(mut self, confinement: talaria_exec::Confinement) -> Self {
        self.confinement = confinement;
        self
    }

    /// The same server with another reconnect policy.
    pub fn with_policy(mut self, policy: ReconnectPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Strips this server's credentials from `text`.
    pub fn clean(&self, text: &str) -> String {
        self.scrubber.clean(text)
    }

    /// The transport in use.
    pub fn transport(&self) -> McpTransport {
        self.config.effective_transport()
    }

    /// A hash of everything that decides which server is reached and how (command, args, env,
    /// cwd, url, headers, sandbox), so a changed entry never reads a stale tools cache. The
    /// tool filter is applied after the cache and is not part of it.
    pub fn config_hash(&self) -> String {
        let c = &self.config;
        let identity = serde_json::json!({
            "transport": format!("{:?}", self.transport()),
            "command": c.command,
            "args": c.args,
            "env": c.env,
            "cwd": c.cwd,
            "url": c.url,
            "headers": c.headers,
            "sandbox": c.sandboxed(),
        });
        let digest = Sha256::digest(identity.to_string().as_bytes());
        digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stdio(command: &str) -> McpServerConfig {
        McpServerConfig {
            command: Some(command.into()),
            ..McpServerConfig::default()
        }
    }

    #[test]
    fn the_hash_follows_the_connection_not_the_filter() {
        let a = ServerSpec::new("a", stdio("x")).unwrap();
        let mut filtered = stdio("x");
        filtered.tools.exclude = vec!["y".into()];
        filtered.timeout = Some(3.0);
        let b = ServerSpec::new("a", filtered).unwrap();
        assert_eq!(a.config_hash(), b.config_hash());
        let mut other = stdio("x");
        other.env.insert("K".into(), "v".into());
        assert_ne!(
            a.config_hash(),
            ServerSpec::new("a", other).unwrap().config_hash()
        );
        assert_eq!(a.config_hash().len(), 16);
    }

    #[test]
    fn invalid_entries_name_the_server() {
        let error = ServerSpec::new("both", McpServerConfig::default()).unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("MCP server both: mcp_servers.both: neither")
        );
    }

    #[test]
    fn backoff_doubles_up_to_its_cap() {
        let policy = ReconnectPolicy::default();
        let delays: Vec<u64> = (0..=8).map(|n| policy.delay(n).as_secs()).collect();
        assert_eq!(delays, [0, 1, 2, 4, 8, 16, 30, 30, 30]);
    }
}
