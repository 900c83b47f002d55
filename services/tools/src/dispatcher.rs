//! The kernel's tool port over every tool source: only the selected tools are
//! listed, calls run as the scheduler plans them, results come back in call
//! order and within budget.

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use talaria_kernel::{
    CancellationToken, ToolContext, ToolDispatcher, ToolResult, ToolSpec, ValidatedCall,
};

use crate::budget::{ResultBudget, spill_dir};
use crate::lazy::{self, SchemaMode};
use crate::paths::normalize_path;
use crate::scheduler::{MAX_WORKERS, PlannedCall, plan};
use crate::source::{ToolEntry, ToolSource};
use crate::toolsets::{Profile, Selection, Toolsets};

/// Everything a dispatcher is built from besides its sources.
#[derive(Debug, Clone)]
pub struct DispatchOptions {
    /// Which toolsets exist.
    pub toolsets: Toolsets,
    /// The surface's profile.
    pub profile: Profile,
    /// The user's choice.
    pub selection: Selection,
    /// The working directory path arguments are relative to.
    pub cwd: PathBuf,
    /// Result size limits.
    pub budget: ResultBudget,
    /// Where spilled results go: `<root>/<session id>/tool-output/`.
    pub spill_root: PathBuf,
    /// Full schemas, or a compact index with `tool_schema`.
    pub schemas: SchemaMode,
    /// Redact secrets in results (before they are spilled, stored or shown to the model), and
    /// refuse calls of tools that change things whose arguments hold a redaction marker.
    pub redact_secrets: bool,
}

struct Routed {
    source: usize,
    entry: ToolEntry,
}

/// Routes each call to its source; see the crate docs.
pub struct Dispatcher {
    sources: Vec<Arc<dyn ToolSource>>,
    tools: HashMap<String, Routed>,
    specs: Vec<ToolSpec>,
    /// The full specs when `specs` is the lazy index; empty otherwise.
    full_specs: Vec<ToolSpec>,
    cwd: PathBuf,
    budget: ResultBudget,
    spill_root: PathBuf,
    redact_secrets: bool,
}

impl std::fmt::Debug for Dispatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dispatcher")
            .field(
                "tools",
                &self.specs.iter().map(|s| &s.name).collect::<Vec<_>>(),
            )
            .field("cwd", &self.cwd)
            .finish_non_exhaustive()
    }
}

impl Dispatcher {
    /// A dispatcher over `sources` (earlier sources win a name clash). Returns
    /// what the user should know: shadowed tools, unknown toolset names.
    pub fn new(sources: Vec<Arc<dyn ToolSource>>, options: DispatchOptions) -> (Self, Vec<String>) {
        let mut notices = Vec::new();
        let mut all: Vec<(usize, ToolEntry)> = Vec::new();
        for (index, source) in sources.iter().enumerate() {
            for entry in source.tools() {
                if all.iter().any(|(_, e)| e.spec.name == entry.spec.name) {
                    notices.push(format!(
                        "tool '{}' is provided twice; the first provider keeps it",
                        entry.spec.name
                    ));
                    continue;
                }
                all.push((index, entry));
            }
        }
        let entries: Vec<ToolEntry> = all.iter().map(|(_, e)| e.clone()).collect();
        let (visible, selection_notices) =
            options
                .selection
                .visible(&options.toolsets, &options.profile, &entries);
        notices.extend(selection_notices);
        let mut tools = HashMap::new();
        let mut specs = Vec::new();
        for (source, entry) in all {
            if visible.contains(&entry.spec.name) {
                specs.push(entry.spec.clone());
                tools.insert(entry.spec.name.clone(), Routed { source, entry });
            }
        }
        let cwd = options.cwd.canonicalize().unwrap_or(options.cwd);
        let (specs, full_specs) = if options.schemas.is_lazy(specs.len()) {
            let mut index: Vec<ToolSpec> = specs.iter().map(lazy::compact).collect();
            index.push(lazy::schema_tool());
            (index, specs)
        } else {
            (specs, Vec::new())
        };
        (
            Self {
                sources,
                tools,
                specs,
                full_specs,
                cwd,
                budget: options.budget,
                spill_root: options.spill_root,
                redact_secrets: options.redact_secrets,
            },
            notices,
        )
    }

    /// The scheduling facts of one call.
    fn planned(&self, call: &ValidatedCall) -> PlannedCall {
        let Some(routed) = self.tools.get(&call.call.name) else {
            return PlannedCall::default();
        };
        let flags = &routed.entry.flags;
        let path = flags.path_argument.as_ref().map(|argument| {
            // A path-scoped tool without its path works on the working directory.
            match call.arguments.get(argument).and_then(|v| v.as_str()) {
                Some(path) => normalize_path(&self.cwd, path),
                None => self.cwd.clone(),
            }
        });
        PlannedCall {
            never_parallel: flags.never_parallel,
            read_only: flags.read_only,
            path,
        }
    }

    async fn run_one(
        &self,
        call: &ValidatedCall,
        context: &ToolContext,
        cancel: &CancellationToken,
    ) -> ToolResult {
        let lazy = !self.full_specs.is_empty();
        if let Some(why) = self.writes_a_marker(call) {
            return ToolResult::error(&call.call, why);
        }
        match self.tools.get(&call.call.name) {
            Some(_) if lazy && let Err(why) = lazy::check(&call.call, &self.full_specs) => {
                ToolResult::error(&call.call, why)
            }
            Some(routed) => match self.sources.get(routed.source) {
                Some(source) => source.call(call, context, cancel).await,
                None => ToolResult::error(&call.call, "the tool's provider is gone"),
            },
            None if lazy && call.call.name == lazy::TOOL_SCHEMA => {
                lazy::answer(call, &self.full_specs)
            }
            None => ToolResult::error(
                &call.call,
                format!("tool '{}' is not available here", call.call.name),
            ),
        }
    }

    /// Why a call must not run: it would write a redaction marker (a secret the model never saw)
    /// with a tool that changes things, e.g. back into the `.env` it came from.
    fn writes_a_marker(&self, call: &ValidatedCall) -> Option<String> {
        let routed = self.tools.get(&call.call.name)?;
        (self.redact_secrets
            && !routed.entry.flags.read_only
            && talaria_redact::contains_marker(&call.call.arguments))
        .then(|| {
            format!(
                "refused: the arguments hold a redaction marker ({}), which stands for a secret \
                 you were not shown; writing it would replace the secret. Leave the secret's \
                 line untouched (edit around it) or ask the user to change it.",
                talaria_redact::MARKER
            )
        })
    }

    /// The directory spilled results of `session_id` go to.
    pub fn spill_dir(&self, session_id: &str) -> PathBuf {
        spill_dir(&self.spill_root, session_id)
    }

    /// The working directory.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// The names of the tools the model sees.
    pub fn visible_tools(&self) -> BTreeSet<String> {
        self.tools.keys().cloned().collect()
    }

    /// The toolset a visible tool belongs to.
    pub fn toolset_of(&self, tool: &str) -> Option<&str> {
        self.tools
            .get(tool)
            .map(|routed| routed.entry.toolset.as_str())
    }

    /// The toolsets at least one visible tool belongs to.
    pub fn visible_toolsets(&self) -> BTreeSet<String> {
        self.tools
            .values()
            .map(|routed| routed.entry.toolset.clone())
            .collect()
    }
}

#[async_trait]
impl ToolDispatcher for Dispatcher {
    fn specs(&self) -> Vec<ToolSpec> {
        self.specs.clone()
    }

    async fn execute(
        &self,
        calls: &[ValidatedCall],
        context: &ToolContext,
        cancel: &CancellationToken,
    ) -> Vec<ToolResult> {
        let planned: Vec<PlannedCall> = calls.iter().map(|c| self.planned(c)).collect();
        let mut results = Vec::with_capacity(calls.len());
        for batch in plan(&planned) {
            if cancel.is_cancelled() {
                break;
            }
            // At most MAX_WORKERS at once; `join_all` keeps call order.
            let workers = tokio::sync::Semaphore::new(MAX_WORKERS);
            let runs = calls[batch].iter().map(|call| {
                let workers = &workers;
                async move {
                    let _permit = workers.acquire().await;
                    self.run_one(call, context, cancel).await
                }
            });
            results.extend(futures_util::future::join_all(runs).await);
        }
        if self.redact_secrets {
            for result in &mut results {
                if let Cow::Owned(redacted) = talaria_redact::redact(&result.content) {
                    result.content = redacted;
                }
            }
        }
        self.budget
            .apply(&mut results, &self.spill_dir(&context.session_id));
        results
    }
}
