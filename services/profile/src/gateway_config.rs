//! `gateway:` in config.yaml: who may talk to the agent on each chat platform,
//! how a platform's chats map to sessions, and the adapter's own settings
//! (every key the host does not know, handed to the plugin as its config).

use std::collections::BTreeMap;
use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use crate::env::EnvLayer;
use crate::webhook_config::WebhookConfig;

/// The gateway (`talaria gateway`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GatewayConfig {
    /// Anyone on any platform may talk to the agent (off: allowlists and pairing).
    pub allow_all: bool,
    /// Platforms by name (the adapter plugin's `platform()`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub platforms: BTreeMap<String, PlatformConfig>,
    /// The listener platforms' webhooks reach.
    pub webhook: WebhookConfig,
    /// A chat quiet for this many hours starts a fresh session (0: never).
    pub session_idle_reset_hours: u32,
    /// Turns running at once over all chats; more wait their turn (each
    /// builds an agent: memory and CPU grow with this, not with chats).
    pub max_concurrent_turns: usize,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        Self {
            allow_all: false,
            platforms: BTreeMap::new(),
            webhook: WebhookConfig::default(),
            session_idle_reset_hours: 24,
            max_concurrent_turns: 8,
        }
    }
}

/// One platform (`gateway.platforms.<name>`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
// No deny_unknown_fields: the keys the host does not know are the adapter's.
#[serde(default)]
pub struct PlatformConfig {
    /// Anyone on this platform.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub allow_all: bool,
    /// These user ids, in any chat.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allowed_users: Vec<String>,
    /// Anyone in these chats.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allowed_chats: Vec<String>,
    /// These user ids may answer anyone's approval question in a chat (everyone
    /// else answers only the questions of their own turns).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub admins: Vec<String>,
    /// Where unprompted messages (cron results) go: `chat_id[:thread_id]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub home_channel: Option<String>,
    /// What a message does while the agent is busy with that session.
    pub busy_mode: BusyMode,
    /// Whether group members share one session or have one each.
    pub group_sessions: GroupSessions,
    /// The adapter's own settings (tokens, servers, nicknames), `${VAR}`-expanded.
    #[serde(flatten)]
    pub settings: BTreeMap<String, serde_yaml_ng::Value>,
}

/// What a message does when its session already has a turn running.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BusyMode {
    /// Stop the running turn and answer the new message.
    #[default]
    Interrupt,
    /// Answer it after the running turn.
    Queue,
    /// Give it to the running turn before its next model call.
    Steer,
}

/// How sessions are shared in group chats.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GroupSessions {
    /// Each member of a group has a session of their own.
    #[default]
    PerUser,
    /// The whole group shares one session.
    Shared,
}

/// A home channel: a chat, and a thread in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HomeChannel {
    /// The chat's id.
    pub chat_id: String,
    /// The thread, when one is named.
    pub thread: Option<String>,
}

impl PlatformConfig {
    /// The home channel, split at its last `:` (a chat id that contains `:`,
    /// like a Matrix room, is written with a trailing `:`).
    pub fn home_channel(&self) -> Option<HomeChannel> {
        let text = self.home_channel.as_deref()?;
        Some(match text.rsplit_once(':') {
            Some((chat, thread)) => HomeChannel {
                chat_id: chat.to_owned(),
                thread: (!thread.is_empty()).then(|| thread.to_owned()),
            },
            None => HomeChannel {
                chat_id: text.to_owned(),
                thread: None,
            },
        })
    }
}

impl GatewayConfig {
    /// Expands `${VAR}` in the adapters' settings and the home channels.
    /// Returns the first unset variable without a default.
    pub fn expand(&mut self, env: &EnvLayer) -> Result<(), String> {
        for platform in self.platforms.values_mut() {
            if let Some(home) = platform.home_channel.as_mut() {
                *home = crate::config::expand(home, env)?;
            }
            for value in platform.settings.values_mut() {
                expand_value(value, env)?;
            }
        }
        self.webhook.expand(env)
    }

    /// Checks what serde cannot: names, empty entries, the home channel.
    /// Returns the problem and the key it is under.
    pub fn validate(&self) -> Result<(), (String, String)> {
        for (name, platform) in &self.platforms {
            let valid = name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
            if name.is_empty() || !valid {
                return Err((
                    name.clone(),
                    format!(
                        "gateway.platforms: invalid platform name {name:?}: use letters, digits, \
                         '_' or '-'"
                    ),
                ));
            }
            for (list, entries) in [
                ("allowed_users", &platform.allowed_users),
                ("allowed_chats", &platform.allowed_chats),
                ("admins", &platform.admins),
            ] {
                if entries.iter().any(|entry| entry.trim().is_empty()) {
                    return Err((
                        list.to_owned(),
                        format!("gateway.platforms.{name}.{list}: an empty entry"),
                    ));
                }
            }
            if platform
                .home_channel()
                .is_some_and(|home| home.chat_id.trim().is_empty())
            {
                return Err((
                    "home_channel".to_owned(),
                    format!(
                        "gateway.platforms.{name}.home_channel: write chat_id or chat_id:thread_id"
                    ),
                ));
            }
        }
        if self.max_concurrent_turns == 0 {
            return Err((
                "max_concurrent_turns".to_owned(),
                "gateway.max_concurrent_turns must be at least 1 (default 8)".to_owned(),
            ));
        }
        let platforms: Vec<&str> = self.platforms.keys().map(String::as_str).collect();
        self.webhook.validate(&platforms)
    }

    /// Things worth telling the user at start that are not errors.
    pub fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        let host = self.webhook.host.trim_matches(|c| c == '[' || c == ']');
        let loopback =
            host == "localhost" || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback());
        if !loopback {
            notes.push(format!(
                "gateway.webhook.host is {}: the webhook listener is reachable from other \
                 machines (put it behind a TLS proxy, or use 127.0.0.1)",
                self.webhook.host
            ));
        }
        if self.allow_all {
            notes.push(
                "gateway.allow_all is on: anyone who can write to the bot talks to the agent"
                    .to_owned(),
            );
        }
        notes
    }
}

/// Expands and validates the parsed `gateway` section of `text` (the file at
/// `path`), with the place of the first problem.
pub(crate) fn check(
    gateway: &mut GatewayConfig,
    text: &str,
    path: &std::path::Path,
    env: &EnvLayer,
) -> Result<(), crate::ConfigError> {
    let invalid = |at, message| crate::config::invalid_at(path, at, message);
    gateway.expand(env).map_err(|variable| {
        invalid(
            crate::config::locate(text, &format!("${{{variable}")),
            format!(
                "environment variable {variable} is not set (set it, put it in .env, or write \
                 ${{{variable}:-default}})"
            ),
        )
    })?;
    gateway.validate().map_err(|(key, message)| {
        invalid(crate::config::locate_after(text, "gateway", &key), message)
    })
}

fn expand_value(value: &mut serde_yaml_ng::Value, env: &EnvLayer) -> Result<(), String> {
    use serde_yaml_ng::Value;
    match value {
        Value::String(text) => *text = crate::config::expand(text, env)?,
        Value::Sequence(items) => {
            for item in items {
                expand_value(item, env)?;
            }
        }
        Value::Mapping(map) => {
            for (_, item) in map.iter_mut() {
                expand_value(item, env)?;
            }
        }
        Value::Tagged(tagged) => expand_value(&mut tagged.value, env)?,
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::{ConfigError, ConfigFile};

    fn parse(text: &str, env: &EnvLayer) -> Result<ConfigFile, ConfigError> {
        ConfigFile::parse(text, Path::new("/h/config.yaml"), env)
    }

    #[test]
    fn defaults_when_the_section_is_missing() {
        let config = parse("model:\n  name: m\n", &EnvLayer::default()).unwrap();
        let gateway = config.gateway;
        assert!(!gateway.allow_all);
        assert!(gateway.platforms.is_empty());
        assert_eq!(gateway.webhook.host, "127.0.0.1");
        assert_eq!(gateway.webhook.port, 8644);
        assert_eq!(gateway.session_idle_reset_hours, 24);
        assert!(gateway.notes().is_empty());
    }

    #[test]
    fn platform_keys_split_into_host_settings_and_the_adapters_expanded() {
        let env = EnvLayer::from_pairs(&[("IRC_PASS", "s3cret")]);
        let text = "gateway:\n  session_idle_reset_hours: 0\n  platforms:\n    irc:\n      \
                    allowed_users: [ann]\n      allowed_chats: ['#team']\n      \
                    home_channel: '#team:topic'\n      busy_mode: steer\n      \
                    group_sessions: shared\n      server: irc.libera.chat\n      \
                    password: ${IRC_PASS}\n      channels: ['#team', '${CHAN:-#ops}']\n";
        let gateway = parse(text, &env).unwrap().gateway;
        assert_eq!(gateway.session_idle_reset_hours, 0);
        let irc = &gateway.platforms["irc"];
        assert_eq!(irc.allowed_users, ["ann"]);
        assert_eq!(irc.allowed_chats, ["#team"]);
        assert_eq!(irc.busy_mode, BusyMode::Steer);
        assert_eq!(irc.group_sessions, GroupSessions::Shared);
        assert_eq!(
            irc.home_channel(),
            Some(HomeChannel {
                chat_id: "#team".into(),
                thread: Some("topic".into())
            })
        );
        let keys: Vec<&str> = irc.settings.keys().map(String::as_str).collect();
        assert_eq!(keys, ["channels", "password", "server"]);
        assert_eq!(irc.settings["password"].as_str(), Some("s3cret"));
        assert_eq!(
            irc.settings["channels"][1].as_str(),
            Some("#ops"),
            "sequences are expanded too"
        );
    }

    #[test]
    fn a_platform_left_bare_gets_the_defaults() {
        let gateway = parse(
            "gateway:\n  platforms:\n    telegram:\n      token: t\n",
            &EnvLayer::default(),
        )
        .unwrap()
        .gateway;
        let telegram = &gateway.platforms["telegram"];
        assert_eq!(telegram.busy_mode, BusyMode::Interrupt);
        assert_eq!(telegram.group_sessions, GroupSessions::PerUser);
        assert!(!telegram.allow_all);
        assert_eq!(telegram.home_channel(), None);
    }

    #[test]
    fn an_unknown_busy_mode_names_the_choices() {
        let error = parse(
            "gateway:\n  platforms:\n    irc:\n      busy_mode: wait\n",
            &EnvLayer::default(),
        )
        .unwrap_err()
        .to_string();
        for word in ["wait", "interrupt", "queue", "steer"] {
            assert!(error.contains(word), "{error}");
        }
    }

    #[test]
    fn an_unset_secret_names_the_variable_and_its_line() {
        let error = parse(
            "gateway:\n  platforms:\n    telegram:\n      token: ${TG_TOKEN}\n",
            &EnvLayer::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(error.starts_with("/h/config.yaml:4:"), "{error}");
        assert!(error.contains("TG_TOKEN is not set"), "{error}");
    }

    #[test]
    fn bad_values_are_errors_with_their_place() {
        let env = EnvLayer::default();
        let cases = [
            ("gateway:\n  alow_all: true\n", "alow_all"),
            ("gateway:\n  webhook:\n    port: 70000\n", "70000"),
            ("gateway:\n  session_idle_reset_hours: -1\n", "-1"),
            (
                "gateway:\n  max_concurrent_turns: 0\n",
                "max_concurrent_turns must be at least 1",
            ),
            (
                "gateway:\n  platforms:\n    irc:\n      allowed_users: ['']\n",
                "allowed_users: an empty entry",
            ),
            (
                "gateway:\n  platforms:\n    'my irc':\n      server: x\n",
                "invalid platform name",
            ),
            (
                "gateway:\n  platforms:\n    irc:\n      home_channel: ':5'\n",
                "home_channel",
            ),
        ];
        for (text, expected) in cases {
            let error = parse(text, &env).unwrap_err().to_string();
            assert!(error.contains(expected), "{text:?}: {error}");
        }
        let error = parse(
            "gateway:\n  platforms:\n    irc:\n      server: x\n      allowed_chats: ['  ']\n",
            &env,
        )
        .unwrap_err()
        .to_string();
        assert!(error.starts_with("/h/config.yaml:5:"), "{error}");
    }

    #[test]
    fn an_open_webhook_host_is_allowed_with_a_note() {
        let gateway = parse(
            "gateway:\n  webhook:\n    host: 0.0.0.0\n    port: 9000\n",
            &EnvLayer::default(),
        )
        .unwrap()
        .gateway;
        assert_eq!(gateway.webhook.port, 9000);
        let notes = gateway.notes();
        assert_eq!(notes.len(), 1);
        assert!(notes[0].contains("0.0.0.0"), "{notes:?}");
        for loopback in ["localhost", "::1", "[::1]", "127.0.0.2"] {
            let mut quiet = GatewayConfig::default();
            quiet.webhook.host = loopback.into();
            assert!(quiet.notes().is_empty(), "{loopback}");
        }
    }

    #[test]
    fn a_chat_id_with_colons_keeps_them_before_a_trailing_colon() {
        let platform = PlatformConfig {
            home_channel: Some("!room:matrix.org:".into()),
            ..PlatformConfig::default()
        };
        assert_eq!(
            platform.home_channel(),
            Some(HomeChannel {
                chat_id: "!room:matrix.org".into(),
                thread: None
            })
        );
    }

    #[test]
    fn the_effective_view_shows_the_gateway_with_adapter_secrets_masked() {
        let env = EnvLayer::from_pairs(&[("TG", "123456:ABCDEFGHIJKLMNOP")]);
        let config = parse(
            "gateway:\n  platforms:\n    telegram:\n      token: ${TG}\n      api_base: https://x\n",
            &env,
        )
        .unwrap();
        let shown = crate::config_edit::effective(&config).unwrap();
        let telegram = &shown["gateway"]["platforms"]["telegram"];
        assert_eq!(telegram["api_base"].as_str(), Some("https://x"));
        let token = telegram["token"].as_str().unwrap();
        assert!(!token.contains("ABCDEFGH"), "{token}");
        assert_eq!(shown["gateway"]["webhook"]["port"].as_u64(), Some(8644));
    }

    #[test]
    fn round_trips_through_yaml_without_writing_defaults() {
        let mut config = ConfigFile::default();
        assert!(!config.to_yaml().unwrap().contains("gateway"));
        config.gateway.allow_all = true;
        let platform = PlatformConfig {
            allowed_users: vec!["ann".into()],
            settings: BTreeMap::from([("server".to_owned(), "irc.example".into())]),
            ..PlatformConfig::default()
        };
        config.gateway.platforms.insert("irc".into(), platform);
        let text = config.to_yaml().unwrap();
        let back = parse(&text, &EnvLayer::default()).unwrap();
        assert_eq!(back.gateway, config.gateway);
    }
}
