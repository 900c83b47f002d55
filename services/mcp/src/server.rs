//! One configured server over the life of a process: connected on demand, reconnected after it
//! dies (the next request reconnects; failed attempts back off), parked after repeated
//! failures (requests answer at once naming it until it is probed again), and the
//! `tools/list_changed` flag the caller reads.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use rmcp::model::{
    CallToolResult, GetPromptResult, JsonObject, Prompt, ReadResourceResult, Resource,
};
use tokio::sync::Mutex;
use tokio::time::Instant;

use crate::cache::{self, ServerTools, ToolInfo};
use crate::connection::{Connection, ServerInfo};
use crate::error::McpError;
use crate::spec::ServerSpec;

#[derive(Debug, Default)]
struct State {
    connection: Option<Arc<Connection>>,
    /// Consecutive failed connection attempts.
    failures: u32,
    /// No attempt before this.
    next_attempt: Option<Instant>,
    last_error: Option<String>,
}

/// A configured server.
#[derive(Debug)]
pub struct McpServer {
    spec: ServerSpec,
    state: Mutex<State>,
    list_changed: Arc<AtomicBool>,
    connects: AtomicU32,
    /// Where its connections live when sessions on other runtimes share it (the gateway and
    /// the API server run each turn on a runtime of its own, which takes its tasks and pipes
    /// with it when it ends); `None`: the runtime of whoever connects.
    runtime: Option<tokio::runtime::Handle>,
}

impl McpServer {
    /// A server not yet contacted.
    pub fn new(spec: ServerSpec) -> Self {
        Self {
            spec,
            state: Mutex::new(State::default()),
            list_changed: Arc::new(AtomicBool::new(false)),
            connects: AtomicU32::new(0),
            runtime: None,
        }
    }

    /// A server whose connections run on `runtime`, whatever runtime its callers are on.
    pub(crate) fn on_runtime(spec: ServerSpec, runtime: tokio::runtime::Handle) -> Self {
        Self {
            runtime: Some(runtime),
            ..Self::new(spec)
        }
    }

    async fn open(&self) -> Result<Connection, McpError> {
        let Some(runtime) = &self.runtime else {
            return Connection::open(&self.spec, self.list_changed.clone()).await;
        };
        let (spec, flag) = (self.spec.clone(), self.list_changed.clone());
        runtime
            .spawn(async move { Connection::open(&spec, flag).await })
            .await
            .unwrap_or_else(|join| {
                Err(McpError::Unavailable {
                    server: self.spec.name.clone(),
                    message: format!("its connection task failed: {join}"),
                })
            })
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.spec.name
    }

    /// Its configuration.
    pub fn spec(&self) -> &ServerSpec {
        &self.spec
    }

    /// Whether the server said its tools changed after they were last listed (for the next
    /// session: the current tool list stays as it is).
    pub fn tools_list_changed(&self) -> bool {
        self.list_changed.load(Ordering::Acquire)
    }

    /// How many sessions were opened with it.
    pub fn connections(&self) -> u32 {
        self.connects.load(Ordering::Relaxed)
    }

    /// The process id of a connected stdio server.
    pub async fn process_id(&self) -> Option<u32> {
        let state = self.state.lock().await;
        state.connection.as_ref().and_then(|c| c.process_id())
    }

    /// Whether a session is open and alive.
    pub async fn is_connected(&self) -> bool {
        let state = self.state.lock().await;
        state.connection.as_ref().is_some_and(|c| !c.is_closed())
    }

    /// Opens a session unless one is open; honours backoff and parking.
    pub async fn connect(&self) -> Result<ServerInfo, McpError> {
        Ok(self.session().await?.info.clone())
    }

    async fn session(&self) -> Result<Arc<Connection>, McpError> {
        let mut state = self.state.lock().await;
        if let Some(connection) = &state.connection {
            if !connection.is_closed() {
                return Ok(connection.clone());
            }
            // It died since the last request: reconnect now.
            state.connection = None;
        }
        let now = Instant::now();
        if let Some(at) = state.next_attempt
            && now < at
        {
            let last_error = state.last_error.clone().unwrap_or_default();
            let retry_in = at - now;
            return Err(if state.failures >= self.spec.policy.park_after {
                McpError::Parked {
                    server: self.spec.name.clone(),
                    failures: state.failures,
                    retry_in,
                    last_error,
                }
            } else {
                McpError::Backoff {
                    server: self.spec.name.clone(),
                    retry_in,
                    last_error,
                }
            });
        }
        match self.open().await {
            Ok(connection) => {
                let connection = Arc::new(connection);
                *state = State {
                    connection: Some(connection.clone()),
                    ..State::default()
                };
                self.connects.fetch_add(1, Ordering::Relaxed);
                Ok(connection)
            }
            Err(error) => {
                state.failures += 1;
                let policy = &self.spec.policy;
                let wait = if state.failures >= policy.park_after {
                    policy.park_for
                } else {
                    policy.delay(state.failures)
                };
                state.next_attempt = Some(Instant::now() + wait);
                state.last_error = Some(error.to_string());
                Err(error)
            }
        }
    }

    /// Runs `request` on a session; a session found dead is dropped so the next request
    /// reconnects.
    async fn with_session<T, F, Fut>(&self, request: F) -> Result<T, McpError>
    where
        F: FnOnce(Arc<Connection>) -> Fut,
        Fut: std::future::Future<Output = Result<T, McpError>>,
    {
        let connection = self.session().await?;
        let result = request(connection.clone()).await;
        if matches!(result, Err(McpError::Closed { .. })) || connection.is_closed() {
            let mut state = self.state.lock().await;
            if state
                .connection
                .as_ref()
                .is_some_and(|current| Arc::ptr_eq(current, &connection))
            {
                state.connection = None;
            }
        }
        result
    }

    /// What the server offers now (connecting if needed); resets the list-changed flag.
    pub async fn list_tools(&self) -> Result<ServerTools, McpError> {
        self.with_session(|connection| async move {
            self.list_changed.store(false, Ordering::Release);
            let tools = connection.list_tools(&self.spec).await?;
            Ok(ServerTools {
                info: connection.info.clone(),
                tools: tools.iter().map(ToolInfo::from_tool).collect(),
            })
        })
        .await
    }

    /// The cached offer for the current configuration, without contacting the server.
    pub fn load_cache(&self, dir: &Path) -> Result<Option<ServerTools>, McpError> {
        cache::load(dir, &self.spec)
    }

    /// Lists the tools now and writes them to the cache; returns the offer and the file.
    pub async fn refresh_cache(&self, dir: &Path) -> Result<(ServerTools, PathBuf), McpError> {
        let offer = self.list_tools().await?;
        let path = cache::store(dir, &self.spec, &offer)?;
        Ok((offer, path))
    }

    /// One `tools/call` with the server's original tool name.
    pub async fn call_tool(
        &self,
        tool: &str,
        arguments: Option<JsonObject>,
    ) -> Result<CallToolResult, McpError> {
        self.with_session(|c| async move { c.call_tool(&self.spec, tool, arguments).await })
            .await
    }

    /// Every resource.
    pub async fn list_resources(&self) -> Result<Vec<Resource>, McpError> {
        self.with_session(|c| async move { c.list_resources(&self.spec).await })
            .await
    }

    /// One resource.
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult, McpError> {
        self.with_session(|c| async move { c.read_resource(&self.spec, uri).await })
            .await
    }

    /// Every prompt.
    pub async fn list_prompts(&self) -> Result<Vec<Prompt>, McpError> {
        self.with_session(|c| async move { c.list_prompts(&self.spec).await })
            .await
    }

    /// One prompt, rendered.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
    ) -> Result<GetPromptResult, McpError> {
        self.with_session(|c| async move { c.get_prompt(&self.spec, name, arguments).await })
            .await
    }

    /// Ends the session (a stdio server's whole process group is killed). A later request
    /// connects again.
    pub async fn shutdown(&self) {
        let connection = self.state.lock().await.connection.take();
        if let Some(connection) = connection {
            match Arc::try_unwrap(connection) {
                Ok(connection) => match &self.runtime {
                    Some(runtime) => {
                        let _ = runtime.spawn(connection.close()).await;
                    }
                    None => connection.close().await,
                },
                // Requests still hold it: the last one to finish drops (and kills) it.
                Err(shared) => drop(shared),
            }
        }
    }
}
