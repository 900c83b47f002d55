//! One plugin invocation: a fresh store with the plugin's limits, the race
//! between the call, its deadline and cancellation, and the classification of
//! how it ended (trap, timeout, memory limit, panic) into a [`CallError`].

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use wasmtime::component::ResourceTable;
use wasmtime::{Engine, PoolConcurrencyLimitError, Store, Trap, UpdateDeadline};
use wasmtime_wasi_http::WasiHttpCtx;

use crate::cache::error_text;
use crate::error::CallError;
use crate::imports::http::HttpPolicy;
use crate::imports::net::Refusals;
use crate::log::{CapturedOutput, LogSource, MAX_OUTPUT_BYTES_PER_CALL};
use crate::sandbox::Sandbox;
use crate::state::{HostCtx, MemoryLimiter, PluginShared, PluginState};

/// How long past its deadline a call blocked in the host (not running wasm,
/// so not interrupted by the epoch) may take before it is dropped.
const HOST_WAIT_GRACE: Duration = Duration::from_millis(500);

/// What a call needs from a loaded plugin, besides the kind's `InstancePre`.
pub(crate) struct Invocation<'a> {
    pub(crate) engine: &'a Engine,
    pub(crate) shared: &'a Arc<PluginShared>,
}

/// A store for one instance, with its captured output.
pub(crate) struct Prepared {
    pub(crate) store: Store<PluginState>,
    stdout: CapturedOutput,
    stderr: CapturedOutput,
}

/// Which session and tool (or hook) a store serves, for `exec` approval.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct CallFor<'a> {
    pub(crate) session_id: &'a str,
    pub(crate) tool: &'a str,
}

pub(crate) fn prepare(
    inv: &Invocation<'_>,
    sandbox: &Sandbox,
    call_for: CallFor<'_>,
) -> Result<Prepared, CallError> {
    let shared = inv.shared;
    let stdout = CapturedOutput::new(MAX_OUTPUT_BYTES_PER_CALL);
    let stderr = CapturedOutput::new(MAX_OUTPUT_BYTES_PER_CALL);
    // One record of refusals for the instance's sockets and HTTP requests.
    let refused = Refusals::default();
    let wasi = sandbox
        .wasi_ctx(shared, &stdout, &stderr, &refused)
        .map_err(|message| CallError::Host {
            plugin: shared.name.clone(),
            message,
        })?;
    let state = PluginState {
        wasi,
        http: WasiHttpCtx::new(),
        http_policy: HttpPolicy {
            plugin: shared.name.clone(),
            net: shared.net.clone(),
            log: shared.log.clone(),
            secrets: shared.secrets.clone(),
            egress: shared.egress.clone(),
            refused,
        },
        table: ResourceTable::new(),
        limiter: MemoryLimiter::new(shared.memory_limit_bytes()),
        host: HostCtx {
            plugin: shared.clone(),
            cwd: sandbox.host_cwd.clone(),
            deadline: Instant::now() + shared.timeout(),
            session_id: call_for.session_id.to_owned(),
            tool: call_for.tool.to_owned(),
        },
        timed_out: false,
        chat: None,
    };
    let mut store = Store::new(inv.engine, state);
    store.limiter(|state| &mut state.limiter);
    // Every epoch tick (10 ms) the guest yields to the executor, so a
    // cancelled or timed-out call is dropped promptly even while it spins;
    // past the deadline it traps.
    store.epoch_deadline_callback(|mut ctx| {
        if Instant::now() >= ctx.data().host.deadline {
            ctx.data_mut().timed_out = true;
            Ok(UpdateDeadline::Interrupt)
        } else {
            Ok(UpdateDeadline::YieldCustom(
                1,
                Box::pin(tokio::task::yield_now()),
            ))
        }
    });
    store.set_epoch_deadline(1);
    Ok(Prepared {
        store,
        stdout,
        stderr,
    })
}

/// Runs `call` once in a fresh store, as a kind does at load to read what it
/// lists: no sandbox, no session, within the plugin's time limit; `name`
/// labels the call in logs and errors.
pub(crate) async fn once_at_load<R>(
    inv: &Invocation<'_>,
    name: &str,
    call: impl AsyncFnOnce(&mut Store<PluginState>) -> wasmtime::Result<R>,
) -> Result<R, CallError> {
    let call_for = CallFor {
        session_id: "",
        tool: name,
    };
    let mut prepared = prepare(inv, &Sandbox::default(), call_for)?;
    let raced = race(call(&mut prepared.store), inv.shared.timeout(), None).await;
    classify(raced, &prepared, inv.shared, name)
}

/// How the race between a call, its deadline and cancellation ended.
pub(crate) enum Raced<R> {
    Done(wasmtime::Result<R>),
    Cancelled,
    HostTimeout,
}

pub(crate) async fn race<R>(
    call: impl Future<Output = wasmtime::Result<R>>,
    timeout: Duration,
    cancel: Option<&CancellationToken>,
) -> Raced<R> {
    let call = tokio::time::timeout(timeout + HOST_WAIT_GRACE, call);
    let finished = |r: Result<wasmtime::Result<R>, tokio::time::error::Elapsed>| {
        r.map_or(Raced::HostTimeout, Raced::Done)
    };
    match cancel {
        Some(cancel) => tokio::select! {
            biased;
            () = cancel.cancelled() => Raced::Cancelled,
            r = call => finished(r),
        },
        None => finished(call.await),
    }
}

/// The panic message a Rust guest printed to stderr, if any.
fn panic_message(stderr: &str) -> Option<String> {
    let mut lines = stderr.lines();
    while let Some(line) = lines.next() {
        if let Some(at) = line.find("panicked at") {
            let location = line[at..].trim_end_matches(':');
            let message = lines.next().unwrap_or("").trim();
            return Some(if message.is_empty() {
                location.to_owned()
            } else {
                format!("{location}: {message}")
            });
        }
    }
    None
}

/// Turns the end of a call into a result, logs what happened.
pub(crate) fn classify<R>(
    raced: Raced<R>,
    prepared: &Prepared,
    shared: &PluginShared,
    tool: &str,
) -> Result<R, CallError> {
    let stderr_bytes = prepared.stderr.snapshot();
    prepared.stdout.flush_into(&shared.log, LogSource::Stdout);
    prepared.stderr.flush_into(&shared.log, LogSource::Stderr);
    let plugin = shared.name.clone();
    let tool = tool.to_owned();
    let state = prepared.store.data();
    let result = match raced {
        Raced::Done(Ok(value)) => Ok(value),
        Raced::Cancelled => Err(CallError::Cancelled { plugin, tool }),
        Raced::HostTimeout => Err(CallError::Timeout {
            plugin,
            tool,
            timeout_ms: shared.limits.timeout_ms,
        }),
        Raced::Done(Err(_)) if state.timed_out => Err(CallError::Timeout {
            plugin,
            tool,
            timeout_ms: shared.limits.timeout_ms,
        }),
        Raced::Done(Err(_)) if state.limiter.exceeded => Err(CallError::OutOfMemory {
            plugin,
            tool,
            limit_mb: shared.limits.memory_mb,
        }),
        Raced::Done(Err(err)) if err.downcast_ref::<PoolConcurrencyLimitError>().is_some() => {
            Err(CallError::Host {
                plugin,
                message: format!("too many plugin instances at once; {tool} did not run"),
            })
        }
        Raced::Done(Err(err)) => {
            let mut message = match err.downcast_ref::<Trap>() {
                Some(trap) => {
                    let text = trap.to_string();
                    text.strip_prefix("wasm trap: ").unwrap_or(&text).to_owned()
                }
                None => error_text(&err),
            };
            if let Some(panic) = panic_message(&String::from_utf8_lossy(&stderr_bytes)) {
                message = format!("{message} ({panic})");
            }
            let message = state.http_policy.refused.explain(message);
            Err(CallError::Trap {
                plugin,
                tool,
                message,
            })
        }
    };
    shared.log_failure(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_panic_messages() {
        let stderr = "\nthread '<unnamed>' panicked at src/lib.rs:12:5:\nboom\nnote: run with `RUST_BACKTRACE=1`\n";
        assert_eq!(
            panic_message(stderr).as_deref(),
            Some("panicked at src/lib.rs:12:5: boom")
        );
        assert_eq!(panic_message("nothing"), None);
    }
}
