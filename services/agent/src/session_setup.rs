//! Where a session's state comes from: the session database (or memory when it cannot open),
//! the resumed history or a new id, the store its messages go to, and whose built-in memory it
//! reads — each scoped to the session's principal.

use std::path::Path;
use std::sync::Arc;

use talaria_kernel::SessionStore;
use talaria_profile::home::ProfileHome;
use talaria_profile::memory_config::{MemoryScope, MemoryScopes};
use talaria_profile::settings::Settings;
use talaria_store::{NewSession, Principal, SessionDb, SqliteSessionStore};

use crate::agent::{BuildError, Surface};
use crate::store::MemorySessionStore;

/// Where a session's built-in memory (`MEMORY.md`, `USER.md`) lives: the owner's surfaces use
/// the owner's; shared surfaces follow `memory.scope` — a chat user's, a group's or a
/// client's own directory, the owner's when the owner chose to share it, or none.
pub(crate) fn memory_dir(
    home: &ProfileHome,
    surface: Surface,
    principal: &Principal,
    scopes: MemoryScopes,
) -> Option<std::path::PathBuf> {
    let scope = match surface {
        Surface::Gateway => scopes.chat,
        Surface::ApiServer => scopes.api,
        Surface::McpServer => scopes.mcp,
        Surface::Webhook => scopes.webhook,
        Surface::Terminal | Surface::OneShot | Surface::Editor | Surface::Cron | Surface::Batch => {
            MemoryScope::Owner
        }
    };
    match scope {
        MemoryScope::None => None,
        MemoryScope::Owner => Some(home.memory_dir()),
        MemoryScope::Own if principal.is_owner() => Some(home.memory_dir()),
        MemoryScope::Own => Some(home.principal_memory_dir(&principal.file_name())),
    }
}

/// The session database. Sessions are kept in SQLite; if that is impossible
/// a new session still runs, in memory, and the user is told it will not be
/// kept (a resumed one cannot run without it).
pub(crate) fn open_session_db(
    home: &ProfileHome,
    resuming: bool,
    notices: &mut Vec<String>,
) -> Result<Option<Arc<SessionDb>>, BuildError> {
    match SessionDb::shared(home.session_db()) {
        Ok(db) => Ok(Some(db)),
        Err(error) if resuming => Err(BuildError(format!("cannot resume: {error}"))),
        Err(error) => {
            notices.push(format!("this session will not be saved: {error}"));
            Ok(None)
        }
    }
}

/// The session's id and history: the stored session to resume (tool calls
/// its last turn never finished are marked interrupted), else a new one.
pub(crate) fn resume_or_start(
    resume: Option<&str>,
    db: Option<&Arc<SessionDb>>,
    principal: &Principal,
    notices: &mut Vec<String>,
) -> Result<(String, Vec<talaria_kernel::Message>), BuildError> {
    let (Some(id), Some(db)) = (resume, db) else {
        return Ok((talaria_store::new_session_id(), Vec::new()));
    };
    // Another principal's session is as unknown as a missing one; a new one is started
    // under the id only when nobody has it.
    let exists = db
        .session(id)
        .map_err(|e| BuildError(format!("cannot resume session {id}: {e}")))?;
    if exists.is_some_and(|row| !principal.sees(row.principal.as_str())) {
        return Err(BuildError(format!(
            "cannot resume session {id}: no such session"
        )));
    }
    let resumed = db
        .messages_for_resume(id)
        .map_err(|e| BuildError(format!("cannot resume session {id}: {e}")))?;
    if resumed.repaired > 0 {
        notices.push(format!(
            "{} tool call(s) of the last turn never finished; they are marked interrupted",
            resumed.repaired
        ));
    }
    Ok((id.to_owned(), resumed.messages))
}

/// Where the session's messages go: the database, else memory.
pub(crate) fn session_store(
    db: Option<&Arc<SessionDb>>,
    session_id: &str,
    surface: Surface,
    settings: &Settings,
    cwd: &Path,
    principal: &Principal,
) -> Arc<dyn SessionStore> {
    match db {
        Some(db) => Arc::new(SqliteSessionStore::new(
            db.clone(),
            NewSession {
                id: session_id.to_owned(),
                title: None,
                source: surface.name().to_owned(),
                model: settings.primary.model.clone(),
                cwd: Some(cwd.display().to_string()),
                parent_session_id: None,
                principal: principal.clone(),
            },
        )),
        None => Arc::new(MemorySessionStore::default()),
    }
}
