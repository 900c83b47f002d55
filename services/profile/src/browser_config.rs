//! The browser tools' settings (`browser:` in config.yaml): which Chromium
//! runs, how long a page may take, and the surfaces beyond the terminal, the
//! editor and the gateway that offer the tools. Private addresses follow
//! `security.allow_private_urls`, as for the web tools.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Surfaces the browser tools are offered on without configuration.
pub const BROWSER_SURFACES: &[&str] = &["cli", "acp", "gateway"];

/// Surfaces `browser.surfaces` may add.
const OPTIONAL_SURFACES: &[&str] = &["api", "mcp", "cron", "batch", "webhook"];

/// `browser:` in config.yaml.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BrowserConfig {
    /// The Chromium program; unset: the first of `chromium-headless-shell`,
    /// `chromium`, `chromium-browser`, `google-chrome` found on `PATH`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub executable: Option<PathBuf>,
    /// Surfaces that offer the tools besides the terminal, the editor and
    /// the gateway: `api`, `mcp`, `cron`, `batch`, `webhook`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub surfaces: Vec<String>,
    /// How long a page may take to load, in seconds.
    pub navigation_timeout_secs: u64,
    /// Where an agent is built per message (chats), how long a session's
    /// browser is kept between its messages while unused, in seconds.
    pub idle_timeout_secs: u64,
}

impl Default for BrowserConfig {
    fn default() -> Self {
        Self {
            executable: None,
            surfaces: Vec::new(),
            navigation_timeout_secs: 30,
            idle_timeout_secs: 300,
        }
    }
}

impl BrowserConfig {
    /// Whether the tools are offered on the surface named `surface`.
    pub fn offered_on(&self, surface: &str) -> bool {
        BROWSER_SURFACES.contains(&surface) || self.surfaces.iter().any(|s| s == surface)
    }

    /// The first bad setting: its key and what is wrong.
    pub(crate) fn validate(&self) -> Result<(), (String, String)> {
        if let Some(bad) = self.surfaces.iter().find(|s| {
            !OPTIONAL_SURFACES.contains(&s.as_str()) && !BROWSER_SURFACES.contains(&s.as_str())
        }) {
            return Err((
                "surfaces".into(),
                format!(
                    "browser.surfaces: '{bad}' is not a surface (one of {})",
                    OPTIONAL_SURFACES.join(", ")
                ),
            ));
        }
        if !(1..=600).contains(&self.navigation_timeout_secs) {
            return Err((
                "navigation_timeout_secs".into(),
                "browser.navigation_timeout_secs must be between 1 and 600".into(),
            ));
        }
        if !(1..=86_400).contains(&self.idle_timeout_secs) {
            return Err((
                "idle_timeout_secs".into(),
                "browser.idle_timeout_secs must be between 1 and 86400".into(),
            ));
        }
        Ok(())
    }
}

/// Checks `browser:` of the parsed `text` (the file at `path`).
#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::{ConfigFile, EnvLayer};

    fn parse(text: &str) -> Result<ConfigFile, String> {
        ConfigFile::parse(text, Path::new("config.yaml"), &EnvLayer::default())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn the_terminal_editor_and_gateway_offer_the_tools_and_others_only_when_named() {
        let config = parse("browser:\n  surfaces: [cron]\n").unwrap_or_else(|e| panic!("{e}"));
        for surface in ["cli", "acp", "gateway", "cron"] {
            assert!(config.browser.offered_on(surface), "{surface}");
        }
        for surface in ["api", "mcp", "batch", "webhook"] {
            assert!(!config.browser.offered_on(surface), "{surface}");
        }
        assert_eq!(config.browser.navigation_timeout_secs, 30);
    }

    #[test]
    fn bad_settings_name_their_line() {
        let error = parse("timezone: UTC\nbrowser:\n  surfaces: [cron, telnet]\n")
            .err()
            .unwrap_or_default();
        assert!(
            error.contains("'telnet' is not a surface") && error.contains(":3:"),
            "{error}"
        );
        let error = parse("browser:\n  navigation_timeout_secs: 0\n")
            .err()
            .unwrap_or_default();
        assert!(error.contains("between 1 and 600"), "{error}");
        let error = parse("browser:\n  headless: false\n")
            .err()
            .unwrap_or_default();
        assert!(error.contains("headless"), "{error}");
    }
}
