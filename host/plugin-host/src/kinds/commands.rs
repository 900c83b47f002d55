//! Slash commands from plugins: the `command-plugin` world. Each plugin's
//! commands are listed once at load (invalid or repeated ones are dropped with
//! a log line); [`PluginCommands`] runs them by name or alias, each call in a
//! fresh instance. A plugin whose command traps or times out
//! [`DISABLE_AFTER_FAILURES`] times in a session answers
//! [`CommandError::Disabled`] for the rest of it.

use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::sync::Arc;

use talaria_kernel::HookSession;

use super::placed::{Placed, names};
use super::{Kind, Slot, Slots};
use crate::bindings::command_world::CommandPluginPre;
use crate::bindings::talaria::plugin::types::{
    CommandSpec as WitCommandSpec, SessionInfo as WitSessionInfo,
};
use crate::error::{CallError, HostError, LoadError};
use crate::failures::{DISABLE_AFTER_FAILURES, Failures};
use crate::invoke::{CallFor, Invocation, classify, prepare, race};
use crate::loaded::LoadedPlugin;
use crate::sandbox::Sandbox;
use crate::state::PluginState;
use talaria_plugin_manifest::PluginKind;

/// The `commands` kind: commands listed (and validated) at load.
pub(crate) struct CommandsKind;

impl Kind for CommandsKind {
    const KIND: PluginKind = PluginKind::Commands;
    type Pre = CommandPluginPre<PluginState>;
    type Listed = Vec<PluginCommandSpec>;

    fn pre(
        instance: &wasmtime::component::InstancePre<PluginState>,
    ) -> wasmtime::Result<Self::Pre> {
        CommandPluginPre::new(instance.clone())
    }

    async fn list(inv: &Invocation<'_>, pre: &Self::Pre) -> Result<Self::Listed, LoadError> {
        let plugin = &inv.shared.name;
        let reply = invoke_command(inv, pre, &Sandbox::default(), CommandCall::List)
            .await
            .map_err(|e| LoadError::Exports {
                plugin: plugin.clone(),
                message: format!("listing its commands failed: {e}"),
            })?;
        let CommandReply::List(specs) = reply else {
            return Ok(Vec::new());
        };
        let (commands, dropped) = convert_commands(plugin, specs);
        crate::loaded::note_dropped(&inv.shared.log, &dropped);
        Ok(commands)
    }

    fn slot(slots: &Slots) -> Option<&Slot<Self>> {
        slots.commands.as_ref()
    }

    fn slot_mut(slots: &mut Slots) -> &mut Option<Slot<Self>> {
        &mut slots.commands
    }
}

/// Longest command, alias or skin name.
pub const MAX_COMMAND_NAME_LEN: usize = 32;

/// Whether `name` can name a command, an alias or a skin: `[a-z0-9][a-z0-9-]*`,
/// at most [`MAX_COMMAND_NAME_LEN`] characters.
pub fn valid_command_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= MAX_COMMAND_NAME_LEN
        && bytes[0] != b'-'
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
}

/// A slash command a plugin provides.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PluginCommandSpec {
    /// The plugin providing it.
    pub plugin: String,
    /// The command name, without the slash.
    pub name: String,
    /// Other names for it.
    pub aliases: Vec<String>,
    /// One line for `/help`.
    pub description: String,
    /// What follows the name, e.g. `<name> [--now]` (may be empty).
    pub args_hint: String,
    /// The `/help` section it belongs to (may be empty).
    pub category: String,
}

impl PluginCommandSpec {
    /// Whether `name` is its name or one of its aliases.
    pub fn answers_to(&self, name: &str) -> bool {
        self.name == name || self.aliases.iter().any(|a| a == name)
    }
}

/// Validates the specs a plugin listed: an invalid or repeated name drops the
/// command, an invalid or repeated alias only that alias. Returns the kept
/// specs and one line per thing dropped.
fn convert_commands(
    plugin: &str,
    specs: Vec<WitCommandSpec>,
) -> (Vec<PluginCommandSpec>, Vec<String>) {
    let mut kept: Vec<PluginCommandSpec> = Vec::new();
    let mut dropped = Vec::new();
    let taken = |kept: &[PluginCommandSpec], name: &str| kept.iter().any(|c| c.answers_to(name));
    for spec in specs {
        if !valid_command_name(&spec.name) {
            dropped.push(format!(
                "command {:?} dropped: a command name is 1 to {MAX_COMMAND_NAME_LEN} of a-z, 0-9 \
                 and - (not first)",
                spec.name
            ));
            continue;
        }
        if taken(&kept, &spec.name) {
            dropped.push(format!(
                "command {} dropped: the name is listed twice",
                spec.name
            ));
            continue;
        }
        let mut command = PluginCommandSpec {
            plugin: plugin.to_owned(),
            name: spec.name,
            aliases: Vec::new(),
            description: spec.description,
            args_hint: spec.args_hint,
            category: spec.category,
        };
        for alias in spec.aliases {
            if !valid_command_name(&alias) {
                dropped.push(format!(
                    "alias {alias:?} of command {} dropped: not a valid command name",
                    command.name
                ));
            } else if command.answers_to(&alias) || taken(&kept, &alias) {
                dropped.push(format!(
                    "alias {alias} of command {} dropped: the name is listed twice",
                    command.name
                ));
            } else {
                command.aliases.push(alias);
            }
        }
        kept.push(command);
    }
    (kept, dropped)
}

/// One call into the `command-provider` interface.
enum CommandCall<'a> {
    List,
    Run {
        name: &'a str,
        args: &'a str,
        session: &'a WitSessionInfo,
    },
}

/// What the call returned.
enum CommandReply {
    List(Vec<WitCommandSpec>),
    Ran(Result<String, String>),
}

/// Runs one call of the `command-provider` interface in a fresh instance.
async fn invoke_command(
    inv: &Invocation<'_>,
    pre: &CommandPluginPre<PluginState>,
    sandbox: &Sandbox,
    call: CommandCall<'_>,
) -> Result<CommandReply, CallError> {
    let shared = inv.shared;
    let call_for = match &call {
        CommandCall::List => CallFor {
            session_id: "",
            tool: "list-commands",
        },
        CommandCall::Run { name, session, .. } => CallFor {
            session_id: &session.session_id,
            tool: name,
        },
    };
    let label = call_for.tool.to_owned();
    let mut prepared = prepare(inv, sandbox, call_for)?;
    let store = &mut prepared.store;
    let raced = race(
        async {
            let instance = pre.instantiate_async(&mut *store).await?;
            let provider = instance.talaria_plugin_command_provider();
            let store = &mut *store;
            Ok(match call {
                CommandCall::List => CommandReply::List(provider.call_list_commands(store).await?),
                CommandCall::Run {
                    name,
                    args,
                    session,
                } => CommandReply::Ran(
                    provider
                        .call_run_command(store, name, args, session)
                        .await?,
                ),
            })
        },
        shared.timeout(),
        None,
    )
    .await;
    classify(raced, &prepared, shared, &label)
}

/// Why a plugin command gave no output.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    /// No plugin provides a command of that name or alias.
    #[error("unknown command {name}")]
    Unknown {
        /// The name asked for.
        name: String,
    },
    /// The command ran and reported an error; not a failure of the plugin.
    #[error("plugin {plugin}: {message}")]
    Failed {
        /// The plugin name.
        plugin: String,
        /// The plugin's message, for the user.
        message: String,
    },
    /// The plugin trapped, timed out or ran out of memory; counts toward
    /// disabling it.
    #[error("{error}")]
    Crashed {
        /// The plugin name.
        plugin: String,
        /// The command run.
        command: String,
        /// What happened.
        error: CallError,
    },
    /// The plugin has failed too often in this session.
    #[error("plugin {plugin} is disabled for this session after {failures} failures")]
    Disabled {
        /// The plugin name.
        plugin: String,
        /// How many failures it had.
        failures: u32,
    },
    /// The host could not run the plugin (its grants could not be set up, no
    /// instance could be created); not counted as a failure of the plugin.
    #[error("plugin {plugin}: {message}")]
    Unavailable {
        /// The plugin name.
        plugin: String,
        /// What went wrong.
        message: String,
    },
}

/// A command dropped by [`PluginCommands::new`] because an earlier plugin
/// already answers to the name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandClash {
    /// The plugin whose command or alias was dropped.
    pub plugin: String,
    /// The command (for an alias: the command it belonged to).
    pub command: String,
    /// The alias dropped, when only an alias clashed (the command stays).
    pub alias: Option<String>,
    /// The plugin that keeps the name.
    pub owner: String,
}

impl fmt::Display for CommandClash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.alias {
            None => write!(
                f,
                "command /{} of plugin {} dropped: plugin {} already provides /{}",
                self.command, self.plugin, self.owner, self.command
            ),
            Some(alias) => write!(
                f,
                "alias /{alias} of command /{} (plugin {}) dropped: plugin {} already answers to /{alias}",
                self.command, self.plugin, self.owner
            ),
        }
    }
}

struct CommandsInner {
    entries: Vec<Placed>,
    specs: Vec<PluginCommandSpec>,
    /// Name or alias → (entry, index in `specs`).
    by_name: HashMap<String, (usize, usize)>,
    clashes: Vec<CommandClash>,
    surface: String,
    failures: Failures,
}

/// The slash commands of the command plugins among those loaded, for
/// sessions in one working directory. Cheap to clone; clones share the
/// failure counts.
#[derive(Clone)]
pub struct PluginCommands {
    inner: Arc<CommandsInner>,
}

impl fmt::Debug for PluginCommands {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PluginCommands")
            .field("plugins", &names(&self.inner.entries))
            .field(
                "commands",
                &self
                    .inner
                    .specs
                    .iter()
                    .map(|s| s.name.as_str())
                    .collect::<Vec<_>>(),
            )
            .field("surface", &self.inner.surface)
            .finish_non_exhaustive()
    }
}

impl PluginCommands {
    /// The commands of the command plugins among `plugins` (others are
    /// ignored), run in `cwd` on `surface` (`cli`, `gateway`…, passed to
    /// plugins). A name or alias is kept by the first plugin answering to it;
    /// later ones are dropped, logged to their plugin and listed in
    /// [`clashes`](Self::clashes).
    pub fn new(
        plugins: Vec<LoadedPlugin>,
        cwd: &Path,
        surface: impl Into<String>,
    ) -> Result<Self, HostError> {
        let (_, placed) = super::place::<CommandsKind>(plugins, cwd)?;
        let mut entries = Vec::with_capacity(placed.len());
        let mut specs: Vec<PluginCommandSpec> = Vec::new();
        let mut by_name: HashMap<String, (usize, usize)> = HashMap::new();
        let mut clashes = Vec::new();
        for placed in placed {
            let plugin = &placed.plugin;
            let entry = entries.len();
            let mut dropped = Vec::new();
            for spec in plugin.commands() {
                let owner = |name: &str| {
                    by_name
                        .get(name)
                        .map(|&(_, index)| specs[index].plugin.clone())
                };
                if let Some(owner) = owner(&spec.name) {
                    dropped.push(CommandClash {
                        plugin: spec.plugin.clone(),
                        command: spec.name.clone(),
                        alias: None,
                        owner,
                    });
                    continue;
                }
                let mut kept = spec.clone();
                kept.aliases.clear();
                for alias in &spec.aliases {
                    match owner(alias) {
                        Some(owner) => dropped.push(CommandClash {
                            plugin: spec.plugin.clone(),
                            command: spec.name.clone(),
                            alias: Some(alias.clone()),
                            owner,
                        }),
                        None => kept.aliases.push(alias.clone()),
                    }
                }
                let index = specs.len();
                by_name.insert(kept.name.clone(), (entry, index));
                for alias in &kept.aliases {
                    by_name.insert(alias.clone(), (entry, index));
                }
                specs.push(kept);
            }
            for clash in &dropped {
                plugin.log().push(
                    crate::log::LogLevel::Warn,
                    crate::log::LogSource::Host,
                    &clash.to_string(),
                );
            }
            clashes.extend(dropped);
            entries.push(placed);
        }
        Ok(Self {
            inner: Arc::new(CommandsInner {
                entries,
                specs,
                by_name,
                clashes,
                surface: surface.into(),
                failures: Failures::default(),
            }),
        })
    }

    /// Every command of every plugin, in load order (clashing ones left out).
    pub fn specs(&self) -> Vec<PluginCommandSpec> {
        self.inner.specs.clone()
    }

    /// The command answering to `name` (its name or an alias).
    pub fn find(&self, name: &str) -> Option<&PluginCommandSpec> {
        let &(_, index) = self.inner.by_name.get(name)?;
        self.inner.specs.get(index)
    }

    /// Whether no plugin provides a command.
    pub fn is_empty(&self) -> bool {
        self.inner.specs.is_empty()
    }

    /// Commands and aliases dropped because an earlier plugin answers to them.
    pub fn clashes(&self) -> &[CommandClash] {
        &self.inner.clashes
    }

    /// Whether `plugin` is disabled in `session_id`.
    pub fn is_disabled(&self, plugin: &str, session_id: &str) -> bool {
        self.inner.failures.count(plugin, session_id) >= DISABLE_AFTER_FAILURES
    }

    /// Runs the command answering to `name` (a name or an alias, without the
    /// slash) with the text after it, in a fresh instance of its plugin.
    /// `Ok` is the text to show the user.
    pub async fn run(
        &self,
        name: &str,
        args: &str,
        session: HookSession<'_>,
    ) -> Result<String, CommandError> {
        let inner = &self.inner;
        let Some(&(entry, index)) = inner.by_name.get(name) else {
            return Err(CommandError::Unknown {
                name: name.to_owned(),
            });
        };
        let entry = &inner.entries[entry];
        let spec = &inner.specs[index];
        let plugin = entry.plugin.name().to_owned();
        let failures = inner.failures.count(&plugin, session.session_id);
        if failures >= DISABLE_AFTER_FAILURES {
            return Err(CommandError::Disabled { plugin, failures });
        }
        let sandbox = entry
            .sandbox
            .as_ref()
            .map_err(|message| CommandError::Unavailable {
                plugin: plugin.clone(),
                message: message.clone(),
            })?;
        let info = WitSessionInfo {
            session_id: session.session_id.to_owned(),
            surface: inner.surface.clone(),
            model: session.model.to_owned(),
        };
        let call = CommandCall::Run {
            name: &spec.name,
            args,
            session: &info,
        };
        let loaded = &entry.plugin.inner;
        let pre = match loaded.pre::<CommandsKind>().await {
            Ok(Some((_, pre))) => pre,
            Ok(None) => {
                return Err(CommandError::Unavailable {
                    plugin,
                    message: "the plugin does not provide commands".into(),
                });
            }
            Err(error) => {
                return Err(CommandError::Unavailable {
                    plugin,
                    message: error.to_string(),
                });
            }
        };
        match invoke_command(&loaded.invocation(), pre, sandbox, call).await {
            Ok(CommandReply::Ran(Ok(text))) => Ok(text),
            Ok(CommandReply::Ran(Err(message))) => Err(CommandError::Failed { plugin, message }),
            Ok(CommandReply::List(_)) => Err(CommandError::Unavailable {
                plugin,
                message: "unexpected reply".into(),
            }),
            Err(error) if error.is_plugin_failure() => {
                inner.failures.record(&entry.plugin, session.session_id);
                Err(CommandError::Crashed {
                    plugin,
                    command: spec.name.clone(),
                    error,
                })
            }
            Err(error) => Err(CommandError::Unavailable {
                plugin,
                message: error.to_string(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str, aliases: &[&str]) -> WitCommandSpec {
        WitCommandSpec {
            name: name.into(),
            aliases: aliases.iter().map(|a| (*a).to_owned()).collect(),
            description: format!("{name} things"),
            args_hint: String::new(),
            category: String::new(),
        }
    }

    #[test]
    fn command_names_are_lowercase_words_with_dashes() {
        for good in ["a", "echo-args", "x1", "9lives", "a-b-c", &"a".repeat(32)] {
            assert!(valid_command_name(good), "{good:?} is valid");
        }
        for bad in [
            "",
            "-x",
            "Echo",
            "echo_args",
            "echo args",
            "/echo",
            "é",
            "a.b",
            &"a".repeat(33),
        ] {
            assert!(!valid_command_name(bad), "{bad:?} is invalid");
        }
    }

    #[test]
    fn invalid_and_repeated_commands_are_dropped() {
        let (kept, dropped) = convert_commands(
            "p",
            vec![
                spec("echo", &["e", "Bad", "e", "echo"]),
                spec("Echo", &[]),
                spec("echo", &[]),
                spec("e", &[]),
                spec("other", &["e", "o"]),
            ],
        );
        let names: Vec<(&str, Vec<&str>)> = kept
            .iter()
            .map(|c| {
                (
                    c.name.as_str(),
                    c.aliases.iter().map(String::as_str).collect(),
                )
            })
            .collect();
        assert_eq!(names, [("echo", vec!["e"]), ("other", vec!["o"])]);
        assert!(kept.iter().all(|c| c.plugin == "p"));
        assert_eq!(dropped.len(), 7, "{dropped:#?}");
        assert!(dropped[0].contains("\"Bad\""), "{}", dropped[0]);
    }
}
