//! COMMAND_REGISTRY: the one table of slash commands. Dispatch, `/help`,
//! completion and the JSON listing for gateway menus and ACP are all derived
//! from it.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use talaria_agent::PluginCommandSpec;

use crate::context::{Context, Reply};
use crate::invocation::{parse_args, split_command};
use crate::spec::{ArgKind, Builtin, Command, Handler, Surfaces};

/// A skill offered as `/<skill> request`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillCommand {
    /// The skill's name.
    pub name: String,
    /// Its description.
    pub description: String,
}

/// Supplies argument values for completion (session ids, toolsets, skins…).
pub trait ArgValues {
    /// Candidate values for arguments of `kind`.
    fn values(&self, kind: ArgKind) -> Vec<String>;
}

/// The slash commands of one surface.
#[derive(Debug, Clone)]
pub struct Registry {
    commands: Vec<Command>,
}

/// Category order in `/help`; others follow alphabetically.
const CATEGORY_ORDER: &[&str] = &[
    "Session", "Model", "Tools", "Display", "Config", "General", "Plugins", "Skills",
];

impl Registry {
    /// The commands of `agent`'s session on `surface`: the built-ins, the
    /// plugins' commands and the skills.
    pub fn for_session(agent: &talaria_agent::Agent, surface: Surfaces) -> Self {
        let mut registry = Self::new(crate::BUILTINS, surface);
        // Clashes were reported when the plugins loaded.
        let _ = registry.add_plugin_commands(agent.plugin_commands());
        registry.add_skills(
            agent
                .skills()
                .into_iter()
                .map(|s| SkillCommand {
                    name: s.name,
                    description: s.description,
                })
                .collect(),
        );
        registry
    }

    /// The built-in commands offered on `surface`.
    pub fn new(builtins: &[Builtin], surface: Surfaces) -> Self {
        Self {
            commands: builtins
                .iter()
                .filter(|row| row.surfaces.offers(surface))
                .map(Command::from_builtin)
                .collect(),
        }
    }

    /// Adds plugin commands; a name or alias already taken keeps its owner and
    /// the newcomer is left out, with a notice.
    pub fn add_plugin_commands(&mut self, commands: Vec<PluginCommandSpec>) -> Vec<String> {
        let mut notices = Vec::new();
        for command in commands {
            if let Some(owner) = self.owner_of(&command.name) {
                notices.push(format!(
                    "plugin {}'s command /{} is not available: /{} already belongs to {owner}",
                    command.plugin, command.name, command.name
                ));
                continue;
            }
            let aliases: Vec<String> = command
                .aliases
                .into_iter()
                .filter(|alias| self.owner_of(alias).is_none())
                .collect();
            self.commands.push(Command {
                name: command.name,
                aliases,
                args: Vec::new(),
                flags: Vec::new(),
                description: command.description,
                category: if command.category.trim().is_empty() {
                    "Plugins".into()
                } else {
                    command.category
                },
                usage: command.args_hint,
                surfaces: Surfaces::ALL,
                handler: Handler::Plugin {
                    plugin: command.plugin,
                },
            });
        }
        notices
    }

    /// Adds skills as commands; a skill whose name is taken is left out silently
    /// (it stays reachable through the model's skill tools).
    pub fn add_skills(&mut self, skills: Vec<SkillCommand>) {
        for skill in skills {
            if self.owner_of(&skill.name).is_some() {
                continue;
            }
            let mut description: String = skill.description.chars().take(100).collect();
            if skill.description.chars().count() > 100 {
                description.push('…');
            }
            self.commands.push(Command {
                name: skill.name,
                aliases: Vec::new(),
                args: Vec::new(),
                flags: Vec::new(),
                description,
                category: "Skills".into(),
                usage: "[request…]".into(),
                surfaces: Surfaces::ALL,
                handler: Handler::Skill,
            });
        }
    }

    fn owner_of(&self, name: &str) -> Option<String> {
        self.find(name).map(Command::source)
    }

    /// Every command, in registration order.
    pub fn commands(&self) -> &[Command] {
        &self.commands
    }

    /// The command `name` (without slash) names, by name or alias.
    pub fn find(&self, name: &str) -> Option<&Command> {
        self.commands.iter().find(|c| c.answers_to(name))
    }

    /// Whether `line` is a slash command for this registry's parser.
    pub fn is_command(line: &str) -> bool {
        split_command(line).is_some()
    }

    /// Runs the command typed in `line` (which starts with `/`).
    pub async fn dispatch(&self, ctx: &mut Context<'_>, line: &str) -> Reply {
        let Some((name, rest)) = split_command(line) else {
            return Reply::error("not a command");
        };
        if name.is_empty() {
            return Reply::text(self.help());
        }
        let Some(command) = self.find(name) else {
            return Reply::error(self.unknown(name));
        };
        let invocation = match parse_args(command, rest) {
            Ok(invocation) => invocation,
            Err(message) => return Reply::error(message),
        };
        match &command.handler {
            Handler::Builtin(run) => run(ctx, invocation).await,
            Handler::Plugin { plugin } => {
                match ctx.agent.run_plugin_command(&command.name, rest).await {
                    Ok(text) => Reply::text(text),
                    Err(error) => Reply::error(format!("/{} ({plugin}): {error}", command.name)),
                }
            }
            Handler::Skill => match ctx.agent.skill_prompt(&command.name, rest) {
                Ok(prompt) => Reply::effect(crate::context::Effect::Send(prompt), ""),
                Err(error) => Reply::error(error.to_string()),
            },
        }
    }

    fn unknown(&self, name: &str) -> String {
        let mut names: Vec<&str> = self
            .commands
            .iter()
            .flat_map(|c| {
                std::iter::once(c.name.as_str()).chain(c.aliases.iter().map(String::as_str))
            })
            .filter(|candidate| candidate.starts_with(name) || edit_distance(candidate, name) <= 2)
            .collect();
        names.sort_unstable();
        names.dedup();
        let hint = match names.as_slice() {
            [] => String::new(),
            [one] => format!(" — did you mean /{one}?"),
            many => format!(
                " — did you mean one of {}?",
                many.iter()
                    .take(5)
                    .map(|n| format!("/{n}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        format!(
            "unknown command /{name}{hint} (/help lists them; start with // to send a line beginning with /)"
        )
    }

    /// `/help`: every command, grouped by category.
    pub fn help(&self) -> String {
        let mut groups: BTreeMap<(usize, &str), Vec<&Command>> = BTreeMap::new();
        for command in &self.commands {
            let rank = CATEGORY_ORDER
                .iter()
                .position(|c| *c == command.category)
                .unwrap_or(CATEGORY_ORDER.len());
            groups
                .entry((rank, &command.category))
                .or_default()
                .push(command);
        }
        let width = self
            .commands
            .iter()
            .map(|c| c.synopsis().chars().count())
            .max()
            .unwrap_or(0)
            .min(36);
        let mut out = String::new();
        for ((_, category), commands) in groups {
            out.push_str(category);
            out.push('\n');
            for command in commands {
                let synopsis = command.synopsis();
                let pad = width.saturating_sub(synopsis.chars().count());
                out.push_str(&format!(
                    "  {synopsis}{}  {}",
                    " ".repeat(pad),
                    command.description
                ));
                if !command.aliases.is_empty() {
                    let aliases: Vec<String> =
                        command.aliases.iter().map(|a| format!("/{a}")).collect();
                    out.push_str(&format!(" (also {})", aliases.join(", ")));
                }
                out.push('\n');
            }
        }
        out.push_str("\n/help <command> shows one command; Tab completes names and arguments.");
        out
    }

    /// `/help name`: one command in full.
    pub fn help_for(&self, name: &str) -> Option<String> {
        let command = self.find(name.trim_start_matches('/'))?;
        let mut out = format!("{}\n  {}\n", command.synopsis(), command.description);
        if !command.aliases.is_empty() {
            out.push_str(&format!(
                "  aliases: {}\n",
                command
                    .aliases
                    .iter()
                    .map(|a| format!("/{a}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        out.push_str(&format!(
            "  category: {} · from: {} · on: {}",
            command.category,
            command.source(),
            command.surfaces.names().join(", ")
        ));
        Some(out)
    }

    /// The registry as JSON, for gateway menus and ACP command lists.
    pub fn to_json(&self) -> Value {
        Value::Array(
            self.commands
                .iter()
                .map(|c| {
                    json!({
                        "name": c.name,
                        "aliases": c.aliases,
                        "description": c.description,
                        "category": c.category,
                        "usage": c.synopsis(),
                        "args": c.args,
                        "flags": c.flags,
                        "surfaces": c.surfaces.names(),
                        "source": c.source(),
                    })
                })
                .collect(),
        )
    }

    /// Completions for `line` with the cursor at its end: the byte offset the
    /// replacement starts at and the candidates (full words).
    pub fn complete(&self, line: &str, values: &dyn ArgValues) -> (usize, Vec<String>) {
        let Some(slash) = line.find('/') else {
            return (line.len(), Vec::new());
        };
        if !line[..slash].trim().is_empty() {
            return (line.len(), Vec::new());
        }
        let body = &line[slash + 1..];
        let Some(space) = body.find(char::is_whitespace) else {
            // Completing the command name.
            let mut names: Vec<String> = self
                .commands
                .iter()
                .flat_map(|c| std::iter::once(&c.name).chain(&c.aliases))
                .filter(|name| name.starts_with(body))
                .map(|name| format!("/{name}"))
                .collect();
            names.sort();
            names.dedup();
            return (slash, names);
        };
        let Some(command) = self.find(&body[..space]) else {
            return (line.len(), Vec::new());
        };
        let rest = &body[space..];
        let word_start =
            line.len() - rest.len() + rest.rfind(char::is_whitespace).map_or(0, |i| i + 1);
        let current = &line[word_start..];
        // Positional arguments already typed (flags do not count).
        let done = line[slash + 1 + space..word_start]
            .split_whitespace()
            .filter(|w| !w.starts_with("--"))
            .count();
        let mut candidates: Vec<String> = Vec::new();
        if current.starts_with('-') {
            candidates.extend(command.flags.iter().map(|f| (*f).to_owned()));
        } else if let Some(spec) = command.args.get(done) {
            candidates = match spec.kind {
                ArgKind::Choice(choices) => choices.iter().map(|c| (*c).to_owned()).collect(),
                ArgKind::Command => self.commands.iter().map(|c| c.name.clone()).collect(),
                ArgKind::Text => Vec::new(),
                kind => values.values(kind),
            };
        }
        candidates.retain(|c| c.starts_with(current));
        candidates.sort();
        candidates.dedup();
        (word_start, candidates)
    }
}

/// Levenshtein distance (for "did you mean").
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitute = previous + usize::from(ca != *cb);
            previous = row[j + 1];
            row[j + 1] = substitute.min(row[j] + 1).min(previous + 1);
        }
    }
    row[b.len()]
}
