//! `config.yaml`: parsed strictly (unknown keys are errors) with `${ENV}`
//! expansion; every error names the file, line and column.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use talaria_kernel::Pricing;

use crate::env::EnvLayer;
use crate::gateway_config::GatewayConfig;
use crate::mcp_config::McpServerConfig;
pub use crate::servers_config::{ApiServerConfig, McpServeConfig, NamedKey};

/// One model endpoint (the primary or a fallback).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ModelConfig {
    /// Wire format: `openai` or `anthropic`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// Model name (`default` is accepted too, as Hermes Agent writes it).
    #[serde(alias = "default", skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Endpoint base URL.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// API key; prefer `${VAR}` with the value in `.env`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_key: Option<String>,
    /// Stream responses (default true).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    /// Output token cap per call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Prices in USD per million tokens, for the cost budget and `/usage`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pricing: Option<Pricing>,
    /// The model's context window in tokens (default: known per model family).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u32>,
    /// Largest reply read from the endpoint, in bytes (default 16 MiB).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_reply_bytes: Option<u64>,
    /// Largest request sent to the endpoint, in bytes (default 32 MiB).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_prompt_bytes: Option<u64>,
    /// More keys for the same model (a credential pool): on an auth, quota or rate-limit error
    /// that retries do not cure, the next key is used for the rest of the session.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub api_keys: Vec<String>,
    /// Prompt-cache breakpoints on the OpenAI wire (`cache_control` content parts, which
    /// OpenRouter passes to Claude): `auto` (on for model names containing `claude`), `on`, `off`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<CacheControl>,
}

/// `model.cache_control`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheControl {
    /// On for Claude models (by name), off otherwise.
    #[default]
    Auto,
    /// Always mark breakpoints.
    On,
    /// Never.
    Off,
}

impl CacheControl {
    /// Whether breakpoints are marked for `model`.
    pub fn applies_to(self, model: &str) -> bool {
        match self {
            CacheControl::Auto => model.to_ascii_lowercase().contains("claude"),
            CacheControl::On => true,
            CacheControl::Off => false,
        }
    }
}

/// Limits of one conversation run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BudgetConfig {
    /// Model calls per run.
    pub max_iterations: u32,
    /// Wall-clock limit in seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_seconds: Option<u64>,
    /// Cost limit in USD.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<f64>,
}

impl Default for BudgetConfig {
    fn default() -> Self {
        Self {
            max_iterations: talaria_kernel::budget::DEFAULT_MAX_ITERATIONS,
            max_seconds: None,
            max_cost_usd: None,
        }
    }
}

/// Retrying failed model calls.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RetryConfig {
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// First backoff delay.
    pub base_delay_ms: u64,
    /// Largest backoff delay.
    pub max_delay_ms: u64,
}

impl Default for RetryConfig {
    fn default() -> Self {
        let policy = talaria_kernel::RetryPolicy::default();
        Self {
            max_retries: policy.max_retries,
            base_delay_ms: duration_ms(policy.base_delay),
            max_delay_ms: duration_ms(policy.max_delay),
        }
    }
}

fn duration_ms(duration: std::time::Duration) -> u64 {
    duration.as_millis().try_into().unwrap_or(u64::MAX)
}

/// Connection behaviour.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NetworkConfig {
    /// Longest silence from a streaming model before the call fails and is retried.
    pub idle_timeout_secs: u64,
}

impl Default for NetworkConfig {
    fn default() -> Self {
        Self {
            idle_timeout_secs: 120,
        }
    }
}

/// A toolset defined by the user: tools and other toolsets.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ToolsetConfig {
    /// Tool names.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
    /// Other toolsets it includes.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub includes: Vec<String>,
}

/// Which tools the model may use, and how large their results may be.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ToolsConfig {
    /// Only these toolsets (within the surface's profile); unset: all of the profile.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<Vec<String>>,
    /// Toolsets never offered.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub disabled: Vec<String>,
    /// Composite toolsets of your own.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub toolsets: std::collections::BTreeMap<String, ToolsetConfig>,
    /// Most bytes of one tool result before it is previewed and spilled to a file.
    pub result_max_bytes: usize,
    /// Most lines of one tool result.
    pub result_max_lines: usize,
    /// Most bytes of one turn's tool results together.
    pub turn_max_bytes: usize,
    /// `full` schemas in every request, `lazy` (a one-line index plus
    /// `tool_schema`, which returns schemas on demand), or `auto` (lazy from
    /// 16 tools on).
    pub schemas: talaria_tools::SchemaMode,
    /// Which plugin serves a tool name that several plugins define
    /// (`{TOOL: PLUGIN}`); unlisted names go to the plugin loaded first.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub providers: std::collections::BTreeMap<String, String>,
}

impl Default for ToolsConfig {
    fn default() -> Self {
        let budget = talaria_tools::ResultBudget::default();
        Self {
            enabled: None,
            disabled: Vec::new(),
            toolsets: std::collections::BTreeMap::new(),
            result_max_bytes: budget.max_bytes,
            result_max_lines: budget.max_lines,
            turn_max_bytes: budget.turn_bytes,
            schemas: talaria_tools::SchemaMode::default(),
            providers: std::collections::BTreeMap::new(),
        }
    }
}

/// Where commands run (`terminal.backend`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    /// This machine, in the working directory.
    #[default]
    Local,
    /// Inside bubblewrap: read-only system, writable working directory.
    Bwrap,
    /// On a remote host over ssh.
    Ssh,
}

/// The ssh backend's target (`terminal.ssh`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SshTargetConfig {
    /// Host name or address.
    pub host: String,
    /// Port (default 22).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// Remote user (default: the local user name).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// Private key file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub identity_file: Option<String>,
    /// Remote working directory (default: the local working directory's path).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
}

/// How the terminal tools run commands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TerminalConfig {
    /// local, bwrap or ssh.
    pub backend: BackendKind,
    /// bwrap: whether commands may use the network.
    pub network: bool,
    /// ssh: the target.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ssh: Option<SshTargetConfig>,
    /// Secret-named variables (`*_API_KEY`, `*_TOKEN` …) passed to commands anyway; all others
    /// are kept out of every child process.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub env_passthrough: Vec<String>,
}

impl Default for TerminalConfig {
    fn default() -> Self {
        Self {
            backend: BackendKind::Local,
            network: true,
            ssh: None,
            env_passthrough: Vec::new(),
        }
    }
}

/// What the model may read (`security`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SecurityConfig {
    /// Replace keys, tokens and passwords in tool results, spill files and session exports with
    /// a marker (`sk-pro…[REDACTED]`); files on disk are never changed.
    pub redact_secrets: bool,
    /// Let the web tools and plugins reach private, loopback, link-local and
    /// CGNAT addresses (Hermes's key). Off: only a host a grant or setting
    /// names explicitly is reached at such an address.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub allow_private_urls: bool,
}

impl Default for SecurityConfig {
    fn default() -> Self {
        Self {
            redact_secrets: true,
            allow_private_urls: false,
        }
    }
}

/// What happens when a command needs approval (`approvals.mode`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ApprovalMode {
    /// Ask the user (on surfaces that can); deny where nobody can answer.
    #[default]
    Ask,
    /// Allow dangerous commands without asking (hardline ones stay blocked).
    Yolo,
    /// Deny dangerous commands without asking.
    Deny,
    /// Have the auxiliary model rate a command that needs approval first: low risk runs,
    /// the rest is asked about as under `ask`.
    Smart,
}

/// Command approval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ApprovalsConfig {
    /// ask, yolo, deny or smart.
    pub mode: ApprovalMode,
    /// Seconds to wait for an answer before denying.
    pub timeout_secs: u64,
    /// Seconds the rater of `smart` mode may take before the user is asked instead.
    pub smart_timeout_secs: u64,
}

impl Default for ApprovalsConfig {
    fn default() -> Self {
        Self {
            mode: ApprovalMode::Ask,
            timeout_secs: 60,
            smart_timeout_secs: 20,
        }
    }
}

/// Questions the agent asks with `clarify`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClarifyConfig {
    /// Seconds a question asked in a chat or an editor waits for an answer
    /// (the terminal waits until answered or Ctrl-C).
    pub timeout_secs: u64,
}

impl Default for ClarifyConfig {
    fn default() -> Self {
        Self { timeout_secs: 300 }
    }
}

/// How the terminal shows things.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DisplayConfig {
    /// The skin (`talaria skin list`).
    pub skin: String,
    /// Show the model's reasoning as it streams.
    pub show_reasoning: bool,
}

impl Default for DisplayConfig {
    fn default() -> Self {
        Self {
            skin: "default".into(),
            show_reasoning: false,
        }
    }
}

/// Sub-agents (`delegate_task`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DelegationConfig {
    /// How deep sub-agents may nest: 1 (sub-agents do not delegate) or 2.
    pub max_depth: u32,
    /// Steps each sub-agent may take (drawn from the parent's budget).
    pub child_iterations: u32,
}

/// Iterations each delegated child may use by default (drawn from the parent's budget).
pub const DEFAULT_CHILD_ITERATIONS: u32 = 50;

impl Default for DelegationConfig {
    fn default() -> Self {
        Self {
            max_depth: 1,
            child_iterations: DEFAULT_CHILD_ITERATIONS,
        }
    }
}

/// Context compression.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CompressionConfig {
    /// Compress long conversations (a context-overflow error always does).
    pub enabled: bool,
    /// Share of the context window at which compression starts.
    pub threshold: f32,
    /// Compressions after "prompt too long" errors before a model call gives up with an error.
    pub max_attempts: u32,
}

impl Default for CompressionConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            threshold: 0.5,
            max_attempts: 3,
        }
    }
}

/// The whole `config.yaml`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ConfigFile {
    /// The primary model.
    pub model: ModelConfig,
    /// Models tried in order when the primary keeps failing.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fallback: Vec<ModelConfig>,
    /// A cheaper model for side jobs (condensing session search hits,
    /// summaries); unset fields come from `model`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auxiliary: Option<ModelConfig>,
    /// Run limits.
    #[serde(skip_serializing_if = "is_default")]
    pub budget: BudgetConfig,
    /// Retry policy.
    #[serde(skip_serializing_if = "is_default")]
    pub retry: RetryConfig,
    /// Timeouts.
    #[serde(skip_serializing_if = "is_default")]
    pub network: NetworkConfig,
    /// Tool selection and result limits.
    #[serde(skip_serializing_if = "is_default")]
    pub tools: ToolsConfig,
    /// Where terminal commands run.
    #[serde(skip_serializing_if = "is_default")]
    pub terminal: TerminalConfig,
    /// Command approval.
    #[serde(skip_serializing_if = "is_default")]
    pub approvals: ApprovalsConfig,
    /// Questions asked with `clarify`.
    #[serde(skip_serializing_if = "is_default")]
    pub clarify: ClarifyConfig,
    /// Context compression.
    #[serde(skip_serializing_if = "is_default")]
    pub compression: CompressionConfig,
    /// Sub-agents.
    #[serde(skip_serializing_if = "is_default")]
    pub delegation: DelegationConfig,
    /// How the terminal shows things.
    #[serde(skip_serializing_if = "is_default")]
    pub display: DisplayConfig,
    /// Secret redaction.
    #[serde(skip_serializing_if = "is_default")]
    pub security: SecurityConfig,
    /// MCP servers by name (Hermes Agent's keys).
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub mcp_servers: std::collections::BTreeMap<String, McpServerConfig>,
    /// The OpenAI-compatible API server (`talaria serve`).
    #[serde(skip_serializing_if = "is_default")]
    pub api_server: ApiServerConfig,
    /// `talaria mcp serve` over HTTP.
    #[serde(skip_serializing_if = "is_default")]
    pub mcp_serve: McpServeConfig,
    /// The gateway behind chat platforms.
    #[serde(skip_serializing_if = "is_default")]
    pub gateway: GatewayConfig,
    /// The time zone of cron schedules (an IANA name; unset: the system's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
    /// Scheduled jobs' limits.
    #[serde(skip_serializing_if = "is_default")]
    pub cron: crate::cron_config::CronConfig,
    /// The web tools' backends.
    #[serde(skip_serializing_if = "is_default")]
    pub web: crate::web_config::WebConfig,
    /// The browser tools' Chromium and surfaces.
    #[serde(skip_serializing_if = "is_default")]
    pub browser: crate::browser_config::BrowserConfig,
    /// The external memory provider.
    #[serde(skip_serializing_if = "is_default")]
    pub memory: crate::memory_config::MemoryConfig,
}

/// Sections left at their defaults are not written, so a later release's
/// better defaults still reach users who ran setup once.
pub(crate) fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

/// A config file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// Unreadable file.
    #[error("{path}: cannot read: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Invalid content, with its position.
    #[error("{path}:{line}:{column}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What is wrong.
        message: String,
    },
}

impl ConfigFile {
    /// Reads `path`; a missing file is an empty config.
    pub fn load(path: &Path, env: &EnvLayer) -> Result<Self, ConfigError> {
        match std::fs::read_to_string(path) {
            Ok(text) => Self::parse(&text, path, env),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(Self::default()),
            Err(source) => Err(ConfigError::Read {
                path: path.to_owned(),
                source,
            }),
        }
    }

    /// Parses YAML text (`path` is only used in messages).
    pub fn parse(text: &str, path: &Path, env: &EnvLayer) -> Result<Self, ConfigError> {
        if text.trim().is_empty() {
            return Ok(Self::default());
        }
        let mut config: ConfigFile = serde_yaml_ng::from_str(text).map_err(|error| {
            let (line, column) = error
                .location()
                .map_or((1, 1), |at| (at.line(), at.column()));
            ConfigError::Invalid {
                path: path.to_owned(),
                line,
                column,
                message: strip_position(&error.to_string()),
            }
        })?;
        for model in std::iter::once(&mut config.model).chain(config.fallback.iter_mut()) {
            for field in [
                &mut model.provider,
                &mut model.name,
                &mut model.base_url,
                &mut model.api_key,
            ] {
                if let Some(value) = field.as_mut() {
                    *value = expand(value, env).map_err(|variable| {
                        let (line, column) = locate(text, &format!("${{{variable}"));
                        ConfigError::Invalid {
                            path: path.to_owned(),
                            line,
                            column,
                            message: format!(
                                "environment variable {variable} is not set (set it, put it in \
                                 .env, or write ${{{variable}:-default}})"
                            ),
                        }
                    })?;
                }
            }
        }
        for (name, server) in &mut config.mcp_servers {
            server.expand(env).map_err(|variable| {
                let (line, column) = locate(text, &format!("${{{variable}"));
                ConfigError::Invalid {
                    path: path.to_owned(),
                    line,
                    column,
                    message: format!(
                        "environment variable {variable} is not set (set it, put it in .env, or \
                         write ${{{variable}:-default}})"
                    ),
                }
            })?;
            server.validate(name).map_err(|message| {
                let (line, column) = locate_after(text, "mcp_servers", name);
                ConfigError::Invalid {
                    path: path.to_owned(),
                    line,
                    column,
                    message,
                }
            })?;
        }
        crate::gateway_config::check(&mut config.gateway, text, path, env)?;
        crate::cron_config::check(config.timezone.as_deref(), &config.cron, text, path)?;
        section_checked("web", config.web.validate(), text, path)?;
        section_checked("browser", config.browser.validate(), text, path)?;
        section_checked("memory", config.memory.validate(), text, path)?;
        Ok(config)
    }

    /// Writes the config as YAML.
    pub fn to_yaml(&self) -> Result<String, serde_yaml_ng::Error> {
        serde_yaml_ng::to_string(self)
    }
}

/// A section's own check (the bad key and what is wrong with it) as an error
/// at that key's place in `text`.
fn section_checked(
    section: &str,
    verdict: Result<(), (String, String)>,
    text: &str,
    path: &std::path::Path,
) -> Result<(), ConfigError> {
    verdict.map_err(|(key, message)| invalid_at(path, locate_after(text, section, &key), message))
}

/// Expands `${VAR}` and `${VAR:-default}`; `$$` is a literal `$`. Returns the
/// name of the first unset variable without a default.
pub fn expand(value: &str, env: &EnvLayer) -> Result<String, String> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(body) = after.strip_prefix('{')
            && let Some(end) = body.find('}')
        {
            let inner = &body[..end];
            let (name, default) = match inner.split_once(":-") {
                Some((name, default)) => (name, Some(default)),
                None => (inner, None),
            };
            match (env.get(name), default) {
                (Some(found), _) => out.push_str(&found),
                (None, Some(default)) => out.push_str(default),
                (None, None) => return Err(name.to_owned()),
            }
            rest = &body[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// The error for `message` at 1-based (line, column) `at` of the file at `path`.
pub(crate) fn invalid_at(
    path: &Path,
    (line, column): (usize, usize),
    message: String,
) -> ConfigError {
    ConfigError::Invalid {
        path: path.to_owned(),
        line,
        column,
        message,
    }
}

/// 1-based line and column of the first occurrence of `needle`.
pub(crate) fn locate(text: &str, needle: &str) -> (usize, usize) {
    text.find(needle)
        .map_or((1, 1), |offset| position(text, offset))
}

/// 1-based line and column of the key `name` (bare or quoted) in the lines after the first
/// `section` key.
pub(crate) fn locate_after(text: &str, section: &str, name: &str) -> (usize, usize) {
    let Some(start) = text.find(&format!("{section}:")) else {
        return (1, 1);
    };
    let keys = [
        format!("{name}:"),
        format!("\"{name}\":"),
        format!("'{name}':"),
    ];
    let mut offset = start;
    for (index, line) in text[start..].split_inclusive('\n').enumerate() {
        let trimmed = line.trim_start();
        if index > 0 && keys.iter().any(|key| trimmed.starts_with(key.as_str())) {
            return position(text, offset + (line.len() - trimmed.len()));
        }
        offset += line.len();
    }
    position(text, start)
}

/// 1-based line and column of byte `offset`.
fn position(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// serde_yaml appends "at line X column Y"; we print the position up front.
fn strip_position(message: &str) -> String {
    match message.find(" at line ") {
        Some(at) => message[..at].to_owned(),
        None => message.to_owned(),
    }
}

#[cfg(test)]
mod tests {

    use super::*;

    fn parse(text: &str, env: &EnvLayer) -> Result<ConfigFile, ConfigError> {
        ConfigFile::parse(text, Path::new("/h/config.yaml"), env)
    }

    #[test]
    fn parses_models_fallbacks_and_expands_env() {
        let text = "model:\n  provider: anthropic\n  default: claude-x\n  api_key: ${KEY}\n\
                    fallback:\n  - name: backup\n    base_url: ${URL:-http://localhost:8080/v1}\n\
                    budget:\n  max_iterations: 12\n";
        let config = parse(text, &EnvLayer::from_pairs(&[("KEY", "sk-1")])).unwrap();
        assert_eq!(config.model.provider.as_deref(), Some("anthropic"));
        assert_eq!(config.model.name.as_deref(), Some("claude-x"));
        assert_eq!(config.model.api_key.as_deref(), Some("sk-1"));
        assert_eq!(
            config.fallback[0].base_url.as_deref(),
            Some("http://localhost:8080/v1")
        );
        assert_eq!(config.budget.max_iterations, 12);
        assert_eq!(config.network, NetworkConfig::default());
    }

    #[test]
    fn unknown_keys_name_file_line_and_column() {
        let error = parse(
            "model:\n  name: x\n  api_kye: y\n",
            &EnvLayer::from_pairs(&[]),
        )
        .unwrap_err();
        let text = error.to_string();
        assert!(text.starts_with("/h/config.yaml:3:3: "), "{text}");
        assert!(text.contains("unknown field `api_kye`"), "{text}");
    }

    #[test]
    fn syntax_errors_name_the_position() {
        let error = parse("model:\n  name: [unclosed\n", &EnvLayer::from_pairs(&[])).unwrap_err();
        assert!(
            matches!(
                error,
                ConfigError::Invalid { line: 3, .. } | ConfigError::Invalid { line: 2, .. }
            ),
            "{error}"
        );
    }

    #[test]
    fn unset_variables_are_located() {
        let error = parse(
            "model:\n  name: m\n  api_key: \"${MISSING}\"\n",
            &EnvLayer::from_pairs(&[]),
        )
        .unwrap_err();
        let text = error.to_string();
        assert!(
            text.starts_with("/h/config.yaml:3:13: environment variable MISSING is not set"),
            "{text}"
        );
    }

    #[test]
    fn expansion_handles_literals_and_defaults() {
        let e = EnvLayer::from_pairs(&[("A", "x")]);
        assert_eq!(
            expand("a$$b ${A}-${B:-d} $notvar", &e).unwrap(),
            "a$b x-d $notvar"
        );
        assert_eq!(expand("${B}", &e).unwrap_err(), "B");
    }

    #[test]
    fn config_round_trips_through_yaml() {
        let mut config = ConfigFile::default();
        config.model.name = Some("m".into());
        config.model.api_key = Some("${TALARIA_API_KEY}".into());
        let yaml = config.to_yaml().unwrap();
        assert!(
            !yaml.contains("budget") && !yaml.contains("null"),
            "defaults stay out: {yaml}"
        );
        let back = parse(&yaml, &EnvLayer::from_pairs(&[("TALARIA_API_KEY", "k")])).unwrap();
        assert_eq!(back.model.name.as_deref(), Some("m"));
        assert_eq!(back.model.api_key.as_deref(), Some("k"));
    }
}
