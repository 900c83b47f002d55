//! An in-process session store. The durable SQLite store replaces it behind the
//! same port; until then a session lives as long as the process.

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;
use talaria_kernel::{Message, SessionStore, StoreError, Usage};

/// Messages and usage totals per session, in memory.
#[derive(Debug, Default)]
pub struct MemorySessionStore {
    sessions: Mutex<HashMap<String, StoredSession>>,
}

/// One session's contents.
#[derive(Debug, Default, Clone)]
pub struct StoredSession {
    /// Every message, in order.
    pub messages: Vec<Message>,
    /// Summed usage.
    pub usage: Usage,
    /// Summed cost in USD.
    pub cost_usd: f64,
}

impl MemorySessionStore {
    /// A copy of one session.
    pub fn session(&self, id: &str) -> Option<StoredSession> {
        self.sessions.lock().ok()?.get(id).cloned()
    }

    fn with_session<T>(
        &self,
        id: &str,
        f: impl FnOnce(&mut StoredSession) -> T,
    ) -> Result<T, StoreError> {
        let mut sessions = self
            .sessions
            .lock()
            .map_err(|_| StoreError("session store poisoned".into()))?;
        Ok(f(sessions.entry(id.to_owned()).or_default()))
    }
}

#[async_trait]
impl SessionStore for MemorySessionStore {
    async fn append(&self, session_id: &str, message: &Message) -> Result<(), StoreError> {
        self.with_session(session_id, |s| s.messages.push(message.clone()))
    }

    async fn append_reply(
        &self,
        session_id: &str,
        message: &Message,
        usage: &Usage,
        cost_usd: f64,
    ) -> Result<(), StoreError> {
        self.with_session(session_id, |s| {
            s.messages.push(message.clone());
            s.usage.add(usage);
            s.cost_usd += cost_usd;
        })
    }
}
