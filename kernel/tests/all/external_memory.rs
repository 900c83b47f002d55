//! The external memory port: recalled context on the user turn (never the
//! system prompt), every finished turn handed over exactly once (across a
//! compression too), and the provider's say in what a summary keeps.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};

use crate::support::*;
use async_trait::async_trait;
use talaria_kernel::*;

#[derive(Default)]
struct FakeMemory {
    recalled: Option<String>,
    queries: Mutex<Vec<String>>,
    turns: Mutex<Vec<Vec<Message>>>,
    compressed: Mutex<usize>,
}

#[async_trait]
impl ExternalMemory for FakeMemory {
    async fn prefetch(&self, query: &str) -> Option<String> {
        self.queries.lock().unwrap().push(query.to_owned());
        self.recalled.clone()
    }

    fn turn_finished(&self, turn: &[Message]) {
        self.turns.lock().unwrap().push(turn.to_vec());
    }

    async fn before_compress(&self, messages: &[Message]) -> Option<String> {
        *self.compressed.lock().unwrap() += messages.len();
        Some("the user's name is Ada".into())
    }
}

impl FakeMemory {
    fn turns(&self) -> Vec<Vec<Message>> {
        self.turns.lock().unwrap().clone()
    }
}

struct FocusSummarizer(Mutex<Vec<Option<String>>>);

#[async_trait]
impl Summarizer for FocusSummarizer {
    async fn summarize(&self, _transcript: &str, focus: Option<&str>) -> Result<String, String> {
        self.0.lock().unwrap().push(focus.map(str::to_owned));
        Ok("Goal: echo. Decisions: none.".into())
    }
}

const RECALLED: &str = "<memory-context>\nthe user likes tea\n</memory-context>";

#[tokio::test]
async fn recalled_memory_joins_the_user_turn_and_each_finished_turn_is_synced_once() {
    let memory = Arc::new(FakeMemory {
        recalled: Some(RECALLED.into()),
        ..FakeMemory::default()
    });
    let model = ScriptedModel::new(vec![
        calls(&[("echo", r#"{"text":"hi"}"#)]),
        text("done"),
        text("again"),
    ]);
    let port = memory.clone();
    let mut rig = rig_full_with(std::slice::from_ref(&model), |ports, _| {
        ports.memory = Some(port)
    });
    rig.run("what do I drink?").await.unwrap();
    rig.run("and now?").await.unwrap();

    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    for request in &requests {
        assert!(
            !request.system.contains("tea"),
            "memory stays out of the system prompt"
        );
        assert_eq!(
            request.system, requests[0].system,
            "the system prompt is byte-stable"
        );
        assert_eq!(
            request.messages[0].content,
            format!("what do I drink?\n\n{RECALLED}")
        );
    }
    assert_eq!(
        requests[2].messages.last().unwrap().content,
        format!("and now?\n\n{RECALLED}")
    );
    assert_eq!(
        *memory.queries.lock().unwrap(),
        ["what do I drink?", "and now?"]
    );

    let turns = memory.turns();
    assert_eq!(turns.len(), 2, "one sync per finished turn");
    // The provider learns what the user typed, not what it recalled.
    assert_eq!(turns[0][0].content, "what do I drink?");
    let roles: Vec<Role> = turns[0].iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [Role::User, Role::Assistant, Role::Tool, Role::Assistant]
    );
    assert_eq!(turns[0].last().unwrap().content, "done");
    assert_eq!(turns[1].len(), 2);
    assert_eq!(turns[1][1].content, "again");
}

#[tokio::test]
async fn a_turn_that_compresses_is_synced_whole_and_the_summary_keeps_what_memory_asks() {
    let memory = Arc::new(FakeMemory::default());
    let big = serde_json::json!({ "text": "x".repeat(3000) }).to_string();
    let mut replies: Vec<Reply> = (0..12).map(|_| calls(&[("echo", big.as_str())])).collect();
    replies.push(text("all done"));
    let model = ScriptedModel::new(replies);
    let summarizer = Arc::new(FocusSummarizer(Mutex::new(Vec::new())));
    let port = memory.clone();
    let summary = summarizer.clone();
    let mut rig = rig_full_with(&[model], |ports, config| {
        ports.memory = Some(port);
        ports.summarizer = Some(summary);
        config.context_window = Some(8_000);
    });
    rig.run("echo a lot").await.unwrap();
    assert!(rig.agent.state().compressions >= 1);

    let turns = memory.turns();
    assert_eq!(turns.len(), 1);
    let turn = &turns[0];
    // 12 tool rounds (call + result) between the user message and the answer,
    // although the conversation itself was folded into a summary.
    assert_eq!(turn.len(), 1 + 12 * 2 + 1);
    assert_eq!(turn[0].content, "echo a lot");
    assert_eq!(turn.last().unwrap().content, "all done");
    assert!(*memory.compressed.lock().unwrap() > 0);
    let focuses = summarizer.0.lock().unwrap().clone();
    assert!(!focuses.is_empty());
    assert!(
        focuses
            .iter()
            .all(|f| f.as_deref() == Some("Keep: the user's name is Ada"))
    );
}

#[tokio::test]
async fn an_interrupted_turn_is_not_synced() {
    let memory = Arc::new(FakeMemory::default());
    let model = ScriptedModel::new(vec![text("never")]);
    let port = memory.clone();
    let mut rig = rig_full_with(&[model], |ports, _| ports.memory = Some(port));
    let cancel = CancellationToken::new();
    cancel.cancel();
    let exit = rig
        .agent
        .run_turn(&mut rig.conversation, "stop", &rig.events, &cancel)
        .await
        .unwrap();
    assert_eq!(exit, Exit::Interrupted);
    assert!(memory.turns().is_empty());
}
