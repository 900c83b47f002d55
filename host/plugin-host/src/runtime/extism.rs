//! Extism plugins: core WebAssembly modules written with an Extism PDK that
//! provide tools through the Extism tool ABI (see the README):
//!
//! - export `describe` (no input) → the JSON tool list ([`crate::runtime::described`]);
//! - export `call`, input `{"tool", "arguments", "session_id", "call_id",
//!   "cwd"}` → the tool's result as text, or an Extism error (the PDK's
//!   `Err(...)`), which the model reads as the tool's error.
//!
//! The plugin's grants become its Extism manifest: granted network patterns →
//! `allowed_hosts` (host names only: Extism does not check ports), granted
//! directories → `allowed_paths` (`ro:` for read-only), `limits.memory-mb` →
//! `memory.max_pages`, `limits.timeout-ms` → `timeout_ms`, `[config]` and
//! granted env vars → `config`. Each call runs in a fresh `extism::Plugin`
//! made from a `CompiledPlugin` (compiled once per process and placement, not
//! cached on disk: see [`cache_config`]) on a thread of its own.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use extism::{CompiledPlugin, PluginBuilder, Wasm};
use tokio_util::sync::CancellationToken;

use crate::error::CallError;
use crate::log::{LogLevel, LogSource};
use crate::sandbox::Sandbox;
use crate::state::PluginShared;
use talaria_plugin_manifest::Access;

/// How long past its deadline the host waits for a call that is blocked
/// outside wasm (an HTTP request) before giving up on it.
const HOST_WAIT_GRACE: Duration = Duration::from_millis(500);

/// How often a cancelled call's plugin is told again to stop.
const CANCEL_REPEAT: Duration = Duration::from_millis(10);

/// How long after a plugin is instantiated its call is first told to stop.
const CANCEL_SETTLE: Duration = Duration::from_millis(5);

/// Largest HTTP response body an Extism plugin may receive, at most its
/// memory limit.
const MAX_HTTP_RESPONSE_BYTES: u64 = 16 << 20;

/// A loaded Extism plugin. Compiling a module takes about 0.15 s
/// (measured: `plugin_calls` bench) in every process, so it happens on first
/// use: at load only when its tool list is not remembered
/// ([`ExtismPlugin::described_name`]), else in the background once the
/// plugin is placed in a working directory ([`ExtismPlugin::prepare`]).
pub(crate) struct ExtismPlugin {
    /// The manifest every call starts from (no directories yet).
    base: extism::Manifest,
    /// wasmtime's cache configuration (a file in the host's cache directory).
    cache_config: Option<PathBuf>,
    /// Compiled for calls without directories (`describe`, plugins granted no
    /// filesystem), on first use.
    bare: OnceLock<Result<Arc<CompiledPlugin>, String>>,
    /// Names the module's tool list in the cache: what `describe` sees.
    described_name: String,
}

/// A plugin placed in one working directory: compiled, on first use, with
/// the directories its grants resolve to there.
#[derive(Default)]
pub(crate) struct Placement(Arc<OnceLock<Result<Arc<CompiledPlugin>, String>>>);

/// Extism modules are compiled in each process, never loaded compiled from
/// disk: wasmtime's own cache deserialises what it finds without checking who
/// wrote it, so a file planted in the profile's cache would run as native code
/// (components go through [`crate::cache`], which verifies a MAC instead). A
/// cache directory left by an earlier version is removed. Always `None`.
pub(crate) fn cache_config(cache_dir: &Path) -> Option<PathBuf> {
    let _ = std::fs::remove_dir_all(cache_dir.join("extism"));
    None
}

/// The Extism `allowed_hosts` glob for a granted `host:port` pattern: its host
/// (Extism matches the URL's host name against globs and ignores ports), with
/// glob metacharacters escaped except a leading `*.` or a lone `*`.
fn host_glob(pattern: &str) -> Option<String> {
    let (host, _port) = pattern.rsplit_once(':')?;
    Some(match host.strip_prefix("*.") {
        _ if host == "*" => "*".to_owned(),
        Some(suffix) => format!("*.{}", extism_glob_escape(suffix)),
        None => extism_glob_escape(host),
    })
}

/// Escapes `?`, `*`, `[` and `]` the way `glob::Pattern::escape` does.
fn extism_glob_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '?' | '*' | '[' | ']' => {
                out.push('[');
                out.push(c);
                out.push(']');
            }
            c => out.push(c),
        }
    }
    out
}

/// `allowed_paths` for a sandbox's preopens: host path (`ro:`-prefixed when
/// read-only) → guest path. `$CWD` is mapped at its absolute path and at
/// `.`, under a second spelling of the host path (`<dir>/.`) since the map
/// is keyed by host path.
fn allowed_paths(sandbox: &Sandbox) -> Result<BTreeMap<String, PathBuf>, String> {
    let mut paths = BTreeMap::new();
    for preopen in &sandbox.preopens {
        let host = preopen
            .host
            .to_str()
            .ok_or_else(|| format!("{} is not valid UTF-8", preopen.host.display()))?;
        let host = if preopen.guest == "." {
            format!("{}/.", host.trim_end_matches('/'))
        } else {
            host.to_owned()
        };
        let key = match preopen.access {
            Access::ReadOnly => format!("ro:{host}"),
            Access::ReadWrite => host,
        };
        paths.insert(key, PathBuf::from(&preopen.guest));
    }
    Ok(paths)
}

fn compile(
    manifest: extism::Manifest,
    cache_config: Option<&Path>,
) -> Result<CompiledPlugin, String> {
    let builder = PluginBuilder::new(manifest).with_wasi(true);
    let builder = match cache_config {
        Some(path) => builder.with_cache_config(path),
        None => builder.with_cache_disabled(),
    };
    CompiledPlugin::new(builder).map_err(|e| format!("{e:#}"))
}

impl ExtismPlugin {
    /// The plugin for `wasm` with the plugin's limits, hosts and config; nothing
    /// is compiled yet.
    pub(crate) fn new(shared: &PluginShared, wasm: Vec<u8>, cache_config: Option<PathBuf>) -> Self {
        let mut config = shared.config.clone();
        for name in &shared.caps.env {
            if let Some(value) = talaria_environ::var(name) {
                config.insert(name.clone(), value);
            }
        }
        let pages = shared.limits.memory_mb.saturating_mul(16);
        let hosts: Vec<String> = shared
            .caps
            .network
            .iter()
            .filter_map(|p| host_glob(p))
            .collect();
        // Everything `describe` runs with; variable values only enter the hash.
        let settings = serde_json::json!({
            "config": config,
            "hosts": hosts,
            "pages": pages,
            "timeout_ms": shared.limits.timeout_ms,
        });
        let described_name = format!(
            "{}.json",
            blake3::Hasher::new()
                .update(&wasm)
                .update(settings.to_string().as_bytes())
                .finalize()
                .to_hex()
        );
        let mut base = extism::Manifest::new([Wasm::data(wasm)])
            .with_memory_max(pages)
            .with_timeout(shared.timeout())
            .with_allowed_hosts(hosts.into_iter())
            .with_config(config.into_iter());
        base.memory.max_http_response_bytes =
            Some(MAX_HTTP_RESPONSE_BYTES.min(u64::from(shared.limits.memory_mb) << 20));
        Self {
            base,
            cache_config,
            bare: OnceLock::new(),
            described_name,
        }
    }

    /// The name the module's tool list is remembered under: a hash of the
    /// module and of the settings `describe` runs with.
    pub(crate) fn described_name(&self) -> &str {
        &self.described_name
    }

    /// The module compiled without directories, checked for the tool ABI's
    /// exports (compiled now if need be: blocking, call it on a blocking thread).
    pub(crate) fn bare(&self) -> Result<Arc<CompiledPlugin>, String> {
        self.bare
            .get_or_init(|| {
                let bare = compile(self.base.clone(), self.cache_config.as_deref())?;
                let plugin =
                    extism::Plugin::new_from_compiled(&bare).map_err(|e| format!("{e:#}"))?;
                for export in ["describe", "call"] {
                    if !plugin.function_exists(export) {
                        return Err(format!(
                            "the module does not export `{export}` (the Extism tool ABI needs \
                             `describe` and `call`)"
                        ));
                    }
                }
                Ok(Arc::new(bare))
            })
            .clone()
    }

    /// Runs `describe` in a fresh plugin; the raw tool list.
    pub(crate) async fn describe(
        self: &Arc<Self>,
        shared: &Arc<PluginShared>,
    ) -> Result<Vec<u8>, CallError> {
        let this = self.clone();
        let bare = compile_off_thread(shared, "compiling", move || this.bare()).await?;
        run(bare, shared, "describe", Vec::new(), "describe", None).await
    }

    /// Starts compiling, on a thread of its own, what calls in `sandbox` will
    /// need, so the first call does not wait for all of it.
    pub(crate) fn prepare(self: &Arc<Self>, placement: &Placement, sandbox: &Sandbox) {
        let this = self.clone();
        let placement = Placement(placement.0.clone());
        let sandbox = sandbox.clone();
        let _ = std::thread::Builder::new()
            .name("extism compile".to_owned())
            .spawn(move || {
                let _ = this.compiled_for(&placement, &sandbox);
            });
    }

    /// The compiled plugin for calls in `sandbox` (compiled on first use when
    /// the sandbox has directories).
    fn compiled_for(
        &self,
        placement: &Placement,
        sandbox: &Sandbox,
    ) -> Result<Arc<CompiledPlugin>, String> {
        if sandbox.preopens.is_empty() {
            return self.bare();
        }
        placement
            .0
            .get_or_init(|| {
                let mut manifest = self.base.clone();
                manifest.allowed_paths = Some(allowed_paths(sandbox)?);
                compile(manifest, self.cache_config.as_deref()).map(Arc::new)
            })
            .clone()
    }

    /// Calls `tool` in a fresh plugin.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn call(
        self: &Arc<Self>,
        placement: &Placement,
        shared: &Arc<PluginShared>,
        sandbox: &Sandbox,
        tool: &str,
        arguments: &str,
        context: &crate::bindings::CallContext,
        cancel: &CancellationToken,
    ) -> Result<String, CallError> {
        let arguments: serde_json::Value = serde_json::from_str(arguments)
            .map_err(|e| CallError::Tool(format!("invalid arguments: {e}")))?;
        let input = serde_json::json!({
            "tool": tool,
            "arguments": arguments,
            "session_id": context.session_id,
            "call_id": context.call_id,
            "cwd": context.cwd,
        })
        .to_string()
        .into_bytes();
        let compiled = {
            let this = self.clone();
            let placement = Placement(placement.0.clone());
            let sandbox = sandbox.clone();
            compile_off_thread(shared, "compiling for this directory", move || {
                this.compiled_for(&placement, &sandbox)
            })
            .await?
        };
        let output = run(compiled, shared, "call", input, tool, Some(cancel)).await?;
        shared.log_failure(
            String::from_utf8(output).map_err(|e| CallError::InvalidOutput {
                plugin: shared.name.clone(),
                tool: tool.to_owned(),
                message: format!("not UTF-8: {e}"),
            }),
        )
    }
}

/// Runs `compile` on a blocking thread (it waits for a compilation already
/// under way); a failure is a host error of the plugin, prefixed with `what`.
async fn compile_off_thread(
    shared: &PluginShared,
    what: &str,
    compile: impl FnOnce() -> Result<Arc<CompiledPlugin>, String> + Send + 'static,
) -> Result<Arc<CompiledPlugin>, CallError> {
    tokio::task::spawn_blocking(compile)
        .await
        .map_err(|e| e.to_string())
        .and_then(|r| r)
        .map_err(|message| CallError::Host {
            plugin: shared.name.clone(),
            message: format!("{what}: {message}"),
        })
}

/// A call's result as Extism gives it: output, or error and return code.
type Outcome = Result<Vec<u8>, (extism::Error, i32)>;

/// What the caller and the thread running a call share.
#[derive(Default)]
struct RunningCall {
    /// Set by the caller: the thread must not start the call.
    cancelled: AtomicBool,
    /// Set by the thread when it has finished.
    done: AtomicBool,
    /// The plugin's cancel handle, once it is instantiated.
    handle: Mutex<Option<extism::CancelHandle>>,
}

/// Calls `export` with `input` in a fresh plugin on a thread of its own; a
/// cancellation returns at once and stops the plugin ([`stop_cancelled`]).
/// The thread is not one of the runtime's blocking threads, so a call that
/// cannot be stopped never holds up the runtime's shutdown.
async fn run(
    compiled: Arc<CompiledPlugin>,
    shared: &Arc<PluginShared>,
    export: &'static str,
    input: Vec<u8>,
    tool: &str,
    cancel: Option<&CancellationToken>,
) -> Result<Vec<u8>, CallError> {
    let running = Arc::new(RunningCall::default());
    let (result_tx, result_rx) = tokio::sync::oneshot::channel::<Outcome>();
    let started = Instant::now();
    let thread = {
        let running = running.clone();
        std::thread::Builder::new()
            .name(format!("extism {}", shared.name))
            .spawn(move || {
                let outcome = call_in_fresh_plugin(&compiled, &running, export, &input);
                running.done.store(true, Ordering::SeqCst);
                let _ = result_tx.send(outcome);
            })
    };
    let plugin = shared.name.clone();
    if let Err(error) = thread {
        return shared.log_failure(Err(CallError::Host {
            plugin,
            message: format!("no thread for the call to {tool}: {error}"),
        }));
    }
    let limit = shared.timeout() + HOST_WAIT_GRACE;
    let never = CancellationToken::new();
    let cancel = cancel.unwrap_or(&never);
    let finished = tokio::select! {
        biased;
        () = cancel.cancelled() => None,
        finished = tokio::time::timeout(limit, result_rx) => Some(finished),
    };
    let outcome = match finished {
        None => {
            running.cancelled.store(true, Ordering::SeqCst);
            tokio::spawn(stop_cancelled(running, shared.clone(), tool.to_owned()));
            Err(CallError::Cancelled {
                plugin,
                tool: tool.to_owned(),
            })
        }
        Some(Err(_)) => Err(CallError::Timeout {
            plugin,
            tool: tool.to_owned(),
            timeout_ms: shared.limits.timeout_ms,
        }),
        Some(Ok(Err(_))) => Err(CallError::Host {
            plugin,
            message: format!("the call to {tool} ended without a result"),
        }),
        Some(Ok(Ok(Ok(output)))) => Ok(output),
        Some(Ok(Ok(Err((error, code))))) => {
            Err(classify(shared, tool, &error, code, started.elapsed()))
        }
    };
    shared.log_failure(outcome)
}

/// The body of a call's thread.
fn call_in_fresh_plugin(
    compiled: &CompiledPlugin,
    running: &RunningCall,
    export: &str,
    input: &[u8],
) -> Outcome {
    let mut plugin = extism::Plugin::new_from_compiled(compiled).map_err(|e| (e, -1))?;
    *running
        .handle
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(plugin.cancel_handle());
    if running.cancelled.load(Ordering::SeqCst) {
        return Err((extism::Error::msg("cancelled before it started"), -1));
    }
    plugin.call_get_error_code::<&[u8], Vec<u8>>(export, input)
}

/// Stops a cancelled call's plugin and logs whether it stopped. Extism only
/// honours a cancel while the call is registered with its timer (from the
/// call's start to its end), so a cancel landing while the plugin is still
/// being set up is lost: it is repeated until the call has ended, for at
/// most the plugin's timeout. Extism has a second race: a cancel handled
/// after the call registered but before it armed its deadline is used up
/// without stopping it, and the call then runs with no timeout; waiting
/// [`CANCEL_SETTLE`] after the plugin exists keeps the first cancel clear of
/// that moment, and if the call still runs on, the log says so.
async fn stop_cancelled(running: Arc<RunningCall>, shared: Arc<PluginShared>, tool: String) {
    let started = Instant::now();
    let give_up = shared.timeout() + HOST_WAIT_GRACE;
    let mut handle_seen = None;
    while !running.done.load(Ordering::SeqCst) && started.elapsed() < give_up {
        let handle = running
            .handle
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        if let Some(handle) = handle {
            let seen = *handle_seen.get_or_insert_with(Instant::now);
            if seen.elapsed() >= CANCEL_SETTLE {
                let _ = handle.cancel();
            }
        }
        tokio::time::sleep(CANCEL_REPEAT).await;
    }
    let (level, message) = if running.done.load(Ordering::SeqCst) {
        let ms = started.elapsed().as_millis();
        (
            LogLevel::Info,
            format!("cancelled {tool}: stopped after {ms} ms"),
        )
    } else {
        (
            LogLevel::Warn,
            format!(
                "cancelled {tool}: still running after {} ms; its thread is left to end on its own",
                give_up.as_millis()
            ),
        )
    };
    shared.log.push(level, LogSource::Host, &message);
}

/// What an Extism error means: Extism reports a timeout as `timeout`, memory
/// exhaustion as `oom`, a trap with the trap in the error chain (return code
/// 134), a WASI exit with its code, its own failures with -1; anything else is
/// the plugin's own error message.
fn classify(
    shared: &PluginShared,
    tool: &str,
    error: &extism::Error,
    code: i32,
    elapsed: Duration,
) -> CallError {
    let plugin = shared.name.clone();
    let tool = tool.to_owned();
    let text = error.to_string();
    let trap = error
        .chain()
        .find_map(|cause| cause.downcast_ref::<wasmtime::Trap>());
    if text == "timeout" {
        // One engine per plugin: another call's timeout interrupts this one too.
        return if elapsed + Duration::from_millis(50) >= shared.timeout() {
            CallError::Timeout {
                plugin,
                tool,
                timeout_ms: shared.limits.timeout_ms,
            }
        } else {
            CallError::Host {
                plugin,
                message: format!(
                    "{tool} was interrupted (another call of this plugin timed out or was cancelled)"
                ),
            }
        };
    }
    if text == "oom" {
        return CallError::OutOfMemory {
            plugin,
            tool,
            limit_mb: shared.limits.memory_mb,
        };
    }
    if let Some(exit) = error.downcast_ref::<wasmtime_wasi::I32Exit>() {
        return CallError::Trap {
            plugin,
            tool,
            message: format!("exited with code {}", exit.0),
        };
    }
    if trap.is_some() || code == 134 {
        let message = match trap {
            Some(trap) => {
                let text = trap.to_string();
                text.strip_prefix("wasm trap: ").unwrap_or(&text).to_owned()
            }
            None => format!("{error:#}"),
        };
        return CallError::Trap {
            plugin,
            tool,
            message,
        };
    }
    if code == -1 {
        return CallError::Host {
            plugin,
            message: format!("{tool}: {error:#}"),
        };
    }
    CallError::Tool(text)
}

/// Loads the Extism module of the plugin in `dir`: its tool list is read
/// from the cache when remembered, else the module is compiled (on a
/// blocking thread), described and its list remembered.
pub(crate) async fn load(
    host: &Arc<crate::host::HostInner>,
    dir: &Path,
    manifest: &talaria_plugin_manifest::Manifest,
    shared: &Arc<PluginShared>,
) -> Result<super::Loaded, crate::error::LoadError> {
    use crate::error::LoadError;
    let name = &manifest.name;
    let file = dir.join(&manifest.wasm);
    let (wasm, _) =
        talaria_plugin_manifest::files::read_regular(&file).map_err(|source| LoadError::Wasm {
            plugin: name.clone(),
            path: file.clone(),
            source,
        })?;
    let cache = host
        .extism_cache
        .get_or_init(|| cache_config(&host.cache_dir))
        .clone();
    let plugin = Arc::new(ExtismPlugin::new(shared, wasm, cache));
    let remembered = host
        .cache
        .record(crate::cache::Record::Described, plugin.described_name());
    let (tools, origin) =
        match remembered.and_then(|raw| super::described::parse_tools(name, &raw).ok()) {
            Some(tools) => (tools, crate::cache::Origin::Cached),
            None => {
                let for_compile = plugin.clone();
                tokio::task::spawn_blocking(move || for_compile.bare())
                    .await
                    .map_err(|e| super::blocking_failed(name, &e))?
                    .map_err(|message| LoadError::Extism {
                        plugin: name.clone(),
                        message: format!("{}: {message}", file.display()),
                    })?;
                let raw = plugin
                    .describe(shared)
                    .await
                    .map_err(|e| LoadError::ListTools {
                        plugin: name.clone(),
                        message: format!("describe failed: {e}"),
                    })?;
                let tools = super::described::parse_tools(name, &raw)?;
                host.cache.store_record(
                    crate::cache::Record::Described,
                    plugin.described_name(),
                    &raw,
                );
                (tools, crate::cache::Origin::Compiled)
            }
        };
    super::log_loaded(manifest, dir, shared);
    Ok(super::tools_only(
        manifest,
        crate::kinds::tools::ToolRunner::Extism(plugin),
        tools,
        origin,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::Preopen;

    #[test]
    fn network_patterns_become_host_globs() {
        for (pattern, glob) in [
            ("api.example.org:443", "api.example.org"),
            ("*.example.org:443", "*.example.org"),
            ("127.0.0.1:*", "127.0.0.1"),
            ("[::1]:8080", "[[]::1[]]"),
            ("*:443", "*"),
        ] {
            assert_eq!(host_glob(pattern).as_deref(), Some(glob), "{pattern}");
        }
    }

    #[test]
    fn preopens_become_allowed_paths_with_read_only_marked() {
        let sandbox = Sandbox {
            preopens: vec![
                Preopen {
                    host: "/work".into(),
                    guest: ".".into(),
                    access: Access::ReadWrite,
                },
                Preopen {
                    host: "/work".into(),
                    guest: "/work".into(),
                    access: Access::ReadWrite,
                },
                Preopen {
                    host: "/opt/docs".into(),
                    guest: "/opt/docs".into(),
                    access: Access::ReadOnly,
                },
            ],
            guest_cwd: Some("/work".into()),
            host_cwd: Some("/work".into()),
        };
        let paths = allowed_paths(&sandbox).unwrap();
        let expected: BTreeMap<String, PathBuf> = [
            ("/work/.".to_owned(), PathBuf::from(".")),
            ("/work".to_owned(), PathBuf::from("/work")),
            ("ro:/opt/docs".to_owned(), PathBuf::from("/opt/docs")),
        ]
        .into();
        assert_eq!(paths, expected);
    }
}
