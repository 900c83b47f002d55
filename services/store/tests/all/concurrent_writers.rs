//! Several processes appending to one database at the same time.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Stdio};

use talaria_store::SessionDb;

const WRITERS: usize = 8;
const MESSAGES: u64 = 1_000;

#[test]
fn eight_processes_append_a_thousand_messages_each_and_all_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    // A fresh file: the writers also race to create and migrate it.
    let path = dir.path().join("shared.sqlite");
    let children: Vec<_> = (0..WRITERS)
        .map(|n| {
            Command::new(env!("CARGO_BIN_EXE_store-writer"))
                .arg(&path)
                .arg(format!("writer-{n}"))
                .arg(MESSAGES.to_string())
                .arg("plain")
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for (n, child) in children.into_iter().enumerate() {
        let output = child.wait_with_output().unwrap();
        assert!(
            output.status.success(),
            "writer {n}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }

    let db = SessionDb::open(&path).unwrap();
    let mut total = 0;
    for n in 0..WRITERS {
        let id = format!("writer-{n}");
        let stored = db.stored_messages(&id).unwrap();
        let seqs: Vec<u64> = stored.iter().map(|s| s.seq).collect();
        assert_eq!(
            seqs,
            (1..=MESSAGES).collect::<Vec<_>>(),
            "{id}: seqs 1..=N without gaps"
        );
        for (index, message) in stored.iter().enumerate() {
            assert_eq!(message.message.content, format!("{id} message {index}"));
        }
        total += stored.len();
    }
    assert_eq!(total, WRITERS * MESSAGES as usize);
    assert!(db.integrity_check().unwrap().is_empty());
    // Every message is searchable: the FTS triggers ran for each commit.
    assert_eq!(
        db.search(
            "\"writer-3 message 999\"",
            5,
            &talaria_store::Principal::owner()
        )
        .unwrap()
        .len(),
        1
    );
}
