//! Loading plugins: manifest, component (compiled or cached), API version
//! check, linking, and what the plugin provides (tools, hook subscriptions,
//! commands, skins).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use talaria_kernel::ToolSpec;
use talaria_tools::ToolFlags;
use wasmtime::Engine;
use wasmtime::component::types::ComponentItem;
use wasmtime::component::{Component, Linker};

use crate::bindings::{ToolPlugin, ToolPluginPre};
use crate::cache::{CompileCache, LoadFileError, Origin, error_text};
use crate::commands::{
    CommandCall, CommandPluginPre, CommandReply, PluginCommandSpec, convert_commands,
    invoke_command,
};
use crate::engine;
use crate::error::{HostError, LoadError};
use crate::exec_imports::ExecServices;
use crate::hooks::{
    HookCall, HookReply, HookSubscription, HooksPluginPre, convert_subscriptions, invoke_hook,
};
use crate::invoke::Invocation;
use crate::kv::KvStore;
use crate::log::{LogFile, LogLevel, LogSource, PluginLog};
use crate::net::NetPolicy;
use crate::options::{CacheStats, HostOptions};
use crate::sandbox::{Sandbox, resolve_grant};
use crate::session_search::SessionSearch;
use crate::skins::{PluginSkin, SkinPluginPre, convert_skins, invoke_list_skins, read_data_skins};
use crate::state::{HostCtx, PluginShared, PluginState};
use crate::tools::invoke_list_tools;
use talaria_plugin_manifest::Grants;
use talaria_plugin_manifest::version::{
    HOST_API, check_names, compatible, kind_of, line, parse_api_name,
};
use talaria_plugin_manifest::{Capabilities, MANIFEST_FILE, Manifest, PluginKind, Runtime};

mod placed;
mod tool_specs;

pub(crate) use placed::{Placed, canonical_cwd, names};
use tool_specs::convert_specs;
#[cfg(any(feature = "extism", feature = "native"))]
pub(crate) use tool_specs::validate_tools;

/// How the scheduler may run a tool's calls (from the plugin's `tool-flags`).
/// A tool a plugin provides.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolInfo {
    /// As the model sees it (parameters parsed from the plugin's JSON schema).
    pub spec: ToolSpec,
    /// Scheduling hints.
    pub flags: ToolFlags,
}

pub(crate) struct HostInner {
    pub(crate) engine: Engine,
    pub(crate) linker: Linker<PluginState>,
    cache: CompileCache,
    data_dir: PathBuf,
    profile: String,
    log_file: Option<Arc<LogFile>>,
    exec: ExecServices,
    sessions: Option<Arc<dyn SessionSearch>>,
    /// wasmtime's cache configuration for Extism modules, written when the
    /// first one loads.
    #[cfg(feature = "extism")]
    extism_cache: std::sync::OnceLock<Option<PathBuf>>,
    #[cfg(feature = "extism")]
    cache_dir: PathBuf,
}

/// Loads plugins. Cheap to clone; all clones share the engine, the linker
/// and the compile cache.
#[derive(Clone)]
pub struct PluginHost {
    inner: Arc<HostInner>,
}

impl std::fmt::Debug for PluginHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginHost")
            .field("cache", &self.inner.cache)
            .field("data_dir", &self.inner.data_dir)
            .field("profile", &self.inner.profile)
            .finish_non_exhaustive()
    }
}

/// What runs a loaded plugin's calls.
pub(crate) enum Backend {
    /// A component: the `*_pre` fields of [`LoadedInner`].
    Component,
    /// An Extism module.
    #[cfg(feature = "extism")]
    Extism(Arc<crate::extism_rt::ExtismPlugin>),
    /// A native library.
    #[cfg(feature = "native")]
    Native(Arc<crate::native::NativeLibrary>),
}

pub(crate) struct LoadedInner {
    pub(crate) manifest: Manifest,
    pub(crate) dir: PathBuf,
    pub(crate) shared: Arc<PluginShared>,
    pub(crate) api: semver::Version,
    pub(crate) kinds: Vec<PluginKind>,
    pub(crate) tools: Vec<ToolInfo>,
    pub(crate) tool_pre: Option<ToolPluginPre<PluginState>>,
    pub(crate) hooks_pre: Option<HooksPluginPre<PluginState>>,
    pub(crate) subscriptions: Vec<HookSubscription>,
    pub(crate) commands_pre: Option<CommandPluginPre<PluginState>>,
    pub(crate) commands: Vec<PluginCommandSpec>,
    pub(crate) skins_pre: Option<SkinPluginPre<PluginState>>,
    pub(crate) skins: Vec<PluginSkin>,
    pub(crate) origin: Origin,
    pub(crate) host: Arc<HostInner>,
    pub(crate) backend: Backend,
}

/// A plugin ready to instantiate. Cheap to clone.
#[derive(Clone)]
pub struct LoadedPlugin {
    pub(crate) inner: Arc<LoadedInner>,
}

impl std::fmt::Debug for LoadedPlugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedPlugin")
            .field("name", &self.inner.manifest.name)
            .field("dir", &self.inner.dir)
            .field("api", &self.inner.api)
            .field("kinds", &self.inner.kinds)
            .field("tools", &self.inner.tools.len())
            .field("commands", &self.inner.commands.len())
            .field("skins", &self.inner.skins.len())
            .finish_non_exhaustive()
    }
}

impl LoadedPlugin {
    /// The events its hooks subscribe to (empty unless it provides hooks).
    pub fn hook_subscriptions(&self) -> &[HookSubscription] {
        &self.inner.subscriptions
    }

    /// The plugin's name.
    pub fn name(&self) -> &str {
        &self.inner.manifest.name
    }

    /// Its manifest.
    pub fn manifest(&self) -> &Manifest {
        &self.inner.manifest
    }

    /// The directory it was loaded from.
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// What it may use: the manifest's requests ∩ the grants.
    pub fn capabilities(&self) -> &Capabilities {
        &self.inner.shared.caps
    }

    /// The `talaria:plugin` version its exports target.
    pub fn api_version(&self) -> &semver::Version {
        &self.inner.api
    }

    /// The kinds the component exports.
    pub fn kinds(&self) -> &[PluginKind] {
        &self.inner.kinds
    }

    /// Its tools (empty unless it provides `tools`).
    pub fn tools(&self) -> &[ToolInfo] {
        &self.inner.tools
    }

    /// Its slash commands (empty unless it provides `commands`), validated:
    /// invalid or repeated names were dropped at load with a log line.
    pub fn commands(&self) -> &[PluginCommandSpec] {
        &self.inner.commands
    }

    /// Its skins: those its component lists (when it provides `skin`), then
    /// the package's data skins (`skins/*.yaml`, named by file stem).
    pub fn skins(&self) -> &[PluginSkin] {
        &self.inner.skins
    }

    /// Its log (plugin `log` calls, captured stdout/stderr, host notes).
    pub fn log(&self) -> &PluginLog {
        &self.inner.shared.log
    }

    /// What runs its code.
    pub fn runtime(&self) -> Runtime {
        self.inner.manifest.runtime
    }

    /// Whether the component came from the compile cache, or an Extism
    /// module's tool list was remembered (nothing compiled at load).
    pub fn from_cache(&self) -> bool {
        self.inner.origin == Origin::Cached
    }
}

fn valid_profile(profile: &str) -> bool {
    !profile.is_empty()
        && profile
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

impl PluginHost {
    /// Creates a host (the process-wide engine is created on first use).
    pub fn new(options: HostOptions) -> Result<Self, HostError> {
        let engine = engine::engine().map_err(HostError::Engine)?.clone();
        if !valid_profile(&options.profile) {
            return Err(HostError::Io {
                path: options.data_dir.clone(),
                source: std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!("invalid profile name {:?}", options.profile),
                ),
            });
        }
        let cache = CompileCache::new(
            options.cache_dir.clone(),
            options.cache_key_file.clone(),
            options.prebuilt_dirs.clone(),
            &engine,
        )
        .map_err(|source| HostError::Io {
            path: options.cache_dir.clone(),
            source,
        })?;
        std::fs::create_dir_all(&options.data_dir).map_err(|source| HostError::Io {
            path: options.data_dir.clone(),
            source,
        })?;
        let log_file = match &options.log_file {
            Some(path) => Some(Arc::new(LogFile::open(path).map_err(|source| {
                HostError::Io {
                    path: path.clone(),
                    source,
                }
            })?)),
            None => None,
        };
        let exec = match options.exec.clone() {
            Some(exec) => exec,
            None => ExecServices::deny_all(&options.data_dir.join("approvals.toml"))
                .map_err(HostError::Engine)?,
        };
        let mut linker = Linker::<PluginState>::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)
            .map_err(|e| HostError::Engine(error_text(&e)))?;
        // Always linked so any component importing it loads; each request is
        // checked against the plugin's network grants (none: all denied).
        wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker)
            .map_err(|e| HostError::Engine(error_text(&e)))?;
        ToolPlugin::add_to_linker::<PluginState, wasmtime::component::HasSelf<HostCtx>>(
            &mut linker,
            |state| &mut state.host,
        )
        .map_err(|e| HostError::Engine(error_text(&e)))?;
        Ok(Self {
            inner: Arc::new(HostInner {
                engine,
                linker,
                cache,
                data_dir: options.data_dir,
                profile: options.profile,
                log_file,
                exec,
                sessions: options.sessions,
                #[cfg(feature = "extism")]
                extism_cache: std::sync::OnceLock::new(),
                #[cfg(feature = "extism")]
                cache_dir: options.cache_dir.clone(),
            }),
        })
    }

    /// Compile-cache counters of this host.
    pub fn cache_stats(&self) -> CacheStats {
        CacheStats {
            compiled: self.inner.cache.counters.compiled.load(Ordering::Relaxed),
            cache_hits: self.inner.cache.counters.cache_hits.load(Ordering::Relaxed),
        }
    }

    /// Writes every component this host's cache holds (and whose MAC verifies)
    /// into `out` as a distribution's prebuilt directory: plain compiled files
    /// and their BLAKE3 digests in [`crate::PREBUILT_DIGESTS`], which is what
    /// a host reading `out` through [`HostOptions::prebuilt_dirs`] checks.
    /// Returns the file names written.
    pub fn export_prebuilt(&self, out: &Path) -> Result<Vec<String>, HostError> {
        self.inner
            .cache
            .export_prebuilt(out)
            .map_err(|source| HostError::Io {
                path: out.to_path_buf(),
                source,
            })
    }

    /// Loads the plugin in `dir` (`plugin.toml` + its component) with the
    /// capabilities its manifest requests ∩ `grants`. Compiles the component
    /// (on a blocking thread) unless the cache holds it, checks the API
    /// version it targets before anything is instantiated, links it, lists
    /// what its component exports (tools, hook subscriptions, commands,
    /// skins; each once, in a fresh instance) and reads the package's data
    /// skins (`skins/*.yaml`). Needs a tokio runtime.
    pub async fn load(&self, dir: &Path, grants: &Grants) -> Result<LoadedPlugin, LoadError> {
        let manifest = crate::runtimes::read_manifest(&dir.join(MANIFEST_FILE))?;
        let name = manifest.name.clone();
        if !compatible(&manifest.api, &HOST_API) {
            return Err(LoadError::ApiVersion {
                plugin: name,
                message: format!(
                    "its manifest targets talaria:plugin@{} but this host supports \
                     talaria:plugin@{HOST_API} ({})",
                    manifest.api,
                    line(&HOST_API)
                ),
            });
        }

        let caps = grants.effective(&manifest.capabilities);
        let data_dir = self.inner.data_dir.join(&name);
        for grant in &caps.filesystem {
            if !grant.path.starts_with("$CWD") {
                resolve_grant(&grant.path, None, &data_dir).map_err(|message| {
                    LoadError::Filesystem {
                        plugin: name.clone(),
                        grant: grant.path.clone(),
                        message,
                    }
                })?;
            }
        }

        if manifest.runtime != Runtime::Component {
            return self.load_module(dir, manifest, caps, data_dir).await;
        }

        let wasm_path = dir.join(&manifest.wasm);
        let host = self.inner.clone();
        let path = wasm_path.clone();
        let (component, origin) =
            tokio::task::spawn_blocking(move || host.cache.load_file(&host.engine, &path))
                .await
                .map_err(|e| LoadError::Compile {
                    plugin: name.clone(),
                    message: format!("compilation task failed: {e}"),
                })?
                .map_err(|error| match error {
                    LoadFileError::Read(source) => LoadError::Wasm {
                        plugin: name.clone(),
                        path: wasm_path.clone(),
                        source,
                    },
                    LoadFileError::Compile(message) => LoadError::Compile {
                        plugin: name.clone(),
                        message: format!("{}: {message}", wasm_path.display()),
                    },
                })?;

        let (api, kinds) = self.check_component(&component, &manifest)?;

        let instance_pre =
            self.inner
                .linker
                .instantiate_pre(&component)
                .map_err(|e| LoadError::Link {
                    plugin: name.clone(),
                    message: error_text(&e),
                })?;
        let tool_pre = if kinds.contains(&PluginKind::Tools) {
            Some(
                ToolPluginPre::new(instance_pre.clone()).map_err(|e| LoadError::Exports {
                    plugin: name.clone(),
                    message: error_text(&e),
                })?,
            )
        } else {
            None
        };

        let hooks_pre = if kinds.contains(&PluginKind::Hooks) {
            Some(
                HooksPluginPre::new(instance_pre.clone()).map_err(|e| LoadError::Exports {
                    plugin: name.clone(),
                    message: error_text(&e),
                })?,
            )
        } else {
            None
        };

        let exports_error = |e: wasmtime::Error| LoadError::Exports {
            plugin: name.clone(),
            message: error_text(&e),
        };
        let commands_pre = kinds
            .contains(&PluginKind::Commands)
            .then(|| CommandPluginPre::new(instance_pre.clone()))
            .transpose()
            .map_err(exports_error)?;
        let skins_pre = kinds
            .contains(&PluginKind::Skin)
            .then(|| SkinPluginPre::new(instance_pre.clone()))
            .transpose()
            .map_err(exports_error)?;

        let shared = self.shared(&manifest, caps, data_dir);
        shared.log.push(
            LogLevel::Info,
            LogSource::Host,
            &format!(
                "loaded {} {} (talaria:plugin@{api}) from {}{}",
                name,
                manifest.version,
                dir.display(),
                if origin == Origin::Cached {
                    " (compiled cache)"
                } else {
                    ""
                }
            ),
        );

        let mut inner = LoadedInner {
            manifest,
            dir: dir.to_path_buf(),
            shared,
            api,
            kinds,
            tools: Vec::new(),
            tool_pre,
            hooks_pre,
            subscriptions: Vec::new(),
            commands_pre,
            commands: Vec::new(),
            skins_pre,
            skins: Vec::new(),
            origin,
            host: self.inner.clone(),
            backend: Backend::Component,
        };
        if inner.tool_pre.is_some() {
            let sandbox = Sandbox::default();
            let specs =
                invoke_list_tools(&inner, &sandbox)
                    .await
                    .map_err(|e| LoadError::ListTools {
                        plugin: name.clone(),
                        message: e.to_string(),
                    })?;
            inner.tools = convert_specs(&name, specs)?;
        }
        if inner.hooks_pre.is_some() {
            let sandbox = Sandbox::default();
            let reply = invoke_hook(&inner, &sandbox, HookCall::Subscriptions)
                .await
                .map_err(|e| LoadError::Exports {
                    plugin: name.clone(),
                    message: format!("listing its hook subscriptions failed: {e}"),
                })?;
            if let HookReply::Subscriptions(subscriptions) = reply {
                inner.subscriptions = convert_subscriptions(subscriptions);
            }
        }
        if inner.commands_pre.is_some() {
            let sandbox = Sandbox::default();
            let reply = invoke_command(&inner, &sandbox, CommandCall::List)
                .await
                .map_err(|e| LoadError::Exports {
                    plugin: name.clone(),
                    message: format!("listing its commands failed: {e}"),
                })?;
            if let CommandReply::List(specs) = reply {
                let (commands, dropped) = convert_commands(&name, specs);
                inner.commands = commands;
                note_dropped(&inner, &dropped);
            }
        }
        if inner.skins_pre.is_some() {
            let sandbox = Sandbox::default();
            let listed =
                invoke_list_skins(&inner, &sandbox)
                    .await
                    .map_err(|e| LoadError::Exports {
                        plugin: name.clone(),
                        message: format!("listing its skins failed: {e}"),
                    })?;
            let (skins, dropped) = convert_skins(&name, listed);
            inner.skins = skins;
            note_dropped(&inner, &dropped);
        }
        let dropped = read_data_skins(&name, dir, &mut inner.skins);
        note_dropped(&inner, &dropped);
        Ok(LoadedPlugin {
            inner: Arc::new(inner),
        })
    }

    /// What a plugin's calls share: its effective capabilities, config,
    /// limits, log and stores.
    fn shared(
        &self,
        manifest: &Manifest,
        caps: Capabilities,
        data_dir: PathBuf,
    ) -> Arc<PluginShared> {
        let name = &manifest.name;
        let kv = caps
            .kv
            .then(|| KvStore::new(data_dir.join("kv").join(&self.inner.profile)));
        Arc::new(PluginShared {
            name: name.clone(),
            requested_env: manifest.capabilities.env.clone(),
            config: manifest.config.clone(),
            limits: manifest.limits,
            log: match &self.inner.log_file {
                Some(file) => PluginLog::to_file(name, file.clone()),
                None => PluginLog::default(),
            },
            kv,
            net: NetPolicy::new(&caps.network),
            exec: self.inner.exec.clone(),
            sessions: self.inner.sessions.clone(),
            data_dir,
            caps,
        })
    }

    /// Without the `extism` and `native` features only components load.
    #[cfg(not(any(feature = "extism", feature = "native")))]
    async fn load_module(
        &self,
        _dir: &Path,
        manifest: Manifest,
        _caps: Capabilities,
        _data_dir: PathBuf,
    ) -> Result<LoadedPlugin, LoadError> {
        Err(LoadError::Unsupported {
            plugin: manifest.name,
            runtime: manifest.runtime.as_str(),
        })
    }

    /// Loads a tools plugin that is not a component: an Extism module or a
    /// native library (which needs the `trust-native` grant).
    #[cfg(any(feature = "extism", feature = "native"))]
    async fn load_module(
        &self,
        dir: &Path,
        manifest: Manifest,
        caps: Capabilities,
        data_dir: PathBuf,
    ) -> Result<LoadedPlugin, LoadError> {
        let name = manifest.name.clone();
        let file = dir.join(&manifest.wasm);
        let shared = self.shared(&manifest, caps, data_dir);
        let blocking_failed = |e: tokio::task::JoinError| LoadError::Compile {
            plugin: name.clone(),
            message: format!("loading task failed: {e}"),
        };
        let (backend, tools, origin) = match manifest.runtime {
            #[cfg(feature = "extism")]
            Runtime::Extism => {
                let (wasm, _) =
                    talaria_plugin_manifest::files::read_regular(&file).map_err(|source| {
                        LoadError::Wasm {
                            plugin: name.clone(),
                            path: file.clone(),
                            source,
                        }
                    })?;
                let cache = self
                    .inner
                    .extism_cache
                    .get_or_init(|| crate::extism_rt::cache_config(&self.inner.cache_dir))
                    .clone();
                let plugin = Arc::new(crate::extism_rt::ExtismPlugin::new(&shared, wasm, cache));
                let remembered = self.inner.cache.described(plugin.described_name());
                let (tools, origin) = match remembered
                    .and_then(|raw| crate::described::parse_tools(&name, &raw).ok())
                {
                    Some(tools) => (tools, Origin::Cached),
                    None => {
                        let for_compile = plugin.clone();
                        tokio::task::spawn_blocking(move || for_compile.bare())
                            .await
                            .map_err(blocking_failed)?
                            .map_err(|message| LoadError::Extism {
                                plugin: name.clone(),
                                message: format!("{}: {message}", file.display()),
                            })?;
                        let raw =
                            plugin
                                .describe(&shared)
                                .await
                                .map_err(|e| LoadError::ListTools {
                                    plugin: name.clone(),
                                    message: format!("describe failed: {e}"),
                                })?;
                        let tools = crate::described::parse_tools(&name, &raw)?;
                        self.inner
                            .cache
                            .store_described(plugin.described_name(), &raw);
                        (tools, Origin::Compiled)
                    }
                };
                (Backend::Extism(plugin), tools, origin)
            }
            #[cfg(feature = "native")]
            Runtime::Native => {
                if !shared.caps.trust_native {
                    return Err(LoadError::NotTrusted { plugin: name });
                }
                // The loader would block opening a FIFO; only a regular file is handed to it
                // (a missing one is the loader's to report).
                if let Ok(metadata) = std::fs::metadata(&file) {
                    talaria_plugin_manifest::files::require_regular(&metadata).map_err(
                        |source| LoadError::Wasm {
                            plugin: name.clone(),
                            path: file.clone(),
                            source,
                        },
                    )?;
                }
                let plugin = name.clone();
                let (library, raw) = tokio::task::spawn_blocking(move || {
                    crate::native::NativeLibrary::load(&plugin, &file)
                })
                .await
                .map_err(blocking_failed)??;
                let tools = crate::described::parse_tools(&name, &raw)?;
                (Backend::Native(Arc::new(library)), tools, Origin::Compiled)
            }
            other => {
                return Err(LoadError::Unsupported {
                    plugin: name,
                    runtime: other.as_str(),
                });
            }
        };
        shared.log.push(
            LogLevel::Info,
            LogSource::Host,
            &format!(
                "loaded {} {} ({} runtime) from {}",
                name,
                manifest.version,
                manifest.runtime,
                dir.display()
            ),
        );
        let mut inner = LoadedInner {
            api: manifest.api.clone(),
            manifest,
            dir: dir.to_path_buf(),
            shared,
            kinds: vec![PluginKind::Tools],
            tools,
            tool_pre: None,
            hooks_pre: None,
            subscriptions: Vec::new(),
            commands_pre: None,
            commands: Vec::new(),
            skins_pre: None,
            skins: Vec::new(),
            origin,
            host: self.inner.clone(),
            backend,
        };
        let dropped = read_data_skins(&name, dir, &mut inner.skins);
        note_dropped(&inner, &dropped);
        Ok(LoadedPlugin {
            inner: Arc::new(inner),
        })
    }

    /// Reads the `talaria:plugin` names the component exports and imports,
    /// refuses an incompatible version, and checks the exported kinds against
    /// the manifest. Nothing is instantiated.
    fn check_component(
        &self,
        component: &Component,
        manifest: &Manifest,
    ) -> Result<(semver::Version, Vec<PluginKind>), LoadError> {
        let engine = &self.inner.engine;
        let ty = component.component_type();
        let exports: Vec<_> = ty
            .exports(engine)
            .filter(|(_, item)| matches!(item.ty, ComponentItem::ComponentInstance(_)))
            .filter_map(|(name, _)| parse_api_name(name))
            .collect();
        let imports: Vec<_> = ty
            .imports(engine)
            .filter_map(|(name, _)| parse_api_name(name))
            .collect();
        let plugin = manifest.name.clone();
        let exported = check_names(&exports, &imports, &manifest.api).map_err(|message| {
            LoadError::ApiVersion {
                plugin: plugin.clone(),
                message,
            }
        })?;
        let mut kinds: Vec<PluginKind> = exports
            .iter()
            .filter_map(|n| kind_of(&n.interface))
            .collect();
        kinds.sort();
        kinds.dedup();
        let missing: Vec<&str> = manifest
            .provides
            .iter()
            .filter(|k| !kinds.contains(k))
            .map(|k| k.as_str())
            .collect();
        if !missing.is_empty() {
            return Err(LoadError::Exports {
                plugin,
                message: format!(
                    "the manifest says it provides {} but the component does not export {}",
                    missing.join(", "),
                    missing
                        .iter()
                        .filter_map(|m| manifest
                            .provides
                            .iter()
                            .find(|k| k.as_str() == *m)
                            .map(|k| format!("talaria:plugin/{}", k.interface())))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            });
        }
        Ok((exported.unwrap_or_else(|| manifest.api.clone()), kinds))
    }
}

/// Logs what validation left out, one warning each.
fn note_dropped(inner: &LoadedInner, dropped: &[String]) {
    for line in dropped {
        inner.shared.log.push(LogLevel::Warn, LogSource::Host, line);
    }
}

/// Used by [`crate::tools`]: everything an invocation needs from a plugin.
impl LoadedInner {
    pub(crate) fn invocation(&self) -> Invocation<'_> {
        Invocation {
            engine: &self.host.engine,
            shared: &self.shared,
            tool_pre: self.tool_pre.as_ref(),
            hooks_pre: self.hooks_pre.as_ref(),
            commands_pre: self.commands_pre.as_ref(),
            skins_pre: self.skins_pre.as_ref(),
        }
    }
}
