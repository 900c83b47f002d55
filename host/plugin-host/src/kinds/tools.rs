//! Running tool calls: one fresh instance per call (from the plugin's
//! `InstancePre`), per-call deadline and memory limit, failure
//! classification, and the kernel's `ToolDispatcher` over all tool plugins.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use async_trait::async_trait;
use talaria_kernel::{ToolContext, ToolResult, ToolSpec, ValidatedCall};
use talaria_tools::{ToolEntry, ToolFlags, ToolSource};
use tokio_util::sync::CancellationToken;

use super::placed::{Placed, names};
use super::tool_choice::{ToolClash, ToolProviders, choose};
use super::tool_specs::convert_specs;
use super::{Kind, Slot, Slots};
use crate::bindings::{CallContext, ToolError, ToolPlugin, ToolPluginPre, ToolSpec as WitToolSpec};
use crate::error::{CallError, HostError, LoadError};
use crate::failures::{DISABLE_AFTER_FAILURES, Failures};
use crate::guard::CallPaths;
use crate::invoke::{CallFor, Invocation, Prepared, classify, once_at_load, prepare, race};
use crate::loaded::{LoadedPlugin, ToolInfo};
use crate::sandbox::Sandbox;
use crate::state::{PluginShared, PluginState};
use talaria_plugin_manifest::PluginKind;

/// What runs a plugin's tool calls: the runtime behind it.
pub(crate) enum ToolRunner {
    /// A component's `tool-plugin` world.
    Component(ToolPluginPre<PluginState>),
    /// An Extism module.
    #[cfg(feature = "extism")]
    Extism(std::sync::Arc<crate::runtime::extism::ExtismPlugin>),
    /// A native library.
    #[cfg(feature = "native")]
    Native(std::sync::Arc<crate::runtime::native::NativeLibrary>),
}

impl ToolRunner {
    /// The component's tool world, unless another runtime runs the tools.
    fn component(&self) -> Option<&ToolPluginPre<PluginState>> {
        match self {
            Self::Component(pre) => Some(pre),
            #[cfg(any(feature = "extism", feature = "native"))]
            _ => None,
        }
    }

    /// Whether it runs code that WASI preopens do not confine.
    fn unconfined(&self) -> bool {
        match self {
            Self::Component(_) => false,
            #[cfg(feature = "extism")]
            Self::Extism(_) => false,
            #[cfg(feature = "native")]
            Self::Native(_) => true,
        }
    }
}

/// The `tools` kind: tools listed at load. Components list them through
/// `list-tools`; the other runtimes describe them when they load
/// (`crate::runtime`) and fill the slot themselves.
pub(crate) struct ToolsKind;

impl Kind for ToolsKind {
    const KIND: PluginKind = PluginKind::Tools;
    type Pre = ToolRunner;
    type Listed = Vec<ToolInfo>;

    fn pre(
        instance: &wasmtime::component::InstancePre<PluginState>,
    ) -> wasmtime::Result<Self::Pre> {
        ToolPluginPre::new(instance.clone()).map(ToolRunner::Component)
    }

    async fn list(inv: &Invocation<'_>, pre: &Self::Pre) -> Result<Self::Listed, LoadError> {
        let plugin = &inv.shared.name;
        let Some(pre) = pre.component() else {
            return Err(LoadError::ListTools {
                plugin: plugin.clone(),
                message: "only a component lists its tools through list-tools".into(),
            });
        };
        let specs = invoke_list_tools(inv, pre)
            .await
            .map_err(|e| LoadError::ListTools {
                plugin: plugin.clone(),
                message: e.to_string(),
            })?;
        convert_specs(plugin, specs)
    }

    fn slot(slots: &Slots) -> Option<&Slot<Self>> {
        slots.tools.as_ref()
    }

    fn slot_mut(slots: &mut Slots) -> &mut Option<Slot<Self>> {
        &mut slots.tools
    }
}

/// The error a tool returned, followed by what the host refused it meanwhile.
fn tool_failure(prepared: &Prepared, err: ToolError) -> CallError {
    let refused = &prepared.store.data().http_policy.refused;
    CallError::Tool(refused.explain(tool_error_text(err)))
}

fn tool_error_text(err: ToolError) -> String {
    match err {
        ToolError::InvalidArguments(m) => format!("invalid arguments: {m}"),
        ToolError::Denied(m) => format!("denied: {m}"),
        ToolError::Failed(m) => m,
    }
}

fn check_json(shared: &PluginShared, tool: &str, output: String) -> Result<String, CallError> {
    match serde_json::from_str::<serde::de::IgnoredAny>(&output) {
        Ok(_) => Ok(output),
        Err(e) => shared.log_failure(Err(CallError::InvalidOutput {
            plugin: shared.name.clone(),
            tool: tool.to_owned(),
            message: e.to_string(),
        })),
    }
}

fn no_component_tools(shared: &PluginShared) -> CallError {
    CallError::Host {
        plugin: shared.name.clone(),
        message: "the plugin has no tool component to instantiate".into(),
    }
}

/// `list-tools` in a fresh instance.
async fn invoke_list_tools(
    inv: &Invocation<'_>,
    pre: &ToolPluginPre<PluginState>,
) -> Result<Vec<WitToolSpec>, CallError> {
    once_at_load(inv, "list-tools", async |store| {
        let instance = pre.instantiate_async(&mut *store).await?;
        instance
            .talaria_plugin_tool_provider()
            .call_list_tools(store)
            .await
    })
    .await
}

/// `call-tool` in a fresh instance.
async fn invoke_call_tool(
    inv: &Invocation<'_>,
    pre: &ToolPluginPre<PluginState>,
    sandbox: &Sandbox,
    tool: &str,
    arguments: &str,
    context: &CallContext,
    cancel: &CancellationToken,
) -> Result<String, CallError> {
    let call_for = CallFor {
        session_id: &context.session_id,
        tool,
    };
    let mut prepared = prepare(inv, sandbox, call_for)?;
    let store = &mut prepared.store;
    let (tool_name, arguments) = (tool.to_owned(), arguments.to_owned());
    let raced = race(
        async {
            let instance = pre.instantiate_async(&mut *store).await?;
            instance
                .talaria_plugin_tool_provider()
                .call_call_tool(&mut *store, &tool_name, &arguments, context)
                .await
        },
        inv.shared.timeout(),
        Some(cancel),
    )
    .await;
    match classify(raced, &prepared, inv.shared, tool)? {
        Ok(output) => check_json(inv.shared, tool, output),
        Err(err) => Err(tool_failure(&prepared, err)),
    }
}

/// A kept instance of a tool plugin, for callers that want to reuse one
/// (benchmarks, long-lived plugins). Tool plugins are meant to be stateless:
/// [`PluginTools`] uses a fresh instance per call instead. After a call fails
/// with anything but [`CallError::Tool`], create a new instance.
pub struct ToolInstance {
    prepared: Prepared,
    bindings: ToolPlugin,
    plugin: LoadedPlugin,
    context: CallContext,
}

impl std::fmt::Debug for ToolInstance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolInstance")
            .field("plugin", &self.plugin.name())
            .finish_non_exhaustive()
    }
}

impl LoadedPlugin {
    /// A new instance of this tool plugin whose calls run in `cwd` (used for
    /// `$CWD` grants and `call-context.cwd`; `None` preopens no `$CWD`).
    pub async fn instantiate(&self, cwd: Option<&Path>) -> Result<ToolInstance, CallError> {
        let inner = &self.inner;
        let inv = inner.invocation();
        let Some(pre) = inner
            .pre::<ToolsKind>()
            .await
            .map_err(|error| error.into_call_error(&inv.shared.name))?
            .and_then(|(_, pre)| pre.component())
        else {
            return Err(no_component_tools(inv.shared));
        };
        let sandbox = Sandbox::resolve(inv.shared, cwd).map_err(|message| CallError::Host {
            plugin: inv.shared.name.clone(),
            message,
        })?;
        let mut prepared = prepare(&inv, &sandbox, CallFor::default())?;
        let store = &mut prepared.store;
        let raced = race(
            pre.instantiate_async(&mut *store),
            inv.shared.timeout(),
            None,
        )
        .await;
        let bindings = classify(raced, &prepared, inv.shared, "instantiate")?;
        Ok(ToolInstance {
            prepared,
            bindings,
            plugin: self.clone(),
            context: CallContext {
                session_id: String::new(),
                call_id: String::new(),
                cwd: sandbox.guest_cwd,
            },
        })
    }
}

impl ToolInstance {
    /// Calls `tool` with JSON `arguments` in this instance.
    pub async fn call(&mut self, tool: &str, arguments: &str) -> Result<String, CallError> {
        let shared = self.plugin.inner.shared.clone();
        let timeout = shared.timeout();
        let store = &mut self.prepared.store;
        store.data_mut().host.deadline = Instant::now() + timeout;
        store.data().http_policy.refused.clear();
        store.set_epoch_deadline(1);
        let provider = self.bindings.talaria_plugin_tool_provider();
        let context = &self.context;
        let (tool_name, arguments) = (tool.to_owned(), arguments.to_owned());
        let raced = race(
            provider.call_call_tool(&mut *store, &tool_name, &arguments, context),
            timeout,
            None,
        )
        .await;
        match classify(raced, &self.prepared, &shared, tool)? {
            Ok(output) => check_json(&shared, tool, output),
            Err(err) => Err(tool_failure(&self.prepared, err)),
        }
    }
}

/// The kernel's tool port over loaded tool plugins, for one working
/// directory. Each call runs in a fresh instance; a plugin that fails
/// [`DISABLE_AFTER_FAILURES`] times in a session is disabled for the rest of
/// it (its tools stay listed, so the prompt prefix stays stable).
pub struct PluginTools {
    entries: Vec<Placed>,
    /// Tool name → (entry, tool index).
    by_name: HashMap<String, (usize, usize)>,
    specs: Vec<ToolSpec>,
    clashes: Vec<ToolClash>,
    /// `tools.providers` entries no plugin here meets.
    unmet: Vec<String>,
    failures: Failures,
    cwd: PathBuf,
}

impl std::fmt::Debug for PluginTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginTools")
            .field("plugins", &names(&self.entries))
            .field("cwd", &self.cwd)
            .finish_non_exhaustive()
    }
}

impl PluginTools {
    /// A dispatcher over the tool plugins among `plugins` (others are
    /// ignored), with calls running in `cwd` (resolved to its canonical path,
    /// which `$CWD` grants preopen and `call-context.cwd` carries). A tool
    /// name two plugins define is served by the first ([`Self::choosing`]).
    pub fn new(plugins: Vec<LoadedPlugin>, cwd: &Path) -> Result<Self, HostError> {
        Self::choosing(plugins, cwd, &ToolProviders::new())
    }

    /// [`Self::new`], with a tool name that several plugins define served by
    /// the plugin `providers` names for it (else by the first loaded).
    pub fn choosing(
        plugins: Vec<LoadedPlugin>,
        cwd: &Path,
        providers: &ToolProviders,
    ) -> Result<Self, HostError> {
        let (cwd, entries) = super::place::<ToolsKind>(plugins, cwd)?;
        let chosen = choose(entries.iter().map(|e| &e.plugin), providers);
        // Only calls need an Extism module compiled: start on it now.
        #[cfg(feature = "extism")]
        for placed in &entries {
            if let (Some(ToolRunner::Extism(module)), Ok(sandbox)) = (
                placed
                    .plugin
                    .inner
                    .slot::<ToolsKind>()
                    .and_then(|slot| slot.pre.get()),
                &placed.sandbox,
            ) {
                module.prepare(&placed.extism, sandbox);
            }
        }
        Ok(Self {
            entries,
            by_name: chosen.by_name,
            specs: chosen.specs,
            clashes: chosen.clashes,
            unmet: chosen.unmet,
            failures: Failures::default(),
            cwd,
        })
    }

    /// Tool names more than one plugin defines, and whose definition is left out.
    pub fn clashes(&self) -> &[ToolClash] {
        &self.clashes
    }

    /// `tools.providers` entries that no loaded plugin meets, one line each.
    pub fn unmet_choices(&self) -> &[String] {
        &self.unmet
    }

    /// The canonical working directory calls run in.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// The scheduling hints of a tool.
    pub fn flags(&self, tool: &str) -> Option<&ToolFlags> {
        let (entry, index) = self.by_name.get(tool)?;
        Some(&self.entries[*entry].plugin.tools()[*index].flags)
    }

    /// The plugins behind this dispatcher.
    pub fn plugins(&self) -> impl Iterator<Item = &LoadedPlugin> {
        self.entries.iter().map(|e| &e.plugin)
    }

    /// Whether `plugin` is disabled in `session_id`.
    pub fn is_disabled(&self, plugin: &str, session_id: &str) -> bool {
        self.failures.count(plugin, session_id) >= DISABLE_AFTER_FAILURES
    }

    /// Runs one call; `Ok` is the tool's JSON output.
    pub async fn call(
        &self,
        tool: &str,
        arguments: &str,
        call_id: &str,
        session_id: &str,
        cancel: &CancellationToken,
    ) -> Result<String, CallError> {
        let Some(&(index, tool_index)) = self.by_name.get(tool) else {
            return Err(CallError::Tool(format!("unknown tool {tool}")));
        };
        let entry = &self.entries[index];
        let plugin = entry.plugin.name().to_owned();
        let failures = self.failures.count(&plugin, session_id);
        if failures >= DISABLE_AFTER_FAILURES {
            return Err(CallError::Disabled { plugin, failures });
        }
        if cancel.is_cancelled() {
            return Err(CallError::Cancelled {
                plugin,
                tool: tool.to_owned(),
            });
        }
        let sandbox = entry.sandbox.as_ref().map_err(|message| CallError::Host {
            plugin: plugin.clone(),
            message: message.clone(),
        })?;
        let context = CallContext {
            session_id: session_id.to_owned(),
            call_id: call_id.to_owned(),
            cwd: sandbox.guest_cwd.clone(),
        };
        let inner = &entry.plugin.inner;
        let (slot, pre) = match inner.pre::<ToolsKind>().await {
            Ok(Some(found)) => found,
            Ok(None) => {
                return Err(CallError::Host {
                    plugin,
                    message: "the plugin does not provide tools".into(),
                });
            }
            Err(error) => return Err(error.into_call_error(&plugin)),
        };
        // The profile's control files, whatever directory the grants open.
        let paths = CallPaths {
            plugin: &inner.shared,
            sandbox,
            cwd: &self.cwd,
            read_only: slot.listed[tool_index].flags.read_only,
            unconfined: pre.unconfined(),
            tool,
            session_id,
        };
        tokio::select! {
            biased;
            () = cancel.cancelled() => {
                return Err(CallError::Cancelled { plugin, tool: tool.to_owned() });
            }
            checked = paths.check(arguments) => checked.map_err(CallError::Tool)?,
        }
        let result = match pre {
            ToolRunner::Component(pre) => {
                let inv = inner.invocation();
                invoke_call_tool(&inv, pre, sandbox, tool, arguments, &context, cancel).await
            }
            #[cfg(feature = "extism")]
            ToolRunner::Extism(module) => {
                module
                    .call(
                        &entry.extism,
                        &inner.shared,
                        sandbox,
                        tool,
                        arguments,
                        &context,
                        cancel,
                    )
                    .await
            }
            #[cfg(feature = "native")]
            ToolRunner::Native(library) => {
                crate::runtime::native::call(library, &inner.shared, tool, arguments, cancel).await
            }
        };
        if let Err(err) = &result
            && err.is_plugin_failure()
        {
            self.failures.record(&entry.plugin, session_id);
        }
        result
    }

    /// The tools as the model sees them.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.specs.clone()
    }
}

/// Each call runs in a fresh instance of its plugin; the dispatcher decides
/// what runs in parallel (from each tool's flags).
#[async_trait]
impl ToolSource for PluginTools {
    fn tools(&self) -> Vec<ToolEntry> {
        self.entries
            .iter()
            .flat_map(|entry| {
                let toolset = &entry.plugin.manifest().toolset;
                entry.plugin.tools().iter().map(|tool| ToolEntry {
                    spec: tool.spec.clone(),
                    flags: tool.flags.clone(),
                    toolset: toolset.clone(),
                })
            })
            .collect()
    }

    async fn call(
        &self,
        call: &ValidatedCall,
        context: &ToolContext,
        cancel: &CancellationToken,
    ) -> ToolResult {
        let arguments = call.arguments.to_string();
        match PluginTools::call(
            self,
            &call.call.name,
            &arguments,
            &call.call.id,
            &context.session_id,
            cancel,
        )
        .await
        {
            Ok(output) => ToolResult::ok(&call.call, output),
            Err(err) => ToolResult::error(&call.call, err.to_string()),
        }
    }
}
