//! The facts in the key-value store, laid out for ten thousand and more:
//!
//! - `facts/meta`: `{"version": 1, "next_id": N, "generation": G, "shards": S}`;
//! - `facts/shard/0000` … `facts/shard/<S-1>`: `{"facts": [Fact, …]}`, each
//!   at most [`SHARD_MAX_FACTS`] facts and about [`SHARD_MAX_BYTES`] bytes.
//!
//! The host keeps one file per key and its `list-keys` reads every file, so
//! one key per fact would make loading slow; shards are read by name instead.
//! New facts go to the last shard until it is full. Every save rewrites only
//! the shards that changed and then the meta with the generation bumped: a
//! reader that knows the generation it loaded learns with one read whether
//! anything changed since.

use std::collections::{BTreeSet, HashMap};
use std::fmt;

use serde::{Deserialize, Serialize};
use talaria_plugin_sdk::{HostError, ToolError};

use crate::fact::{self, DEFAULT_TRUST, Fact};
use crate::kv::Kv;

/// The key of the meta record.
pub const META_KEY: &str = "facts/meta";
/// The keys of the shards start with this.
pub const SHARD_KEY_PREFIX: &str = "facts/shard/";
/// Most facts in one shard.
pub const SHARD_MAX_FACTS: usize = 256;
/// Largest shard, in bytes of JSON.
pub const SHARD_MAX_BYTES: usize = 256 * 1024;
/// The layout version written in the meta record.
const LAYOUT_VERSION: u32 = 1;

/// The key of shard `n`.
pub fn shard_key(n: u32) -> String {
    format!("{SHARD_KEY_PREFIX}{n:04}")
}

/// The meta record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Meta {
    pub version: u32,
    /// The number of the next fact's id.
    pub next_id: u64,
    /// Bumped by every save.
    pub generation: u64,
    /// How many shards there are.
    pub shards: u32,
}

impl Default for Meta {
    fn default() -> Self {
        Self {
            version: LAYOUT_VERSION,
            next_id: 1,
            generation: 0,
            shards: 0,
        }
    }
}

#[derive(Deserialize)]
struct ShardFile {
    facts: Vec<Fact>,
}

#[derive(Serialize)]
struct ShardOut<'a> {
    facts: Vec<&'a Fact>,
}

/// Why the store could not be read or written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreError {
    /// The host refused or failed a `kv` call.
    Host { key: String, error: HostError },
    /// A stored value is not what this plugin writes.
    Corrupt { key: String, reason: String },
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Host { key, error } => write!(f, "the fact store could not use {key}: {error}"),
            Self::Corrupt { key, reason } => {
                write!(f, "the fact store's {key} is damaged: {reason}")
            }
        }
    }
}

impl std::error::Error for StoreError {}

impl From<StoreError> for ToolError {
    fn from(error: StoreError) -> Self {
        match &error {
            StoreError::Host {
                error: HostError::Denied(_),
                ..
            } => ToolError::denied(error.to_string()),
            _ => ToolError::failed(error.to_string()),
        }
    }
}

fn host(key: &str) -> impl FnOnce(HostError) -> StoreError + '_ {
    move |error| StoreError::Host {
        key: key.to_owned(),
        error,
    }
}

/// A fact to add.
#[derive(Clone, Copy, Debug)]
pub struct NewFact<'a> {
    pub content: &'a str,
    pub category: Option<&'a str>,
    pub tags: &'a [String],
    /// The session it comes from.
    pub source: &'a str,
}

/// The outcome of adding a fact.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Added {
    pub id: String,
    /// The store already had the same content: nothing was added and `id` is
    /// that fact's.
    pub duplicate: bool,
}

#[derive(Clone, Copy, Debug, Default)]
struct ShardLoad {
    facts: usize,
    bytes: usize,
}

/// Every fact, in memory, with where each one is stored.
#[derive(Debug)]
pub struct FactStore {
    meta: Meta,
    facts: Vec<Fact>,
    /// The shard of `facts[i]`.
    shard_of: Vec<u32>,
    /// Per shard.
    loads: Vec<ShardLoad>,
    /// Dedupe key → id.
    by_content: HashMap<String, String>,
    /// Shards changed since the last save.
    dirty: BTreeSet<u32>,
    /// Changes whenever the facts do (an index built at another revision is
    /// stale); in memory only.
    revision: u64,
}

impl Default for FactStore {
    fn default() -> Self {
        Self::with_meta(Meta::default())
    }
}

fn read_meta(kv: &dyn Kv) -> Result<Meta, StoreError> {
    match kv.get(META_KEY).map_err(host(META_KEY))? {
        None => Ok(Meta::default()),
        Some(bytes) => serde_json::from_slice(&bytes).map_err(|e| StoreError::Corrupt {
            key: META_KEY.to_owned(),
            reason: e.to_string(),
        }),
    }
}

/// The bytes a fact adds to its shard's JSON.
fn stored_size(fact: &Fact) -> usize {
    serde_json::to_vec(fact).map_or(0, |json| json.len()) + 1
}

impl FactStore {
    fn with_meta(meta: Meta) -> Self {
        Self {
            meta,
            facts: Vec::new(),
            shard_of: Vec::new(),
            loads: vec![ShardLoad::default(); meta.shards as usize],
            by_content: HashMap::new(),
            dirty: BTreeSet::new(),
            revision: 0,
        }
    }

    /// Reads the meta record and every shard. A shard the meta does not
    /// count yet (a save interrupted before its meta write) is read too.
    pub fn load(kv: &dyn Kv) -> Result<Self, StoreError> {
        let meta = read_meta(kv)?;
        let mut store = Self::with_meta(meta);
        let mut shard = 0u32;
        loop {
            let key = shard_key(shard);
            match kv.get(&key).map_err(host(&key))? {
                Some(bytes) => {
                    let file: ShardFile =
                        serde_json::from_slice(&bytes).map_err(|e| StoreError::Corrupt {
                            key: key.clone(),
                            reason: e.to_string(),
                        })?;
                    for fact in file.facts {
                        store.insert(fact, shard);
                    }
                }
                // Never written (every fact it had was added in a save that
                // did not finish); later shards may still exist.
                None if shard < meta.shards => {}
                None => break,
            }
            shard += 1;
        }
        store.meta.shards = store.meta.shards.max(shard);
        store
            .loads
            .resize(store.meta.shards as usize, ShardLoad::default());
        let after_last = store.facts.iter().map(Fact::number).max().unwrap_or(0) + 1;
        store.meta.next_id = store.meta.next_id.max(after_last);
        Ok(store)
    }

    fn insert(&mut self, fact: Fact, shard: u32) {
        let slot = shard as usize;
        if self.loads.len() <= slot {
            self.loads.resize(slot + 1, ShardLoad::default());
        }
        self.loads[slot].facts += 1;
        self.loads[slot].bytes += stored_size(&fact);
        self.by_content
            .insert(fact::dedupe_key(&fact.content), fact.id.clone());
        self.facts.push(fact);
        self.shard_of.push(shard);
    }

    /// The generation loaded or last saved.
    pub fn generation(&self) -> u64 {
        self.meta.generation
    }

    /// Changes whenever the facts change (load included).
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// How many shards there are.
    pub fn shard_count(&self) -> u32 {
        self.meta.shards
    }

    /// Every fact, oldest first.
    pub fn facts(&self) -> &[Fact] {
        &self.facts
    }

    /// The fact with `id` (canonical form).
    pub fn get(&self, id: &str) -> Option<&Fact> {
        self.position(id).map(|i| &self.facts[i])
    }

    fn position(&self, id: &str) -> Option<usize> {
        self.facts.iter().position(|f| f.id == id)
    }

    /// Whether the stored generation is still the one loaded: one read.
    pub fn is_current(&self, kv: &dyn Kv) -> Result<bool, StoreError> {
        Ok(read_meta(kv)?.generation == self.meta.generation)
    }

    /// Reloads everything when someone saved since this store was loaded or
    /// saved; returns whether it did. Unsaved changes are lost on reload.
    pub fn refresh(&mut self, kv: &dyn Kv) -> Result<bool, StoreError> {
        if self.is_current(kv)? {
            return Ok(false);
        }
        let revision = self.revision;
        *self = Self::load(kv)?;
        self.revision = revision + 1;
        Ok(true)
    }

    /// Adds a fact made at `now` (Unix seconds), or finds the one with the
    /// same content. `None` when the content is empty.
    pub fn add(&mut self, new: NewFact<'_>, now: u64) -> Option<Added> {
        let content = fact::clean_content(new.content);
        if content.is_empty() {
            return None;
        }
        let key = fact::dedupe_key(&content);
        if let Some(id) = self.by_content.get(&key) {
            return Some(Added {
                id: id.clone(),
                duplicate: true,
            });
        }
        let fact = Fact {
            id: fact::make_id(self.meta.next_id),
            content,
            category: fact::clean_category(new.category),
            tags: fact::clean_tags(new.tags),
            trust: DEFAULT_TRUST,
            created: now,
            source: new.source.to_owned(),
            hits: 0,
        };
        self.meta.next_id += 1;
        let id = fact.id.clone();
        let shard = self.shard_for(stored_size(&fact));
        self.insert(fact, shard);
        self.touch(shard);
        Some(Added {
            id,
            duplicate: false,
        })
    }

    /// The last shard while it has room for `bytes` more, else a new one.
    fn shard_for(&mut self, bytes: usize) -> u32 {
        if let Some(last) = self.meta.shards.checked_sub(1) {
            let load = self.loads[last as usize];
            if load.facts < SHARD_MAX_FACTS && load.bytes + bytes <= SHARD_MAX_BYTES {
                return last;
            }
        }
        self.meta.shards += 1;
        self.loads.push(ShardLoad::default());
        self.meta.shards - 1
    }

    fn touch(&mut self, shard: u32) {
        self.dirty.insert(shard);
        self.revision += 1;
    }

    /// Removes the fact with `id`; false when there is none.
    pub fn remove(&mut self, id: &str) -> bool {
        let Some(i) = self.position(id) else {
            return false;
        };
        let fact = self.facts.remove(i);
        let shard = self.shard_of.remove(i);
        let load = &mut self.loads[shard as usize];
        load.facts = load.facts.saturating_sub(1);
        load.bytes = load.bytes.saturating_sub(stored_size(&fact));
        self.by_content.remove(&fact::dedupe_key(&fact.content));
        self.touch(shard);
        true
    }

    /// Rates the fact with `id`: its new trust, `None` when there is none.
    pub fn rate(&mut self, id: &str, helpful: bool) -> Option<f64> {
        let i = self.position(id)?;
        let trust = Fact::rated(self.facts[i].trust, helpful);
        self.facts[i].trust = trust;
        self.touch(self.shard_of[i]);
        Some(trust)
    }

    /// Counts `hits` more recalls of the fact with `id`; false when there is
    /// none.
    pub fn add_hits(&mut self, id: &str, hits: u64) -> bool {
        let Some(i) = self.position(id) else {
            return false;
        };
        self.facts[i].hits += hits;
        self.touch(self.shard_of[i]);
        true
    }

    /// The facts, newest first.
    pub fn newest_first(&self) -> Vec<&Fact> {
        let mut facts: Vec<&Fact> = self.facts.iter().collect();
        facts.sort_by(|a, b| {
            (b.created, b.number())
                .cmp(&(a.created, a.number()))
                .then_with(|| b.id.cmp(&a.id))
        });
        facts
    }

    /// Writes the changed shards, then the meta record with the generation
    /// bumped past both this store's and the stored one (so a writer that
    /// raced this one still sees a change). Nothing to write: no-op.
    pub fn save(&mut self, kv: &dyn Kv) -> Result<(), StoreError> {
        if self.dirty.is_empty() {
            return Ok(());
        }
        for &shard in &self.dirty {
            let facts = self
                .facts
                .iter()
                .zip(&self.shard_of)
                .filter(|(_, s)| **s == shard)
                .map(|(f, _)| f)
                .collect();
            let key = shard_key(shard);
            let json =
                serde_json::to_vec(&ShardOut { facts }).map_err(|e| StoreError::Corrupt {
                    key: key.clone(),
                    reason: e.to_string(),
                })?;
            kv.set(&key, &json).map_err(host(&key))?;
        }
        let stored = read_meta(kv)?;
        let meta = Meta {
            version: LAYOUT_VERSION,
            next_id: self.meta.next_id.max(stored.next_id),
            generation: self.meta.generation.max(stored.generation) + 1,
            shards: self.meta.shards.max(stored.shards),
        };
        let json = serde_json::to_vec(&meta).map_err(|e| StoreError::Corrupt {
            key: META_KEY.to_owned(),
            reason: e.to_string(),
        })?;
        kv.set(META_KEY, &json).map_err(host(META_KEY))?;
        self.meta = meta;
        self.loads
            .resize(self.meta.shards as usize, ShardLoad::default());
        self.dirty.clear();
        Ok(())
    }
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
