//! SIGKILL at random moments loses nothing that was committed, and resume
//! repair leaves no tool call without its result.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::Duration;

use talaria_kernel::Role;
use talaria_store::SessionDb;

const ROUNDS: u64 = 10;

#[test]
fn killed_writers_lose_no_committed_message_and_resume_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crash.sqlite");
    let mut rng = fastrand::Rng::with_seed(0x7a1a_41a5);
    for round in 0..ROUNDS {
        let session = format!("crash-{round}");
        let mut child = Command::new(env!("CARGO_BIN_EXE_store-writer"))
            .arg(&path)
            .arg(&session)
            .arg("1000000")
            .arg("conversation")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Random moments: from before the first commit to deep into the loop.
        std::thread::sleep(Duration::from_millis(rng.u64(1..400)));
        child.kill().unwrap(); // SIGKILL on Unix
        child.wait().unwrap();
        let mut out = String::new();
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        // Every complete line is a commit the writer saw; a torn last line is not.
        let complete = out.rfind('\n').map_or("", |end| &out[..end]);
        let committed: Vec<u64> = complete.lines().map(|l| l.parse().unwrap()).collect();
        assert_eq!(committed, (1..=committed.len() as u64).collect::<Vec<_>>());

        let db = SessionDb::open(&path).unwrap();
        let problems = db.integrity_check().unwrap();
        assert!(problems.is_empty(), "round {round}: {problems:?}");
        let Some(row) = db.session(&session).unwrap() else {
            assert!(
                committed.is_empty(),
                "round {round}: session missing after commits"
            );
            eprintln!("round {round}: killed before the first commit");
            continue;
        };
        assert!(
            row.message_count >= committed.len() as u64,
            "round {round}: {} stored, {} committed",
            row.message_count,
            committed.len()
        );
        let stored = db.stored_messages(&session).unwrap();
        let seqs: Vec<u64> = stored.iter().map(|s| s.seq).collect();
        assert_eq!(seqs, (1..=stored.len() as u64).collect::<Vec<_>>());
        // Each stored message is the one the writer wrote at that place.
        let pattern = [
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Tool,
            Role::Assistant,
        ];
        for stored in &stored {
            assert_eq!(stored.message.role, pattern[(stored.seq as usize - 1) % 5]);
        }

        let resumed = db.messages_for_resume(&session).unwrap();
        assert_every_call_answered_once(&resumed.messages, round);
        assert_eq!(db.messages_for_resume(&session).unwrap().repaired, 0);
        eprintln!(
            "round {round}: {} committed, {} stored, {} repaired",
            committed.len(),
            stored.len(),
            resumed.repaired
        );
    }
}

fn assert_every_call_answered_once(messages: &[talaria_kernel::Message], round: u64) {
    let mut calls = HashSet::new();
    let mut results: HashMap<&str, usize> = HashMap::new();
    for message in messages {
        match message.role {
            Role::Assistant => calls.extend(message.tool_calls.iter().map(|c| c.id.as_str())),
            Role::Tool => {
                *results
                    .entry(message.tool_call_id.as_deref().unwrap())
                    .or_default() += 1;
            }
            _ => {}
        }
    }
    for call in &calls {
        assert_eq!(results.get(call), Some(&1), "round {round}: call {call}");
    }
    assert_eq!(
        results.len(),
        calls.len(),
        "round {round}: results without calls"
    );
}
