//! Native plugins: shared libraries with the Talaria native C ABI, version
//! [`NATIVE_ABI_VERSION`]:
//!
//! ```c
//! uint32_t    talaria_native_abi_version(void);
//! const char *talaria_describe(void);   /* JSON tool list; owned by the library */
//! char       *talaria_call(const char *tool, const char *args_json);
//!                                       /* {"ok": <string or JSON>} or {"error": "..."} */
//! void        talaria_free(char *result);  /* frees what talaria_call returned */
//! ```
//!
//! Native code is trusted, not sandboxed: it runs in the agent's process with
//! the agent's privileges, and nothing here can contain it. What the host
//! does: it refuses to load one without a `trust-native` grant (the agent also
//! loads them only from the user's plugin directory), checks the ABI version
//! before anything else, calls tools on a blocking thread, turns a null or
//! malformed result into a tool error, and stops waiting at the plugin's
//! `timeout-ms` (the call itself cannot be stopped and runs on). A crash or a
//! panic unwinding out of the library (undefined behaviour; Rust aborts)
//! takes the process down: `catch_unwind` cannot cross the C ABI.
//!
//! This module is the crate's only `unsafe` code besides the compile cache's
//! deserialisation, allowed here because calling a C ABI is nothing else.
#![allow(unsafe_code)]

use std::ffi::{CStr, CString, c_char};
use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use crate::error::{CallError, LoadError};
use crate::state::PluginShared;

/// The native ABI version this host implements.
pub const NATIVE_ABI_VERSION: u32 = 1;

type AbiVersionFn = unsafe extern "C" fn() -> u32;
type DescribeFn = unsafe extern "C" fn() -> *const c_char;
type CallFn = unsafe extern "C" fn(*const c_char, *const c_char) -> *mut c_char;
type FreeFn = unsafe extern "C" fn(*mut c_char);

/// A loaded library and its two entry points for calls.
pub(crate) struct NativeLibrary {
    call: CallFn,
    free: FreeFn,
    /// Keeps `call` and `free` valid; unloaded when the last call is over.
    _library: libloading::Library,
}

impl std::fmt::Debug for NativeLibrary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NativeLibrary").finish_non_exhaustive()
    }
}

/// What `talaria_call` returns.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "lowercase")]
enum NativeResult {
    Ok(serde_json::Value),
    Error(String),
}

/// Copies a NUL-terminated string the library returned.
///
/// # Safety
/// `ptr` is non-null and points to a NUL-terminated string.
unsafe fn copy_string(ptr: *const c_char) -> Vec<u8> {
    // SAFETY: guaranteed by the caller.
    unsafe { CStr::from_ptr(ptr) }.to_bytes().to_vec()
}

impl NativeLibrary {
    /// Loads the library at `path`, checks its ABI version and returns it
    /// with its raw tool list. Blocking (runs the library's initialisers).
    pub(crate) fn load(plugin: &str, path: &Path) -> Result<(Self, Vec<u8>), LoadError> {
        let failed = |message: String| LoadError::Native {
            plugin: plugin.to_owned(),
            message,
        };
        // SAFETY: loading a library runs its initialisers with our
        // privileges; the user granted this plugin `trust-native`, which is
        // exactly the decision to let it.
        let library = unsafe { libloading::Library::new(path) }
            .map_err(|e| failed(format!("loading {}: {e}", path.display())))?;
        // SAFETY: the symbols are looked up with the signatures the ABI
        // documents; a library exporting them with others is broken in a way
        // no loader can detect.
        let (version, describe, call, free) = unsafe {
            let missing = |name: &str, e: libloading::Error| failed(format!("missing {name}: {e}"));
            (
                *library
                    .get::<AbiVersionFn>(b"talaria_native_abi_version\0")
                    .map_err(|e| missing("talaria_native_abi_version", e))?,
                *library
                    .get::<DescribeFn>(b"talaria_describe\0")
                    .map_err(|e| missing("talaria_describe", e))?,
                *library
                    .get::<CallFn>(b"talaria_call\0")
                    .map_err(|e| missing("talaria_call", e))?,
                *library
                    .get::<FreeFn>(b"talaria_free\0")
                    .map_err(|e| missing("talaria_free", e))?,
            )
        };
        // SAFETY: a function of the documented signature, from the library.
        let abi = unsafe { version() };
        if abi != NATIVE_ABI_VERSION {
            return Err(LoadError::ApiVersion {
                plugin: plugin.to_owned(),
                message: format!(
                    "the library implements native ABI version {abi} but this host supports \
                     version {NATIVE_ABI_VERSION}"
                ),
            });
        }
        // SAFETY: as above; the result is checked for null before use.
        let described = unsafe { describe() };
        if described.is_null() {
            return Err(failed("talaria_describe returned null".into()));
        }
        // SAFETY: non-null; the ABI says it is a NUL-terminated string the
        // library keeps alive (it is copied at once anyway).
        let tools = unsafe { copy_string(described) };
        Ok((
            Self {
                call,
                free,
                _library: library,
            },
            tools,
        ))
    }

    /// One call on the current thread; the result text or why there is none.
    fn call_blocking(&self, tool: &CStr, arguments: &CStr) -> Result<Vec<u8>, String> {
        // SAFETY: two NUL-terminated strings that outlive the call, to a
        // function of the documented signature.
        let result = unsafe { (self.call)(tool.as_ptr(), arguments.as_ptr()) };
        if result.is_null() {
            return Err("talaria_call returned null".into());
        }
        // SAFETY: non-null, NUL-terminated per the ABI; copied, then handed
        // back to the library that allocated it, once.
        let bytes = unsafe { copy_string(result) };
        unsafe { (self.free)(result) };
        Ok(bytes)
    }
}

/// Calls `tool` on a blocking thread. The host stops waiting at the plugin's
/// timeout or on cancellation; the native call itself runs to its end.
pub(crate) async fn call(
    library: &Arc<NativeLibrary>,
    shared: &Arc<PluginShared>,
    tool: &str,
    arguments: &str,
    cancel: &CancellationToken,
) -> Result<String, CallError> {
    let plugin = shared.name.clone();
    let tool_c = CString::new(tool).map_err(|_| CallError::Tool("invalid tool name".into()))?;
    let arguments_c = CString::new(arguments)
        .map_err(|_| CallError::Tool("invalid arguments: a NUL character".into()))?;
    let library = library.clone();
    let task = tokio::task::spawn_blocking(move || library.call_blocking(&tool_c, &arguments_c));
    let outcome = tokio::select! {
        biased;
        () = cancel.cancelled() => Err(CallError::Cancelled { plugin, tool: tool.to_owned() }),
        joined = tokio::time::timeout(shared.timeout(), task) => match joined {
            Err(_) => Err(CallError::Timeout {
                plugin,
                tool: tool.to_owned(),
                timeout_ms: shared.limits.timeout_ms,
            }),
            Ok(Err(join)) => Err(CallError::Trap {
                plugin,
                tool: tool.to_owned(),
                message: format!("the call failed: {join}"),
            }),
            Ok(Ok(Err(message))) => Err(CallError::Trap { plugin, tool: tool.to_owned(), message }),
            Ok(Ok(Ok(bytes))) => match serde_json::from_slice::<NativeResult>(&bytes) {
                Ok(NativeResult::Ok(serde_json::Value::String(text))) => Ok(text),
                Ok(NativeResult::Ok(value)) => Ok(value.to_string()),
                Ok(NativeResult::Error(message)) => Err(CallError::Tool(message)),
                Err(e) => Err(CallError::InvalidOutput {
                    plugin,
                    tool: tool.to_owned(),
                    message: format!("expected {{\"ok\": ...}} or {{\"error\": \"...\"}}: {e}"),
                }),
            },
        },
    };
    shared.log_failure(outcome)
}

/// Loads the native library of the plugin in `dir` (on a blocking thread: it
/// runs the library's initialisers); refused without the `trust-native` grant.
pub(crate) async fn load(
    dir: &Path,
    manifest: &talaria_plugin_manifest::Manifest,
    shared: &Arc<PluginShared>,
) -> Result<super::Loaded, LoadError> {
    let name = &manifest.name;
    if !shared.caps.trust_native {
        return Err(LoadError::NotTrusted {
            plugin: name.clone(),
        });
    }
    let file = dir.join(&manifest.wasm);
    // The loader would block opening a FIFO; only a regular file is handed to it
    // (a missing one is the loader's to report).
    if let Ok(metadata) = std::fs::metadata(&file) {
        talaria_plugin_manifest::files::require_regular(&metadata).map_err(|source| {
            LoadError::Wasm {
                plugin: name.clone(),
                path: file.clone(),
                source,
            }
        })?;
    }
    let plugin = name.clone();
    let (library, raw) = tokio::task::spawn_blocking(move || NativeLibrary::load(&plugin, &file))
        .await
        .map_err(|e| super::blocking_failed(name, &e))??;
    let tools = super::described::parse_tools(name, &raw)?;
    super::log_loaded(manifest, dir, shared);
    Ok(super::tools_only(
        manifest,
        crate::kinds::tools::ToolRunner::Native(Arc::new(library)),
        tools,
        crate::cache::Origin::Compiled,
    ))
}
