//! `talaria session list|show|search|export|delete`.

use talaria_profile::ProfileHome;
use talaria_store::{ListQuery, SessionDb};

use crate::args::SessionCommand;
use crate::exit::{Status, usage_error};

/// `YYYY-MM-DD HH:MM` (UTC) of a unix-milliseconds timestamp.
pub fn when(ms: i64) -> String {
    let time = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms.max(0).unsigned_abs());
    let text = humantime::format_rfc3339_seconds(time).to_string();
    // 2026-11-30T01:16:30Z → 2026-11-30 01:16
    text.get(..16).unwrap_or(&text).replacen('T', " ", 1)
}

/// Opens the profile's session database.
pub fn open(home: &ProfileHome) -> Result<SessionDb, Status> {
    SessionDb::open(home.session_db()).map_err(|error| usage_error(&error.to_string()))
}

/// Runs one sessions command.
pub fn run(command: SessionCommand, home: &ProfileHome) -> Status {
    let db = match open(home) {
        Ok(db) => db,
        Err(status) => return status,
    };
    // The profile's own command line is the owner's: it sees every session.
    let owner = talaria_agent::Principal::owner();
    let resolve = |id: &str| {
        db.resolve_id(id, &owner).map_err(|e| match e {
            // The owner may see which sessions a short id matches.
            talaria_store::StoreError::Ambiguous { ref candidates, .. } => {
                usage_error(&format!("{e}: {}", candidates.join(", ")))
            }
            other => usage_error(&other.to_string()),
        })
    };
    match command {
        SessionCommand::List { limit, here } => {
            let cwd = here
                .then(|| std::env::current_dir().ok())
                .flatten()
                .map(|d| d.display().to_string());
            let query = ListQuery {
                limit,
                cwd,
                ..ListQuery::default()
            };
            match db.list(&query) {
                Ok(sessions) => {
                    if sessions.is_empty() {
                        eprintln!("No sessions yet.");
                    }
                    for s in sessions {
                        let title = s
                            .title
                            .or(s.preview)
                            .unwrap_or_default()
                            .chars()
                            .take(60)
                            .collect::<String>();
                        println!(
                            "{}  {}  {:>4} msgs  {:<8} {}",
                            s.id,
                            when(s.updated_at),
                            s.message_count,
                            s.source,
                            title
                        );
                    }
                    Status::Answered
                }
                Err(error) => usage_error(&error.to_string()),
            }
        }
        SessionCommand::Show { id } => {
            let id = match resolve(&id) {
                Ok(id) => id,
                Err(status) => return status,
            };
            match (db.session(&id), db.messages(&id)) {
                (Ok(Some(session)), Ok(messages)) => {
                    println!(
                        "session {} · {} · {} · started {}",
                        session.id,
                        session.model,
                        session.cwd.as_deref().unwrap_or("-"),
                        when(session.created_at)
                    );
                    for message in messages {
                        println!("\n[{}]", message.role.as_str());
                        if !message.content.is_empty() {
                            println!("{}", message.content);
                        }
                        for call in &message.tool_calls {
                            println!("→ {}({})", call.name, call.arguments);
                        }
                    }
                    Status::Answered
                }
                (Ok(None), _) => usage_error(&format!("no session {id}")),
                (Err(error), _) | (_, Err(error)) => usage_error(&error.to_string()),
            }
        }
        SessionCommand::Search { query, limit } => match db.search(&query, limit, &owner) {
            Ok(hits) => {
                if hits.is_empty() {
                    eprintln!("No matches.");
                }
                for hit in hits {
                    println!(
                        "{}  #{:<4} {:<9} {}",
                        hit.session_id,
                        hit.message_seq,
                        hit.role.as_str(),
                        hit.snippet.replace('\n', " ")
                    );
                }
                Status::Answered
            }
            Err(error) => usage_error(&error.to_string()),
        },
        SessionCommand::Export { id, output } => {
            let id = match resolve(&id) {
                Ok(id) => id,
                Err(status) => return status,
            };
            // An unreadable config still exports, redacted (the default).
            let redact = talaria_profile::load_profile(home)
                .map_or(true, |(_, config)| config.security.redact_secrets);
            let result = match &output {
                Some(path) => std::fs::File::create(path)
                    .map_err(|e| format!("{}: {e}", path.display()))
                    .and_then(|file| {
                        db.export_jsonl(&id, std::io::BufWriter::new(file), redact)
                            .map_err(|e| e.to_string())
                    }),
                None => db
                    .export_jsonl(&id, std::io::stdout().lock(), redact)
                    .map_err(|e| e.to_string()),
            };
            match result {
                Ok(()) => Status::Answered,
                Err(error) => usage_error(&error),
            }
        }
        SessionCommand::Delete { id, yes } => {
            let id = match resolve(&id) {
                Ok(id) => id,
                Err(status) => return status,
            };
            match crate::setup::confirm_deletion(&format!("session {id} and all its messages"), yes)
            {
                Ok(true) => {}
                Ok(false) => return Status::Answered,
                Err(status) => return status,
            }
            match db.delete(&id) {
                Ok(true) => {
                    println!("Deleted session {id}.");
                    Status::Answered
                }
                Ok(false) => usage_error(&format!("no session {id}")),
                Err(error) => usage_error(&error.to_string()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_render_in_utc() {
        assert_eq!(when(1_796_001_390_123), "2026-11-30 01:16");
        assert_eq!(when(0), "1970-01-01 00:00");
    }
}
