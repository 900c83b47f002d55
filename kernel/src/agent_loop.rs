//! The agent loop: a state machine over turns with three exits (final text,
//! budget exhausted, interrupt). Everything it must remember across turns lives
//! in [`LoopState`], which tests can inspect.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::budget::{Budget, Exhaustion};
use crate::compress;
use crate::events::{AgentEvent, EventSink};
use crate::message::{ImageRef, Message, ToolCall, ToolResult, Usage};
use crate::model::{
    CacheBreakpoints, FinishReason, ModelError, ModelProvider, ModelRequest, ModelResponse,
    StreamEvent, StreamSink, ToolChoice,
};
use crate::ports::{
    Clock, ExternalMemory, HookSession, Hooks, NoHooks, SessionStore, Steering, Summarizer,
    ToolContext, ToolDispatcher, ValidatedCall,
};
use crate::prompt::FrozenPrompt;
use crate::retry::RetryPolicy;
use crate::scrub::{StreamScrubber, scrub};
use crate::validate::{apply_pre_tool, dedupe_call_ids, place_results, validate_call};

mod call;
mod overflow;
mod types;
pub use types::*;

/// Result text given to every tool call that was cut short by an interrupt.
pub const INTERRUPTED_RESULT: &str = "interrupted by user: the call did not complete";

const CONTINUE_PROMPT: &str = "[System note] Your previous reply was cut off by the output \
token limit. Continue exactly where it stopped, without repeating anything.";
const SUMMARY_PROMPT: &str = "[System note] The budget for this task is used up and no more \
tools can run. Write your final answer now: summarise what was done, what the results are, and \
what remains unfinished.";

fn budget_warning(exhausted: Exhaustion) -> String {
    format!(
        "[System note] The {exhausted} for this task is exhausted. You have exactly one more \
         response: finish the task now if you can, otherwise wrap up. After it, you must give \
         your final answer without tools."
    )
}

enum Step {
    Continue,
    Exit(Exit),
}

enum CallError {
    Interrupted,
    Failed(LoopError),
}

/// What one model call cost; persisted with the reply it produced, in one write.
struct Charge {
    usage: Usage,
    cost_usd: f64,
}

/// The agent loop.
pub struct AgentLoop {
    routes: Vec<ModelRoute>,
    ports: Ports,
    budget: Budget,
    config: LoopConfig,
    state: LoopState,
    steering: Option<Arc<dyn Steering>>,
    /// This turn's messages as they were added, for the memory provider
    /// (kept only when one is active; compression does not touch it).
    turn_log: Vec<Message>,
}

impl AgentLoop {
    /// A loop over `routes` (primary first, then fallbacks).
    pub fn new(
        routes: Vec<ModelRoute>,
        ports: Ports,
        budget: Budget,
        config: LoopConfig,
    ) -> Result<Self, LoopError> {
        if routes.is_empty() {
            return Err(LoopError::NoModel);
        }
        Ok(Self {
            routes,
            ports,
            budget,
            config,
            state: LoopState::default(),
            steering: None,
            turn_log: Vec::new(),
        })
    }

    /// Where the notes added to a running turn come from (none: no steering).
    pub fn set_steering(&mut self, steering: Option<Arc<dyn Steering>>) {
        self.steering = steering;
    }

    /// The cross-turn state.
    pub fn state(&self) -> &LoopState {
        &self.state
    }

    /// The budget (share its iterations with children).
    pub fn budget(&self) -> &Budget {
        &self.budget
    }

    /// The model currently in use.
    pub fn active_model(&self) -> &str {
        self.routes
            .get(self.state.route)
            .map_or("", |r| r.model.as_str())
    }

    /// Runs one user turn to one of the three exits. Every message is persisted
    /// as it is produced; on interrupt every outstanding call gets a result.
    pub async fn run_turn(
        &mut self,
        conversation: &mut Conversation,
        input: impl Into<String>,
        events: &dyn EventSink,
        cancel: &CancellationToken,
    ) -> Result<Exit, LoopError> {
        self.run_turn_with_images(conversation, input, Vec::new(), events, cancel)
            .await
    }

    /// [`AgentLoop::run_turn`] with images attached to the user's message (already prepared
    /// and stored by the surface: the kernel only carries their references).
    pub async fn run_turn_with_images(
        &mut self,
        conversation: &mut Conversation,
        input: impl Into<String>,
        images: Vec<ImageRef>,
        events: &dyn EventSink,
        cancel: &CancellationToken,
    ) -> Result<Exit, LoopError> {
        let started = self.ports.clock.now();
        self.state.begin_run();
        if !self.state.session_started {
            self.state.session_started = true;
            let session = self.hook_session(conversation);
            self.ports.hooks.session_start(session).await;
        }
        let typed = input.into();
        let mut input = typed.clone();
        let session = self.hook_session(conversation);
        // Hook and memory context is appended to this turn's message (once,
        // and persisted with it) so the cached prefix of later requests does
        // not change.
        if let Some(context) = self.ports.hooks.pre_llm(session, &input).await {
            input = format!("{input}\n\n{context}");
        }
        let memory = self.ports.memory.clone();
        if let Some(memory) = &memory
            && let Some(recalled) = memory.prefetch(&typed).await
        {
            input = format!("{input}\n\n{recalled}");
        }
        self.turn_log.clear();
        self.push(
            conversation,
            Message::user_with_images(input, images),
            events,
        )
        .await;
        // The provider learns what the user wrote, not what it recalled.
        if let Some(first) = self.turn_log.first_mut() {
            first.content = typed;
        }
        // What the user sees never includes echoed memory-context blocks.
        let outcome =
            self.drive(conversation, started, events, cancel)
                .await
                .map(|exit| match exit {
                    Exit::Final(text) => Exit::Final(scrub(&text)),
                    Exit::BudgetExhausted { exhausted, summary } => Exit::BudgetExhausted {
                        exhausted,
                        summary: scrub(&summary),
                    },
                    Exit::Interrupted => Exit::Interrupted,
                });
        self.state.phase = Phase::Done;
        let turn = std::mem::take(&mut self.turn_log);
        match &outcome {
            Ok(Exit::Final(text)) | Ok(Exit::BudgetExhausted { summary: text, .. }) => {
                if let Some(memory) = &memory {
                    memory.turn_finished(&turn);
                }
                events.emit(AgentEvent::Final { text: text.clone() });
            }
            Ok(Exit::Interrupted) | Err(_) => {}
        }
        outcome
    }

    fn threshold(&self) -> Option<usize> {
        let window = self.config.context_window? as f32;
        let share = if self.config.compress_at > 0.0 {
            self.config.compress_at.min(1.0)
        } else {
            0.5
        };
        Some((window * share) as usize)
    }

    fn estimate(conversation: &Conversation) -> usize {
        conversation.prompt.prefix_tokens() + compress::messages_tokens(&conversation.messages)
    }

    /// Whether the next request would reach the compression threshold (and
    /// compressing has not stopped paying off).
    fn needs_compression(&self, conversation: &Conversation) -> bool {
        self.state.compressions_without_gain < 2
            && self
                .threshold()
                .is_some_and(|threshold| Self::estimate(conversation) >= threshold)
    }

    /// Compresses the conversation: old tool outputs first, then (if still over the threshold,
    /// or `force`d) the middle into a summary; then, when `force`d after a context overflow,
    /// the largest tool outputs and arguments anywhere are cut until it is a quarter smaller. A changed history continues in a new session whose parent is the old one.
    pub async fn compact(
        &mut self,
        conversation: &mut Conversation,
        focus: Option<&str>,
        force: bool,
        events: &dyn EventSink,
    ) -> Compaction {
        let before = Self::estimate(conversation);
        let threshold = self.threshold().unwrap_or(before);
        let messages = &mut conversation.messages;
        let head = compress::head_end(messages);
        // A forced compaction below the threshold keeps a tail relative to
        // what there is, so it still has a middle to fold.
        let tail_budget = (threshold.min(before) as f32 * compress::TAIL_SHARE) as usize;
        let tail = compress::tail_start(messages, head, tail_budget);
        let mut outcome = Compaction {
            tokens_before: before,
            tokens_after: before,
            pruned_outputs: 0,
            summarized_messages: 0,
            shrunk_results: 0,
            session_id: conversation.session_id.clone(),
        };
        let mut summarized = false;
        if tail > head {
            outcome.pruned_outputs = compress::prune_tool_outputs(messages, head..tail);
            if force || Self::estimate(conversation) >= threshold {
                let middle = &conversation.messages[head..tail];
                let focus = match &self.ports.memory {
                    Some(memory) => with_memory_focus(focus, memory.as_ref(), middle).await,
                    None => focus.map(str::to_owned),
                };
                let summary = match &self.ports.summarizer {
                    Some(summarizer) => summarizer
                        .summarize(&compress::transcript(middle), focus.as_deref())
                        .await
                        .ok()
                        .filter(|s| !s.trim().is_empty()),
                    None => None,
                };
                summarized = summary.is_some();
                let summary = summary.unwrap_or_else(|| compress::fallback_summary(middle));
                outcome.summarized_messages = tail - head;
                let assembled = compress::assemble(
                    &conversation.messages[..head],
                    &summary,
                    &conversation.messages[tail..],
                );
                conversation.messages = assembled;
            }
        }
        // A short conversation has no middle: its big tool results sit in the head or tail.
        // After an overflow they are cut wherever they are. (At the threshold the summary does
        // what it can: a prompt whose fixed part fills most of the window would otherwise be
        // cut again every turn; an overflow error, if it comes, still shrinks it.)
        while force
            && Self::estimate(conversation) > before * 3 / 4
            && compress::shrink_largest_tool_result(&mut conversation.messages)
        {
            outcome.shrunk_results += 1;
        }
        if outcome.pruned_outputs == 0
            && outcome.summarized_messages == 0
            && outcome.shrunk_results == 0
        {
            return outcome;
        }
        self.state.compressions += 1;
        self.state.max_tokens_cap = None;
        let old = conversation.session_id.clone();
        let base = old.split('~').next().unwrap_or(&old).to_owned();
        conversation.session_id = format!("{base}~{}", self.state.compressions);
        if let Err(error) = self
            .ports
            .store
            .continue_as(&old, &conversation.session_id, &conversation.messages)
            .await
        {
            events.emit(AgentEvent::Warning {
                message: format!("the compressed session could not be saved: {error}"),
            });
        }
        outcome.tokens_after = Self::estimate(conversation);
        outcome.session_id = conversation.session_id.clone();
        if outcome.tokens_after * 10 > before * 9 {
            self.state.compressions_without_gain += 1;
        } else {
            self.state.compressions_without_gain = 0;
        }
        events.emit(AgentEvent::Compressed {
            from_session: old,
            to_session: conversation.session_id.clone(),
            tokens_before: before,
            tokens_after: outcome.tokens_after,
            summarized,
        });
        outcome
    }

    /// Ends the session: runs the `session_end` hooks if the session started.
    /// Surfaces call it once, when the conversation is over.
    pub async fn end_session(&mut self, conversation: &Conversation) {
        if std::mem::take(&mut self.state.session_started) {
            let session = self.hook_session(conversation);
            self.ports.hooks.session_end(session).await;
        }
    }

    fn hook_session<'a>(&'a self, conversation: &'a Conversation) -> HookSession<'a> {
        HookSession {
            session_id: &conversation.session_id,
            model: self.active_model(),
        }
    }

    async fn drive(
        &mut self,
        conversation: &mut Conversation,
        started: Duration,
        events: &dyn EventSink,
        cancel: &CancellationToken,
    ) -> Result<Exit, LoopError> {
        loop {
            if cancel.is_cancelled() {
                return Ok(self.interrupt(conversation, events).await);
            }
            let step = match self.state.phase {
                Phase::CallModel => {
                    self.call_step(conversation, started, events, cancel)
                        .await?
                }
                Phase::RunTools => self.tools_step(conversation, events, cancel).await,
                Phase::ForceSummary => self.summary_step(conversation, events, cancel).await,
                Phase::Idle | Phase::Done => Step::Exit(Exit::Final(String::new())),
            };
            if let Step::Exit(exit) = step {
                return Ok(exit);
            }
        }
    }

    async fn call_step(
        &mut self,
        conversation: &mut Conversation,
        started: Duration,
        events: &dyn EventSink,
        cancel: &CancellationToken,
    ) -> Result<Step, LoopError> {
        if let Grace::Used(_) = self.state.grace {
            self.state.phase = Phase::ForceSummary;
            return Ok(Step::Continue);
        }
        let notes = self
            .steering
            .as_ref()
            .map(|steering| steering.take_notes())
            .unwrap_or_default();
        if !notes.is_empty() {
            let text = format!(
                "[The user added while you were working:]\n{}",
                notes.join("\n\n")
            );
            self.push(conversation, Message::user(text), events).await;
        }
        if self.needs_compression(conversation) {
            self.compact(conversation, None, false, events).await;
        }
        let elapsed = self.ports.clock.now().saturating_sub(started);
        self.state.last_call_consumed = match self.budget.try_start_call(elapsed) {
            Ok(()) => true,
            Err(exhausted) => {
                events.emit(AgentEvent::BudgetWarning { exhausted });
                self.push(
                    conversation,
                    Message::user(budget_warning(exhausted)),
                    events,
                )
                .await;
                self.state.grace = Grace::Warned(exhausted);
                false
            }
        };
        let (response, charge) = match self
            .call_model(conversation, ToolChoice::Auto, events, cancel)
            .await
        {
            Ok(reply) => {
                self.state.overflow_compressions = 0;
                reply
            }
            Err(CallError::Interrupted) => {
                return Ok(Step::Exit(self.interrupt(conversation, events).await));
            }
            // The prompt fits but not with the output budget on top: ask for less output.
            Err(CallError::Failed(LoopError::Model {
                error: ModelError::OutputBudgetTooLarge { available, message },
                ..
            })) => {
                self.lower_output_budget(conversation, available, &message, events)
                    .await?;
                if self.state.last_call_consumed {
                    self.budget.iterations.refund();
                }
                return Ok(Step::Continue);
            }
            // The provider says the prompt is too long: make it smaller, then retry.
            Err(CallError::Failed(LoopError::Model {
                error: ModelError::ContextOverflow { message },
                ..
            })) => {
                self.shrink_after_overflow(conversation, &message, events)
                    .await?;
                if self.state.last_call_consumed {
                    self.budget.iterations.refund();
                }
                return Ok(Step::Continue);
            }
            Err(CallError::Failed(error)) => return Err(error),
        };
        if let Grace::Warned(exhausted) = self.state.grace {
            self.state.grace = Grace::Used(exhausted);
        }
        let ModelResponse {
            mut message,
            finish,
            ..
        } = response;
        // Renamed before the reply is stored, so the stored calls and their
        // results agree on the ids sent back to the model.
        dedupe_call_ids(&mut message.tool_calls);
        if !message.tool_calls.is_empty() {
            self.state.outstanding = message.tool_calls.clone();
            self.persist(conversation, message, Some(&charge), events)
                .await;
            self.state.phase = Phase::RunTools;
            return Ok(Step::Continue);
        }
        self.state.partial_text.push_str(&message.content);
        self.persist(conversation, message, Some(&charge), events)
            .await;
        if finish == FinishReason::ContentFilter {
            // Not retried: the same prompt meets the same filter. The user sees why the
            // reply stops where it does.
            events.emit(AgentEvent::Warning {
                message: format!(
                    "{} stopped the reply: the provider's content filter refused it",
                    self.active_model()
                ),
            });
        }
        if finish == FinishReason::Length
            && self.state.continuations < self.config.max_continuations
        {
            self.state.continuations += 1;
            self.push(conversation, Message::user(CONTINUE_PROMPT), events)
                .await;
            return Ok(Step::Continue);
        }
        Ok(Step::Exit(Exit::Final(std::mem::take(
            &mut self.state.partial_text,
        ))))
    }

    async fn tools_step(
        &mut self,
        conversation: &mut Conversation,
        events: &dyn EventSink,
        cancel: &CancellationToken,
    ) -> Step {
        let calls = self.state.outstanding.clone();
        let mut results: Vec<Option<ToolResult>> = vec![None; calls.len()];
        let mut runnable: Vec<ValidatedCall> = Vec::new();
        for (slot, call) in results.iter_mut().zip(&calls) {
            events.emit(AgentEvent::ToolStarted {
                id: call.id.clone(),
                name: call.name.clone(),
                arguments: call.arguments.clone(),
            });
            match validate_call(call, conversation.prompt.tools()) {
                Err(text) => *slot = Some(ToolResult::error(call, text)),
                Ok(valid) => {
                    let session = self.hook_session(conversation);
                    let tools = conversation.prompt.tools();
                    match apply_pre_tool(self.ports.hooks.as_ref(), session, valid, tools).await {
                        Ok(valid) => runnable.push(valid),
                        Err(result) => *slot = Some(result),
                    }
                }
            }
        }
        let batch_started = self.ports.clock.now();
        let mut interrupted = false;
        if !runnable.is_empty() {
            let context = ToolContext {
                session_id: conversation.session_id.clone(),
            };
            let executed = tokio::select! {
                biased;
                _ = cancel.cancelled() => None,
                done = self.ports.tools.execute(&runnable, &context, cancel) => Some(done),
            };
            match executed {
                None => interrupted = true,
                Some(done) => {
                    let ids: Vec<&str> = calls.iter().map(|c| c.id.as_str()).collect();
                    place_results(&mut results, &ids, &runnable, done);
                }
            }
        }
        let duration_ms = duration_ms(self.ports.clock.now().saturating_sub(batch_started));
        for (call, result) in calls.iter().zip(results) {
            let Some(mut result) = result else { continue };
            let session = self.hook_session(conversation);
            self.ports.hooks.post_tool(session, call, &mut result).await;
            events.emit(AgentEvent::ToolFinished {
                id: result.call_id.clone(),
                name: result.name.clone(),
                content: result.content.clone(),
                is_error: result.is_error,
                duration_ms,
            });
            self.push(conversation, Message::tool_result(&result), events)
                .await;
        }
        if interrupted || cancel.is_cancelled() {
            return Step::Exit(self.interrupt(conversation, events).await);
        }
        // A turn that only ran tools which are one step however many calls they
        // make (scripts) gives its iteration back.
        let refunds = |name: &str| {
            conversation
                .prompt
                .tools()
                .iter()
                .any(|tool| tool.name == name && tool.refunds_iteration)
        };
        if self.state.last_call_consumed && calls.iter().all(|c| refunds(&c.name)) {
            self.budget.iterations.refund();
        }
        self.state.phase = Phase::CallModel;
        Step::Continue
    }

    async fn summary_step(
        &mut self,
        conversation: &mut Conversation,
        events: &dyn EventSink,
        cancel: &CancellationToken,
    ) -> Step {
        let exhausted = match self.state.grace {
            Grace::Used(e) | Grace::Warned(e) => e,
            Grace::NotNeeded => Exhaustion::Iterations,
        };
        self.push(conversation, Message::user(SUMMARY_PROMPT), events)
            .await;
        let reply = self
            .call_model(conversation, ToolChoice::None, events, cancel)
            .await;
        let (mut message, charge) = match reply {
            Ok((response, charge)) => (response.message, Some(charge)),
            Err(CallError::Interrupted) => {
                return Step::Exit(self.interrupt(conversation, events).await);
            }
            Err(CallError::Failed(_)) => (Message::assistant(""), None),
        };
        // Tools were forbidden; calls made anyway would be left unanswered.
        message.tool_calls.clear();
        if message.content.trim().is_empty() {
            message.content = fallback_summary(conversation, exhausted);
        }
        let summary = message.content.clone();
        self.persist(conversation, message, charge.as_ref(), events)
            .await;
        Step::Exit(Exit::BudgetExhausted { exhausted, summary })
    }

    /// Answers every outstanding call so the conversation stays valid.
    async fn interrupt(&mut self, conversation: &mut Conversation, events: &dyn EventSink) -> Exit {
        for call in std::mem::take(&mut self.state.outstanding) {
            let result = ToolResult::error(&call, INTERRUPTED_RESULT);
            // Surfaces that showed the call start also see it end.
            events.emit(AgentEvent::ToolFinished {
                id: result.call_id.clone(),
                name: result.name.clone(),
                content: result.content.clone(),
                is_error: true,
                duration_ms: 0,
            });
            self.push(conversation, Message::tool_result(&result), events)
                .await;
        }
        Exit::Interrupted
    }

    /// Persists a message, then appends it; a store failure is reported, not fatal.
    async fn push(
        &mut self,
        conversation: &mut Conversation,
        message: Message,
        events: &dyn EventSink,
    ) {
        self.persist(conversation, message, None, events).await;
    }

    /// [`AgentLoop::push`], storing a model's reply together with its call's charge.
    async fn persist(
        &mut self,
        conversation: &mut Conversation,
        message: Message,
        charge: Option<&Charge>,
        events: &dyn EventSink,
    ) {
        if let Some(id) = &message.tool_call_id {
            self.state.outstanding.retain(|call| &call.id != id);
        }
        let store = &self.ports.store;
        let session_id = &conversation.session_id;
        let stored = match charge {
            Some(charge) => {
                store
                    .append_reply(session_id, &message, &charge.usage, charge.cost_usd)
                    .await
            }
            None => store.append(session_id, &message).await,
        };
        if let Err(error) = stored {
            events.emit(AgentEvent::Warning {
                message: error.to_string(),
            });
        }
        if self.ports.memory.is_some() {
            self.turn_log.push(message.clone());
        }
        conversation.messages.push(message);
    }
}

/// The summary's focus with what the memory provider asks it to keep.
async fn with_memory_focus(
    focus: Option<&str>,
    memory: &dyn ExternalMemory,
    messages: &[Message],
) -> Option<String> {
    let keep = memory.before_compress(messages).await;
    match (focus, keep) {
        (Some(focus), Some(keep)) => Some(format!("{focus}\n\nAlso keep: {keep}")),
        (None, Some(keep)) => Some(format!("Keep: {keep}")),
        (focus, None) => focus.map(str::to_owned),
    }
}

/// A summary built without the model: the user's requests and the tools used.
fn fallback_summary(conversation: &Conversation, exhausted: Exhaustion) -> String {
    let (requests, tools) = compress::requests_and_tools(&conversation.messages);
    format!(
        "Stopped: the {exhausted} ran out before the task was finished. Requests: {}. Tools used: {}.",
        if requests.is_empty() {
            "(none)".to_owned()
        } else {
            requests.join(" | ")
        },
        if tools.is_empty() {
            "(none)".to_owned()
        } else {
            tools.join(", ")
        },
    )
}

fn duration_ms(duration: Duration) -> u64 {
    duration.as_millis().try_into().unwrap_or(u64::MAX)
}
