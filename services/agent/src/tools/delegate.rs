//! `delegate_task`: runs child agents on sub-tasks. Each child has its own
//! conversation (the task in, its final answer out), its own iteration
//! budget drawn from the parent's (so the whole tree stays bounded), the
//! `child` tool profile (no delegation, clarify, memory, send_message or
//! execute_code), narrowed to the `toolsets` a task asks for, its `role` in its
//! own prompt, a stored session whose parent is the caller's, and the
//! caller's cancellation: interrupting the parent interrupts its children.
//! Children's tool calls pass the session's tool hooks, as the parent's do.
//! Tasks of one call run concurrently, at most [`MAX_CHILDREN`] at a time.

use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use serde_json::{Value, json};
use talaria_kernel::{
    AgentLoop, Budget, CancellationToken, Conversation, Exit, Hooks, LoopConfig, ModelRoute,
    NoEvents, Ports, PromptBuilder, Section, SessionStore, Summarizer, SystemClock, ToolContext,
    ToolDispatcher, ToolResult, ToolSpec, ValidatedCall,
};
use talaria_store::{NewSession, SessionDb, SqliteSessionStore};
use talaria_tools::{
    DispatchOptions, Dispatcher, Profile, ToolEntry, ToolFlags, ToolHooks, ToolSource,
};

use crate::store::MemorySessionStore;

/// The tool's name.
const DELEGATE_TASK: &str = "delegate_task";

/// Children running at once.
pub const MAX_CHILDREN: usize = 3;
/// The deepest nesting allowed.
pub const MAX_DEPTH: u32 = 2;
/// Most tasks one call may ask for.
const MAX_TASKS: usize = 10;

const CHILD_PERSONA: &str = "You are a sub-agent working on one task for a parent agent. Work \
autonomously with the tools you have; nobody can answer questions. When done, reply with a \
concise report: what you did, what you found, and anything left open. That report is all the \
parent sees.";

/// Everything a child is built from; set once the parent agent exists.
pub struct ChildKit {
    /// The parent's models.
    pub routes: Vec<ModelRoute>,
    /// The parent's tool sources but `delegate_task` (the child profile filters them).
    pub sources: Vec<Arc<dyn ToolSource>>,
    /// The parent's dispatch settings; the profile is replaced by `child`.
    pub options: DispatchOptions,
    /// The parent's budget; children draw from it.
    pub budget: Budget,
    /// The parent's loop settings.
    pub config: LoopConfig,
    /// For compression in children.
    pub summarizer: Option<Arc<dyn Summarizer>>,
    /// The session's hooks: children's tool calls pass their tool hooks
    /// (a plugin's veto holds at every depth).
    pub hooks: Arc<dyn Hooks>,
    /// Where children's sessions are kept.
    pub db: Option<Arc<SessionDb>>,
    /// Whom the children's sessions belong to: the parent's principal.
    pub principal: talaria_store::Principal,
    /// The nesting level of the children this kit builds (1: the parent is the root).
    pub depth: u32,
    /// The deepest level allowed (1 or 2).
    pub max_depth: u32,
    /// Steps each child may take.
    pub child_iterations: u32,
    /// The session's memory provider, told of each delegation (children
    /// learn only when it asks).
    pub memory: Option<crate::external_memory::ChildMemory>,
}

/// The `delegate_task` tool source; its kit is filled in after the parent's
/// dispatcher exists (the tool is one of its sources).
#[derive(Default, Clone)]
pub struct DelegateTool {
    kit: Arc<OnceLock<ChildKit>>,
}

impl DelegateTool {
    /// A tool without its kit yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Provides what children are built from (once; later calls are ignored). The kit keeps
    /// every source but `delegate_task`: holding this tool would make the kit own itself, a
    /// reference cycle that kept the session database (and its write-ahead log) open past the
    /// end of the process. A child that may delegate gets a delegate tool of its own.
    pub fn provide(&self, mut kit: ChildKit) {
        kit.sources
            .retain(|source| !source.tools().iter().any(|t| t.spec.name == DELEGATE_TASK));
        let _ = self.kit.set(kit);
    }
}

/// One task of a call.
struct Task {
    goal: String,
    context: Option<String>,
    /// Only these toolsets (within what the parent's children may have).
    toolsets: Option<Vec<String>>,
    /// Who the sub-agent is to be, in its own prompt.
    role: Option<String>,
}

fn tasks_of(arguments: &Value) -> Result<Vec<Task>, String> {
    let strings = |v: &Value| -> Option<Vec<String>> {
        v.as_array().map(|items| {
            items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
    };
    // A task's own `toolsets` and `role` win over the call's.
    let one = |v: &Value| -> Result<Task, String> {
        let goal = v["goal"]
            .as_str()
            .filter(|g| !g.trim().is_empty())
            .ok_or("every task needs a non-empty goal")?;
        Ok(Task {
            goal: goal.to_owned(),
            context: v["context"].as_str().map(str::to_owned),
            toolsets: strings(&v["toolsets"]).or_else(|| strings(&arguments["toolsets"])),
            role: v["role"]
                .as_str()
                .or_else(|| arguments["role"].as_str())
                .filter(|role| !role.trim().is_empty())
                .map(str::to_owned),
        })
    };
    let tasks = match arguments.get("tasks").and_then(Value::as_array) {
        Some(list) if !list.is_empty() => list.iter().map(one).collect::<Result<Vec<_>, _>>()?,
        _ => vec![one(arguments).map_err(|_| "give a goal, or tasks: [{goal, context}]")?],
    };
    if tasks.len() > MAX_TASKS {
        return Err(format!("at most {MAX_TASKS} tasks per call"));
    }
    Ok(tasks)
}

impl ChildKit {
    async fn run_child(
        &self,
        parent_session: &str,
        index: usize,
        task: &Task,
        cancel: &CancellationToken,
    ) -> Value {
        let child_id = format!("{parent_session}.child{}", index + 1);
        let budget = self.budget.child(self.child_iterations);
        let mut profile = Profile::for_surface("child");
        // The kit holds no delegate tool (see `DelegateTool::provide`); a child that may
        // delegate gets one of its own, one level deeper.
        let mut sources = self.sources.clone();
        let grandchildren = (self.depth < self.max_depth).then(DelegateTool::new);
        if let Some(delegate) = &grandchildren {
            profile.excluded.retain(|t| t != "delegation");
            profile.excluded_tools.retain(|t| t != DELEGATE_TASK);
            sources.push(Arc::new(delegate.clone()));
        }
        // Asked-for toolsets narrow what the child profile allows; they never widen it.
        let mut selection = self.options.selection.clone();
        if let Some(requested) = &task.toolsets {
            selection.enabled = Some(match &selection.enabled {
                Some(allowed) => requested
                    .iter()
                    .filter(|t| allowed.contains(t))
                    .cloned()
                    .collect(),
                None => requested.clone(),
            });
        }
        let (dispatcher, notices) = Dispatcher::new(
            sources.clone(),
            DispatchOptions {
                profile,
                selection,
                ..self.options.clone()
            },
        );
        let persona = match &task.role {
            Some(role) => format!("{CHILD_PERSONA}\n\nYour role: {role}"),
            None => CHILD_PERSONA.to_owned(),
        };
        let prompt = PromptBuilder::new()
            .section(Section::Persona, &persona)
            .tools(dispatcher.specs())
            .build();
        let store: Arc<dyn SessionStore> = match &self.db {
            Some(db) => Arc::new(SqliteSessionStore::new(
                db.clone(),
                NewSession {
                    id: child_id.clone(),
                    title: Some(task.goal.chars().take(80).collect()),
                    source: "child".into(),
                    model: self
                        .routes
                        .first()
                        .map(|r| r.model.clone())
                        .unwrap_or_default(),
                    cwd: Some(self.options.cwd.display().to_string()),
                    parent_session_id: Some(parent_session.to_owned()),
                    principal: self.principal.clone(),
                },
            )),
            None => Arc::new(MemorySessionStore::default()),
        };
        if let Some(delegate) = grandchildren {
            delegate.provide(ChildKit {
                routes: self.routes.clone(),
                sources,
                options: self.options.clone(),
                budget: budget.clone(),
                config: self.config.clone(),
                summarizer: self.summarizer.clone(),
                hooks: self.hooks.clone(),
                db: self.db.clone(),
                principal: self.principal.clone(),
                depth: self.depth + 1,
                max_depth: self.max_depth,
                child_iterations: self.child_iterations,
                memory: self.memory.clone(),
            });
        }
        let mut ports = Ports::new(Arc::new(dispatcher), store, Arc::new(SystemClock::new()));
        ports.summarizer = self.summarizer.clone();
        ports.hooks = Arc::new(ToolHooks(self.hooks.clone()));
        let child_memory = match &self.memory {
            Some(memory) => memory.open_child(&child_id).await.map(Arc::new),
            None => None,
        };
        ports.memory = child_memory
            .clone()
            .map(|m| m as Arc<dyn talaria_kernel::ExternalMemory>);
        let mut child = match AgentLoop::new(
            self.routes.clone(),
            ports,
            budget,
            self.config.clone(),
        ) {
            Ok(child) => child,
            Err(error) => {
                return json!({ "goal": task.goal, "status": "failed", "error": error.to_string() });
            }
        };
        let mut conversation = Conversation::new(child_id.clone(), prompt);
        let input = match &task.context {
            Some(context) => format!("{}\n\nContext from the parent:\n{context}", task.goal),
            None => task.goal.clone(),
        };
        let outcome = child
            .run_turn(&mut conversation, input, &NoEvents, &cancel.child_token())
            .await;
        child.end_session(&conversation).await;
        if let Some(memory) = &child_memory {
            memory.end(&conversation.messages).await;
        }
        if let (
            Some(memory),
            Ok(
                Exit::Final(report)
                | Exit::BudgetExhausted {
                    summary: report, ..
                },
            ),
        ) = (&self.memory, &outcome)
        {
            memory.parent.delegated(&task.goal, report, &child_id);
        }
        let iterations = child.state().iterations;
        let mut result = match outcome {
            Ok(Exit::Final(report)) => json!({
                "goal": task.goal, "status": "completed", "report": report,
                "session_id": child_id, "iterations": iterations,
            }),
            Ok(Exit::BudgetExhausted { exhausted, summary }) => json!({
                "goal": task.goal, "status": "budget_exhausted", "exhausted": exhausted.to_string(),
                "report": summary, "session_id": child_id, "iterations": iterations,
            }),
            Ok(Exit::Interrupted) => json!({
                "goal": task.goal, "status": "interrupted", "session_id": child_id,
            }),
            Err(error) => json!({
                "goal": task.goal, "status": "failed", "error": error.to_string(), "session_id": child_id,
            }),
        };
        if !notices.is_empty() {
            result["notes"] = json!(notices);
        }
        result
    }
}

#[async_trait]
impl ToolSource for DelegateTool {
    fn tools(&self) -> Vec<ToolEntry> {
        vec![ToolEntry {
            spec: ToolSpec {
                name: DELEGATE_TASK.into(),
                description: format!(
                    "Hand self-contained sub-tasks to sub-agents that work in their own context and \
                     report back. Use it for independent pieces of work (research, a module to \
                     change, a check to run) to keep your own context small. Give `goal` (and \
                     `context`: everything the sub-agent needs, it sees nothing else) or `tasks`: \
                     a list of {{goal, context}} run concurrently ({MAX_CHILDREN} at a time). Each \
                     sub-agent has its own step budget and cannot ask the user anything."
                ),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "goal": {"type": "string", "description": "What the sub-agent must achieve."},
                        "context": {"type": "string", "description": "Everything it needs to know."},
                        "tasks": {
                            "type": "array",
                            "description": "Several independent tasks, run concurrently.",
                            "items": {
                                "type": "object",
                                "properties": {
                                    "goal": {"type": "string"},
                                    "context": {"type": "string"},
                                    "toolsets": {"type": "array", "items": {"type": "string"}},
                                    "role": {"type": "string"}
                                },
                                "required": ["goal"]
                            }
                        },
                        "toolsets": {"type": "array", "items": {"type": "string"}, "description": "Only these toolsets for the sub-agents (never more than a sub-agent may have; a task's own list wins)."},
                        "role": {"type": "string", "description": "Who the sub-agent is to be (e.g. 'a careful reviewer'); a task's own role wins."},
                        "background": {"type": "boolean", "description": "Not supported: tasks always finish before the call returns."}
                    }
                }),
                refunds_iteration: false,
            },
            flags: ToolFlags::default(),
            toolset: "delegation".into(),
        }]
    }

    async fn call(
        &self,
        call: &ValidatedCall,
        context: &ToolContext,
        cancel: &CancellationToken,
    ) -> ToolResult {
        let Some(kit) = self.kit.get() else {
            return ToolResult::error(&call.call, "delegation is not available in this session");
        };
        let tasks = match tasks_of(&call.arguments) {
            Ok(tasks) => tasks,
            Err(message) => return ToolResult::error(&call.call, message),
        };
        let slots = tokio::sync::Semaphore::new(MAX_CHILDREN);
        let runs = tasks.iter().enumerate().map(|(i, task)| {
            let slots = &slots;
            async move {
                let _slot = slots.acquire().await;
                kit.run_child(&context.session_id, i, task, cancel).await
            }
        });
        let results = futures_util::future::join_all(runs).await;
        let all_completed = results.iter().all(|r| r["status"] == "completed");
        let content = json!({ "results": results }).to_string();
        if all_completed {
            ToolResult::ok(&call.call, content)
        } else {
            // Still readable by the model; flagged so it looks at what failed.
            ToolResult {
                is_error: !results.iter().any(|r| r["status"] == "completed"),
                ..ToolResult::ok(&call.call, content)
            }
        }
    }
}
