//! Opening files: fresh, empty, current, and too new.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use rusqlite::Connection;
use talaria_kernel::Message;
use talaria_store::{NewSession, SCHEMA_VERSION, SessionDb, StoreError};

fn pragma(path: &std::path::Path, name: &str) -> String {
    let conn = Connection::open(path).unwrap();
    conn.query_row(&format!("PRAGMA {name}"), [], |row| {
        row.get::<_, rusqlite::types::Value>(0)
    })
    .map(|value| match value {
        rusqlite::types::Value::Integer(n) => n.to_string(),
        rusqlite::types::Value::Text(t) => t,
        other => format!("{other:?}"),
    })
    .unwrap()
}

#[test]
fn an_empty_file_is_migrated_to_the_current_schema_in_wal_mode() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("empty.sqlite");
    std::fs::write(&path, b"").unwrap();
    let db = SessionDb::open(&path).unwrap();
    assert_eq!(pragma(&path, "user_version"), SCHEMA_VERSION.to_string());
    assert_eq!(pragma(&path, "journal_mode"), "wal");
    db.create_session(&NewSession {
        id: "s".into(),
        ..NewSession::default()
    })
    .unwrap();
    db.append("s", &Message::user("hello")).unwrap();
    drop(db);
    // Reopening a current file changes nothing and keeps the data.
    let db = SessionDb::open(&path).unwrap();
    assert_eq!(db.messages("s").unwrap(), [Message::user("hello")]);
    assert!(db.integrity_check().unwrap().is_empty());
}

#[test]
fn a_missing_file_and_its_directories_are_created() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a/b/c/sessions.sqlite");
    SessionDb::open(&path).unwrap();
    assert!(path.exists());
    assert_eq!(pragma(&path, "user_version"), SCHEMA_VERSION.to_string());
}

#[test]
fn a_database_from_a_newer_version_is_refused_and_not_modified() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("future.sqlite");
    {
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TABLE future_things (x TEXT); INSERT INTO future_things VALUES ('keep');",
        )
        .unwrap();
        conn.pragma_update(None, "user_version", SCHEMA_VERSION + 1)
            .unwrap();
    }
    let before = std::fs::read(&path).unwrap();
    let error = SessionDb::open(&path).unwrap_err();
    match &error {
        StoreError::NewerSchema {
            found, supported, ..
        } => {
            assert_eq!((*found, *supported), (SCHEMA_VERSION + 1, SCHEMA_VERSION));
        }
        other => panic!("expected NewerSchema, got {other:?}"),
    }
    let message = error.to_string();
    assert!(
        message.contains("upgrade") && message.contains("not modified"),
        "{message}"
    );
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "file bytes unchanged"
    );
    assert_eq!(
        pragma(&path, "journal_mode"),
        "delete",
        "not switched to WAL"
    );
    assert!(!dir.path().join("future.sqlite-wal").exists());
}

#[test]
fn a_file_that_is_not_a_database_is_an_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("text.sqlite");
    std::fs::write(
        &path,
        "this is not sqlite, just text that is long enough".repeat(20),
    )
    .unwrap();
    assert!(SessionDb::open(&path).is_err());
}

#[test]
fn in_memory_databases_work() {
    let db = SessionDb::open_in_memory().unwrap();
    db.create_session(&NewSession {
        id: "m".into(),
        ..NewSession::default()
    })
    .unwrap();
    db.append("m", &Message::user("in memory")).unwrap();
    assert_eq!(
        db.search("memory", 5, &talaria_store::Principal::owner())
            .unwrap()
            .len(),
        1
    );
}
