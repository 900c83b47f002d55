//! Servers shared by the sessions of one long-lived process (a gateway, the API server, ACP,
//! `mcp serve`, batch): the first session to name a server starts it, later sessions whose
//! entry is identical — command, arguments, environment, working directory, URL, headers,
//! every other setting, and the confinement it runs under — use the same one. An entry marked
//! `shared: false` (a server that keeps per-session state: filesystem roots, a memory), or one
//! an editor passed over ACP, is never pooled.
//!
//! When an entry changes (the user edited config.yaml), the next session gets a new server;
//! sessions still running keep the one they started with, which ends when the last of them
//! lets it go (dropping a stdio server kills its process group).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use crate::server::McpServer;
use crate::spec::ServerSpec;

type Pool = HashMap<String, (String, Arc<McpServer>)>;

fn pool() -> &'static Mutex<Pool> {
    static POOL: OnceLock<Mutex<Pool>> = OnceLock::new();
    POOL.get_or_init(Mutex::default)
}

/// The runtime shared servers' connections run on: one worker thread, for the life of the
/// process (none when it cannot be started: servers are then not shared).
fn runtime() -> Option<tokio::runtime::Handle> {
    static RUNTIME: OnceLock<Option<tokio::runtime::Runtime>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("talaria-mcp")
                .enable_all()
                .build()
                .ok()
        })
        .as_ref()
        .map(|runtime| runtime.handle().clone())
}

/// What must be equal for two sessions to share a server.
fn identity(spec: &ServerSpec) -> String {
    format!(
        "{}\n{:?}\n{:?}",
        serde_json::to_string(&spec.config).unwrap_or_default(),
        spec.confinement,
        spec.policy
    )
}

/// The server for `spec`: the process's shared one when `share` and the entry may be shared,
/// else a new one for this session alone.
pub(crate) fn server_for(spec: ServerSpec, share: bool) -> Arc<McpServer> {
    let runtime = runtime().filter(|_| share && spec.config.shared);
    let Some(runtime) = runtime else {
        return Arc::new(McpServer::new(spec));
    };
    let identity = identity(&spec);
    let mut pool = pool().lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((pooled, server)) = pool.get(&spec.name)
        && *pooled == identity
    {
        return server.clone();
    }
    let name = spec.name.clone();
    let server = Arc::new(McpServer::on_runtime(spec, runtime));
    pool.insert(name, (identity, server.clone()));
    server
}

/// Whether `server` is one of the process's shared servers (a session ending leaves it
/// running for the next).
pub(crate) fn is_pooled(server: &Arc<McpServer>) -> bool {
    let pool = pool().lock().unwrap_or_else(PoisonError::into_inner);
    pool.values().any(|(_, pooled)| Arc::ptr_eq(pooled, server))
}

/// Ends every shared server (a long-lived surface shutting down).
pub async fn shutdown_shared() {
    let servers: Vec<Arc<McpServer>> = {
        let mut pool = pool().lock().unwrap_or_else(PoisonError::into_inner);
        pool.drain().map(|(_, (_, server))| server).collect()
    };
    for server in servers {
        server.shutdown().await;
    }
}
