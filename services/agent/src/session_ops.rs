//! What slash commands read and change on a running agent: usage, title,
//! yolo, the tool and skill lists, undoing the last turn.

use std::collections::BTreeSet;

use talaria_kernel::compress::SUMMARY_PREFIX;
use talaria_kernel::{Role, Usage};
use talaria_plugin_host::{PluginCommandSpec, PluginCommands, PluginSkin};
use talaria_profile::settings::ModelSettings;
use talaria_store::{ListQuery, SessionSummary};

use crate::agent::Agent;
use crate::knowledge::SkillSummary;

/// Tokens and cost of the session so far.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionUsage {
    /// Tokens in, out, and through the provider's cache.
    pub tokens: Usage,
    /// USD, from the configured prices (0 when none are set).
    pub cost_usd: f64,
    /// Context compressions so far.
    pub compressions: u32,
    /// Messages in the conversation.
    pub messages: usize,
}

/// One tool the model can call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolSummary {
    /// Its name.
    pub name: String,
    /// The first line of its description.
    pub summary: String,
    /// The toolset it belongs to.
    pub toolset: String,
}

/// What `/undo` removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Undone {
    /// The user message that started the removed turn.
    pub prompt: String,
    /// Messages removed (the prompt, replies and tool results).
    pub removed: usize,
}

/// A session operation failed (the conversation is unchanged).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct OpsError(pub String);

impl Agent {
    /// The session's id.
    pub fn session_id(&self) -> &str {
        &self.conversation.session_id
    }

    /// The primary model's settings.
    pub fn model(&self) -> &ModelSettings {
        &self.primary
    }

    /// Tokens and cost so far.
    pub fn usage(&self) -> SessionUsage {
        let state = self.agent_loop.state();
        SessionUsage {
            tokens: state.usage,
            cost_usd: state.cost_usd,
            compressions: state.compressions,
            messages: self.conversation.messages.len(),
        }
    }

    /// Removes the last user turn (the message and everything after it) from
    /// the conversation and the store. `None` when there is no turn to undo;
    /// a compression summary is never undone.
    pub fn undo(&mut self) -> Result<Option<Undone>, OpsError> {
        let messages = &self.conversation.messages;
        let Some(start) = messages.iter().rposition(|m| m.role == Role::User) else {
            return Ok(None);
        };
        if messages[start].content.starts_with(SUMMARY_PREFIX) {
            return Ok(None);
        }
        if let Some(db) = &self.db {
            let keep = u64::try_from(start).unwrap_or(u64::MAX);
            db.truncate(&self.conversation.session_id, keep)
                .map_err(|e| OpsError(format!("cannot undo: {e}")))?;
        }
        let removed = self.conversation.messages.split_off(start);
        Ok(Some(Undone {
            prompt: removed
                .first()
                .map(|m| m.content.clone())
                .unwrap_or_default(),
            removed: removed.len(),
        }))
    }

    /// Whom the session belongs to.
    pub fn principal(&self) -> &talaria_store::Principal {
        &self.principal
    }

    /// The session's stored title.
    pub fn title(&self) -> Option<String> {
        let db = self.db.as_ref()?;
        db.session(&self.conversation.session_id)
            .ok()
            .flatten()
            .and_then(|row| row.title)
    }

    /// Sets the session's title (stored; shown in `talaria session list`).
    pub fn set_title(&self, title: &str) -> Result<(), OpsError> {
        let db = self
            .db
            .as_ref()
            .ok_or_else(|| OpsError("this session is not being saved".into()))?;
        let session = &self.conversation.session_id;
        // A session is stored with its first message; title it anyway.
        db.ensure_session(&talaria_store::NewSession {
            id: session.clone(),
            title: None,
            source: self.surface.name().to_owned(),
            model: self.primary.model.clone(),
            cwd: Some(self.tools.cwd().display().to_string()),
            parent_session_id: None,
            principal: self.principal.clone(),
        })
        .and_then(|_| db.set_title(session, Some(title)))
        .map_err(|e| OpsError(format!("cannot set the title: {e}")))
    }

    /// Whether dangerous commands run without asking.
    pub fn yolo(&self) -> bool {
        self.exec.executor.policy().yolo()
    }

    /// Turns yolo mode on or off for the rest of the session (hardline
    /// commands stay blocked). The prompt does not change.
    pub fn set_yolo(&self, on: bool) {
        self.exec.executor.policy().set_yolo(on);
    }

    /// The tools the model can call, by name.
    pub fn tools(&self) -> Vec<ToolSummary> {
        let mut tools: Vec<ToolSummary> = talaria_kernel::ToolDispatcher::specs(&*self.tools)
            .into_iter()
            .map(|spec| ToolSummary {
                toolset: self.tools.toolset_of(&spec.name).unwrap_or("").to_owned(),
                summary: spec.description.lines().next().unwrap_or("").to_owned(),
                name: spec.name,
            })
            .collect();
        tools.sort_by(|a, b| a.name.cmp(&b.name));
        tools
    }

    /// The tools and the toolsets the model can call in this session.
    pub fn enabled_tools(&self) -> (BTreeSet<String>, BTreeSet<String>) {
        (self.tools.visible_tools(), self.tools.visible_toolsets())
    }

    /// The skills offered in this session.
    pub fn skills(&self) -> Vec<SkillSummary> {
        self.knowledge
            .skills(&self.tools.visible_tools(), &self.tools.visible_toolsets())
    }

    /// The user message that runs skill `name` on `request` (`/<skill> args`):
    /// the skill's instructions are loaded now, not before (progressive disclosure).
    pub fn skill_prompt(&self, name: &str, request: &str) -> Result<String, OpsError> {
        if !self.skills().iter().any(|skill| skill.name == name) {
            return Err(OpsError(format!("no skill named '{name}' here")));
        }
        let body = self.knowledge.skill_body(name).map_err(OpsError)?;
        let request = if request.trim().is_empty() {
            "(no further instructions: apply the skill to the current context)"
        } else {
            request.trim()
        };
        Ok(format!(
            "Use the skill \"{name}\" for this request. Its instructions:\n\n\
             <skill name=\"{name}\">\n{}\n</skill>\n\nRequest: {request}",
            body.trim()
        ))
    }

    /// The slash commands the session's plugins provide.
    pub fn plugin_commands(&self) -> Vec<PluginCommandSpec> {
        self.plugin_commands
            .as_ref()
            .map(PluginCommands::specs)
            .unwrap_or_default()
    }

    /// The skins the session's plugins provide (from their skin world or
    /// their package's `skins/` directory).
    pub fn plugin_skins(&self) -> &[PluginSkin] {
        &self.plugin_skins
    }

    /// Every plugin found for the session, loaded or not, with what became
    /// of each kind it declares (loaded, loaded but not used yet,
    /// unsupported, not loaded; with the reason).
    pub fn plugin_statuses(&self) -> &[crate::plugins::PluginStatus] {
        &self.plugin_statuses
    }

    /// Runs a plugin's slash command (by name or alias); the text is shown
    /// to the user. A failing or crashing command is an error, never a crash.
    pub async fn run_plugin_command(&self, name: &str, args: &str) -> Result<String, OpsError> {
        let commands = self
            .plugin_commands
            .as_ref()
            .ok_or_else(|| OpsError(format!("no plugin provides /{name} in this session")))?;
        let session = talaria_kernel::HookSession {
            session_id: &self.conversation.session_id,
            model: &self.primary.model,
        };
        commands
            .run(name, args, session)
            .await
            .map_err(|e| OpsError(e.to_string()))
    }

    /// Recent stored sessions this session's principal may see, most recently active first.
    pub fn recent_sessions(&self, limit: usize) -> Result<Vec<SessionSummary>, OpsError> {
        let db = self
            .db
            .as_ref()
            .ok_or_else(|| OpsError("sessions are not being saved".into()))?;
        db.list(&ListQuery {
            limit,
            viewer: self.principal.clone(),
            ..ListQuery::default()
        })
        .map_err(|e| OpsError(e.to_string()))
    }

    /// The full id of the stored session a prefix names, among those this session's
    /// principal may see.
    pub fn resolve_session(&self, prefix: &str) -> Result<String, OpsError> {
        let db = self
            .db
            .as_ref()
            .ok_or_else(|| OpsError("sessions are not being saved".into()))?;
        db.resolve_id(prefix, &self.principal)
            .map_err(|e| OpsError(e.to_string()))
    }
}
