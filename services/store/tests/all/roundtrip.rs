//! Sessions and messages go in and come back out unchanged.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::*;
use talaria_kernel::{Message, Usage};
use talaria_store::{ExportLine, ListQuery, NewSession, StoreError};

#[test]
fn every_message_kind_round_trips_in_order() {
    let t = test_db();
    t.db.create_session(&new_session("s1", "/work/a")).unwrap();
    let messages = every_kind();
    for (index, message) in messages.iter().enumerate() {
        assert_eq!(t.db.append("s1", message).unwrap(), index as u64 + 1);
    }
    assert_eq!(t.db.messages("s1").unwrap(), messages);
    let stored = t.db.stored_messages("s1").unwrap();
    let seqs: Vec<u64> = stored.iter().map(|s| s.seq).collect();
    assert_eq!(seqs, [1, 2, 3, 4, 5, 6]);
    assert!(stored.iter().all(|s| s.created_at > 0));

    // A second handle (another process, in effect) sees the same.
    let again = talaria_store::SessionDb::open(&t.path).unwrap();
    assert_eq!(again.messages("s1").unwrap(), messages);
}

#[test]
fn appending_to_an_unknown_session_fails_and_creating_twice_fails() {
    let t = test_db();
    let error = t.db.append("nope", &Message::user("hi")).unwrap_err();
    assert!(
        matches!(error, StoreError::NotFound(ref id) if id == "nope"),
        "{error}"
    );
    assert!(matches!(
        t.db.messages("nope"),
        Err(StoreError::NotFound(_))
    ));
    t.db.create_session(&new_session("s1", "/a")).unwrap();
    assert!(matches!(
        t.db.create_session(&new_session("s1", "/a")),
        Err(StoreError::AlreadyExists(_))
    ));
    assert!(!t.db.ensure_session(&new_session("s1", "/a")).unwrap());
    assert!(t.db.ensure_session(&new_session("s2", "/a")).unwrap());
}

#[test]
fn append_or_create_creates_once_and_batches_continue_the_sequence() {
    let t = test_db();
    let session = new_session("lazy", "/a");
    assert_eq!(
        t.db.append_or_create(&session, &Message::user("one"))
            .unwrap(),
        1
    );
    assert_eq!(
        t.db.append_or_create(&session, &Message::user("two"))
            .unwrap(),
        2
    );
    let batch = [Message::assistant("three"), Message::user("four")];
    assert_eq!(t.db.append_batch("lazy", &batch).unwrap(), 4);
    let row = t.db.session("lazy").unwrap().unwrap();
    assert_eq!(row.message_count, 4);
    assert_eq!(row.cwd.as_deref(), Some("/a"));
}

#[test]
fn usage_totals_add_up() {
    let t = test_db();
    t.db.create_session(&new_session("s1", "/a")).unwrap();
    let usage = Usage {
        input_tokens: 100,
        output_tokens: 20,
        cache_read_tokens: 1000,
        cache_write_tokens: 5,
    };
    t.db.record_usage("s1", &usage, 0.25).unwrap();
    t.db.record_usage("s1", &usage, 0.5).unwrap();
    t.db.record_usage("s1", &usage, f64::NAN).unwrap();
    let row = t.db.session("s1").unwrap().unwrap();
    assert_eq!(
        (
            row.input_tokens,
            row.output_tokens,
            row.cache_read_tokens,
            row.cache_write_tokens
        ),
        (300, 60, 3000, 15)
    );
    assert!((row.cost_usd - 0.75).abs() < 1e-9, "{}", row.cost_usd);
    assert!(matches!(
        t.db.record_usage("nope", &usage, 1.0),
        Err(StoreError::NotFound(_))
    ));
}

#[test]
fn list_is_newest_first_with_counts_previews_and_filters() {
    let t = test_db();
    for (id, cwd, source) in [
        ("a", "/one", "cli"),
        ("b", "/two", "cli"),
        ("c", "/one", "cron"),
    ] {
        let mut session = new_session(id, cwd);
        session.source = source.into();
        t.db.create_session(&session).unwrap();
        // Distinct millisecond timestamps, so "newest" is well defined.
        std::thread::sleep(std::time::Duration::from_millis(3));
    }
    t.db.append("a", &Message::assistant("hello")).unwrap();
    t.db.append("a", &Message::user("  first\n\nquestion  of a "))
        .unwrap();
    t.db.append("a", &Message::user("second question")).unwrap();

    let all = t.db.list(&ListQuery::default()).unwrap();
    let ids: Vec<&str> = all.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, ["a", "c", "b"], "a was active last");
    assert_eq!(all[0].message_count, 3);
    assert_eq!(all[0].preview.as_deref(), Some("first question of a"));
    assert_eq!(all[1].preview, None);

    let in_one =
        t.db.list(&ListQuery {
            cwd: Some("/one".into()),
            ..ListQuery::default()
        })
        .unwrap();
    assert_eq!(
        in_one.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(),
        ["a", "c"]
    );
    let cron =
        t.db.list(&ListQuery {
            source: Some("cron".into()),
            ..ListQuery::default()
        })
        .unwrap();
    assert_eq!(cron.len(), 1);
    assert_eq!(
        t.db.list(&ListQuery {
            limit: 1,
            ..ListQuery::default()
        })
        .unwrap()
        .len(),
        1
    );

    assert_eq!(
        t.db.latest("/one", &talaria_store::Principal::owner())
            .unwrap()
            .unwrap()
            .id,
        "a"
    );
    assert_eq!(
        t.db.latest("/two", &talaria_store::Principal::owner())
            .unwrap()
            .unwrap()
            .id,
        "b"
    );
    assert!(
        t.db.latest("/three", &talaria_store::Principal::owner())
            .unwrap()
            .is_none()
    );
    t.db.append("c", &Message::user("now c")).unwrap();
    assert_eq!(
        t.db.latest("/one", &talaria_store::Principal::owner())
            .unwrap()
            .unwrap()
            .id,
        "c"
    );
}

#[test]
fn titles_can_be_set_and_cleared() {
    let t = test_db();
    t.db.create_session(&new_session("s1", "/a")).unwrap();
    t.db.set_title("s1", Some("Fix the parser")).unwrap();
    assert_eq!(
        t.db.session("s1").unwrap().unwrap().title.as_deref(),
        Some("Fix the parser")
    );
    t.db.set_title("s1", None).unwrap();
    assert_eq!(t.db.session("s1").unwrap().unwrap().title, None);
    assert!(matches!(
        t.db.set_title("x", Some("t")),
        Err(StoreError::NotFound(_))
    ));
}

#[test]
fn an_export_is_redacted_on_request_and_the_store_keeps_what_was_said() {
    let t = test_db();
    t.db.create_session(&new_session("sec", "/a")).unwrap();
    let key = "sk-proj-abcdefghijklmnopqrstuvwxyz012345";
    let mut assistant = Message::assistant("I will use it.");
    assistant.tool_calls = vec![talaria_kernel::ToolCall {
        id: "c1".into(),
        name: "terminal".into(),
        arguments: format!(r#"{{"command": "OPENAI_API_KEY={key} ./run"}}"#),
    }];
    t.db.append_batch(
        "sec",
        &[Message::user(format!("my key is {key}")), assistant],
    )
    .unwrap();
    let export = |redact: bool| {
        let mut out = Vec::new();
        t.db.export_jsonl("sec", &mut out, redact).unwrap();
        String::from_utf8(out).unwrap()
    };
    let redacted = export(true);
    assert!(!redacted.contains(key), "{redacted}");
    assert_eq!(
        redacted.matches("sk-pro…[REDACTED]").count(),
        2,
        "{redacted}"
    );
    assert!(export(false).contains(key));
}

#[test]
fn export_jsonl_parses_back_to_the_same_session() {
    let t = test_db();
    let mut session = new_session("exp", "/a");
    session.title = Some("Export me".into());
    t.db.create_session(&session).unwrap();
    t.db.append_batch("exp", &every_kind()).unwrap();
    t.db.record_usage(
        "exp",
        &Usage {
            input_tokens: 7,
            ..Usage::default()
        },
        0.01,
    )
    .unwrap();

    let mut out = Vec::new();
    t.db.export_jsonl("exp", &mut out, false).unwrap();
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<ExportLine> = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(lines.len(), 1 + every_kind().len());
    let ExportLine::Session(header) = &lines[0] else {
        panic!("header first: {text}")
    };
    assert_eq!(header, &t.db.session("exp").unwrap().unwrap());
    assert_eq!(header.title.as_deref(), Some("Export me"));
    let messages: Vec<Message> = lines[1..]
        .iter()
        .map(|line| match line {
            ExportLine::Message(stored) => stored.message.clone(),
            other => panic!("expected a message, got {other:?}"),
        })
        .collect();
    assert_eq!(messages, every_kind());
    // Each line is a flat JSON object with a type tag and the message fields.
    let second: serde_json::Value = serde_json::from_str(text.lines().nth(2).unwrap()).unwrap();
    assert_eq!(second["type"], "message");
    assert_eq!(second["seq"], 2);
    assert_eq!(second["tool_calls"][1]["name"], "terminal");
    assert!(matches!(
        t.db.export_jsonl("nope", Vec::new(), true),
        Err(StoreError::NotFound(_))
    ));
}

#[test]
fn delete_removes_messages_and_search_entries() {
    let t = test_db();
    t.db.create_session(&new_session("gone", "/a")).unwrap();
    t.db.create_session(&new_session("kept", "/a")).unwrap();
    let child = NewSession {
        parent_session_id: Some("gone".into()),
        ..new_session("child", "/a")
    };
    t.db.create_session(&child).unwrap();
    t.db.append("gone", &Message::user("zebra crossing"))
        .unwrap();
    t.db.append("kept", &Message::user("zebra stripes"))
        .unwrap();
    assert_eq!(
        t.db.search("zebra", 10, &talaria_store::Principal::owner())
            .unwrap()
            .len(),
        2
    );

    assert!(t.db.delete("gone").unwrap());
    assert!(!t.db.delete("gone").unwrap());
    assert!(t.db.session("gone").unwrap().is_none());
    let hits =
        t.db.search("zebra", 10, &talaria_store::Principal::owner())
            .unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].session_id, "kept");
    assert!(
        t.db.search("crossing", 10, &talaria_store::Principal::owner())
            .unwrap()
            .is_empty()
    );
    assert!(
        t.db.search("ossin", 10, &talaria_store::Principal::owner())
            .unwrap()
            .is_empty(),
        "trigram entries gone too"
    );
    assert_eq!(
        t.db.session("child").unwrap().unwrap().parent_session_id,
        None
    );
    assert!(t.db.integrity_check().unwrap().is_empty());
}

#[test]
fn short_ids_resolve_unless_ambiguous() {
    let t = test_db();
    for id in ["3f2a9c10", "3f2b0000", "77aa"] {
        t.db.create_session(&new_session(id, "/a")).unwrap();
    }
    assert_eq!(
        t.db.resolve_id("3f2a", &talaria_store::Principal::owner())
            .unwrap(),
        "3f2a9c10"
    );
    assert_eq!(
        t.db.resolve_id("7", &talaria_store::Principal::owner())
            .unwrap(),
        "77aa"
    );
    assert_eq!(
        t.db.resolve_id("77aa", &talaria_store::Principal::owner())
            .unwrap(),
        "77aa"
    );
    match t.db.resolve_id("3f2", &talaria_store::Principal::owner()) {
        Err(StoreError::Ambiguous { prefix, candidates }) => {
            assert_eq!(prefix, "3f2");
            let mut sorted = candidates.clone();
            sorted.sort();
            assert_eq!(sorted, ["3f2a9c10", "3f2b0000"]);
            // The message never names ids: it may reach someone who must not learn them.
            let message = StoreError::Ambiguous { prefix, candidates }.to_string();
            assert!(
                !message.contains("3f2a9c10") && message.contains("2 sessions"),
                "{message}"
            );
        }
        other => panic!("expected ambiguity, got {other:?}"),
    }
    assert!(matches!(
        t.db.resolve_id("zz", &talaria_store::Principal::owner()),
        Err(StoreError::NotFound(_))
    ));
    // LIKE wildcards are not wildcards here.
    assert!(matches!(
        t.db.resolve_id("%", &talaria_store::Principal::owner()),
        Err(StoreError::NotFound(_))
    ));
}

#[test]
fn recap_names_the_session_counts_and_last_exchange() {
    let t = test_db();
    t.db.create_session(&new_session("r", "/a")).unwrap();
    t.db.append_batch("r", &every_kind()).unwrap();
    t.db.append("r", &Message::user(format!("and now {}", "x".repeat(500))))
        .unwrap();
    let recap = t.db.recap("r").unwrap();
    assert!(recap.contains("Please fix the failing test"), "{recap}");
    assert!(
        recap.contains("7 messages (2 from you, 2 answers, 2 tool results)"),
        "{recap}"
    );
    assert!(recap.contains("last request: and now xxx"), "{recap}");
    assert!(recap.contains('…'), "long request cut: {recap}");
    assert!(recap.contains("last answer: The test is fixed."), "{recap}");
    assert!(recap.len() < 1000, "{recap}");
    t.db.set_title("r", Some("Fixing tests")).unwrap();
    assert!(t.db.recap("r").unwrap().starts_with("Fixing tests"));
}

#[test]
fn truncating_keeps_the_first_messages_and_forgets_the_rest_in_search() {
    let t = test_db();
    t.db.create_session(&new_session("s1", "/work/a")).unwrap();
    for text in ["keep the walrus", "drop the narwhal", "drop the okapi"] {
        t.db.append("s1", &Message::user(text)).unwrap();
    }
    assert_eq!(t.db.truncate("s1", 1).unwrap(), 2);
    assert_eq!(
        t.db.messages("s1").unwrap(),
        [Message::user("keep the walrus")]
    );
    assert!(
        t.db.search("narwhal", 5, &talaria_store::Principal::owner())
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        t.db.search("walrus", 5, &talaria_store::Principal::owner())
            .unwrap()
            .len(),
        1
    );
    // The next message takes the freed sequence number.
    assert_eq!(t.db.append("s1", &Message::user("again")).unwrap(), 2);
    assert_eq!(t.db.truncate("s1", 5).unwrap(), 0);
}
