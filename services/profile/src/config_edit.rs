//! `talaria config show|get|set`: the effective configuration as YAML, one
//! value by dotted key, and validated single-key edits of `config.yaml`.

use std::path::Path;

use serde_yaml_ng::{Mapping, Value};

use crate::config::{ConfigError, ConfigFile};
use crate::env::EnvLayer;
use crate::home_modes;

/// A config command that cannot be done.
#[derive(Debug, thiserror::Error)]
pub enum ConfigEditError {
    /// The file or the edited result is invalid.
    #[error(transparent)]
    Invalid(#[from] ConfigError),
    /// The key does not exist.
    #[error("no setting '{key}'{}", if known.is_empty() { String::new() } else { format!(" (settings here: {known})") })]
    UnknownKey {
        /// The dotted key.
        key: String,
        /// The keys at the level where it failed.
        known: String,
    },
    /// The key is malformed.
    #[error("invalid key {0:?}: use dotted names like model.name")]
    BadKey(String),
    /// The file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: std::path::PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// Serialising failed.
    #[error("cannot write YAML: {0}")]
    Yaml(String),
}

/// Every section with its defaults, API keys masked.
pub fn effective(config: &ConfigFile) -> Result<Value, ConfigEditError> {
    let yaml = |e: serde_yaml_ng::Error| ConfigEditError::Yaml(e.to_string());
    let mut map = Mapping::new();
    let mut put = |key: &str, value: Value| {
        map.insert(Value::String(key.to_owned()), value);
    };
    put(
        "model",
        serde_yaml_ng::to_value(&config.model).map_err(yaml)?,
    );
    put(
        "fallback",
        serde_yaml_ng::to_value(&config.fallback).map_err(yaml)?,
    );
    put(
        "delegation",
        serde_yaml_ng::to_value(&config.delegation).map_err(yaml)?,
    );
    put(
        "compression",
        serde_yaml_ng::to_value(&config.compression).map_err(yaml)?,
    );
    put(
        "auxiliary",
        serde_yaml_ng::to_value(&config.auxiliary).map_err(yaml)?,
    );
    put(
        "budget",
        serde_yaml_ng::to_value(&config.budget).map_err(yaml)?,
    );
    put(
        "retry",
        serde_yaml_ng::to_value(&config.retry).map_err(yaml)?,
    );
    put(
        "network",
        serde_yaml_ng::to_value(&config.network).map_err(yaml)?,
    );
    put(
        "tools",
        serde_yaml_ng::to_value(&config.tools).map_err(yaml)?,
    );
    put(
        "terminal",
        serde_yaml_ng::to_value(&config.terminal).map_err(yaml)?,
    );
    put(
        "approvals",
        serde_yaml_ng::to_value(&config.approvals).map_err(yaml)?,
    );
    // `api_server.key` is masked with the other keys below.
    put(
        "api_server",
        serde_yaml_ng::to_value(&config.api_server).map_err(yaml)?,
    );
    // Adapter settings named like secrets (`token`, `password`) are masked below.
    put(
        "gateway",
        serde_yaml_ng::to_value(&config.gateway).map_err(yaml)?,
    );
    // Header and env values of MCP servers are credentials whatever their name says.
    let mut servers = config.mcp_servers.clone();
    for server in servers.values_mut() {
        for value in server.env.values_mut().chain(server.headers.values_mut()) {
            *value = mask_secret(value);
        }
    }
    put(
        "mcp_servers",
        serde_yaml_ng::to_value(&servers).map_err(yaml)?,
    );
    let mut value = Value::Mapping(map);
    mask_keys(&mut value);
    Ok(value)
}

/// Whether a setting (`model.api_key`, `x.auth_token`, …) holds a secret: its
/// last part has a word `key`, `token`, `secret`, `password` or the like
/// (`max_tokens` does not).
pub fn is_secret_key(key: &str) -> bool {
    let last = key.rsplit('.').next().unwrap_or(key).to_ascii_lowercase();
    last.split(['_', '-']).any(|word| {
        matches!(
            word,
            "key" | "apikey" | "token" | "secret" | "password" | "passwd" | "passphrase"
        )
    })
}

/// A secret as it may be shown: its last 4 characters when it is long enough
/// for them to give nothing away, else nothing.
pub fn mask_secret(secret: &str) -> String {
    if secret.chars().count() <= 8 {
        return "…".into();
    }
    let tail: String = secret
        .chars()
        .rev()
        .take(4)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    format!("…{tail}")
}

/// Replaces every secret's value (see [`is_secret_key`]) by its mask.
fn mask_keys(value: &mut Value) {
    match value {
        Value::Mapping(map) => {
            for (key, item) in map.iter_mut() {
                if key.as_str().is_some_and(is_secret_key)
                    && let Value::String(secret) = item
                {
                    *item = Value::String(mask_secret(secret));
                } else {
                    mask_keys(item);
                }
            }
        }
        Value::Sequence(items) => items.iter_mut().for_each(mask_keys),
        _ => {}
    }
}

fn parts(key: &str) -> Result<Vec<&str>, ConfigEditError> {
    let parts: Vec<&str> = key.split('.').collect();
    if parts.iter().any(|p| p.is_empty()) {
        return Err(ConfigEditError::BadKey(key.to_owned()));
    }
    Ok(parts)
}

fn known_keys(map: &Mapping) -> String {
    map.keys()
        .filter_map(Value::as_str)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Whether `key` names a setting of the schema (set or not): a document
/// holding only `key: null` must parse.
fn is_setting(key: &str) -> bool {
    let Ok(keys) = parts(key) else { return false };
    let mut document = Value::Null;
    for part in keys.iter().rev() {
        let mut map = Mapping::new();
        map.insert(Value::String((*part).to_owned()), document);
        document = Value::Mapping(map);
    }
    serde_yaml_ng::to_string(&document).is_ok_and(|text| {
        let env = EnvLayer::fixed(Default::default(), Default::default());
        ConfigFile::parse(&text, Path::new("config.yaml"), &env).is_ok()
    })
}

/// The value at a dotted key of the effective configuration; `Null` for a
/// setting that exists but is not set.
pub fn get(config: &ConfigFile, key: &str) -> Result<Value, ConfigEditError> {
    match lookup(config, key) {
        Err(ConfigEditError::UnknownKey { .. }) if is_setting(key) => Ok(Value::Null),
        other => other,
    }
}

fn lookup(config: &ConfigFile, key: &str) -> Result<Value, ConfigEditError> {
    let mut value = effective(config)?;
    for part in parts(key)? {
        value = match value {
            Value::Mapping(mut map) => match map.remove(part) {
                Some(inner) => inner,
                None => {
                    return Err(ConfigEditError::UnknownKey {
                        key: key.to_owned(),
                        known: known_keys(&map),
                    });
                }
            },
            Value::Sequence(items) => match part
                .parse::<usize>()
                .ok()
                .and_then(|i| items.into_iter().nth(i))
            {
                Some(inner) => inner,
                None => {
                    return Err(ConfigEditError::UnknownKey {
                        key: key.to_owned(),
                        known: "list indexes 0, 1, …".into(),
                    });
                }
            },
            _ => {
                return Err(ConfigEditError::UnknownKey {
                    key: key.to_owned(),
                    known: String::new(),
                });
            }
        };
    }
    Ok(value)
}

/// Sets `key` to `raw` (read as YAML, so `3`, `true`, `[a, b]` are typed) in
/// the file at `path`, validates the whole result against the config schema
/// and only then writes it (atomically). The previous file is kept as
/// `config.yaml.bak` when it had comments, which YAML rewriting drops.
pub fn set(path: &Path, key: &str, raw: &str, env: &EnvLayer) -> Result<(), ConfigEditError> {
    let new: Value = serde_yaml_ng::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_owned()));
    let keys = parts(key)?;
    rewrite(path, env, |document| {
        let mut cursor = document;
        for (i, part) in keys.iter().enumerate() {
            let Value::Mapping(map) = cursor else {
                return Err(ConfigEditError::UnknownKey {
                    key: key.to_owned(),
                    known: String::new(),
                });
            };
            let entry = map
                .entry(Value::String((*part).to_owned()))
                .or_insert_with(|| Value::Mapping(Mapping::new()));
            if i + 1 == keys.len() {
                *entry = new.clone();
                break;
            }
            if !entry.is_mapping() {
                *entry = Value::Mapping(Mapping::new());
            }
            cursor = entry;
        }
        Ok(())
    })
}

/// Removes `key` (and what is under it) from the file at `path`, like [`set`]: validated,
/// written atomically, a commented file kept as `config.yaml.bak`. A key the file does not
/// hold is [`ConfigEditError::UnknownKey`].
pub fn remove(path: &Path, key: &str, env: &EnvLayer) -> Result<(), ConfigEditError> {
    let keys = parts(key)?;
    let unknown = || ConfigEditError::UnknownKey {
        key: key.to_owned(),
        known: String::new(),
    };
    rewrite(path, env, |document| {
        let Some((last, parents)) = keys.split_last() else {
            return Err(unknown());
        };
        let mut cursor = document;
        for part in parents {
            cursor = cursor.get_mut(*part).ok_or_else(unknown)?;
        }
        let Value::Mapping(map) = cursor else {
            return Err(unknown());
        };
        map.remove(*last).map(drop).ok_or_else(unknown)
    })
}

/// Reads the file at `path` (which must be valid), applies `change` to its document,
/// validates the result against the config schema and only then writes it (atomically).
fn rewrite(
    path: &Path,
    env: &EnvLayer,
    change: impl FnOnce(&mut Value) -> Result<(), ConfigEditError>,
) -> Result<(), ConfigEditError> {
    let io = |source| ConfigEditError::Io {
        path: path.to_path_buf(),
        source,
    };
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(io(e)),
    };
    // The current file must be valid before we touch it.
    ConfigFile::parse(&text, path, env)?;
    let mut document: Value = if text.trim().is_empty() {
        Value::Mapping(Mapping::new())
    } else {
        serde_yaml_ng::from_str(&text).map_err(|e| ConfigEditError::Yaml(e.to_string()))?
    };
    change(&mut document)?;
    let updated =
        serde_yaml_ng::to_string(&document).map_err(|e| ConfigEditError::Yaml(e.to_string()))?;
    // Validation names the key when the value has the wrong type or the key is unknown.
    ConfigFile::parse(&updated, path, env)?;
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        home_modes::create_private_dir(parent).map_err(io)?;
    }
    // The file and its backup may hold keys: private whatever the umask.
    if text.lines().any(|l| l.trim_start().starts_with('#')) {
        home_modes::write_private(&path.with_extension("yaml.bak"), &text).map_err(io)?;
    }
    let temp = path.with_extension("yaml.tmp");
    home_modes::write_private(&temp, updated).map_err(io)?;
    std::fs::rename(&temp, path).map_err(io)
}

/// A config value as the user reads it: strings bare, everything else as YAML.
pub fn to_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => serde_yaml_ng::to_string(other)
            .unwrap_or_default()
            .trim_end()
            .to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> EnvLayer {
        EnvLayer::from_pairs(&[])
    }

    #[test]
    fn mcp_servers_show_masked_and_set_validated() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.yaml");
        set(&path, "mcp_servers.fs.command", "npx", &env()).unwrap();
        set(
            &path,
            "mcp_servers.fs.env",
            "{GITHUB_TOKEN: ghp_secretvalue123}",
            &env(),
        )
        .unwrap();
        let error = set(&path, "mcp_servers.fs.url", "http://h/mcp", &env()).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("mcp_servers.fs: both command and url"),
            "{error}"
        );
        let config = ConfigFile::load(&path, &env()).unwrap();
        let text = serde_yaml_ng::to_string(&effective(&config).unwrap()).unwrap();
        assert!(
            text.contains("command: npx") && text.contains("GITHUB_TOKEN: …"),
            "{text}"
        );
        assert!(!text.contains("ghp_secret"), "{text}");
    }

    #[test]
    fn show_includes_defaults_and_masks_keys() {
        let config = ConfigFile::parse(
            "model:\n  name: m\n  api_key: sk-abcdefghijklmnop\n",
            Path::new("c.yaml"),
            &env(),
        )
        .unwrap();
        let text = serde_yaml_ng::to_string(&effective(&config).unwrap()).unwrap();
        assert!(text.contains("max_iterations: 90"), "{text}");
        assert!(text.contains("…mnop") && !text.contains("sk-abc"), "{text}");
        assert_eq!(
            get(&config, "model.name").unwrap(),
            Value::String("m".into())
        );
        assert_eq!(
            get(&config, "model.base_url").unwrap(),
            Value::Null,
            "known but unset"
        );
        let err = get(&config, "model.nmae").unwrap_err().to_string();
        assert!(
            err.contains("no setting 'model.nmae'") && err.contains("name"),
            "{err}"
        );
    }

    #[test]
    fn secrets_are_recognised_by_name_and_masked() {
        for secret in [
            "model.api_key",
            "x.auth_token",
            "client_secret",
            "db.password",
            "apikey",
        ] {
            assert!(is_secret_key(secret), "{secret}");
        }
        for plain in ["model.max_tokens", "model.name", "keyboard", "tokens"] {
            assert!(!is_secret_key(plain), "{plain}");
        }
        assert_eq!(mask_secret("sk-abcdefghijklmnop"), "…mnop");
        assert_eq!(mask_secret("short"), "…");
    }

    #[cfg(unix)]
    #[test]
    fn set_writes_the_file_and_its_backup_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.yaml");
        std::fs::write(&path, "# mine\nmodel:\n  name: m\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        set(&path, "model.api_key", "sk-secret-value", &env()).unwrap();
        for file in [path.clone(), path.with_extension("yaml.bak")] {
            let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "{}", file.display());
        }
    }

    #[test]
    fn set_validates_before_writing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.yaml");
        std::fs::write(&path, "# mine\nmodel:\n  name: m\n").unwrap();
        set(&path, "budget.max_iterations", "12", &env()).unwrap();
        let config = ConfigFile::load(&path, &env()).unwrap();
        assert_eq!(config.budget.max_iterations, 12);
        assert_eq!(config.model.name.as_deref(), Some("m"));
        assert!(
            dir.path().join("config.yaml.bak").is_file(),
            "comments kept in the backup"
        );

        let before = std::fs::read_to_string(&path).unwrap();
        let err = set(&path, "budget.max_iterations", "lots", &env())
            .unwrap_err()
            .to_string();
        assert!(err.contains("max_iterations"), "{err}");
        let err = set(&path, "budget.max_iteratoins", "3", &env())
            .unwrap_err()
            .to_string();
        assert!(err.contains("max_iteratoins"), "{err}");
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            before,
            "a bad edit changes nothing"
        );

        set(&path, "tools.disabled", "[web, terminal]", &env()).unwrap();
        let config = ConfigFile::load(&path, &env()).unwrap();
        assert_eq!(config.tools.disabled, ["web", "terminal"]);
    }
}
