//! The `session-search` import's backend: the agent's session store, behind
//! a small trait so the plugin host does not depend on the store, and the
//! import itself.

use crate::bindings::HostError;
use crate::bindings::talaria::plugin::session_search;
use crate::state::HostCtx;

/// One hit of a search over past sessions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionHit {
    /// The session.
    pub session_id: String,
    /// `user`, `assistant`, `tool`…
    pub role: String,
    /// The matching text, shortened.
    pub snippet: String,
    /// Unix seconds.
    pub timestamp: u64,
}

/// Searches past sessions for plugins granted `session-search`.
pub trait SessionSearch: Send + Sync + std::fmt::Debug {
    /// Up to `limit` hits for `query`, best first; `Err` is shown to the plugin.
    fn search(&self, query: &str, limit: u32) -> Result<Vec<SessionHit>, String>;
}

/// The `session-search` import: at most 100 hits per call.
impl session_search::Host for HostCtx {
    async fn search(
        &mut self,
        query: String,
        limit: u32,
    ) -> Result<Vec<session_search::Hit>, HostError> {
        if !self.plugin.caps.session_search {
            return Err(HostError::Denied(self.plugin.denied("session-search")));
        }
        let Some(sessions) = self.plugin.sessions.clone() else {
            return Err(HostError::Failed("no session store in this host".into()));
        };
        // SQLite work blocks: off the async threads.
        let hits = tokio::task::spawn_blocking(move || sessions.search(&query, limit.min(100)))
            .await
            .map_err(|e| HostError::Failed(format!("session search did not finish: {e}")))?
            .map_err(HostError::Failed)?;
        Ok(hits
            .into_iter()
            .map(|hit| session_search::Hit {
                session_id: hit.session_id,
                role: hit.role,
                snippet: hit.snippet,
                timestamp: hit.timestamp,
            })
            .collect())
    }
}
