//! `mcp_servers`: the MCP servers Talaria connects to, with Hermes Agent's keys. Values are
//! `${VAR}`-expanded like the rest of the file; a server that cannot work (both `command` and
//! `url`, neither, a bad name, the legacy SSE transport) is an error naming it.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::env::EnvLayer;

/// Per-call timeout when `timeout` is unset.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(300);
/// Spawn/connect plus `initialize` when `connect_timeout` is unset.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(60);
/// Longest server name: tool names are `mcp_<server>_<tool>` within 64 characters.
pub const MAX_SERVER_NAME: usize = 32;
/// Largest timeout accepted, in seconds (a day).
const MAX_TIMEOUT_SECS: f64 = 86_400.0;
/// Headers the MCP transport sets itself.
const RESERVED_HEADERS: &[&str] = &[
    "accept",
    "content-type",
    "mcp-session-id",
    "mcp-protocol-version",
    "last-event-id",
];

/// How Talaria talks to a server (`mcp_servers.<name>.transport`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum McpTransport {
    /// A child process speaking JSON-RPC lines on stdin/stdout (`command`).
    Stdio,
    /// Streamable HTTP (`url`).
    Http,
    /// The legacy HTTP+SSE transport: refused (the client has none).
    Sse,
}

/// Where a stdio server runs (`mcp_servers.<name>.sandbox`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum McpSandbox {
    /// On the host, like a native plugin (the default).
    None,
    /// Inside bubblewrap.
    Bwrap,
}

/// Which calls to a server's tools ask the user first (`mcp_servers.<name>.approval`). The
/// server runs with the user's rights (or in bubblewrap), so its tools are side effects like
/// commands: the same approval layer decides, "always" answers are remembered per tool.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum McpApproval {
    /// Ask before tools the server does not mark read-only (the default).
    #[default]
    Writes,
    /// Ask before every call.
    EveryCall,
    /// Never ask: configuring the server was the consent.
    Trusted,
}

/// Which of a server's tools are offered (`mcp_servers.<name>.tools`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct McpToolsConfig {
    /// Only these tools (exact names or `*`/`?` globs); wins over `exclude`. Unset: all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub include: Option<Vec<String>>,
    /// Never these tools (exact names or globs).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub exclude: Vec<String>,
    /// Offer `list_resources`/`read_resource` when the server has resources.
    pub resources: bool,
    /// Offer `list_prompts`/`get_prompt` when the server has prompts.
    pub prompts: bool,
}

impl Default for McpToolsConfig {
    fn default() -> Self {
        Self {
            include: None,
            exclude: Vec::new(),
            resources: true,
            prompts: true,
        }
    }
}

impl McpToolsConfig {
    /// Whether the server's tool `name` is offered.
    pub fn allows(&self, name: &str) -> bool {
        match &self.include {
            Some(include) => include.iter().any(|pattern| glob_match(pattern, name)),
            None => !self.exclude.iter().any(|pattern| glob_match(pattern, name)),
        }
    }
}

/// `*` any run of characters, `?` one character, everything else literal.
pub fn glob_match(pattern: &str, name: &str) -> bool {
    let pattern: Vec<char> = pattern.chars().collect();
    let name: Vec<char> = name.chars().collect();
    let (mut p, mut n) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        match pattern.get(p) {
            Some('*') => {
                star = Some((p, n));
                p += 1;
            }
            Some(c) if *c == '?' || *c == name[n] => {
                p += 1;
                n += 1;
            }
            _ => match star {
                Some((star_p, star_n)) => {
                    p = star_p + 1;
                    n = star_n + 1;
                    star = Some((star_p, star_n + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|c| *c == '*')
}

/// One server (`mcp_servers.<name>`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct McpServerConfig {
    /// stdio: the program to run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// stdio: its arguments.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// stdio: variables set for it, on top of a minimal environment (no API keys).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// stdio: its working directory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Streamable HTTP: the endpoint.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Streamable HTTP: headers sent with every request (`Authorization: Bearer ${TOKEN}`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// `stdio` or `http`; unset: from `command` or `url`. `sse` is refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transport: Option<McpTransport>,
    /// Seconds one call may take (default 300).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout: Option<f64>,
    /// Seconds to start or reach the server and finish `initialize` (default 60).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connect_timeout: Option<f64>,
    /// Which tools are offered.
    #[serde(skip_serializing_if = "is_default_tools")]
    pub tools: McpToolsConfig,
    /// `false` keeps the entry without connecting.
    #[serde(skip_serializing_if = "is_true")]
    pub enabled: bool,
    /// stdio: `bwrap` runs the server in bubblewrap; `none` (default) on the host.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<McpSandbox>,
    /// Which calls ask the user first (`writes`, `every-call`, `trusted`).
    #[serde(skip_serializing_if = "is_default_approval")]
    pub approval: McpApproval,
    /// `false`: every session starts its own server (one that keeps per-session state, such
    /// as filesystem roots or a memory). By default the sessions of a long-lived process (the
    /// gateway, the API server, ACP) share one server per identical entry.
    #[serde(skip_serializing_if = "is_true")]
    pub shared: bool,
}

#[expect(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's skip_serializing_if passes a reference"
)]
fn is_default_approval(approval: &McpApproval) -> bool {
    *approval == McpApproval::default()
}

#[expect(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's skip_serializing_if passes a reference"
)]
fn is_true(value: &bool) -> bool {
    *value
}

fn is_default_tools(tools: &McpToolsConfig) -> bool {
    *tools == McpToolsConfig::default()
}

impl Default for McpServerConfig {
    fn default() -> Self {
        Self {
            command: None,
            args: Vec::new(),
            env: BTreeMap::new(),
            cwd: None,
            url: None,
            headers: BTreeMap::new(),
            transport: None,
            timeout: None,
            connect_timeout: None,
            tools: McpToolsConfig::default(),
            enabled: true,
            sandbox: None,
            approval: McpApproval::default(),
            shared: true,
        }
    }
}

impl McpServerConfig {
    /// The transport in use: the configured one, else from `command`/`url`.
    pub fn effective_transport(&self) -> McpTransport {
        self.transport.unwrap_or(if self.url.is_some() {
            McpTransport::Http
        } else {
            McpTransport::Stdio
        })
    }

    /// How the server is reached: `stdio: COMMAND ARGS` or `http: URL`.
    pub fn describe(&self) -> String {
        match (&self.command, &self.url) {
            (Some(command), _) => {
                let line = std::iter::once(command.as_str())
                    .chain(self.args.iter().map(String::as_str))
                    .collect::<Vec<_>>()
                    .join(" ");
                format!("stdio: {line}")
            }
            (None, Some(url)) => format!("http: {url}"),
            (None, None) => "(no command or url)".to_owned(),
        }
    }

    /// The per-call timeout.
    pub fn call_timeout(&self) -> Duration {
        self.timeout
            .map_or(DEFAULT_CALL_TIMEOUT, Duration::from_secs_f64)
    }

    /// The spawn/connect plus `initialize` timeout.
    pub fn connect_timeout(&self) -> Duration {
        self.connect_timeout
            .map_or(DEFAULT_CONNECT_TIMEOUT, Duration::from_secs_f64)
    }

    /// Whether the server runs in bubblewrap.
    pub fn sandboxed(&self) -> bool {
        self.sandbox == Some(McpSandbox::Bwrap)
    }

    /// Checks the entry named `name`; the message names the server.
    pub fn validate(&self, name: &str) -> Result<(), String> {
        check_name(name)?;
        let problem = |what: String| Err(format!("mcp_servers.{name}: {what}"));
        match (&self.command, &self.url) {
            (Some(_), Some(_)) => {
                return problem(
                    "both command and url are set: a server is either a local command (stdio) \
                     or a URL (streamable HTTP)"
                        .into(),
                );
            }
            (None, None) => {
                return problem(
                    "neither command (a stdio server) nor url (a streamable HTTP server) is set"
                        .into(),
                );
            }
            _ => {}
        }
        match (self.transport, &self.command) {
            (Some(McpTransport::Sse), _) => {
                return problem(
                    "transport sse (the legacy HTTP+SSE transport) is not supported: Talaria \
                     speaks streamable HTTP (transport: http) and stdio; most servers serve \
                     streamable HTTP at /mcp"
                        .into(),
                );
            }
            (Some(McpTransport::Http), Some(_)) => {
                return problem("transport http needs url, not command".into());
            }
            (Some(McpTransport::Stdio), None) => {
                return problem("transport stdio needs command, not url".into());
            }
            _ => {}
        }
        if let Some(command) = &self.command {
            if command.trim().is_empty() || command.contains('\0') {
                return problem("command is empty".into());
            }
            if !self.headers.is_empty() {
                return problem("headers apply to HTTP servers (url) only".into());
            }
            for (key, value) in &self.env {
                if key.is_empty() || key.contains(['=', '\0']) || value.contains('\0') {
                    return problem(format!("env: invalid variable name or value {key:?}"));
                }
            }
            if self.args.iter().any(|arg| arg.contains('\0')) {
                return problem("args: an argument holds a NUL character".into());
            }
        }
        if let Some(url) = &self.url {
            let lower = url.to_ascii_lowercase();
            let host = lower
                .strip_prefix("http://")
                .or_else(|| lower.strip_prefix("https://"));
            if host.is_none_or(|rest| rest.is_empty() || rest.starts_with('/')) {
                return problem(format!(
                    "url must be an http:// or https:// URL with a host, not {url:?}"
                ));
            }
            if !self.env.is_empty() || !self.args.is_empty() || self.cwd.is_some() {
                return problem("env, args and cwd apply to stdio servers (command) only".into());
            }
            if self.sandbox == Some(McpSandbox::Bwrap) {
                return problem("sandbox applies to stdio servers (command) only".into());
            }
            for (key, value) in &self.headers {
                let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
                if key.is_empty() || !key.chars().all(token) {
                    return problem(format!("headers: invalid header name {key:?}"));
                }
                if RESERVED_HEADERS.contains(&key.to_ascii_lowercase().as_str()) {
                    return problem(format!("headers: {key} is set by the MCP transport itself"));
                }
                if value.contains(['\r', '\n', '\0']) {
                    return problem(format!("headers: the value of {key} holds a line break"));
                }
            }
        }
        for (key, value) in [
            ("timeout", self.timeout),
            ("connect_timeout", self.connect_timeout),
        ] {
            if let Some(seconds) = value
                && !(seconds > 0.0 && seconds <= MAX_TIMEOUT_SECS)
            {
                return problem(format!(
                    "{key} must be a number of seconds above 0 and at most {MAX_TIMEOUT_SECS}, \
                     not {seconds}"
                ));
            }
        }
        let patterns = self.tools.include.iter().flatten();
        if patterns.chain(&self.tools.exclude).any(String::is_empty) {
            return problem("tools.include/exclude: an empty tool name".into());
        }
        Ok(())
    }

    /// Expands `${VAR}` in `command`, `args`, `env`, `cwd`, `url` and `headers`. Returns the
    /// first unset variable without a default.
    pub fn expand(&mut self, env: &EnvLayer) -> Result<(), String> {
        let expand = |value: &mut String| -> Result<(), String> {
            *value = crate::config::expand(value, env)?;
            Ok(())
        };
        for value in self
            .command
            .iter_mut()
            .chain(&mut self.cwd)
            .chain(&mut self.url)
        {
            expand(value)?;
        }
        for value in self.args.iter_mut() {
            expand(value)?;
        }
        for value in self.env.values_mut().chain(self.headers.values_mut()) {
            expand(value)?;
        }
        Ok(())
    }
}

/// A server name: letters, digits, `_` and `-`, at most [`MAX_SERVER_NAME`] characters.
pub fn check_name(name: &str) -> Result<(), String> {
    let valid = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if name.is_empty() || name.len() > MAX_SERVER_NAME || !valid {
        return Err(format!(
            "mcp_servers: invalid server name {name:?}: use 1 to {MAX_SERVER_NAME} letters, \
             digits, '_' or '-'"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::config::ConfigFile;

    fn parse(text: &str, pairs: &[(&str, &str)]) -> Result<ConfigFile, String> {
        ConfigFile::parse(
            text,
            Path::new("/h/config.yaml"),
            &EnvLayer::from_pairs(pairs),
        )
        .map_err(|e| e.to_string())
    }

    #[test]
    fn stdio_and_http_servers_parse_with_defaults_and_expansion() {
        let text = "mcp_servers:\n  fs:\n    command: npx\n    args: [-y, pkg, \"${ROOT}\"]\n    \
                    env: {GITHUB_TOKEN: \"${GH}\"}\n    cwd: /tmp\n    sandbox: bwrap\n  \
                    remote:\n    url: \"${BASE:-http://127.0.0.1:9}/mcp\"\n    \
                    headers: {Authorization: \"Bearer ${TOKEN}\"}\n    timeout: 30\n    \
                    connect_timeout: 2.5\n    enabled: false\n    \
                    tools: {include: [echo, \"get_*\"], resources: false}\n";
        let config = parse(text, &[("ROOT", "/srv"), ("GH", "ghp_x"), ("TOKEN", "t0k")]).unwrap();
        let fs = &config.mcp_servers["fs"];
        assert_eq!(fs.command.as_deref(), Some("npx"));
        assert_eq!(fs.args, ["-y", "pkg", "/srv"]);
        assert_eq!(fs.env["GITHUB_TOKEN"], "ghp_x");
        assert_eq!(fs.effective_transport(), McpTransport::Stdio);
        assert_eq!(fs.call_timeout(), DEFAULT_CALL_TIMEOUT);
        assert_eq!(fs.connect_timeout(), DEFAULT_CONNECT_TIMEOUT);
        assert!(fs.enabled && fs.sandboxed() && fs.tools.resources && fs.tools.prompts);
        let remote = &config.mcp_servers["remote"];
        assert_eq!(remote.url.as_deref(), Some("http://127.0.0.1:9/mcp"));
        assert_eq!(remote.headers["Authorization"], "Bearer t0k");
        assert_eq!(remote.effective_transport(), McpTransport::Http);
        assert_eq!(remote.call_timeout(), Duration::from_secs(30));
        assert_eq!(remote.connect_timeout(), Duration::from_millis(2500));
        assert!(!remote.enabled && !remote.tools.resources && remote.tools.prompts);
        assert!(remote.tools.allows("echo") && remote.tools.allows("get_sum"));
        assert!(!remote.tools.allows("delete"));
    }

    #[test]
    fn broken_servers_are_refused_naming_them() {
        let cases = [
            (
                "mcp_servers:\n  both:\n    command: x\n    url: http://h/mcp\n",
                "mcp_servers.both: both command and url",
            ),
            (
                "mcp_servers:\n  none:\n    args: [a]\n",
                "mcp_servers.none: neither command",
            ),
            (
                "mcp_servers:\n  old:\n    url: http://h/sse\n    transport: sse\n",
                "mcp_servers.old: transport sse (the legacy HTTP+SSE transport) is not supported",
            ),
            (
                "mcp_servers:\n  \"bad.name\":\n    command: x\n",
                "invalid server name \"bad.name\"",
            ),
            (
                "mcp_servers:\n  w:\n    url: ftp://h\n",
                "mcp_servers.w: url must be an http:// or https:// URL",
            ),
            (
                "mcp_servers:\n  w:\n    url: http://h\n    env: {A: b}\n",
                "env, args and cwd apply to stdio servers",
            ),
            (
                "mcp_servers:\n  w:\n    command: x\n    headers: {A: b}\n",
                "headers apply to HTTP servers",
            ),
            (
                "mcp_servers:\n  w:\n    url: http://h\n    headers: {Mcp-Session-Id: b}\n",
                "Mcp-Session-Id is set by the MCP transport",
            ),
            (
                "mcp_servers:\n  w:\n    command: x\n    timeout: 0\n",
                "timeout must be a number of seconds above 0",
            ),
            (
                "mcp_servers:\n  w:\n    command: x\n    transport: http\n",
                "transport http needs url",
            ),
            (
                "mcp_servers:\n  w:\n    command: x\n    sandbox: docker\n",
                "unknown variant `docker`",
            ),
            (
                "mcp_servers:\n  w:\n    command: x\n    tools: {includes: [a]}\n",
                "unknown field `includes`",
            ),
        ];
        for (text, expected) in cases {
            let error = parse(text, &[]).unwrap_err();
            assert!(error.starts_with("/h/config.yaml:"), "{error}");
            assert!(error.contains(expected), "{text}: {error}");
        }
    }

    #[test]
    fn errors_point_at_the_server_and_unset_variables() {
        let text = "model:\n  name: m\nmcp_servers:\n  ok:\n    command: x\n  both:\n    \
                    command: x\n    url: http://h\n";
        let error = parse(text, &[]).unwrap_err();
        assert!(
            error.starts_with("/h/config.yaml:6:3: mcp_servers.both"),
            "{error}"
        );
        let text = "mcp_servers:\n  gh:\n    command: x\n    env: {T: \"${GH_TOKEN}\"}\n";
        let error = parse(text, &[]).unwrap_err();
        assert!(
            error.starts_with("/h/config.yaml:4:15: environment variable GH_TOKEN is not set"),
            "{error}"
        );
    }

    #[test]
    fn include_wins_over_exclude_and_globs_match() {
        let tools = McpToolsConfig {
            include: Some(vec!["create_issue".into()]),
            exclude: vec!["create_issue".into(), "delete_issue".into()],
            ..McpToolsConfig::default()
        };
        assert!(tools.allows("create_issue") && !tools.allows("delete_issue"));
        let tools = McpToolsConfig {
            exclude: vec!["delete_*".into()],
            ..McpToolsConfig::default()
        };
        assert!(tools.allows("create_issue") && !tools.allows("delete_issue"));
        let none = McpToolsConfig {
            include: Some(Vec::new()),
            ..McpToolsConfig::default()
        };
        assert!(
            !none.allows("anything"),
            "include: [] offers no server tool"
        );
        for (pattern, name, expected) in [
            ("*", "", true),
            ("get_*", "get_sum", true),
            ("get_*", "xget_sum", false),
            ("*_radar_*", "a_radar_b", true),
            ("a?c", "abc", true),
            ("a?c", "ac", false),
            ("*a*b", "xaxxb", true),
            ("*a*b", "xaxxbc", false),
        ] {
            assert_eq!(glob_match(pattern, name), expected, "{pattern} {name}");
        }
    }

    #[test]
    fn servers_round_trip_through_yaml_without_defaults() {
        let text = "mcp_servers:\n  fs:\n    command: npx\n    args: [a]\n";
        let config = parse(text, &[]).unwrap();
        let yaml = config.to_yaml().unwrap();
        assert!(
            yaml.ends_with("mcp_servers:\n  fs:\n    command: npx\n    args:\n    - a\n"),
            "{yaml}"
        );
        assert_eq!(parse(&yaml, &[]).unwrap(), config);
    }
}
