//! Session-store write cost: one message per transaction (how a live session
//! appends) and a hundred per transaction (imports), into a fresh database
//! with FTS indexing on. Prints µs per message and messages/s.

#[path = "support/corpus.rs"]
mod corpus;

use std::time::Instant;

use corpus::Corpus;
use talaria_store::{NewSession, SessionDb};

fn session(id: &str) -> NewSession {
    NewSession {
        id: id.to_owned(),
        title: None,
        source: "bench".into(),
        model: "bench-model".into(),
        cwd: Some("/home/user/project".into()),
        parent_session_id: None,
        principal: talaria_store::Principal::owner(),
    }
}

fn main() {
    if let Err(error) = run() {
        eprintln!("write: {error}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let db = SessionDb::open(dir.path().join("sessions.sqlite"))?;
    let mut corpus = Corpus::new(0x00c0_ffee);
    println!(
        "{:<34} {:>10} {:>12} {:>12}",
        "scenario", "messages", "µs/message", "messages/s"
    );
    let count = 5_000;
    db.create_session(&session("single"))?;
    let messages: Vec<_> = (0..count).map(|i| corpus.message(0, i)).collect();
    let started = Instant::now();
    for message in &messages {
        db.append("single", message)?;
    }
    report(
        "append, one per transaction",
        count,
        started.elapsed().as_secs_f64(),
    );

    let batches = 200;
    let started = Instant::now();
    for batch in 0..batches {
        let id = format!("batch-{batch}");
        db.create_session(&session(&id))?;
        let messages: Vec<_> = (0..100).map(|i| corpus.message(batch + 1, i)).collect();
        db.append_batch(&id, &messages)?;
    }
    report(
        "append_batch, 100 per transaction",
        batches * 100,
        started.elapsed().as_secs_f64(),
    );
    Ok(())
}

fn report(scenario: &str, messages: usize, seconds: f64) {
    println!(
        "{scenario:<34} {messages:>10} {:>12.1} {:>12.0}",
        seconds * 1e6 / messages as f64,
        messages as f64 / seconds
    );
}
