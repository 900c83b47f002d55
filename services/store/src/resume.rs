//! Making a stored conversation safe to continue, and a short recap of it.
//!
//! If the process died while tools were running, the last assistant message
//! has tool calls without results, and every provider rejects a request like
//! that. Repair adds a synthetic error result for each unanswered call, right
//! after the results that did arrive, in call order.

use std::collections::HashSet;

use rusqlite::Transaction;
use talaria_kernel::{Message, Role};

use crate::codec::{now_ms, one_line, to_sql_int};
use crate::db::SessionDb;
use crate::error::{Result, StoreError};
use crate::read::{require_session, session_row, stored_messages};
use crate::rows::ResumedMessages;
use crate::write::insert_message_at;

/// The result text of a call the session did not live to finish.
pub const INTERRUPTED_RESULT: &str = "interrupted: the session ended before this call finished";

/// Characters of the last request and answer a recap shows.
const RECAP_REQUEST_CHARS: usize = 200;
const RECAP_ANSWER_CHARS: usize = 300;
const RECAP_TITLE_CHARS: usize = 80;

/// Synthetic results to insert before the message at `index`.
struct Insertion {
    index: usize,
    results: Vec<Message>,
}

/// Adds an interrupted result for every tool call that has none, right after
/// the results its assistant message did get; returns how many were added.
/// Running it again adds nothing.
pub fn repair_for_resume(messages: &mut Vec<Message>) -> usize {
    let plan = plan_repair(messages);
    let mut added = 0;
    // Back to front, so earlier indexes stay valid.
    for insertion in plan.into_iter().rev() {
        added += insertion.results.len();
        messages.splice(insertion.index..insertion.index, insertion.results);
    }
    added
}

/// Where results are missing. A call counts as answered only by a tool
/// message in the run directly after its assistant message, which is where
/// the wire formats require it.
fn plan_repair(messages: &[Message]) -> Vec<Insertion> {
    let mut plan = Vec::new();
    let mut index = 0;
    while index < messages.len() {
        let message = &messages[index];
        index += 1;
        if message.role != Role::Assistant || message.tool_calls.is_empty() {
            continue;
        }
        let mut answered: HashSet<&str> = HashSet::new();
        while let Some(next) = messages.get(index).filter(|m| m.role == Role::Tool) {
            answered.extend(next.tool_call_id.as_deref());
            index += 1;
        }
        let results: Vec<Message> = message
            .tool_calls
            .iter()
            // `insert` is false for a call answered already (or listed twice).
            .filter(|call| answered.insert(call.id.as_str()))
            .map(|call| Message {
                role: Role::Tool,
                content: INTERRUPTED_RESULT.to_owned(),
                tool_call_id: Some(call.id.clone()),
                name: Some(call.name.clone()),
                is_error: true,
                ..Message::default()
            })
            .collect();
        if !results.is_empty() {
            plan.push(Insertion { index, results });
        }
    }
    plan
}

impl SessionDb {
    /// The session's messages ready to send again: [`repair_for_resume`]
    /// applied, and the synthetic results stored (in the same transaction),
    /// so resuming twice adds them once.
    pub fn messages_for_resume(&self, session_id: &str) -> Result<ResumedMessages> {
        self.write(|tx| {
            require_session(tx, session_id)?;
            let stored = stored_messages(tx, session_id)?;
            let seqs: Vec<i64> = stored.iter().map(|s| to_sql_int(s.seq)).collect();
            let mut messages: Vec<Message> = stored.into_iter().map(|s| s.message).collect();
            let plan = plan_repair(&messages);
            let now = now_ms();
            let mut repaired = 0;
            for insertion in plan.into_iter().rev() {
                // The run of results ends at index - 1 (at least the assistant message).
                let after = seqs[insertion.index - 1];
                persist(tx, session_id, after, &insertion.results, now)?;
                repaired += insertion.results.len();
                messages.splice(insertion.index..insertion.index, insertion.results);
            }
            Ok(ResumedMessages { messages, repaired })
        })
    }

    /// A few lines for "resuming…": title (or first request), message counts,
    /// the last request and the last answer, each cut short.
    pub fn recap(&self, session_id: &str) -> Result<String> {
        self.read(|tx| recap(tx, session_id))
    }
}

/// Stores `results` right after seq `after`, moving later messages down.
fn persist(
    tx: &Transaction<'_>,
    session_id: &str,
    after: i64,
    results: &[Message],
    now: i64,
) -> Result<()> {
    let count = results.len() as i64;
    // Two steps through negative numbers so UNIQUE(session_id, seq) never
    // sees two rows with one seq mid-update.
    tx.execute(
        "UPDATE messages SET seq = -(seq + ?3) WHERE session_id = ?1 AND seq > ?2",
        rusqlite::params![session_id, after, count],
    )?;
    tx.execute(
        "UPDATE messages SET seq = -seq WHERE session_id = ?1 AND seq < 0",
        [session_id],
    )?;
    for (offset, result) in results.iter().enumerate() {
        insert_message_at(tx, session_id, after + 1 + offset as i64, result, None, now)?;
    }
    Ok(())
}

fn recap(tx: &Transaction<'_>, session_id: &str) -> Result<String> {
    let session =
        session_row(tx, session_id)?.ok_or_else(|| StoreError::NotFound(session_id.to_owned()))?;
    let messages: Vec<Message> = stored_messages(tx, session_id)?
        .into_iter()
        .map(|s| s.message)
        .collect();
    let count = |role: Role| messages.iter().filter(|m| m.role == role).count();
    let last_text = |role: Role| {
        messages
            .iter()
            .rev()
            .find(|m| m.role == role && !m.content.trim().is_empty())
            .map(|m| m.content.as_str())
    };
    let title = session
        .title
        .clone()
        .or_else(|| first_user_text(&messages).map(str::to_owned))
        .map(|title| one_line(&title, RECAP_TITLE_CHARS))
        .unwrap_or_else(|| "(untitled)".to_owned());
    let mut lines = vec![format!(
        "{title} — session {}, {} messages ({} from you, {} answers, {} tool results)",
        session.id,
        messages.len(),
        count(Role::User),
        count(Role::Assistant),
        count(Role::Tool),
    )];
    if let Some(request) = last_text(Role::User) {
        lines.push(format!(
            "last request: {}",
            one_line(request, RECAP_REQUEST_CHARS)
        ));
    }
    if let Some(answer) = last_text(Role::Assistant) {
        lines.push(format!(
            "last answer: {}",
            one_line(answer, RECAP_ANSWER_CHARS)
        ));
    }
    Ok(lines.join("\n"))
}

/// The first user message, the usual stand-in for a missing title.
fn first_user_text(messages: &[Message]) -> Option<&str> {
    messages
        .iter()
        .find(|m| m.role == Role::User)
        .map(|m| m.content.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use talaria_kernel::{ToolCall, ToolResult};

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "read_file".into(),
            arguments: "{}".into(),
        }
    }

    #[test]
    fn missing_results_go_after_the_ones_that_arrived_in_call_order() {
        let calls = vec![call("a"), call("b"), call("c")];
        let mut messages = vec![
            Message::user("go"),
            Message {
                tool_calls: calls.clone(),
                ..Message::assistant("")
            },
            Message::tool_result(&ToolResult::ok(&calls[1], "done")),
            Message::user("next"),
        ];
        assert_eq!(repair_for_resume(&mut messages), 2);
        let ids: Vec<_> = messages
            .iter()
            .map(|m| m.tool_call_id.as_deref().unwrap_or("-"))
            .collect();
        assert_eq!(ids, ["-", "-", "b", "a", "c", "-"]);
        assert_eq!(repair_for_resume(&mut messages), 0);
    }
}
