//! The loop driven with fakes only: every exit, the budget protocol, retries,
//! fallback and the model's mistakes.

use std::time::Duration;

use crate::support::*;
use talaria_kernel::*;

#[tokio::test]
async fn tool_round_trip_persists_every_message_and_keeps_the_prefix_stable() {
    let model = ScriptedModel::new(vec![calls(&[("echo", r#"{"text":"hi"}"#)]), text("done")]);
    let mut rig = rig(std::slice::from_ref(&model), Budget::default());
    let exit = rig.run("say hi").await.unwrap();
    assert_eq!(exit, Exit::Final("done".into()));

    let roles: Vec<Role> = rig.conversation.messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [Role::User, Role::Assistant, Role::Tool, Role::Assistant]
    );
    assert_eq!(rig.conversation.messages[2].content, "\"hi\"");
    let stored: Vec<Message> = rig
        .store
        .messages
        .lock()
        .unwrap()
        .iter()
        .map(|(_, m)| m.clone())
        .collect();
    assert_eq!(
        stored, rig.conversation.messages,
        "every message persisted, in order"
    );
    let charges = rig.store.charges.lock().unwrap().clone();
    let charged: Vec<usize> = charges.iter().map(|(index, _)| *index).collect();
    assert_eq!(
        charged,
        [1, 3],
        "each reply is stored with its call's usage"
    );
    assert!(charges.iter().all(|(_, usage)| usage.input_tokens == 100));

    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].system, requests[1].system);
    assert_eq!(requests[0].tools, requests[1].tools);
    assert_paired(&requests[1].messages);
    assert_eq!(rig.agent.state().iterations, 2);
    assert_eq!(rig.agent.state().usage.input_tokens, 200);
    assert!(rig.agent.state().outstanding.is_empty());
}

#[tokio::test]
async fn turns_that_only_run_execute_code_are_refunded() {
    let code = r#"{"code":"print(1)"}"#;
    let model = ScriptedModel::new(vec![
        calls(&[("execute_code", code)]),
        calls(&[("execute_code", code), ("execute_code", code)]),
        calls(&[("execute_code", code)]),
        calls(&[("echo", r#"{"text":"x"}"#), ("execute_code", code)]),
        text("done"),
    ]);
    let mut rig = rig(&[model], Budget::with_iterations(2));
    let exit = rig.run("compute").await.unwrap();
    assert_eq!(
        exit,
        Exit::Final("done".into()),
        "refunds kept the run inside 2 iterations"
    );
    assert_eq!(
        rig.agent.budget().iterations.used(),
        2,
        "mixed turn and final answer counted"
    );
    assert_eq!(rig.agent.state().iterations, 5);
}

#[tokio::test]
async fn exhaustion_warns_once_allows_one_grace_call_then_forces_a_summary() {
    let echo = r#"{"text":"again"}"#;
    let model = ScriptedModel::new(vec![
        calls(&[("echo", echo)]),
        calls(&[("echo", echo)]),
        calls(&[("echo", echo)]), // the grace call, still asking for tools
        text("summary of the work"),
    ]);
    let mut rig = rig(std::slice::from_ref(&model), Budget::with_iterations(2));
    let exit = rig.run("loop forever").await.unwrap();
    assert_eq!(
        exit,
        Exit::BudgetExhausted {
            exhausted: Exhaustion::Iterations,
            summary: "summary of the work".into()
        }
    );
    let requests = model.requests();
    assert_eq!(
        requests.len(),
        4,
        "two budgeted calls, one grace call, one summary"
    );
    let warnings = rig
        .conversation
        .messages
        .iter()
        .filter(|m| {
            m.content
                .contains("exhausted. You have exactly one more response")
        })
        .count();
    assert_eq!(warnings, 1);
    let grace_last = requests[2].messages.last().unwrap();
    assert!(
        grace_last.content.contains("exactly one more response"),
        "{grace_last:?}"
    );
    assert_eq!(requests[2].tool_choice, ToolChoice::Auto);
    assert_eq!(requests[3].tool_choice, ToolChoice::None);
    assert_eq!(
        requests[3].tools, requests[0].tools,
        "tool list unchanged for the cache"
    );
    assert_paired(&requests[3].messages);
    assert_eq!(
        rig.tools.executed.lock().unwrap().len(),
        3,
        "grace call's tools ran"
    );
    assert!(rig.events.events().contains(&AgentEvent::BudgetWarning {
        exhausted: Exhaustion::Iterations
    }));
}

#[tokio::test]
async fn a_grace_call_that_answers_is_a_final_answer() {
    let model = ScriptedModel::new(vec![
        calls(&[("echo", r#"{"text":"a"}"#)]),
        text("finished"),
    ]);
    let mut rig = rig(&[model], Budget::with_iterations(1));
    assert_eq!(rig.run("go").await.unwrap(), Exit::Final("finished".into()));
}

#[tokio::test]
async fn a_failed_summary_call_gives_a_deterministic_summary() {
    let model = ScriptedModel::new(vec![
        calls(&[("echo", r#"{"text":"a"}"#)]),
        calls(&[("fail", "{}")]),
        Reply::Err(ModelError::Auth {
            message: "revoked".into(),
        }),
    ]);
    let mut rig = rig(&[model], Budget::with_iterations(1));
    let Exit::BudgetExhausted { summary, .. } = rig.run("build the thing").await.unwrap() else {
        panic!("expected budget exhaustion");
    };
    assert!(summary.contains("iteration budget ran out"), "{summary}");
    assert!(summary.contains("build the thing"), "{summary}");
    assert!(summary.contains("echo, fail"), "{summary}");
}

#[tokio::test]
async fn retryable_errors_back_off_then_succeed() {
    let model = ScriptedModel::new(vec![server_error(), server_error(), text("ok")]);
    let mut rig = rig(&[model], Budget::default());
    assert_eq!(rig.run("hi").await.unwrap(), Exit::Final("ok".into()));
    let sleeps = rig.clock.sleeps.lock().unwrap().clone();
    assert_eq!(sleeps.len(), 2);
    assert!(sleeps[0] >= Duration::from_millis(50) && sleeps[0] <= Duration::from_millis(100));
    assert!(sleeps[1] >= Duration::from_millis(100) && sleeps[1] <= Duration::from_millis(200));
    assert_eq!(rig.agent.state().total_retries, 2);
    assert_eq!(rig.agent.state().retries, 0, "reset after success");
    let retrying = rig
        .events
        .events()
        .iter()
        .filter(|e| matches!(e, AgentEvent::Retrying { .. }))
        .count();
    assert_eq!(retrying, 2);
}

#[tokio::test]
async fn retry_after_from_the_provider_is_honoured() {
    let limited = ModelError::RateLimited {
        message: "slow down".into(),
        retry_after: Some(Duration::from_secs(7)),
    };
    let model = ScriptedModel::new(vec![Reply::Err(limited), text("ok")]);
    let mut rig = rig(&[model], Budget::default());
    rig.run("hi").await.unwrap();
    assert_eq!(*rig.clock.sleeps.lock().unwrap(), [Duration::from_secs(7)]);
}

#[tokio::test]
async fn exhausted_retries_switch_to_the_fallback_model_for_good() {
    let primary = ScriptedModel::new(vec![
        server_error(),
        server_error(),
        server_error(),
        server_error(),
    ]);
    let fallback = ScriptedModel::new(vec![text("from fallback"), text("second turn")]);
    let mut rig = rig(&[primary.clone(), fallback.clone()], Budget::default());
    assert_eq!(
        rig.run("hi").await.unwrap(),
        Exit::Final("from fallback".into())
    );
    assert_eq!(primary.requests().len(), 4, "first try plus three retries");
    assert_eq!(rig.agent.state().route, 1);
    assert_eq!(rig.agent.active_model(), "model-1");
    assert!(rig.events.events().iter().any(|e| matches!(
        e,
        AgentEvent::FallbackActivated { from, to, .. } if from == "model-0" && to == "model-1"
    )));
    assert_eq!(
        rig.run("again").await.unwrap(),
        Exit::Final("second turn".into())
    );
    assert_eq!(
        primary.requests().len(),
        4,
        "the fallback state persists across turns"
    );
    assert_eq!(fallback.requests()[1].model, "model-1");
}

#[tokio::test]
async fn auth_errors_are_not_retried() {
    let model = ScriptedModel::new(vec![Reply::Err(ModelError::Auth {
        message: "bad key".into(),
    })]);
    let mut rig = rig(std::slice::from_ref(&model), Budget::default());
    let error = rig.run("hi").await.unwrap_err();
    assert_eq!(
        error,
        LoopError::Model {
            model: "model-0".into(),
            error: ModelError::Auth {
                message: "bad key".into()
            }
        }
    );
    assert_eq!(model.requests().len(), 1);
    assert!(rig.clock.sleeps.lock().unwrap().is_empty());
}

#[tokio::test]
async fn invalid_tool_json_becomes_a_result_the_model_reads() {
    let model = ScriptedModel::new(vec![calls(&[("echo", r#"{"text": "#)]), text("fixed")]);
    let mut rig = rig(std::slice::from_ref(&model), Budget::default());
    assert_eq!(rig.run("hi").await.unwrap(), Exit::Final("fixed".into()));
    let second = &model.requests()[1];
    let result = second
        .messages
        .iter()
        .find(|m| m.role == Role::Tool)
        .unwrap();
    assert!(result.is_error);
    assert!(
        result
            .content
            .starts_with("Invalid JSON in the arguments of tool 'echo'")
    );
    assert!(
        rig.tools.executed.lock().unwrap().is_empty(),
        "an invalid call never runs"
    );
}

#[tokio::test]
async fn unknown_tools_get_a_result_listing_the_available_ones() {
    let model = ScriptedModel::new(vec![
        calls(&[("delete_everything", "{}"), ("echo", r#"{"text":"ok"}"#)]),
        text("done"),
    ]);
    let mut rig = rig(std::slice::from_ref(&model), Budget::default());
    rig.run("hi").await.unwrap();
    let second = &model.requests()[1];
    let results: Vec<&Message> = second
        .messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .collect();
    assert_eq!(results.len(), 2, "one result per call, in call order");
    assert!(
        results[0]
            .content
            .contains("Unknown tool 'delete_everything'")
    );
    assert!(
        results[0]
            .content
            .contains("echo, execute_code, fail, forgetful, slow")
    );
    assert_eq!(results[1].content, "\"ok\"");
    assert!(!results[1].is_error);
}

#[tokio::test]
async fn a_tool_that_returns_nothing_still_gets_a_result() {
    let model = ScriptedModel::new(vec![calls(&[("forgetful", "{}")]), text("done")]);
    let mut rig = rig(std::slice::from_ref(&model), Budget::default());
    rig.run("hi").await.unwrap();
    assert_paired(&model.requests()[1].messages);
}

#[tokio::test]
async fn interrupt_during_tools_answers_every_outstanding_call() {
    let model = ScriptedModel::new(vec![
        calls(&[
            ("echo", "nope"),
            ("slow", "{}"),
            ("echo", r#"{"text":"x"}"#),
        ]),
        text("after interrupt"),
    ]);
    let mut rig = rig(std::slice::from_ref(&model), Budget::default());
    let cancel = CancellationToken::new();
    let tools = rig.tools.clone();
    let trigger = cancel.clone();
    let interrupter = tokio::spawn(async move {
        tools.started.notified().await;
        trigger.cancel();
    });
    let exit = rig
        .agent
        .run_turn(&mut rig.conversation, "go", &rig.events, &cancel)
        .await;
    interrupter.await.unwrap();
    assert_eq!(exit.unwrap(), Exit::Interrupted);
    assert!(rig.agent.state().outstanding.is_empty());
    assert_paired(&rig.conversation.messages);
    let interrupted = rig
        .conversation
        .messages
        .iter()
        .filter(|m| m.content == agent_loop::INTERRUPTED_RESULT)
        .count();
    assert_eq!(
        interrupted, 2,
        "the running and the unstarted call; the invalid one has its error"
    );
    let stored = rig.store.messages.lock().unwrap().len();
    assert_eq!(
        stored,
        rig.conversation.messages.len(),
        "synthetic results persisted too"
    );

    assert_eq!(
        rig.run("continue").await.unwrap(),
        Exit::Final("after interrupt".into())
    );
    assert_paired(&model.requests()[1].messages);
}

#[tokio::test]
async fn interrupt_during_the_model_call_exits_cleanly() {
    let model = ScriptedModel::new(vec![Reply::Hang]);
    let mut rig = rig(&[model], Budget::default());
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        // The test's own timer, outside the loop under test.
        #[allow(clippy::disallowed_methods)]
        tokio::time::sleep(Duration::from_millis(20)).await;
        trigger.cancel();
    });
    let exit = rig
        .agent
        .run_turn(&mut rig.conversation, "go", &rig.events, &cancel)
        .await;
    assert_eq!(exit.unwrap(), Exit::Interrupted);
    assert_eq!(rig.conversation.messages.len(), 1, "only the user message");
}

#[tokio::test]
async fn truncated_replies_are_continued_and_joined() {
    let model = ScriptedModel::new(vec![truncated("Hel"), truncated("lo, "), text("world")]);
    let mut rig = rig(std::slice::from_ref(&model), Budget::default());
    assert_eq!(
        rig.run("greet").await.unwrap(),
        Exit::Final("Hello, world".into())
    );
    let last = model.requests()[2].messages.last().unwrap().clone();
    assert!(last.content.contains("cut off by the output token limit"));
}

#[tokio::test]
async fn wall_clock_budget_triggers_the_grace_protocol() {
    let model = ScriptedModel::new(vec![
        calls(&[("echo", r#"{"text":"a"}"#)]),
        calls(&[("echo", r#"{"text":"b"}"#)]),
        text("wrapped up"),
    ]);
    let clock = FakeClock {
        tick: Duration::from_secs(4),
        ..FakeClock::default()
    };
    let mut budget = Budget::with_iterations(50);
    budget.wall_clock = Some(Duration::from_secs(10));
    let mut rig = rig_with(&[model], budget, MemoryStore::default(), clock);
    let exit = rig.run("slowly").await.unwrap();
    assert_eq!(
        exit,
        Exit::BudgetExhausted {
            exhausted: Exhaustion::WallClock,
            summary: "wrapped up".into()
        }
    );
}

#[tokio::test]
async fn cost_budget_counts_usage_times_prices() {
    let model = ScriptedModel::new(vec![
        calls(&[("echo", r#"{"text":"a"}"#)]),
        calls(&[("echo", r#"{"text":"b"}"#)]),
        text("summary"),
    ]);
    let mut budget = Budget::with_iterations(50);
    budget.pricing = Pricing {
        input: 10.0,
        output: 100.0,
        ..Pricing::default()
    };
    budget.max_cost_usd = Some(0.002); // each fake call costs 0.001 + 0.001
    let mut rig = rig(&[model], budget);
    let exit = rig.run("spend").await.unwrap();
    assert!(
        matches!(
            exit,
            Exit::BudgetExhausted {
                exhausted: Exhaustion::Cost,
                ..
            }
        ),
        "{exit:?}"
    );
    assert!((rig.agent.state().cost_usd - 0.006).abs() < 1e-9);
}

#[tokio::test]
async fn a_failing_store_is_reported_without_stopping_the_loop() {
    let model = ScriptedModel::new(vec![text("still answered")]);
    let store = MemoryStore {
        fail: true,
        ..MemoryStore::default()
    };
    let mut rig = rig_with(&[model], Budget::default(), store, FakeClock::default());
    assert_eq!(
        rig.run("hi").await.unwrap(),
        Exit::Final("still answered".into())
    );
    assert!(
        rig.events
            .events()
            .iter()
            .any(|e| matches!(e, AgentEvent::Warning { message } if message.contains("disk full")))
    );
}

#[tokio::test]
async fn streamed_text_and_final_answer_reach_the_surface() {
    let model = ScriptedModel::new(vec![text("hello")]);
    let mut rig = rig(&[model], Budget::default());
    rig.run("hi").await.unwrap();
    let events = rig.events.events();
    assert!(events.contains(&AgentEvent::Stream(StreamEvent::TextDelta {
        text: "hello".into()
    })));
    assert_eq!(
        events.last(),
        Some(&AgentEvent::Final {
            text: "hello".into()
        })
    );
}

#[tokio::test]
async fn the_loop_refuses_to_start_without_a_model() {
    let ports = Ports::new(
        FakeTools::new(),
        std::sync::Arc::new(MemoryStore::default()),
        std::sync::Arc::new(FakeClock::default()),
    );
    let result = AgentLoop::new(vec![], ports, Budget::default(), LoopConfig::standard());
    assert!(matches!(result, Err(LoopError::NoModel)));
}

#[tokio::test]
async fn echoed_memory_context_never_reaches_the_user() {
    let model = ScriptedModel::new(vec![text(
        "Sure.<memory-context>user's notes</memory-context> Done.",
    )]);
    let mut rig = rig(&[model], Budget::default());
    let exit = rig.run("hi").await.unwrap();
    assert_eq!(exit, Exit::Final("Sure. Done.".into()));
    let streamed: String = rig
        .events
        .events()
        .into_iter()
        .filter_map(|e| match e {
            AgentEvent::Stream(StreamEvent::TextDelta { text }) => Some(text),
            _ => None,
        })
        .collect();
    assert_eq!(streamed, "Sure. Done.");
    assert!(
        rig.conversation.messages[1]
            .content
            .contains("user's notes"),
        "the history keeps what the model said"
    );
}

#[tokio::test]
async fn repeated_call_ids_are_renamed_so_every_call_gets_one_result() {
    let Reply::Ok(mut reply) =
        calls(&[("echo", r#"{"text":"one"}"#), ("echo", r#"{"text":"two"}"#)])
    else {
        unreachable!("calls() builds a reply")
    };
    for call in &mut reply.message.tool_calls {
        call.id = "dup".into();
    }
    let model = ScriptedModel::new(vec![Reply::Ok(reply), text("done")]);
    let mut rig = rig(std::slice::from_ref(&model), Budget::default());
    assert_eq!(rig.run("twice").await.unwrap(), Exit::Final("done".into()));

    let requests = model.requests();
    let sent = &requests[1].messages;
    assert_paired(sent);
    let call_ids: Vec<&str> = sent
        .iter()
        .flat_map(|m| m.tool_calls.iter().map(|c| c.id.as_str()))
        .collect();
    assert_eq!(
        call_ids,
        ["dup", "dup-2"],
        "the stored calls carry the new ids"
    );
    let results: Vec<(&str, &str)> = sent
        .iter()
        .filter_map(|m| Some((m.tool_call_id.as_deref()?, m.content.as_str())))
        .collect();
    assert_eq!(results, [("dup", "\"one\""), ("dup-2", "\"two\"")]);
}
