//! Each error class gets its recovery: what is retried, what moves to the next key or
//! model at once, what stops, and what the user is told.

use std::sync::Arc;
use std::time::Duration;

use crate::support::*;
use talaria_kernel::*;

fn route(model: &Arc<ScriptedModel>, name: &str, credential: Option<&str>) -> ModelRoute {
    ModelRoute {
        provider: model.clone(),
        model: name.to_owned(),
        credential: credential.map(str::to_owned),
    }
}

fn pool_rig(routes: Vec<ModelRoute>) -> Rig {
    rig_routes(
        routes,
        Budget::default(),
        MemoryStore::default(),
        FakeClock::default(),
        |_, _| {},
    )
}

fn streamed_text(events: &[AgentEvent]) -> String {
    events
        .iter()
        .filter_map(|event| match event {
            AgentEvent::Stream(StreamEvent::TextDelta { text }) => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

fn warnings(events: &[AgentEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|event| match event {
            AgentEvent::Warning { message } => Some(message.clone()),
            _ => None,
        })
        .collect()
}

fn retries(events: &[AgentEvent]) -> usize {
    events
        .iter()
        .filter(|e| matches!(e, AgentEvent::Retrying { .. }))
        .count()
}

fn interrupted(message: &str) -> ModelError {
    ModelError::StreamInterrupted {
        message: message.to_owned(),
    }
}

#[tokio::test]
async fn a_reply_cut_mid_stream_is_retried_without_showing_its_text_twice() {
    let model = ScriptedModel::new(vec![
        Reply::Cut("The answer is", interrupted("connection reset by peer")),
        text("The answer is 42."),
    ]);
    let mut rig = rig(std::slice::from_ref(&model), Budget::default());
    let exit = rig.run("question").await.unwrap();
    assert_eq!(exit, Exit::Final("The answer is 42.".into()));
    let events = rig.events.events();
    assert_eq!(streamed_text(&events), "The answer is 42.");
    assert_eq!(retries(&events), 1);
    assert!(warnings(&events).is_empty(), "{:?}", warnings(&events));
    assert_eq!(model.requests().len(), 2);
}

#[tokio::test]
async fn a_retry_that_answers_differently_says_so_and_starts_the_reply_again() {
    let model = ScriptedModel::new(vec![
        Reply::Cut("Paris is", interrupted("stream ended before completion")),
        text("The capital is Paris."),
    ]);
    let mut rig = rig(std::slice::from_ref(&model), Budget::default());
    let exit = rig.run("capital?").await.unwrap();
    assert_eq!(exit, Exit::Final("The capital is Paris.".into()));
    let events = rig.events.events();
    assert_eq!(streamed_text(&events), "Paris isThe capital is Paris.");
    let warned = warnings(&events);
    assert!(
        warned.iter().any(|w| w.contains("answered differently")),
        "{warned:?}"
    );
}

#[tokio::test]
async fn an_exhausted_quota_moves_to_the_next_route_without_retrying() {
    let primary = ScriptedModel::new(vec![Reply::Err(ModelError::QuotaExhausted {
        message: "You exceeded your current quota".into(),
        retry_after: None,
    })]);
    let fallback = ScriptedModel::new(vec![text("from the fallback")]);
    let mut rig = rig(&[primary.clone(), fallback], Budget::default());
    let exit = rig.run("hi").await.unwrap();
    assert_eq!(exit, Exit::Final("from the fallback".into()));
    assert_eq!(
        primary.requests().len(),
        1,
        "the same key is not asked again"
    );
    assert!(rig.clock.sleeps.lock().unwrap().is_empty());
    assert!(rig.events.events().iter().any(|e| matches!(
        e,
        AgentEvent::FallbackActivated { error, .. } if error.contains("quota")
    )));
}

#[tokio::test]
async fn a_throttled_key_of_a_pool_rotates_at_once_but_a_lone_key_waits() {
    let limited = || {
        Reply::Err(ModelError::RateLimited {
            message: "slow down".into(),
            retry_after: Some(Duration::from_secs(30)),
        })
    };
    let first = ScriptedModel::new(vec![limited()]);
    let second = ScriptedModel::new(vec![text("served by the second key")]);
    let mut rig = pool_rig(vec![
        route(&first, "m", Some("…1111")),
        route(&second, "m", Some("…2222")),
    ]);
    let exit = rig.run("hi").await.unwrap();
    assert_eq!(exit, Exit::Final("served by the second key".into()));
    assert!(rig.clock.sleeps.lock().unwrap().is_empty(), "no waiting");
    assert_eq!(retries(&rig.events.events()), 0);

    // A fallback that is another model is not a sibling: the throttled key is waited for.
    let lone = ScriptedModel::new(vec![limited(), text("after waiting")]);
    let other = ScriptedModel::new(vec![]);
    let mut rig = pool_rig(vec![route(&lone, "m", None), route(&other, "other", None)]);
    let exit = rig.run("hi").await.unwrap();
    assert_eq!(exit, Exit::Final("after waiting".into()));
    assert_eq!(*rig.clock.sleeps.lock().unwrap(), [Duration::from_secs(30)]);
}

#[tokio::test]
async fn an_overloaded_provider_is_retried_with_backoff_then_left_for_the_fallback() {
    let overloaded = || {
        Reply::Err(ModelError::Overloaded {
            status: 529,
            message: "Overloaded".into(),
            retry_after: None,
        })
    };
    let primary = ScriptedModel::new((0..4).map(|_| overloaded()).collect());
    let fallback = ScriptedModel::new(vec![text("ok")]);
    let mut rig = rig(&[primary.clone(), fallback], Budget::default());
    assert_eq!(rig.run("hi").await.unwrap(), Exit::Final("ok".into()));
    assert_eq!(primary.requests().len(), 4, "first try plus three retries");
    let sleeps = rig.clock.sleeps.lock().unwrap().clone();
    assert_eq!(sleeps.len(), 3);
    assert!(sleeps[2] > sleeps[0], "backing off: {sleeps:?}");
}

#[tokio::test]
async fn a_model_the_provider_does_not_serve_falls_back_with_the_reason_or_stops_clearly() {
    let missing = || {
        Reply::Err(ModelError::ModelNotFound {
            message: "The model `gpt-9` does not exist".into(),
        })
    };
    let primary = ScriptedModel::new(vec![missing()]);
    let fallback = ScriptedModel::new(vec![text("ok")]);
    let mut with_fallback = rig(&[primary.clone(), fallback], Budget::default());
    assert_eq!(
        with_fallback.run("hi").await.unwrap(),
        Exit::Final("ok".into())
    );
    assert_eq!(primary.requests().len(), 1);
    assert!(with_fallback.events.events().iter().any(|e| matches!(
        e,
        AgentEvent::FallbackActivated { error, .. } if error.starts_with("model not found: The model `gpt-9`")
    )));

    let alone = ScriptedModel::new(vec![missing()]);
    let mut without = rig(std::slice::from_ref(&alone), Budget::default());
    let error = without.run("hi").await.unwrap_err();
    assert!(
        matches!(
            &error,
            LoopError::Model {
                error: ModelError::ModelNotFound { .. },
                ..
            }
        ),
        "{error:?}"
    );
    assert_eq!(alone.requests().len(), 1);
}

#[tokio::test]
async fn a_rejected_payload_is_not_retried_and_its_shape_is_reported() {
    let model = ScriptedModel::new(vec![Reply::Err(ModelError::InvalidRequest {
        status: 400,
        message: "messages with role 'tool' must be a response to a preceeding message".into(),
    })]);
    let mut rig = rig(std::slice::from_ref(&model), Budget::default());
    // A result whose call is not in the conversation: the fault the provider rejects.
    rig.conversation
        .messages
        .push(Message::tool_result(&ToolResult::ok(
            &ToolCall {
                id: "call_orphan".into(),
                name: "echo".into(),
                arguments: "{}".into(),
            },
            "stale",
        )));
    let error = rig.run("hi").await.unwrap_err();
    assert!(matches!(
        error,
        LoopError::Model {
            error: ModelError::InvalidRequest { status: 400, .. },
            ..
        }
    ));
    assert_eq!(model.requests().len(), 1, "not retried blindly");
    let warned = warnings(&rig.events.events());
    let shape = warned
        .iter()
        .find(|w| w.contains("rejected the request (400)"))
        .unwrap_or_else(|| panic!("{warned:?}"));
    assert!(
        shape.contains("2 messages (tool (5 bytes), user (2 bytes))"),
        "{shape}"
    );
    assert!(
        shape.contains("tool results without their call: call_orphan"),
        "{shape}"
    );
    assert!(
        !shape.contains("stale"),
        "no content in the report: {shape}"
    );
}

#[tokio::test]
async fn a_reply_stopped_by_the_content_filter_is_kept_and_explained() {
    let filtered = Reply::Ok(ModelResponse {
        message: Message::assistant("I can help with part of"),
        finish: FinishReason::ContentFilter,
        ..ModelResponse::default()
    });
    let model = ScriptedModel::new(vec![filtered]);
    let mut rig = rig(std::slice::from_ref(&model), Budget::default());
    let exit = rig.run("hi").await.unwrap();
    assert_eq!(exit, Exit::Final("I can help with part of".into()));
    assert_eq!(
        model.requests().len(),
        1,
        "the same prompt is not sent again"
    );
    let warned = warnings(&rig.events.events());
    assert!(
        warned.iter().any(|w| w.contains("content filter")),
        "{warned:?}"
    );
}

#[tokio::test]
async fn a_refused_prompt_moves_to_the_fallback() {
    let primary = ScriptedModel::new(vec![Reply::Err(ModelError::ContentFiltered {
        message: "Your input was flagged".into(),
    })]);
    let fallback = ScriptedModel::new(vec![text("ok")]);
    let mut rig = rig(&[primary.clone(), fallback], Budget::default());
    assert_eq!(rig.run("hi").await.unwrap(), Exit::Final("ok".into()));
    assert_eq!(primary.requests().len(), 1);
}
