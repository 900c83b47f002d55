//! `plugin.toml`: what a plugin is, what it asks for and how much it may use.
//!
//! Parsing is strict (unknown keys are errors) and every error names the file,
//! the line and column, and the dotted key it concerns, e.g.
//! `/x/plugin.toml:7:9: capabilities.exec: invalid type: string "yes", expected a boolean`.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};
use toml::Spanned;

use crate::capabilities::{NATIVE_MUST_REQUEST_TRUST, validate_capabilities};

pub use crate::kind::PluginKind;

/// The file name of a plugin manifest inside a plugin directory.
pub const MANIFEST_FILE: &str = "plugin.toml";

/// Default memory limit per instance, in MiB.
pub const DEFAULT_MEMORY_MB: u32 = 256;
/// Largest memory limit a manifest may ask for, in MiB (a 32-bit linear memory).
pub const MAX_MEMORY_MB: u32 = 4096;
/// Default time limit per call, in milliseconds.
pub const DEFAULT_TIMEOUT_MS: u64 = 30_000;
/// Largest time limit a manifest may ask for, in milliseconds.
pub const MAX_TIMEOUT_MS: u64 = 3_600_000;

/// What runs a plugin's code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Runtime {
    /// A WebAssembly component of the `talaria:plugin` WIT package (the default).
    #[default]
    Component,
    /// A core WebAssembly module written with an Extism PDK, providing tools
    /// through the Extism tool ABI (`describe`, `call`). Needs the `extism`
    /// feature.
    Extism,
    /// A shared library with the Talaria native C ABI. Unsandboxed: loaded only
    /// from the user's plugin directory with an explicit `trust-native` grant.
    /// Needs the `native` feature.
    Native,
}

impl Runtime {
    /// The name used in manifests.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Component => "component",
            Self::Extism => "extism",
            Self::Native => "native",
        }
    }
}

impl Runtime {
    /// Whether a plugin of this runtime can provide `kind`: a component any
    /// kind, an Extism or native module only tools. `Err` says why not.
    pub fn can_provide(self, kind: PluginKind) -> Result<(), String> {
        if self == Self::Component || kind == PluginKind::Tools {
            Ok(())
        } else {
            Err(format!(
                "a plugin with runtime \"{self}\" can only provide tools"
            ))
        }
    }
}

impl fmt::Display for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How much of a directory a plugin may touch.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Access {
    /// Read files and list directories.
    #[default]
    ReadOnly,
    /// Also create, write, rename and delete.
    ReadWrite,
}

impl fmt::Display for Access {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::ReadOnly => "read-only",
            Self::ReadWrite => "read-write",
        })
    }
}

/// One directory a plugin asks for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FsCapability {
    /// `$CWD`, `$PLUGIN_DATA` (optionally followed by `/sub/dir`) or an absolute path.
    pub path: String,
    /// What the plugin may do there.
    #[serde(default)]
    pub access: Access,
}

/// What a plugin asks to be allowed (or, after [`crate::Grants`], is allowed).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Capabilities {
    /// Directories, preopened through WASI.
    #[serde(default)]
    pub filesystem: Vec<FsCapability>,
    /// `host:port` patterns for outgoing connections (`*.example.org:443`, `127.0.0.1:*`).
    #[serde(default)]
    pub network: Vec<String>,
    /// Whether `exec.run` may start processes.
    #[serde(default)]
    pub exec: bool,
    /// Environment variable names readable through `config.get`.
    #[serde(default)]
    pub env: Vec<String>,
    /// Secrets the host writes into outgoing HTTP requests for the plugin,
    /// which never reads them (see [`SecretCapability`]).
    #[serde(default)]
    pub secrets: Vec<SecretCapability>,
    /// Whether the scoped key-value store is usable.
    #[serde(default)]
    pub kv: bool,
    /// Whether `session-search.search` is usable.
    #[serde(default)]
    pub session_search: bool,
    /// Whether `auxiliary.complete` may ask the session's auxiliary model.
    #[serde(default)]
    pub auxiliary_model: bool,
    /// Native plugins only, and required for them: the user trusts this
    /// library to run unsandboxed, with the agent's privileges.
    #[serde(default)]
    pub trust_native: bool,
}

/// A secret (an API key) the plugin names in a request and the host fills in.
/// The plugin writes the placeholder `{{secret:NAME}}` in a header value or
/// the URL's query; the host replaces it with the value of the environment
/// variable `NAME` (the process environment, then the profile's `.env`) —
/// only in requests to one of `hosts`, so a plugin cannot carry a key to a
/// host of its choosing, and never where the plugin can read it back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SecretCapability {
    /// The environment variable holding the secret (`BRAVE_API_KEY`).
    pub name: String,
    /// `host:port` patterns (or `$config.<key>`) the secret may be sent to.
    pub hosts: Vec<String>,
}

/// Resource limits per instance and per call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Limits {
    /// Linear memory per instance, in MiB.
    #[serde(default = "default_memory_mb")]
    pub memory_mb: u32,
    /// Wall-clock time per call, in milliseconds.
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            memory_mb: DEFAULT_MEMORY_MB,
            timeout_ms: DEFAULT_TIMEOUT_MS,
        }
    }
}

fn default_memory_mb() -> u32 {
    DEFAULT_MEMORY_MB
}

fn default_timeout_ms() -> u64 {
    DEFAULT_TIMEOUT_MS
}

/// A parsed and validated `plugin.toml`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    /// The file it was read from (for messages).
    pub path: PathBuf,
    /// `[a-z0-9-]+`; prefixes log lines and error messages.
    pub name: String,
    /// The plugin's own version.
    pub version: semver::Version,
    /// The `talaria:plugin` version the plugin targets.
    pub api: semver::Version,
    /// One line for humans.
    pub description: String,
    /// The toolset its tools belong to (default: the plugin's name).
    pub toolset: String,
    /// The kinds it provides (at least one).
    pub provides: Vec<PluginKind>,
    /// What runs its code.
    pub runtime: Runtime,
    /// The component (or, for Extism, the core module) file, relative to the
    /// plugin directory; for a native plugin, its shared library.
    pub wasm: PathBuf,
    /// What it asks for.
    pub capabilities: Capabilities,
    /// Its resource limits.
    pub limits: Limits,
    /// Free-form values readable through `config.get`.
    pub config: BTreeMap<String, String>,
    /// SPDX license expression (shown by plugin indexes).
    pub license: Option<String>,
    /// Project page (shown by plugin indexes).
    pub homepage: Option<String>,
}

/// Why a manifest could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// The file could not be read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The manifest path.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The file is not valid TOML, has unknown keys, or a value is wrong.
    #[error("{}:{line}:{column}: {}{message}", path.display(), key_prefix(key))]
    Invalid {
        /// The manifest path.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column (in characters).
        column: usize,
        /// Dotted key the error concerns (`capabilities.exec`), empty when unknown.
        key: String,
        /// What is wrong.
        message: String,
    },
}

fn key_prefix(key: &str) -> String {
    if key.is_empty() {
        String::new()
    } else {
        format!("{key}: ")
    }
}

impl ManifestError {
    /// The dotted key the error concerns, if known.
    pub fn key(&self) -> Option<&str> {
        match self {
            Self::Invalid { key, .. } if !key.is_empty() => Some(key),
            _ => None,
        }
    }

    /// The 1-based line the error concerns, if known.
    pub fn line(&self) -> Option<usize> {
        match self {
            Self::Invalid { line, .. } => Some(*line),
            Self::Io { .. } => None,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawManifest {
    name: Spanned<String>,
    version: Spanned<String>,
    api: Spanned<String>,
    #[serde(default)]
    description: String,
    #[serde(default)]
    toolset: Option<Spanned<String>>,
    provides: Spanned<Vec<PluginKind>>,
    #[serde(default)]
    runtime: Option<Spanned<Runtime>>,
    #[serde(default)]
    wasm: Option<Spanned<String>>,
    #[serde(default)]
    library: Option<Spanned<String>>,
    #[serde(default)]
    capabilities: Option<Spanned<Capabilities>>,
    #[serde(default)]
    limits: Option<Spanned<Limits>>,
    #[serde(default)]
    config: BTreeMap<Spanned<String>, Spanned<ConfigValue>>,
    #[serde(default)]
    license: Option<String>,
    #[serde(default)]
    homepage: Option<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum ConfigValue {
    String(String),
    Integer(i64),
    Float(f64),
    Bool(bool),
}

impl Manifest {
    /// Reads and validates the manifest at `path`, accepting every runtime.
    pub fn load(path: &Path) -> Result<Self, ManifestError> {
        Self::load_for(path, |_| true)
    }

    /// Reads and validates the manifest at `path` for a build that runs only
    /// the runtimes `runs` accepts (the plugin host passes its own).
    pub fn load_for(path: &Path, runs: impl Fn(Runtime) -> bool) -> Result<Self, ManifestError> {
        let io = |source| ManifestError::Io {
            path: path.to_path_buf(),
            source,
        };
        // A FIFO or device must not hang start-up: only a regular file is read.
        let (bytes, _) = crate::files::read_regular(path).map_err(io)?;
        let text = String::from_utf8(bytes)
            .map_err(|e| io(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))?;
        Self::parse_for(&text, path, runs)
    }

    /// Parses and validates manifest text, accepting every runtime; `path` is
    /// only used in messages.
    pub fn parse(text: &str, path: &Path) -> Result<Self, ManifestError> {
        Self::parse_for(text, path, |_| true)
    }

    /// Parses and validates manifest text for a build that runs only the
    /// runtimes `runs` accepts; `path` is only used in messages.
    pub fn parse_for(
        text: &str,
        path: &Path,
        runs: impl Fn(Runtime) -> bool,
    ) -> Result<Self, ManifestError> {
        let at = |span: Range<usize>, key: &str, message: String| {
            let (line, column) = line_column(text, span.start);
            ManifestError::Invalid {
                path: path.to_path_buf(),
                line,
                column,
                key: key.to_owned(),
                message,
            }
        };
        let raw: RawManifest = toml::from_str(text).map_err(|err| {
            let span = err.span().unwrap_or(0..0);
            let message = err.message().trim().to_owned();
            let mut key = key_at(text, &span).unwrap_or_default();
            // A missing key is reported at its table: name the key itself.
            if let Some(field) = message
                .strip_prefix("missing field `")
                .and_then(|rest| rest.split('`').next())
            {
                key = if key.is_empty() {
                    field.to_owned()
                } else {
                    format!("{key}.{field}")
                };
            }
            at(span, &key, message)
        })?;

        let name = raw.name.get_ref();
        if !valid_name(name) {
            return Err(at(
                raw.name.span(),
                "name",
                format!("invalid plugin name {name:?}: use 1 to 64 of a-z, 0-9 and -"),
            ));
        }
        let version = semver::Version::parse(raw.version.get_ref()).map_err(|err| {
            at(
                raw.version.span(),
                "version",
                format!("{:?} is not a semver version: {err}", raw.version.get_ref()),
            )
        })?;
        let api = semver::Version::parse(raw.api.get_ref()).map_err(|err| {
            at(
                raw.api.span(),
                "api",
                format!("{:?} is not a semver version: {err}", raw.api.get_ref()),
            )
        })?;
        if raw.provides.get_ref().is_empty() {
            return Err(at(
                raw.provides.span(),
                "provides",
                format!(
                    "a plugin must provide at least one of: {}",
                    PluginKind::ALL.map(PluginKind::as_str).join(", ")
                ),
            ));
        }
        let mut provides = raw.provides.get_ref().clone();
        provides.sort();
        provides.dedup();

        let runtime = match &raw.runtime {
            None => Runtime::Component,
            Some(runtime) => {
                let value = *runtime.get_ref();
                if !runs(value) {
                    let (what, feature) = match value {
                        Runtime::Extism => ("Extism", "extism"),
                        _ => ("native plugin", "native"),
                    };
                    return Err(at(
                        runtime.span(),
                        "runtime",
                        format!("this build has no {what} support (feature `{feature}`)"),
                    ));
                }
                value
            }
        };
        if let Some(message) = provides
            .iter()
            .find_map(|&kind| runtime.can_provide(kind).err())
        {
            return Err(at(raw.provides.span(), "provides", message));
        }

        let relative_file = |file: &Spanned<String>, key: &str| {
            let candidate = PathBuf::from(file.get_ref());
            let inside = !file.get_ref().is_empty()
                && candidate
                    .components()
                    .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
            if inside {
                Ok(candidate)
            } else {
                Err(at(
                    file.span(),
                    key,
                    format!(
                        "{:?} must be a relative path inside the plugin directory",
                        file.get_ref()
                    ),
                ))
            }
        };
        let wasm = match (runtime, &raw.wasm, &raw.library) {
            (Runtime::Native, Some(wasm), _) => {
                return Err(at(
                    wasm.span(),
                    "wasm",
                    "a native plugin names its shared library with `library`, not `wasm`".into(),
                ));
            }
            (Runtime::Native, None, None) => {
                return Err(at(
                    raw.runtime.as_ref().map_or(0..0, Spanned::span),
                    "library",
                    "a native plugin must name its shared library (`library = \"libNAME.so\"`)"
                        .into(),
                ));
            }
            (Runtime::Native, None, Some(library)) => relative_file(library, "library")?,
            (_, _, Some(library)) => {
                return Err(at(
                    library.span(),
                    "library",
                    "only native plugins (`runtime = \"native\"`) have a `library`".into(),
                ));
            }
            (_, None, None) => PathBuf::from("plugin.wasm"),
            (_, Some(wasm), None) => relative_file(wasm, "wasm")?,
        };

        let capabilities = match raw.capabilities {
            None if runtime == Runtime::Native => {
                return Err(at(
                    raw.runtime.as_ref().map_or(0..0, Spanned::span),
                    "capabilities.trust-native",
                    NATIVE_MUST_REQUEST_TRUST.into(),
                ));
            }
            None => Capabilities::default(),
            Some(caps) => {
                let span = caps.span();
                let caps = caps.into_inner();
                validate_capabilities(&caps, runtime).map_err(|(key, message)| {
                    let span = find_key_span(text, &key).unwrap_or(span);
                    at(span, &key, message)
                })?;
                caps
            }
        };

        let limits = match raw.limits {
            None => Limits::default(),
            Some(limits) => {
                let span = limits.span();
                let limits = limits.into_inner();
                if !(1..=MAX_MEMORY_MB).contains(&limits.memory_mb) {
                    let key = "limits.memory-mb";
                    return Err(at(
                        find_key_span(text, key).unwrap_or(span),
                        key,
                        format!("must be between 1 and {MAX_MEMORY_MB}"),
                    ));
                }
                if !(1..=MAX_TIMEOUT_MS).contains(&limits.timeout_ms) {
                    let key = "limits.timeout-ms";
                    return Err(at(
                        find_key_span(text, key).unwrap_or(span),
                        key,
                        format!("must be between 1 and {MAX_TIMEOUT_MS}"),
                    ));
                }
                if runtime == Runtime::Native
                    && let Some(span) = find_key_span(text, "limits.memory-mb")
                {
                    return Err(at(
                        span,
                        "limits.memory-mb",
                        "a native plugin's memory cannot be limited; remove this key".into(),
                    ));
                }
                limits
            }
        };

        let toolset = match raw.toolset {
            None => raw.name.get_ref().clone(),
            Some(toolset) => {
                let span = toolset.span();
                let toolset = toolset.into_inner();
                if toolset.is_empty()
                    || !toolset
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
                {
                    return Err(at(
                        span,
                        "toolset",
                        format!(
                            "{toolset:?} is not a toolset name: use letters, digits, '_' and '-'"
                        ),
                    ));
                }
                toolset
            }
        };

        let config = raw
            .config
            .into_iter()
            .map(|(key, value)| {
                let value = match value.into_inner() {
                    ConfigValue::String(s) => s,
                    ConfigValue::Integer(i) => i.to_string(),
                    ConfigValue::Float(f) => f.to_string(),
                    ConfigValue::Bool(b) => b.to_string(),
                };
                (key.into_inner(), value)
            })
            .collect::<BTreeMap<String, String>>();
        let network = capabilities
            .network
            .iter()
            .enumerate()
            .map(|(i, pattern)| (format!("capabilities.network[{i}]"), pattern));
        let secret_hosts = capabilities
            .secrets
            .iter()
            .enumerate()
            .flat_map(|(i, secret)| {
                secret.hosts.iter().enumerate().map(move |(j, pattern)| {
                    (format!("capabilities.secrets[{i}].hosts[{j}]"), pattern)
                })
            });
        for (key, pattern) in network.chain(secret_hosts) {
            let Some(setting) = pattern.strip_prefix(crate::net_pattern::CONFIG_REQUEST_PREFIX)
            else {
                continue;
            };
            // `$config.server:PORT`: the key is before the port.
            let setting = setting.split_once(':').map_or(setting, |(key, _)| key);
            if !config.contains_key(setting) {
                return Err(at(
                    find_key_span(text, &key).unwrap_or(0..0),
                    &key,
                    format!(
                        "{pattern:?} names no [config] key: add `{setting} = \"<default>\"` \
                         under [config]"
                    ),
                ));
            }
        }

        Ok(Self {
            path: path.to_path_buf(),
            name: raw.name.into_inner(),
            version,
            api,
            description: raw.description,
            toolset,
            provides,
            runtime,
            wasm,
            capabilities,
            limits,
            config,
            license: raw.license,
            homepage: raw.homepage,
        })
    }

    /// Whether the plugin provides `kind`.
    pub fn provides(&self, kind: PluginKind) -> bool {
        self.provides.contains(&kind)
    }
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// 1-based line and column (in characters) of a byte offset.
pub fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before.get(line_start..).map_or(0, |s| s.chars().count()) + 1;
    (line, column)
}

/// Every key of the document with its dotted path, key span and value span.
fn collect_keys(
    value: &toml::de::DeValue<'_>,
    prefix: &str,
    out: &mut Vec<(String, Range<usize>, Range<usize>)>,
) {
    match value {
        toml::de::DeValue::Table(table) => {
            for (key, item) in table {
                let path = if prefix.is_empty() {
                    key.get_ref().to_string()
                } else {
                    format!("{prefix}.{}", key.get_ref())
                };
                out.push((path.clone(), key.span(), item.span()));
                collect_keys(item.get_ref(), &path, out);
            }
        }
        toml::de::DeValue::Array(array) => {
            for (i, item) in array.iter().enumerate() {
                let path = format!("{prefix}[{i}]");
                out.push((path.clone(), item.span(), item.span()));
                collect_keys(item.get_ref(), &path, out);
            }
        }
        _ => {}
    }
}

fn all_keys(text: &str) -> Vec<(String, Range<usize>, Range<usize>)> {
    let mut out = Vec::new();
    if let Ok(doc) = toml::de::DeTable::parse(text) {
        let root = toml::de::DeValue::Table(doc.into_inner());
        collect_keys(&root, "", &mut out);
    }
    out
}

/// The dotted key whose key or value span most tightly encloses `span`.
fn key_at(text: &str, span: &Range<usize>) -> Option<String> {
    if span.is_empty() {
        return None;
    }
    let contains = |outer: &Range<usize>| outer.start <= span.start && span.end <= outer.end;
    all_keys(text)
        .into_iter()
        .filter_map(|(path, key, value)| {
            if contains(&key) {
                Some((path, key.len()))
            } else if contains(&value) {
                Some((path, value.len()))
            } else {
                None
            }
        })
        .min_by_key(|(_, len)| *len)
        .map(|(path, _)| path)
}

/// The span of the value of a dotted key (e.g. `capabilities.filesystem[0].path`).
fn find_key_span(text: &str, key: &str) -> Option<Range<usize>> {
    all_keys(text)
        .into_iter()
        .find(|(path, _, _)| path == key)
        .map(|(_, _, value)| value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_column_counts_from_one() {
        let text = "a = 1\nbb = 2\n";
        assert_eq!(line_column(text, 0), (1, 1));
        assert_eq!(line_column(text, 6), (2, 1));
        assert_eq!(line_column(text, 11), (2, 6));
    }

    #[test]
    fn key_at_finds_nested_values() {
        let text = "name = \"x\"\n[capabilities]\nexec = \"yes\"\n";
        let start = text.find("\"yes\"").unwrap();
        assert_eq!(
            key_at(text, &(start..start + 5)).as_deref(),
            Some("capabilities.exec")
        );
    }
}

#[cfg(test)]
mod config_request_tests {
    use super::*;

    const HEAD: &str = "name = \"tg\"\nversion = \"0.1.0\"\napi = \"0.1.2\"\n\
                        provides = [\"chat\"]\n";

    #[test]
    fn a_network_request_may_name_a_config_key_the_manifest_sets() {
        let text = format!(
            "{HEAD}[capabilities]\nnetwork = [\"api.telegram.org:443\", \"$config.api_base\"]\n\
             [config]\napi_base = \"https://api.telegram.org\"\n"
        );
        let manifest = Manifest::parse(&text, Path::new("/p/plugin.toml")).unwrap();
        assert_eq!(manifest.capabilities.network[1], "$config.api_base");

        let unset = format!("{HEAD}[capabilities]\nnetwork = [\"$config.api_base\"]\n");
        let error = Manifest::parse(&unset, Path::new("/p/plugin.toml"))
            .unwrap_err()
            .to_string();
        assert!(error.contains("names no [config] key"), "{error}");
        assert!(error.contains("add `api_base = "), "{error}");

        let empty = format!("{HEAD}[capabilities]\nnetwork = [\"$config.\"]\n");
        let error = Manifest::parse(&empty, Path::new("/p/plugin.toml"))
            .unwrap_err()
            .to_string();
        assert!(error.contains("name a [config] key"), "{error}");
    }

    #[test]
    fn secrets_name_a_variable_and_the_hosts_it_may_reach() {
        let parse = |caps: &str| {
            let text = format!(
                "{HEAD}[capabilities]\n{caps}\n[config]\nbrave_url = \"https://api.search.brave.com\"\n"
            );
            Manifest::parse(&text, Path::new("/p/plugin.toml")).map_err(|e| e.to_string())
        };
        let manifest = parse(
            r#"secrets = [{ name = "BRAVE_API_KEY", hosts = ["api.search.brave.com:443", "$config.brave_url"] }]"#,
        )
        .unwrap();
        assert_eq!(
            manifest.capabilities.secrets,
            vec![SecretCapability {
                name: "BRAVE_API_KEY".into(),
                hosts: vec![
                    "api.search.brave.com:443".into(),
                    "$config.brave_url".into()
                ],
            }]
        );
        let error =
            parse(r#"secrets = [{ name = "BRAVE KEY", hosts = ["a.b:443"] }]"#).unwrap_err();
        assert!(error.contains("capabilities.secrets[0].name"), "{error}");
        let error = parse(r#"secrets = [{ name = "K", hosts = [] }]"#).unwrap_err();
        assert!(error.contains("name the hosts"), "{error}");
        let error = parse(r#"secrets = [{ name = "K", hosts = ["nope"] }]"#).unwrap_err();
        assert!(
            error.contains("capabilities.secrets[0].hosts[0]"),
            "{error}"
        );
        let error = parse(r#"secrets = [{ name = "K", hosts = ["$config.other"] }]"#).unwrap_err();
        assert!(error.contains("names no [config] key"), "{error}");
    }
}
