//! What a store holds: the WASI context, the resource table, the memory
//! limiter and the host-import context of one plugin instance.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use wasmtime::ResourceLimiter;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use crate::imports::auxiliary::AuxiliaryModel;
use crate::imports::editor::Editor;
use crate::imports::egress::{Egress, PluginSecrets};
use crate::imports::exec::ExecServices;
use crate::imports::http::HttpPolicy;
use crate::imports::kv::KvStore;
use crate::imports::net::NetPolicy;
use crate::imports::session_search::SessionSearch;
use crate::log::PluginLog;
use talaria_plugin_manifest::{Capabilities, Limits, SecretCapability};

/// Everything about a loaded plugin its instances share.
#[derive(Debug)]
pub(crate) struct PluginShared {
    pub(crate) name: String,
    /// Effective capabilities (requested ∩ granted).
    pub(crate) caps: Capabilities,
    /// Env names the manifest requested (to tell "denied" from "absent").
    pub(crate) requested_env: Vec<String>,
    /// Secrets the manifest requested (granted ones are in `caps`).
    pub(crate) requested_secrets: Vec<SecretCapability>,
    /// The granted secrets, with their hosts under this `config`.
    pub(crate) secrets: PluginSecrets,
    /// The host's rules for outgoing requests.
    pub(crate) egress: Egress,
    pub(crate) config: BTreeMap<String, String>,
    pub(crate) limits: Limits,
    pub(crate) log: PluginLog,
    /// Present when `kv` is granted.
    pub(crate) kv: Option<KvStore>,
    pub(crate) net: NetPolicy,
    /// `<data_dir>/<name>`.
    pub(crate) data_dir: PathBuf,
    /// Where `exec` and `process` send commands (approval, backend).
    pub(crate) exec: ExecServices,
    /// Past sessions, for `session-search`.
    pub(crate) sessions: Option<Arc<dyn SessionSearch>>,
    /// The editor the session runs in, for `editor` and `exec`.
    pub(crate) editor: Option<Arc<dyn Editor>>,
    /// The auxiliary model, for `auxiliary`.
    pub(crate) auxiliary: Option<Arc<dyn AuxiliaryModel>>,
}

impl PluginShared {
    pub(crate) fn timeout(&self) -> Duration {
        Duration::from_millis(self.limits.timeout_ms)
    }

    pub(crate) fn memory_limit_bytes(&self) -> usize {
        usize::try_from(u64::from(self.limits.memory_mb) << 20).unwrap_or(usize::MAX)
    }

    pub(crate) fn denied(&self, capability: &str) -> String {
        format!("{} was not granted {capability}", self.name)
    }

    /// Records a failed call in the plugin's log, unless the tool itself reported the error (that
    /// is the tool's answer, not a host-side failure); returns `outcome` unchanged.
    pub(crate) fn log_failure<T>(
        &self,
        outcome: Result<T, crate::error::CallError>,
    ) -> Result<T, crate::error::CallError> {
        if let Err(err) = &outcome
            && !matches!(err, crate::error::CallError::Tool(_))
        {
            self.log.push(
                crate::log::LogLevel::Error,
                crate::log::LogSource::Host,
                &err.to_string(),
            );
        }
        outcome
    }
}

/// The context host imports run in.
#[derive(Debug)]
pub(crate) struct HostCtx {
    pub(crate) plugin: Arc<PluginShared>,
    /// The host working directory of the call (for `exec`), when known.
    pub(crate) cwd: Option<PathBuf>,
    /// When the current call must end (processes started by `exec` too).
    pub(crate) deadline: std::time::Instant,
    /// The session of the current call ("" outside one, e.g. `list-tools`).
    pub(crate) session_id: String,
    /// The tool or hook being run (for the approval prompt and the log).
    pub(crate) tool: String,
}

impl PluginShared {
    /// A copy with `config` as its `[config]` (the log and stores stay shared).
    pub(crate) fn with_config(&self, config: BTreeMap<String, String>) -> Self {
        Self {
            name: self.name.clone(),
            caps: self.caps.clone(),
            requested_env: self.requested_env.clone(),
            requested_secrets: self.requested_secrets.clone(),
            // `$config.<key>` grants follow the settings this instance runs with.
            net: NetPolicy::new(&self.caps.network, &config)
                .allowing_private(self.egress.allow_private),
            secrets: PluginSecrets::new(&self.caps.secrets, &self.requested_secrets, &config),
            egress: self.egress.clone(),
            config,
            limits: self.limits,
            log: self.log.clone(),
            kv: self.kv.clone(),
            data_dir: self.data_dir.clone(),
            exec: self.exec.clone(),
            sessions: self.sessions.clone(),
            editor: self.editor.clone(),
            auxiliary: self.auxiliary.clone(),
        }
    }

    /// A copy to change in a test.
    #[cfg(test)]
    pub(crate) fn clone_for_tests(&self) -> Self {
        self.with_config(self.config.clone())
    }
}

#[cfg(test)]
impl HostCtx {
    /// A context for `caps`, with `data` as data dir and working directory,
    /// and exec services that deny every command needing approval.
    pub(crate) fn for_tests(caps: Capabilities, data: &std::path::Path) -> Self {
        let kv = caps.kv.then(|| KvStore::new(data.join("kv")));
        let exec = ExecServices::deny_all(&data.join("approvals.toml"))
            .unwrap_or_else(|e| panic!("exec services: {e}"));
        HostCtx {
            plugin: Arc::new(PluginShared {
                name: "p".into(),
                requested_env: vec!["CARGO_PKG_NAME".into(), "HOME".into()],
                config: [("greeting".to_string(), "hi".to_string())].into(),
                limits: Limits::default(),
                log: PluginLog::default(),
                kv,
                net: NetPolicy::default(),
                requested_secrets: Vec::new(),
                secrets: PluginSecrets::default(),
                egress: Egress::default(),
                data_dir: data.to_path_buf(),
                caps,
                exec,
                sessions: None,
                editor: None,
                auxiliary: None,
            }),
            cwd: Some(data.to_path_buf()),
            deadline: std::time::Instant::now() + Duration::from_secs(10),
            session_id: "s".into(),
            tool: "t".into(),
        }
    }
}

/// Caps the total linear memory of a store and remembers a refusal.
#[derive(Debug)]
pub(crate) struct MemoryLimiter {
    limit: usize,
    used: usize,
    pub(crate) exceeded: bool,
}

impl MemoryLimiter {
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            limit,
            used: 0,
            exceeded: false,
        }
    }
}

/// Table elements a store may hold (guards the host against table bombs).
const MAX_TABLE_ELEMENTS: usize = 100_000;

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let growth = desired.saturating_sub(current);
        let total = self.used.saturating_add(growth);
        if total > self.limit {
            self.exceeded = true;
            return Ok(false);
        }
        self.used = total;
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= MAX_TABLE_ELEMENTS)
    }

    fn instances(&self) -> usize {
        64
    }

    fn tables(&self) -> usize {
        64
    }

    fn memories(&self) -> usize {
        16
    }
}

/// The data of one store (one plugin instance).
pub(crate) struct PluginState {
    pub(crate) wasi: WasiCtx,
    pub(crate) http: WasiHttpCtx,
    pub(crate) http_policy: HttpPolicy,
    pub(crate) table: ResourceTable,
    pub(crate) limiter: MemoryLimiter,
    pub(crate) host: HostCtx,
    /// Set by the epoch callback when the call's deadline passed.
    pub(crate) timed_out: bool,
    /// `chat-host`'s state, in the store of a chat connection only.
    pub(crate) chat: Option<crate::imports::chat::ChatHostState>,
}

impl WasiHttpView for PluginState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: &mut self.http_policy,
        }
    }
}

impl WasiView for PluginState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}
