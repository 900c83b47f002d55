//! Network grants: the `host:port` patterns a manifest asks for and a grant
//! allows, and how an address or a host name is matched against one. Name
//! resolution is the host's (it is asynchronous); a pattern only says which
//! name to resolve.

use std::net::{IpAddr, SocketAddr};

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

/// How a network request names an address set in the plugin's config:
/// `$config.api_base` is the host and port of the `api_base` setting, as the
/// user's config.yaml (or the manifest's `[config]` default) gives it. A
/// self-hosted server is then reached with the grant the user already gave.
pub const CONFIG_REQUEST_PREFIX: &str = "$config.";

/// The `host:port` a `$config.<key>` request stands for under `config`: the
/// setting read as a URL (`https://host[:port]/…`, the port defaulting by
/// scheme) or as `host:port`. `None` for other requests, an unset key or a
/// value that names no address.
pub fn config_address(
    request: &str,
    config: &std::collections::BTreeMap<String, String>,
) -> Option<String> {
    let key = request.strip_prefix(CONFIG_REQUEST_PREFIX)?;
    // `$config.server:6697` (or `:*`): the setting names a host, the
    // request its port.
    if let Some((key, port)) = key.split_once(':') {
        let host = config.get(key)?.trim();
        if host.is_empty() || host.contains(['*', '/', '@']) {
            return None;
        }
        let pattern = format!("{host}:{port}");
        return NetPattern::parse(&pattern).ok().map(|_| pattern);
    }
    let value = config.get(key)?.trim();
    let (default_port, rest) = match value.split_once("://") {
        Some((scheme, rest)) => match scheme.to_ascii_lowercase().as_str() {
            "https" | "wss" => (Some(443), rest),
            "http" | "ws" => (Some(80), rest),
            _ => return None,
        },
        None => (None, value),
    };
    let authority = rest.split(['/', '?', '#']).next()?;
    // Credentials in a URL are not part of the address.
    let authority = authority.rsplit('@').next()?;
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (ip, after) = v6.split_once(']')?;
        let port = match after.strip_prefix(':') {
            Some(port) => port.parse().ok()?,
            None if after.is_empty() => default_port?,
            None => return None,
        };
        (format!("[{ip}]"), port)
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) => (host.to_owned(), port.parse::<u16>().ok()?),
            None => (authority.to_owned(), default_port?),
        }
    };
    // A setting names one server, never a wildcard.
    if host.contains('*') {
        return None;
    }
    let pattern = format!("{host}:{port}");
    NetPattern::parse(&pattern).ok().map(|_| pattern)
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

    /// Whether the pattern names one host (a name or an address), as opposed
    /// to `*` or a `*.domain` suffix. Only such a grant reaches a private
    /// address without `security.allow_private_urls`: the manifest (or the
    /// user's setting behind a `$config` grant) chose that host.
    pub fn is_explicit(&self) -> bool {
        matches!(self.host, HostPattern::Ip(_) | HostPattern::Name(_))
    }

    /// Whether everything this pattern allows, `wider` allows too: a grant
    /// narrower than what a manifest requests (`127.0.0.1:8931` within
    /// `127.0.0.1:*`, `api.example.org:443` within `*.example.org:443`).
    pub fn within(&self, wider: &NetPattern) -> bool {
        let port = match (self.port, wider.port) {
            (_, None) => true,
            (Some(mine), Some(theirs)) => mine == theirs,
            (None, Some(_)) => false,
        };
        let host = match (&self.host, &wider.host) {
            (_, HostPattern::Any) => true,
            (HostPattern::Ip(mine), HostPattern::Ip(theirs)) => {
                canonical_ip(*mine) == canonical_ip(*theirs)
            }
            (HostPattern::Name(mine), HostPattern::Name(theirs)) => mine == theirs,
            (HostPattern::Name(name) | HostPattern::Suffix(name), HostPattern::Suffix(suffix)) => {
                name == suffix && matches!(self.host, HostPattern::Suffix(_))
                    || name
                        .strip_suffix(suffix.as_str())
                        .is_some_and(|rest| rest.ends_with('.') && rest.len() > 1)
            }
            _ => false,
        };
        port && host
    }

    /// Whether the pattern allows this port.
    pub fn port_matches(&self, port: u16) -> bool {
        self.port.is_none_or(|p| p == port)
    }

    /// The host name whose addresses a socket may use, when the pattern names
    /// one (the caller resolves it for [`NetPattern::allows_addr`]).
    pub fn name_to_resolve(&self) -> Option<&str> {
        match &self.host {
            HostPattern::Name(name) => Some(name),
            _ => None,
        }
    }

    /// Whether a socket address is allowed by this pattern; `resolved` holds
    /// the addresses of [`NetPattern::name_to_resolve`] (empty otherwise).
    pub fn allows_addr(&self, addr: SocketAddr, resolved: &[IpAddr]) -> bool {
        if !self.port_matches(addr.port()) {
            return false;
        }
        let ip = canonical_ip(addr.ip());
        match &self.host {
            HostPattern::Any => true,
            HostPattern::Ip(allowed) => canonical_ip(*allowed) == ip,
            HostPattern::Name(_) => resolved.iter().any(|a| canonical_ip(*a) == ip),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pattern_is_within_a_wider_one_only_when_it_allows_less() {
        let within = |narrow: &str, wide: &str| {
            NetPattern::parse(narrow)
                .unwrap()
                .within(&NetPattern::parse(wide).unwrap())
        };
        assert!(within("127.0.0.1:18931", "127.0.0.1:*"));
        assert!(within("127.0.0.1:18931", "127.0.0.1:18931"));
        assert!(within("[::ffff:127.0.0.1]:80", "127.0.0.1:80"));
        assert!(within("api.example.org:443", "*.example.org:443"));
        assert!(within("*.eu.example.org:443", "*.example.org:*"));
        assert!(within("*.example.org:443", "*.example.org:443"));
        assert!(within("anything.test:1", "*:*"));
        assert!(!within("127.0.0.1:*", "127.0.0.1:80"), "a wider port");
        assert!(!within("127.0.0.2:80", "127.0.0.1:*"));
        assert!(
            !within("example.org:443", "*.example.org:443"),
            "the apex is not a subdomain"
        );
        assert!(!within("*.example.org:443", "api.example.org:443"));
        assert!(!within("evilexample.org:443", "*.example.org:443"));
        assert!(!within("*:443", "example.org:443"));
        assert!(!within("example.org:443", "127.0.0.1:443"));
    }

    #[test]
    fn config_requests_name_the_address_of_their_setting() {
        let config = |value: &str| {
            std::collections::BTreeMap::from([("api_base".to_owned(), value.to_owned())])
        };
        let address = |value: &str| config_address("$config.api_base", &config(value));
        assert_eq!(
            address("https://api.telegram.org").as_deref(),
            Some("api.telegram.org:443")
        );
        assert_eq!(
            address("http://127.0.0.1:8081/bot").as_deref(),
            Some("127.0.0.1:8081")
        );
        assert_eq!(
            address("http://u:p@host.lan/x").as_deref(),
            Some("host.lan:80")
        );
        assert_eq!(address("http://[::1]:9/").as_deref(), Some("[::1]:9"));
        let server = |value: &str, request: &str| {
            let config =
                std::collections::BTreeMap::from([("server".to_owned(), value.to_owned())]);
            config_address(request, &config)
        };
        assert_eq!(
            server("127.0.0.1", "$config.server:*").as_deref(),
            Some("127.0.0.1:*")
        );
        assert_eq!(
            server("irc.libera.chat", "$config.server:6697").as_deref(),
            Some("irc.libera.chat:6697")
        );
        assert_eq!(server("", "$config.server:*"), None);
        assert_eq!(server("*.evil", "$config.server:*"), None);
        assert_eq!(server("a.b", "$config.server:x"), None);
        assert_eq!(address("https://[::1]").as_deref(), Some("[::1]:443"));
        assert_eq!(
            address("irc.example.org:6697").as_deref(),
            Some("irc.example.org:6697")
        );
        for nothing in [
            "",
            "ftp://x.org",
            "host-without-port",
            "http://bad host/",
            "http://*:1",
        ] {
            assert_eq!(address(nothing), None, "{nothing:?}");
        }
        assert_eq!(config_address("$config.other", &config("http://x:1")), None);
        assert_eq!(config_address("x.org:1", &config("http://x:1")), None);
    }

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

    #[test]
    fn addresses_match_literals_and_ports() {
        let allows = |p: &NetPattern, addr: &str| p.allows_addr(addr.parse().unwrap(), &[]);
        let p = NetPattern::parse("127.0.0.1:8080").unwrap();
        assert!(allows(&p, "127.0.0.1:8080"));
        assert!(allows(&p, "[::ffff:127.0.0.1]:8080"));
        assert!(!allows(&p, "127.0.0.1:8081"));
        assert!(!allows(&p, "127.0.0.2:8080"));
        let suffix = NetPattern::parse("*.example.org:443").unwrap();
        assert!(suffix.name_to_resolve().is_none());
        assert!(!allows(&suffix, "93.184.216.34:443"));
        let any = NetPattern::parse("*:443").unwrap();
        assert!(allows(&any, "10.1.2.3:443"));
        assert!(!allows(&any, "10.1.2.3:80"));
    }

    #[test]
    fn names_allow_the_addresses_they_resolve_to() {
        let p = NetPattern::parse("localhost:8080").unwrap();
        assert_eq!(p.name_to_resolve(), Some("localhost"));
        let resolved = ["127.0.0.1".parse().unwrap()];
        assert!(p.allows_addr("127.0.0.1:8080".parse().unwrap(), &resolved));
        assert!(!p.allows_addr("127.0.0.1:8081".parse().unwrap(), &resolved));
        assert!(!p.allows_addr("192.0.2.1:8080".parse().unwrap(), &resolved));
        assert!(!p.allows_addr("127.0.0.1:8080".parse().unwrap(), &[]));
    }
}
