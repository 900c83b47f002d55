//! Choosing the external memory provider and describing memory, for
//! `talaria memory` and `/memory`: the memory plugins found, the built-in
//! files, and `memory.provider` in config.yaml (read at the next session).

use std::path::Path;

use talaria_plugin_host::PluginKind;
use talaria_profile::{ConfigFile, EnvLayer, ProfileHome};

use crate::plugins::{FoundPlugin, TrustStore, discover};

/// The memory plugins found for the profile in `cwd`, in discovery order.
pub fn memory_plugins(home: &ProfileHome, cwd: &Path) -> Vec<FoundPlugin> {
    discover(home, cwd, &TrustStore::load(home))
        .plugins
        .into_iter()
        .filter(|found| found.manifest.provides.contains(&PluginKind::Memory))
        .collect()
}

/// Makes `name` the provider of the next sessions; refused when no memory
/// plugin of that name is found.
pub fn use_provider(
    home: &ProfileHome,
    env: &EnvLayer,
    cwd: &Path,
    name: &str,
) -> Result<String, String> {
    let found = memory_plugins(home, cwd);
    if !found.iter().any(|p| p.manifest.name == name) {
        let names: Vec<&str> = found.iter().map(|p| p.manifest.name.as_str()).collect();
        return Err(format!(
            "no memory provider plugin is named {name} (installed: {})",
            if names.is_empty() {
                "none".to_owned()
            } else {
                names.join(", ")
            }
        ));
    }
    talaria_profile::config_edit::set(&home.config_file(), "memory.provider", name, env)
        .map_err(|e| e.to_string())?;
    Ok(format!(
        "memory provider: {name} (from the next session on; the built-in memory stays)"
    ))
}

/// Uses no external provider from the next session on.
pub fn no_provider(
    home: &ProfileHome,
    env: &EnvLayer,
    config: &ConfigFile,
) -> Result<String, String> {
    if config.memory.provider.is_none() {
        return Ok("no external memory provider was in use".into());
    }
    talaria_profile::config_edit::remove(&home.config_file(), "memory.provider", env)
        .map_err(|e| e.to_string())?;
    Ok("no external memory provider (from the next session on)".into())
}

/// The built-in files and the configured provider, one line each.
pub fn status_lines(home: &ProfileHome, config: &ConfigFile, cwd: &Path) -> Vec<String> {
    let mut lines =
        vec!["Built-in memory (always on, a snapshot in each session's prompt):".to_owned()];
    for file in ["MEMORY.md", "USER.md"] {
        let path = home.memory_dir().join(file);
        let size = std::fs::metadata(&path).map_or(0, |m| m.len());
        lines.push(format!("  {} ({size} bytes)", path.display()));
    }
    let memory = &config.memory;
    match memory.active() {
        Some(name) => {
            let state = match memory_plugins(home, cwd)
                .into_iter()
                .find(|p| p.manifest.name == name)
            {
                Some(plugin) => format!(
                    "{} {} ({})",
                    plugin.manifest.name, plugin.manifest.version, plugin.source
                ),
                None => format!("{name}, but no memory plugin of that name is installed"),
            };
            lines.push(format!("External provider: {state}"));
            lines.push(format!(
                "Recall deadline: {} ms (memory.prefetch_timeout_ms)",
                memory.prefetch_timeout_ms
            ));
        }
        None => lines.push(
            "External provider: none (`talaria memory providers` lists them, `talaria memory use NAME` chooses one)"
                .into(),
        ),
    }
    lines
}

/// One line per memory plugin, the one in use marked `*`.
pub fn provider_lines(home: &ProfileHome, config: &ConfigFile, cwd: &Path) -> Vec<String> {
    let found = memory_plugins(home, cwd);
    if found.is_empty() {
        return vec!["No memory provider plugin is installed.".into()];
    }
    let active = config.memory.active();
    let mut lines: Vec<String> = found
        .iter()
        .map(|plugin| {
            let manifest = &plugin.manifest;
            let mark = if Some(manifest.name.as_str()) == active {
                "*"
            } else {
                " "
            };
            format!(
                "{mark} {} {} ({}): {}",
                manifest.name, manifest.version, plugin.source, manifest.description
            )
        })
        .collect();
    if active.is_some_and(|name| found.iter().any(|p| p.manifest.name == name)) {
        lines.push("* in use".into());
    }
    lines
}
