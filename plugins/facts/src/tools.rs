//! The tools `fact_store` and `fact_feedback` (names as in Hermes Agent's
//! fact store). Each call runs in a fresh instance: it loads the store,
//! acts, and saves what changed, which bumps the generation the memory
//! instance checks before recalling.

use schemars::JsonSchema;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer};
use serde_json::{Value, json};
use talaria_plugin_sdk::{CallContext, Tool, ToolError, ToolFlags};

use crate::fact::{self, Fact};
use crate::kv::{HostKv, Kv};
use crate::recall::Recall;
use crate::store::{FactStore, NewFact};

/// `search` results unless `limit` says otherwise, and the most allowed.
pub const SEARCH_DEFAULT_LIMIT: u64 = 10;
pub const SEARCH_MAX_LIMIT: u64 = 50;
/// `list` page size unless `limit` says otherwise, and the most allowed.
pub const LIST_DEFAULT_LIMIT: u64 = 50;
pub const LIST_MAX_LIMIT: u64 = 1000;
/// The `version` of `export`'s answer.
pub const EXPORT_VERSION: u32 = 1;

/// What `fact_store` does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    Add,
    Search,
    Remove,
    List,
    Export,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct FactStoreArgs {
    /// add: store a fact (content; category and tags optional). search: find
    /// facts by keywords (query; category and limit optional). remove:
    /// delete a wrong or outdated fact (fact_id). list: facts newest first
    /// (offset, limit and category optional). export: every fact as JSON.
    pub action: Action,
    /// add: the fact, one short self-contained sentence.
    pub content: Option<String>,
    /// search: the words to look for.
    pub query: Option<String>,
    /// remove: the fact's id, e.g. "f-12".
    #[serde(default, deserialize_with = "optional_id")]
    pub fact_id: Option<String>,
    /// add: the fact's category (default "general"), e.g. user_pref, project,
    /// tool. search and list: only facts of this category.
    pub category: Option<String>,
    /// add: tags for the fact, e.g. ["editor"].
    #[serde(default, deserialize_with = "optional_tags")]
    pub tags: Option<Vec<String>>,
    /// search and list: the most facts returned (search: default 10, at most
    /// 50; list: default 50, at most 1000).
    pub limit: Option<u64>,
    /// list: how many of the newest facts to skip (default 0).
    pub offset: Option<u64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct FactFeedbackArgs {
    /// The fact's id, e.g. "f-12".
    #[serde(deserialize_with = "required_id")]
    pub fact_id: String,
    /// true: the fact was accurate and useful; false: it was wrong or
    /// outdated.
    pub helpful: bool,
}

/// An id as a string, or the bare number Hermes' integer ids were.
fn id_text(value: Value) -> Result<Option<String>, String> {
    match value {
        Value::Null => Ok(None),
        Value::String(id) => Ok(Some(fact::canonical_id(&id))),
        Value::Number(n) if n.is_u64() => Ok(Some(fact::canonical_id(&n.to_string()))),
        other => Err(format!("fact_id must be an id like \"f-12\", not {other}")),
    }
}

fn optional_id<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    id_text(Value::deserialize(d)?).map_err(D::Error::custom)
}

fn required_id<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    id_text(Value::deserialize(d)?)
        .map_err(D::Error::custom)?
        .ok_or_else(|| D::Error::custom("fact_id is required"))
}

/// Tags as a list, or one comma-separated string.
fn optional_tags<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    match Value::deserialize(d)? {
        Value::Null => Ok(None),
        Value::String(tags) => Ok(Some(tags.split(',').map(str::to_owned).collect())),
        Value::Array(items) => items
            .into_iter()
            .map(|item| match item {
                Value::String(tag) => Ok(tag),
                other => Err(D::Error::custom(format!(
                    "tags must be strings, not {other}"
                ))),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        other => Err(D::Error::custom(format!(
            "tags must be a list of strings, not {other}"
        ))),
    }
}

/// `fact_store`.
#[derive(Default)]
pub struct FactStoreTool;

impl Tool for FactStoreTool {
    const NAME: &'static str = "fact_store";
    const DESCRIPTION: &'static str = "Long-term fact store shared by all sessions: durable \
        facts about the user, their preferences and their projects. Facts relevant to the \
        user's message are recalled before each turn; use this tool to store a fact worth \
        remembering (add), look facts up (search), delete a wrong or outdated one (remove), or \
        page through them (list, newest first). Every fact has an id like f-12; export returns \
        all of them as JSON.";
    type Args = FactStoreArgs;

    fn flags() -> ToolFlags {
        // Two writes at once would each save the shard they loaded.
        ToolFlags::never_parallel()
    }

    fn call(&self, args: FactStoreArgs, ctx: &CallContext) -> Result<Value, ToolError> {
        fact_store(&HostKv, args, &ctx.session_id, crate::unix_now())
    }
}

/// `fact_feedback`.
#[derive(Default)]
pub struct FactFeedbackTool;

impl Tool for FactFeedbackTool {
    const NAME: &'static str = "fact_feedback";
    const DESCRIPTION: &'static str = "Rate a stored fact after using it: helpful true when it \
        was accurate and useful, false when it was wrong or outdated. The fact's trust rises or \
        falls, and trust weights how facts rank in recall and search.";
    type Args = FactFeedbackArgs;

    fn flags() -> ToolFlags {
        ToolFlags::never_parallel()
    }

    fn call(&self, args: FactFeedbackArgs, _ctx: &CallContext) -> Result<Value, ToolError> {
        fact_feedback(&HostKv, args)
    }
}

fn page_size(limit: Option<u64>, default: u64, max: u64) -> Result<usize, ToolError> {
    match limit {
        Some(0) => Err(ToolError::invalid("limit must be at least 1")),
        other => Ok(usize::try_from(other.unwrap_or(default).min(max)).unwrap_or(usize::MAX)),
    }
}

fn fact_json(fact: &Fact) -> Value {
    serde_json::to_value(fact).unwrap_or(Value::Null)
}

/// `fact_store` over `kv`, called in `session` at `now` (Unix seconds).
pub fn fact_store(
    kv: &dyn Kv,
    args: FactStoreArgs,
    session: &str,
    now: u64,
) -> Result<Value, ToolError> {
    let mut store = FactStore::load(kv)?;
    let category = args
        .category
        .as_deref()
        .map(str::trim)
        .filter(|c| !c.is_empty());
    match args.action {
        Action::Add => {
            let content = args.content.as_deref().unwrap_or_default();
            let new = NewFact {
                content,
                category,
                tags: args.tags.as_deref().unwrap_or_default(),
                source: session,
            };
            let added = store.add(new, now).ok_or_else(|| {
                ToolError::invalid("add needs content: the fact to store, as one sentence")
            })?;
            store.save(kv)?;
            let status = if added.duplicate {
                "duplicate"
            } else {
                "added"
            };
            Ok(json!({ "fact_id": added.id, "status": status }))
        }
        Action::Search => {
            let query = args.query.as_deref().map(str::trim).unwrap_or_default();
            if query.is_empty() {
                return Err(ToolError::invalid(
                    "search needs query: the words to look for",
                ));
            }
            let limit = page_size(args.limit, SEARCH_DEFAULT_LIMIT, SEARCH_MAX_LIMIT)?;
            let category = category.map(str::to_lowercase);
            let found = Recall::default().search(&store, query, category.as_deref(), limit);
            let results: Vec<Value> = found
                .iter()
                .map(|item| {
                    let mut value = fact_json(item.fact);
                    value["score"] = json!((item.score * 1000.0).round() / 1000.0);
                    value
                })
                .collect();
            Ok(json!({ "results": results, "count": results.len() }))
        }
        Action::Remove => {
            let id = args
                .fact_id
                .ok_or_else(|| ToolError::invalid("remove needs fact_id, e.g. \"f-12\""))?;
            let removed = store.remove(&id);
            store.save(kv)?;
            Ok(json!({ "fact_id": id, "removed": removed }))
        }
        Action::List => {
            let limit = page_size(args.limit, LIST_DEFAULT_LIMIT, LIST_MAX_LIMIT)?;
            let offset = usize::try_from(args.offset.unwrap_or(0)).unwrap_or(usize::MAX);
            let category = category.map(str::to_lowercase);
            let matching: Vec<&Fact> = store
                .newest_first()
                .into_iter()
                .filter(|f| category.as_deref().is_none_or(|c| f.category == c))
                .collect();
            let facts: Vec<Value> = matching
                .iter()
                .skip(offset)
                .take(limit)
                .map(|f| fact_json(f))
                .collect();
            Ok(json!({
                "facts": facts,
                "count": facts.len(),
                "total": matching.len(),
                "offset": offset,
            }))
        }
        Action::Export => {
            let facts: Vec<Value> = store.facts().iter().map(fact_json).collect();
            Ok(json!({
                "version": EXPORT_VERSION,
                "count": facts.len(),
                "facts": facts,
            }))
        }
    }
}

/// `fact_feedback` over `kv`.
pub fn fact_feedback(kv: &dyn Kv, args: FactFeedbackArgs) -> Result<Value, ToolError> {
    let mut store = FactStore::load(kv)?;
    let trust = store.rate(&args.fact_id, args.helpful).ok_or_else(|| {
        ToolError::invalid(format!(
            "no fact has the id {:?}: search or list the facts for their ids",
            args.fact_id
        ))
    })?;
    store.save(kv)?;
    Ok(json!({ "fact_id": args.fact_id, "helpful": args.helpful, "trust": trust }))
}

#[cfg(test)]
#[path = "tools_tests.rs"]
mod tests;
