//! The plugin's settings: its config over the manifest's `[config]`
//! defaults, as the host's `config.get` gives them, and the session's user.

use talaria_plugin_sdk::HostError;

/// mem0's platform, unless `base_url` names another server.
pub const DEFAULT_BASE_URL: &str = "https://api.mem0.ai";
/// Whose memories they are when neither the settings nor the session say.
pub const DEFAULT_USER_ID: &str = "talaria";
/// The agent memories are added for unless `agent_id` says otherwise.
pub const DEFAULT_AGENT_ID: &str = "talaria";
/// Memories recalled before a turn unless `recall_limit` says otherwise.
pub const DEFAULT_RECALL_LIMIT: usize = 5;
/// Most memories `recall_limit` may ask for.
pub const MAX_RECALL_LIMIT: usize = 50;

/// The settings of a session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// The server, without a trailing slash.
    pub base_url: String,
    pub user_id: String,
    pub agent_id: String,
    /// Most memories recalled before a turn (0: none).
    pub recall_limit: usize,
}

impl Settings {
    /// Reads the settings through `get` (the host's `config::get`). The user
    /// is `user_id` when set, else `session_user` (the chat user the
    /// session serves), else [`DEFAULT_USER_ID`]. Values that make no sense
    /// are errors naming the key.
    pub fn load(
        get: impl Fn(&str) -> Result<Option<String>, HostError>,
        session_user: Option<&str>,
    ) -> Result<Self, String> {
        let read = |key: &str| {
            get(key)
                .map(|value| value.map(|v| v.trim().to_owned()).filter(|v| !v.is_empty()))
                .map_err(|e| format!("cannot read the setting {key}: {e}"))
        };
        let base_url = read("base_url")?.unwrap_or_else(|| DEFAULT_BASE_URL.to_owned());
        let scheme = base_url
            .split_once("://")
            .map(|(s, _)| s.to_ascii_lowercase());
        if !matches!(scheme.as_deref(), Some("http" | "https")) {
            return Err(format!(
                "base_url must be an http or https URL, not {base_url:?}"
            ));
        }
        let session_user = session_user
            .map(str::trim)
            .filter(|u| !u.is_empty())
            .map(str::to_owned);
        let recall_limit = match read("recall_limit")? {
            None => DEFAULT_RECALL_LIMIT,
            Some(value) => value
                .parse::<usize>()
                .ok()
                .filter(|n| *n <= MAX_RECALL_LIMIT)
                .ok_or_else(|| {
                    format!(
                        "recall_limit must be a number from 0 to {MAX_RECALL_LIMIT}, not {value:?}"
                    )
                })?,
        };
        Ok(Self {
            base_url: base_url.trim_end_matches('/').to_owned(),
            user_id: read("user_id")?
                .or(session_user)
                .unwrap_or_else(|| DEFAULT_USER_ID.to_owned()),
            agent_id: read("agent_id")?.unwrap_or_else(|| DEFAULT_AGENT_ID.to_owned()),
            recall_limit,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn load(pairs: &[(&str, &str)], session_user: Option<&str>) -> Result<Settings, String> {
        Settings::load(
            |key| {
                Ok(pairs
                    .iter()
                    .find(|(k, _)| *k == key)
                    .map(|(_, v)| (*v).to_owned()))
            },
            session_user,
        )
    }

    #[test]
    fn defaults_apply_to_unset_and_empty_keys() {
        let settings = load(&[("user_id", ""), ("agent_id", " ")], None).unwrap();
        assert_eq!(
            settings,
            Settings {
                base_url: DEFAULT_BASE_URL.into(),
                user_id: DEFAULT_USER_ID.into(),
                agent_id: DEFAULT_AGENT_ID.into(),
                recall_limit: DEFAULT_RECALL_LIMIT,
            }
        );
    }

    #[test]
    fn the_user_is_the_setting_else_the_sessions_else_the_default() {
        let configured = load(&[("user_id", "ada")], Some("tg-42")).unwrap();
        assert_eq!(configured.user_id, "ada");
        assert_eq!(load(&[], Some("tg-42")).unwrap().user_id, "tg-42");
        assert_eq!(load(&[], Some(" ")).unwrap().user_id, DEFAULT_USER_ID);
    }

    #[test]
    fn values_are_read_and_nonsense_is_refused() {
        let settings = load(
            &[
                ("base_url", "http://127.0.0.1:8888/"),
                ("agent_id", "helper"),
                ("recall_limit", "0"),
            ],
            None,
        )
        .unwrap();
        assert_eq!(settings.base_url, "http://127.0.0.1:8888");
        assert_eq!(settings.agent_id, "helper");
        assert_eq!(settings.recall_limit, 0);
        let error = load(&[("base_url", "api.mem0.ai")], None).unwrap_err();
        assert!(error.contains("base_url"), "{error}");
        let error = load(&[("recall_limit", "many")], None).unwrap_err();
        assert!(error.contains("recall_limit"), "{error}");
    }
}
