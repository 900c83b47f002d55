//! The kernel's SessionStore port over SQLite.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use crate::support::*;
use talaria_kernel::{Message, SessionStore, Usage};
use talaria_store::{NewSession, SqliteSessionStore};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_is_created_with_its_metadata_on_first_append() {
    let t = test_db();
    let db = Arc::new(talaria_store::SessionDb::open(&t.path).unwrap());
    let meta = NewSession {
        title: Some("Port test".into()),
        parent_session_id: Some("older".into()),
        ..new_session("p1", "/proj")
    };
    let store: Arc<dyn SessionStore> = Arc::new(SqliteSessionStore::new(db.clone(), meta));
    assert!(
        db.session("p1").unwrap().is_none(),
        "nothing written before the first message"
    );

    store.append("p1", &Message::user("hi")).await.unwrap();
    let usage = Usage {
        input_tokens: 10,
        output_tokens: 3,
        ..Usage::default()
    };
    store
        .append_reply("p1", &Message::assistant("hello"), &usage, 0.002)
        .await
        .unwrap();

    let row = db.session("p1").unwrap().unwrap();
    assert_eq!(row.title.as_deref(), Some("Port test"));
    assert_eq!(row.cwd.as_deref(), Some("/proj"));
    assert_eq!(row.parent_session_id.as_deref(), Some("older"));
    assert_eq!(row.message_count, 2);
    assert_eq!((row.input_tokens, row.output_tokens), (10, 3));
    assert_eq!(
        db.messages("p1").unwrap(),
        [Message::user("hi"), Message::assistant("hello")]
    );

    // A reply first also creates the session.
    store
        .append_reply("p2", &Message::assistant("first"), &usage, 0.0)
        .await
        .unwrap();
    assert_eq!(db.session("p2").unwrap().unwrap().input_tokens, 10);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_is_stored_with_its_usage_in_one_transaction() {
    let t = test_db();
    let db = Arc::new(talaria_store::SessionDb::open(&t.path).unwrap());
    let store = SqliteSessionStore::new(db.clone(), new_session("r1", "/a"));
    let usage = Usage {
        input_tokens: 7,
        output_tokens: 2,
        cache_read_tokens: 5,
        ..Usage::default()
    };
    // The first write of a session may be a reply (a continuation, say): it creates it.
    store
        .append_reply("r1", &Message::assistant("one"), &usage, 0.5)
        .await
        .unwrap();
    store.append("r1", &Message::user("more")).await.unwrap();
    store
        .append_reply("r1", &Message::assistant("two"), &usage, 0.25)
        .await
        .unwrap();

    let row = db.session("r1").unwrap().unwrap();
    assert_eq!(row.message_count, 3);
    assert_eq!(
        (row.input_tokens, row.output_tokens, row.cache_read_tokens),
        (14, 4, 10)
    );
    assert!((row.cost_usd - 0.75).abs() < 1e-9);
    assert_eq!(
        db.messages("r1").unwrap(),
        [
            Message::assistant("one"),
            Message::user("more"),
            Message::assistant("two")
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_appends_through_the_port_keep_every_message() {
    let t = test_db();
    let db = Arc::new(talaria_store::SessionDb::open(&t.path).unwrap());
    let store = Arc::new(SqliteSessionStore::new(db.clone(), new_session("c", "/a")));
    let tasks: Vec<_> = (0..20)
        .map(|i| {
            let store = store.clone();
            tokio::spawn(async move {
                store
                    .append("c", &Message::user(format!("m{i}")))
                    .await
                    .unwrap();
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    let stored = db.stored_messages("c").unwrap();
    assert_eq!(
        stored.iter().map(|s| s.seq).collect::<Vec<_>>(),
        (1..=20).collect::<Vec<_>>()
    );
}

#[tokio::test]
async fn errors_reach_the_kernel_as_its_store_error() {
    let t = test_db();
    // A real SQLite failure: the table is dropped behind the store's back.
    let db = Arc::new(talaria_store::SessionDb::open(&t.path).unwrap());
    {
        let conn = rusqlite::Connection::open(&t.path).unwrap();
        conn.execute_batch("DROP TABLE messages").unwrap();
    }
    let store = SqliteSessionStore::new(db, new_session("e", "/a"));
    let error = store.append("e", &Message::user("x")).await.unwrap_err();
    assert!(error.to_string().contains("session"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compressed_session_leads_to_its_newest_continuation_not_to_delegated_children() {
    let t = test_db();
    let db = Arc::new(talaria_store::SessionDb::open(&t.path).unwrap());
    let meta = NewSession {
        source: "acp".into(),
        ..new_session("first", "/proj")
    };
    let store = SqliteSessionStore::new(db.clone(), meta);
    store.append("first", &Message::user("hi")).await.unwrap();
    assert_eq!(db.latest_continuation("first").unwrap(), "first");

    // A delegated task's child is not where the conversation goes on.
    let child = NewSession {
        source: "child".into(),
        parent_session_id: Some("first".into()),
        ..new_session("delegated", "/proj")
    };
    db.ensure_session(&child).unwrap();
    assert_eq!(db.latest_continuation("first").unwrap(), "first");

    // Two compressions in a row: the chain is followed to its end.
    let summary = [Message::user("[summary]")];
    store
        .continue_as("first", "second", &summary)
        .await
        .unwrap();
    store
        .continue_as("second", "third", &summary)
        .await
        .unwrap();
    for id in ["first", "second", "third"] {
        assert_eq!(db.latest_continuation(id).unwrap(), "third", "{id}");
    }
    assert_eq!(db.latest_continuation("no-such").unwrap(), "no-such");
}
