//! Listing sessions, most recently active first.

use rusqlite::types::Value;

use crate::codec::{from_sql_int, one_line};
use crate::db::SessionDb;
use crate::error::Result;
use crate::rows::{ListQuery, SessionSummary};
use talaria_kernel::Principal;

/// Characters of the first user message shown in a listing.
const PREVIEW_CHARS: usize = 80;

impl SessionDb {
    /// Sessions matching `query`, most recently active first, each with its
    /// message count and the start of its first user message.
    pub fn list(&self, query: &ListQuery) -> Result<Vec<SessionSummary>> {
        // Only the filters asked for go into the SQL, so the cwd index applies.
        let mut filters = Vec::new();
        let mut values = Vec::new();
        if let Some(cwd) = &query.cwd {
            filters.push("s.cwd = ?");
            values.push(Value::Text(cwd.clone()));
        }
        if let Some(source) = &query.source {
            filters.push("s.source = ?");
            values.push(Value::Text(source.clone()));
        }
        if let Some(principal) = query.viewer.filter() {
            filters.push("s.principal = ?");
            values.push(Value::Text(principal.to_owned()));
        }
        let filter = if filters.is_empty() {
            String::new()
        } else {
            format!("WHERE {}", filters.join(" AND "))
        };
        values.push(Value::Integer(
            i64::try_from(query.limit).unwrap_or(i64::MAX),
        ));
        let sql = format!(
            "SELECT s.id, s.title, s.source, s.model, s.cwd, s.parent_session_id, s.created_at,
                    s.updated_at, s.cost_usd, s.principal,
                    (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id),
                    (SELECT substr(m.content, 1, {fetch}) FROM messages m
                      WHERE m.session_id = s.id AND m.role = 'user' ORDER BY m.seq LIMIT 1)
             FROM sessions s {filter}
             ORDER BY s.updated_at DESC, s.rowid DESC
             LIMIT ?",
            // Extra characters so collapsing whitespace still fills the preview.
            fetch = PREVIEW_CHARS * 4,
        );
        self.read(|tx| {
            let mut statement = tx.prepare_cached(&sql)?;
            let rows = statement.query_map(rusqlite::params_from_iter(&values), |row| {
                Ok(SessionSummary {
                    id: row.get(0)?,
                    title: row.get(1)?,
                    source: row.get(2)?,
                    model: row.get(3)?,
                    cwd: row.get(4)?,
                    parent_session_id: row.get(5)?,
                    created_at: row.get(6)?,
                    updated_at: row.get(7)?,
                    cost_usd: row.get(8)?,
                    principal: Principal::from_stored(row.get::<_, String>(9)?),
                    message_count: from_sql_int(row.get(10)?),
                    preview: row
                        .get::<_, Option<String>>(11)?
                        .map(|text| one_line(&text, PREVIEW_CHARS)),
                })
            })?;
            Ok(rows.collect::<rusqlite::Result<_>>()?)
        })
    }

    /// The most recently active session `viewer` may see that ran in `cwd` (for
    /// `--continue`).
    pub fn latest(&self, cwd: &str, viewer: &Principal) -> Result<Option<SessionSummary>> {
        let query = ListQuery {
            limit: 1,
            cwd: Some(cwd.to_owned()),
            source: None,
            viewer: viewer.clone(),
        };
        Ok(self.list(&query)?.into_iter().next())
    }
}
