//! Network grants: `host:port` patterns and the socket address check built from them.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

/// The host part of a pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
enum HostPattern {
    /// `*`: any address.
    Any,
    /// An IP literal (`127.0.0.1`, `[::1]`).
    Ip(IpAddr),
    /// An exact host name; sockets may use any address it resolves to.
    Name(String),
    /// `*.example.org`: names only (checked on outgoing HTTP, never on raw sockets,
    /// where only addresses are known).
    Suffix(String),
}

/// One granted `host:port` pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetPattern {
    host: HostPattern,
    /// `None` for `*`.
    port: Option<u16>,
}

impl NetPattern {
    /// Parses `host:port`, `*.domain:port`, `[v6]:port`; the port may be `*`.
    pub fn parse(pattern: &str) -> Result<Self, String> {
        let bad = |why: &str| format!("{pattern:?} is not a host:port pattern: {why}");
        let (host, port) = pattern
            .rsplit_once(':')
            .ok_or_else(|| bad("missing :port"))?;
        let port = match port {
            "*" => None,
            p => Some(p.parse::<u16>().map_err(|_| bad("invalid port"))?),
        };
        let host = if host == "*" {
            HostPattern::Any
        } else if let Some(v6) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
            HostPattern::Ip(IpAddr::V6(
                v6.parse().map_err(|_| bad("invalid IPv6 address"))?,
            ))
        } else if let Ok(ip) = host.parse::<IpAddr>() {
            HostPattern::Ip(ip)
        } else if let Some(suffix) = host.strip_prefix("*.") {
            if !valid_hostname(suffix) {
                return Err(bad("invalid host name"));
            }
            HostPattern::Suffix(suffix.to_ascii_lowercase())
        } else {
            if !valid_hostname(host) {
                return Err(bad("invalid host name"));
            }
            HostPattern::Name(host.to_ascii_lowercase())
        };
        Ok(Self { host, port })
    }

    fn port_matches(&self, port: u16) -> bool {
        self.port.is_none_or(|p| p == port)
    }

    /// Whether a socket address is allowed by this pattern. Host names are
    /// resolved (asynchronously) on each check.
    pub async fn allows_addr(&self, addr: SocketAddr) -> bool {
        if !self.port_matches(addr.port()) {
            return false;
        }
        let ip = canonical_ip(addr.ip());
        match &self.host {
            HostPattern::Any => true,
            HostPattern::Ip(allowed) => canonical_ip(*allowed) == ip,
            HostPattern::Name(name) => match tokio::net::lookup_host((name.as_str(), 0)).await {
                Ok(addrs) => addrs.into_iter().any(|a| canonical_ip(a.ip()) == ip),
                Err(_) => false,
            },
            HostPattern::Suffix(_) => false,
        }
    }

    /// Whether a host name and port (as in an HTTP request) is allowed.
    pub fn allows_name(&self, host: &str, port: u16) -> bool {
        if !self.port_matches(port) {
            return false;
        }
        let host = host.to_ascii_lowercase();
        match &self.host {
            HostPattern::Any => true,
            HostPattern::Ip(ip) => host.parse::<IpAddr>().is_ok_and(|h| h == *ip),
            HostPattern::Name(name) => *name == host,
            HostPattern::Suffix(suffix) => host
                .strip_suffix(suffix.as_str())
                .is_some_and(|rest| rest.ends_with('.') && rest.len() > 1),
        }
    }
}

fn canonical_ip(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    }
}

fn valid_hostname(host: &str) -> bool {
    !host.is_empty()
        && host.len() <= 253
        && host.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
}

/// The granted patterns of one plugin, shared by its stores' socket checks.
#[derive(Debug, Clone, Default)]
pub(crate) struct NetPolicy {
    patterns: Arc<Vec<NetPattern>>,
}

impl NetPolicy {
    pub(crate) fn new(patterns: &[String]) -> Self {
        Self {
            patterns: Arc::new(
                patterns
                    .iter()
                    .filter_map(|p| NetPattern::parse(p).ok())
                    .collect(),
            ),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// Whether an HTTP request to `host:port` is allowed (names, suffixes, literals).
    pub(crate) fn allows_name(&self, host: &str, port: u16) -> bool {
        self.patterns.iter().any(|p| p.allows_name(host, port))
    }

    pub(crate) async fn allows(&self, addr: SocketAddr) -> bool {
        for pattern in self.patterns.iter() {
            if pattern.allows_addr(addr).await {
                return true;
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_patterns() {
        assert!(NetPattern::parse("example.org:443").is_ok());
        assert!(NetPattern::parse("*.example.org:443").is_ok());
        assert!(NetPattern::parse("127.0.0.1:*").is_ok());
        assert!(NetPattern::parse("[::1]:80").is_ok());
        assert!(NetPattern::parse("example.org").is_err());
        assert!(NetPattern::parse("example.org:http").is_err());
        assert!(NetPattern::parse("exa mple.org:1").is_err());
    }

    #[test]
    fn names_match_suffixes() {
        let p = NetPattern::parse("*.example.org:443").unwrap();
        assert!(p.allows_name("api.example.org", 443));
        assert!(!p.allows_name("example.org", 443));
        assert!(!p.allows_name("evilexample.org", 443));
        assert!(!p.allows_name("api.example.org", 80));
    }

    #[tokio::test]
    async fn addresses_match_literals_and_ports() {
        let p = NetPattern::parse("127.0.0.1:8080").unwrap();
        assert!(p.allows_addr("127.0.0.1:8080".parse().unwrap()).await);
        assert!(
            p.allows_addr("[::ffff:127.0.0.1]:8080".parse().unwrap())
                .await
        );
        assert!(!p.allows_addr("127.0.0.1:8081".parse().unwrap()).await);
        assert!(!p.allows_addr("127.0.0.2:8080".parse().unwrap()).await);
        let suffix = NetPattern::parse("*.example.org:443").unwrap();
        assert!(
            !suffix
                .allows_addr("93.184.216.34:443".parse().unwrap())
                .await
        );
        let any = NetPattern::parse("*:443").unwrap();
        assert!(any.allows_addr("10.1.2.3:443".parse().unwrap()).await);
        assert!(!any.allows_addr("10.1.2.3:80".parse().unwrap()).await);
    }

    #[tokio::test]
    async fn host_names_are_resolved() {
        let p = NetPattern::parse("localhost:8080").unwrap();
        assert!(p.allows_addr("127.0.0.1:8080".parse().unwrap()).await);
        assert!(!p.allows_addr("127.0.0.1:8081".parse().unwrap()).await);
        assert!(!p.allows_addr("192.0.2.1:8080".parse().unwrap()).await);
        let policy = NetPolicy::new(&["localhost:1".into(), "192.0.2.7:*".into()]);
        assert!(policy.allows("192.0.2.7:9".parse().unwrap()).await);
        assert!(policy.allows("127.0.0.1:1".parse().unwrap()).await);
        assert!(!policy.allows("127.0.0.1:2".parse().unwrap()).await);
        assert!(NetPolicy::default().is_empty());
    }
}
