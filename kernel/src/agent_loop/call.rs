//! One model call: retries, key rotation and fallback by error class, with the streamed
//! text shown once however many attempts the call takes.

use std::fmt::Write as _;
use std::sync::Mutex;

use super::*;

/// How many of the last messages a request-shape report lists one by one.
const SHAPE_TAIL: usize = 12;

/// Passes stream events to the surface as they arrive, with memory-context blocks scrubbed
/// from the visible text. It lives for the whole call: when an attempt fails after showing
/// text (the connection dropped mid-reply) and the retry streams the same words again, the
/// part already shown is not shown twice.
struct ForwardStream<'a> {
    events: &'a dyn EventSink,
    state: Mutex<Shown>,
}

struct Shown {
    scrubber: StreamScrubber,
    /// Visible text shown so far in this call, over all attempts.
    text: String,
    /// How much of `text` the current attempt has re-sent (silently) so far.
    replayed: usize,
    /// Whether the current attempt is past what was shown (its text goes out as it comes).
    live: bool,
}

impl<'a> ForwardStream<'a> {
    fn new(events: &'a dyn EventSink) -> Self {
        Self {
            events,
            state: Mutex::new(Shown {
                scrubber: StreamScrubber::new(),
                text: String::new(),
                replayed: 0,
                live: true,
            }),
        }
    }

    /// Starts an attempt: what the failed one held back is dropped, and its text, already
    /// shown, is expected again.
    fn begin_attempt(&self) {
        if let Ok(mut shown) = self.state.lock() {
            shown.scrubber = StreamScrubber::new();
            shown.replayed = 0;
            shown.live = shown.text.is_empty();
        }
    }

    /// Shows what was held back when the attempt's stream ends.
    fn finish(&self) {
        let Ok(mut shown) = self.state.lock() else {
            return;
        };
        let rest = shown.scrubber.finish();
        self.show(&mut shown, &rest);
        if !shown.live && shown.replayed < shown.text.len() {
            self.events.emit(AgentEvent::Warning {
                message: "the connection dropped mid-reply and the retried reply is shorter \
                          than the text shown before it; the stored reply is the retried one"
                    .to_owned(),
            });
        }
    }

    /// Emits the visible part of `text` that has not been shown yet.
    fn show(&self, shown: &mut Shown, text: &str) {
        if text.is_empty() {
            return;
        }
        if shown.live {
            shown.text.push_str(text);
            self.emit_text(text.to_owned());
            return;
        }
        let expected = &shown.text[shown.replayed..];
        let common = common_prefix(expected, text);
        if common == text.len() {
            shown.replayed += common;
            shown.live = shown.replayed == shown.text.len();
            return;
        }
        if common == expected.len() {
            // The retry caught up with what was shown and goes on: show only the new part.
            shown.live = true;
            shown.text.push_str(&text[common..]);
            self.emit_text(text[common..].to_owned());
            return;
        }
        // The retry says something else: say so, and show its reply from the start.
        self.events.emit(AgentEvent::Warning {
            message: "the connection dropped mid-reply and the retry answered differently; \
                      the reply starts again below"
                .to_owned(),
        });
        let restarted = format!("{}{text}", &shown.text[..shown.replayed]);
        shown.live = true;
        shown.text = restarted.clone();
        self.emit_text(restarted);
    }

    fn emit_text(&self, text: String) {
        self.events
            .emit(AgentEvent::Stream(StreamEvent::TextDelta { text }));
    }
}

impl StreamSink for ForwardStream<'_> {
    fn on_event(&self, event: &StreamEvent) {
        match event {
            StreamEvent::TextDelta { text } => {
                if let Ok(mut shown) = self.state.lock() {
                    let visible = shown.scrubber.push(text);
                    self.show(&mut shown, &visible);
                }
            }
            other => self.events.emit(AgentEvent::Stream(other.clone())),
        }
    }
}

/// Length in bytes of the longest common prefix, on a character boundary.
fn common_prefix(a: &str, b: &str) -> usize {
    a.char_indices()
        .zip(b.chars())
        .find(|((_, x), y)| x != y)
        .map_or_else(|| a.len().min(b.len()), |((at, _), _)| at)
}

impl AgentLoop {
    /// One model call with retries and the fallback chain; the reply comes with
    /// its charge, for the caller to persist with the reply's message.
    pub(super) async fn call_model(
        &mut self,
        conversation: &Conversation,
        tool_choice: ToolChoice,
        events: &dyn EventSink,
        cancel: &CancellationToken,
    ) -> Result<(ModelResponse, Charge), CallError> {
        self.state.iterations += 1;
        let cache = CacheBreakpoints::system_and_last_three(conversation.messages.len());
        let sink = ForwardStream::new(events);
        loop {
            let Some(route) = self.routes.get(self.state.route).cloned() else {
                return Err(CallError::Failed(LoopError::NoModel));
            };
            let request = ModelRequest {
                model: &route.model,
                system: conversation.prompt.system(),
                messages: &conversation.messages,
                tools: conversation.prompt.tools(),
                tool_choice,
                cache: &cache,
                max_tokens: overflow::output_budget(
                    self.config.max_tokens,
                    self.state.max_tokens_cap,
                ),
            };
            events.emit(AgentEvent::ModelRequest {
                iteration: self.state.iterations,
                model: route.model.clone(),
            });
            sink.begin_attempt();
            let result = tokio::select! {
                biased;
                _ = cancel.cancelled() => Err(ModelError::Cancelled),
                result = route.provider.complete(request, &sink, cancel) => result,
            };
            let error = match result {
                Ok(response) => {
                    sink.finish();
                    self.state.retries = 0;
                    let charge = self.account(&response.usage, events);
                    let session = HookSession {
                        session_id: &conversation.session_id,
                        model: &route.model,
                    };
                    self.ports.hooks.post_llm(session, &response).await;
                    return Ok((response, charge));
                }
                Err(ModelError::Cancelled) => return Err(CallError::Interrupted),
                Err(error) => error,
            };
            let next = self.state.route + 1;
            // A throttled key of a pool is not waited for while another key can serve.
            let rotate_now = matches!(error, ModelError::RateLimited { .. })
                && self
                    .routes
                    .get(next)
                    .is_some_and(|next| is_pool_sibling(&route, next));
            if error.is_retryable()
                && !rotate_now
                && self.state.retries < self.config.retry.max_retries
            {
                self.state.retries += 1;
                self.state.total_retries += 1;
                let delay = self
                    .config
                    .retry
                    .delay(self.state.retries, error.retry_after());
                events.emit(AgentEvent::Retrying {
                    attempt: self.state.retries,
                    delay_ms: duration_ms(delay),
                    error: error.to_string(),
                });
                tokio::select! {
                    biased;
                    _ = cancel.cancelled() => return Err(CallError::Interrupted),
                    _ = self.ports.clock.sleep(delay) => {}
                }
                continue;
            }
            self.state.retries = 0;
            if let ModelError::InvalidRequest { status, .. } = &error {
                // Most often our own payload: say what it looked like, never its content.
                events.emit(AgentEvent::Warning {
                    message: format!(
                        "{} rejected the request ({status}); not retried. The request held {}",
                        route.label(),
                        request_shape(conversation)
                    ),
                });
            }
            match self.routes.get(next) {
                Some(fallback) if error.may_fall_back() => {
                    events.emit(AgentEvent::FallbackActivated {
                        from: route.label(),
                        to: fallback.label(),
                        error: error.to_string(),
                    });
                    self.state.route = next;
                }
                _ => {
                    return Err(CallError::Failed(LoopError::Model {
                        model: route.model,
                        error,
                    }));
                }
            }
        }
    }

    /// Charges a call to the budget and the run's totals.
    fn account(&mut self, usage: &Usage, events: &dyn EventSink) -> Charge {
        let cost_usd = self.budget.charge(usage);
        self.state.usage.add(usage);
        self.state.cost_usd += cost_usd;
        let served_by = self
            .routes
            .get(self.state.route)
            .map(ModelRoute::label)
            .unwrap_or_default();
        events.emit(AgentEvent::Usage {
            served_by,
            usage: *usage,
            cost_usd,
        });
        Charge {
            usage: *usage,
            cost_usd,
        }
    }
}

/// Whether `next` is another key of the same pool as `route` (same model, both keyed).
fn is_pool_sibling(route: &ModelRoute, next: &ModelRoute) -> bool {
    route.credential.is_some() && next.credential.is_some() && route.model == next.model
}

/// What a request looked like, without its content: sizes, the sequence of roles and
/// tool calls, and the pairing faults a provider rejects (results without their call,
/// calls without their result).
pub(super) fn request_shape(conversation: &Conversation) -> String {
    let messages = &conversation.messages;
    let mut shape = format!(
        "a system prompt of {} bytes, {} tools and {} messages",
        conversation.prompt.system().len(),
        conversation.prompt.tools().len(),
        messages.len()
    );
    let skipped = messages.len().saturating_sub(SHAPE_TAIL);
    let roles: Vec<String> = messages[skipped..].iter().map(describe_message).collect();
    let _ = write!(
        shape,
        " ({}{})",
        if skipped > 0 { "…, " } else { "" },
        roles.join(", ")
    );
    let (orphans, unanswered) = pairing_faults(messages);
    if !orphans.is_empty() {
        let _ = write!(
            shape,
            "; tool results without their call: {}",
            orphans.join(", ")
        );
    }
    if !unanswered.is_empty() {
        let _ = write!(
            shape,
            "; tool calls without a result: {}",
            unanswered.join(", ")
        );
    }
    shape
}

fn describe_message(message: &Message) -> String {
    let role = message.role.as_str();
    match message.tool_calls.len() {
        0 if message.content.is_empty() => format!("{role} (empty)"),
        0 => format!("{role} ({} bytes)", message.content.len()),
        calls => format!("{role} ({calls} calls)"),
    }
}

/// Tool results whose call is not in an earlier assistant message, and calls of earlier
/// turns that never got a result.
fn pairing_faults(messages: &[Message]) -> (Vec<String>, Vec<String>) {
    let mut open: Vec<&str> = Vec::new();
    let mut orphans = Vec::new();
    let mut unanswered = Vec::new();
    for message in messages {
        if let Some(id) = &message.tool_call_id {
            match open.iter().position(|call| call == id) {
                Some(at) => {
                    open.remove(at);
                }
                None => orphans.push(id.clone()),
            }
            continue;
        }
        if !message.tool_calls.is_empty() || !open.is_empty() {
            // A new assistant turn or a user message closes the calls still open.
            unanswered.extend(open.drain(..).map(str::to_owned));
        }
        open.extend(message.tool_calls.iter().map(|call| call.id.as_str()));
    }
    unanswered.extend(open.into_iter().map(str::to_owned));
    (orphans, unanswered)
}
