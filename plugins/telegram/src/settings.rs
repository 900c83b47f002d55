//! The plugin's settings (`gateway.platforms.telegram` in config.yaml), the
//! Bot API URLs built from them, and the redaction of the token.

/// Where the Bot API lives unless `api_base` says otherwise.
pub const DEFAULT_API_BASE: &str = "https://api.telegram.org";
/// The long-poll timeout unless `poll_timeout_secs` says otherwise.
pub const DEFAULT_POLL_TIMEOUT_SECS: u32 = 25;
/// Telegram caps the long-poll timeout; longer values only risk proxies
/// cutting the idle connection.
pub const MAX_POLL_TIMEOUT_SECS: u32 = 50;

/// What replaces the token in anything shown or logged.
const REDACTED: &str = "<redacted>";

/// The settings of one bot account.
#[derive(Clone, PartialEq, Eq)]
pub struct Settings {
    /// The token from @BotFather (`123456:ABC-DEF…`): a secret.
    token: String,
    /// `https://api.telegram.org`, without a trailing slash.
    pub api_base: String,
    /// How long one `getUpdates` waits on the server for an update.
    pub poll_timeout_secs: u32,
}

// Hand-written so the token never reaches a log through `{:?}`.
impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Settings")
            .field("token", &REDACTED)
            .field("api_base", &self.api_base)
            .field("poll_timeout_secs", &self.poll_timeout_secs)
            .finish()
    }
}

impl Settings {
    /// Reads the settings through `get` (the host's `config.get`).
    pub fn load(get: impl Fn(&str) -> Result<Option<String>, String>) -> Result<Self, String> {
        let token = get("bot_token")?
            .map(|t| t.trim().to_owned())
            .filter(|t| !t.is_empty())
            .ok_or(
                "bot_token is not set: put `bot_token: \"${TELEGRAM_BOT_TOKEN}\"` under \
                 gateway.platforms.telegram in config.yaml and the token from @BotFather in .env",
            )?;
        // The token goes into URL paths: anything outside its alphabet would
        // change the request (a `/`, `?` or `#`), so it is refused outright.
        if !token
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, ':' | '_' | '-'))
        {
            return Err(
                "bot_token is malformed: a Bot API token looks like 123456:ABC-DEF1234".into(),
            );
        }
        let api_base = get("api_base")?
            .map(|b| b.trim().trim_end_matches('/').to_owned())
            .filter(|b| !b.is_empty())
            .unwrap_or_else(|| DEFAULT_API_BASE.to_owned());
        if split_url(&api_base).is_none() {
            return Err(format!("api_base {api_base:?} is not an http(s) URL"));
        }
        let poll_timeout_secs = match get("poll_timeout_secs")? {
            None => DEFAULT_POLL_TIMEOUT_SECS,
            Some(text) => text
                .trim()
                .parse::<u32>()
                .ok()
                .filter(|secs| *secs <= MAX_POLL_TIMEOUT_SECS)
                .ok_or_else(|| {
                    format!(
                        "poll_timeout_secs {text:?} is not a number of seconds from 0 to {MAX_POLL_TIMEOUT_SECS}"
                    )
                })?,
        };
        Ok(Self {
            token,
            api_base,
            poll_timeout_secs,
        })
    }

    /// `<api_base>/bot<token>/<method>`.
    pub fn method_url(&self, method: &str) -> String {
        format!("{}/bot{}/{method}", self.api_base, self.token)
    }

    /// `<api_base>/file/bot<token>/<file_path>` (a path from `getFile`).
    pub fn file_url(&self, file_path: &str) -> String {
        format!(
            "{}/file/bot{}/{}",
            self.api_base,
            self.token,
            file_path.trim_start_matches('/')
        )
    }

    /// `text` with the token replaced, for errors and logs (an error may
    /// quote a URL, which holds `bot<token>`).
    pub fn redact(&self, text: &str) -> String {
        text.replace(&self.token, REDACTED)
    }
}

/// A URL split for `wasi:http`: whether it is https, its authority
/// (`host[:port]`) and its path with query.
pub fn split_url(url: &str) -> Option<(bool, &str, &str)> {
    let (https, rest) = if let Some(rest) = url.strip_prefix("https://") {
        (true, rest)
    } else {
        (false, url.strip_prefix("http://")?)
    };
    let end = rest.find('/').unwrap_or(rest.len());
    let (authority, path) = rest.split_at(end);
    if authority.is_empty() || authority.contains('@') {
        return None;
    }
    Some((https, authority, if path.is_empty() { "/" } else { path }))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn from(pairs: &[(&str, &str)]) -> Result<Settings, String> {
        Settings::load(|name| {
            Ok(pairs
                .iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| (*value).to_owned()))
        })
    }

    #[test]
    fn defaults_apply_and_urls_carry_the_token() {
        let settings = from(&[("bot_token", "123:abc-DEF_9")]).unwrap();
        assert_eq!(settings.api_base, DEFAULT_API_BASE);
        assert_eq!(settings.poll_timeout_secs, DEFAULT_POLL_TIMEOUT_SECS);
        assert_eq!(
            settings.method_url("getMe"),
            "https://api.telegram.org/bot123:abc-DEF_9/getMe"
        );
        assert_eq!(
            settings.file_url("/photos/file_1.jpg"),
            "https://api.telegram.org/file/bot123:abc-DEF_9/photos/file_1.jpg"
        );
    }

    #[test]
    fn overrides_are_read_and_checked() {
        let settings = from(&[
            ("bot_token", "1:x"),
            ("api_base", "http://127.0.0.1:8081/"),
            ("poll_timeout_secs", "0"),
        ])
        .unwrap();
        assert_eq!(settings.api_base, "http://127.0.0.1:8081");
        assert_eq!(settings.poll_timeout_secs, 0);
        assert!(from(&[("bot_token", "1:x"), ("poll_timeout_secs", "51")]).is_err());
        assert!(from(&[("bot_token", "1:x"), ("poll_timeout_secs", "soon")]).is_err());
        assert!(from(&[("bot_token", "1:x"), ("api_base", "ftp://x")]).is_err());
    }

    #[test]
    fn a_missing_or_malformed_token_is_a_clear_error() {
        assert!(from(&[]).unwrap_err().contains("TELEGRAM_BOT_TOKEN"));
        assert!(from(&[("bot_token", "  ")]).is_err());
        assert!(
            from(&[("bot_token", "1:x/../getMe?")])
                .unwrap_err()
                .contains("malformed")
        );
    }

    #[test]
    fn urls_split_for_wasi_http() {
        assert_eq!(
            split_url("https://api.telegram.org/bot1:x/getMe"),
            Some((true, "api.telegram.org", "/bot1:x/getMe"))
        );
        assert_eq!(
            split_url("http://127.0.0.1:8081"),
            Some((false, "127.0.0.1:8081", "/"))
        );
        assert_eq!(split_url("ftp://x/"), None);
        assert_eq!(split_url("http://user@x/"), None);
    }

    #[test]
    fn the_token_is_redacted_from_errors_and_debug_output() {
        let settings = from(&[("bot_token", "4242:SECRET-token")]).unwrap();
        let error = format!("GET {} failed", settings.file_url("a/b"));
        let shown = settings.redact(&error);
        assert!(!shown.contains("SECRET"), "{shown}");
        assert!(shown.contains("/file/bot<redacted>/a/b"), "{shown}");
        assert!(!format!("{settings:?}").contains("SECRET"));
    }
}
