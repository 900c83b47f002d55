//! The kernel's [`SessionStore`] port over the session database.

use std::sync::Arc;

use async_trait::async_trait;
use talaria_kernel::{Message, SessionStore, Usage};

use crate::db::SessionDb;
use crate::error::StoreError;
use crate::rows::NewSession;

/// Persists a running conversation into a [`SessionDb`].
///
/// Built with the session's metadata up front; the session row is written
/// with the first message (or usage record), in the same transaction, so an
/// agent that never says anything leaves no empty session behind.
#[derive(Debug, Clone)]
pub struct SqliteSessionStore {
    db: Arc<SessionDb>,
    session: NewSession,
}

impl SqliteSessionStore {
    /// A store that creates `session` lazily. Appends under another id (a
    /// continuation after compression, say) create that session with the same
    /// metadata.
    pub fn new(db: Arc<SessionDb>, session: NewSession) -> Self {
        Self { db, session }
    }

    /// The database behind the store.
    pub fn db(&self) -> &Arc<SessionDb> {
        &self.db
    }

    /// The metadata new sessions are created with.
    pub fn session(&self) -> &NewSession {
        &self.session
    }

    fn metadata_for(&self, session_id: &str) -> NewSession {
        NewSession {
            id: session_id.to_owned(),
            ..self.session.clone()
        }
    }

    /// Runs a database call on tokio's blocking pool: SQLite calls block (on
    /// disk and on other processes' locks) and must not stall the runtime.
    async fn run<T: Send + 'static>(
        &self,
        call: impl FnOnce(&SessionDb) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, talaria_kernel::StoreError> {
        let db = Arc::clone(&self.db);
        tokio::task::spawn_blocking(move || call(&db))
            .await
            .map_err(|error| StoreError::Task(error.to_string()))?
            .map_err(Into::into)
    }
}

#[async_trait]
impl SessionStore for SqliteSessionStore {
    async fn append(
        &self,
        session_id: &str,
        message: &Message,
    ) -> Result<(), talaria_kernel::StoreError> {
        let session = self.metadata_for(session_id);
        let message = message.clone();
        self.run(move |db| db.append_or_create(&session, &message).map(drop))
            .await
    }

    async fn append_reply(
        &self,
        session_id: &str,
        message: &Message,
        usage: &Usage,
        cost_usd: f64,
    ) -> Result<(), talaria_kernel::StoreError> {
        let session = self.metadata_for(session_id);
        let (message, usage) = (message.clone(), *usage);
        self.run(move |db| {
            db.append_reply_or_create(&session, &message, &usage, cost_usd)
                .map(drop)
        })
        .await
    }

    /// The continuation is a session of its own whose parent is the
    /// compressed one, so the full history stays searchable.
    async fn continue_as(
        &self,
        old_id: &str,
        new_id: &str,
        messages: &[Message],
    ) -> Result<(), talaria_kernel::StoreError> {
        let session = NewSession {
            parent_session_id: Some(old_id.to_owned()),
            ..self.metadata_for(new_id)
        };
        let messages = messages.to_vec();
        self.run(move |db| {
            db.ensure_session(&session)?;
            db.append_batch(&session.id, &messages).map(drop)
        })
        .await
    }
}
