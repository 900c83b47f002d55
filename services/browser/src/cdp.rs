//! A DevTools protocol connection: JSON commands with ids over Chromium's
//! DevTools pipe (`--remote-debugging-pipe`: it reads commands on its fd 3
//! and writes answers and events on its fd 4, each message ended by a NUL
//! byte), their answers matched by id, and events fanned out to whoever
//! listens. A pipe rather than a TCP port: nothing else on this machine —
//! least of all a command the agent runs — can reach the browser's control
//! channel. Only the dozen commands the browser tools send are used, so a
//! generated binding of the whole protocol (thousands of types) would cost
//! more build time than it saves.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::unix::pipe;
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio::task::JoinHandle;

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

/// One connection to a browser's DevTools pipe.
pub(crate) struct Cdp {
    outgoing: mpsc::Sender<Vec<u8>>,
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
    /// Talks to the browser through the pipe ends it does not hold: `commands` (its fd 3)
    /// and `answers` (its fd 4).
    pub fn over_pipe(mut commands: pipe::Sender, mut answers: pipe::Receiver) -> Self {
        let (outgoing, mut queue) = mpsc::channel::<Vec<u8>>(64);
        let writer = tokio::spawn(async move {
            while let Some(mut message) = queue.recv().await {
                message.push(0);
                if commands.write_all(&message).await.is_err() {
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
                let mut buffer: Vec<u8> = Vec::new();
                let mut chunk = vec![0; 64 * 1024];
                'read: while let Ok(read @ 1..) = answers.read(&mut chunk).await {
                    let scanned = buffer.len();
                    buffer.extend_from_slice(&chunk[..read]);
                    let mut start = 0;
                    let mut from = scanned;
                    while let Some(end) = buffer[from..].iter().position(|b| *b == 0) {
                        let message = &buffer[start..from + end];
                        if let Ok(value) = serde_json::from_slice::<Value>(message) {
                            dispatch(value, &pending, &events);
                        }
                        start = from + end + 1;
                        from = start;
                    }
                    buffer.drain(..start);
                    if buffer.len() > MAX_MESSAGE {
                        // A browser sending that much without an end is not one to trust.
                        break 'read;
                    }
                }
                // The browser went away: nobody will answer what is pending.
                let waiting: Vec<_> = lock(&pending).drain().collect();
                for (_, answer) in waiting {
                    let _ = answer.send(Err(BrowserError::Closed));
                }
            })
        };
        Self {
            outgoing,
            pending,
            next_id: AtomicU64::new(1),
            events,
            tasks: [writer, reader],
        }
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
        let sent = self.outgoing.send(command.to_string().into_bytes()).await;
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
