//! The interactive REPL: read a line (history, completion, multi-line), run a
//! slash command from the registry or a turn of the agent, render it, repeat.
//! Ctrl-C cancels a running turn; at an idle prompt Ctrl-C twice or Ctrl-D exits.

pub mod input;
pub mod view;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use talaria_agent::{Agent, AgentOptions, Surface, images};
use talaria_commands::{Context, Effect, Pending, Registry, Surfaces};
use talaria_kernel::{CancellationToken, Exit, ImageRef};
use talaria_profile::{ProfileHome, Settings};
use talaria_tui::SkinCatalog;
use tokio::signal::unix::{SignalKind, signal};

use crate::args::RunArgs;
use crate::clarifier::{QuestionSlot, cancel_question};
use crate::exit::{Status, explain};
pub use input::{ArgSnapshot, CompletionSource, Input, LineReader};
use view::View;

/// The running turn's cancel token, shared with the Ctrl-C watcher.
type TurnSlot = Arc<Mutex<Option<CancellationToken>>>;

/// Ctrl-C while a turn runs cancels it (the loop records interrupted results
/// for its tool calls); a second Ctrl-C before the turn has wound down exits.
/// Ctrl-C at a `clarify` question gives up only the question. At the prompt
/// the line editor reads Ctrl-C itself (raw mode).
fn watch_ctrl_c(question: QuestionSlot) -> TurnSlot {
    let slot: TurnSlot = Arc::default();
    // Registered now, not when the task first runs: a Ctrl-C before that
    // would otherwise kill the process.
    let Ok(mut interrupts) = signal(SignalKind::interrupt()) else {
        return slot;
    };
    let watched = slot.clone();
    tokio::spawn(async move {
        while interrupts.recv().await.is_some() {
            if cancel_question(&question) {
                continue;
            }
            let Ok(running) = watched.lock() else {
                continue;
            };
            if let Some(turn) = running.as_ref() {
                if turn.is_cancelled() {
                    std::process::exit(130);
                }
                turn.cancel();
            }
        }
    });
    slot
}

/// The REPL's state across sessions.
pub struct Repl {
    home: ProfileHome,
    cwd: PathBuf,
    args: RunArgs,
    settings: Settings,
    agent: Agent,
    pending: Pending,
    registry: Arc<Registry>,
    skins: SkinCatalog,
    view: Arc<View>,
    completion: Arc<Mutex<CompletionSource>>,
    /// Images that go with the next message (`--image`, a dropped file).
    attachments: Vec<ImageRef>,
}

impl Repl {
    /// Wraps a built agent.
    #[allow(clippy::too_many_arguments)] // each is a distinct part of the REPL's state, moved in once
    pub fn new(
        agent: Agent,
        settings: Settings,
        home: ProfileHome,
        cwd: PathBuf,
        args: RunArgs,
        skins: SkinCatalog,
        view: Arc<View>,
        completion: Arc<Mutex<CompletionSource>>,
    ) -> Self {
        let registry = Arc::new(Registry::for_session(&agent, Surfaces::CLI));
        let mut repl = Self {
            home,
            cwd,
            args,
            settings,
            agent,
            pending: Pending::default(),
            registry,
            skins,
            view,
            completion,
            attachments: Vec::new(),
        };
        repl.refresh_completion();
        repl
    }

    /// Prepares the image at `path` for the next message, saying what happened.
    fn attach_file(&mut self, path: &std::path::Path) {
        match talaria_agent::image_store(&self.home).attach_file(path) {
            Ok(attached) => {
                if let Some(note) = attached.note {
                    self.view.notice(&format!("note: {note}"));
                }
                self.attachments.push(attached.image);
                self.view.notice(&format!(
                    "attached {} ({} image(s) go with your next message)",
                    path.display(),
                    self.attachments.len()
                ));
            }
            Err(error) => self.view.error(&error.to_string()),
        }
    }

    /// Attaches prepared images to the next message.
    pub fn attach(&mut self, images: Vec<ImageRef>) {
        self.attachments.extend(images);
    }

    /// Runs until the user quits; `first` is what was typed while the agent
    /// was being built, if anything.
    pub async fn run(
        mut self,
        mut reader: LineReader,
        mut first: Option<rustyline::Result<Input>>,
    ) -> Status {
        let turn = watch_ctrl_c(self.view.question());
        let mut interrupted_once = false;
        loop {
            let read = match first.take() {
                Some(read) => read,
                None => {
                    let (plain, styled) = self.view.prompt();
                    tokio::task::block_in_place(|| reader.read(&plain, &styled))
                }
            };
            let line = match read {
                Ok(Input::Line(line)) => line,
                Ok(Input::Interrupted) => {
                    if interrupted_once {
                        break;
                    }
                    interrupted_once = true;
                    self.view.notice("(Ctrl-C again or Ctrl-D to exit)");
                    continue;
                }
                Ok(Input::Eof) => break,
                Err(error) => {
                    self.view.error(&format!("cannot read input: {error}"));
                    break;
                }
            };
            interrupted_once = false;
            let input = line.trim();
            if input.is_empty() {
                continue;
            }
            let effect = if Registry::is_command(input) {
                self.command(input).await
            } else if let Some(path) = images::dropped_image_path(input, &self.cwd) {
                // What a terminal pastes for a dropped file: attach it, send nothing yet.
                self.attach_file(&path);
                continue;
            } else {
                // `//text` sends `/text`.
                let text = input
                    .strip_prefix("//")
                    .map_or(input.to_owned(), |t| format!("/{t}"));
                Effect::Send(text)
            };
            if self.apply(effect, &turn).await {
                return Status::Answered;
            }
        }
        self.end().await;
        Status::Answered
    }

    /// Does what a command (or a typed line) asks; `true` when the REPL ends.
    async fn apply(&mut self, effect: Effect, turn: &TurnSlot) -> bool {
        match effect {
            Effect::None => {}
            Effect::Send(text) => self.turn(&text, turn).await,
            Effect::Quit => {
                self.end().await;
                return true;
            }
            Effect::NewSession => self.rebuild(None).await,
            Effect::ClearAndNewSession => {
                self.view.clear_screen();
                self.rebuild(None).await;
            }
            Effect::Resume(id) => self.rebuild(Some(id)).await,
            Effect::Reload => {
                let id = self.agent.session_id().to_owned();
                self.rebuild(Some(id)).await;
            }
            Effect::Skin(name) => self.skin(name.as_deref()),
            Effect::Attach(path) => self.attach_file(&path),
            Effect::Reasoning(show) => {
                let show = show.unwrap_or(!self.view.shows_reasoning());
                self.view.set_reasoning(show);
                self.view.notice(if show {
                    "reasoning shown"
                } else {
                    "reasoning hidden"
                });
            }
        }
        false
    }

    async fn command(&mut self, line: &str) -> Effect {
        let registry = Arc::clone(&self.registry);
        let mut ctx = Context {
            agent: &mut self.agent,
            pending: &mut self.pending,
            registry: &registry,
            home: &self.home,
            cwd: &self.cwd,
            surface: Surfaces::CLI,
            events: &*self.view,
        };
        let reply = registry.dispatch(&mut ctx, line).await;
        self.view.reply(&reply);
        reply.effect
    }

    async fn turn(&mut self, text: &str, slot: &TurnSlot) {
        let cancel = CancellationToken::new();
        if let Ok(mut running) = slot.lock() {
            *running = Some(cancel.clone());
        }
        let images = std::mem::take(&mut self.attachments);
        let outcome = self
            .agent
            .run_with_images(text, images, &*self.view, &cancel)
            .await;
        if let Ok(mut running) = slot.lock() {
            *running = None;
        }
        self.view.end_turn();
        match outcome {
            Ok(Exit::Final(_)) => {}
            Ok(Exit::Interrupted) => self.view.notice("interrupted"),
            Ok(Exit::BudgetExhausted { exhausted, .. }) => self.view.error(&format!(
                "the {exhausted} ran out; the summary above is where things stand"
            )),
            Err(error) => self
                .view
                .error(&explain(&error, &self.settings.primary, &self.home)),
        }
    }

    /// Ends the current session and starts another (fresh, or `resume`),
    /// applying pending changes. If the new one cannot be built, the current
    /// session goes on and the changes stay pending.
    async fn rebuild(&mut self, resume: Option<String>) {
        let settings = match resolve_with(&self.args, &self.home, &self.pending) {
            Ok(settings) => settings,
            Err(message) => {
                self.view.error(&message);
                return;
            }
        };
        let options = AgentOptions {
            surface: Surface::Terminal,
            cwd: self.cwd.clone(),
            approver: self.view.approver(),
            resume: resume.clone(),
            editor: None,
            messenger: None,
            clarifier: Some(self.view.clarifier()),
            browsers: None,
            chat_user: None,
            principal: talaria_agent::Principal::owner(),
        };
        let agent = match Agent::build(&settings, &self.home, options).await {
            Ok(agent) => agent,
            Err(error) => {
                self.view
                    .error(&format!("the session was not switched: {error}"));
                return;
            }
        };
        self.agent.end_session().await;
        self.agent = agent;
        self.settings = settings;
        self.pending = Pending::default();
        self.registry = Arc::new(Registry::for_session(&self.agent, Surfaces::CLI));
        self.refresh_completion();
        for notice in self.agent.notices() {
            self.view.notice(&format!("note: {notice}"));
        }
        match &resume {
            Some(id) => {
                self.view.notice(&format!("continuing session {id}"));
                if let Some(recap) = self.agent.recap() {
                    self.view.notice(&recap);
                }
            }
            None => self.view.notice(&format!(
                "new session {} · {}",
                self.agent.session_id(),
                self.agent.model().model
            )),
        }
    }

    fn skin(&mut self, name: Option<&str>) {
        let Some(name) = name else {
            let current = self.view.skin_name();
            let lines: Vec<String> = self
                .skins
                .list()
                .into_iter()
                .map(|info| {
                    let marker = if info.name == current { "*" } else { " " };
                    format!(
                        "{marker} {:<14} {:<28} {}",
                        info.name, info.description, info.origin
                    )
                })
                .collect();
            self.view.notice(&lines.join("\n"));
            return;
        };
        match self.skins.resolve(name) {
            Ok(skin) => {
                self.view.set_skin(skin);
                let saved = talaria_profile::EnvLayer::load(&self.home.env_file())
                    .map_err(|e| e.to_string())
                    .and_then(|env| {
                        talaria_profile::config_edit::set(
                            &self.home.config_file(),
                            "display.skin",
                            name,
                            &env,
                        )
                        .map_err(|e| e.to_string())
                    });
                match saved {
                    Ok(()) => self.view.notice(&format!("skin {name} (saved)")),
                    Err(error) => self
                        .view
                        .notice(&format!("skin {name} (not saved: {error})")),
                }
            }
            Err(error) => self.view.error(&error.to_string()),
        }
    }

    /// Completion data of a (new) session: its commands and argument values.
    fn refresh_completion(&mut self) {
        let values = ArgSnapshot {
            sessions: self
                .agent
                .recent_sessions(30)
                .map(|sessions| sessions.into_iter().map(|s| s.id).collect())
                .unwrap_or_default(),
            toolsets: {
                let mut toolsets: Vec<String> =
                    self.agent.tools().into_iter().map(|t| t.toolset).collect();
                toolsets.sort();
                toolsets.dedup();
                toolsets
            },
            skins: self.skins.list().into_iter().map(|s| s.name).collect(),
            models: std::iter::once(&self.settings.primary)
                .chain(&self.settings.fallbacks)
                .chain(&self.settings.auxiliary)
                .map(|m| m.model.clone())
                .collect(),
            config_keys: config_keys(&self.settings),
        };
        if let Ok(mut source) = self.completion.lock() {
            source.registry = Arc::clone(&self.registry);
            source.values = values;
        }
    }

    async fn end(&mut self) {
        self.agent.end_session().await;
        self.view.farewell();
    }
}

/// Settings for the next session: the command line, then the pending changes.
fn resolve_with(args: &RunArgs, home: &ProfileHome, pending: &Pending) -> Result<Settings, String> {
    let (env, config) = talaria_profile::load_profile(home).map_err(|e| e.to_string())?;
    let mut overrides = crate::run::overrides(&args.model);
    pending.apply_overrides(&mut overrides);
    let mut settings =
        Settings::resolve(&overrides, &env, config, home).map_err(|e| e.to_string())?;
    pending.apply_tools(&mut settings.config.tools);
    settings.yolo = args.yolo;
    Ok(settings)
}

/// Every dotted key of the effective configuration.
fn config_keys(settings: &Settings) -> Vec<String> {
    fn walk(prefix: &str, value: &serde_yaml_ng::Value, out: &mut Vec<String>) {
        if let serde_yaml_ng::Value::Mapping(map) = value {
            for (key, child) in map {
                let Some(key) = key.as_str() else { continue };
                let path = if prefix.is_empty() {
                    key.to_owned()
                } else {
                    format!("{prefix}.{key}")
                };
                walk(&path, child, out);
            }
        } else if !prefix.is_empty() {
            out.push(prefix.to_owned());
        }
    }
    let mut keys = Vec::new();
    if let Ok(value) = talaria_profile::config_edit::effective(&settings.config) {
        walk("", &value, &mut keys);
    }
    keys.sort();
    keys
}
