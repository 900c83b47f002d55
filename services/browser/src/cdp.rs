//! A DevTools protocol connection: JSON commands with ids over one
//! WebSocket, their answers matched by id, and events fanned out to whoever
//! listens. Only the dozen commands the browser tools send are used, so a
//! generated binding of the whole protocol (thousands of types) would cost
//! more build time than it saves.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

use crate::BrowserError;

/// How long one command may take before the browser is taken to be hung.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);

/// Largest message accepted from the browser (a full-page screenshot of a
/// long page is the biggest answer).
const MAX_MESSAGE: usize = 64 << 20;

/// An event the browser sent, with the target session it belongs to.
#[derive(Debug, Clone)]
pub(crate) struct Event {
    pub method: String,
    pub params: Value,
    pub session: Option<String>,
}

type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Result<Value, BrowserError>>>>>;

/// One connection to a browser's DevTools endpoint.
pub(crate) struct Cdp {
    outgoing: mpsc::Sender<Message>,
    pending: Pending,
    next_id: AtomicU64,
    events: broadcast::Sender<Event>,
    tasks: [JoinHandle<()>; 2],
}

impl Drop for Cdp {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl Cdp {
    /// Connects to `url` (`ws://127.0.0.1:PORT/devtools/browser/ID`).
    pub async fn connect(url: &str) -> Result<Self, BrowserError> {
        let config = WebSocketConfig::default()
            .max_message_size(Some(MAX_MESSAGE))
            .max_frame_size(Some(MAX_MESSAGE));
        let (socket, _) = tokio::time::timeout(
            COMMAND_TIMEOUT,
            tokio_tungstenite::connect_async_with_config(url, Some(config), false),
        )
        .await
        .map_err(|_| BrowserError::Protocol(format!("connecting to {url} timed out")))?
        .map_err(|e| BrowserError::Protocol(format!("cannot connect to {url}: {e}")))?;
        let (mut sink, mut stream) = socket.split();
        let (outgoing, mut queue) = mpsc::channel::<Message>(64);
        let writer = tokio::spawn(async move {
            while let Some(message) = queue.recv().await {
                if sink.send(message).await.is_err() {
                    break;
                }
            }
        });
        let pending: Pending = Arc::default();
        let (events, _) = broadcast::channel(1024);
        let reader = {
            let pending = pending.clone();
            let events = events.clone();
            tokio::spawn(async move {
                while let Some(Ok(message)) = stream.next().await {
                    let text = match message {
                        Message::Text(text) => text,
                        Message::Close(_) => break,
                        _ => continue,
                    };
                    let Ok(value) = serde_json::from_str::<Value>(text.as_str()) else {
                        continue;
                    };
                    dispatch(value, &pending, &events);
                }
                // The browser went away: nobody will answer what is pending.
                let waiting: Vec<_> = lock(&pending).drain().collect();
                for (_, answer) in waiting {
                    let _ = answer.send(Err(BrowserError::Closed));
                }
            })
        };
        Ok(Self {
            outgoing,
            pending,
            next_id: AtomicU64::new(1),
            events,
            tasks: [writer, reader],
        })
    }

    /// Events from now on.
    pub fn events(&self) -> broadcast::Receiver<Event> {
        self.events.subscribe()
    }

    /// Sends `method` (to the target `session`, else to the browser) and
    /// waits for its result.
    pub async fn call(
        &self,
        method: &str,
        params: Value,
        session: Option<&str>,
    ) -> Result<Value, BrowserError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut command = json!({"id": id, "method": method, "params": params});
        if let Some(session) = session {
            command["sessionId"] = json!(session);
        }
        let (answer, result) = oneshot::channel();
        lock(&self.pending).insert(id, answer);
        let sent = self.outgoing.send(Message::text(command.to_string())).await;
        if sent.is_err() {
            lock(&self.pending).remove(&id);
            return Err(BrowserError::Closed);
        }
        match tokio::time::timeout(COMMAND_TIMEOUT, result).await {
            Ok(Ok(outcome)) => outcome,
            Ok(Err(_)) => Err(BrowserError::Closed),
            Err(_) => {
                lock(&self.pending).remove(&id);
                Err(BrowserError::Protocol(format!(
                    "the browser did not answer {method} within {}s",
                    COMMAND_TIMEOUT.as_secs()
                )))
            }
        }
    }
}

/// Hands an answer to its caller or an event to the listeners.
fn dispatch(value: Value, pending: &Pending, events: &broadcast::Sender<Event>) {
    if let Some(id) = value["id"].as_u64() {
        let Some(answer) = lock(pending).remove(&id) else {
            return;
        };
        let outcome = match value.get("error") {
            Some(error) => Err(BrowserError::Command(
                error["message"]
                    .as_str()
                    .unwrap_or("unknown error")
                    .to_owned(),
            )),
            None => Ok(value.get("result").cloned().unwrap_or(Value::Null)),
        };
        let _ = answer.send(outcome);
    } else if let Some(method) = value["method"].as_str() {
        let _ = events.send(Event {
            method: method.to_owned(),
            session: value["sessionId"].as_str().map(str::to_owned),
            params: value.get("params").cloned().unwrap_or(Value::Null),
        });
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
