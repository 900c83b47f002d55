//! The gateway part of `talaria import hermes`. Hermes keeps each chat
//! platform's credentials and who may talk in its `.env`
//! (`TELEGRAM_BOT_TOKEN`, `TELEGRAM_ALLOWED_USERS`, `TELEGRAM_ALLOW_ALL_USERS`,
//! `TELEGRAM_HOME_CHANNEL`, and `GATEWAY_ALLOWED_USERS` /
//! `GATEWAY_ALLOW_ALL_USERS` for every platform); `/sethome` writes a home
//! channel to its config.yaml (`platforms.<name>.home_channel`). They become
//! `gateway.platforms.<name>` here. Secrets stay in `.env`: the config names
//! them as `${VAR}`, so the profile's `.env` must hold them before the config
//! is written (the import copies them first).

use std::collections::{BTreeMap, BTreeSet};

use serde_yaml_ng::{Mapping, Value};

use crate::config_edit::{ConfigEditError, set};
use crate::env::EnvLayer;
use crate::hermes_import::{ImportError, ImportReport};
use crate::home::ProfileHome;

/// How a Hermes variable becomes an adapter setting.
#[derive(Debug, Clone, Copy)]
enum Setting {
    /// A credential: the setting is `${VAR}` and the value stays in `.env`.
    Secret(&'static str),
    /// Plain text, written as it is.
    Text(&'static str),
    /// A yes/no switch (Hermes reads 1, true, yes, on), written as a boolean.
    Flag(&'static str),
}

/// A Hermes chat platform whose settings have a place here.
#[derive(Debug)]
struct HermesPlatform {
    /// Hermes's name for it, and the key under `gateway.platforms`.
    name: &'static str,
    /// What its variables start with (`TELEGRAM` in `TELEGRAM_ALLOWED_USERS`).
    prefix: &'static str,
    /// The adapter's settings, by Hermes variable.
    settings: &'static [(&'static str, Setting)],
    /// Flags Hermes turns on when their variable is unset.
    defaults_on: &'static [&'static str],
    /// Users are named by nicks, which Talaria does not take as identities
    /// (IRC: masks `nick!user@host` or `$a:ACCOUNT`): Hermes's bare names
    /// are left out and reported.
    nicks_are_not_users: bool,
}

/// The platforms imported. The keys of the adapters' settings are those of
/// Talaria's adapters where one exists (`telegram`, `irc`), else the Hermes
/// variable's own name, lowercased, without the platform prefix.
const PLATFORMS: &[HermesPlatform] = &[
    HermesPlatform {
        name: "telegram",
        prefix: "TELEGRAM",
        settings: &[("TELEGRAM_BOT_TOKEN", Setting::Secret("bot_token"))],
        defaults_on: &[],
        nicks_are_not_users: false,
    },
    HermesPlatform {
        name: "discord",
        prefix: "DISCORD",
        settings: &[("DISCORD_BOT_TOKEN", Setting::Secret("bot_token"))],
        defaults_on: &[],
        nicks_are_not_users: false,
    },
    HermesPlatform {
        name: "slack",
        prefix: "SLACK",
        settings: &[
            ("SLACK_BOT_TOKEN", Setting::Secret("bot_token")),
            ("SLACK_APP_TOKEN", Setting::Secret("app_token")),
        ],
        defaults_on: &[],
        nicks_are_not_users: false,
    },
    HermesPlatform {
        name: "mattermost",
        prefix: "MATTERMOST",
        settings: &[
            ("MATTERMOST_URL", Setting::Text("url")),
            ("MATTERMOST_TOKEN", Setting::Secret("token")),
        ],
        defaults_on: &[],
        nicks_are_not_users: false,
    },
    HermesPlatform {
        name: "matrix",
        prefix: "MATRIX",
        settings: &[
            ("MATRIX_HOMESERVER", Setting::Text("homeserver")),
            ("MATRIX_USER_ID", Setting::Text("user_id")),
            ("MATRIX_ACCESS_TOKEN", Setting::Secret("access_token")),
            ("MATRIX_PASSWORD", Setting::Secret("password")),
        ],
        defaults_on: &[],
        nicks_are_not_users: false,
    },
    HermesPlatform {
        name: "signal",
        prefix: "SIGNAL",
        settings: &[
            ("SIGNAL_HTTP_URL", Setting::Text("http_url")),
            ("SIGNAL_ACCOUNT", Setting::Text("account")),
        ],
        defaults_on: &[],
        nicks_are_not_users: false,
    },
    HermesPlatform {
        name: "whatsapp",
        prefix: "WHATSAPP",
        settings: &[],
        defaults_on: &[],
        nicks_are_not_users: false,
    },
    // Talaria's `irc` adapter (plugins/irc/src/settings.rs) names its settings
    // differently; Hermes connects with TLS unless told otherwise.
    HermesPlatform {
        name: "irc",
        prefix: "IRC",
        settings: &[
            ("IRC_SERVER", Setting::Text("server")),
            ("IRC_PORT", Setting::Text("port")),
            ("IRC_USE_TLS", Setting::Flag("tls")),
            ("IRC_NICKNAME", Setting::Text("nick")),
            ("IRC_CHANNEL", Setting::Text("channels")),
            ("IRC_SERVER_PASSWORD", Setting::Secret("password")),
        ],
        defaults_on: &["tls"],
        nicks_are_not_users: true,
    },
];

/// The variables naming users allowed on every platform, and anyone at all.
const GATEWAY_ALLOWED_USERS: &str = "GATEWAY_ALLOWED_USERS";
const GATEWAY_ALLOW_ALL_USERS: &str = "GATEWAY_ALLOW_ALL_USERS";

/// Hermes's `.env` as name → value: `export` and quotes dropped, lines that
/// are not assignments skipped (Hermes's own reader is as lenient).
pub(crate) fn parse_dotenv(text: &str) -> BTreeMap<String, String> {
    let mut vars = BTreeMap::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line);
        let Some((name, value)) = line.split_once('=') else {
            continue;
        };
        let name = name.trim();
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        vars.insert(name.to_owned(), unquote(value.trim()));
    }
    vars
}

/// A `.env` value without its quotes, or without a trailing ` # comment`.
fn unquote(value: &str) -> String {
    for quote in ['"', '\''] {
        if let Some(inner) = value
            .strip_prefix(quote)
            .and_then(|rest| rest.strip_suffix(quote))
        {
            return inner.to_owned();
        }
    }
    match value.find(" #") {
        Some(comment) => value[..comment].trim_end().to_owned(),
        None => value.to_owned(),
    }
}

/// Hermes's truthy spellings.
fn truthy(value: &str) -> bool {
    matches!(
        value.trim().to_ascii_lowercase().as_str(),
        "1" | "true" | "yes" | "on"
    )
}

/// A comma-separated list, entries trimmed, empty ones dropped.
fn list(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|entry| !entry.is_empty())
        .map(str::to_owned)
        .collect()
}

/// A plain setting as YAML: a boolean, or a number when it is plain digits
/// (a port); anything else, such as `+15551234567` or `007`, stays text.
fn scalar(text: &str) -> Value {
    let digits = !text.is_empty() && text.chars().all(|c| c.is_ascii_digit());
    if digits
        && (text == "0" || !text.starts_with('0'))
        && let Ok(number) = text.parse::<u32>()
    {
        return Value::Number(number.into());
    }
    match text {
        "true" => Value::Bool(true),
        "false" => Value::Bool(false),
        _ => Value::String(text.to_owned()),
    }
}

/// Talaria's `chat_id[:thread_id]`; a chat id with a `:` of its own (a
/// Matrix room) gets a trailing `:` when there is no thread.
fn home_channel(chat: &str, thread: Option<&str>) -> String {
    match thread {
        Some(thread) => format!("{chat}:{thread}"),
        None if chat.contains(':') => format!("{chat}:"),
        None => chat.to_owned(),
    }
}

/// One platform's settings as they will be written.
#[derive(Debug, Default)]
struct PlatformImport {
    /// The adapter's settings, in the order written.
    settings: Vec<(&'static str, Value)>,
    allowed_users: Vec<String>,
    allow_all: bool,
    home_channel: Option<String>,
    /// Flags on unless a setting says otherwise.
    defaults_on: &'static [&'static str],
    /// Where they came from, for the report.
    sources: Vec<String>,
}

impl PlatformImport {
    fn of(platform: &HermesPlatform) -> Self {
        Self {
            defaults_on: platform.defaults_on,
            ..Self::default()
        }
    }
}

/// Hermes's gateway settings, ready to be written into a profile.
#[derive(Debug, Default)]
pub(crate) struct GatewayImport {
    platforms: BTreeMap<&'static str, PlatformImport>,
    /// `GATEWAY_ALLOW_ALL_USERS` was on.
    allow_all: bool,
    /// `GATEWAY_ALLOWED_USERS`, for every platform imported.
    everywhere: Vec<String>,
    /// The variables the settings name as `${VAR}`.
    secrets: BTreeSet<String>,
    /// What has no place here, for the report.
    unmapped: Vec<String>,
}

impl GatewayImport {
    /// The settings in Hermes's `.env` (`vars`).
    pub(crate) fn from_env(vars: &BTreeMap<String, String>) -> Self {
        let value = |name: &str| vars.get(name).map(|v| v.trim()).filter(|v| !v.is_empty());
        let mut import = Self {
            allow_all: value(GATEWAY_ALLOW_ALL_USERS).is_some_and(truthy),
            everywhere: value(GATEWAY_ALLOWED_USERS).map(list).unwrap_or_default(),
            ..Self::default()
        };
        let mut used: BTreeSet<String> = [GATEWAY_ALLOWED_USERS, GATEWAY_ALLOW_ALL_USERS]
            .map(str::to_owned)
            .into();
        for platform in PLATFORMS {
            let mut found = PlatformImport::of(platform);
            let mut take = |name: String, found: &mut PlatformImport| {
                found.sources.push(name.clone());
                used.insert(name);
            };
            for (name, setting) in platform.settings {
                let Some(text) = value(name) else { continue };
                let (key, written) = match setting {
                    Setting::Secret(key) => {
                        import.secrets.insert((*name).to_owned());
                        (*key, Value::String(format!("${{{name}}}")))
                    }
                    Setting::Text(key) => (*key, scalar(text)),
                    Setting::Flag(key) => (*key, Value::Bool(truthy(text))),
                };
                found.settings.push((key, written));
                take((*name).to_owned(), &mut found);
            }
            let var = |suffix: &str| format!("{}_{suffix}", platform.prefix);
            if let Some(users) = value(&var("ALLOWED_USERS")) {
                // WhatsApp's `*` means anyone.
                let users = list(users);
                found.allow_all |= users.iter().any(|user| user == "*");
                found.allowed_users = users.into_iter().filter(|user| user != "*").collect();
                take(var("ALLOWED_USERS"), &mut found);
            }
            if let Some(flag) = value(&var("ALLOW_ALL_USERS")) {
                found.allow_all |= truthy(flag);
                take(var("ALLOW_ALL_USERS"), &mut found);
            }
            if let Some(chat) = value(&var("HOME_CHANNEL")) {
                let thread = value(&var("HOME_CHANNEL_THREAD_ID"));
                found.home_channel = Some(home_channel(chat, thread));
                take(var("HOME_CHANNEL"), &mut found);
                if thread.is_some() {
                    take(var("HOME_CHANNEL_THREAD_ID"), &mut found);
                }
            }
            if !found.sources.is_empty() {
                import.platforms.insert(platform.name, found);
            }
        }
        let unused = vars
            .iter()
            .filter(|(name, value)| !used.contains(*name) && !value.trim().is_empty());
        for (name, _) in unused {
            let ours = name.starts_with("GATEWAY_")
                || PLATFORMS
                    .iter()
                    .any(|p| name.starts_with(&format!("{}_", p.prefix)));
            if ours {
                import.unmapped.push(format!(".env {name}"));
            }
        }
        import
    }

    /// The `.env` variables the imported settings refer to: the profile's
    /// `.env` must hold them before the settings are written.
    pub(crate) fn secrets(&self) -> &BTreeSet<String> {
        &self.secrets
    }

    /// Adds the home channels `/sethome` left in Hermes's config.yaml
    /// (`platforms.<name>.home_channel.chat_id`, `.thread_id`) where `.env`
    /// named none; the rest of `platforms` is reported as not mapped.
    pub(crate) fn add_config(&mut self, platforms: &Value) {
        let Value::Mapping(platforms) = platforms else {
            self.unmapped.push("platforms".to_owned());
            return;
        };
        for (name, block) in platforms {
            let name = name.as_str().unwrap_or_default();
            let known = PLATFORMS.iter().find(|p| p.name == name);
            let chat = block
                .get("home_channel")
                .and_then(|home| home.get("chat_id"))
                .and_then(text_of);
            if let (Some(platform), Some(chat)) = (known, chat) {
                let thread = block
                    .get("home_channel")
                    .and_then(|home| home.get("thread_id"))
                    .and_then(text_of);
                let found = self
                    .platforms
                    .entry(platform.name)
                    .or_insert_with(|| PlatformImport::of(platform));
                if found.home_channel.is_none() {
                    found.home_channel = Some(home_channel(&chat, thread.as_deref()));
                    found
                        .sources
                        .push(format!("config platforms.{name}.home_channel"));
                }
            }
            let Value::Mapping(block) = block else {
                self.unmapped.push(format!("platforms.{name}"));
                continue;
            };
            for key in block.keys().filter_map(Value::as_str) {
                if !(known.is_some() && key == "home_channel") {
                    self.unmapped.push(format!("platforms.{name}.{key}"));
                }
            }
        }
    }

    /// Writes the settings into `home`'s config.yaml: each platform as one
    /// validated edit (a platform that does not validate is reported and the
    /// others go on). A platform already configured is kept unless
    /// `overwrite`, which replaces the keys imported and keeps the others.
    /// `env` must see the profile's `.env` as it is now.
    pub(crate) fn apply(
        mut self,
        home: &ProfileHome,
        overwrite: bool,
        env: &EnvLayer,
        report: &mut ImportReport,
    ) -> Result<(), ImportError> {
        report.unmapped.append(&mut self.unmapped);
        if !self.everywhere.is_empty() && self.platforms.is_empty() {
            report.unmapped.push(format!(
                ".env {GATEWAY_ALLOWED_USERS} (no platform imported to apply it to)"
            ));
        }
        let path = home.config_file();
        let ours: Value = std::fs::read_to_string(&path)
            .ok()
            .and_then(|text| serde_yaml_ng::from_str(&text).ok())
            .unwrap_or(Value::Null);
        let gateway = ours.get("gateway");
        if self.allow_all {
            if gateway.and_then(|g| g.get("allow_all")).is_some() && !overwrite {
                report.kept.push("config gateway.allow_all".to_owned());
            } else {
                set(&path, "gateway.allow_all", "true", env)?;
                report.imported.push(format!(
                    "config gateway.allow_all ({GATEWAY_ALLOW_ALL_USERS})"
                ));
            }
        }
        for (name, found) in self.platforms {
            let key = format!("gateway.platforms.{name}");
            let existing = gateway
                .and_then(|g| g.get("platforms"))
                .and_then(|p| p.get(name));
            if existing.is_some() && !overwrite {
                report.kept.push(format!("config {key}"));
                continue;
            }
            let mut sources = found.sources.clone();
            if !self.everywhere.is_empty() {
                sources.push(GATEWAY_ALLOWED_USERS.to_owned());
            }
            let mut map = match existing {
                Some(Value::Mapping(map)) => map.clone(),
                _ => Mapping::new(),
            };
            let nicks_are_not_users = PLATFORMS
                .iter()
                .any(|p| p.name == name && p.nicks_are_not_users);
            let nicks = write_platform(&mut map, found, &self.everywhere, nicks_are_not_users);
            if !nicks.is_empty() {
                report.unmapped.push(format!(
                    "{key}.allowed_users {} (nicks are not identities: allow masks \
                     nick!user@host or services accounts $a:ACCOUNT)",
                    nicks.join(", ")
                ));
            }
            let text = serde_yaml_ng::to_string(&Value::Mapping(map)).map_err(|e| {
                ImportError::HermesConfig {
                    path: path.clone(),
                    message: e.to_string(),
                }
            })?;
            match set(&path, &key, &text, env) {
                Ok(()) => {
                    report
                        .imported
                        .push(format!("config {key} ({})", sources.join(", ")));
                    report.gateway_platforms.push(name.to_owned());
                }
                Err(ConfigEditError::Invalid(crate::config::ConfigError::Invalid {
                    message,
                    ..
                })) => report
                    .unmapped
                    .push(format!("{key} (not imported: {message})")),
                Err(other) => return Err(other.into()),
            }
        }
        Ok(())
    }
}

/// Puts one platform's settings into its `gateway.platforms.<name>` mapping.
/// Returns the allowed users left out as bare nicks (when
/// `nicks_are_not_users`).
fn write_platform(
    map: &mut Mapping,
    found: PlatformImport,
    everywhere: &[String],
    nicks_are_not_users: bool,
) -> Vec<String> {
    let mut put = |key: &str, value: Value| {
        map.insert(Value::String(key.to_owned()), value);
    };
    for key in found.defaults_on {
        if !found.settings.iter().any(|(k, _)| k == key) {
            put(key, Value::Bool(true));
        }
    }
    for (key, value) in found.settings {
        put(key, value);
    }
    let mut users = found.allowed_users;
    for user in everywhere {
        if !users.contains(user) {
            users.push(user.clone());
        }
    }
    let (users, nicks): (Vec<String>, Vec<String>) = users
        .into_iter()
        .partition(|user| !nicks_are_not_users || user.contains('!') || user.starts_with("$a:"));
    if !users.is_empty() {
        put(
            "allowed_users",
            Value::Sequence(users.into_iter().map(Value::String).collect()),
        );
    }
    if found.allow_all {
        put("allow_all", Value::Bool(true));
    }
    if let Some(home) = found.home_channel {
        put("home_channel", Value::String(home));
    }
    nicks
}

/// A YAML scalar as text (Hermes writes chat ids as numbers or strings).
fn text_of(value: &Value) -> Option<String> {
    match value {
        Value::String(text) if !text.trim().is_empty() => Some(text.trim().to_owned()),
        Value::Number(number) => Some(number.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::config::ConfigFile;
    use crate::hermes_import::import_hermes;

    /// A Hermes home with the given `.env` and config.yaml.
    fn hermes(dotenv: &str, config: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(".env"), dotenv).unwrap();
        std::fs::write(dir.path().join("config.yaml"), config).unwrap();
        dir
    }

    /// Imports `from` into a fresh profile: the home, its directory, the report.
    fn import(from: &Path, overwrite: bool) -> (tempfile::TempDir, ProfileHome, ImportReport) {
        let target = tempfile::tempdir().unwrap();
        let home = ProfileHome::at(target.path());
        let report = import_again(from, &home, overwrite);
        (target, home, report)
    }

    fn import_again(from: &Path, home: &ProfileHome, overwrite: bool) -> ImportReport {
        import_hermes(from, home, overwrite, &EnvLayer::from_pairs(&[])).unwrap()
    }

    /// The profile's config.yaml as written (nothing expanded).
    fn written(home: &ProfileHome) -> Value {
        serde_yaml_ng::from_str(&std::fs::read_to_string(home.config_file()).unwrap()).unwrap()
    }

    /// The profile's config as a run sees it (`${VAR}` from its `.env`).
    fn loaded(home: &ProfileHome) -> ConfigFile {
        let env = EnvLayer::from_pairs(&[])
            .reload_dotenv(&home.env_file())
            .unwrap();
        ConfigFile::load(&home.config_file(), &env).unwrap()
    }

    const DOTENV: &str = "\
OPENROUTER_API_KEY=sk-or-1
TELEGRAM_BOT_TOKEN=\"123456:ABCDEF_ghijkl\"
TELEGRAM_ALLOWED_USERS=111, 222
TELEGRAM_HOME_CHANNEL=-100123
TELEGRAM_HOME_CHANNEL_THREAD_ID=7
TELEGRAM_REACTIONS=true
export DISCORD_BOT_TOKEN=discord-secret-token
DISCORD_ALLOW_ALL_USERS=true
SLACK_BOT_TOKEN=
IRC_SERVER=irc.libera.chat
IRC_PORT=6697
IRC_CHANNEL=#a,#b
IRC_NICKNAME=hermes-bot
IRC_SERVER_PASSWORD='irc-secret'
IRC_ALLOWED_USERS=ann
GATEWAY_ALLOWED_USERS=ops
";

    /// `/sethome` in Discord, as Hermes records it.
    const CONFIG: &str = "model:\n  default: m\nplatforms:\n  discord:\n    enabled: true\n    \
                          home_channel:\n      platform: discord\n      chat_id: '98765'\n      \
                          name: general\n";

    #[test]
    fn platforms_come_over_with_their_secrets_left_in_dotenv() {
        let from = hermes(DOTENV, CONFIG);
        let (_target, home, report) = import(from.path(), false);

        // The secrets the settings name are in .env, nothing else of the gateway's.
        let dotenv = std::fs::read_to_string(home.env_file()).unwrap();
        for line in [
            "TELEGRAM_BOT_TOKEN=\"123456:ABCDEF_ghijkl\"",
            "export DISCORD_BOT_TOKEN=discord-secret-token",
            "IRC_SERVER_PASSWORD='irc-secret'",
        ] {
            assert!(dotenv.lines().any(|l| l == line), "{line} in:\n{dotenv}");
        }
        for name in [
            "TELEGRAM_ALLOWED_USERS",
            "IRC_SERVER=",
            "GATEWAY_ALLOWED_USERS",
        ] {
            assert!(!dotenv.contains(name), "{name} in:\n{dotenv}");
        }

        // config.yaml names them and never holds them.
        let text = std::fs::read_to_string(home.config_file()).unwrap();
        for secret in ["ABCDEF_ghijkl", "discord-secret-token", "irc-secret"] {
            assert!(!text.contains(secret), "{secret} inline in:\n{text}");
        }
        let raw = written(&home);
        let platforms = &raw["gateway"]["platforms"];
        assert_eq!(platforms["telegram"]["bot_token"], "${TELEGRAM_BOT_TOKEN}");
        assert_eq!(platforms["discord"]["bot_token"], "${DISCORD_BOT_TOKEN}");
        assert_eq!(platforms["irc"]["password"], "${IRC_SERVER_PASSWORD}");
        assert_eq!(platforms["irc"]["port"].as_u64(), Some(6697));
        assert!(
            platforms.get("slack").is_none(),
            "an empty token is no platform"
        );

        // What a run sees.
        let gateway = loaded(&home).gateway;
        let telegram = &gateway.platforms["telegram"];
        assert_eq!(
            telegram.settings["bot_token"].as_str(),
            Some("123456:ABCDEF_ghijkl")
        );
        assert_eq!(telegram.allowed_users, ["111", "222", "ops"]);
        assert!(!telegram.allow_all);
        assert_eq!(telegram.home_channel.as_deref(), Some("-100123:7"));
        let discord = &gateway.platforms["discord"];
        assert!(discord.allow_all);
        assert_eq!(discord.allowed_users, ["ops"]);
        assert_eq!(
            discord.home_channel.as_deref(),
            Some("98765"),
            "from config.yaml"
        );
        let irc = &gateway.platforms["irc"];
        assert!(
            irc.allowed_users.is_empty(),
            "a nick is not an identity: {:?}",
            irc.allowed_users
        );
        assert!(
            report.unmapped.iter().any(|u| u.starts_with(
                "gateway.platforms.irc.allowed_users ann, ops (nicks are not identities"
            )),
            "{report:?}"
        );
        assert_eq!(irc.settings["server"].as_str(), Some("irc.libera.chat"));
        assert_eq!(irc.settings["channels"].as_str(), Some("#a,#b"));
        assert_eq!(irc.settings["nick"].as_str(), Some("hermes-bot"));
        assert_eq!(irc.settings["password"].as_str(), Some("irc-secret"));
        assert_eq!(
            irc.settings["tls"].as_bool(),
            Some(true),
            "Hermes's IRC default"
        );
        assert!(!gateway.allow_all);

        assert_eq!(report.gateway_platforms, ["discord", "irc", "telegram"]);
        assert!(
            report.imported.iter().any(|i| i
                == "config gateway.platforms.telegram (TELEGRAM_BOT_TOKEN, \
                    TELEGRAM_ALLOWED_USERS, TELEGRAM_HOME_CHANNEL, \
                    TELEGRAM_HOME_CHANNEL_THREAD_ID, GATEWAY_ALLOWED_USERS)"),
            "{report:?}"
        );
        for unmapped in [".env TELEGRAM_REACTIONS", "platforms.discord.enabled"] {
            assert!(
                report.unmapped.contains(&unmapped.to_owned()),
                "{unmapped}: {report:?}"
            );
        }
        for absent in ["home_channel", "SLACK_BOT_TOKEN"] {
            assert!(
                !report.unmapped.iter().any(|u| u.contains(absent)),
                "{absent}: {report:?}"
            );
        }
        let shown = format!("{report:?}");
        for secret in ["ABCDEF_ghijkl", "discord-secret-token", "irc-secret"] {
            assert!(!shown.contains(secret), "{secret} in the report");
        }
    }

    #[test]
    fn a_configured_platform_is_kept_and_overwrite_replaces_only_what_hermes_has() {
        let from = hermes(DOTENV, CONFIG);
        let (_target, home, _) = import(from.path(), false);
        let env = EnvLayer::from_pairs(&[])
            .reload_dotenv(&home.env_file())
            .unwrap();
        set(
            &home.config_file(),
            "gateway.platforms.telegram.busy_mode",
            "queue",
            &env,
        )
        .unwrap();
        set(
            &home.config_file(),
            "gateway.platforms.telegram.allowed_users",
            "[me]",
            &env,
        )
        .unwrap();

        let again = import_again(from.path(), &home, false);
        assert!(
            again
                .kept
                .contains(&"config gateway.platforms.telegram".to_owned()),
            "{again:?}"
        );
        assert!(again.gateway_platforms.is_empty(), "{again:?}");
        let telegram = &loaded(&home).gateway.platforms["telegram"];
        assert_eq!(telegram.allowed_users, ["me"]);

        let replaced = import_again(from.path(), &home, true);
        assert!(replaced.gateway_platforms.contains(&"telegram".to_owned()));
        let telegram = &loaded(&home).gateway.platforms["telegram"];
        assert_eq!(telegram.allowed_users, ["111", "222", "ops"]);
        assert_eq!(
            telegram.busy_mode,
            crate::BusyMode::Queue,
            "a key Hermes has no say in stays"
        );
    }

    #[test]
    fn allow_all_flags_a_star_and_a_room_id_with_colons() {
        let from = hermes(
            "GATEWAY_ALLOW_ALL_USERS=yes\nWHATSAPP_ALLOWED_USERS=*\n\
             MATRIX_ACCESS_TOKEN=syt_secret\nMATRIX_HOMESERVER=https://matrix.org\n\
             MATRIX_HOME_CHANNEL=!room:matrix.org\nMATRIX_ALLOW_ALL_USERS=false\n\
             SIGNAL_ACCOUNT=+15551234567\nSIGNAL_HTTP_URL=http://127.0.0.1:8080\n",
            "model:\n  default: m\n",
        );
        let (_target, home, report) = import(from.path(), false);
        let gateway = loaded(&home).gateway;
        assert!(gateway.allow_all);
        let whatsapp = &gateway.platforms["whatsapp"];
        assert!(whatsapp.allow_all && whatsapp.allowed_users.is_empty());
        let matrix = &gateway.platforms["matrix"];
        assert!(!matrix.allow_all);
        assert_eq!(
            matrix.settings["homeserver"].as_str(),
            Some("https://matrix.org")
        );
        assert_eq!(matrix.settings["access_token"].as_str(), Some("syt_secret"));
        let signal = &gateway.platforms["signal"];
        assert_eq!(signal.settings["account"].as_str(), Some("+15551234567"));
        let home_channel = matrix.home_channel().unwrap();
        assert_eq!(home_channel.chat_id, "!room:matrix.org");
        assert_eq!(home_channel.thread, None);
        assert!(
            report
                .imported
                .contains(&"config gateway.allow_all (GATEWAY_ALLOW_ALL_USERS)".to_owned()),
            "{report:?}"
        );
    }

    #[test]
    fn a_platform_whose_secret_cannot_be_resolved_is_reported_and_the_rest_imported() {
        let from = hermes(
            "TELEGRAM_BOT_TOKEN=123:abc\nDISCORD_BOT_TOKEN=d-token\n",
            "model:\n  default: m\n",
        );
        let target = tempfile::tempdir().unwrap();
        let home = ProfileHome::at(target.path());
        // The profile has the variable already, empty: it is kept, and names nothing.
        std::fs::write(home.env_file(), "TELEGRAM_BOT_TOKEN=\n").unwrap();
        let report = import_again(from.path(), &home, false);
        assert!(report.kept.contains(&".env TELEGRAM_BOT_TOKEN".to_owned()));
        let refused = report
            .unmapped
            .iter()
            .find(|u| u.starts_with("gateway.platforms.telegram (not imported: "))
            .unwrap_or_else(|| panic!("{report:?}"));
        assert!(
            refused.contains("TELEGRAM_BOT_TOKEN is not set"),
            "{refused}"
        );
        assert_eq!(report.gateway_platforms, ["discord"]);
        let gateway = loaded(&home).gateway;
        assert!(!gateway.platforms.contains_key("telegram"));
        assert_eq!(
            gateway.platforms["discord"].settings["bot_token"].as_str(),
            Some("d-token")
        );
    }

    #[test]
    fn dotenv_lines_are_read_leniently() {
        let vars = parse_dotenv(
            "# comment\nexport A=1\nB=\"two words\"\nC='x # y'\nD=plain # note\n\
             not a line\nbad name=3\nE=\n",
        );
        let pairs: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(
            pairs,
            [
                ("A", "1"),
                ("B", "two words"),
                ("C", "x # y"),
                ("D", "plain"),
                ("E", "")
            ]
        );
    }
}
