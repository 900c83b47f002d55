//! Where a plugin's outgoing HTTP request may go, decided on the addresses
//! the connection will actually use: names are resolved once (through a
//! resolver tests can replace), every address is checked, and the
//! connection is made to those checked addresses — never through a second
//! lookup a rebinding DNS server could answer differently. Also the secrets
//! the host writes into requests for hosts the manifest lists.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use talaria_plugin_manifest::address::{literal_address, non_public_reason};
use talaria_plugin_manifest::{NetPattern, SecretCapability, config_address};

use crate::imports::chat::TlsClient;
use crate::imports::net::NetPolicy;

/// Resolves host names for plugins' outgoing requests.
#[async_trait::async_trait]
pub trait Resolver: Send + Sync + std::fmt::Debug {
    /// The addresses `host` resolves to.
    async fn resolve(&self, host: &str) -> std::io::Result<Vec<IpAddr>>;
}

/// The system's resolver (`getaddrinfo`, through tokio).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemResolver;

#[async_trait::async_trait]
impl Resolver for SystemResolver {
    async fn resolve(&self, host: &str) -> std::io::Result<Vec<IpAddr>> {
        Ok(tokio::net::lookup_host((host, 0))
            .await?
            .map(|addr| addr.ip())
            .collect())
    }
}

/// Where secret values come from; plugins only ever name them.
pub trait SecretSource: Send + Sync + std::fmt::Debug {
    /// The value of the secret `name`, if it is set.
    fn secret(&self, name: &str) -> Option<String>;
}

/// Secrets from the process environment.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProcessEnvSecrets;

impl SecretSource for ProcessEnvSecrets {
    fn secret(&self, name: &str) -> Option<String> {
        talaria_environ::var(name).filter(|value| !value.is_empty())
    }
}

/// The host-wide rules of outgoing requests.
#[derive(Clone)]
pub(crate) struct Egress {
    pub(crate) resolver: Arc<dyn Resolver>,
    pub(crate) secrets: Arc<dyn SecretSource>,
    /// `security.allow_private_urls`: private addresses are reachable
    /// through any grant, not only through one naming the host.
    pub(crate) allow_private: bool,
    /// The TLS client (trust roots) of HTTPS requests.
    pub(crate) tls: Arc<TlsClient>,
}

impl std::fmt::Debug for Egress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Egress")
            .field("allow_private", &self.allow_private)
            .finish_non_exhaustive()
    }
}

impl Default for Egress {
    fn default() -> Self {
        Self {
            resolver: Arc::new(SystemResolver),
            secrets: Arc::new(ProcessEnvSecrets),
            allow_private: false,
            tls: Arc::new(TlsClient::new(None)),
        }
    }
}

/// The text every private-address refusal ends with: what the user can do.
const PRIVATE_HINT: &str = "private, loopback and link-local addresses are refused unless security.allow_private_urls is true";

impl Egress {
    /// The socket addresses a request to `host`:`port` (already allowed by
    /// name in `net`) may connect to, or why it may not go anywhere. A
    /// non-public address is refused unless private URLs are allowed or a
    /// grant names this host explicitly (a configured self-hosted server).
    pub(crate) async fn destinations(
        &self,
        net: &NetPolicy,
        host: &str,
        port: u16,
    ) -> Result<Vec<SocketAddr>, String> {
        let ips = match literal_address(host) {
            Some(ip) => vec![ip],
            None => self
                .resolver
                .resolve(host)
                .await
                .map_err(|e| format!("resolving {host}: {e}"))?,
        };
        if ips.is_empty() {
            return Err(format!("{host} resolves to no address"));
        }
        if !self.allow_private && !net.names_explicitly(host, port) {
            let private = ips
                .iter()
                .find_map(|ip| non_public_reason(*ip).map(|why| (ip, why)));
            if let Some((ip, why)) = private {
                let shown = if literal_address(host) == Some(*ip) && host == ip.to_string() {
                    format!("{ip} is")
                } else {
                    format!("{host} resolves to {ip},")
                };
                return Err(format!("{shown} a {why} address; {PRIVATE_HINT}"));
            }
        }
        Ok(ips
            .into_iter()
            .map(|ip| SocketAddr::new(ip, port))
            .collect())
    }
}

/// The placeholder a plugin writes where a secret goes.
const SECRET_OPEN: &str = "{{secret:";
const SECRET_CLOSE: &str = "}}";

/// The secrets one plugin may have written into its requests.
#[derive(Debug, Clone, Default)]
pub(crate) struct PluginSecrets {
    /// Granted secrets and the hosts each may go to (`$config` resolved).
    granted: Arc<BTreeMap<String, Vec<NetPattern>>>,
    /// Secrets the manifest asks for but the user did not grant.
    requested: Arc<Vec<String>>,
}

impl PluginSecrets {
    pub(crate) fn new(
        granted: &[SecretCapability],
        requested: &[SecretCapability],
        config: &BTreeMap<String, String>,
    ) -> Self {
        let granted = granted
            .iter()
            .map(|secret| {
                let hosts = secret
                    .hosts
                    .iter()
                    .filter_map(|pattern| {
                        let address = config_address(pattern, config);
                        NetPattern::parse(address.as_deref().unwrap_or(pattern)).ok()
                    })
                    .collect();
                (secret.name.clone(), hosts)
            })
            .collect();
        Self {
            granted: Arc::new(granted),
            requested: Arc::new(requested.iter().map(|s| s.name.clone()).collect()),
        }
    }

    /// Replaces every `{{secret:NAME}}` in a header value of a request to
    /// `host`:`port` with the secret's value; the refusal says why when a
    /// secret is not granted, may not go to this host or is not set.
    pub(crate) fn inject(
        &self,
        headers: &mut http::HeaderMap,
        host: &str,
        port: u16,
        source: &dyn SecretSource,
    ) -> Result<(), String> {
        for value in headers.values_mut() {
            let Ok(text) = value.to_str() else { continue };
            if !text.contains(SECRET_OPEN) {
                continue;
            }
            let filled = self.fill(text, host, port, source)?;
            let mut header = http::HeaderValue::from_str(&filled)
                .map_err(|_| "a secret's value is not valid in an HTTP header".to_owned())?;
            header.set_sensitive(true);
            *value = header;
        }
        Ok(())
    }

    fn fill(
        &self,
        text: &str,
        host: &str,
        port: u16,
        source: &dyn SecretSource,
    ) -> Result<String, String> {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(start) = rest.find(SECRET_OPEN) {
            out.push_str(&rest[..start]);
            let after = &rest[start + SECRET_OPEN.len()..];
            let end = after
                .find(SECRET_CLOSE)
                .ok_or("an unterminated {{secret:…}} placeholder")?;
            let name = &after[..end];
            out.push_str(&self.value(name, host, port, source)?);
            rest = &after[end + SECRET_CLOSE.len()..];
        }
        out.push_str(rest);
        Ok(out)
    }

    fn value(
        &self,
        name: &str,
        host: &str,
        port: u16,
        source: &dyn SecretSource,
    ) -> Result<String, String> {
        let Some(hosts) = self.granted.get(name) else {
            return Err(if self.requested.iter().any(|n| n == name) {
                format!("the secret {name} was not granted")
            } else {
                format!("the manifest asks for no secret {name}")
            });
        };
        if !hosts.iter().any(|pattern| pattern.allows_name(host, port)) {
            return Err(format!(
                "the secret {name} may not be sent to {host}:{port} (not among its hosts)"
            ));
        }
        source.secret(name).ok_or_else(|| {
            format!("the secret {name} is not set: add it to the environment or the profile's .env")
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// Answers every name with fixed addresses, as a hostile DNS might.
    #[derive(Debug)]
    struct FixedResolver(Vec<IpAddr>);

    #[async_trait::async_trait]
    impl Resolver for FixedResolver {
        async fn resolve(&self, _host: &str) -> std::io::Result<Vec<IpAddr>> {
            Ok(self.0.clone())
        }
    }

    fn egress(answer: &[&str], allow_private: bool) -> Egress {
        Egress {
            resolver: Arc::new(FixedResolver(
                answer.iter().map(|ip| ip.parse().unwrap()).collect(),
            )),
            allow_private,
            ..Egress::default()
        }
    }

    fn net(patterns: &[&str]) -> NetPolicy {
        let patterns: Vec<String> = patterns.iter().map(|p| (*p).to_owned()).collect();
        NetPolicy::new(&patterns, &BTreeMap::new())
    }

    #[tokio::test]
    async fn private_addresses_are_refused_through_wildcard_grants() {
        let any = net(&["*:*"]);
        let to_loopback = egress(&["127.0.0.1"], false);
        let error = to_loopback
            .destinations(&any, "evil.example", 80)
            .await
            .unwrap_err();
        assert!(
            error.contains("evil.example resolves to 127.0.0.1, a loopback address"),
            "{error}"
        );
        assert!(error.contains("security.allow_private_urls"), "{error}");
        // One private address among public ones is enough to refuse.
        let mixed = egress(&["93.184.216.34", "10.0.0.5"], false);
        assert!(mixed.destinations(&any, "x.example", 443).await.is_err());
        for literal in [
            "127.0.0.1",
            "::1",
            "[::1]",
            "2130706433",
            "0177.0.0.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.1.1",
        ] {
            let error = egress(&["93.184.216.34"], false)
                .destinations(&any, literal, 80)
                .await
                .unwrap_err();
            assert!(error.contains("address;"), "{literal}: {error}");
        }
        let public = egress(&["93.184.216.34"], false);
        assert_eq!(
            public.destinations(&any, "example.org", 443).await.unwrap(),
            vec!["93.184.216.34:443".parse::<SocketAddr>().unwrap()]
        );
    }

    #[tokio::test]
    async fn an_explicit_grant_or_the_setting_reaches_private_addresses() {
        let searx = net(&["*:*", "127.0.0.1:8888", "searx.lan:80"]);
        let loopback = egress(&["127.0.0.1"], false);
        assert!(
            loopback
                .destinations(&searx, "127.0.0.1", 8888)
                .await
                .is_ok()
        );
        assert!(loopback.destinations(&searx, "searx.lan", 80).await.is_ok());
        // The same host on another port is not the one the grant names.
        assert!(
            loopback
                .destinations(&searx, "127.0.0.1", 8889)
                .await
                .is_err()
        );
        let allowed = egress(&["127.0.0.1"], true);
        assert!(
            allowed
                .destinations(&net(&["*:*"]), "x.example", 80)
                .await
                .is_ok()
        );
    }

    #[derive(Debug)]
    struct Vault;

    impl SecretSource for Vault {
        fn secret(&self, name: &str) -> Option<String> {
            (name == "BRAVE_API_KEY").then(|| "k-123".to_owned())
        }
    }

    fn brave() -> SecretCapability {
        SecretCapability {
            name: "BRAVE_API_KEY".into(),
            hosts: vec![
                "api.search.brave.com:443".into(),
                "$config.brave_url".into(),
            ],
        }
    }

    #[test]
    fn secrets_are_filled_only_for_their_hosts() {
        let config = BTreeMap::from([("brave_url".to_owned(), "http://127.0.0.1:9".to_owned())]);
        let unset = SecretCapability {
            name: "EXA_API_KEY".into(),
            hosts: vec!["api.exa.ai:443".into()],
        };
        let requested = [brave(), unset.clone()];
        let secrets = PluginSecrets::new(&requested, &requested, &config);
        let headers = |value: &str| {
            let mut map = http::HeaderMap::new();
            map.insert("x-subscription-token", value.parse().unwrap());
            map
        };
        let mut ok = headers("{{secret:BRAVE_API_KEY}}");
        secrets
            .inject(&mut ok, "api.search.brave.com", 443, &Vault)
            .unwrap();
        assert_eq!(ok["x-subscription-token"], "k-123");
        assert!(ok["x-subscription-token"].is_sensitive());
        let mut configured = headers("Bearer {{secret:BRAVE_API_KEY}}!");
        secrets
            .inject(&mut configured, "127.0.0.1", 9, &Vault)
            .unwrap();
        assert_eq!(configured["x-subscription-token"], "Bearer k-123!");

        let refusal = |value: &str, host: &str, port: u16| {
            secrets
                .inject(&mut headers(value), host, port, &Vault)
                .unwrap_err()
        };
        let error = refusal("{{secret:BRAVE_API_KEY}}", "attacker.example", 443);
        assert!(
            error.contains("may not be sent to attacker.example:443"),
            "{error}"
        );
        let error = refusal("{{secret:EXA_API_KEY}}", "api.exa.ai", 443);
        assert!(error.contains("EXA_API_KEY is not set"), "{error}");
        let error = refusal("{{secret:HOME}}", "api.exa.ai", 443);
        assert!(error.contains("asks for no secret HOME"), "{error}");
        let error = refusal("{{secret:BRAVE_API_KEY", "api.search.brave.com", 443);
        assert!(error.contains("unterminated"), "{error}");

        let ungranted = PluginSecrets::new(&[], &requested, &config);
        let error = ungranted
            .inject(
                &mut headers("{{secret:BRAVE_API_KEY}}"),
                "api.search.brave.com",
                443,
                &Vault,
            )
            .unwrap_err();
        assert!(error.contains("BRAVE_API_KEY was not granted"), "{error}");
    }
}
