//! The socket address check built from a plugin's granted network patterns
//! (the patterns themselves: `talaria_plugin_manifest::NetPattern`).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use std::collections::BTreeMap;

use talaria_plugin_manifest::address::non_public_reason;
use talaria_plugin_manifest::{NetPattern, config_address};

/// The granted patterns of one plugin, shared by its stores' socket checks.
#[derive(Debug, Clone, Default)]
pub(crate) struct NetPolicy {
    patterns: Arc<Vec<NetPattern>>,
    /// `security.allow_private_urls`: a wildcard grant reaches private
    /// addresses too (otherwise only a pattern naming the host does).
    allow_private: bool,
}

impl NetPolicy {
    /// The policy of granted `patterns`; a `$config.<key>` grant allows the
    /// address its setting has in `config` (none when it names none).
    pub(crate) fn new(patterns: &[String], config: &BTreeMap<String, String>) -> Self {
        Self {
            patterns: Arc::new(
                patterns
                    .iter()
                    .filter_map(|p| match config_address(p, config) {
                        Some(address) => NetPattern::parse(&address).ok(),
                        None => NetPattern::parse(p).ok(),
                    })
                    .collect(),
            ),
            allow_private: false,
        }
    }

    /// The same policy, with private addresses reachable through wildcard
    /// grants when `allow` (`security.allow_private_urls`).
    pub(crate) fn allowing_private(mut self, allow: bool) -> Self {
        self.allow_private = allow;
        self
    }

    /// Whether a grant names `host`:`port` itself (not through `*` or a
    /// `*.domain` suffix): such a host is reached even at a private address.
    pub(crate) fn names_explicitly(&self, host: &str, port: u16) -> bool {
        self.patterns
            .iter()
            .any(|p| p.is_explicit() && p.allows_name(host, port))
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// Whether an HTTP request to `host:port` is allowed (names, suffixes, literals).
    pub(crate) fn allows_name(&self, host: &str, port: u16) -> bool {
        self.patterns.iter().any(|p| p.allows_name(host, port))
    }

    /// Whether a socket may use `addr`. Host names are resolved on each check
    /// (only for patterns whose port matches). A non-public address needs a
    /// pattern naming it (or its host), unless private addresses are allowed.
    pub(crate) async fn allows(&self, addr: SocketAddr) -> bool {
        for pattern in self.patterns.iter() {
            if !pattern.port_matches(addr.port()) {
                continue;
            }
            let resolved: Vec<IpAddr> = match pattern.name_to_resolve() {
                Some(name) => match tokio::net::lookup_host((name, 0)).await {
                    Ok(addrs) => addrs.map(|a| a.ip()).collect(),
                    Err(_) => continue,
                },
                None => Vec::new(),
            };
            let reachable = pattern.is_explicit()
                || self.allow_private
                || non_public_reason(addr.ip()).is_none();
            if reachable && pattern.allows_addr(addr, &resolved) {
                return true;
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn host_names_are_resolved() {
        let policy = NetPolicy::new(
            &["localhost:1".into(), "192.0.2.7:*".into()],
            &BTreeMap::new(),
        );
        assert!(policy.allows("192.0.2.7:9".parse().unwrap()).await);
        assert!(policy.allows("127.0.0.1:1".parse().unwrap()).await);
        assert!(!policy.allows("127.0.0.1:2".parse().unwrap()).await);
        assert!(!policy.allows("192.0.2.1:1".parse().unwrap()).await);
        assert!(NetPolicy::default().is_empty());
    }

    #[tokio::test]
    async fn a_wildcard_reaches_private_addresses_only_when_allowed() {
        let any = NetPolicy::new(&["*:*".into()], &BTreeMap::new());
        assert!(any.allows("93.184.216.34:80".parse().unwrap()).await);
        assert!(!any.allows("127.0.0.1:80".parse().unwrap()).await);
        assert!(
            !any.allows("[::ffff:169.254.169.254]:80".parse().unwrap())
                .await
        );
        assert!(
            any.clone()
                .allowing_private(true)
                .allows("127.0.0.1:80".parse().unwrap())
                .await
        );
        assert!(!any.names_explicitly("127.0.0.1", 80));
        let named = NetPolicy::new(&["127.0.0.1:80".into()], &BTreeMap::new());
        assert!(named.allows("127.0.0.1:80".parse().unwrap()).await);
        assert!(named.names_explicitly("127.0.0.1", 80));
    }

    #[test]
    fn a_config_grant_follows_its_setting() {
        let granted = ["$config.api_base".to_owned()];
        let config = |base: &str| BTreeMap::from([("api_base".to_owned(), base.to_owned())]);
        let policy = NetPolicy::new(&granted, &config("http://127.0.0.1:8081"));
        assert!(policy.allows_name("127.0.0.1", 8081));
        assert!(!policy.allows_name("127.0.0.1", 8082));
        assert!(!policy.allows_name("api.telegram.org", 443));
        let policy = NetPolicy::new(&granted, &config("https://api.telegram.org"));
        assert!(policy.allows_name("api.telegram.org", 443));
        assert!(NetPolicy::new(&granted, &BTreeMap::new()).is_empty());
    }
}
