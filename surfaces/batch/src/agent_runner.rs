//! The real [`ItemRunner`]: each item is a fresh session of an agent built
//! from the profile (surface `batch`: nobody to ask, approvals denied), on
//! the worker's thread with a runtime of its own, as the gateway's turns
//! run. Its toolsets, model and system text come from the item.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use talaria_agent::{Agent, AgentOptions, Surface};
use talaria_approval::DenyAll;
use talaria_kernel::{Exit, NoEvents, Role};
use talaria_profile::{Overrides, ProfileHome, Settings};
use tokio_util::sync::CancellationToken;

use crate::pool::ItemRunner;
use crate::prompts::BatchItem;
use crate::trajectory::{ExitReason, Tokens, Trajectory, sharegpt, tools_json};

/// How long past its time limit an item may take to give its summary
/// before it is stopped.
const SUMMARY_GRACE: Duration = Duration::from_secs(60);

/// Limits of one item.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ItemLimits {
    /// Model calls (default: `budget.max_iterations`).
    pub max_iterations: Option<u32>,
    /// Time: at the limit the model is asked for a summary; a minute later
    /// the item is stopped.
    pub timeout: Option<Duration>,
}

/// Runs items with agents built from a profile.
pub struct AgentItemRunner {
    home: ProfileHome,
    cwd: PathBuf,
    limits: ItemLimits,
    /// The profile's settings with the batch's limits, read once: the
    /// batch is one run, and every item starts from the same settings.
    settings: Settings,
}

impl AgentItemRunner {
    /// Items of `home`'s profile (with `overrides`), working in `cwd`; `Err`
    /// when the profile's settings do not resolve (every item would fail).
    pub fn new(
        home: ProfileHome,
        overrides: &Overrides,
        cwd: PathBuf,
        limits: ItemLimits,
    ) -> Result<Self, String> {
        let (env, config) = talaria_profile::load_profile(&home).map_err(|e| e.to_string())?;
        let mut settings =
            Settings::resolve(overrides, &env, config, &home).map_err(|e| e.to_string())?;
        if let Some(max) = limits.max_iterations {
            settings.config.budget.max_iterations = max;
        }
        if let Some(timeout) = limits.timeout {
            settings.config.budget.max_seconds = Some(timeout.as_secs().max(1));
        }
        Ok(Self {
            home,
            cwd,
            limits,
            settings,
        })
    }

    /// The settings with the item's model and toolsets.
    fn settings_for(&self, item: &BatchItem) -> Settings {
        let mut settings = self.settings.clone();
        if let Some(model) = &item.model {
            settings.primary.model.clone_from(model);
        }
        if let Some(toolsets) = &item.toolsets {
            settings.config.tools.enabled = Some(toolsets.clone());
        }
        settings
    }

    async fn run_item(
        &self,
        item: &BatchItem,
        cancel: &CancellationToken,
        started: Instant,
    ) -> Option<Trajectory> {
        let failed = |message: String, model: &str| Some(error_line(item, model, message, started));
        let settings = self.settings_for(item);
        let model = settings.primary.model.clone();
        let options = AgentOptions {
            surface: Surface::Batch,
            cwd: self.cwd.clone(),
            approver: Arc::new(DenyAll),
            resume: None,
            editor: None,
            messenger: None,
            clarifier: None,
            browsers: None,
            chat_user: None,
            principal: talaria_agent::Principal::owner(),
        };
        let mut agent = match Agent::build(&settings, &self.home, options).await {
            Ok(agent) => agent,
            Err(error) => return failed(format!("cannot start the agent: {error}"), &model),
        };
        if let Some(system) = &item.system {
            agent.layer_system(system);
        }
        let stop = cancel.child_token();
        let run = agent.run(&item.prompt, &NoEvents, &stop);
        let outcome = match self.limits.timeout {
            Some(limit) => tokio::time::timeout(limit + SUMMARY_GRACE, run).await,
            None => Ok(run.await),
        };
        let (completed, exit, error, answer) = match outcome {
            Ok(Ok(Exit::Final(text))) => (true, ExitReason::Final, None, text),
            Ok(Ok(Exit::BudgetExhausted { exhausted, summary })) => (
                false,
                ExitReason::Budget,
                Some(format!("the {exhausted} ran out")),
                summary,
            ),
            // The batch is stopping: the item runs again on resume.
            Ok(Ok(Exit::Interrupted)) => {
                agent.end_session().await;
                return None;
            }
            Ok(Err(error)) => (
                false,
                ExitReason::Error,
                Some(redact(&error.to_string())),
                String::new(),
            ),
            Err(_) => {
                stop.cancel();
                let limit = self.limits.timeout.unwrap_or_default() + SUMMARY_GRACE;
                let why = format!("it ran longer than {} s", limit.as_secs());
                (false, ExitReason::Timeout, Some(why), String::new())
            }
        };
        agent.end_session().await;
        let conversation = agent.conversation();
        let usage = agent.usage();
        let tool_calls = conversation
            .messages
            .iter()
            .filter(|m| m.role == Role::Tool)
            .count();
        Some(Trajectory {
            id: item.id.clone(),
            completed,
            exit,
            error,
            answer,
            conversations: sharegpt(conversation.prompt.system(), &conversation.messages),
            tools: tools_json(conversation.prompt.tools()),
            model,
            tokens: Tokens::from(usage.tokens),
            cost_usd: usage.cost_usd,
            api_calls: agent.state().iterations,
            tool_calls: u32::try_from(tool_calls).unwrap_or(u32::MAX),
            duration_ms: elapsed_ms(started),
            session_id: agent.session_id().to_owned(),
            source: "talaria".to_owned(),
        })
    }
}

impl ItemRunner for AgentItemRunner {
    fn run(&self, item: &BatchItem, cancel: &CancellationToken) -> Option<Trajectory> {
        let started = Instant::now();
        match tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            Ok(runtime) => runtime.block_on(self.run_item(item, cancel, started)),
            Err(error) => Some(error_line(
                item,
                "",
                format!("cannot start a runtime: {error}"),
                started,
            )),
        }
    }
}

/// The line of an item that failed before its conversation began.
fn error_line(item: &BatchItem, model: &str, message: String, started: Instant) -> Trajectory {
    Trajectory {
        id: item.id.clone(),
        completed: false,
        exit: ExitReason::Error,
        error: Some(redact(&message)),
        answer: String::new(),
        conversations: Vec::new(),
        tools: "[]".to_owned(),
        model: model.to_owned(),
        tokens: Tokens::default(),
        cost_usd: 0.0,
        api_calls: 0,
        tool_calls: 0,
        duration_ms: elapsed_ms(started),
        session_id: String::new(),
        source: "talaria".to_owned(),
    }
}

fn elapsed_ms(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// `text` with credentials replaced (errors may quote a request or a key).
fn redact(text: &str) -> String {
    talaria_redact::redact(text).into_owned()
}
