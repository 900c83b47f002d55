//! Fakes for every kernel port: a scripted model, scripted tools, an in-memory
//! store, a clock that never waits, and an event recorder.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use talaria_kernel::*;

/// What one recorded request contained.
#[derive(Debug, Clone)]
pub struct SeenRequest {
    pub model: String,
    pub system: String,
    pub tools: Vec<ToolSpec>,
    pub messages: Vec<Message>,
    pub tool_choice: ToolChoice,
    pub max_tokens: Option<u32>,
}

/// A provider that answers from a script; `Hang` waits for cancellation; `Cut` streams
/// some text, then fails (a connection dropped mid-reply).
// Its size depends on serde_json's features, which the workspace unifies
// (agent-client-protocol turns on `preserve_order`); a test script's size is no concern.
#[allow(clippy::large_enum_variant)]
pub enum Reply {
    Ok(ModelResponse),
    Err(ModelError),
    Hang,
    Cut(&'static str, ModelError),
}

pub struct ScriptedModel {
    name: String,
    /// Off for benchmarks: copying every request would dominate the figure.
    record: bool,
    replies: Mutex<VecDeque<Reply>>,
    pub seen: Mutex<Vec<SeenRequest>>,
}

impl ScriptedModel {
    pub fn new(replies: Vec<Reply>) -> Arc<Self> {
        Self::build(replies, true)
    }

    pub fn unrecorded(replies: Vec<Reply>) -> Arc<Self> {
        Self::build(replies, false)
    }

    fn build(replies: Vec<Reply>, record: bool) -> Arc<Self> {
        Arc::new(Self {
            name: "fake".into(),
            record,
            replies: Mutex::new(replies.into()),
            seen: Mutex::new(Vec::new()),
        })
    }

    pub fn requests(&self) -> Vec<SeenRequest> {
        self.seen.lock().unwrap().clone()
    }
}

#[async_trait]
impl ModelProvider for ScriptedModel {
    fn name(&self) -> &str {
        &self.name
    }

    async fn complete(
        &self,
        request: ModelRequest<'_>,
        sink: &dyn StreamSink,
        cancel: &CancellationToken,
    ) -> Result<ModelResponse, ModelError> {
        if self.record {
            self.seen.lock().unwrap().push(SeenRequest {
                model: request.model.to_owned(),
                system: request.system.to_owned(),
                tools: request.tools.to_vec(),
                messages: request.messages.to_vec(),
                tool_choice: request.tool_choice,
                max_tokens: request.max_tokens,
            });
        }
        let reply = self.replies.lock().unwrap().pop_front();
        match reply {
            Some(Reply::Ok(response)) => {
                if !response.message.content.is_empty() {
                    sink.on_event(&StreamEvent::TextDelta {
                        text: response.message.content.clone(),
                    });
                }
                Ok(response)
            }
            Some(Reply::Err(error)) => Err(error),
            Some(Reply::Cut(shown, error)) => {
                sink.on_event(&StreamEvent::TextDelta {
                    text: shown.to_owned(),
                });
                Err(error)
            }
            Some(Reply::Hang) => {
                cancel.cancelled().await;
                Err(ModelError::Cancelled)
            }
            None => Err(ModelError::InvalidRequest {
                status: 400,
                message: "script exhausted".into(),
            }),
        }
    }
}

pub fn text(text: &str) -> Reply {
    Reply::Ok(ModelResponse {
        message: Message::assistant(text),
        finish: FinishReason::Stop,
        usage: Usage {
            input_tokens: 100,
            output_tokens: 10,
            ..Usage::default()
        },
    })
}

pub fn truncated(text: &str) -> Reply {
    Reply::Ok(ModelResponse {
        message: Message::assistant(text),
        finish: FinishReason::Length,
        usage: Usage::default(),
    })
}

pub fn calls(calls: &[(&str, &str)]) -> Reply {
    let tool_calls = calls
        .iter()
        .enumerate()
        .map(|(i, (name, args))| ToolCall {
            id: format!("call_{i}_{name}"),
            name: (*name).into(),
            arguments: (*args).into(),
        })
        .collect();
    Reply::Ok(ModelResponse {
        message: Message {
            role: Role::Assistant,
            tool_calls,
            ..Message::default()
        },
        finish: FinishReason::ToolCalls,
        usage: Usage {
            input_tokens: 100,
            output_tokens: 10,
            ..Usage::default()
        },
    })
}

pub fn server_error() -> Reply {
    Reply::Err(ModelError::Server {
        status: 500,
        message: "boom".into(),
        retry_after: None,
    })
}

/// Tools: `echo` returns its arguments, `fail` errors, `slow` blocks until
/// cancelled, `execute_code` succeeds (and refunds its iteration), `forgetful` returns no result at all.
pub struct FakeTools {
    pub executed: Mutex<Vec<String>>,
    pub started: tokio::sync::Notify,
}

impl FakeTools {
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            executed: Mutex::new(Vec::new()),
            started: tokio::sync::Notify::new(),
        })
    }
}

fn spec(name: &str, required: &[&str]) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: format!("the {name} tool"),
        parameters: serde_json::json!({"type": "object", "required": required}),
        refunds_iteration: false,
    }
}

#[async_trait]
impl ToolDispatcher for FakeTools {
    fn specs(&self) -> Vec<ToolSpec> {
        vec![
            spec("echo", &["text"]),
            spec("fail", &[]),
            spec("slow", &[]),
            ToolSpec {
                refunds_iteration: true,
                ..spec("execute_code", &["code"])
            },
            spec("forgetful", &[]),
        ]
    }

    async fn execute(
        &self,
        calls: &[ValidatedCall],
        _context: &ToolContext,
        cancel: &CancellationToken,
    ) -> Vec<ToolResult> {
        let mut results = Vec::new();
        for valid in calls {
            self.executed.lock().unwrap().push(valid.call.name.clone());
            let call = &valid.call;
            match call.name.as_str() {
                "echo" => results.push(ToolResult::ok(call, valid.arguments["text"].to_string())),
                "fail" => results.push(ToolResult::error(call, "it failed")),
                "slow" => {
                    self.started.notify_one();
                    cancel.cancelled().await;
                    return results;
                }
                "forgetful" => {}
                _ => results.push(ToolResult::ok(call, "ran")),
            }
        }
        results
    }
}

#[derive(Default)]
pub struct MemoryStore {
    pub messages: Mutex<Vec<(String, Message)>>,
    /// The usage stored with each model reply, by the reply's index in `messages`.
    pub charges: Mutex<Vec<(usize, Usage)>>,
    pub fail: bool,
}

#[async_trait]
impl SessionStore for MemoryStore {
    async fn append(&self, session_id: &str, message: &Message) -> Result<(), StoreError> {
        if self.fail {
            return Err(StoreError("disk full".into()));
        }
        self.messages
            .lock()
            .unwrap()
            .push((session_id.into(), message.clone()));
        Ok(())
    }

    async fn append_reply(
        &self,
        session_id: &str,
        message: &Message,
        usage: &Usage,
        _: f64,
    ) -> Result<(), StoreError> {
        self.append(session_id, message).await?;
        let index = self.messages.lock().unwrap().len() - 1;
        self.charges.lock().unwrap().push((index, *usage));
        Ok(())
    }
}

/// A clock whose sleeps return at once and advance time; each `now` call can
/// also advance time by `tick`.
#[derive(Default)]
pub struct FakeClock {
    pub nanos: AtomicU64,
    pub tick: Duration,
    pub sleeps: Mutex<Vec<Duration>>,
}

#[async_trait]
impl Clock for FakeClock {
    fn now(&self) -> Duration {
        let tick = self.tick.as_nanos() as u64;
        Duration::from_nanos(self.nanos.fetch_add(tick, Ordering::SeqCst) + tick)
    }

    async fn sleep(&self, duration: Duration) {
        self.sleeps.lock().unwrap().push(duration);
        self.nanos
            .fetch_add(duration.as_nanos() as u64, Ordering::SeqCst);
    }
}

#[derive(Default)]
pub struct Recorder(pub Mutex<Vec<AgentEvent>>);

impl EventSink for Recorder {
    fn emit(&self, event: AgentEvent) {
        self.0.lock().unwrap().push(event);
    }
}

impl Recorder {
    pub fn events(&self) -> Vec<AgentEvent> {
        self.0.lock().unwrap().clone()
    }
}

/// Everything a test needs, wired together.
pub struct Rig {
    pub agent: AgentLoop,
    pub conversation: Conversation,
    pub tools: Arc<FakeTools>,
    pub store: Arc<MemoryStore>,
    pub clock: Arc<FakeClock>,
    pub events: Recorder,
}

pub fn rig(models: &[Arc<ScriptedModel>], budget: Budget) -> Rig {
    rig_with(models, budget, MemoryStore::default(), FakeClock::default())
}

pub fn rig_with(
    models: &[Arc<ScriptedModel>],
    budget: Budget,
    store: MemoryStore,
    clock: FakeClock,
) -> Rig {
    rig_full(models, budget, store, clock, |_, _| {})
}

pub fn rig_with_hooks(models: &[Arc<ScriptedModel>], hooks: Arc<dyn Hooks>) -> Rig {
    rig_full_with(models, |ports, _| ports.hooks = hooks)
}

/// A rig whose loop compresses at half of `window` tokens.
pub fn rig_compressing(
    models: &[Arc<ScriptedModel>],
    window: u32,
    summarizer: Option<Arc<dyn Summarizer>>,
) -> Rig {
    rig_full_with(models, |ports, config| {
        ports.summarizer = summarizer;
        config.context_window = Some(window);
    })
}

/// A rig with default budget, store and clock, its ports and config tweaked.
pub fn rig_full_with(
    models: &[Arc<ScriptedModel>],
    tweak: impl FnOnce(&mut Ports, &mut LoopConfig),
) -> Rig {
    rig_full(
        models,
        Budget::default(),
        MemoryStore::default(),
        FakeClock::default(),
        tweak,
    )
}

fn rig_full(
    models: &[Arc<ScriptedModel>],
    budget: Budget,
    store: MemoryStore,
    clock: FakeClock,
    tweak: impl FnOnce(&mut Ports, &mut LoopConfig),
) -> Rig {
    let routes = models
        .iter()
        .enumerate()
        .map(|(i, m)| ModelRoute {
            provider: m.clone(),
            model: format!("model-{i}"),
            credential: None,
        })
        .collect();
    rig_routes(routes, budget, store, clock, tweak)
}

/// A rig over explicit routes (model names and pooled credentials chosen by the test).
pub fn rig_routes(
    routes: Vec<ModelRoute>,
    budget: Budget,
    store: MemoryStore,
    clock: FakeClock,
    tweak: impl FnOnce(&mut Ports, &mut LoopConfig),
) -> Rig {
    let tools = FakeTools::new();
    let store = Arc::new(store);
    let clock = Arc::new(clock);
    let mut ports = Ports::new(tools.clone(), store.clone(), clock.clone());
    let mut config = LoopConfig::standard();
    config.retry.base_delay = Duration::from_millis(100);
    tweak(&mut ports, &mut config);
    let agent = AgentLoop::new(routes, ports, budget, config).unwrap();
    let prompt = PromptBuilder::new()
        .section(Section::Persona, prompt::DEFAULT_PERSONA)
        .tools(tools.specs())
        .build();
    Rig {
        agent,
        conversation: Conversation::new("s1", prompt),
        tools,
        store,
        clock,
        events: Recorder::default(),
    }
}

impl Rig {
    pub async fn run(&mut self, input: &str) -> Result<Exit, LoopError> {
        let cancel = CancellationToken::new();
        self.agent
            .run_turn(&mut self.conversation, input, &self.events, &cancel)
            .await
    }
}

/// Every tool call in `messages` has exactly one later result and no result is orphaned.
pub fn assert_paired(messages: &[Message]) {
    let mut open: Vec<&str> = Vec::new();
    for message in messages {
        for call in &message.tool_calls {
            open.push(&call.id);
        }
        if let Some(id) = &message.tool_call_id {
            let at = open.iter().position(|o| o == id);
            assert!(at.is_some(), "orphan tool result {id}");
            open.remove(at.unwrap());
        }
    }
    assert!(open.is_empty(), "tool calls without results: {open:?}");
}
