//! The memory provider: searches mem0 before each turn and sends it each
//! finished turn and each write of the built-in memory tool. mem0 keeps the
//! memories; the instance keeps only the session's settings.

use serde_json::json;
use talaria_plugin_sdk::{
    Memory, MemoryScope, Message, ProviderOptions, Role, SessionKind, config, log,
};

use crate::api::{self, HostHttp, Said, Transport};
use crate::settings::Settings;

/// The line above the memories recalled before a turn.
const RECALL_HEADING: &str = "Memories from mem0 that may bear on this message:";

/// The provider of one session.
pub struct Mem0 {
    transport: Box<dyn Transport>,
    settings: Settings,
    session_id: String,
    /// Whether this session adds memories: its user's own conversations and
    /// memory flushes, not delegated tasks or scheduled jobs.
    writes: bool,
}

impl std::fmt::Debug for Mem0 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mem0")
            .field("settings", &self.settings)
            .field("session_id", &self.session_id)
            .finish_non_exhaustive()
    }
}

impl Mem0 {
    /// The provider of the session of `scope`.
    pub fn open(transport: Box<dyn Transport>, settings: Settings, scope: &MemoryScope) -> Self {
        Self {
            transport,
            settings,
            session_id: scope.session_id.clone(),
            writes: matches!(scope.kind, SessionKind::Primary | SessionKind::Flush),
        }
    }

    /// The memories relevant to `query` as bullet lines; empty when there
    /// are none.
    pub fn recall_for(&self, query: &str) -> Result<String, String> {
        if self.settings.recall_limit == 0 || query.trim().is_empty() {
            return Ok(String::new());
        }
        let request = api::search(&self.settings, query, self.settings.recall_limit);
        let body = api::call(self.transport.as_ref(), &request)?;
        let memories = api::parse_memories(&body)?;
        if memories.is_empty() {
            return Ok(String::new());
        }
        let mut text = RECALL_HEADING.to_owned();
        for memory in memories.iter().take(self.settings.recall_limit) {
            text.push_str(&format!("\n- {}", memory.text.replace('\n', " ")));
        }
        Ok(text)
    }

    /// Sends the turn's user and assistant messages (not tool calls or
    /// their results) for mem0 to learn from.
    pub fn learn_from_turn(&self, turn: &[Message]) -> Result<(), String> {
        if !self.writes {
            return Ok(());
        }
        let said: Vec<Said<'_>> = turn
            .iter()
            .filter_map(|message| {
                let role = match message.role {
                    Role::User => "user",
                    Role::Assistant => "assistant",
                    Role::System | Role::Tool => return None,
                };
                let content = message.content.trim();
                (!content.is_empty()).then_some(Said { role, content })
            })
            .collect();
        if said.is_empty() {
            return Ok(());
        }
        let metadata = json!({ "source": "conversation", "session_id": self.session_id });
        let request = api::add(&self.settings, &said, metadata);
        api::call(self.transport.as_ref(), &request).map(|_| ())
    }

    /// Sends an entry the built-in memory tool added or replaced, as the
    /// user's message.
    pub fn mirror_memory_write(
        &self,
        action: &str,
        target: &str,
        content: &str,
    ) -> Result<(), String> {
        let content = content.trim();
        if !self.writes || !matches!(action, "add" | "replace") || content.is_empty() {
            return Ok(());
        }
        let said = [Said {
            role: "user",
            content,
        }];
        let metadata = json!({ "source": "memory-tool", "target": target });
        let request = api::add(&self.settings, &said, metadata);
        api::call(self.transport.as_ref(), &request).map(|_| ())
    }
}

impl Memory for Mem0 {
    fn initialize(scope: MemoryScope) -> Result<(Self, ProviderOptions), String> {
        let settings = Settings::load(config::get, scope.user_id.as_deref())?;
        // Delegated and scheduled sessions only recall: the default options
        // leave their turns and memory writes unsynced.
        Ok((
            Self::open(Box::new(HostHttp), settings, &scope),
            ProviderOptions::default(),
        ))
    }

    fn prefetch(&mut self, query: String) -> Result<String, String> {
        self.recall_for(&query)
    }

    fn sync_turn(&mut self, turn: Vec<Message>) -> Result<(), String> {
        self.learn_from_turn(&turn)
    }

    fn on_memory_write(&mut self, action: String, target: String, content: String) {
        if let Err(e) = self.mirror_memory_write(&action, &target, &content) {
            log::warn(format!("sending a memory write to mem0: {e}"));
        }
    }
}

#[cfg(test)]
#[path = "provider_tests.rs"]
mod tests;

#[cfg(all(test, not(target_arch = "wasm32")))]
#[path = "fake_server_tests.rs"]
mod fake_server_tests;
