//! What a command is: name, aliases, arguments, description, category, the
//! surfaces that offer it and its handler.

use futures_util::future::BoxFuture;
use serde::Serialize;

use crate::context::{Context, Reply};
use crate::invocation::Invocation;

/// The surfaces a command is offered on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Surfaces(u8);

impl Surfaces {
    /// The interactive terminal.
    pub const CLI: Self = Self(1);
    /// Chat platforms behind the gateway.
    pub const GATEWAY: Self = Self(2);
    /// Editors over ACP.
    pub const ACP: Self = Self(4);
    /// Every surface.
    pub const ALL: Self = Self(7);

    /// Both sets.
    pub const fn or(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }

    /// Whether `surface` is in the set.
    pub fn offers(self, surface: Self) -> bool {
        self.0 & surface.0 != 0
    }

    /// The names of the surfaces in the set.
    pub fn names(self) -> Vec<&'static str> {
        [
            (Self::CLI, "cli"),
            (Self::GATEWAY, "gateway"),
            (Self::ACP, "acp"),
        ]
        .into_iter()
        .filter(|(surface, _)| self.offers(*surface))
        .map(|(_, name)| name)
        .collect()
    }
}

/// Where an argument's completions come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind", content = "choices")]
pub enum ArgKind {
    /// One of these words.
    Choice(&'static [&'static str]),
    /// A stored session id.
    Session,
    /// A model name.
    Model,
    /// A provider (wire format).
    Provider,
    /// A toolset name.
    Toolset,
    /// A skin name.
    Skin,
    /// A dotted config key.
    ConfigKey,
    /// A command name.
    Command,
    /// Free text: the rest of the line.
    Text,
}

/// One positional argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ArgSpec {
    /// Shown in usage lines.
    pub name: &'static str,
    /// Where completions come from.
    #[serde(flatten)]
    pub kind: ArgKind,
    /// Whether it must be given.
    pub required: bool,
}

impl ArgSpec {
    /// A required argument.
    pub const fn required(name: &'static str, kind: ArgKind) -> Self {
        Self {
            name,
            kind,
            required: true,
        }
    }

    /// An optional argument.
    pub const fn optional(name: &'static str, kind: ArgKind) -> Self {
        Self {
            name,
            kind,
            required: false,
        }
    }
}

/// Runs a built-in command.
pub type BuiltinFn = for<'a> fn(&'a mut Context<'_>, Invocation) -> BoxFuture<'a, Reply>;

/// One row of the built-in table.
#[derive(Clone, Copy)]
pub struct Builtin {
    /// Name without the slash.
    pub name: &'static str,
    /// Other names.
    pub aliases: &'static [&'static str],
    /// Positional arguments.
    pub args: &'static [ArgSpec],
    /// Options it accepts (e.g. `--now`).
    pub flags: &'static [&'static str],
    /// One line for `/help`.
    pub description: &'static str,
    /// `/help` group.
    pub category: &'static str,
    /// Where it is offered.
    pub surfaces: Surfaces,
    /// What it does.
    pub run: BuiltinFn,
}

impl std::fmt::Debug for Builtin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Builtin").field("name", &self.name).finish()
    }
}

/// Who answers a command.
#[derive(Debug, Clone)]
pub enum Handler {
    /// Built into Talaria.
    Builtin(BuiltinFn),
    /// A plugin's command world.
    Plugin {
        /// The plugin's name.
        plugin: String,
    },
    /// A skill, run as `/<skill> request`.
    Skill,
}

/// One entry of the registry.
#[derive(Debug, Clone)]
pub struct Command {
    /// Name without the slash.
    pub name: String,
    /// Other names.
    pub aliases: Vec<String>,
    /// Positional arguments (built-ins; others take free text).
    pub args: Vec<ArgSpec>,
    /// Options it accepts.
    pub flags: Vec<&'static str>,
    /// One line for `/help`.
    pub description: String,
    /// `/help` group.
    pub category: String,
    /// Usage after the name, e.g. `[name] [--now]`.
    pub usage: String,
    /// Where it is offered.
    pub surfaces: Surfaces,
    /// Who answers it.
    pub handler: Handler,
}

impl Command {
    /// An entry from a built-in row.
    pub fn from_builtin(row: &Builtin) -> Self {
        let mut usage: Vec<String> = row
            .args
            .iter()
            .map(|arg| {
                let name = match arg.kind {
                    ArgKind::Choice(choices) if choices.len() <= 4 => choices.join("|"),
                    ArgKind::Text => format!("{}…", arg.name),
                    _ => arg.name.to_owned(),
                };
                if arg.required {
                    format!("<{name}>")
                } else {
                    format!("[{name}]")
                }
            })
            .collect();
        usage.extend(row.flags.iter().map(|flag| format!("[{flag}]")));
        Self {
            name: row.name.to_owned(),
            aliases: row.aliases.iter().map(|a| (*a).to_owned()).collect(),
            args: row.args.to_vec(),
            flags: row.flags.to_vec(),
            description: row.description.to_owned(),
            category: row.category.to_owned(),
            usage: usage.join(" "),
            surfaces: row.surfaces,
            handler: Handler::Builtin(row.run),
        }
    }

    /// Whether `name` is this command's name or one of its aliases.
    pub fn answers_to(&self, name: &str) -> bool {
        self.name == name || self.aliases.iter().any(|alias| alias == name)
    }

    /// `/name usage`.
    pub fn synopsis(&self) -> String {
        if self.usage.is_empty() {
            format!("/{}", self.name)
        } else {
            format!("/{} {}", self.name, self.usage)
        }
    }

    /// Where it comes from, for listings: `builtin`, `plugin:<name>` or `skill`.
    pub fn source(&self) -> String {
        match &self.handler {
            Handler::Builtin(_) => "builtin".into(),
            Handler::Plugin { plugin } => format!("plugin:{plugin}"),
            Handler::Skill => "skill".into(),
        }
    }
}
