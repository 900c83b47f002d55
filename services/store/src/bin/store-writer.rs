//! Test helper: appends messages to one session of a session database, as a
//! separate process, so tests can run several writers at once or SIGKILL one
//! mid-conversation.
//!
//! `store-writer DB SESSION COUNT plain` appends COUNT user messages.
//! `store-writer DB SESSION COUNT conversation` appends COUNT messages of a
//! tool-using conversation (user, assistant with two tool calls, the results,
//! an answer, …).
//!
//! After each committed append it prints the message's seq on its own line;
//! Rust's stdout is line-buffered, so a line read by the parent is a commit.

use std::process::ExitCode;

use talaria_kernel::{Message, ToolCall, ToolResult};
use talaria_store::{NewSession, SessionDb, StoreError};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [db, session, count, mode] = args.as_slice() else {
        eprintln!("usage: store-writer DB SESSION COUNT plain|conversation");
        return ExitCode::from(2);
    };
    let Ok(count) = count.parse::<u64>() else {
        eprintln!("COUNT must be a number, not {count:?}");
        return ExitCode::from(2);
    };
    let conversation = match mode.as_str() {
        "plain" => false,
        "conversation" => true,
        other => {
            eprintln!("unknown mode {other:?}");
            return ExitCode::from(2);
        }
    };
    match run(db, session, count, conversation) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("store-writer: {error}");
            ExitCode::FAILURE
        }
    }
}

fn run(path: &str, session_id: &str, count: u64, conversation: bool) -> Result<(), StoreError> {
    let db = SessionDb::open(path)?;
    let session = NewSession {
        id: session_id.to_owned(),
        source: "test".into(),
        model: "writer".into(),
        cwd: Some("/tmp/writer".into()),
        ..NewSession::default()
    };
    for index in 0..count {
        let message = if conversation {
            conversation_message(session_id, index)
        } else {
            Message::user(format!("{session_id} message {index}"))
        };
        let seq = db.append_or_create(&session, &message)?;
        println!("{seq}");
    }
    Ok(())
}

/// Message `index` of a repeating five-message exchange with two tool calls.
fn conversation_message(session_id: &str, index: u64) -> Message {
    let turn = index / 5;
    let calls = [
        ToolCall {
            id: format!("{session_id}-{turn}-a"),
            name: "read_file".into(),
            arguments: format!(r#"{{"path":"src/file{turn}.rs"}}"#),
        },
        ToolCall {
            id: format!("{session_id}-{turn}-b"),
            name: "terminal".into(),
            arguments: r#"{"command":"cargo test"}"#.into(),
        },
    ];
    match index % 5 {
        0 => Message::user(format!("turn {turn}: please look at file{turn}")),
        1 => Message {
            reasoning: Some("I should read the file and run the tests.".into()),
            tool_calls: calls.to_vec(),
            ..Message::assistant(format!("Looking at file{turn}."))
        },
        2 => Message::tool_result(&ToolResult::ok(&calls[0], format!("fn turn_{turn}() {{}}"))),
        3 => Message::tool_result(&ToolResult::error(&calls[1], "exit status 101")),
        _ => Message::assistant(format!("file{turn} looks fine; one test fails.")),
    }
}
