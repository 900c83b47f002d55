//! `gateway.webhook`: the listener senders such as GitHub post to, and its
//! routes (`/hooks/<name>`), each with its secret, the events it takes, the
//! prompt a delivery becomes and the chat its answer goes to.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::env::EnvLayer;

/// `gateway.webhook`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WebhookConfig {
    /// Address to listen on.
    pub host: String,
    /// Port to listen on.
    pub port: u16,
    /// Routes by name; the listener runs when there is one.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub routes: BTreeMap<String, WebhookRouteConfig>,
    /// Platforms whose servers push to their adapter at `/platforms/<name>`
    /// (the adapter checks the platform's signature); the listener runs when
    /// one is listed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub platforms: Vec<String>,
}

impl Default for WebhookConfig {
    fn default() -> Self {
        Self {
            host: "127.0.0.1".to_owned(),
            port: 8644,
            routes: BTreeMap::new(),
            platforms: Vec::new(),
        }
    }
}

/// `gateway.webhook.routes.<name>`: one sender, posting to `/hooks/<name>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebhookRouteConfig {
    /// The shared secret (write `${VAR}` and keep the value in .env).
    pub secret: String,
    /// How the sender signs its requests.
    #[serde(default)]
    pub signature: WebhookSignature,
    /// The header of an `hmac` route (default `X-Signature-256`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<String>,
    /// The events taken (`X-GitHub-Event`, `X-Gitlab-Event`); empty takes all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<String>,
    /// The prompt a delivery becomes, with `{field.path}`, `{event}`,
    /// `{route}` and `{payload}` (default: the whole payload, fenced).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// The chat the answer goes to, `platform:chat_id[:thread_id]`; without
    /// it the answer stays in the delivery's session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deliver: Option<String>,
    /// Whether a body the route took is a replay when posted again (for a
    /// week). `false`, on `hmac` routes only, where bodies legitimately
    /// repeat: then only a delivery id seen before is.
    // Left out when true, the default (serde hands the test a reference).
    #[serde(default = "deduplicated", skip_serializing_if = "Clone::clone")]
    pub deduplicate: bool,
    /// Most deliveries taken in a minute (more: 429); default 30.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_per_minute: Option<u32>,
}

fn deduplicated() -> bool {
    true
}

/// How a webhook sender authenticates.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WebhookSignature {
    /// `X-Hub-Signature-256`: an HMAC-SHA256 of the body.
    #[default]
    Github,
    /// `X-Gitlab-Token`: the secret itself.
    Gitlab,
    /// An HMAC-SHA256 of the body in a header of the route's choosing.
    Hmac,
}

/// A chat to deliver to: `platform:chat_id[:thread_id]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatAddress {
    /// The platform (a key of `gateway.platforms`).
    pub platform: String,
    /// The chat's id.
    pub chat_id: String,
    /// The thread, when one is named.
    pub thread: Option<String>,
}

impl ChatAddress {
    /// Parses `platform:chat_id[:thread_id]`; the chat id may hold `:` when
    /// the address ends with one (as home channels are written).
    pub fn parse(text: &str) -> Option<Self> {
        let (platform, rest) = text.split_once(':')?;
        let home = crate::PlatformConfig {
            home_channel: Some(rest.to_owned()),
            ..crate::PlatformConfig::default()
        }
        .home_channel()?;
        (!platform.trim().is_empty() && !home.chat_id.trim().is_empty()).then(|| Self {
            platform: platform.to_owned(),
            chat_id: home.chat_id,
            thread: home.thread,
        })
    }
}

impl WebhookConfig {
    /// Whether the listener has anything to serve.
    pub fn is_used(&self) -> bool {
        !self.routes.is_empty() || !self.platforms.is_empty()
    }

    /// Expands `${VAR}` in the routes' secrets and delivery addresses.
    pub(crate) fn expand(&mut self, env: &EnvLayer) -> Result<(), String> {
        for route in self.routes.values_mut() {
            route.secret = crate::config::expand(&route.secret, env)?;
            if let Some(deliver) = route.deliver.as_mut() {
                *deliver = crate::config::expand(deliver, env)?;
            }
        }
        Ok(())
    }

    /// Checks the host and each route against the configured `platforms`.
    /// Returns the problem and the key it is under.
    pub(crate) fn validate(&self, platforms: &[&str]) -> Result<(), (String, String)> {
        if self.host.trim().is_empty() {
            return Err((
                "host".to_owned(),
                "gateway.webhook.host: empty (default 127.0.0.1)".to_owned(),
            ));
        }
        for platform in &self.platforms {
            if !platforms.contains(&platform.as_str()) {
                return Err((
                    "platforms".to_owned(),
                    format!("gateway.webhook.platforms: {platform} is not under gateway.platforms"),
                ));
            }
        }
        for (name, route) in &self.routes {
            let at = |key: &str, message: String| {
                Err((
                    key.to_owned(),
                    format!("gateway.webhook.routes.{name}: {message}"),
                ))
            };
            let valid = name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
            if name.is_empty() || !valid {
                return at(
                    name,
                    "invalid route name: use letters, digits, '_' or '-' (it is the URL's last \
                     part)"
                        .to_owned(),
                );
            }
            // An empty secret would let anyone who finds the port prompt the agent.
            if route.secret.trim().is_empty() {
                return at(
                    "secret",
                    "the secret is empty: set one (the same as the sender's)".to_owned(),
                );
            }
            if route.header.is_some() && route.signature != WebhookSignature::Hmac {
                return at(
                    "header",
                    "header is only read by `signature: hmac` routes".to_owned(),
                );
            }
            if let Some(header) = &route.header
                && http_header_name_invalid(header)
            {
                return at("header", format!("{header:?} is not a header name"));
            }
            // GitHub's bodies never repeat, and GitLab's token signs none.
            if !route.deduplicate && route.signature != WebhookSignature::Hmac {
                return at(
                    "deduplicate",
                    "`deduplicate: false` is only for `signature: hmac` routes".to_owned(),
                );
            }
            if route.max_per_minute == Some(0) {
                return at(
                    "max_per_minute",
                    "max_per_minute is 0: no delivery would be taken (write 1 or more)".to_owned(),
                );
            }
            if let Some(deliver) = &route.deliver {
                let Some(address) = ChatAddress::parse(deliver) else {
                    return at(
                        "deliver",
                        format!(
                            "{deliver:?}: write platform:chat_id or platform:chat_id:thread_id"
                        ),
                    );
                };
                if !platforms.contains(&address.platform.as_str()) {
                    return at(
                        "deliver",
                        format!(
                            "{deliver:?}: {} is not under gateway.platforms (configured: {})",
                            address.platform,
                            if platforms.is_empty() {
                                "none".to_owned()
                            } else {
                                platforms.join(", ")
                            }
                        ),
                    );
                }
            }
        }
        Ok(())
    }
}

fn http_header_name_invalid(name: &str) -> bool {
    name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::{ConfigError, ConfigFile};

    fn parse(text: &str, env: &EnvLayer) -> Result<ConfigFile, ConfigError> {
        ConfigFile::parse(text, Path::new("/h/config.yaml"), env)
    }

    const PLATFORM: &str = "gateway:\n  platforms:\n    irc:\n      server: x\n";

    #[test]
    fn routes_are_read_with_their_secrets_expanded() {
        let env = EnvLayer::from_pairs(&[("GH_SECRET", "s3cret")]);
        let text = format!(
            "{PLATFORM}  webhook:\n    port: 9000\n    routes:\n      github:\n        \
             secret: ${{GH_SECRET}}\n        events: [push, issue_comment]\n        \
             prompt: '{{event}} on {{repository.full_name}}'\n        deliver: 'irc:#ops'\n      \
             alerts:\n        secret: other\n        signature: hmac\n        \
             header: X-Alert-Signature\n        deduplicate: false\n        max_per_minute: 5\n"
        );
        let webhook = parse(&text, &env).unwrap().gateway.webhook;
        assert_eq!(webhook.port, 9000);
        let github = &webhook.routes["github"];
        assert_eq!(github.secret, "s3cret");
        assert_eq!(github.signature, WebhookSignature::Github);
        assert_eq!(github.events, ["push", "issue_comment"]);
        assert_eq!(
            github.prompt.as_deref(),
            Some("{event} on {repository.full_name}")
        );
        assert_eq!(github.deliver.as_deref(), Some("irc:#ops"));
        assert!(webhook.is_used());
        assert!(!WebhookConfig::default().is_used());
        let alerts = &webhook.routes["alerts"];
        assert_eq!(alerts.signature, WebhookSignature::Hmac);
        assert_eq!(alerts.header.as_deref(), Some("X-Alert-Signature"));
        assert!(!alerts.deduplicate && github.deduplicate);
        assert_eq!(
            (alerts.max_per_minute, github.max_per_minute),
            (Some(5), None)
        );
    }

    #[test]
    fn bad_routes_are_errors_that_say_what_to_write() {
        let env = EnvLayer::default();
        let route = |body: &str| format!("{PLATFORM}  webhook:\n    routes:\n{body}");
        let cases = [
            (route("      gh:\n        events: [push]\n"), "secret"),
            (
                route("      gh:\n        secret: '  '\n"),
                "the secret is empty",
            ),
            (
                route("      gh:\n        secret: s\n        signature: bitbucket\n"),
                "bitbucket",
            ),
            (
                route("      gh:\n        secret: s\n        header: X-Sig\n"),
                "only read by `signature: hmac`",
            ),
            (
                route(
                    "      gh:\n        secret: s\n        signature: hmac\n        \
                     header: 'X Sig'\n",
                ),
                "not a header name",
            ),
            (
                route("      gh:\n        secret: s\n        deliver: '#ops'\n"),
                "write platform:chat_id",
            ),
            (
                route("      gh:\n        secret: s\n        deliver: 'telegram:42'\n"),
                "telegram is not under gateway.platforms (configured: irc)",
            ),
            (
                route("      'a/b':\n        secret: s\n"),
                "invalid route name",
            ),
            (
                route("      gh:\n        secret: s\n        deduplicate: false\n"),
                "only for `signature: hmac` routes",
            ),
            (
                route("      gh:\n        secret: s\n        max_per_minute: 0\n"),
                "max_per_minute is 0",
            ),
            (
                route("      gh:\n        secret: s\n        url: x\n"),
                "url",
            ),
        ];
        for (text, expected) in cases {
            let error = parse(&text, &env).unwrap_err().to_string();
            assert!(error.contains(expected), "{text:?}: {error}");
        }
        let error = parse(&route("      gh:\n        secret: ''\n"), &env)
            .unwrap_err()
            .to_string();
        assert!(error.starts_with("/h/config.yaml:8:"), "{error}");
    }

    #[test]
    fn chat_addresses_split_platform_chat_and_thread() {
        let parsed = |text: &str| ChatAddress::parse(text);
        assert_eq!(
            parsed("telegram:-100123:7"),
            Some(ChatAddress {
                platform: "telegram".into(),
                chat_id: "-100123".into(),
                thread: Some("7".into())
            })
        );
        assert_eq!(parsed("irc:#ops").unwrap().chat_id, "#ops");
        assert_eq!(
            parsed("matrix:!room:example.org:").unwrap().chat_id,
            "!room:example.org"
        );
        for bad in ["irc", "irc:", ":x", "irc::5"] {
            assert_eq!(parsed(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_secret_is_masked_in_the_effective_view() {
        let config = parse(
            &format!(
                "{PLATFORM}  webhook:\n    routes:\n      gh:\n        \
                 secret: a-long-shared-secret\n"
            ),
            &EnvLayer::default(),
        )
        .unwrap();
        let shown = crate::config_edit::effective(&config).unwrap();
        let secret = shown["gateway"]["webhook"]["routes"]["gh"]["secret"]
            .as_str()
            .unwrap();
        assert!(!secret.contains("shared"), "{secret}");
    }
}
