//! One ACP session: a thread of its own with a current-thread runtime owning a
//! `talaria_agent::Agent` (its futures are not `Send`; building it does blocking
//! work that must not stall the connection). The connection sends it jobs; it
//! answers through the session's ordered [`Outbound`] channel.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use talaria_agent::{
    Agent, AgentOptions, Clarifier, ClarifyAnswer, ClarifyError, NoAnswer, Surface,
};
use talaria_approval::{ApprovalRequest, Approver, Decision};
use talaria_commands::{Context, Effect, Pending, Registry, Surfaces};
use talaria_kernel::{CancellationToken, Exit, ImageRef, Role};
use talaria_profile::settings::default_context_window;
use talaria_profile::{McpServerConfig, Overrides, ProfileHome, Settings, SettingsError};
use tokio::sync::{mpsc, oneshot};

use crate::editor::EditorBridge;
use crate::sink::{CallIds, UpdateSink, tool_start};
use crate::types::{
    ClientMcp, CommandInfo, EditorOffers, Outbound, PermissionAnswer, PermissionAsk, QuestionAsk,
    QuestionReply, Stop, Update,
};

/// Where a session runs and what it starts from.
#[derive(Debug, Clone)]
pub struct SessionSpec {
    pub home: ProfileHome,
    pub overrides: Overrides,
    pub cwd: PathBuf,
    pub mcp: Vec<ClientMcp>,
    /// Continue this stored session.
    pub resume: Option<String>,
    /// The id the editor loaded or resumed the session by: its first stored
    /// session, which `resume` may have continued after compressions.
    pub editor_id: Option<String>,
    /// What the editor does for tools (files, terminal).
    pub offers: EditorOffers,
}

/// A job for the session's thread.
#[derive(Debug)]
pub enum Job {
    Prompt {
        text: String,
        /// Images attached to the prompt, prepared in the profile's image store.
        images: Vec<ImageRef>,
        cancel: CancellationToken,
        ended: oneshot::Sender<Result<Stop, String>>,
    },
    /// Send the conversation so far as updates (`session/load`), then `ended`.
    Replay {
        ended: oneshot::Sender<Result<Stop, String>>,
    },
}

/// The connection's handle on a running session.
#[derive(Debug)]
pub struct Started {
    /// The stored session's id (a new session's ACP id).
    pub session_id: String,
    pub jobs: mpsc::UnboundedSender<Job>,
    pub notices: Vec<String>,
    /// Fires once the agent has ended its session (after `jobs` is dropped).
    pub ended: oneshot::Receiver<()>,
}

/// Starts the session's thread; answers once the agent is built (or could not be).
pub async fn start(
    spec: SessionSpec,
    out: mpsc::UnboundedSender<Outbound>,
) -> Result<Started, String> {
    let (ready_tx, ready_rx) = oneshot::channel();
    let thread = std::thread::Builder::new()
        .name("acp-session".into())
        .spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(runtime) => runtime,
                Err(error) => {
                    let _ = ready_tx.send(Err(format!("cannot start a runtime: {error}")));
                    return;
                }
            };
            runtime.block_on(run(spec, out, ready_tx));
        });
    if let Err(error) = thread {
        return Err(format!("cannot start a thread: {error}"));
    }
    ready_rx
        .await
        .map_err(|_| "the session's thread ended before it started".to_owned())?
}

/// Asks the editor through `session/request_permission`.
struct EditorApprover {
    out: mpsc::UnboundedSender<Outbound>,
    calls: CallIds,
}

#[async_trait]
impl Approver for EditorApprover {
    async fn ask(&self, request: &ApprovalRequest) -> Decision {
        let tool_call_id = self
            .calls
            .lock()
            .ok()
            .and_then(|calls| calls.get(&request.tool).cloned());
        let ask = PermissionAsk {
            tool_call_id,
            tool: request.tool.clone(),
            title: format!(
                "{} needs approval: {}",
                request.tool, request.finding.description
            ),
            command: request.command.clone(),
        };
        let (tx, rx) = oneshot::channel();
        if self.out.send(Outbound::Permission(ask, tx)).is_err() {
            return Decision::Unavailable;
        }
        match rx.await {
            Ok(PermissionAnswer::AllowOnce) => Decision::Once,
            Ok(PermissionAnswer::AllowSession) => Decision::Session,
            Ok(PermissionAnswer::Reject | PermissionAnswer::Cancelled) | Err(_) => Decision::Deny,
        }
    }
}

/// Asks the editor's user `clarify` questions (see `adapter::question`).
struct EditorClarifier {
    out: mpsc::UnboundedSender<Outbound>,
    calls: CallIds,
    /// The editor takes answers in the user's own words (form elicitation).
    free_text: bool,
    /// `clarify.timeout_secs`: the user may have left the editor.
    timeout: std::time::Duration,
}

#[async_trait]
impl Clarifier for EditorClarifier {
    async fn ask(
        &self,
        question: &str,
        choices: &[String],
        cancel: &CancellationToken,
    ) -> Result<ClarifyAnswer, ClarifyError> {
        let tool_call_id = self
            .calls
            .lock()
            .ok()
            .and_then(|calls| calls.get(talaria_agent::tools::CLARIFY).cloned());
        let ask = QuestionAsk {
            tool_call_id,
            question: question.to_owned(),
            choices: choices.to_vec(),
        };
        let (tx, rx) = oneshot::channel();
        if self.out.send(Outbound::Question(ask, tx)).is_err() {
            return Err(ClarifyError("the editor has gone".into()));
        }
        // Dropping `rx` (on cancel or timeout) makes the adapter give up.
        tokio::select! {
            reply = tokio::time::timeout(self.timeout, rx) => match reply {
                Ok(Ok(QuestionReply::Answered(text))) => Ok(ClarifyAnswer::Answered(text)),
                Ok(Ok(QuestionReply::Declined)) => Ok(ClarifyAnswer::NoAnswer(NoAnswer::Declined)),
                Ok(Ok(QuestionReply::Failed(message))) => Err(ClarifyError(message)),
                Ok(Err(_)) => Err(ClarifyError("the editor has gone".into())),
                Err(_elapsed) => Ok(ClarifyAnswer::NoAnswer(NoAnswer::TimedOut(self.timeout))),
            },
            () = cancel.cancelled() => Ok(ClarifyAnswer::NoAnswer(NoAnswer::Cancelled)),
        }
    }

    fn takes_free_text(&self) -> bool {
        self.free_text
    }
}

struct Worker {
    spec: SessionSpec,
    out: mpsc::UnboundedSender<Outbound>,
    calls: CallIds,
    agent: Agent,
    registry: Registry,
    pending: Pending,
    window: u64,
}

/// Settings from the profile, the command line, pending `/model`-style changes
/// and the editor's MCP servers. An editor server whose name is taken by the
/// profile's gets the suffix `-editor` (the profile's own stays as configured).
fn settings(spec: &SessionSpec, pending: &Pending) -> Result<Settings, String> {
    let (env, config) =
        talaria_profile::load_profile(&spec.home).map_err(|e| redact(&e.to_string()))?;
    let mut overrides = spec.overrides.clone();
    pending.apply_overrides(&mut overrides);
    let mut settings = Settings::resolve(&overrides, &env, config, &spec.home).map_err(|e| {
        let hint = if matches!(e, SettingsError::Missing(_)) {
            " (run `talaria setup` for this profile, or start `talaria acp` with --provider, --model and --base-url)"
        } else {
            ""
        };
        format!("{}{hint}", redact(&e.to_string()))
    })?;
    pending.apply_tools(&mut settings.config.tools);
    add_client_servers(&mut settings.config.mcp_servers, &spec.mcp)?;
    Ok(settings)
}

/// Adds the editor's servers to `servers`, renaming on a clash.
pub fn add_client_servers(
    servers: &mut BTreeMap<String, McpServerConfig>,
    mcp: &[ClientMcp],
) -> Result<(), String> {
    for server in mcp {
        let (name, config) = match server {
            ClientMcp::Stdio {
                name,
                command,
                args,
                env,
            } => (
                name,
                McpServerConfig {
                    command: Some(command.to_string_lossy().into_owned()),
                    args: args.clone(),
                    env: env.iter().cloned().collect(),
                    // The editor's servers are its session's (its roots, its state).
                    shared: false,
                    ..McpServerConfig::default()
                },
            ),
            ClientMcp::Http { name, url, headers } => (
                name,
                McpServerConfig {
                    url: Some(url.clone()),
                    headers: headers.iter().cloned().collect(),
                    shared: false,
                    ..McpServerConfig::default()
                },
            ),
        };
        let mut chosen = sanitize(name);
        if servers.contains_key(&chosen) {
            chosen = format!("{chosen}-editor");
        }
        config
            .validate(&chosen)
            .map_err(|e| format!("MCP server '{name}' from the editor: {e}"))?;
        servers.insert(chosen, config);
    }
    Ok(())
}

/// A server name fit for tool names (`mcp_<server>_<tool>`): letters, digits,
/// `-` and `_`, at most 32 characters.
fn sanitize(name: &str) -> String {
    let clean: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .take(talaria_profile::mcp_config::MAX_SERVER_NAME - "-editor".len())
        .collect();
    if clean.is_empty() {
        "editor".to_owned()
    } else {
        clean
    }
}

async fn build(
    spec: &SessionSpec,
    pending: &Pending,
    resume: Option<String>,
    out: &mpsc::UnboundedSender<Outbound>,
    calls: &CallIds,
) -> Result<(Agent, u64), String> {
    let settings = settings(spec, pending)?;
    let window = settings
        .config
        .model
        .context_window
        .unwrap_or_else(|| default_context_window(&settings.primary.model));
    let approver = Arc::new(EditorApprover {
        out: out.clone(),
        calls: calls.clone(),
    });
    let offers = spec.offers;
    let editor = (offers.files || offers.terminal).then(|| {
        Arc::new(EditorBridge::new(out.clone(), calls.clone(), offers))
            as Arc<dyn talaria_plugin_host::Editor>
    });
    // Every editor can answer a question with choices (as a permission
    // request); free answers need form elicitation.
    let clarifier = Arc::new(EditorClarifier {
        out: out.clone(),
        calls: calls.clone(),
        free_text: offers.questions,
        timeout: std::time::Duration::from_secs(settings.config.clarify.timeout_secs),
    });
    let options = AgentOptions {
        surface: Surface::Editor,
        cwd: spec.cwd.clone(),
        approver,
        resume,
        editor,
        messenger: None,
        clarifier: Some(clarifier),
        browsers: None,
        chat_user: None,
        // The editor is the owner's.
        principal: talaria_agent::Principal::owner(),
    };
    let agent = Agent::build(&settings, &spec.home, options)
        .await
        .map_err(|e| format!("cannot start the agent: {}", redact(&e.to_string())))?;
    for notice in agent.notices() {
        eprintln!("talaria acp: note: {}", redact(notice));
    }
    Ok((agent, u64::from(window)))
}

fn command_list(registry: &Registry) -> Vec<CommandInfo> {
    registry
        .commands()
        .iter()
        .map(|c| CommandInfo {
            name: c.name.clone(),
            description: c.description.clone(),
            hint: (!c.usage.is_empty()).then(|| c.usage.clone()),
        })
        .collect()
}

async fn run(
    spec: SessionSpec,
    out: mpsc::UnboundedSender<Outbound>,
    ready: oneshot::Sender<Result<Started, String>>,
) {
    let calls = CallIds::default();
    let pending = Pending::default();
    let (agent, window) = match build(&spec, &pending, spec.resume.clone(), &out, &calls).await {
        Ok(built) => built,
        Err(error) => {
            let _ = ready.send(Err(error));
            return;
        }
    };
    let (jobs_tx, mut jobs) = mpsc::unbounded_channel();
    let (ended_tx, ended) = oneshot::channel();
    let registry = Registry::for_session(&agent, Surfaces::ACP);
    let mut worker = Worker {
        out,
        calls,
        registry,
        pending,
        window,
        agent,
        spec,
    };
    let started = Started {
        session_id: worker.agent.conversation().session_id.clone(),
        jobs: jobs_tx,
        notices: worker.agent.notices().to_vec(),
        ended,
    };
    if ready.send(Ok(started)).is_err() {
        worker.agent.end_session().await;
        return;
    }
    worker.advertise();
    while let Some(job) = jobs.recv().await {
        match job {
            Job::Prompt {
                text,
                images,
                cancel,
                ended,
            } => {
                let result = worker.prompt(&text, images, &cancel).await;
                let _ = worker.out.send(Outbound::TurnEnded(result, ended));
            }
            Job::Replay { ended } => {
                worker.replay();
                let _ = worker
                    .out
                    .send(Outbound::TurnEnded(Ok(Stop::EndTurn), ended));
            }
        }
    }
    // The connection closed: the session ends like a terminal session does.
    worker.agent.end_session().await;
    let _ = ended_tx.send(());
}

impl Worker {
    fn send(&self, update: Update) {
        let _ = self.out.send(Outbound::Update(update));
    }

    fn sink(&self) -> UpdateSink {
        UpdateSink::new(
            self.out.clone(),
            self.calls.clone(),
            self.spec.cwd.clone(),
            self.window,
        )
    }

    fn advertise(&self) {
        self.send(Update::Commands(command_list(&self.registry)));
    }

    /// The stored conversation as updates: user and agent messages, and each
    /// tool call with its final status.
    fn replay(&self) {
        let messages = self.agent.conversation().messages.clone();
        for message in messages {
            match message.role {
                Role::User => self.send(Update::UserText(message.content)),
                Role::Assistant => {
                    if let Some(reasoning) = message.reasoning.filter(|r| !r.is_empty()) {
                        self.send(Update::Thought(reasoning));
                    }
                    if !message.content.is_empty() {
                        self.send(Update::AgentText(message.content));
                    }
                    for call in message.tool_calls {
                        self.send(Update::ToolStarted(tool_start(
                            &call.id,
                            &call.name,
                            &call.arguments,
                            &self.spec.cwd,
                        )));
                    }
                }
                Role::Tool => {
                    if let Some(id) = message.tool_call_id {
                        self.send(Update::ToolFinished {
                            id,
                            failed: message.is_error,
                            text: message.content,
                        });
                    }
                }
                Role::System => {}
            }
        }
    }

    /// One `session/prompt`: a slash command or a turn.
    async fn prompt(
        &mut self,
        text: &str,
        images: Vec<ImageRef>,
        cancel: &CancellationToken,
    ) -> Result<Stop, String> {
        // A prompt with images is a message, even if its text looks like a command.
        if !Registry::is_command(text) || !images.is_empty() {
            return self.turn(text, images, cancel).await;
        }
        let sink = self.sink();
        let reply = {
            let registry = self.registry.clone();
            let mut ctx = Context {
                agent: &mut self.agent,
                pending: &mut self.pending,
                registry: &registry,
                home: &self.spec.home,
                cwd: &self.spec.cwd,
                surface: Surfaces::ACP,
                events: &sink,
            };
            registry.dispatch(&mut ctx, text).await
        };
        if !reply.text.is_empty() {
            let text = if reply.is_error {
                format!("**Error:** {}", reply.text)
            } else {
                reply.text
            };
            self.send(Update::AgentText(text));
        }
        match reply.effect {
            Effect::Send(prompt) => self.turn(&prompt, Vec::new(), cancel).await,
            Effect::NewSession | Effect::ClearAndNewSession => self.restart(None).await,
            Effect::Resume(id) => self.restart(Some(id)).await,
            Effect::Reload => {
                let current = self.agent.conversation().session_id.clone();
                self.restart(Some(current)).await
            }
            // Terminal-only effects (not offered on this surface).
            Effect::None
            | Effect::Quit
            | Effect::Skin(_)
            | Effect::Reasoning(_)
            | Effect::Attach(_) => Ok(Stop::EndTurn),
        }
    }

    /// Ends the agent's session and builds a new agent (fresh, or continuing `resume`).
    /// The ACP session id stays; the stored session behind it changes.
    async fn restart(&mut self, resume: Option<String>) -> Result<Stop, String> {
        let (agent, window) =
            build(&self.spec, &self.pending, resume, &self.out, &self.calls).await?;
        self.agent.end_session().await;
        self.agent = agent;
        self.window = window;
        self.pending = Pending::default();
        self.registry = Registry::for_session(&self.agent, Surfaces::ACP);
        self.advertise();
        self.send(Update::AgentText(format!(
            "Now in session {}.",
            self.agent.conversation().session_id
        )));
        Ok(Stop::EndTurn)
    }

    async fn turn(
        &mut self,
        text: &str,
        images: Vec<ImageRef>,
        cancel: &CancellationToken,
    ) -> Result<Stop, String> {
        let sink = self.sink();
        match self
            .agent
            .run_with_images(text, images, &sink, cancel)
            .await
        {
            Ok(Exit::Final(_)) => Ok(Stop::EndTurn),
            Ok(Exit::BudgetExhausted { .. }) => Ok(Stop::MaxTurnRequests),
            Ok(Exit::Interrupted) => Ok(Stop::Cancelled),
            Err(error) => Err(redact(&error.to_string())),
        }
    }
}

/// `text` with credentials replaced (errors may quote a request or a key).
pub fn redact(text: &str) -> String {
    talaria_redact::redact(text).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn editor_servers_join_the_profiles_and_are_renamed_on_a_clash() {
        let mut servers = BTreeMap::new();
        servers.insert(
            "docs".to_owned(),
            McpServerConfig {
                url: Some("http://127.0.0.1:1/mcp".into()),
                ..McpServerConfig::default()
            },
        );
        let mcp = [
            ClientMcp::Http {
                name: "docs".into(),
                url: "http://127.0.0.1:2/mcp".into(),
                headers: vec![("Authorization".into(), "Bearer x".into())],
            },
            ClientMcp::Stdio {
                name: "my files!".into(),
                command: "/bin/cat".into(),
                args: vec!["-u".into()],
                env: vec![("A".into(), "1".into())],
            },
        ];
        add_client_servers(&mut servers, &mcp).unwrap();
        assert_eq!(
            servers.get("docs").unwrap().url.as_deref(),
            Some("http://127.0.0.1:1/mcp"),
            "the profile's server is kept"
        );
        let editor = servers.get("docs-editor").unwrap();
        assert_eq!(editor.url.as_deref(), Some("http://127.0.0.1:2/mcp"));
        assert_eq!(editor.headers.get("Authorization").unwrap(), "Bearer x");
        let files = servers.get("my-files-").unwrap();
        assert_eq!(files.command.as_deref(), Some("/bin/cat"));
        assert_eq!(files.env.get("A").unwrap(), "1");
    }
}
