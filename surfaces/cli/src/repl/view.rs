//! What the REPL shows: streamed Markdown on stdout, a spinner and a compact
//! activity feed of tool calls on stderr, replies of commands, all in the
//! skin's colours. With no terminal: no colours, no spinner.

use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use talaria_commands::Reply;
use talaria_kernel::{AgentEvent, EventSink, StreamEvent};
use talaria_tui::{MarkdownStream, Role, Skin, Spinner, format_tool_line, key_argument};

use crate::approver::{BeforeAsking, TerminalApprover};
use crate::clarifier::{QuestionSlot, TerminalClarifier};

/// Whether stdout gets colours: a terminal, `NO_COLOR` unset, not `TERM=dumb`.
pub fn colours_wanted() -> bool {
    std::io::stdout().is_terminal()
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        && std::env::var("TERM").map_or(true, |t| t != "dumb")
}

/// Whether stderr may animate a spinner.
fn animation_wanted() -> bool {
    std::io::stderr().is_terminal() && std::env::var("TERM").map_or(true, |t| t != "dumb")
}

struct Running {
    id: String,
    key: String,
    label: String,
}

struct State {
    skin: Skin,
    show_reasoning: bool,
    markdown: MarkdownStream,
    /// The stdout line has unterminated streamed text.
    open_line: bool,
    /// Reasoning is being shown and its line is open.
    reasoning_open: bool,
    spinner: Option<Spinner>,
    running: Vec<Running>,
}

/// The REPL's renderer; also the event sink of its turns.
pub struct View {
    color: bool,
    animate: bool,
    state: Mutex<State>,
    /// A `clarify` question waiting on the terminal (Ctrl-C gives it up).
    question: QuestionSlot,
}

impl View {
    /// A view in `skin`; colours and animation only on terminals.
    pub fn new(skin: Skin, show_reasoning: bool) -> Arc<Self> {
        let color = colours_wanted();
        Arc::new(Self {
            color,
            animate: animation_wanted(),
            state: Mutex::new(State {
                markdown: MarkdownStream::new(&skin, color),
                skin,
                show_reasoning,
                open_line: false,
                reasoning_open: false,
                spinner: None,
                running: Vec::new(),
            }),
            question: QuestionSlot::default(),
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The approver for this view: it stops the spinner before asking.
    pub fn approver(self: &Arc<Self>) -> Arc<TerminalApprover> {
        Arc::new(TerminalApprover::with_pause(self.pause()))
    }

    /// The `clarify` clarifier for this view: it stops the spinner before
    /// asking, and shows its question in [`View::question`].
    pub fn clarifier(self: &Arc<Self>) -> Arc<TerminalClarifier> {
        Arc::new(TerminalClarifier::new(self.pause(), self.question.clone()))
    }

    /// The `clarify` question on screen, for the Ctrl-C watcher.
    pub fn question(&self) -> QuestionSlot {
        self.question.clone()
    }

    /// Settles the screen before a question is printed.
    fn pause(self: &Arc<Self>) -> BeforeAsking {
        let view = Arc::downgrade(self);
        Arc::new(move || {
            if let Some(view) = view.upgrade() {
                let mut state = view.state();
                view.settle(&mut state);
            }
        })
    }

    /// The banner, greeting and a line about the session.
    pub fn banner(&self, model: &str) {
        let state = self.state();
        let skin = &state.skin;
        let mut out = std::io::stderr().lock();
        let _ = write!(out, "{}", skin.welcome(self.color));
        let line = format!(
            "{} {} · {model}",
            skin.agent_name,
            env!("CARGO_PKG_VERSION"),
        );
        let _ = writeln!(out, "{}", skin.paint(Role::Accent, &line, self.color));
        let hint = "/help lists commands · Tab completes · Alt-Enter or a trailing \\ continues a line · Ctrl-C interrupts · Ctrl-D exits";
        let _ = writeln!(out, "{}", skin.paint(Role::Dim, hint, self.color));
    }

    /// The prompt: plain (for width) and styled.
    pub fn prompt(&self) -> (String, String) {
        let state = self.state();
        (
            state.skin.prompt_symbol.clone(),
            state.skin.prompt(self.color),
        )
    }

    /// A dim line on stderr.
    pub fn notice(&self, text: &str) {
        let mut state = self.state();
        self.settle(&mut state);
        let painted = state.skin.paint(Role::Dim, text, self.color);
        eprintln!("{painted}");
    }

    /// An error line on stderr.
    pub fn error(&self, text: &str) {
        let mut state = self.state();
        self.settle(&mut state);
        let painted = state
            .skin
            .paint(Role::Error, &format!("error: {text}"), self.color);
        eprintln!("{painted}");
    }

    /// A command's reply.
    pub fn reply(&self, reply: &Reply) {
        if reply.text.is_empty() {
            return;
        }
        if reply.is_error {
            self.error(&reply.text);
        } else {
            let mut state = self.state();
            self.settle(&mut state);
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{}", reply.text);
        }
    }

    /// Ends a turn: flushes Markdown, stops the spinner.
    pub fn end_turn(&self) {
        let mut state = self.state();
        self.settle(&mut state);
        state.running.clear();
    }

    /// Clears the terminal (only when it is one).
    pub fn clear_screen(&self) {
        if self.color {
            print!("\x1b[2J\x1b[H");
            let _ = std::io::stdout().flush();
        }
    }

    /// The farewell line.
    pub fn farewell(&self) {
        let state = self.state();
        if !state.skin.farewell.is_empty() {
            eprintln!(
                "{}",
                state
                    .skin
                    .paint(Role::Dim, &state.skin.farewell, self.color)
            );
        }
    }

    /// Switches skins.
    pub fn set_skin(&self, skin: Skin) {
        let mut state = self.state();
        state.markdown = MarkdownStream::new(&skin, self.color);
        state.skin = skin;
    }

    /// The current skin's name.
    pub fn skin_name(&self) -> String {
        self.state().skin.name.clone()
    }

    /// Shows or hides reasoning.
    pub fn set_reasoning(&self, show: bool) {
        self.state().show_reasoning = show;
    }

    /// Whether reasoning is shown.
    pub fn shows_reasoning(&self) -> bool {
        self.state().show_reasoning
    }

    /// Stops the spinner and ends open lines, so a full line can be printed.
    fn settle(&self, state: &mut State) {
        if let Some(spinner) = state.spinner.take() {
            spinner.stop();
        }
        let rest = state.markdown.finish();
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(rest.as_bytes());
        if state.open_line || !rest.is_empty() && !rest.ends_with('\n') {
            let _ = writeln!(out);
        }
        let _ = out.flush();
        state.open_line = false;
        if state.reasoning_open {
            eprintln!();
            state.reasoning_open = false;
        }
    }

    fn spin(&self, state: &mut State, label: &str) {
        if !self.animate {
            return;
        }
        match &state.spinner {
            Some(spinner) => spinner.set_label(label),
            None => state.spinner = Some(Spinner::start(&state.skin, label)),
        }
    }

    fn tool_started(&self, state: &mut State, id: String, name: &str, arguments: &str) {
        self.settle(state);
        let key = serde_json::from_str(arguments)
            .ok()
            .and_then(|args| key_argument(name, &args))
            .unwrap_or_default();
        let label = format!("{} {name} {key}", state.skin.tool_emoji(name));
        state.running.push(Running { id, key, label });
        self.spin_running(state);
    }

    fn spin_running(&self, state: &mut State) {
        let label = match state.running.as_slice() {
            [] => return,
            [one] => one.label.clone(),
            [first, rest @ ..] => format!("{} (+{} more)", first.label, rest.len()),
        };
        self.spin(state, &label);
    }

    fn tool_finished(
        &self,
        state: &mut State,
        id: &str,
        name: &str,
        content: &str,
        is_error: bool,
        ms: u64,
    ) {
        let key = state
            .running
            .iter()
            .position(|r| r.id == id)
            .map(|i| state.running.remove(i).key)
            .unwrap_or_default();
        if let Some(spinner) = state.spinner.take() {
            spinner.stop();
        }
        let emoji = state.skin.tool_emoji(name).to_owned();
        let error = is_error.then_some(content);
        let line = format_tool_line(
            &state.skin,
            self.color,
            &emoji,
            name,
            &key,
            ms,
            !is_error,
            error,
        );
        eprintln!("{line}");
        self.spin_running(state);
    }
}

impl EventSink for View {
    fn emit(&self, event: AgentEvent) {
        let mut state = self.state();
        let state = &mut *state;
        match event {
            AgentEvent::ModelRequest { .. } => {
                let verb = state
                    .skin
                    .spinner
                    .verbs
                    .first()
                    .cloned()
                    .unwrap_or_else(|| "thinking".into());
                self.spin(state, &verb);
            }
            AgentEvent::Stream(StreamEvent::TextDelta { text }) => {
                if let Some(spinner) = state.spinner.take() {
                    spinner.stop();
                }
                if state.reasoning_open {
                    eprintln!();
                    state.reasoning_open = false;
                }
                let rendered = state.markdown.push(&text);
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(rendered.as_bytes());
                let _ = out.flush();
                if !rendered.is_empty() {
                    state.open_line = !rendered.ends_with('\n');
                }
            }
            AgentEvent::Stream(StreamEvent::ReasoningDelta { text }) => {
                if state.show_reasoning {
                    if let Some(spinner) = state.spinner.take() {
                        spinner.stop();
                    }
                    let painted = state.skin.paint(Role::Reasoning, &text, self.color);
                    let mut err = std::io::stderr().lock();
                    let _ = err.write_all(painted.as_bytes());
                    let _ = err.flush();
                    state.reasoning_open = !text.ends_with('\n');
                } else {
                    self.spin(state, "reasoning");
                }
            }
            AgentEvent::Stream(_) | AgentEvent::Usage { .. } | AgentEvent::Final { .. } => {}
            AgentEvent::ToolStarted {
                id,
                name,
                arguments,
            } => {
                self.tool_started(state, id, &name, &arguments);
            }
            AgentEvent::ToolFinished {
                id,
                name,
                content,
                is_error,
                duration_ms,
            } => self.tool_finished(state, &id, &name, &content, is_error, duration_ms),
            other => {
                let Some(line) = crate::render::status_line(&other) else {
                    return;
                };
                self.settle(state);
                eprintln!("{}", state.skin.paint(Role::Warning, &line, self.color));
                self.spin_running(state);
            }
        }
    }
}
