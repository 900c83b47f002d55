//! The socket address check built from a plugin's granted network patterns
//! (the patterns themselves: `talaria_plugin_manifest::NetPattern`), and the
//! refusals of one instance's call, which the socket check and outgoing HTTP
//! both log and keep: the JavaScript and Python runtimes replace the host's
//! reason with words of their own, so a failing call repeats them.

use std::collections::BTreeMap;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use talaria_plugin_manifest::address::non_public_reason;
use talaria_plugin_manifest::{NetPattern, config_address};
use wasmtime_wasi::sockets::SocketAddrUse;

use crate::log::{LogLevel, LogSource, PluginLog};

/// Most refusals a call's error repeats.
const MAX_REFUSALS_SHOWN: usize = 3;

/// The refusals of one instance's current call, oldest first: what its error
/// repeats (the JavaScript and Python runtimes replace the reason with their
/// own words: "NetworkError…", "URLError…").
#[derive(Debug, Clone, Default)]
pub(crate) struct Refusals(Arc<Mutex<Vec<String>>>);

impl Refusals {
    /// Logs `message` (a refusal with its reason) as the host's warning and
    /// keeps it for the call's error.
    pub(crate) fn record(&self, log: &PluginLog, message: &str) {
        log.push(LogLevel::Warn, LogSource::Host, message);
        if let Ok(mut refused) = self.0.lock() {
            // One line per distinct refusal, and a few are enough.
            if !refused.iter().any(|m| m == message) && refused.len() < MAX_REFUSALS_SHOWN {
                refused.push(message.to_owned());
            }
        }
    }

    /// Forgets earlier calls' refusals: a kept instance starts each call anew.
    pub(crate) fn clear(&self) {
        if let Ok(mut refused) = self.0.lock() {
            refused.clear();
        }
    }

    /// `text` followed by what the host refused during the call, if anything.
    pub(crate) fn explain(&self, text: String) -> String {
        let refused = self.0.lock().map(|r| r.clone()).unwrap_or_default();
        if refused.is_empty() {
            return text;
        }
        format!("{text} (the host {})", refused.join("; "))
    }
}

/// Why `host`:`port` is outside the grants of `plugin`, and what grants it
/// (an IPv6 `host` is shown in brackets).
pub(crate) fn ungranted(plugin: &str, host: &str, port: u16) -> String {
    let host = if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]")
    } else {
        host.to_owned()
    };
    format!(
        "no network grant of plugin {plugin} covers {host}:{port} (its manifest must ask for it \
         under [capabilities] network, and the user grant it: talaria plugin grant {plugin} \
         network:{host}:{port})"
    )
}

/// What a socket check returns: whether the guest may use the address.
type Checked = Pin<Box<dyn Future<Output = bool> + Send + Sync>>;

/// The `socket_addr_check` of one instance of `plugin`: every address its
/// sockets use is checked against `net`; a refused connection or datagram
/// is logged and kept in `refused` (naming the grant it lacks), as a
/// refused HTTP request is.
pub(crate) fn socket_check(
    plugin: &str,
    net: &NetPolicy,
    log: &PluginLog,
    refused: &Refusals,
) -> impl Fn(SocketAddr, SocketAddrUse) -> Checked + Send + Sync + 'static {
    let plugin: Arc<str> = Arc::from(plugin);
    let (net, log, refused) = (net.clone(), log.clone(), refused.clone());
    move |addr, usage| {
        let (plugin, net) = (plugin.clone(), net.clone());
        let (log, refused) = (log.clone(), refused.clone());
        // The check may resolve host names; run it as a task so the
        // returned future only holds a join handle.
        let check = tokio::spawn(async move {
            let what = match usage {
                // Implicit or ephemeral binds (needed to connect).
                SocketAddrUse::TcpBind | SocketAddrUse::UdpBind => return addr.port() == 0,
                // No servers.
                SocketAddrUse::TcpListen | SocketAddrUse::TcpAccept => return false,
                // Datagrams from anywhere are dropped unless granted, unlogged.
                SocketAddrUse::UdpReceive => return net.allows(addr).await,
                SocketAddrUse::TcpConnect => "connection",
                SocketAddrUse::UdpSend => "UDP datagram",
            };
            let allowed = net.allows(addr).await;
            if !allowed {
                let ip = addr.ip().to_canonical().to_string();
                let shown = SocketAddr::new(addr.ip().to_canonical(), addr.port());
                let reason = ungranted(&plugin, &ip, addr.port());
                refused.record(&log, &format!("refused {what} to {shown}: {reason}"));
            }
            allowed
        });
        Box::pin(async move { check.await.unwrap_or(false) })
    }
}

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
    fn a_refusal_names_the_grant_and_a_call_repeats_it_once() {
        let reason = ungranted("p", "::1", 8080);
        assert!(
            reason.starts_with("no network grant of plugin p covers [::1]:8080 (")
                && reason.ends_with("talaria plugin grant p network:[::1]:8080)"),
            "{reason}"
        );
        let log = PluginLog::default();
        let refused = Refusals::default();
        refused.record(&log, "refused a");
        refused.record(&log, "refused a");
        assert_eq!(
            refused.explain("failed".into()),
            "failed (the host refused a)"
        );
        assert!(log.contains("refused a"));
        refused.clear();
        assert_eq!(refused.explain("failed".into()), "failed");
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
