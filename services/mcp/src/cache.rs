//! The `tools/list` cache: what a server offered the last time, as JSON under the directory the
//! caller names (the profile home's cache), one file per server and config hash, so a session
//! can offer a server's tools before — or without — reaching it.

use std::io::Write;
use std::path::{Path, PathBuf};

use rmcp::model::Tool;
use serde::{Deserialize, Serialize};

use crate::connection::ServerInfo;
use crate::error::McpError;
use crate::spec::ServerSpec;

/// The layout version of cache files.
const FORMAT: u32 = 1;
/// Cache files larger than this are not read.
const MAX_CACHE_BYTES: u64 = 16 * 1024 * 1024;

/// One tool as the server described it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolInfo {
    /// Its name on the server.
    pub name: String,
    /// Its display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Its description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The JSON Schema of its arguments.
    pub input_schema: serde_json::Value,
    /// The server's hint that the tool changes nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
}

impl ToolInfo {
    /// From the SDK's description.
    pub fn from_tool(tool: &Tool) -> Self {
        Self {
            name: tool.name.to_string(),
            title: tool.title.clone(),
            description: tool.description.as_ref().map(ToString::to_string),
            input_schema: serde_json::Value::Object((*tool.input_schema).clone()),
            read_only_hint: tool.annotations.as_ref().and_then(|a| a.read_only_hint),
        }
    }
}

/// A server's offer: what it said in `initialize`, and its tools.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerTools {
    /// From `initialize`.
    pub info: ServerInfo,
    /// From `tools/list` (every tool, before the config's filter).
    pub tools: Vec<ToolInfo>,
}

#[derive(Debug, Serialize, Deserialize)]
struct CacheFile {
    format: u32,
    server: String,
    config_hash: String,
    /// Seconds since the Unix epoch.
    fetched_at: u64,
    #[serde(flatten)]
    offer: ServerTools,
}

/// The cache file of `spec` in `dir`: `<server>.<config hash>.json`.
pub fn cache_path(dir: &Path, spec: &ServerSpec) -> PathBuf {
    dir.join(format!("{}.{}.json", spec.name, spec.config_hash()))
}

/// The cached offer of `spec`, if there is one for its current configuration. A file that is
/// unreadable, too large or of another layout is an error (the caller connects instead).
pub fn load(dir: &Path, spec: &ServerSpec) -> Result<Option<ServerTools>, McpError> {
    let path = cache_path(dir, spec);
    let error = |reason: String| McpError::Cache {
        path: path.clone(),
        reason,
    };
    let size = match std::fs::metadata(&path) {
        Ok(meta) => meta.len(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(error(e.to_string())),
    };
    if size > MAX_CACHE_BYTES {
        return Err(error(format!(
            "{size} bytes is more than a cache file may be"
        )));
    }
    let text = std::fs::read_to_string(&path).map_err(|e| error(e.to_string()))?;
    let file: CacheFile = serde_json::from_str(&text).map_err(|e| error(e.to_string()))?;
    if file.format != FORMAT || file.server != spec.name || file.config_hash != spec.config_hash() {
        return Err(error("written for another layout or configuration".into()));
    }
    Ok(Some(file.offer))
}

/// Writes the offer of `spec` (atomically, private to the user) and removes the server's files
/// for earlier configurations.
pub fn store(dir: &Path, spec: &ServerSpec, offer: &ServerTools) -> Result<PathBuf, McpError> {
    let path = cache_path(dir, spec);
    let error = |reason: String| McpError::Cache {
        path: path.clone(),
        reason,
    };
    std::fs::create_dir_all(dir).map_err(|e| error(e.to_string()))?;
    let fetched_at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let file = CacheFile {
        format: FORMAT,
        server: spec.name.clone(),
        config_hash: spec.config_hash(),
        fetched_at,
        offer: offer.clone(),
    };
    let text = serde_json::to_string_pretty(&file).map_err(|e| error(e.to_string()))?;
    let temp = path.with_extension(format!("tmp{}", std::process::id()));
    write_private(&temp, text.as_bytes()).map_err(|e| error(e.to_string()))?;
    std::fs::rename(&temp, &path).map_err(|e| error(e.to_string()))?;
    remove_stale(dir, spec, &path);
    Ok(path)
}

fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// Server names cannot hold `.`, so `<server>.` prefixes only that server's files.
fn remove_stale(dir: &Path, spec: &ServerSpec, keep: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let prefix = format!("{}.", spec.name);
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if path != keep && name.starts_with(&prefix) && name.ends_with(".json") {
            let _ = std::fs::remove_file(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use talaria_profile::McpServerConfig;

    use super::*;

    fn spec(name: &str, command: &str) -> ServerSpec {
        let config = McpServerConfig {
            command: Some(command.into()),
            ..McpServerConfig::default()
        };
        ServerSpec::new(name, config).unwrap()
    }

    fn offer() -> ServerTools {
        ServerTools {
            info: ServerInfo {
                protocol_version: "2025-11-25".into(),
                name: Some("srv".into()),
                tools: true,
                resources: true,
                ..ServerInfo::default()
            },
            tools: vec![ToolInfo {
                name: "echo".into(),
                title: None,
                description: Some("Echoes".into()),
                input_schema: serde_json::json!({"type": "object"}),
                read_only_hint: Some(true),
            }],
        }
    }

    #[test]
    fn an_offer_round_trips_and_a_changed_config_misses() {
        let dir = tempfile::tempdir().unwrap();
        let a = spec("a", "x");
        assert_eq!(load(dir.path(), &a).unwrap(), None);
        let path = store(dir.path(), &a, &offer()).unwrap();
        assert_eq!(load(dir.path(), &a).unwrap(), Some(offer()));
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);

        let changed = spec("a", "y");
        assert_eq!(load(dir.path(), &changed).unwrap(), None);
        let other = spec("a-b", "x");
        store(dir.path(), &other, &offer()).unwrap();
        store(dir.path(), &changed, &offer()).unwrap();
        // The old file of `a` is gone; `a-b`'s stays.
        assert!(!path.exists());
        assert!(cache_path(dir.path(), &other).exists());
    }

    #[test]
    fn a_damaged_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let a = spec("a", "x");
        std::fs::write(cache_path(dir.path(), &a), "{not json").unwrap();
        let error = load(dir.path(), &a).unwrap_err().to_string();
        assert!(
            error.starts_with("MCP tools cache ") && error.contains("a."),
            "{error}"
        );
    }
}
