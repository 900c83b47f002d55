//! The plugin's settings: its config over the manifest's `[config]`
//! defaults, as the host's `config.get` gives them.

use talaria_plugin_sdk::HostError;

/// Facts recalled before a turn unless `recall_limit` says otherwise.
pub const DEFAULT_RECALL_LIMIT: usize = 5;
/// Most facts `recall_limit` may ask for: recall is context for one turn.
pub const MAX_RECALL_LIMIT: usize = 50;

/// The settings of a session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    /// Ask the auxiliary model for the durable facts of every turn.
    pub extract: bool,
    /// Most facts recalled before a turn (0: none).
    pub recall_limit: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            extract: false,
            recall_limit: DEFAULT_RECALL_LIMIT,
        }
    }
}

impl Settings {
    /// Reads the settings through `get` (the host's `config::get`); unset
    /// keys keep their defaults, values that make no sense are errors naming
    /// the key.
    pub fn load(get: impl Fn(&str) -> Result<Option<String>, HostError>) -> Result<Self, String> {
        let read = |key: &str| {
            get(key)
                .map(|value| value.map(|v| v.trim().to_owned()).filter(|v| !v.is_empty()))
                .map_err(|e| format!("cannot read the setting {key}: {e}"))
        };
        let mut settings = Self::default();
        if let Some(value) = read("extract")? {
            settings.extract = parse_flag(&value)
                .ok_or_else(|| format!("extract must be true or false, not {value:?}"))?;
        }
        if let Some(value) = read("recall_limit")? {
            settings.recall_limit = value
                .parse::<usize>()
                .ok()
                .filter(|n| *n <= MAX_RECALL_LIMIT)
                .ok_or_else(|| {
                    format!(
                        "recall_limit must be a number from 0 to {MAX_RECALL_LIMIT}, not {value:?}"
                    )
                })?;
        }
        Ok(settings)
    }
}

fn parse_flag(value: &str) -> Option<bool> {
    match value.to_ascii_lowercase().as_str() {
        "true" | "yes" | "on" | "1" => Some(true),
        "false" | "no" | "off" | "0" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn load(pairs: &[(&str, &str)]) -> Result<Settings, String> {
        Settings::load(|key| {
            Ok(pairs
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| (*v).to_owned()))
        })
    }

    #[test]
    fn unset_keys_keep_the_defaults() {
        assert_eq!(load(&[]).unwrap(), Settings::default());
        assert_eq!(load(&[("recall_limit", " ")]).unwrap(), Settings::default());
    }

    #[test]
    fn values_are_read_and_nonsense_is_refused() {
        let settings = load(&[("extract", "TRUE"), ("recall_limit", "8")]).unwrap();
        assert_eq!(
            settings,
            Settings {
                extract: true,
                recall_limit: 8
            }
        );
        assert!(!load(&[("extract", "no")]).unwrap().extract);
        let error = load(&[("extract", "maybe")]).unwrap_err();
        assert!(error.contains("extract"), "{error}");
        let error = load(&[("recall_limit", "500")]).unwrap_err();
        assert!(error.contains("recall_limit"), "{error}");
        assert!(load(&[("recall_limit", "-1")]).is_err());
    }

    #[test]
    fn a_host_error_names_the_setting() {
        let error = Settings::load(|_| Err(HostError::Failed("boom".into()))).unwrap_err();
        assert!(
            error.contains("extract") && error.contains("boom"),
            "{error}"
        );
    }
}
