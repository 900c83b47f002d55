//! Resuming a session that died mid-tool.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::*;
use talaria_kernel::{Message, Role, ToolResult};
use talaria_store::{INTERRUPTED_RESULT, repair_for_resume};

#[test]
fn two_calls_one_result_gets_one_synthetic_result_after_it_once() {
    let t = test_db();
    t.db.create_session(&new_session("r", "/a")).unwrap();
    let calls = vec![call("c1", "read_file", "{}"), call("c2", "terminal", "{}")];
    let conversation = vec![
        Message::user("check the build"),
        Message {
            tool_calls: calls.clone(),
            ..Message::assistant("")
        },
        Message::tool_result(&ToolResult::ok(&calls[0], "contents")),
    ];
    t.db.append_batch("r", &conversation).unwrap();

    let resumed = t.db.messages_for_resume("r").unwrap();
    assert_eq!(resumed.repaired, 1);
    assert_eq!(resumed.messages.len(), 4);
    assert_eq!(&resumed.messages[..3], &conversation[..]);
    let synthetic = &resumed.messages[3];
    assert_eq!(synthetic.role, Role::Tool);
    assert_eq!(synthetic.tool_call_id.as_deref(), Some("c2"));
    assert_eq!(synthetic.name.as_deref(), Some("terminal"));
    assert_eq!(synthetic.content, INTERRUPTED_RESULT);
    assert!(synthetic.is_error);

    // Persisted: the stored conversation is the repaired one, and a second
    // resume adds nothing.
    assert_eq!(t.db.messages("r").unwrap(), resumed.messages);
    let again = t.db.messages_for_resume("r").unwrap();
    assert_eq!(again.repaired, 0);
    assert_eq!(again.messages, resumed.messages);

    // The pure function agrees.
    let mut messages = conversation.clone();
    assert_eq!(repair_for_resume(&mut messages), 1);
    assert_eq!(messages, resumed.messages);
    assert_eq!(repair_for_resume(&mut messages), 0);
}

#[test]
fn a_gap_in_the_middle_is_filled_in_place_and_later_messages_move_down() {
    let t = test_db();
    t.db.create_session(&new_session("m", "/a")).unwrap();
    let calls = vec![
        call("a", "x", "{}"),
        call("b", "y", "{}"),
        call("c", "z", "{}"),
    ];
    t.db.append_batch(
        "m",
        &[
            Message::user("first"),
            Message {
                tool_calls: calls.clone(),
                ..Message::assistant("working")
            },
            Message::tool_result(&ToolResult::ok(&calls[1], "b done")),
            Message::user("hello again"),
            Message::assistant("hi"),
        ],
    )
    .unwrap();
    let resumed = t.db.messages_for_resume("m").unwrap();
    assert_eq!(resumed.repaired, 2);
    let stored = t.db.stored_messages("m").unwrap();
    let seqs: Vec<u64> = stored.iter().map(|s| s.seq).collect();
    assert_eq!(seqs, [1, 2, 3, 4, 5, 6, 7], "no gaps, no repeats");
    let ids: Vec<&str> = stored
        .iter()
        .map(|s| s.message.tool_call_id.as_deref().unwrap_or("-"))
        .collect();
    assert_eq!(ids, ["-", "-", "b", "a", "c", "-", "-"]);
    assert_eq!(stored[5].message.content, "hello again");
    // Appending continues after the moved messages.
    assert_eq!(t.db.append("m", &Message::user("next")).unwrap(), 8);
    assert!(t.db.integrity_check().unwrap().is_empty());
}

#[test]
fn complete_conversations_are_left_alone() {
    let mut messages = every_kind();
    assert_eq!(repair_for_resume(&mut messages), 0);
    assert_eq!(messages, every_kind());
    let mut empty = Vec::new();
    assert_eq!(repair_for_resume(&mut empty), 0);
}
