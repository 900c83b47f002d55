//! Assembles one agent: frozen prompt, model routes, tools and store, around the
//! kernel loop. Every surface builds its agent here and only renders events.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use talaria_kernel::prompt::{DEFAULT_PERSONA, tool_use_guidance};
use talaria_kernel::{
    AgentLoop, CancellationToken, Compaction, Conversation, EventSink, Exit, Hooks, LoopError,
    LoopState, ModelProvider, ModelRoute, NoHooks, Ports, PromptBuilder, Section, SessionStore,
    Summarizer, SystemClock, ToolDispatcher,
};

use talaria_approval::Approver;
use talaria_plugin_host::ExecServices;
use talaria_providers::ProviderConfig;
use talaria_store::{NewSession, SessionDb, SqliteSessionStore};
use talaria_tools::{
    DispatchOptions, Dispatcher, Profile, ResultBudget, Selection, ToolSource, ToolsetDef, Toolsets,
};

use crate::auxiliary::Auxiliary;
use crate::config::{ApprovalMode, NetworkConfig, ToolsConfig};
use crate::delegate::{ChildKit, DelegateTool, MAX_DEPTH};
use crate::exec_setup::exec_services;
use crate::home::ProfileHome;
use crate::knowledge::Knowledge;
use crate::plugins::{StoreSearch, load_plugins};
use crate::settings::{ModelSettings, Settings};
use crate::store::MemorySessionStore;
use crate::tools::{ExecuteCodeTool, NativeTools, SessionSearchTool, ToolsHandle, builtin};

/// Which surface runs the agent; decides the platform hints in the prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Surface {
    /// An interactive terminal session.
    Terminal,
    /// A one-shot run whose answer goes to stdout (scripts, pipes).
    OneShot,
}

impl Surface {
    /// The surface's name as plugins see it.
    pub fn name(self) -> &'static str {
        match self {
            Surface::Terminal | Surface::OneShot => "cli",
        }
    }

    fn hints(self) -> &'static str {
        match self {
            Surface::Terminal => {
                "You are talking with the user in a terminal. Markdown is rendered; keep answers \
                 readable in a terminal window."
            }
            Surface::OneShot => {
                "You are running non-interactively: your final answer is printed on standard \
                 output and nobody can answer questions. Finish the task in this run and end \
                 with the answer itself."
            }
        }
    }
}

/// Builds a provider for one model's settings.
pub fn provider_for(
    settings: &ModelSettings,
    network: &NetworkConfig,
) -> Result<Arc<dyn ModelProvider>, BuildError> {
    let mut config = ProviderConfig::new(settings.base_url.clone())
        .with_stream(settings.stream)
        .with_idle_timeout(Duration::from_secs(network.idle_timeout_secs));
    config.api_key = settings.api_key.clone();
    let bytes = |set: Option<u64>, default: usize| {
        set.map_or(default, |n| usize::try_from(n).unwrap_or(usize::MAX))
    };
    config.max_reply_bytes = bytes(settings.max_reply_bytes, config.max_reply_bytes);
    config.max_prompt_bytes = bytes(settings.max_prompt_bytes, config.max_prompt_bytes);
    talaria_providers::build(settings.provider, config).map_err(|e| BuildError(e.to_string()))
}

/// The agent could not be assembled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BuildError(pub String);

/// A ready-to-run agent with one session.
pub struct Agent {
    pub(crate) agent_loop: AgentLoop,
    pub(crate) conversation: Conversation,
    pub(crate) db: Option<Arc<SessionDb>>,
    pub(crate) exec: ExecServices,
    pub(crate) notices: Vec<String>,
    pub(crate) tools: Arc<Dispatcher>,
    pub(crate) knowledge: Knowledge,
    pub(crate) primary: ModelSettings,
    pub(crate) surface: Surface,
    pub(crate) plugin_commands: Option<talaria_plugin_host::PluginCommands>,
    pub(crate) plugin_skins: Vec<talaria_plugin_host::PluginSkin>,
    pub(crate) plugin_statuses: Vec<crate::plugins::PluginStatus>,
}

impl Agent {
    /// Builds the agent for a session in `cwd` and freezes the session's prompt.
    /// `approver` answers for the user when a command needs approval.
    /// Plugins that cannot be loaded are left out and listed in [`Agent::notices`].
    pub async fn build(
        settings: &Settings,
        home: &ProfileHome,
        options: AgentOptions,
    ) -> Result<Self, BuildError> {
        let AgentOptions {
            surface,
            cwd,
            approver,
            resume,
        } = options;
        let cwd = cwd.as_path();
        let network = &settings.config.network;
        let routes = std::iter::once(&settings.primary)
            .chain(&settings.fallbacks)
            .map(|model| {
                Ok(ModelRoute {
                    provider: provider_for(model, network)?,
                    model: model.model.clone(),
                })
            })
            .collect::<Result<Vec<_>, BuildError>>()?;
        let approver_can_answer = approver.can_answer();
        let exec = exec_services(
            &settings.config.terminal,
            &settings.config.approvals,
            settings.yolo,
            home,
            approver,
        )?;
        let mut notices = Vec::new();
        // Sessions are kept in SQLite; if that is impossible the session
        // still runs, in memory, and the user is told it will not be kept.
        let db = match SessionDb::open(home.session_db()) {
            Ok(db) => Some(Arc::new(db)),
            Err(error) => {
                if resume.is_some() {
                    return Err(BuildError(format!("cannot resume: {error}")));
                }
                notices.push(format!("this session will not be saved: {error}"));
                None
            }
        };
        let sessions = db
            .clone()
            .map(|db| Arc::new(StoreSearch(db)) as Arc<dyn talaria_plugin_host::SessionSearch>);
        let plugins = load_plugins(home, cwd, surface.name(), exec.clone(), sessions).await;
        notices.extend(plugins.notices);
        let auxiliary = match &settings.auxiliary {
            Some(model) => Some(Arc::new(Auxiliary::new(
                provider_for(model, network)?,
                model.model.clone(),
            ))),
            None => None,
        };
        // Compression summaries: the auxiliary model, else the primary one.
        let summarizer: Arc<dyn Summarizer> = match &auxiliary {
            Some(auxiliary) => auxiliary.clone(),
            // The primary route's provider: no second client for the same endpoint.
            None => match routes.first() {
                Some(primary) => Arc::new(Auxiliary::new(
                    primary.provider.clone(),
                    primary.model.clone(),
                )),
                None => return Err(BuildError("no model configured".into())),
            },
        };
        let knowledge = Knowledge::load(home, cwd);
        notices.extend(knowledge.notices.iter().cloned());
        let mut native = builtin();
        native.extend(knowledge.tools());
        if let Some(db) = &db {
            native.push(Arc::new(SessionSearchTool::new(
                db.clone(),
                auxiliary.clone(),
            )));
        }
        // execute_code calls back into the dispatcher, which is built below.
        let code_tools = ToolsHandle::new();
        // Scripts need the user's approval outside a sandbox or yolo mode.
        let someone_can_approve = !settings.yolo
            && settings.config.approvals.mode == ApprovalMode::Ask
            && approver_can_answer;
        if ExecuteCodeTool::offered(&exec, someone_can_approve) {
            native.push(Arc::new(ExecuteCodeTool::new(
                &exec,
                cwd,
                home.tmp_dir(),
                code_tools.clone(),
            )));
        }
        let delegate = DelegateTool::new();
        let mut sources: Vec<Arc<dyn ToolSource>> = vec![
            Arc::new(NativeTools::new(native)),
            Arc::new(delegate.clone()),
        ];
        if let Some(plugin_tools) = plugins.tools {
            sources.push(Arc::new(plugin_tools));
        }
        let options = dispatch_options(&settings.config.tools, surface, home, cwd);
        let (tools, dispatch_notices) = Dispatcher::new(sources.clone(), options.clone());
        notices.extend(dispatch_notices);
        let tools = Arc::new(tools);
        // Every tool call passes the plugins' hooks: the loop's own, a script's
        // (through the handle) and sub-agents' (through the kit).
        let hooks: Arc<dyn Hooks> = match plugins.hooks {
            Some(hooks) => Arc::new(hooks),
            None => Arc::new(NoHooks),
        };
        code_tools.set(&tools, hooks.clone(), settings.primary.model.clone());
        let (session_id, history) = match (&resume, &db) {
            (Some(id), Some(db)) => {
                let resumed = db
                    .messages_for_resume(id)
                    .map_err(|e| BuildError(format!("cannot resume session {id}: {e}")))?;
                if resumed.repaired > 0 {
                    notices.push(format!(
                        "{} tool call(s) of the last turn never finished; they are marked interrupted",
                        resumed.repaired
                    ));
                }
                (id.clone(), resumed.messages)
            }
            _ => (new_session_id(), Vec::new()),
        };
        let store: Arc<dyn SessionStore> = match &db {
            Some(db) => Arc::new(SqliteSessionStore::new(
                db.clone(),
                NewSession {
                    id: session_id.clone(),
                    title: None,
                    source: surface.name().to_owned(),
                    model: settings.primary.model.clone(),
                    cwd: Some(cwd.display().to_string()),
                    parent_session_id: None,
                },
            )),
            None => Arc::new(MemorySessionStore::default()),
        };
        let persona = std::fs::read_to_string(home.soul_file())
            .ok()
            .filter(|soul| !soul.trim().is_empty())
            .unwrap_or_else(|| DEFAULT_PERSONA.to_owned());
        let mut builder = PromptBuilder::new()
            .section(Section::Persona, persona)
            .section(Section::PlatformHints, surface.hints());
        for (section, text) in knowledge.sections(&tools.visible_tools(), &tools.visible_toolsets())
        {
            builder = builder.section(section, text);
        }
        let prompt = builder
            .section(
                Section::ToolUseGuidance,
                tool_use_guidance(&settings.primary.model),
            )
            .tools(tools.specs())
            .build();
        let mut ports = Ports::new(tools.clone(), store, Arc::new(SystemClock::new()));
        ports.summarizer = Some(summarizer.clone());
        ports.hooks = hooks.clone();
        let budget = settings.budget();
        let loop_config = settings.loop_config();
        let delegation = &settings.config.delegation;
        if !(1..=MAX_DEPTH).contains(&delegation.max_depth) {
            return Err(BuildError(format!(
                "delegation.max_depth must be 1 or {MAX_DEPTH}, not {}",
                delegation.max_depth
            )));
        }
        delegate.provide(ChildKit {
            routes: routes.clone(),
            sources,
            options,
            budget: budget.clone(),
            config: loop_config.clone(),
            summarizer: Some(summarizer),
            hooks,
            db: db.clone(),
            depth: 1,
            max_depth: delegation.max_depth,
            child_iterations: delegation.child_iterations.max(1),
        });
        let agent_loop = AgentLoop::new(routes, ports, budget, loop_config)
            .map_err(|e| BuildError(e.to_string()))?;
        Ok(Self {
            agent_loop,
            conversation: Conversation {
                messages: history,
                ..Conversation::new(session_id, prompt)
            },
            db,
            exec,
            notices,
            tools,
            knowledge,
            primary: settings.primary.clone(),
            surface,
            plugin_commands: plugins.commands,
            plugin_skins: plugins.skins,
            plugin_statuses: plugins.statuses,
        })
    }

    /// Runs one user turn.
    pub async fn run(
        &mut self,
        input: &str,
        events: &dyn EventSink,
        cancel: &CancellationToken,
    ) -> Result<Exit, LoopError> {
        self.agent_loop
            .run_turn(&mut self.conversation, input, events, cancel)
            .await
    }

    /// Compresses the conversation now (`/compact [focus]`).
    pub async fn compact(&mut self, focus: Option<&str>, events: &dyn EventSink) -> Compaction {
        self.agent_loop
            .compact(&mut self.conversation, focus, true, events)
            .await
    }

    /// Ends the session (runs the plugins' `session-end` hooks and indexes the session's
    /// messages for search). Call once, when the conversation is over.
    pub async fn end_session(&mut self) {
        self.agent_loop.end_session(&self.conversation).await;
        if let Some(db) = self.db.clone() {
            // Not indexed now (a lock held past the timeout): the next search or session does it.
            let _ = tokio::task::spawn_blocking(move || db.index_pending()).await;
        }
        let session = &self.conversation.session_id;
        self.exec.processes.end_session(session);
        self.exec.executor.policy().end_session(session);
    }

    /// The loop's cross-turn state (usage, retries, active fallback).
    pub fn state(&self) -> &LoopState {
        self.agent_loop.state()
    }

    /// The session's conversation.
    pub fn conversation(&self) -> &Conversation {
        &self.conversation
    }

    /// What the user should know about the agent's assembly (plugin overrides,
    /// plugins left out and why).
    pub fn notices(&self) -> &[String] {
        &self.notices
    }

    /// A few lines about the session so far (for "resuming…"), when it is stored.
    pub fn recap(&self) -> Option<String> {
        self.db
            .as_ref()
            .and_then(|db| db.recap(&self.conversation.session_id).ok())
    }
}

/// How to build an agent besides its settings.
pub struct AgentOptions {
    /// The surface it serves.
    pub surface: Surface,
    /// Its working directory.
    pub cwd: PathBuf,
    /// Who answers when a command needs approval.
    pub approver: Arc<dyn Approver>,
    /// Continue this stored session instead of starting one.
    pub resume: Option<String>,
}

/// The tool layer's settings for a session on `surface` in `cwd`.
fn dispatch_options(
    config: &ToolsConfig,
    surface: Surface,
    home: &ProfileHome,
    cwd: &Path,
) -> DispatchOptions {
    let mut toolsets = Toolsets::default();
    for (name, def) in &config.toolsets {
        toolsets.define(
            name.clone(),
            ToolsetDef {
                tools: def.tools.clone(),
                includes: def.includes.clone(),
            },
        );
    }
    DispatchOptions {
        toolsets,
        profile: Profile::for_surface(surface.name()),
        selection: Selection {
            enabled: config.enabled.clone(),
            disabled: config.disabled.clone(),
        },
        cwd: cwd.to_path_buf(),
        budget: ResultBudget {
            max_bytes: config.result_max_bytes,
            max_lines: config.result_max_lines,
            turn_bytes: config.turn_max_bytes,
        },
        spill_root: home.sessions_dir(),
        schemas: config.schemas,
    }
}

/// A sortable, unique-enough session id: UTC timestamp plus random suffix.
fn new_session_id() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    format!("{}_{:06x}", now.as_secs(), fastrand::u32(..0x0100_0000))
}
