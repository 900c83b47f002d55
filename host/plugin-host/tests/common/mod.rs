//! Shared by the plugin host's integration tests: the guest plugins built from
//! the repository's sources (once per test binary), hosts in temp dirs, and
//! helpers for calls.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use talaria_plugin_host::{Grants, HostOptions, LoadedPlugin, PluginHost, PluginTools};
use tokio_util::sync::CancellationToken;

/// The repository root.
pub fn repo() -> PathBuf {
    // This crate sits at host/plugin-host.
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).to_path_buf()
}

/// `target/plugins`, where the guest plugins are built and packaged.
fn plugins_out() -> PathBuf {
    repo().join("target/plugins")
}

static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();

/// Builds the guest plugins once per test binary with `scripts/build-plugins`
/// and returns `target/plugins`.
fn built() -> &'static Path {
    let result = BUILT.get_or_init(|| {
        // Already built elsewhere (e.g. by CI before the tests): use as is.
        if let Some(dir) = std::env::var_os("TALARIA_PLUGINS_PREBUILT") {
            return Ok(PathBuf::from(dir));
        }
        let script = repo().join("scripts/build-plugins");
        let status = Command::new(&script)
            .current_dir(repo())
            .status()
            .map_err(|e| format!("running {}: {e}", script.display()))?;
        if !status.success() {
            return Err(format!("{} failed: {status}", script.display()));
        }
        Ok(plugins_out())
    });
    match result {
        Ok(dir) => dir,
        Err(e) => panic!("building the guest plugins: {e}"),
    }
}

/// The packaged directory of a plugin: `dist/fs`, `test/hostile`, `test/noop`.
pub fn plugin_dir(relative: &str) -> PathBuf {
    let dir = built().join(relative);
    assert!(
        dir.join("plugin.toml").is_file() && dir.join("plugin.wasm").is_file(),
        "{} is not a packaged plugin (plugin.toml + plugin.wasm)",
        dir.display()
    );
    dir
}

pub fn fs_dir() -> PathBuf {
    plugin_dir("dist/fs")
}

pub fn hostile_dir() -> PathBuf {
    plugin_dir("test/hostile")
}

pub fn noop_dir() -> PathBuf {
    plugin_dir("test/noop")
}

/// A copy of a packaged plugin whose manifest is rewritten by `edit`.
pub fn variant(source: &Path, into: &Path, edit: impl FnOnce(String) -> String) -> PathBuf {
    std::fs::create_dir_all(into).unwrap();
    std::fs::copy(source.join("plugin.wasm"), into.join("plugin.wasm")).unwrap();
    let manifest = std::fs::read_to_string(source.join("plugin.toml")).unwrap();
    std::fs::write(into.join("plugin.toml"), edit(manifest)).unwrap();
    into.to_path_buf()
}

/// Adds `line` to the `[capabilities]` table (creating it if needed).
pub fn with_capability(manifest: String, line: &str) -> String {
    let key = line.split('=').next().unwrap().trim();
    let mut out = String::new();
    let mut in_caps = false;
    let mut inserted = false;
    for l in manifest.lines() {
        let trimmed = l.trim();
        if trimmed.starts_with('[') {
            if in_caps && !inserted {
                out.push_str(line);
                out.push('\n');
                inserted = true;
            }
            in_caps = trimmed == "[capabilities]";
        }
        // Drop an existing setting of the same key.
        if in_caps && trimmed.split('=').next().map(str::trim) == Some(key) {
            continue;
        }
        out.push_str(l);
        out.push('\n');
        if trimmed == "[capabilities]" && !inserted {
            out.push_str(line);
            out.push('\n');
            inserted = true;
        }
    }
    if !inserted {
        out.push_str("\n[capabilities]\n");
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// A host with its cache and data dirs in `root`.
/// The names of a loaded plugin's tools, in its order.
pub fn tool_names(plugin: &LoadedPlugin) -> Vec<&str> {
    plugin
        .tools()
        .iter()
        .map(|t| t.spec.name.as_str())
        .collect()
}

pub fn host(root: &Path) -> PluginHost {
    PluginHost::new(HostOptions::new(root.join("cache"), root.join("data"))).unwrap()
}

/// A host with its data dir in `root` and a compile cache shared by the
/// tests (in cargo's target tmp dir), so each component is compiled once.
pub fn cached_host(root: &Path) -> PluginHost {
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("plugin-host-test-cache");
    PluginHost::new(HostOptions::new(cache, root.join("data"))).unwrap()
}

/// Loads `dir` with everything its manifest requests granted.
pub async fn load_all(host: &PluginHost, dir: &Path) -> LoadedPlugin {
    let manifest = talaria_plugin_host::Manifest::load(&dir.join("plugin.toml")).unwrap();
    host.load(dir, &Grants::all_requested(&manifest))
        .await
        .unwrap()
}

/// The outcome of one call as the model would see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub content: String,
    pub is_error: bool,
}

/// Calls `tool` through the dispatcher with JSON arguments.
pub async fn call(
    tools: &PluginTools,
    session: &str,
    tool: &str,
    args: serde_json::Value,
) -> Outcome {
    use talaria_kernel::{ToolCall, ToolContext, ValidatedCall};
    use talaria_tools::ToolSource;
    let call = ValidatedCall {
        call: ToolCall {
            id: format!("call-{tool}"),
            name: tool.to_owned(),
            arguments: args.to_string(),
        },
        arguments: args,
    };
    let context = ToolContext {
        session_id: session.to_owned(),
    };
    let result = ToolSource::call(tools, &call, &context, &CancellationToken::new()).await;
    assert_eq!(result.call_id, call.call.id);
    Outcome {
        content: result.content,
        is_error: result.is_error,
    }
}

pub fn hooks_probe_dir() -> PathBuf {
    plugin_dir("test/hooks-probe")
}

/// A copy of `hooks-probe` named `name` with `[config]` values replaced.
pub fn probe_variant(into: &Path, name: &str, config: &[(&str, &str)]) -> PathBuf {
    variant(&hooks_probe_dir(), &into.join(name), |manifest| {
        manifest
            .lines()
            .map(|line| {
                if line.starts_with("name = ") {
                    return format!("name = \"{name}\"");
                }
                let key = line.split('=').next().unwrap_or("").trim();
                match config.iter().find(|(k, _)| *k == key) {
                    Some((k, v)) if *k == "priority" => format!("{k} = {v}"),
                    Some((k, v)) => format!("{k} = \"{v}\""),
                    None => line.to_owned(),
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
    })
}

pub fn memory_probe_dir() -> PathBuf {
    plugin_dir("test/memory-probe")
}

pub fn platform_probe_dir() -> PathBuf {
    plugin_dir("test/platform-probe")
}

pub fn commands_probe_dir() -> PathBuf {
    plugin_dir("test/commands-probe")
}

static PROBES: OnceLock<Result<(), String>> = OnceLock::new();

/// The packaged probe of a runtime other than components
/// (`test/extism-probe`, `test/extism-probe-wasi`, `test/native-probe`),
/// built once per test binary with `scripts/build-probes` (quick when cached).
pub fn probe_dir(relative: &str) -> PathBuf {
    let result = PROBES.get_or_init(|| {
        if std::env::var_os("TALARIA_PLUGINS_PREBUILT").is_some() {
            return Ok(());
        }
        let script = repo().join("scripts/build-probes");
        let output = Command::new(&script)
            .current_dir(repo())
            .output()
            .map_err(|e| format!("running {}: {e}", script.display()))?;
        if output.status.success() {
            Ok(())
        } else {
            Err(format!(
                "{} failed: {}\n{}",
                script.display(),
                output.status,
                String::from_utf8_lossy(&output.stderr)
            ))
        }
    });
    if let Err(e) = result {
        panic!("building the probes: {e}");
    }
    let root = std::env::var_os("TALARIA_PLUGINS_PREBUILT").map_or_else(plugins_out, PathBuf::from);
    root.join(relative)
}

/// A copy of a packaged probe (every file) whose manifest is rewritten by `edit`.
pub fn probe_variant_of(
    source: &Path,
    into: &Path,
    edit: impl FnOnce(String) -> String,
) -> PathBuf {
    std::fs::create_dir_all(into).unwrap();
    for entry in std::fs::read_dir(source).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), into.join(entry.file_name())).unwrap();
    }
    let manifest = std::fs::read_to_string(source.join("plugin.toml")).unwrap();
    std::fs::write(into.join("plugin.toml"), edit(manifest)).unwrap();
    into.to_path_buf()
}

pub fn memory_recorder_dir() -> PathBuf {
    plugin_dir("test/memory-recorder")
}
