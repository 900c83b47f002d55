//! The index format: `index.json` (the index's name, signing keys and
//! catalogue) and `plugins/<name>.json` (every published version of one
//! plugin). Both are plain JSON so an index can be a directory or static files
//! behind any web server; `schema/*.schema.json` are generated from these types.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::RegistryError;

/// The only index format this client reads.
pub const INDEX_FORMAT: u32 = 1;
/// The index configuration file at the index root.
pub const INDEX_FILE: &str = "index.json";
/// Where plugin files live, relative to the index root.
pub const PLUGINS_DIR: &str = "plugins";

/// `index.json`: what the index is and who signs its entries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IndexConfig {
    /// Always 1.
    pub format: u32,
    /// A short name for messages (clients name indexes themselves).
    pub name: String,
    /// Public keys that sign the entries of this index.
    #[serde(default)]
    pub keys: Vec<IndexKey>,
    /// Every plugin the index holds, with its description (for `plugin search`).
    #[serde(default)]
    pub plugins: Vec<CatalogEntry>,
}

/// One signing key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IndexKey {
    /// The key's id, named by signatures.
    pub id: String,
    /// The ed25519 public key, 32 bytes in standard base64.
    pub ed25519: String,
}

/// One line of the catalogue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CatalogEntry {
    /// Plugin name.
    pub name: String,
    /// One-line description.
    #[serde(default)]
    pub description: String,
}

/// `plugins/<name>.json`: one plugin and all its published versions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PluginFile {
    /// Plugin name (lowercase letters, digits and '-'), equal to the file name.
    pub name: String,
    /// One-line description of the newest version.
    #[serde(default)]
    pub description: String,
    /// SPDX license expression.
    #[serde(default)]
    pub license: String,
    /// Project page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub homepage: Option<String>,
    /// Every published version, in any order.
    pub versions: Vec<VersionEntry>,
}

/// One published version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VersionEntry {
    /// The plugin's version (semver).
    #[schemars(with = "String")]
    pub version: semver::Version,
    /// The `talaria:plugin` API versions the package works with, as a semver
    /// requirement (e.g. `^0.1.1`).
    #[schemars(with = "String")]
    pub api: semver::VersionReq,
    /// SHA-256 of the package archive, lowercase hex.
    pub sha256: String,
    /// Size of the package archive in bytes.
    pub size: u64,
    /// The `[capabilities]` table of the package's `plugin.toml`, as JSON.
    #[serde(default)]
    pub capabilities: serde_json::Value,
    /// Where the archive is: an `http(s)://` URL, or a path relative to the index root.
    pub url: String,
    /// A yanked version is never chosen by resolution (a lockfile may still name it).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub yanked: bool,
    /// The index key's signature over this entry (see `signed_payload`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<Signature>,
}

/// An ed25519 signature by one of the index's keys.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Signature {
    /// The id of the key in `index.json`.
    pub key: String,
    /// 64 bytes in standard base64.
    pub ed25519: String,
}

/// Domain separation: a signature over an entry can't be replayed as anything else.
const SIGNATURE_CONTEXT: &str = "talaria-plugin-index-entry-v1";

impl VersionEntry {
    /// The bytes a signature covers: the context line, then canonical JSON
    /// (sorted keys, no spaces) of the plugin name and every field of the
    /// entry except `yanked` and `signature`.
    pub fn signed_payload(&self, plugin: &str) -> Vec<u8> {
        let value = serde_json::json!({
            "name": plugin,
            "version": self.version.to_string(),
            "api": self.api.to_string(),
            "sha256": self.sha256,
            "size": self.size,
            "capabilities": self.capabilities,
            "url": self.url,
        });
        let mut out = format!("{SIGNATURE_CONTEXT}\n").into_bytes();
        canonical_json(&value, &mut out);
        out
    }
}

/// Writes `value` as JSON with object keys sorted, whatever the map type.
fn canonical_json(value: &serde_json::Value, out: &mut Vec<u8>) {
    use serde_json::Value;
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push(b'{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend(Value::String(key.clone()).to_string().into_bytes());
                out.push(b':');
                if let Some(item) = map.get(key) {
                    canonical_json(item, out);
                }
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                canonical_json(item, out);
            }
            out.push(b']');
        }
        scalar => out.extend(scalar.to_string().into_bytes()),
    }
}

/// Whether `name` is a valid plugin name (the same rule as `plugin.toml`).
pub fn valid_plugin_name(name: &str) -> bool {
    name.len() <= 64
        && name.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

impl IndexConfig {
    /// Parses `index.json`, naming `origin` in errors.
    pub fn parse(bytes: &[u8], origin: &str) -> Result<Self, RegistryError> {
        let config: Self = parse_json(bytes, origin)?;
        if config.format != INDEX_FORMAT {
            return Err(RegistryError::Format {
                origin: origin.to_owned(),
                message: format!(
                    "index format {} is not supported (this client reads format {INDEX_FORMAT}); \
                     update Talaria",
                    config.format
                ),
            });
        }
        Ok(config)
    }
}

impl PluginFile {
    /// Parses `plugins/<name>.json` and checks it describes `name`.
    pub fn parse(bytes: &[u8], origin: &str, name: &str) -> Result<Self, RegistryError> {
        let file: Self = parse_json(bytes, origin)?;
        if file.name != name {
            return Err(RegistryError::Format {
                origin: origin.to_owned(),
                message: format!("describes plugin '{}', expected '{name}'", file.name),
            });
        }
        let mut seen = std::collections::BTreeSet::new();
        for entry in &file.versions {
            if !seen.insert(&entry.version) {
                return Err(RegistryError::Format {
                    origin: origin.to_owned(),
                    message: format!("version {} is listed twice", entry.version),
                });
            }
            if entry.sha256.len() != 64 || !entry.sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(RegistryError::Format {
                    origin: origin.to_owned(),
                    message: format!("version {}: sha256 must be 64 hex digits", entry.version),
                });
            }
        }
        Ok(file)
    }

    /// The entry of exactly `version`.
    pub fn version(&self, version: &semver::Version) -> Option<&VersionEntry> {
        self.versions.iter().find(|v| &v.version == version)
    }
}

fn parse_json<T: serde::de::DeserializeOwned>(
    bytes: &[u8],
    origin: &str,
) -> Result<T, RegistryError> {
    serde_json::from_slice(bytes).map_err(|e| RegistryError::Format {
        origin: origin.to_owned(),
        message: e.to_string(),
    })
}

/// The JSON Schemas of `index.json` and `plugins/<name>.json`, pretty-printed.
pub fn schemas() -> [(&'static str, String); 2] {
    let pretty =
        |schema: schemars::Schema| serde_json::to_string_pretty(&schema).unwrap_or_default() + "\n";
    [
        (
            "index.schema.json",
            pretty(schemars::schema_for!(IndexConfig)),
        ),
        (
            "plugin.schema.json",
            pretty(schemars::schema_for!(PluginFile)),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry() -> VersionEntry {
        VersionEntry {
            version: semver::Version::new(1, 2, 0),
            api: "^0.1.1".parse().unwrap(),
            sha256: "ab".repeat(32),
            size: 10,
            capabilities: serde_json::json!({"network": ["a:443"], "exec": true}),
            url: "packages/x-1.2.0.tar.gz".to_owned(),
            yanked: false,
            signature: None,
        }
    }

    #[test]
    fn the_payload_is_canonical_whatever_the_key_order() {
        let mut reordered = entry();
        reordered.capabilities =
            serde_json::from_str(r#"{"exec": true, "network": ["a:443"]}"#).unwrap();
        assert_eq!(entry().signed_payload("x"), reordered.signed_payload("x"));
        let text = String::from_utf8(entry().signed_payload("x")).unwrap();
        assert!(text.starts_with("talaria-plugin-index-entry-v1\n{\"api\":\"^0.1.1\""));
        assert_ne!(entry().signed_payload("x"), entry().signed_payload("y"));
    }

    #[test]
    fn yanking_does_not_change_what_is_signed() {
        let mut yanked = entry();
        yanked.yanked = true;
        assert_eq!(entry().signed_payload("x"), yanked.signed_payload("x"));
    }

    #[test]
    fn a_plugin_file_is_checked() {
        let good = serde_json::to_vec(&PluginFile {
            name: "x".into(),
            description: String::new(),
            license: String::new(),
            homepage: None,
            versions: vec![entry()],
        })
        .unwrap();
        assert!(PluginFile::parse(&good, "x.json", "x").is_ok());
        let wrong = PluginFile::parse(&good, "y.json", "y");
        assert!(
            matches!(wrong, Err(RegistryError::Format { message, .. }) if message.contains("expected 'y'"))
        );
        let twice = String::from_utf8(good.clone()).unwrap().replace(
            "\"versions\":[",
            &format!(
                "\"versions\":[{},",
                serde_json::to_string(&entry()).unwrap()
            ),
        );
        let error = PluginFile::parse(twice.as_bytes(), "x.json", "x");
        assert!(
            matches!(error, Err(RegistryError::Format { message, .. }) if message.contains("listed twice"))
        );
        let unknown = String::from_utf8(good)
            .unwrap()
            .replace("\"name\"", "\"nmae\"");
        assert!(PluginFile::parse(unknown.as_bytes(), "x.json", "x").is_err());
    }

    #[test]
    fn the_committed_schemas_match_the_types() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("schema");
        // Compared as JSON values: the key order follows serde_json's `preserve_order`,
        // which a workspace build turns on (through agent-client-protocol) and a build
        // of this crate alone does not.
        let parse = |text: &str| serde_json::from_str::<serde_json::Value>(text).unwrap();
        for (file, schema) in schemas() {
            let committed = std::fs::read_to_string(dir.join(file)).unwrap();
            assert_eq!(
                parse(&committed),
                parse(&schema),
                "registry/schema/{file} is out of date: run `cargo run -p talaria-registry --example write-schemas`"
            );
        }
    }
}
