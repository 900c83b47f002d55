//! What the syntax screen knows about programs (`programs.toml`): which run their arguments,
//! which take only data, which options and variables name a command they run (or a program they
//! hand data to), which run what they are handed, and which accept abbreviated long options.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::OnceLock;

use serde::Deserialize;

use crate::error::ApprovalError;

const BUILTIN_PROGRAMS: &str = include_str!("../programs.toml");

/// How a program treats its arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Arguments {
    /// Runs them (or what it reads) as code: nothing is masked.
    Runs,
    /// Only data: quoted text in them is harmless.
    Data,
    /// Unknown: it may run them.
    Unknown,
}

/// What the value of an option or variable that names a command is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Spawned {
    /// A command line, run as it is (`git rebase -x 'make test'`).
    CommandLine,
    /// A program the program hands data to: its output, a file, its temporary data
    /// (`man -P less`, `rg --pre pdftotext`).
    Filter,
}

/// An option whose value is `KEY=VALUE`, where some keys name a command (`git -c core.pager=…`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Keyed {
    pub option: String,
    /// Keys whose value is a command line.
    #[serde(default)]
    keys: Vec<String>,
    /// Keys whose value is a program handed data.
    #[serde(default)]
    filters: Vec<String>,
}

impl Keyed {
    /// What `key` (lower case) names, if a command.
    pub fn names_command(&self, key: &str) -> Option<Spawned> {
        let listed = |list: &[String]| list.iter().any(|pattern| key_matches(pattern, key));
        if listed(&self.filters) {
            Some(Spawned::Filter)
        } else if listed(&self.keys) {
            Some(Spawned::CommandLine)
        } else {
            None
        }
    }
}

/// Whether `key` fits `pattern`, where each `*` stands for any text (`diff.*.textconv`).
fn key_matches(pattern: &str, key: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = key.strip_prefix(first) else {
        return false;
    };
    let mut parts: Vec<&str> = parts.collect();
    let Some(last) = parts.pop() else {
        // No `*`: the whole key.
        return rest.is_empty();
    };
    for part in parts {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// Options of one command whose value is a command it runs.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Spawn {
    /// Program and subcommands, space separated (`git rebase`).
    pub command: String,
    /// Options whose value is a command line.
    #[serde(default)]
    pub options: Vec<String>,
    /// Options whose value is a program handed data.
    #[serde(default)]
    pub filters: Vec<String>,
    /// Options (among both) that take their value attached only (`-Hfirefox`).
    #[serde(default)]
    pub optional: Vec<String>,
    #[serde(default)]
    pub keyed: Option<Keyed>,
    /// Every word after the command is the command it runs.
    #[serde(default)]
    pub rest: bool,
    /// `command` split into words, once at load.
    #[serde(skip)]
    words: Vec<String>,
}

impl Spawn {
    /// The program the rule is about (`git rebase` → `git`).
    pub fn program(&self) -> &str {
        self.words.first().map_or("", String::as_str)
    }

    /// Every option that names a command, with what its value is.
    pub fn valued_options(&self) -> impl Iterator<Item = (&str, Spawned)> {
        let lines = self
            .options
            .iter()
            .map(|o| (o.as_str(), Spawned::CommandLine));
        let filters = self.filters.iter().map(|o| (o.as_str(), Spawned::Filter));
        lines.chain(filters)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProgramFile {
    runs_arguments: Vec<String>,
    data_arguments: Vec<String>,
    interpreters: BTreeMap<String, Vec<String>>,
    spawns: Vec<Spawn>,
    spawn_variables: Vec<String>,
    filter_variables: Vec<String>,
    runs_input: Vec<String>,
    long_options: HashMap<String, Vec<String>>,
    global_options_with_values: HashMap<String, Vec<String>>,
}

/// The program knowledge, indexed for lookups.
#[derive(Debug)]
pub(crate) struct Programs {
    runs: HashSet<String>,
    data: HashSet<String>,
    /// Interpreter → its inline-code flag.
    interpreters: HashMap<String, String>,
    spawns: Vec<Spawn>,
    spawn_variables: HashSet<String>,
    filter_variables: HashSet<String>,
    runs_input: HashSet<String>,
    long_options: HashMap<String, Vec<String>>,
    global_options_with_values: HashMap<String, Vec<String>>,
}

/// What an abbreviated long option stands for.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Expansion<'a> {
    /// It is a whole option name, or the program takes no abbreviations.
    AsWritten,
    /// The one option it abbreviates.
    Unique(&'a str),
    /// It fits several options: the program refuses it.
    Ambiguous,
}

impl Programs {
    /// The built-in `programs.toml`, loaded on first use.
    pub fn builtin() -> Result<&'static Programs, ApprovalError> {
        static BUILTIN: OnceLock<Result<Programs, String>> = OnceLock::new();
        BUILTIN
            .get_or_init(|| Programs::from_toml(BUILTIN_PROGRAMS).map_err(|e| e.to_string()))
            .as_ref()
            .map_err(|message| ApprovalError::Builtin(message.clone()))
    }

    fn from_toml(text: &str) -> Result<Self, ApprovalError> {
        let file: ProgramFile = toml::from_str(text)?;
        let interpreters = file
            .interpreters
            .into_iter()
            .flat_map(|(flag, names)| names.into_iter().map(move |name| (name, flag.clone())))
            .collect();
        Ok(Self {
            runs: file.runs_arguments.into_iter().collect(),
            data: file.data_arguments.into_iter().collect(),
            interpreters,
            spawns: file
                .spawns
                .into_iter()
                .map(|spawn| Spawn {
                    words: spawn.command.split(' ').map(str::to_owned).collect(),
                    ..spawn
                })
                .collect(),
            spawn_variables: file.spawn_variables.into_iter().collect(),
            filter_variables: file.filter_variables.into_iter().collect(),
            runs_input: file.runs_input.into_iter().collect(),
            long_options: file.long_options,
            global_options_with_values: file.global_options_with_values,
        })
    }

    /// How `program` (lower case, no directory) treats its arguments.
    pub fn arguments(&self, program: &str) -> Arguments {
        if self.runs.contains(program) || self.interpreter_flag(program).is_some() {
            Arguments::Runs
        } else if self.data.contains(program) {
            Arguments::Data
        } else {
            Arguments::Unknown
        }
    }

    /// The inline-code flag of an interpreter (`python3` → `-c`); versioned names such as
    /// `python3.12` count as their family.
    pub fn interpreter_flag(&self, program: &str) -> Option<&str> {
        self.interpreters
            .get(program)
            .or_else(|| self.interpreters.get(family(program)))
            .map(String::as_str)
    }

    /// Whether `program` runs what it is handed (its input, a file or words given it) as code
    /// or commands; versioned names count as their family.
    pub fn runs_input(&self, program: &str) -> bool {
        self.runs_input.contains(program) || self.runs_input.contains(family(program))
    }

    /// What the value of the variable `name` is, if it names a command.
    pub fn spawn_variable(&self, name: &str) -> Option<Spawned> {
        if self.filter_variables.contains(name) {
            Some(Spawned::Filter)
        } else if self.spawn_variables.contains(name) {
            Some(Spawned::CommandLine)
        } else {
            None
        }
    }

    /// The spawn rules of a command (program and its subcommands, e.g. `["git", "rebase"]`):
    /// every rule whose command is a prefix of it, with the number of words the rule names.
    pub fn spawns<'a>(
        &'a self,
        command: &'a [&'a str],
    ) -> impl Iterator<Item = (&'a Spawn, usize)> {
        self.spawns.iter().filter_map(move |spawn| {
            let named = spawn.words.len();
            (command.len() >= named && command[..named] == spawn.words[..])
                .then_some((spawn, named))
        })
    }

    /// Global options of `program` that take a value.
    pub fn global_options_with_values(&self, program: &str) -> &[String] {
        self.global_options_with_values
            .get(program)
            .map_or(&[], Vec::as_slice)
    }

    /// What the long option `name` (`--har`, lower case, without `=value`) stands for in
    /// `command` (`git reset`, or the program alone).
    pub fn expand_long_option<'a>(&'a self, command: &str, name: &str) -> Expansion<'a> {
        let Some(options) = self.long_options.get(command) else {
            return Expansion::AsWritten;
        };
        if options.iter().any(|option| option == name) {
            return Expansion::AsWritten;
        }
        let mut fits = options.iter().filter(|option| option.starts_with(name));
        match (fits.next(), fits.next()) {
            (Some(only), None) => Expansion::Unique(only),
            (Some(_), Some(_)) => Expansion::Ambiguous,
            (None, _) => Expansion::AsWritten,
        }
    }

    /// Whether `command` has a long-option table.
    pub fn has_long_options(&self, command: &str) -> bool {
        self.long_options.contains_key(command)
    }
}

/// A program's name without its version (`python3.12` → `python`).
fn family(program: &str) -> &str {
    program.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_programs_load() {
        let programs = Programs::builtin();
        assert!(programs.is_ok(), "{:?}", programs.err());
    }

    #[test]
    fn long_options_expand_as_the_program_would() {
        let programs = Programs::builtin().unwrap();
        assert_eq!(
            programs.expand_long_option("git reset", "--har"),
            Expansion::Unique("--hard")
        );
        assert_eq!(
            programs.expand_long_option("git push", "--forc"),
            Expansion::Ambiguous
        );
        assert_eq!(
            programs.expand_long_option("git push", "--force-w"),
            Expansion::Unique("--force-with-lease")
        );
        assert_eq!(
            programs.expand_long_option("git push", "--force"),
            Expansion::AsWritten
        );
        assert_eq!(
            programs.expand_long_option("rm", "--recur"),
            Expansion::Unique("--recursive")
        );
        assert_eq!(
            programs.expand_long_option("ls", "--recur"),
            Expansion::AsWritten
        );
    }

    #[test]
    fn programs_are_sorted_by_what_they_do_with_arguments() {
        let programs = Programs::builtin().unwrap();
        assert_eq!(programs.arguments("bash"), Arguments::Runs);
        assert_eq!(programs.arguments("python3.12"), Arguments::Runs);
        assert_eq!(programs.interpreter_flag("python3.12"), Some("-c"));
        assert_eq!(programs.arguments("echo"), Arguments::Data);
        assert_eq!(programs.arguments("mytool"), Arguments::Unknown);
        assert!(programs.runs_input("python3.12"));
        assert!(programs.runs_input("m4"));
        assert!(!programs.runs_input("less"));
    }

    #[test]
    fn keys_and_variables_say_what_their_command_is() {
        assert!(key_matches("diff.*.textconv", "diff.pdf.textconv"));
        assert!(key_matches("pager.*", "pager.log"));
        assert!(key_matches("core.pager", "core.pager"));
        assert!(!key_matches("core.pager", "core.pagerx"));
        assert!(!key_matches("diff.*.textconv", "diff.textconv"));
        assert!(!key_matches("diff.*.textconv", "diff.external"));
        let programs = Programs::builtin().unwrap();
        assert_eq!(programs.spawn_variable("PAGER"), Some(Spawned::Filter));
        assert_eq!(
            programs.spawn_variable("GIT_SSH_COMMAND"),
            Some(Spawned::CommandLine)
        );
        assert_eq!(programs.spawn_variable("HOME"), None);
    }
}
