//! Context compression in the loop: triggered by the threshold and by a
//! context-overflow error, never leaving an orphaned tool call or result, a
//! new session continuing the old one, and a fallback when summarising fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};

use crate::support::*;
use async_trait::async_trait;
use talaria_kernel::compress::SUMMARY_PREFIX;
use talaria_kernel::*;

struct FakeSummarizer {
    fail: bool,
    seen: Mutex<Vec<(String, Option<String>)>>,
}

#[async_trait]
impl Summarizer for FakeSummarizer {
    async fn summarize(&self, transcript: &str, focus: Option<&str>) -> Result<String, String> {
        self.seen
            .lock()
            .unwrap()
            .push((transcript.to_owned(), focus.map(str::to_owned)));
        if self.fail {
            Err("the auxiliary model is down".into())
        } else {
            Ok("Goal: echo things. Decisions: none. Files: none. Open: finish.".into())
        }
    }
}

fn summarizer(fail: bool) -> Arc<FakeSummarizer> {
    Arc::new(FakeSummarizer {
        fail,
        seen: Mutex::new(Vec::new()),
    })
}

/// `n` turns each echoing a large text, then a final answer.
fn long_session(n: usize) -> Vec<Reply> {
    let big = "x".repeat(3000);
    let args = serde_json::json!({ "text": big }).to_string();
    let mut replies: Vec<Reply> = (0..n).map(|_| calls(&[("echo", args.as_str())])).collect();
    replies.push(text("all done"));
    replies
}

#[tokio::test]
async fn crossing_the_threshold_compresses_without_orphans_and_continues_in_a_new_session() {
    let model = ScriptedModel::new(long_session(12));
    let summary = summarizer(false);
    let mut rig = rig_compressing(std::slice::from_ref(&model), 8_000, Some(summary.clone()));
    let exit = rig.run("echo a lot").await.unwrap();
    assert_eq!(exit, Exit::Final("all done".into()));
    assert!(rig.agent.state().compressions >= 1);

    for request in model.requests() {
        assert_paired(&request.messages);
        let estimate =
            compress::estimate_tokens(&request.system, &request.tools, &request.messages);
        assert!(
            estimate < 8_000,
            "a request stayed far over the window: {estimate}"
        );
    }
    let last = model.requests().pop().unwrap();
    assert!(
        last.messages
            .iter()
            .any(|m| m.content.contains(SUMMARY_PREFIX)),
        "the summary is in the history"
    );
    assert_eq!(
        last.messages[0].content, "echo a lot",
        "the head is protected"
    );
    assert!(
        rig.conversation.session_id.starts_with("s1~"),
        "{}",
        rig.conversation.session_id
    );
    let stored = rig.store.messages.lock().unwrap();
    assert!(
        stored.iter().any(|(id, _)| id.starts_with("s1~")),
        "the new session is persisted"
    );
    assert!(
        rig.events
            .events()
            .iter()
            .any(|e| matches!(e, AgentEvent::Compressed { .. }))
    );
}

#[tokio::test]
async fn a_context_overflow_compresses_then_retries_once() {
    let mut replies = long_session(3);
    let answer = replies.pop().unwrap();
    replies.push(Reply::Err(ModelError::ContextOverflow {
        message: "prompt is too long".into(),
    }));
    replies.push(answer);
    let model = ScriptedModel::new(replies);
    let mut rig = rig(std::slice::from_ref(&model), Budget::default());
    let exit = rig.run("echo").await.unwrap();
    assert_eq!(exit, Exit::Final("all done".into()));
    let requests = model.requests();
    let before = compress::estimate_tokens(
        &requests[3].system,
        &requests[3].tools,
        &requests[3].messages,
    );
    let after = compress::estimate_tokens(
        &requests[4].system,
        &requests[4].tools,
        &requests[4].messages,
    );
    assert!(after < before, "the retry is smaller: {after} vs {before}");
    assert_paired(&requests[4].messages);
    assert_eq!(rig.agent.state().compressions, 1);
}

#[tokio::test]
async fn a_failing_summariser_gives_the_fallback_summary() {
    let model = ScriptedModel::new(long_session(12));
    let summary = summarizer(true);
    let mut rig = rig_compressing(std::slice::from_ref(&model), 8_000, Some(summary.clone()));
    assert_eq!(
        rig.run("echo a lot").await.unwrap(),
        Exit::Final("all done".into())
    );
    let last = model.requests().pop().unwrap();
    let inserted = last
        .messages
        .iter()
        .find(|m| m.content.contains(SUMMARY_PREFIX))
        .expect("a summary was inserted");
    assert!(
        inserted.content.contains("Tools used: echo"),
        "{}",
        inserted.content
    );
}

#[tokio::test]
async fn a_forced_compaction_passes_the_focus() {
    let model = ScriptedModel::new(long_session(4));
    let summary = summarizer(false);
    let mut rig = rig_compressing(
        std::slice::from_ref(&model),
        1_000_000,
        Some(summary.clone()),
    );
    rig.run("echo").await.unwrap();
    let before = rig.conversation.messages.len();
    let outcome = rig
        .agent
        .compact(
            &mut rig.conversation,
            Some("the echo results"),
            true,
            &rig.events,
        )
        .await;
    assert!(outcome.summarized_messages > 0);
    assert!(rig.conversation.messages.len() < before);
    assert_paired(&rig.conversation.messages);
    let seen = summary.seen.lock().unwrap();
    assert_eq!(seen[0].1.as_deref(), Some("the echo results"));
}

/// Two tool results of ~15 KB after one user message: the first sits in the protected head,
/// the second in the tail, so there is no middle to summarise.
fn two_huge_results() -> Vec<Reply> {
    let args = serde_json::json!({ "text": "y".repeat(15_000) }).to_string();
    vec![
        calls(&[("echo", args.as_str())]),
        calls(&[("echo", args.as_str())]),
    ]
}

fn request_tokens(request: &SeenRequest) -> usize {
    compress::estimate_tokens(&request.system, &request.tools, &request.messages)
}

#[tokio::test]
async fn an_overflow_shrinks_the_next_request_even_with_nothing_between_head_and_tail() {
    let mut replies = two_huge_results();
    replies.push(Reply::Err(ModelError::ContextOverflow {
        message: "prompt is too long".into(),
    }));
    replies.push(text("all done"));
    let model = ScriptedModel::new(replies);
    let mut rig = rig(std::slice::from_ref(&model), Budget::default());
    assert_eq!(
        rig.run("read it twice").await.unwrap(),
        Exit::Final("all done".into())
    );
    let requests = model.requests();
    let (rejected, retried) = (request_tokens(&requests[2]), request_tokens(&requests[3]));
    assert!(
        retried * 4 <= rejected * 3,
        "the retry is at least a quarter smaller: {retried} vs {rejected}"
    );
    assert_paired(&requests[3].messages);
    let cut = |m: &Message| {
        m.content.contains("cut to fit the context window")
            || m.tool_calls
                .iter()
                .any(|c| c.arguments.contains("cut to fit the context window"))
    };
    assert!(
        requests[3].messages.iter().any(cut),
        "a big tool output or its arguments were cut"
    );
}

#[tokio::test]
async fn overflow_after_overflow_stops_with_a_clear_error_at_the_cap() {
    let mut replies = two_huge_results();
    for _ in 0..6 {
        replies.push(Reply::Err(ModelError::ContextOverflow {
            message: "prompt is too long".into(),
        }));
    }
    let model = ScriptedModel::new(replies);
    let mut rig = rig(std::slice::from_ref(&model), Budget::default());
    let error = rig.run("read it twice").await.unwrap_err();
    let LoopError::ContextTooLarge(message) = &error else {
        panic!("expected ContextTooLarge, got {error:?}");
    };
    assert!(message.contains("after 3 compressions"), "{message}");
    let requests = model.requests();
    // The first call, then three smaller retries, each smaller than the one before.
    assert_eq!(requests.len(), 2 + 4, "{}", requests.len());
    for pair in requests[2..].windows(2) {
        assert!(request_tokens(&pair[1]) < request_tokens(&pair[0]));
    }
}

#[tokio::test]
async fn a_prompt_with_nothing_to_cut_stops_naming_the_sizes() {
    let model = ScriptedModel::new(vec![Reply::Err(ModelError::ContextOverflow {
        message: "prompt is too long: 250000 tokens > 200000 maximum".into(),
    })]);
    let mut rig = rig(std::slice::from_ref(&model), Budget::default());
    let error = rig.run(&"z".repeat(40_000)).await.unwrap_err();
    let LoopError::ContextTooLarge(message) = &error else {
        panic!("expected ContextTooLarge, got {error:?}");
    };
    assert!(message.contains("cannot be made smaller"), "{message}");
    assert!(message.contains("tokens in 1 messages"), "{message}");
    assert!(message.contains("250000 tokens > 200000"), "{message}");
    assert_eq!(model.requests().len(), 1, "no blind retry");
}

/// Two huge results, then "input + max_tokens exceed the window" with `available` tokens of
/// room, then an answer: the requests the model saw and the rig.
async fn output_budget_refused(available: u32) -> (Vec<SeenRequest>, Rig) {
    let mut replies = two_huge_results();
    replies.push(Reply::Err(ModelError::OutputBudgetTooLarge {
        available,
        message: "input length and `max_tokens` exceed context limit".into(),
    }));
    replies.push(text("all done"));
    let model = ScriptedModel::new(replies);
    let mut rig = rig(std::slice::from_ref(&model), Budget::default());
    assert_eq!(
        rig.run("read it twice").await.unwrap(),
        Exit::Final("all done".into())
    );
    (model.requests(), rig)
}

#[tokio::test]
async fn an_output_budget_too_large_lowers_max_tokens_instead_of_compressing() {
    let (requests, rig) = output_budget_refused(2_000).await;
    assert_eq!(requests[3].max_tokens, Some(2_000));
    assert_eq!(
        requests[3].messages, requests[2].messages,
        "the prompt is sent unchanged"
    );
    assert_eq!(rig.agent.state().compressions, 0);
}

#[tokio::test]
async fn too_little_room_for_output_shrinks_the_prompt_instead() {
    let (requests, rig) = output_budget_refused(100).await;
    assert!(request_tokens(&requests[3]) < request_tokens(&requests[2]));
    assert_eq!(rig.agent.state().compressions, 1);
}
