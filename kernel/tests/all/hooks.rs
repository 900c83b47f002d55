//! Hooks around the session, the model calls and the tool calls.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};

use crate::support::*;
use async_trait::async_trait;
use talaria_kernel::*;

/// Records every hook call; vetoes `fail`, rewrites `echo` arguments holding
/// "secret", and tags every tool result.
#[derive(Default)]
struct ScriptedHooks {
    seen: Mutex<Vec<String>>,
    context: Option<String>,
}

impl ScriptedHooks {
    fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }

    fn note(&self, line: String) {
        self.seen.lock().unwrap().push(line);
    }
}

#[async_trait]
impl Hooks for ScriptedHooks {
    async fn session_start(&self, session: HookSession<'_>) {
        self.note(format!("start {} {}", session.session_id, session.model));
    }

    async fn pre_llm(&self, _: HookSession<'_>, user_message: &str) -> Option<String> {
        self.note(format!("pre_llm {user_message}"));
        self.context.clone()
    }

    async fn post_llm(&self, session: HookSession<'_>, response: &ModelResponse) {
        self.note(format!(
            "post_llm {} calls={}",
            session.model,
            response.message.tool_calls.len()
        ));
    }

    async fn pre_tool(&self, _: HookSession<'_>, call: &ValidatedCall) -> HookVerdict {
        self.note(format!("pre_tool {}", call.call.name));
        match call.call.name.as_str() {
            "fail" => HookVerdict::Block("failing tools are not allowed here".into()),
            "echo" if call.arguments["text"] == "secret" => {
                HookVerdict::Rewrite(serde_json::json!({"text": "[redacted]"}))
            }
            "echo" if call.arguments["text"] == "break" => {
                HookVerdict::Rewrite(serde_json::json!({"wrong": 1}))
            }
            _ => HookVerdict::Continue,
        }
    }

    async fn post_tool(&self, _: HookSession<'_>, call: &ToolCall, result: &mut ToolResult) {
        self.note(format!("post_tool {}", call.name));
        result.content.push_str(" [audited]");
    }

    async fn session_end(&self, session: HookSession<'_>) {
        self.note(format!("end {}", session.session_id));
    }
}

fn hooked(
    replies: Vec<Reply>,
    hooks: ScriptedHooks,
) -> (Rig, Arc<ScriptedModel>, Arc<ScriptedHooks>) {
    let model = ScriptedModel::new(replies);
    let hooks = Arc::new(hooks);
    let rig = rig_with_hooks(std::slice::from_ref(&model), hooks.clone());
    (rig, model, hooks)
}

#[tokio::test]
async fn session_hooks_run_once_per_session_not_per_turn() {
    let (mut rig, _, hooks) = hooked(vec![text("one"), text("two")], ScriptedHooks::default());
    rig.run("first").await.unwrap();
    rig.run("second").await.unwrap();
    let conversation = rig.conversation.clone();
    rig.agent.end_session(&conversation).await;
    rig.agent.end_session(&conversation).await;
    assert_eq!(
        hooks.seen(),
        [
            "start s1 model-0",
            "pre_llm first",
            "post_llm model-0 calls=0",
            "pre_llm second",
            "post_llm model-0 calls=0",
            "end s1",
        ]
    );
}

#[tokio::test]
async fn pre_llm_context_joins_the_user_turn_once_and_never_the_system_prompt() {
    let hooks = ScriptedHooks {
        context: Some("<plugin-context>the codeword is zebra</plugin-context>".into()),
        ..ScriptedHooks::default()
    };
    let (mut rig, model, hooks) = hooked(
        vec![
            calls(&[("echo", r#"{"text":"hi"}"#)]),
            text("done"),
            text("again"),
        ],
        hooks,
    );
    rig.run("what is the codeword?").await.unwrap();
    rig.run("and now?").await.unwrap();

    let expected =
        "what is the codeword?\n\n<plugin-context>the codeword is zebra</plugin-context>";
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    for request in &requests {
        assert!(
            !request.system.contains("zebra"),
            "context stays out of the system prompt"
        );
        assert_eq!(
            request.messages[0].content, expected,
            "the first turn is unchanged"
        );
    }
    assert_eq!(
        requests[1]
            .messages
            .iter()
            .filter(|m| m.content.contains("zebra"))
            .count(),
        1,
        "one model call after a tool round: the context is not added again"
    );
    assert_eq!(requests[0].system, requests[2].system);
    assert!(
        requests[2]
            .messages
            .last()
            .unwrap()
            .content
            .starts_with("and now?\n\n")
    );
    let stored = rig.store.messages.lock().unwrap()[0].1.content.clone();
    assert_eq!(stored, expected, "persisted as sent");
    let pre_llm = hooks
        .seen()
        .iter()
        .filter(|l| l.starts_with("pre_llm"))
        .count();
    assert_eq!(pre_llm, 2, "once per user turn, not per model call");
}

#[tokio::test]
async fn a_vetoed_call_is_not_run_and_the_model_reads_the_reason() {
    let (mut rig, model, _) = hooked(
        vec![
            calls(&[("fail", "{}"), ("echo", r#"{"text":"ok"}"#)]),
            text("done"),
        ],
        ScriptedHooks::default(),
    );
    rig.run("go").await.unwrap();
    assert_eq!(*rig.tools.executed.lock().unwrap(), ["echo"]);
    let seen = &model.requests()[1].messages;
    assert_eq!(
        seen[2].content,
        "Blocked: failing tools are not allowed here [audited]"
    );
    assert_eq!(seen[3].content, "\"ok\" [audited]");
    assert_paired(seen);
}

#[tokio::test]
async fn rewritten_arguments_are_what_the_tool_receives() {
    let (mut rig, model, _) = hooked(
        vec![calls(&[("echo", r#"{"text":"secret"}"#)]), text("done")],
        ScriptedHooks::default(),
    );
    rig.run("go").await.unwrap();
    let seen = &model.requests()[1].messages;
    assert_eq!(seen[2].content, "\"[redacted]\" [audited]");
    assert_eq!(
        seen[1].tool_calls[0].arguments, r#"{"text":"secret"}"#,
        "the history keeps what the model asked for"
    );
}

#[tokio::test]
async fn a_rewrite_that_breaks_the_schema_is_an_error_result() {
    let (mut rig, model, _) = hooked(
        vec![calls(&[("echo", r#"{"text":"break"}"#)]), text("done")],
        ScriptedHooks::default(),
    );
    rig.run("go").await.unwrap();
    assert!(rig.tools.executed.lock().unwrap().is_empty());
    let result = &model.requests()[1].messages[2];
    assert!(
        result.content.starts_with("A hook rewrote the arguments:")
            && result.content.contains("text"),
        "{}",
        result.content
    );
}

/// Notes handed over once, after the model's first call of a turn.
struct NoteAfterFirstCall {
    model: Arc<ScriptedModel>,
    note: Mutex<Option<String>>,
}

impl Steering for NoteAfterFirstCall {
    fn take_notes(&self) -> Vec<String> {
        if self.model.requests().is_empty() {
            return Vec::new();
        }
        self.note.lock().unwrap().take().into_iter().collect()
    }
}

#[tokio::test]
async fn steering_notes_reach_the_next_model_call_of_the_running_turn() {
    let model = ScriptedModel::new(vec![
        calls(&[("echo", r#"{"text":"hi"}"#)]),
        text("done, in French"),
    ]);
    let mut rig = rig_with_hooks(std::slice::from_ref(&model), Arc::new(NoHooks));
    rig.agent.set_steering(Some(Arc::new(NoteAfterFirstCall {
        model: model.clone(),
        note: Mutex::new(Some("answer in French".into())),
    })));
    let exit = rig.run("greet me").await.unwrap();
    assert_eq!(exit, Exit::Final("done, in French".into()));
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert!(
        !requests[0]
            .messages
            .iter()
            .any(|m| m.content.contains("French")),
        "the note arrived after the first call"
    );
    let last = requests[1].messages.last().unwrap();
    assert_eq!(last.role, Role::User);
    assert_eq!(
        last.content,
        "[The user added while you were working:]\nanswer in French"
    );
    assert_paired(&rig.conversation.messages);
}
