//! The `session-search` import's backend: the agent's session store, behind
//! a small trait so the plugin host does not depend on the store.

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
