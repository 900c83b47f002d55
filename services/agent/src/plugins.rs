//! Finds plugin packages: the distribution's package dirs, then the profile's
//! `plugins/`, then the working directory's `.talaria/plugins` when the user
//! trusts that directory. A later package overrides an earlier one of the same
//! name, and every override is reported.

use std::fmt;
use std::path::{Path, PathBuf};

use talaria_plugin_host::Manifest;
use talaria_profile::ConfigFile;
use talaria_profile::home::ProfileHome;

/// Where a package was found; decides its default trust.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PluginSource {
    /// Shipped with Talaria: granted what its manifest requests unless revoked.
    Distribution,
    /// Installed in the profile: granted only what the user granted.
    User,
    /// From a trusted project directory: granted only what the user granted.
    Project,
}

impl fmt::Display for PluginSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PluginSource::Distribution => "distribution",
            PluginSource::User => "user",
            PluginSource::Project => "project",
        })
    }
}

/// Why `found` may not be loaded at all, whatever is granted: native code
/// loads only from the user's own plugin directory, never from the
/// distribution's or a project's.
pub fn refusal(found: &FoundPlugin) -> Option<String> {
    (found.manifest.runtime == talaria_plugin_host::Runtime::Native
        && found.source != PluginSource::User)
        .then(|| {
            format!(
                "plugin {} not loaded: native plugins load only from your own plugin directory \
                 ($TALARIA_HOME/plugins), never from {} plugin directories",
                found.manifest.name, found.source
            )
        })
}

/// One package that will be loaded.
#[derive(Debug, Clone)]
pub struct FoundPlugin {
    /// Its manifest.
    pub manifest: Manifest,
    /// The package directory.
    pub dir: PathBuf,
    /// Where it was found.
    pub source: PluginSource,
    /// What its grants are bound to (with its name): the distribution, the
    /// profile's directory or the index it was installed from, or the trusted
    /// project's directory.
    pub grant_source: crate::grants::GrantSource,
}

/// The result of discovery: the winners by name, and what to tell the user.
#[derive(Debug, Default)]
pub struct Discovery {
    /// Packages to load, in discovery order.
    pub plugins: Vec<FoundPlugin>,
    /// Overrides, skipped packages and untrusted project dirs, one line each.
    pub notices: Vec<String>,
    /// Packages whose manifest cannot be used (also in `notices`), so that
    /// `talaria plugin info` can say why a plugin is missing.
    pub unreadable: Vec<UnreadablePackage>,
}

/// A package directory whose `plugin.toml` cannot be used.
#[derive(Debug, Clone)]
pub struct UnreadablePackage {
    /// The package directory.
    pub dir: PathBuf,
    /// Why (the manifest error, with file, line and key).
    pub error: String,
}

/// The distribution's package directories, next to the executable: `plugins/`
/// of an unpacked distribution, `share/talaria/plugins` of an installed one, and
/// the build output of a development checkout (`target/plugins/dist`).
pub fn distribution_dirs() -> Vec<PathBuf> {
    let Some(exe_dir) = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(Path::to_path_buf))
    else {
        return Vec::new();
    };
    vec![
        exe_dir.join("plugins"),
        exe_dir.join("../share/talaria/plugins"),
        exe_dir.join("../plugins/dist"),
    ]
}

/// Where a distribution keeps its ahead-of-time compiled plugins
/// (`plugins/.compiled`, written by `talaria dist build`).
pub fn prebuilt_dirs() -> Vec<PathBuf> {
    distribution_dirs()
        .into_iter()
        .map(|dir| dir.join(PREBUILT_DIR))
        .filter(|dir| dir.is_dir())
        .collect()
}

/// The ed25519 public key (base64) of the distribution this binary was built for: `talaria
/// dist build` sets `TALARIA_DIST_KEY` when it compiles the binary, and the plugins it compiled
/// then load only when their digest list is signed with that key. Unset in other builds.
pub const DISTRIBUTION_KEY: Option<&str> = option_env!("TALARIA_DIST_KEY");

/// The directory name of compiled components inside a distribution's plugin dir.
pub const PREBUILT_DIR: &str = ".compiled";

/// The directories searched, in order, with their source.
pub fn search_path(
    home: &ProfileHome,
    cwd: &Path,
    trust: &TrustStore,
) -> (Vec<(PathBuf, PluginSource)>, Vec<String>) {
    let mut dirs: Vec<(PathBuf, PluginSource)> = distribution_dirs()
        .into_iter()
        .map(|dir| (dir, PluginSource::Distribution))
        .collect();
    dirs.push((home.plugins_dir(), PluginSource::User));
    let mut notices = Vec::new();
    let project = cwd.join(".talaria").join("plugins");
    if project.is_dir() {
        if trust.is_trusted(cwd) {
            dirs.push((project, PluginSource::Project));
        } else {
            notices.push(format!(
                "ignoring the plugins in {}: the directory is not trusted (run `talaria plugin trust` there to allow them)",
                project.display()
            ));
        }
    }
    (dirs, notices)
}

/// Finds every package on the search path.
pub fn discover(home: &ProfileHome, cwd: &Path, trust: &TrustStore) -> Discovery {
    let (dirs, notices) = search_path(home, cwd, trust);
    let mut discovery = Discovery {
        plugins: Vec::new(),
        notices,
        unreadable: Vec::new(),
    };
    let users = crate::grants::UserSources::load(home);
    // A project's grants are bound to its canonical path (as it is trusted).
    let project = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
    for (dir, source) in dirs {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut packages: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|path| path.join("plugin.toml").is_file())
            .collect();
        packages.sort();
        for package in packages {
            let manifest = match talaria_plugin_host::read_manifest(&package.join("plugin.toml")) {
                Ok(manifest) => manifest,
                Err(error) => {
                    discovery.notices.push(format!("skipping plugin: {error}"));
                    discovery.unreadable.push(UnreadablePackage {
                        dir: package,
                        error: error.to_string(),
                    });
                    continue;
                }
            };
            let grant_source = match source {
                PluginSource::Distribution => crate::grants::GrantSource::Distribution,
                PluginSource::User => users.source_of(&manifest.name),
                PluginSource::Project => crate::grants::GrantSource::Project(project.clone()),
            };
            let found = FoundPlugin {
                manifest,
                dir: package,
                source,
                grant_source,
            };
            match discovery
                .plugins
                .iter_mut()
                .find(|p| p.manifest.name == found.manifest.name)
            {
                Some(earlier) => {
                    discovery.notices.push(format!(
                        "plugin {} from {} ({}) overrides the one from {} ({})",
                        found.manifest.name,
                        found.dir.display(),
                        found.source,
                        earlier.dir.display(),
                        earlier.source
                    ));
                    *earlier = found;
                }
                None => discovery.plugins.push(found),
            }
        }
    }
    discovery
}

/// Project directories whose `.talaria/plugins` the user trusts, one canonical
/// path per line in `$TALARIA_HOME/trusted-dirs`.
#[derive(Debug, Default, Clone)]
pub struct TrustStore {
    path: PathBuf,
    dirs: Vec<PathBuf>,
}

impl TrustStore {
    /// Reads the store; a missing file trusts nothing.
    pub fn load(home: &ProfileHome) -> Self {
        let path = home.root().join("trusted-dirs");
        let dirs = std::fs::read_to_string(&path)
            .unwrap_or_default()
            .lines()
            .map(str::trim)
            .filter(|line| !line.is_empty() && !line.starts_with('#'))
            .map(PathBuf::from)
            .collect();
        Self { path, dirs }
    }

    /// Whether `dir` (canonicalised) is trusted.
    pub fn is_trusted(&self, dir: &Path) -> bool {
        dir.canonicalize().is_ok_and(|dir| self.dirs.contains(&dir))
    }

    /// Trusts `dir` from now on and saves the store.
    pub fn trust(&mut self, dir: &Path) -> std::io::Result<PathBuf> {
        let dir = dir.canonicalize()?;
        if !self.dirs.contains(&dir) {
            self.dirs.push(dir.clone());
            let text: String = self
                .dirs
                .iter()
                .map(|d| format!("{}\n", d.display()))
                .collect();
            if let Some(parent) = self.path.parent() {
                std::fs::create_dir_all(parent)?;
            }
            let temp = self.path.with_extension("tmp");
            std::fs::write(&temp, text)?;
            std::fs::rename(&temp, &self.path)?;
        }
        Ok(dir)
    }
}

/// The plugins of a session, by the port they serve.
#[derive(Debug, Default)]
pub struct SessionPlugins {
    /// The tool plugins' dispatcher, when any loaded.
    pub tools: Option<talaria_plugin_host::PluginTools>,
    /// The hooks plugins, when any loaded.
    pub hooks: Option<talaria_plugin_host::PluginHooks>,
    /// The plugins' slash commands, when any loaded plugin has commands. A
    /// name another plugin already answers to is dropped (with a notice).
    pub commands: Option<talaria_plugin_host::PluginCommands>,
    /// The plugins' skins (from skin components and packages' `skins/*.yaml`),
    /// in load order; a name an earlier plugin provides is dropped (with a
    /// notice). Not validated: the surface applying one does that.
    pub skins: Vec<talaria_plugin_host::PluginSkin>,
    /// The memory providers, when any loaded. Sessions do not call them yet
    /// (a notice says so).
    pub memory: Option<talaria_plugin_host::PluginMemoryProviders>,
    /// The platform adapters, when any loaded, one per platform. Nothing
    /// calls them yet (a notice says so).
    pub platforms: Option<talaria_plugin_host::PluginPlatformAdapters>,
    /// The chat adapters, when any loaded, one per platform: the gateway
    /// opens them.
    pub chats: Option<talaria_plugin_host::PluginChatAdapters>,
    /// The directories the plugin providing `read_file` may read (its filesystem grants,
    /// resolved): the places `vision_analyze` takes local images from too. Empty when no
    /// loaded plugin provides it.
    pub file_roots: Vec<PathBuf>,
    /// Every plugin found, loaded or not, with what became of each kind it
    /// declares, in discovery order.
    pub statuses: Vec<PluginStatus>,
    /// What the user should know: overrides, plugins left out and why, kinds
    /// loaded but not used yet.
    pub notices: Vec<String>,
}

/// One plugin found for a session, with what became of each of its kinds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginStatus {
    /// The plugin's name.
    pub name: String,
    /// Where it was found.
    pub source: PluginSource,
    /// Each kind it declares (or its component serves), with its status.
    pub kinds: Vec<talaria_plugin_host::KindStatus>,
}

/// What a session lends its plugins beyond their grants (each only to the
/// plugins granted the matching capability).
#[derive(Default)]
pub struct PluginServices {
    /// Past sessions, for `session-search`.
    pub sessions: Option<std::sync::Arc<dyn talaria_plugin_host::SessionSearch>>,
    /// The editor the session runs in, for `editor`.
    pub editor: Option<std::sync::Arc<dyn talaria_plugin_host::Editor>>,
    /// The auxiliary model, for `auxiliary-model`.
    pub auxiliary: Option<std::sync::Arc<dyn talaria_plugin_host::AuxiliaryModel>>,
    /// Say that a plugin is being compiled among the notices, not on stderr
    /// (the REPL has drawn its prompt there).
    pub defer_compile_notices: bool,
    /// Load for a session: only the plugins it can use ([`crate::plugin_needs`]); otherwise
    /// (commands listing or managing plugins, the gateway's adapters) every one found.
    pub for_session: bool,
}

/// Discovers, grants and loads every plugin for a session in `cwd` on
/// `surface`, and builds the set of each kind (tools, hooks, commands, skins,
/// memory providers, platform adapters). Nothing here stops the agent from
/// starting: a plugin that fails to load is left out and reported in the
/// notices, and so is a kind this build cannot serve.
pub async fn load_plugins(
    home: &ProfileHome,
    config: &ConfigFile,
    cwd: &Path,
    surface: &str,
    exec: talaria_plugin_host::ExecServices,
    services: PluginServices,
) -> SessionPlugins {
    use talaria_plugin_host::{
        Grants, KindState, KindStatus, LoadedPlugin, PluginHost, PluginSets, PluginSkins,
    };

    let discovery = discover(home, cwd, &TrustStore::load(home));
    let mut session = SessionPlugins {
        notices: discovery.notices,
        ..SessionPlugins::default()
    };
    let needs = crate::plugin_needs::SessionNeeds::new(config, surface);
    let mut found = Vec::new();
    for plugin in discovery.plugins {
        match needs.unneeded(&plugin).filter(|_| services.for_session) {
            Some(reason) => session.statuses.push(PluginStatus {
                name: plugin.manifest.name.clone(),
                source: plugin.source,
                kinds: crate::plugin_needs::SessionNeeds::statuses(&plugin, &reason),
            }),
            None => found.push(plugin),
        }
    }
    let notices = &mut session.notices;
    let found = &found;
    if found.is_empty() {
        return session;
    }
    // A grant file we cannot read must not widen anything: grant nothing then.
    let store = crate::grants::GrantStore::load(home)
        .map_err(|error| {
            notices.push(format!(
                "{error}; plugins get no capabilities until it is fixed"
            ))
        })
        .ok();
    // Secrets plugins name come from the environment, then the profile's
    // `.env`; an unreadable `.env` only leaves its secrets unset.
    let env = talaria_profile::EnvLayer::load(&home.env_file()).unwrap_or_else(|error| {
        notices.push(format!("plugins get no secrets from .env: {error}"));
        talaria_profile::EnvLayer::default()
    });
    let compiling = std::sync::Arc::new(if services.defer_compile_notices {
        crate::plugin_compile::CompilingNotice::deferred()
    } else {
        crate::plugin_compile::CompilingNotice::default()
    });
    let mut options = crate::plugin_compile::cache_options(home)
        .deferring_code(true)
        .with_compile_observer(compiling.clone())
        .with_log_file(home.plugin_log_file())
        .with_exec(exec)
        .allowing_private_urls(config.security.allow_private_urls)
        .with_secrets(std::sync::Arc::new(EnvSecrets(env.clone())));
    if let Some(sessions) = services.sessions {
        options = options.with_session_search(sessions);
    }
    if let Some(editor) = services.editor {
        options = options.with_editor(editor);
    }
    if let Some(auxiliary) = services.auxiliary {
        options = options.with_auxiliary(auxiliary);
    }
    let host = match PluginHost::new(options) {
        Ok(host) => host,
        Err(error) => {
            notices.push(format!("plugins are unavailable: {error}"));
            return session;
        }
    };
    // Loaded side by side (reading, verifying and deserialising compiled
    // components is most of a warm start), then taken in discovery order so
    // the first plugin keeps a clashing name whichever finished first.
    let attempts = futures_util::future::join_all(found.iter().map(|found| {
        let host = &host;
        let grants = store.as_ref().map_or_else(Grants::none, |store| {
            store.grants_for(&found.manifest, &found.grant_source)
        });
        let settings = plugin_settings(config, &env, found);
        async move {
            match refusal(found) {
                Some(refusal) => Err(refusal),
                None => host
                    .load_configured(&found.dir, &grants, &settings)
                    .await
                    .map_err(|error| format!("plugin {} not loaded: {error}", found.manifest.name)),
            }
        }
    }))
    .await;
    notices.extend(compiling.take());
    let mut loaded: Vec<LoadedPlugin> = Vec::new();
    for (found, attempt) in found.iter().zip(attempts) {
        let kinds = match attempt {
            Ok(plugin) => {
                let kinds = plugin.kind_statuses();
                for status in &kinds {
                    if let KindState::Unsupported { .. } = status.state {
                        notices.push(format!("plugin {}: {status}", plugin.name()));
                    }
                }
                loaded.push(plugin);
                kinds
            }
            Err(reason) => {
                let kinds = KindStatus::not_loaded(&found.manifest, &reason);
                notices.push(reason);
                kinds
            }
        };
        session.statuses.push(PluginStatus {
            name: found.manifest.name.clone(),
            source: found.source,
            kinds,
        });
    }
    session.file_roots = file_roots(&loaded, cwd);
    let sets = PluginSets::choosing(&loaded, cwd, surface, &config.tools.providers);
    notices.extend(sets.notices);
    session.tools = sets.tools;
    session.hooks = sets.hooks;
    session.commands = sets.commands;
    session.skins = sets.skins.map(PluginSkins::into_skins).unwrap_or_default();
    session.memory = sets.memory;
    session.platforms = sets.platforms;
    session.chats = sets.chats;
    session
}

/// The resolved filesystem grants of the plugins providing `read_file` (`$CWD` is `cwd`;
/// `$PLUGIN_DATA` is the plugin's own and left out).
fn file_roots(loaded: &[talaria_plugin_host::LoadedPlugin], cwd: &Path) -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = loaded
        .iter()
        .filter(|plugin| {
            plugin
                .tools()
                .iter()
                .any(|tool| tool.spec.name == "read_file")
        })
        .flat_map(|plugin| plugin.capabilities().filesystem.iter())
        .filter_map(|grant| match grant.path.strip_prefix("$CWD") {
            Some(rest) => Some(cwd.join(rest.trim_start_matches('/'))),
            None if grant.path.starts_with('$') => None,
            None => Some(PathBuf::from(&grant.path)),
        })
        .filter_map(|path| path.canonicalize().ok())
        .collect();
    roots.sort();
    roots.dedup();
    roots
}

/// The profile's plugins loaded for a command outside a session (`talaria
/// skin`, `talaria memory facts`): in the current directory, with the
/// config's settings, and an executor that runs nothing needing approval.
pub async fn load_for_command(
    home: &ProfileHome,
    config: &ConfigFile,
    surface: &str,
) -> Result<SessionPlugins, String> {
    let approvals = home.root().join("state").join("approvals.none");
    let exec = talaria_plugin_host::ExecServices::deny_all(&approvals)?;
    let cwd = std::env::current_dir().unwrap_or_else(|_| home.root().to_path_buf());
    Ok(load_plugins(home, config, &cwd, surface, exec, PluginServices::default()).await)
}

/// The secrets of the environment layer, for the plugin host.
#[derive(Debug)]
struct EnvSecrets(talaria_profile::EnvLayer);

impl talaria_plugin_host::SecretSource for EnvSecrets {
    fn secret(&self, name: &str) -> Option<String> {
        self.0.get(name)
    }
}

/// The user's settings for a plugin, from the config.yaml section that
/// belongs to it: `web:` for the first-party `web` plugin (Hermes's key),
/// with the search backend chosen by the API keys set when none is named;
/// `memory.providers.<name>` for a memory provider.
fn plugin_settings(
    config: &ConfigFile,
    env: &talaria_profile::EnvLayer,
    found: &FoundPlugin,
) -> std::collections::BTreeMap<String, String> {
    match (found.manifest.name.as_str(), found.source) {
        ("web", PluginSource::Distribution) => {
            config.web.plugin_config(|name| env.get(name).is_some())
        }
        // A memory provider's settings: `memory.providers.<name>`.
        (name, _) => config.memory.plugin_config(name).unwrap_or_default(),
    }
}

/// The session store as plugins' `session-search` sees it: only the sessions of the
/// session's principal (the owner: all).
#[derive(Debug)]
pub struct StoreSearch(
    pub std::sync::Arc<talaria_store::SessionDb>,
    pub talaria_store::Principal,
);

impl talaria_plugin_host::SessionSearch for StoreSearch {
    fn search(
        &self,
        query: &str,
        limit: u32,
    ) -> Result<Vec<talaria_plugin_host::SessionHit>, String> {
        let limit = usize::try_from(limit).unwrap_or(usize::MAX);
        let hits = self
            .0
            .search(query, limit, &self.1)
            .map_err(|e| e.to_string())?;
        Ok(hits
            .into_iter()
            .map(|hit| talaria_plugin_host::SessionHit {
                session_id: hit.session_id,
                role: serde_json::to_value(hit.role)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default(),
                snippet: hit.snippet,
                timestamp: u64::try_from(hit.created_at / 1000).unwrap_or(0),
            })
            .collect())
    }
}

#[cfg(test)]
#[path = "plugins_tests.rs"]
mod tests;
