//! Who may talk to the HTTP server: the bearer key, and `Host` / `Origin`
//! checks against DNS rebinding (a web page that resolves its own name to
//! 127.0.0.1 must not reach a local server).

use std::collections::HashSet;
use std::net::SocketAddr;

use http::HeaderMap;
use sha2::{Digest, Sha256};
use talaria_kernel::Principal;

/// Shortest bearer key accepted.
pub const MIN_KEY_CHARS: usize = 16;

/// Why a request was turned away, with the status it gets.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// No key, or the wrong one (401).
    #[error("{0}")]
    Unauthorized(&'static str),
    /// A `Host` or `Origin` this server does not answer to (403).
    #[error("{0}")]
    Forbidden(String),
}

/// The checks, prepared once.
#[derive(Debug)]
pub struct Gate {
    /// Each key's digest and whom its requests belong to.
    keys: Vec<([u8; 32], Principal)>,
    hosts: HashSet<String>,
    origins: HashSet<String>,
}

impl Gate {
    /// Accepts `Host` values naming a loopback address with the server's port,
    /// plus `extra_hosts` (a name alone also matches with the port); `Origin`
    /// values `http(s)://` one of those, plus `extra_origins`. `key` is the owner's;
    /// `clients` the named clients' keys with their principals.
    pub fn new(
        key: &str,
        clients: &[(String, Principal)],
        addr: SocketAddr,
        extra_hosts: &[String],
        extra_origins: &[String],
    ) -> Self {
        let port = addr.port();
        let mut hosts: HashSet<String> = ["localhost", "127.0.0.1", "[::1]"]
            .iter()
            .map(|name| format!("{name}:{port}"))
            .collect();
        for host in extra_hosts {
            let host = host.trim().to_ascii_lowercase();
            hosts.insert(format!("{host}:{port}"));
            hosts.insert(host);
        }
        let mut origins: HashSet<String> = hosts
            .iter()
            .flat_map(|host| [format!("http://{host}"), format!("https://{host}")])
            .collect();
        origins.extend(
            extra_origins
                .iter()
                .map(|origin| origin.trim().trim_end_matches('/').to_ascii_lowercase()),
        );
        let keys = std::iter::once((key, Principal::owner()))
            .chain(clients.iter().map(|(key, who)| (key.as_str(), who.clone())))
            .map(|(key, who)| (Sha256::digest(key.as_bytes()).into(), who))
            .collect();
        Self {
            keys,
            hosts,
            origins,
        }
    }

    /// Host and Origin first (a rebinding page learns nothing about the key),
    /// then the key; whom the request belongs to when it passes.
    pub fn check(&self, headers: &HeaderMap) -> Result<Principal, Refusal> {
        let host = headers
            .get(http::header::HOST)
            .and_then(|value| value.to_str().ok())
            .map(str::to_ascii_lowercase);
        match host {
            Some(host) if self.hosts.contains(&host) => {}
            Some(host) => {
                return Err(Refusal::Forbidden(format!(
                    "Host '{host}' is not one this server answers to (loopback names only; \
                     start it with --allow-host to add one)"
                )));
            }
            None => return Err(Refusal::Forbidden("the request has no Host header".into())),
        }
        if let Some(origin) = headers.get(http::header::ORIGIN) {
            let origin = origin.to_str().unwrap_or_default().to_ascii_lowercase();
            if !self.origins.contains(origin.trim_end_matches('/')) {
                return Err(Refusal::Forbidden(format!(
                    "Origin '{origin}' is not allowed (loopback origins only; start the server \
                     with --allow-origin to add one)"
                )));
            }
        }
        let given = talaria_http_listener::bearer_token(headers);
        let Some(given) = given else {
            return Err(Refusal::Unauthorized(
                "missing bearer key: send 'Authorization: Bearer <key>'",
            ));
        };
        self.principal_of(given)
            .ok_or(Refusal::Unauthorized("wrong bearer key"))
    }

    /// Whose key `given` is. Every key is compared, byte by byte without stopping early, so
    /// the time taken says nothing about which key, or how much of one, was right.
    fn principal_of(&self, given: &str) -> Option<Principal> {
        let digest: [u8; 32] = Sha256::digest(given.as_bytes()).into();
        let mut found = None;
        for (key, who) in &self.keys {
            let same = digest
                .iter()
                .zip(key.iter())
                .fold(0u8, |differ, (a, b)| differ | (a ^ b))
                == 0;
            if same && found.is_none() {
                found = Some(who.clone());
            }
        }
        found
    }
}

/// The key from environment variable `name`, checked.
pub fn key_from_env(name: &str) -> Result<String, String> {
    let key = match talaria_environ::var_os(name) {
        Some(key) => key
            .into_string()
            .map_err(|_| format!("{name} is not valid UTF-8"))?,
        None => {
            return Err(format!(
                "HTTP mode needs a bearer key: set {name} to a secret of at least \
                 {MIN_KEY_CHARS} characters (or name another variable with --key-env); \
                 clients send it as 'Authorization: Bearer <key>'"
            ));
        }
    };
    let key = key.trim().to_owned();
    let chars = key.chars().count();
    if chars < MIN_KEY_CHARS {
        return Err(format!(
            "the bearer key in {name} is {chars} characters; at least {MIN_KEY_CHARS} are needed"
        ));
    }
    if key.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!(
            "the bearer key in {name} has whitespace or control characters; it must fit in an \
             HTTP header"
        ));
    }
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate() -> Gate {
        Gate::new(
            "0123456789abcdef",
            &[(
                "client-key-0123456789".to_owned(),
                Principal::mcp_client("ci"),
            )],
            SocketAddr::from(([127, 0, 0, 1], 8123)),
            &["agent.lan".to_owned()],
            &["https://app.example/".to_owned()],
        )
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            if let Ok(value) = value.parse() {
                map.insert(*name, value);
            }
        }
        map
    }

    const AUTH: (&str, &str) = ("authorization", "Bearer 0123456789abcdef");

    #[test]
    fn loopback_hosts_with_the_port_and_the_key_pass() {
        for host in [
            "localhost:8123",
            "127.0.0.1:8123",
            "[::1]:8123",
            "LOCALHOST:8123",
        ] {
            assert_eq!(
                gate().check(&headers(&[("host", host), AUTH])),
                Ok(Principal::owner()),
                "{host}"
            );
        }
        assert_eq!(
            gate().check(&headers(&[("host", "agent.lan"), AUTH])),
            Ok(Principal::owner())
        );
        let origin = ("origin", "http://localhost:8123");
        assert_eq!(
            gate().check(&headers(&[("host", "localhost:8123"), origin, AUTH])),
            Ok(Principal::owner())
        );
        let extra = ("origin", "https://app.example");
        assert_eq!(
            gate().check(&headers(&[("host", "localhost:8123"), extra, AUTH])),
            Ok(Principal::owner())
        );
    }

    #[test]
    fn other_hosts_and_origins_are_forbidden() {
        for host in [
            "evil.example:8123",
            "localhost:9999",
            "localhost",
            "127.0.0.2:8123",
        ] {
            let refused = gate().check(&headers(&[("host", host), AUTH]));
            assert!(
                matches!(refused, Err(Refusal::Forbidden(_))),
                "{host}: {refused:?}"
            );
        }
        for origin in ["http://evil.example", "null", "http://localhost:9999"] {
            let refused = gate().check(&headers(&[
                ("host", "localhost:8123"),
                ("origin", origin),
                AUTH,
            ]));
            assert!(matches!(refused, Err(Refusal::Forbidden(_))), "{origin}");
        }
        assert!(matches!(
            gate().check(&headers(&[AUTH])),
            Err(Refusal::Forbidden(_))
        ));
    }

    #[test]
    fn missing_or_wrong_keys_are_unauthorized() {
        let host = ("host", "localhost:8123");
        for auth in [
            "Bearer 0123456789abcdeX",
            "Bearer 0123456789abcdef0",
            "Basic 0123456789abcdef",
            "0123456789abcdef",
        ] {
            let refused = gate().check(&headers(&[host, ("authorization", auth)]));
            assert!(matches!(refused, Err(Refusal::Unauthorized(_))), "{auth}");
        }
        assert!(matches!(
            gate().check(&headers(&[host])),
            Err(Refusal::Unauthorized(_))
        ));
        assert_eq!(
            gate().check(&headers(&[
                host,
                ("authorization", "bearer 0123456789abcdef")
            ])),
            Ok(Principal::owner())
        );
    }

    #[test]
    fn a_named_clients_key_is_its_own_principal() {
        let host = ("host", "localhost:8123");
        let client = ("authorization", "Bearer client-key-0123456789");
        assert_eq!(
            gate().check(&headers(&[host, client])),
            Ok(Principal::mcp_client("ci"))
        );
    }
}
