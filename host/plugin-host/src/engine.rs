//! The process-wide wasmtime engine and its epoch ticker.

use std::sync::OnceLock;
use std::time::Duration;

use wasmtime::component::{HasSelf, Linker};
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

use crate::bindings::{ToolPlugin, chat_world};
use crate::cache::error_text;
use crate::state::{HostCtx, PluginState};

/// How often the epoch advances. Calls yield to the async executor once per
/// tick, which is what makes timeouts and cancellation prompt.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);

/// Set to `0`/`off`/`false` to use on-demand allocation instead of the
/// pooling allocator (read once, when the engine is created).
pub const POOLING_ENV: &str = "TALARIA_WASM_POOLING";

/// Concurrent component instances the pool holds (calls in flight plus
/// long-lived instances).
const POOL_INSTANCES: u32 = 128;

static ENGINE: OnceLock<Result<Engine, String>> = OnceLock::new();

/// The process's linkers: built once (the WASI, HTTP and `talaria:plugin` imports are the
/// same for every host; what differs per session is in each store's data), so that a
/// component prepared once serves every session of a long-lived process.
static LINKERS: OnceLock<Result<Linkers, String>> = OnceLock::new();

/// Whether the pooling allocator is in use.
static POOLING: OnceLock<bool> = OnceLock::new();

fn config(pooling: bool) -> Config {
    let mut config = Config::new();
    config
        .wasm_component_model(true)
        .epoch_interruption(true)
        // A guest's own stack; the fiber stack that hosts it is larger.
        .max_wasm_stack(1 << 20)
        .async_stack_size(2 << 20);
    // A runtime-only engine loads code compiled by an engine with this same configuration (and
    // these same wasmtime features), which `talaria dist build` makes sure of.
    #[cfg(feature = "compiler")]
    config
        .cranelift_opt_level(wasmtime::OptLevel::Speed)
        .parallel_compilation(true);
    if pooling {
        let mut pool = PoolingAllocationConfig::new();
        pool.total_component_instances(POOL_INSTANCES)
            .total_core_instances(POOL_INSTANCES * 4)
            .total_memories(POOL_INSTANCES * 2)
            .total_tables(POOL_INSTANCES * 4)
            .total_stacks(POOL_INSTANCES)
            .max_memories_per_module(1)
            .max_tables_per_module(4)
            // The largest `memory-mb` a manifest may ask for; the per-plugin
            // limit is enforced by each store's resource limiter.
            .max_memory_size(
                usize::try_from(u64::from(talaria_plugin_manifest::MAX_MEMORY_MB) << 20)
                    .unwrap_or(usize::MAX),
            )
            // Keep a little of each slot resident between uses: resetting
            // more with memset costs more than re-faulting (measured: 1 MiB
            // added ~40 µs per call; 64 KiB is as fast as none).
            .linear_memory_keep_resident(64 << 10)
            .table_keep_resident(64 << 10);
        config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    }
    config
}

fn pooling_wanted() -> bool {
    !matches!(
        std::env::var(POOLING_ENV)
            .as_deref()
            .map(str::to_ascii_lowercase)
            .as_deref(),
        Ok("0" | "off" | "false" | "no")
    )
}

fn create() -> Result<Engine, String> {
    let want_pooling = pooling_wanted();
    let engine = match Engine::new(&config(want_pooling)) {
        Ok(engine) => {
            let _ = POOLING.set(want_pooling);
            engine
        }
        // A pool the system refuses (address space limits) must not leave the
        // process without plugins: fall back to on-demand allocation.
        Err(_) if want_pooling => {
            let engine = Engine::new(&config(false)).map_err(|e| e.to_string())?;
            let _ = POOLING.set(false);
            engine
        }
        Err(e) => return Err(e.to_string()),
    };
    let ticker = engine.clone();
    std::thread::Builder::new()
        .name("talaria-wasm-epoch".into())
        .spawn(move || {
            loop {
                std::thread::sleep(EPOCH_TICK);
                ticker.increment_epoch();
            }
        })
        .map_err(|e| format!("starting the epoch ticker: {e}"))?;
    Ok(engine)
}

/// The engine shared by every plugin host in the process (created on first use).
pub(crate) fn engine() -> Result<&'static Engine, String> {
    ENGINE.get_or_init(create).as_ref().map_err(Clone::clone)
}

/// Whether the shared engine uses the pooling allocator.
pub fn uses_pooling() -> bool {
    POOLING.get().copied().unwrap_or(false)
}

/// The linkers every plugin host shares.
pub(crate) struct Linkers {
    /// Every import but `chat-host`.
    pub(crate) plain: Linker<PluginState>,
    /// `plain` plus `chat-host`, for components exporting `chat-adapter`.
    pub(crate) chat: Linker<PluginState>,
}

fn create_linkers(engine: &Engine) -> Result<Linkers, String> {
    let mut plain = Linker::<PluginState>::new(engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut plain)
        .and_then(|()| crate::imports::name_lookup::shadow_in(&mut plain))
        .map_err(|e| error_text(&e))?;
    // Always linked so any component importing it loads; each request is
    // checked against the plugin's network grants (none: all denied).
    wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut plain)
        .map_err(|e| error_text(&e))?;
    ToolPlugin::add_to_linker::<PluginState, HasSelf<HostCtx>>(&mut plain, |state| &mut state.host)
        .map_err(|e| error_text(&e))?;
    let mut chat = plain.clone();
    chat_world::talaria::plugin::chat_types::add_to_linker::<_, HasSelf<PluginState>>(
        &mut chat,
        |state| state,
    )
    .and_then(|()| {
        chat_world::talaria::plugin::chat_host::add_to_linker::<_, HasSelf<PluginState>>(
            &mut chat,
            |state| state,
        )
    })
    .map_err(|e| error_text(&e))?;
    Ok(Linkers { plain, chat })
}

/// The process's linkers over the shared engine (built on first use).
pub(crate) fn linkers() -> Result<&'static Linkers, String> {
    let engine = engine()?;
    LINKERS
        .get_or_init(|| create_linkers(engine))
        .as_ref()
        .map_err(Clone::clone)
}
