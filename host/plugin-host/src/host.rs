//! The plugin host: the engine, the linker with every host import, the
//! compile cache, and loading a plugin (its manifest, API version and grants
//! here; its code by [`crate::runtime`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use wasmtime::Engine;
use wasmtime::component::Linker;

use crate::cache::CompileCache;
use crate::engine;
use crate::error::{HostError, LoadError};
use crate::imports::auxiliary::AuxiliaryModel;
use crate::imports::chat::TlsClient;
use crate::imports::editor::Editor;
use crate::imports::egress::{Egress, PluginSecrets, ProcessEnvSecrets, SystemResolver};
use crate::imports::exec::ExecServices;
use crate::imports::kv::KvStore;
use crate::imports::net::NetPolicy;
use crate::imports::session_search::SessionSearch;
use crate::kinds::skins::read_data_skins;
use crate::loaded::{LoadedInner, LoadedPlugin};
use crate::log::{LogFile, PluginLog};
use crate::options::{CacheStats, HostOptions};
use crate::sandbox::resolve_grant;
use crate::state::{PluginShared, PluginState};
use talaria_plugin_manifest::version::{HOST_API, compatible, line};
use talaria_plugin_manifest::{Capabilities, Grants, MANIFEST_FILE, Manifest};

pub(crate) struct HostInner {
    pub(crate) engine: Engine,
    /// The process-wide linkers ([`engine::linkers`]).
    pub(crate) linker: &'static Linker<PluginState>,
    /// `linker` plus `chat-host`, for components exporting `chat-adapter`.
    pub(crate) chat_linker: &'static Linker<PluginState>,
    /// The rules and TLS client of outgoing connections (`tls-connect`,
    /// outgoing HTTP).
    pub(crate) egress: Egress,
    pub(crate) cache: CompileCache,
    data_dir: PathBuf,
    profile: String,
    log_file: Option<Arc<LogFile>>,
    exec: ExecServices,
    sessions: Option<Arc<dyn SessionSearch>>,
    editor: Option<Arc<dyn Editor>>,
    auxiliary: Option<Arc<dyn AuxiliaryModel>>,
    pub(crate) compile_observer: Option<Arc<dyn crate::options::CompileObserver>>,
    /// [`HostOptions::defer_code`].
    pub(crate) defer_code: bool,
    /// wasmtime's cache configuration for Extism modules, written when the
    /// first one loads.
    #[cfg(feature = "extism")]
    pub(crate) extism_cache: std::sync::OnceLock<Option<PathBuf>>,
    #[cfg(feature = "extism")]
    pub(crate) cache_dir: PathBuf,
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
            options.prebuilt_key.clone(),
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
        let linkers = engine::linkers().map_err(HostError::Engine)?;
        Ok(Self {
            inner: Arc::new(HostInner {
                engine,
                linker: &linkers.plain,
                chat_linker: &linkers.chat,
                egress: Egress {
                    resolver: options.resolver.unwrap_or_else(|| Arc::new(SystemResolver)),
                    secrets: options
                        .secrets
                        .unwrap_or_else(|| Arc::new(ProcessEnvSecrets)),
                    allow_private: options.allow_private_urls,
                    tls: Arc::new(TlsClient::new(options.tls_ca_file)),
                },
                cache,
                data_dir: options.data_dir,
                profile: options.profile,
                log_file,
                exec,
                sessions: options.sessions,
                editor: options.editor,
                auxiliary: options.auxiliary,
                compile_observer: options.compile_observer,
                defer_code: options.defer_code,
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
            deferred: self.inner.cache.counters.deferred.load(Ordering::Relaxed),
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

    /// Compiles the component of the plugin in `dir` into the cache, so its
    /// next load needs no compiling (`plugin install` does it ahead of the
    /// first session). Nothing is instantiated. `Ok(true)` when it was
    /// compiled now, `Ok(false)` when the cache already held it or the
    /// plugin is not a component (modules and libraries are prepared when
    /// loaded).
    pub async fn compile(&self, dir: &Path) -> Result<bool, LoadError> {
        let manifest = crate::runtime::read_manifest(&dir.join(MANIFEST_FILE))?;
        if manifest.runtime != talaria_plugin_manifest::Runtime::Component {
            return Ok(false);
        }
        let (_, origin, _) =
            crate::runtime::component::compiled(&self.inner, dir, &manifest, None).await?;
        Ok(origin == crate::cache::Origin::Compiled)
    }

    /// Loads the plugin in `dir` (`plugin.toml` + its component, module or
    /// library) with the capabilities its manifest requests ∩ `grants`. A
    /// component is compiled (on a blocking thread) unless the cache holds
    /// it, its API version checked before anything is instantiated, and what
    /// each kind it exports lists is read once, in a fresh instance (tools,
    /// hook subscriptions, commands, skins, a platform's name; a memory
    /// provider is instantiated once). The package's data skins
    /// (`skins/*.yaml`) are read whatever it provides. Needs a tokio runtime.
    pub async fn load(&self, dir: &Path, grants: &Grants) -> Result<LoadedPlugin, LoadError> {
        self.load_configured(dir, grants, &BTreeMap::new()).await
    }

    /// [`load`](Self::load), with `settings` (the user's, from config.yaml)
    /// over the manifest's `[config]` defaults — `$config.<key>` grants
    /// follow them too.
    pub async fn load_configured(
        &self,
        dir: &Path,
        grants: &Grants,
        settings: &BTreeMap<String, String>,
    ) -> Result<LoadedPlugin, LoadError> {
        let mut manifest = crate::runtime::read_manifest(&dir.join(MANIFEST_FILE))?;
        manifest
            .config
            .extend(settings.iter().map(|(k, v)| (k.clone(), v.clone())));
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

        let shared = self.shared(&manifest, caps, data_dir);
        let loaded = crate::runtime::load(&self.inner, dir, &manifest, &shared).await?;
        let mut skins = loaded
            .slots
            .skin
            .as_ref()
            .map_or_else(Vec::new, |slot| slot.listed.clone());
        let dropped = read_data_skins(&name, dir, &mut skins);
        crate::loaded::note_dropped(&shared.log, &dropped);
        Ok(LoadedPlugin {
            inner: Arc::new(LoadedInner {
                manifest,
                dir: dir.to_path_buf(),
                shared,
                api: loaded.api,
                kinds: loaded.kinds,
                slots: loaded.slots,
                skins,
                origin: loaded.origin,
                deferred: loaded.deferred,
                host: self.inner.clone(),
            }),
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
            requested_secrets: manifest.capabilities.secrets.clone(),
            secrets: PluginSecrets::new(
                &caps.secrets,
                &manifest.capabilities.secrets,
                &manifest.config,
            ),
            egress: self.inner.egress.clone(),
            config: manifest.config.clone(),
            limits: manifest.limits,
            log: match &self.inner.log_file {
                Some(file) => PluginLog::to_file(name, file.clone()),
                None => PluginLog::default(),
            },
            kv,
            net: NetPolicy::new(&caps.network, &manifest.config)
                .allowing_private(self.inner.egress.allow_private),
            exec: self.inner.exec.clone(),
            sessions: self.inner.sessions.clone(),
            editor: self.inner.editor.clone(),
            auxiliary: self.inner.auxiliary.clone(),
            data_dir,
            caps,
        })
    }
}

// Compiles a component.
#[cfg(all(test, feature = "compiler"))]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::cache::error_text;

    /// A component importing `chat-host` links with the chat adapters'
    /// linker only: every other plugin's linker lacks it.
    #[test]
    fn chat_host_is_linked_for_chat_adapters_only() {
        let dir = tempfile::tempdir().unwrap();
        let options = HostOptions::new(dir.path().join("cache"), dir.path().join("data"));
        let host = PluginHost::new(options).unwrap();
        let wasm = wat::parse_str(
            r#"(component
                (import "wasi:io/poll@0.2.12" (instance $poll
                    (export "pollable" (type (sub resource)))))
                (alias export $poll "pollable" (type $pollable))
                (import "talaria:plugin/chat-host@0.1.2" (instance
                    (alias outer 1 $pollable (type $outer))
                    (export "pollable" (type $p (eq $outer)))
                    (export "host-work" (func (result (own $p)))))))"#,
        )
        .unwrap();
        let component = wasmtime::component::Component::new(&host.inner.engine, wasm).unwrap();
        match host.inner.linker.instantiate_pre(&component) {
            Ok(_) => panic!("chat-host is linked for every plugin"),
            Err(error) => assert!(error_text(&error).contains("chat-host"), "{error:?}"),
        }
        assert!(host.inner.chat_linker.instantiate_pre(&component).is_ok());
    }
}
