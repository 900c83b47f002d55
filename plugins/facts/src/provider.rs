//! The memory provider: one long-lived instance per session. It loads and
//! indexes the store once, and before each recall reads only the meta
//! record to learn whether a tool call (a fresh instance) or another session
//! changed the store since.

use std::collections::BTreeMap;

use talaria_plugin_sdk::{
    Memory, MemoryScope, Message, ProviderOptions, Role, SessionKind, config, log,
};

use crate::extract::{self, HostModel, Model};
use crate::kv::{HostKv, Kv};
use crate::recall::{self, Recall};
use crate::settings::Settings;
use crate::store::{FactStore, NewFact, StoreError};

/// The system prompt's note; fixed, as the prompt is frozen for the session.
pub const SYSTEM_PROMPT_BLOCK: &str = "You have a long-term fact store, shared by all \
sessions, through the fact_store tool: store durable facts about the user, their preferences \
and their projects that future sessions should know (action add), and look facts up (search). \
Facts relevant to the user's message are recalled before each turn with ids like f-12: rate \
one you relied on with fact_feedback, and remove one that is wrong or outdated.";

/// The line above the facts recalled before a turn.
const RECALL_HEADING: &str = "Stored facts that may bear on this message:";
/// The line above the facts given to a compression summary.
const COMPRESS_HEADING: &str = "Stored facts about what is being summarised (keep them in mind):";
/// Longest text searched for the facts of a compression, in characters (the
/// most recent part of the messages).
const MAX_COMPRESS_QUERY_CHARS: usize = 8000;

/// The provider of one session.
pub struct Provider {
    kv: Box<dyn Kv>,
    model: Box<dyn Model>,
    settings: Settings,
    session_id: String,
    /// Whether this session adds facts: its user's own conversations and
    /// memory flushes, not delegated tasks or scheduled jobs.
    writes: bool,
    store: FactStore,
    recall: Recall,
    /// Recalls since the last flush, by fact id: saved at the session's end
    /// rather than with a write per turn.
    pending_hits: BTreeMap<String, u64>,
}

impl std::fmt::Debug for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Provider")
            .field("session_id", &self.session_id)
            .field("facts", &self.store.facts().len())
            .finish_non_exhaustive()
    }
}

impl Provider {
    /// Opens the store for the session of `scope`.
    pub fn open(
        kv: Box<dyn Kv>,
        model: Box<dyn Model>,
        settings: Settings,
        scope: &MemoryScope,
    ) -> Result<Self, String> {
        let store = FactStore::load(kv.as_ref()).map_err(|e| e.to_string())?;
        Ok(Self {
            kv,
            model,
            settings,
            session_id: scope.session_id.clone(),
            writes: matches!(scope.kind, SessionKind::Primary | SessionKind::Flush),
            store,
            recall: Recall::default(),
            pending_hits: BTreeMap::new(),
        })
    }

    /// The facts in memory.
    pub fn store(&self) -> &FactStore {
        &self.store
    }

    /// Reloads the store if someone saved since it was loaded.
    fn catch_up(&mut self) -> Result<(), StoreError> {
        self.store.refresh(self.kv.as_ref()).map(|_| ())
    }

    /// Catches up, applies `change` and saves; the change never works on a
    /// stale copy, so it cannot undo another writer's save.
    fn write<T>(&mut self, change: impl FnOnce(&mut FactStore, &str) -> T) -> Result<T, String> {
        self.catch_up().map_err(|e| e.to_string())?;
        let outcome = change(&mut self.store, &self.session_id);
        self.store
            .save(self.kv.as_ref())
            .map_err(|e| e.to_string())?;
        Ok(outcome)
    }

    /// The facts to recall before the turn whose user message is `query`:
    /// bullet lines with ids, empty when none is relevant.
    pub fn recall_for(&mut self, query: &str) -> Result<String, String> {
        if self.settings.recall_limit == 0 || query.trim().is_empty() {
            return Ok(String::new());
        }
        self.catch_up().map_err(|e| e.to_string())?;
        let found = self
            .recall
            .search(&self.store, query, None, self.settings.recall_limit);
        for item in &found {
            *self.pending_hits.entry(item.fact.id.clone()).or_default() += 1;
        }
        Ok(recall::bullets(RECALL_HEADING, &found))
    }

    /// With `extract` on, has the model list the turn's durable facts and
    /// adds them.
    pub fn learn_from_turn(&mut self, turn: &[Message]) -> Result<(), String> {
        if !self.settings.extract || !self.writes {
            return Ok(());
        }
        let Some(transcript) = extract::transcript(turn) else {
            return Ok(());
        };
        let answer = self
            .model
            .complete(extract::INSTRUCTIONS, &transcript, extract::MAX_TOKENS)
            .map_err(|e| format!("fact extraction failed: the auxiliary model: {e}"))?;
        let candidates = extract::parse(&answer);
        if candidates.is_empty() {
            return Ok(());
        }
        let now = crate::unix_now();
        self.write(|store, session| {
            for candidate in &candidates {
                let new = NewFact {
                    content: &candidate.content,
                    category: candidate.category.as_deref(),
                    tags: &candidate.tags,
                    source: session,
                };
                store.add(new, now);
            }
        })
    }

    /// Mirrors a write of the built-in memory tool: added and replaced
    /// entries become facts of the category `user` or `memory`.
    pub fn mirror_memory_write(
        &mut self,
        action: &str,
        target: &str,
        content: &str,
    ) -> Result<(), String> {
        if !self.writes || !matches!(action, "add" | "replace") || content.trim().is_empty() {
            return Ok(());
        }
        let category = if target == "user" { "user" } else { "memory" };
        let now = crate::unix_now();
        self.write(|store, session| {
            let new = NewFact {
                content,
                category: Some(category),
                tags: &[],
                source: session,
            };
            store.add(new, now);
        })
    }

    /// The facts most relevant to `messages`, about to be compressed.
    pub fn facts_for_compression(&mut self, messages: &[Message]) -> Option<String> {
        if self.settings.recall_limit == 0 {
            return None;
        }
        let text: Vec<&str> = messages
            .iter()
            .filter(|m| matches!(m.role, Role::User | Role::Assistant))
            .map(|m| m.content.as_str())
            .collect();
        let text = text.join("\n");
        let query = match text.char_indices().rev().nth(MAX_COMPRESS_QUERY_CHARS) {
            Some((start, _)) => &text[start..],
            None => &text,
        };
        if let Err(e) = self.catch_up() {
            log::warn(format!("recalling facts for compression: {e}"));
        }
        let found = self
            .recall
            .search(&self.store, query, None, self.settings.recall_limit);
        let text = recall::bullets(COMPRESS_HEADING, &found);
        (!text.is_empty()).then_some(text)
    }

    /// Saves the recall counts gathered so far.
    pub fn flush_hits(&mut self) -> Result<(), String> {
        if self.pending_hits.is_empty() || !self.writes {
            return Ok(());
        }
        let hits = std::mem::take(&mut self.pending_hits);
        self.write(|store, _| {
            for (id, count) in &hits {
                // A fact removed meanwhile has nothing to count.
                store.add_hits(id, *count);
            }
        })
    }
}

fn warn_on_error(what: &str, outcome: Result<(), String>) {
    if let Err(e) = outcome {
        log::warn(format!("{what}: {e}"));
    }
}

impl Memory for Provider {
    fn initialize(scope: MemoryScope) -> Result<(Self, ProviderOptions), String> {
        let settings = Settings::load(config::get)?;
        let provider = Self::open(Box::new(HostKv), Box::new(HostModel), settings, &scope)?;
        // Delegated and scheduled sessions only read: the default options
        // leave their turns and memory writes unsynced.
        Ok((provider, ProviderOptions::default()))
    }

    fn system_prompt_block(&mut self) -> Option<String> {
        Some(SYSTEM_PROMPT_BLOCK.to_owned())
    }

    fn prefetch(&mut self, query: String) -> Result<String, String> {
        self.recall_for(&query)
    }

    fn sync_turn(&mut self, turn: Vec<Message>) -> Result<(), String> {
        self.learn_from_turn(&turn)
    }

    fn queue_prefetch(&mut self, _query: String) {
        // Off the turn's path: reloading here spares the next prefetch.
        warn_on_error(
            "reloading the fact store",
            self.catch_up().map_err(|e| e.to_string()),
        );
    }

    fn on_pre_compress(&mut self, messages: Vec<Message>) -> Option<String> {
        self.facts_for_compression(&messages)
    }

    fn on_memory_write(&mut self, action: String, target: String, content: String) {
        let outcome = self.mirror_memory_write(&action, &target, &content);
        warn_on_error("mirroring a memory write as a fact", outcome);
    }

    fn on_session_end(&mut self, _messages: Vec<Message>) {
        let outcome = self.flush_hits();
        warn_on_error("saving recall counts", outcome);
    }

    fn shutdown(&mut self) {
        let outcome = self.flush_hits();
        warn_on_error("saving recall counts", outcome);
    }
}

#[cfg(test)]
#[path = "provider_tests.rs"]
mod tests;
