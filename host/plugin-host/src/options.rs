//! Where a plugin host keeps its files, and its compile-cache counters.

use std::path::PathBuf;
use std::sync::Arc;

use crate::imports::auxiliary::AuxiliaryModel;
use crate::imports::editor::Editor;
use crate::imports::egress::{Resolver, SecretSource};
use crate::imports::exec::ExecServices;
use crate::imports::session_search::SessionSearch;

/// Where the host keeps its files.
#[derive(Debug, Clone)]
pub struct HostOptions {
    /// Compiled components (`$TALARIA_HOME/cache/plugins`); created if missing.
    pub cache_dir: PathBuf,
    /// The secret the compiled components' MACs are keyed with, created
    /// (mode 0600) when the cache is first written; by default `<cache_dir>.key`
    /// (`$TALARIA_HOME/cache/plugins.key`). Keep it out of the cache directory
    /// and out of reach of sandboxed commands.
    pub cache_key_file: PathBuf,
    /// Plugin data: `<data_dir>/<plugin>` is `$PLUGIN_DATA`, and the key-value
    /// store lives in `<data_dir>/<plugin>/kv/<profile>`.
    pub data_dir: PathBuf,
    /// The profile key-value stores are scoped to (`[A-Za-z0-9_-]+`).
    pub profile: String,
    /// A file every plugin's log lines (info and above) are appended to.
    pub log_file: Option<PathBuf>,
    /// Where `exec` and `process` commands go; by default local commands,
    /// denying whatever needs approval.
    pub exec: Option<ExecServices>,
    /// Past sessions for plugins granted `session-search`.
    pub sessions: Option<Arc<dyn SessionSearch>>,
    /// The editor the session runs in: file plugins read and write through
    /// it (the `editor` import), and plugin commands run in its terminal.
    pub editor: Option<Arc<dyn Editor>>,
    /// Read-only directories of components compiled ahead of time by
    /// `talaria dist build` (a distribution's `plugins/.compiled`), consulted
    /// after `cache_dir`. Never written at run time.
    pub prebuilt_dirs: Vec<PathBuf>,
    /// The distribution's ed25519 public key (base64): when set, a prebuilt
    /// directory is used only if its digest list is signed with it.
    pub prebuilt_key: Option<String>,
    /// A PEM file of CA certificates that chat adapters' `tls-connect`
    /// trusts besides the webpki roots and the system's (which honour
    /// `SSL_CERT_FILE` and `SSL_CERT_DIR`).
    pub tls_ca_file: Option<PathBuf>,
    /// Resolves the host names of plugins' outgoing HTTP requests; by
    /// default the system's resolver.
    pub resolver: Option<Arc<dyn Resolver>>,
    /// Where the secrets plugins name in requests come from; by default the
    /// process environment.
    pub secrets: Option<Arc<dyn SecretSource>>,
    /// `security.allow_private_urls`: plugins' requests may reach private,
    /// loopback and link-local addresses through any grant (otherwise only
    /// through a grant that names the host).
    pub allow_private_urls: bool,
    /// The session's auxiliary model, for plugins granted `auxiliary-model`.
    pub auxiliary: Option<Arc<dyn AuxiliaryModel>>,
    /// Told before a component is compiled (not found in any cache): a
    /// large one takes seconds, which the user should hear about.
    pub compile_observer: Option<Arc<dyn CompileObserver>>,
    /// Load components from what they listed at an earlier load (remembered, sealed, in the
    /// cache) and read, verify and prepare their code at its first use; a plugin a session
    /// does not call is then never read. Off: every load prepares the code at once.
    pub defer_code: bool,
}

/// Hears that a plugin is about to be compiled.
pub trait CompileObserver: std::fmt::Debug + Send + Sync {
    /// `plugin`'s component, of `bytes` bytes, is being compiled now.
    fn compiling(&self, plugin: &str, bytes: u64);
}

impl HostOptions {
    /// Options with the `default` profile.
    pub fn new(cache_dir: impl Into<PathBuf>, data_dir: impl Into<PathBuf>) -> Self {
        let cache_dir: PathBuf = cache_dir.into();
        let mut key_name = cache_dir.file_name().unwrap_or_default().to_os_string();
        key_name.push(".key");
        Self {
            cache_key_file: cache_dir.with_file_name(key_name),
            cache_dir,
            data_dir: data_dir.into(),
            profile: "default".into(),
            log_file: None,
            exec: None,
            sessions: None,
            editor: None,
            prebuilt_dirs: Vec::new(),
            prebuilt_key: None,
            tls_ca_file: None,
            resolver: None,
            secrets: None,
            allow_private_urls: false,
            auxiliary: None,
            compile_observer: None,
            defer_code: false,
        }
    }

    /// The same options with plugins' host names resolved by `resolver`.
    pub fn with_resolver(mut self, resolver: Arc<dyn Resolver>) -> Self {
        self.resolver = Some(resolver);
        self
    }

    /// The same options with secrets read from `secrets`.
    pub fn with_secrets(mut self, secrets: Arc<dyn SecretSource>) -> Self {
        self.secrets = Some(secrets);
        self
    }

    /// The same options with `auxiliary` answering plugins' model requests.
    pub fn with_auxiliary(mut self, auxiliary: Arc<dyn AuxiliaryModel>) -> Self {
        self.auxiliary = Some(auxiliary);
        self
    }

    /// The same options with private addresses allowed or not.
    pub fn allowing_private_urls(mut self, allow: bool) -> Self {
        self.allow_private_urls = allow;
        self
    }

    /// The same options with the cache's MACs keyed by the secret in `path`.
    pub fn with_cache_key_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.cache_key_file = path.into();
        self
    }

    /// The same options with ahead-of-time compiled components from `dirs`.
    pub fn with_prebuilt_dirs(mut self, dirs: Vec<PathBuf>) -> Self {
        self.prebuilt_dirs = dirs;
        self
    }

    /// The same options with prebuilt directories trusted only when signed by `key` (an
    /// ed25519 public key in base64), or checked by digest alone when `None`.
    pub fn with_prebuilt_key(mut self, key: Option<String>) -> Self {
        self.prebuilt_key = key;
        self
    }

    /// The same options with `session-search` answered from `sessions`.
    pub fn with_session_search(mut self, sessions: Arc<dyn SessionSearch>) -> Self {
        self.sessions = Some(sessions);
        self
    }

    /// The same options with files and commands going through `editor`.
    pub fn with_editor(mut self, editor: Arc<dyn Editor>) -> Self {
        self.editor = Some(editor);
        self
    }

    /// The same options with commands going to `exec`.
    pub fn with_exec(mut self, exec: ExecServices) -> Self {
        self.exec = Some(exec);
        self
    }

    /// The same options with `tls-connect` also trusting the CAs in `path` (PEM).
    pub fn with_tls_ca_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.tls_ca_file = Some(path.into());
        self
    }

    /// The same options with `observer` told of each compilation.
    pub fn with_compile_observer(mut self, observer: Arc<dyn CompileObserver>) -> Self {
        self.compile_observer = Some(observer);
        self
    }

    /// The same options with components' code read at its first use ([`Self::defer_code`]).
    pub fn deferring_code(mut self, defer: bool) -> Self {
        self.defer_code = defer;
        self
    }

    /// The same options with plugin logs appended to `path`.
    pub fn with_log_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.log_file = Some(path.into());
        self
    }
}

/// Compile-cache counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CacheStats {
    /// Components compiled by this host.
    pub compiled: u64,
    /// Components deserialised from the cache by this host (or already loaded in this
    /// process).
    pub cache_hits: u64,
    /// Components loaded from their remembered listing, their code not read at load.
    pub deferred: u64,
}
