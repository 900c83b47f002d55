//! `talaria plugin list|info|grant|revoke|trust`: what is installed, what it
//! may do, and the user's decisions about it. `list --outdated` and the index
//! half of `info` come from `plugin_registry`.

use std::path::{Path, PathBuf};

use talaria_agent::grants::{GrantStore, describe};
use talaria_agent::plugins::{
    FoundPlugin, PluginSource, TrustStore, UnreadablePackage, discover, refusal,
};
use talaria_plugin_host::{Grants, Manifest, PluginHost, Runtime};
use talaria_profile::ProfileHome;
use talaria_registry::Lockfile;

use crate::args::InstalledCommand;
use crate::exit::{Status, usage_error};
use crate::plugin_registry::{self, Listing};

/// No usable plugin of the name asked for.
struct Missing {
    /// The names of the plugins found.
    known: String,
    /// A package of that directory name whose manifest cannot be used.
    unreadable: Option<UnreadablePackage>,
}

/// The plugin named `name` among those found, or what was found instead.
fn lookup(home: &ProfileHome, cwd: &Path, name: &str) -> Result<FoundPlugin, Missing> {
    let discovery = discover(home, cwd, &TrustStore::load(home));
    let names: Vec<String> = discovery
        .plugins
        .iter()
        .map(|p| p.manifest.name.clone())
        .collect();
    let unreadable = discovery
        .unreadable
        .into_iter()
        .find(|package| package.dir.file_name().is_some_and(|dir| dir == name));
    discovery
        .plugins
        .into_iter()
        .find(|p| p.manifest.name == name)
        .ok_or_else(|| Missing {
            known: list_or_none(names),
            unreadable,
        })
}

fn found(home: &ProfileHome, cwd: &Path, name: &str) -> Result<FoundPlugin, Status> {
    lookup(home, cwd, name).map_err(|missing| {
        usage_error(&format!(
            "no plugin named '{name}' (installed: {})",
            missing.known
        ))
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

/// Runs `plugin list|info|grant|revoke|trust`.
pub async fn run(command: InstalledCommand, home: &ProfileHome) -> Status {
    let cwd = match std::env::current_dir() {
        Ok(cwd) => cwd,
        Err(error) => return usage_error(&format!("cannot read the working directory: {error}")),
    };
    let store = match GrantStore::load(home) {
        Ok(store) => store,
        Err(error) => return usage_error(&error.to_string()),
    };
    match command {
        InstalledCommand::List { outdated: true } => plugin_registry::outdated(home).await,
        InstalledCommand::List { outdated: false } => list(home, &cwd, &store),
        InstalledCommand::Info { name, index } => {
            info(home, &cwd, &store, &name, index.as_deref()).await
        }
        InstalledCommand::Grant { name, capability } => {
            change(store, home, &cwd, &name, &capability, true)
        }
        InstalledCommand::Revoke { name, capability } => {
            change(store, home, &cwd, &name, &capability, false)
        }
        InstalledCommand::Trust { dir } => {
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

/// `plugin list`: every plugin found, and for those in the profile's
/// directory how they got there (the lockfile).
fn list(home: &ProfileHome, cwd: &Path, store: &GrantStore) -> Status {
    let discovery = discover(home, cwd, &TrustStore::load(home));
    for notice in &discovery.notices {
        eprintln!("note: {notice}");
    }
    // Without a readable lockfile the origins are unknown, not "by hand".
    let lockfile = Lockfile::load(&home.plugin_lockfile())
        .inspect_err(|error| eprintln!("warning: {error}"))
        .ok();
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
        if plugin.source == PluginSource::User
            && let Some(lockfile) = &lockfile
        {
            let origin = plugin_registry::origin(lockfile.get(&m.name));
            println!("    installed: {origin}");
        }
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
    if !discovery
        .plugins
        .iter()
        .any(|p| p.source == PluginSource::User)
    {
        println!(
            "No plugins installed in {}; `talaria plugin install NAME` adds one from an index.",
            home.plugins_dir().display()
        );
    }
    Status::Answered
}

/// `plugin info NAME`: the plugin as found here, then as the indexes list
/// it. Either half may be missing (said in one line); only a name neither
/// knows is an error.
async fn info(
    home: &ProfileHome,
    cwd: &Path,
    store: &GrantStore,
    name: &str,
    only_index: Option<&str>,
) -> Status {
    let listing = plugin_registry::listing(home, name, only_index).await;
    let plugin = match lookup(home, cwd, name) {
        Ok(plugin) => plugin,
        Err(Missing {
            unreadable: Some(package),
            ..
        }) => {
            // An unknown kind, a runtime this build lacks, a bad key: the
            // manifest's own error, with its line and key.
            println!(
                "{name}: the package in {} cannot be used",
                package.dir.display()
            );
            println!("status:    does not load: {}", package.error);
            return Status::Failed;
        }
        Err(Missing { known, .. }) => {
            let missing = format!("no plugin named '{name}' (installed: {known})");
            return match listing {
                Listing::Listed(text) => {
                    println!("{name} is not installed here (installed: {known}).");
                    print!("{text}");
                    Status::Answered
                }
                Listing::NoIndex => {
                    usage_error(&format!("{missing}, and no plugin index is configured"))
                }
                Listing::NotListed => {
                    usage_error(&format!("{missing}, and no configured index lists it"))
                }
                Listing::Unavailable(failure) => {
                    eprintln!("error: {missing}");
                    plugin_registry::fail(failure)
                }
            };
        }
    };
    let status = show_found(home, store, &plugin).await;
    println!();
    match listing {
        Listing::Listed(text) => print!("{text}"),
        Listing::NoIndex => {
            println!("indexes:   none configured (`talaria plugin index add NAME URL` adds one)")
        }
        Listing::NotListed => println!("indexes:   no configured index lists {name}"),
        Listing::Unavailable(failure) => {
            println!("indexes:   unavailable: {}", failure.message())
        }
    }
    status
}

/// The found half of `plugin info`: manifest, grants, and whether it loads
/// (loading it to list its tools, hooks, commands, skins and memory role).
async fn show_found(home: &ProfileHome, store: &GrantStore, plugin: &FoundPlugin) -> Status {
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
    if let Some(refusal) = refusal(plugin) {
        println!("status:    does not load: {refusal}");
        return Status::Failed;
    }
    let options = talaria_agent::plugin_compile::cache_options(home)
        .with_compile_observer(std::sync::Arc::new(crate::plugin_compile::CompileProgress));
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
            for kind in loaded.kind_statuses() {
                println!("kind:      {kind}");
            }
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
            for command in loaded.commands() {
                println!("  command /{:<15} {}", command.name, command.description);
            }
            for skin in loaded.skins() {
                println!("  skin {}", skin.name);
            }
            if loaded.serves(talaria_plugin_host::PluginKind::Memory) {
                let active = talaria_profile::load_profile(home)
                    .ok()
                    .and_then(|(_, config)| config.memory.active().map(str::to_owned));
                println!(
                    "  memory provider, {}",
                    if active.as_deref() == Some(loaded.name()) {
                        "in use (memory.provider)".to_owned()
                    } else {
                        format!("not in use (talaria memory use {})", loaded.name())
                    }
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
