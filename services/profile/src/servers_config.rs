//! The servers' sections (`api_server`, `mcp_serve`), with their named keys: each client its
//! own key, and so its own principal (whom its sessions belong to); the single key of a
//! server stays the owner's.

use serde::{Deserialize, Serialize};

use crate::env::EnvLayer;

/// `talaria serve` (`api_server`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ApiServerConfig {
    /// Address to listen on (loopback by default).
    pub host: String,
    /// Port to listen on.
    pub port: u16,
    /// The owner's bearer key (`TALARIA_API_SERVER_KEY` wins over it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// More clients, each with a key of its own: its sessions are its own.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub keys: Vec<NamedKey>,
    /// Largest request body, in bytes (larger: 413).
    pub max_body_bytes: u64,
    /// Most runs at once (more: 429).
    pub max_concurrent_runs: u32,
    /// Origins browsers may call from; none: CORS stays off.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cors_origins: Vec<String>,
}

impl Default for ApiServerConfig {
    fn default() -> Self {
        Self {
            host: "127.0.0.1".to_owned(),
            port: 8642,
            key: None,
            keys: Vec::new(),
            max_body_bytes: 10 * 1024 * 1024,
            max_concurrent_runs: 10,
            cors_origins: Vec::new(),
        }
    }
}

/// `talaria mcp serve --http` (`mcp_serve`): the owner's key comes from the environment
/// (`--key-env`); these are the other clients'.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct McpServeConfig {
    /// Clients with a key of their own: their sessions are their own.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub keys: Vec<NamedKey>,
}

/// A client's key and the name its sessions are kept under.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NamedKey {
    /// The client's name (letters, digits, `-`, `_`, `.`): its principal is `api:<name>` or
    /// `mcp:<name>`.
    pub name: String,
    /// Its bearer key; `${VAR}` reads the environment or `.env`.
    pub key: String,
}

/// `(name, key)` of each of `keys`, `${VAR}` expanded, checked: names well-formed and
/// unique, no key empty. `setting` names the list in errors (`api_server.keys`).
pub fn named_keys(
    keys: &[NamedKey],
    setting: &str,
    env: &EnvLayer,
) -> Result<Vec<(String, String)>, String> {
    let mut out: Vec<(String, String)> = Vec::new();
    for (index, named) in keys.iter().enumerate() {
        let name = named.name.trim();
        let well_formed = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !well_formed {
            return Err(format!(
                "{setting}[{index}].name '{name}': use letters, digits, '-', '_' or '.'"
            ));
        }
        if out.iter().any(|(seen, _)| seen == name) {
            return Err(format!("{setting}: the name '{name}' is used twice"));
        }
        let key = crate::config::expand(&named.key, env)
            .map_err(|variable| format!("{setting}[{index}].key: {variable} is not set"))?;
        if key.trim().is_empty() {
            return Err(format!("{setting}[{index}].key is empty"));
        }
        out.push((name.to_owned(), key.trim().to_owned()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str, key: &str) -> NamedKey {
        NamedKey {
            name: name.into(),
            key: key.into(),
        }
    }

    #[test]
    fn named_keys_are_checked_and_expanded() {
        let env = EnvLayer::fixed(
            [("CI_KEY".to_owned(), "from-env-0123456789".to_owned())].into(),
            Default::default(),
        );
        let keys = [
            key("ci", "${CI_KEY}"),
            key("laptop.bob", "plain-0123456789"),
        ];
        assert_eq!(
            named_keys(&keys, "api_server.keys", &env).unwrap(),
            [
                ("ci".to_owned(), "from-env-0123456789".to_owned()),
                ("laptop.bob".to_owned(), "plain-0123456789".to_owned())
            ]
        );
        for bad in [
            vec![key("", "k")],
            vec![key("a b", "k")],
            vec![key("a", "k"), key("a", "j")],
            vec![key("a", "  ")],
            vec![key("a", "${MISSING_X}")],
        ] {
            assert!(
                named_keys(&bad, "api_server.keys", &env).is_err(),
                "{bad:?}"
            );
        }
    }
}
