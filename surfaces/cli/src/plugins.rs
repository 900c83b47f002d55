//! `talaria plugins …`: what is installed, what it may do, and the user's
//! decisions about it.

use std::path::{Path, PathBuf};

use talaria_agent::grants::{GrantStore, describe};
use talaria_agent::plugins::{FoundPlugin, TrustStore, discover, refusal};
use talaria_plugin_host::{Grants, HostOptions, Manifest, PluginHost, Runtime};
use talaria_profile::ProfileHome;

use crate::args::PluginsCommand;
use crate::exit::{Status, usage_error};

fn found(home: &ProfileHome, cwd: &Path, name: &str) -> Result<FoundPlugin, Status> {
    let discovery = discover(home, cwd, &TrustStore::load(home));
    let names: Vec<String> = discovery
        .plugins
        .iter()
        .map(|p| p.manifest.name.clone())
        .collect();
    discovery
        .plugins
        .into_iter()
        .find(|p| p.manifest.name == name)
        .ok_or_else(|| {
            let known = list_or_none(names);
            usage_error(&format!("no plugin named '{name}' (installed: {known})"))
        })
}

fn list_or_none(items: Vec<String>) -> String {
    if items.is_empty() {
        "none".to_owned()
    } else {
        items.join(", ")
    }
}

/// What runs the plugin, when it is not a sandboxed component; native code
/// is flagged as unsandboxed wherever plugins are listed.
fn runtime_line(manifest: &Manifest) -> Option<String> {
    match manifest.runtime {
        Runtime::Component => None,
        Runtime::Extism => Some("extism (sandboxed WebAssembly module)".into()),
        Runtime::Native => Some(
            "native: UNSANDBOXED native code, runs with your privileges; \
             loads only with the trust-native grant"
                .into(),
        ),
    }
}

fn change(
    mut store: GrantStore,
    home: &ProfileHome,
    cwd: &Path,
    name: &str,
    capability: &str,
    allow: bool,
) -> Status {
    let plugin = match found(home, cwd, name) {
        Ok(plugin) => plugin,
        Err(status) => return status,
    };
    match store.change(&plugin.manifest, &plugin.grant_source, capability, allow) {
        Ok(grants) => {
            if allow && capability == "trust-native" {
                println!(
                    "warning: {name} is native code: it runs unsandboxed, with your privileges, \
                     and no capability limits what it does"
                );
            }
            println!("{name} is granted: {}", list_or_none(describe(&grants)));
            println!("(applies from the next session)");
            Status::Answered
        }
        Err(error) => usage_error(&error.to_string()),
    }
}

/// Runs a `plugins` subcommand.
pub async fn run(command: PluginsCommand, home: &ProfileHome) -> Status {
    let cwd = match std::env::current_dir() {
        Ok(cwd) => cwd,
        Err(error) => return usage_error(&format!("cannot read the working directory: {error}")),
    };
    let store = match GrantStore::load(home) {
        Ok(store) => store,
        Err(error) => return usage_error(&error.to_string()),
    };
    match command {
        PluginsCommand::List => {
            let discovery = discover(home, &cwd, &TrustStore::load(home));
            for notice in &discovery.notices {
                eprintln!("note: {notice}");
            }
            if discovery.plugins.is_empty() {
                println!(
                    "No plugins installed. Install them under {}.",
                    home.plugins_dir().display()
                );
            }
            for plugin in &discovery.plugins {
                let m = &plugin.manifest;
                let kinds: Vec<&str> = m.provides.iter().map(|k| k.as_str()).collect();
                let granted = store.grants_for(m, &plugin.grant_source);
                println!(
                    "{} {} [{}] ({})",
                    m.name,
                    m.version,
                    kinds.join(", "),
                    plugin.source
                );
                println!("    dir:       {}", plugin.dir.display());
                if let Some(runtime) = runtime_line(m) {
                    println!("    runtime:   {runtime}");
                }
                if let Some(refusal) = refusal(plugin) {
                    println!("    note:      {refusal}");
                }
                println!(
                    "    requests:  {}",
                    list_or_none(describe(&Grants::all_requested(m)))
                );
                println!("    granted:   {}", list_or_none(describe(&granted)));
            }
            Status::Answered
        }
        PluginsCommand::Info { name } => {
            let plugin = match found(home, &cwd, &name) {
                Ok(plugin) => plugin,
                Err(status) => return status,
            };
            let m = &plugin.manifest;
            let grants = store.grants_for(m, &plugin.grant_source);
            println!("{} {} — {}", m.name, m.version, m.description);
            println!("source:    {} ({})", plugin.source, plugin.dir.display());
            println!("api:       talaria:plugin@{}", m.api);
            if let Some(runtime) = runtime_line(m) {
                println!("runtime:   {runtime}");
            }
            println!(
                "requests:  {}",
                list_or_none(describe(&Grants::all_requested(m)))
            );
            println!("granted:   {}", list_or_none(describe(&grants)));
            println!(
                "limits:    {} MiB memory, {} ms per call",
                m.limits.memory_mb, m.limits.timeout_ms
            );
            if let Some(refusal) = refusal(&plugin) {
                println!("status:    does not load: {refusal}");
                return Status::Failed;
            }
            let options = HostOptions::new(home.plugin_cache_dir(), home.plugin_data_dir())
                .with_cache_key_file(home.plugin_cache_key_file())
                .with_prebuilt_dirs(talaria_agent::plugins::prebuilt_dirs());
            let host = match PluginHost::new(options) {
                Ok(host) => host,
                Err(error) => return usage_error(&error.to_string()),
            };
            match host.load(&plugin.dir, &grants).await {
                Ok(loaded) => {
                    println!(
                        "status:    loads{}",
                        if loaded.from_cache() {
                            " (compiled, cached)"
                        } else {
                            ""
                        }
                    );
                    for tool in loaded.tools() {
                        let summary = tool.spec.description.lines().next().unwrap_or_default();
                        println!("  tool {:<16} {summary}", tool.spec.name);
                    }
                    for hook in loaded.hook_subscriptions() {
                        println!(
                            "  hook {:<16} priority {}",
                            hook.event.as_str(),
                            hook.priority
                        );
                    }
                    Status::Answered
                }
                Err(error) => {
                    println!("status:    does not load: {error}");
                    Status::Failed
                }
            }
        }
        PluginsCommand::Grant { name, capability } => {
            change(store, home, &cwd, &name, &capability, true)
        }
        PluginsCommand::Revoke { name, capability } => {
            change(store, home, &cwd, &name, &capability, false)
        }
        PluginsCommand::Trust { dir } => {
            let dir: PathBuf = dir.unwrap_or(cwd);
            let mut trust = TrustStore::load(home);
            match trust.trust(&dir) {
                Ok(dir) => {
                    println!(
                        "Trusted {}: plugins in {} will load.",
                        dir.display(),
                        dir.join(".talaria/plugins").display()
                    );
                    Status::Answered
                }
                Err(error) => usage_error(&format!("cannot trust {}: {error}", dir.display())),
            }
        }
    }
}
