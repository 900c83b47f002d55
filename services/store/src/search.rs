//! Full-text search over every message.
//!
//! Passes, each only if the previous ones found fewer hits than asked: whole
//! words (the `unicode61` index, bm25-ranked), then substrings (the trigram
//! index of the conversation, not of tool results: parts of words, CJK text
//! without spaces; newest first), or a LIKE
//! scan (newest first) when every term is shorter than a trigram. Hits are
//! deduplicated by message; earlier passes rank first.

use std::collections::{HashMap, HashSet};

use rusqlite::Transaction;
use rusqlite::types::Value;

use crate::codec::{from_sql_int, parse_role};
use crate::db::SessionDb;
use crate::error::{Result, StoreError};
use crate::query::{
    like_pattern, parse_terms, split_by_length, trigram_expression, word_expression,
};
use crate::rows::{MatchKind, SearchHit};
use crate::snippet::{ELLIPSIS, scan_snippet};
use talaria_kernel::Principal;

/// Put before each match in a snippet.
pub const MATCH_START: &str = "**";
/// Put after each match in a snippet.
pub const MATCH_END: &str = "**";
/// How many of the newest matches the word pass scores (see [`index_pass`]).
const RANK_WINDOW: usize = 1000;

impl SessionDb {
    /// Up to `limit` messages matching every term of `query`, best first.
    ///
    /// Terms are separated by whitespace; `"quoted text"` is one term (a
    /// phrase). Any text is accepted: FTS5 operators and punctuation are
    /// searched for literally, never parsed.
    ///
    /// Only sessions `viewer` may see are searched (the owner's search covers all).
    pub fn search(&self, query: &str, limit: usize, viewer: &Principal) -> Result<Vec<SearchHit>> {
        let scope = viewer.filter();
        let terms = parse_terms(query);
        if terms.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let (long_terms, short_terms) = split_by_length(&terms);
        let word = word_expression(&terms);
        let trigram = trigram_expression(&long_terms);
        // Messages still waiting for the index are indexed first. If that cannot be done now
        // (another process holds the write lock past the timeout, a read-only file) the search
        // still runs on what is indexed.
        let _ = self.index_pending();
        self.read(|tx| {
            let mut found = Found::new(limit);
            if let Some(expression) = &word {
                index_pass(tx, &WORDS, expression, &[], scope, &mut found)?;
            }
            if found.wants_more() {
                match &trigram {
                    Some(expression) => {
                        index_pass(tx, &TRIGRAMS, expression, &short_terms, scope, &mut found)?
                    }
                    None => scan_pass(tx, &short_terms, scope, &mut found)?,
                }
            }
            Ok(found.hits)
        })
    }
}

/// One of the two FTS5 indexes and how its hits are ordered.
struct Index {
    table: &'static str,
    kind: MatchKind,
    /// Snippet size in tokens (words, or characters for trigrams).
    snippet_tokens: u32,
    /// bm25 over the window, or simply newest first.
    ranked: bool,
}

const WORDS: Index = Index {
    table: "messages_fts",
    kind: MatchKind::Word,
    snippet_tokens: 16,
    ranked: true,
};

/// Newest first: bm25 over trigrams says little about relevance, and its
/// document-frequency pass over every trigram of the query (common ones like
/// "ent" are in most messages) was most of the search time in the benchmark.
const TRIGRAMS: Index = Index {
    table: "messages_trigram",
    kind: MatchKind::Substring,
    snippet_tokens: 64,
    ranked: false,
};

/// Hits so far, without repeats.
struct Found {
    hits: Vec<SearchHit>,
    seen: HashSet<i64>,
    limit: usize,
}

impl Found {
    fn new(limit: usize) -> Self {
        Self {
            hits: Vec::new(),
            seen: HashSet::new(),
            limit,
        }
    }

    fn wants_more(&self) -> bool {
        self.hits.len() < self.limit
    }

    /// Rows to ask for so that, after dropping repeats, `limit` can be reached.
    fn fetch(&self) -> usize {
        self.limit + self.seen.len()
    }

    /// Of `candidates` (best first), the new ones that still fit.
    fn take_new(&mut self, candidates: Vec<(i64, f64)>) -> Vec<(i64, f64)> {
        let room = self.limit - self.hits.len().min(self.limit);
        candidates
            .into_iter()
            .filter(|(id, _)| self.seen.insert(*id))
            .take(room)
            .collect()
    }
}

/// Matches from one index: for a ranked index the best bm25 matches among the
/// newest [`RANK_WINDOW`] matching messages, otherwise the newest matches.
///
/// Ranking every match would cost time in proportion to how common the terms
/// are (a word in most messages means scoring a million rows); walking the
/// index newest first and stopping after the window bounds it, and for any
/// term rarer than that the ranking is exact. Terms too short for the index
/// (`short_terms`) filter with LIKE.
fn index_pass(
    tx: &Transaction<'_>,
    index: &Index,
    expression: &str,
    short_terms: &[&String],
    scope: Option<&str>,
    found: &mut Found,
) -> Result<()> {
    let table = index.table;
    let fetch = found.fetch();
    let (rank, window) = if index.ranked {
        (format!("bm25({table})"), RANK_WINDOW.max(fetch))
    } else {
        ("0.0".to_owned(), fetch)
    };
    let mut params = vec![
        Value::Text(expression.to_owned()),
        Value::Integer(sql_count(window)),
        Value::Integer(sql_count(fetch)),
    ];
    let mut filter = String::new();
    for term in short_terms {
        params.push(Value::Text(like_pattern(term)));
        filter.push_str(&format!(
            " AND {table}.content LIKE ?{} ESCAPE '\\'",
            params.len()
        ));
    }
    if let Some(principal) = scope {
        params.push(Value::Text(principal.to_owned()));
        filter.push_str(&format!(" AND rowid IN {}", scoped_messages(params.len())));
    }
    let sql = format!(
        "SELECT id, rank FROM
           (SELECT rowid AS id, {rank} AS rank FROM {table}
            WHERE {table} MATCH ?1{filter} ORDER BY rowid DESC LIMIT ?2)
         ORDER BY rank, id DESC LIMIT ?3"
    );
    let candidates = tx
        .prepare_cached(&sql)?
        .query_map(rusqlite::params_from_iter(&params), |row| {
            Ok((row.get(0)?, row.get(1)?))
        })?
        .collect::<rusqlite::Result<Vec<(i64, f64)>>>()?;
    let chosen = found.take_new(candidates);
    let Some(oldest) = chosen.iter().map(|(id, _)| *id).min() else {
        return Ok(());
    };
    let ids = id_list(&chosen);
    // Snippets in one walk down the index to the oldest hit: looking each row
    // up by rowid costs a seek per query term and was ~1 ms a hit on trigrams.
    // The `+` keeps the id list a plain filter, so only the hits get snippets.
    let snippet_sql = format!(
        "SELECT rowid, snippet({table}, 0, ?3, ?4, '{ELLIPSIS}', {tokens}) FROM {table}
         WHERE {table} MATCH ?1 AND rowid >= ?2
           AND +rowid IN (SELECT value FROM json_each(?5))
         ORDER BY rowid DESC",
        tokens = index.snippet_tokens
    );
    let snippets: HashMap<i64, String> = tx
        .prepare_cached(&snippet_sql)?
        .query_map(
            rusqlite::params![expression, oldest, MATCH_START, MATCH_END, ids],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )?
        .collect::<rusqlite::Result<_>>()?;
    let mut rows = message_rows(tx, &ids)?;
    for (id, rank) in chosen {
        let Some(row) = rows.remove(&id) else {
            continue;
        };
        let snippet = snippets.get(&id).cloned().unwrap_or_default();
        // bm25 is lower-is-better; flip it so higher reads as better.
        found.hits.push(row.into_hit(snippet, -rank, index.kind)?);
    }
    Ok(())
}

/// Newest messages containing every (short) term; no index can help.
fn scan_pass(
    tx: &Transaction<'_>,
    terms: &[&String],
    scope: Option<&str>,
    found: &mut Found,
) -> Result<()> {
    let Some(first) = terms.first() else {
        return Ok(());
    };
    let mut params: Vec<Value> = Vec::new();
    let mut conditions = Vec::new();
    for term in terms {
        params.push(Value::Text(like_pattern(term)));
        conditions.push(format!("content LIKE ?{} ESCAPE '\\'", params.len()));
    }
    if let Some(principal) = scope {
        params.push(Value::Text(principal.to_owned()));
        conditions.push(format!("id IN {}", scoped_messages(params.len())));
    }
    params.push(Value::Integer(sql_count(found.fetch())));
    let sql = format!(
        "SELECT id, content FROM messages WHERE {} ORDER BY id DESC LIMIT ?{}",
        conditions.join(" AND "),
        params.len()
    );
    let candidates = tx
        .prepare_cached(&sql)?
        .query_map(rusqlite::params_from_iter(&params), |row| {
            Ok((row.get::<_, i64>(0)?, row.get::<_, String>(1)?))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let mut contents: HashMap<i64, String> = HashMap::new();
    let mut ranked = Vec::new();
    for (id, content) in candidates {
        ranked.push((id, 0.0));
        contents.insert(id, content);
    }
    let chosen = found.take_new(ranked);
    let mut rows = message_rows(tx, &id_list(&chosen))?;
    for (id, _) in chosen {
        let (Some(row), Some(content)) = (rows.remove(&id), contents.get(&id)) else {
            continue;
        };
        // The snippet marks the first term's first match.
        let snippet = scan_snippet(content, first);
        found
            .hits
            .push(row.into_hit(snippet, 0.0, MatchKind::Scan)?);
    }
    Ok(())
}

/// The fields of a hit that come from its `messages` row.
struct MessageRow {
    session_id: String,
    seq: i64,
    role: String,
    created_at: i64,
}

impl MessageRow {
    fn into_hit(self, snippet: String, score: f64, kind: MatchKind) -> Result<SearchHit> {
        let role = parse_role(&self.role).ok_or_else(|| StoreError::Corrupt {
            session_id: self.session_id.clone(),
            seq: self.seq,
            reason: format!("unknown role {:?}", self.role),
        })?;
        Ok(SearchHit {
            session_id: self.session_id,
            message_seq: from_sql_int(self.seq),
            role,
            snippet,
            created_at: self.created_at,
            score,
            kind,
        })
    }
}

/// The `messages` rows of the ids in `ids` (a JSON array).
fn message_rows(tx: &Transaction<'_>, ids: &str) -> Result<HashMap<i64, MessageRow>> {
    let rows = tx
        .prepare_cached(
            "SELECT id, session_id, seq, role, created_at FROM messages
             WHERE id IN (SELECT value FROM json_each(?1))",
        )?
        .query_map([ids], |row| {
            Ok((
                row.get(0)?,
                MessageRow {
                    session_id: row.get(1)?,
                    seq: row.get(2)?,
                    role: row.get(3)?,
                    created_at: row.get(4)?,
                },
            ))
        })?
        .collect::<rusqlite::Result<_>>()?;
    Ok(rows)
}

/// The message ids of the sessions of the principal bound as parameter `index`.
fn scoped_messages(index: usize) -> String {
    format!(
        "(SELECT m.id FROM messages m JOIN sessions s ON s.id = m.session_id
          WHERE s.principal = ?{index})"
    )
}

/// Message ids as a JSON array, bound as one parameter and read by `json_each`.
fn id_list(chosen: &[(i64, f64)]) -> String {
    let ids: Vec<String> = chosen.iter().map(|(id, _)| id.to_string()).collect();
    format!("[{}]", ids.join(","))
}

/// A row count as an SQL integer.
fn sql_count(count: usize) -> i64 {
    i64::try_from(count).unwrap_or(i64::MAX)
}
