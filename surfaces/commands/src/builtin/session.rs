//! Session commands: new, clear, retry, undo, title, compact, resume, sessions.

use crate::context::{Context, Effect, Reply};
use crate::invocation::Invocation;

fn pending_note(ctx: &Context<'_>) -> String {
    let changes = ctx.pending.describe();
    if changes.is_empty() {
        String::new()
    } else {
        format!("applying: {}", changes.join(", "))
    }
}

pub(super) async fn new(ctx: &mut Context<'_>, _: Invocation) -> Reply {
    Reply::effect(Effect::NewSession, pending_note(ctx))
}

pub(super) async fn clear(ctx: &mut Context<'_>, _: Invocation) -> Reply {
    Reply::effect(Effect::ClearAndNewSession, pending_note(ctx))
}

pub(super) async fn retry(ctx: &mut Context<'_>, _: Invocation) -> Reply {
    match ctx.agent.undo() {
        Ok(Some(undone)) => Reply::effect(Effect::Send(undone.prompt), "retrying the last message"),
        Ok(None) => Reply::error("nothing to retry yet"),
        Err(error) => Reply::error(error.to_string()),
    }
}

pub(super) async fn undo(ctx: &mut Context<'_>, _: Invocation) -> Reply {
    match ctx.agent.undo() {
        Ok(Some(undone)) => Reply::text(format!(
            "removed the last turn ({} message{}): “{}”",
            undone.removed,
            if undone.removed == 1 { "" } else { "s" },
            preview(&undone.prompt, 60)
        )),
        Ok(None) => Reply::error("nothing to undo"),
        Err(error) => Reply::error(error.to_string()),
    }
}

pub(super) async fn title(ctx: &mut Context<'_>, invocation: Invocation) -> Reply {
    match invocation.arg(0) {
        None => match ctx.agent.title() {
            Some(title) => Reply::text(format!("title: {title}")),
            None => Reply::text("no title yet; /title TEXT sets one"),
        },
        Some(title) => match ctx.agent.set_title(title) {
            Ok(()) => Reply::text(format!("title set: {title}")),
            Err(error) => Reply::error(error.to_string()),
        },
    }
}

pub(super) async fn compact(ctx: &mut Context<'_>, invocation: Invocation) -> Reply {
    let outcome = ctx.agent.compact(invocation.arg(0), ctx.events).await;
    if outcome.pruned_outputs == 0 && outcome.summarized_messages == 0 {
        return Reply::text("nothing to compact yet");
    }
    Reply::text(format!(
        "compacted: ~{} → ~{} tokens ({} tool outputs pruned, {} messages summarised)",
        outcome.tokens_before,
        outcome.tokens_after,
        outcome.pruned_outputs,
        outcome.summarized_messages
    ))
}

pub(super) async fn resume(ctx: &mut Context<'_>, invocation: Invocation) -> Reply {
    let Some(prefix) = invocation.arg(0) else {
        let mut reply = sessions(ctx, Invocation::default()).await;
        if !reply.is_error {
            reply
                .text
                .push_str("\n/resume ID continues one (a unique prefix is enough)");
        }
        return reply;
    };
    match ctx.agent.resolve_session(prefix) {
        Ok(id) if id == ctx.agent.session_id() => Reply::text("that is this session"),
        Ok(id) => Reply::effect(Effect::Resume(id), ""),
        Err(error) => Reply::error(error.to_string()),
    }
}

pub(super) async fn sessions(ctx: &mut Context<'_>, invocation: Invocation) -> Reply {
    let limit = invocation.arg(0).and_then(|n| n.parse().ok()).unwrap_or(10);
    let sessions = match ctx.agent.recent_sessions(limit) {
        Ok(sessions) => sessions,
        Err(error) => return Reply::error(error.to_string()),
    };
    if sessions.is_empty() {
        return Reply::text("no stored sessions yet");
    }
    let now = now_ms();
    let lines: Vec<String> = sessions
        .into_iter()
        .map(|s| {
            let marker = if s.id == ctx.agent.session_id() {
                "*"
            } else {
                " "
            };
            let title = s.title.or(s.preview).unwrap_or_default();
            format!(
                "{marker} {:<20} {:>9}  {:>4} msgs  {}",
                s.id,
                ago(now - s.updated_at),
                s.message_count,
                preview(&title, 50)
            )
        })
        .collect();
    Reply::text(lines.join("\n"))
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// "5 min ago" for a duration in milliseconds.
fn ago(ms: i64) -> String {
    let secs = (ms / 1000).max(0);
    match secs {
        0..60 => "just now".into(),
        60..3600 => format!("{} min ago", secs / 60),
        3600..86_400 => format!("{} h ago", secs / 3600),
        _ => format!("{} d ago", secs / 86_400),
    }
}

/// The first `max` characters of `text` on one line (whitespace runs become
/// one space), with `…` when cut.
pub fn preview(text: &str, max: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        return flat;
    }
    let mut cut: String = flat.chars().take(max).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_and_previews_read_well() {
        assert_eq!(ago(5_000), "just now");
        assert_eq!(ago(125_000), "2 min ago");
        assert_eq!(ago(7_300_000), "2 h ago");
        assert_eq!(ago(200_000_000), "2 d ago");
        assert_eq!(preview("a\n b", 10), "a b");
        assert_eq!(preview("数据库迁移", 3), "数据库…");
    }
}
