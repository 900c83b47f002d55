//! The syntax screen: what each simple command of the parsed line does with its words.
//!
//! The lists match text, so the screen hands them a rewritten line and the command lines the
//! programs will run:
//! - a quoted argument that holds a separator (`"(rm -rf /) note"`) is masked when the program
//!   takes only data (`git commit -m …`), so it no longer looks like a command; when nothing is
//!   known of the program it is masked too, but the classifier keeps what the unmasked line shows
//!   at "dangerous" (the program may run it);
//! - an abbreviated long option is written out as the option the program takes it for
//!   (`git reset --har` → `--hard`);
//! - option and variable values that name a command (`man -P …`, `git -c core.pager=…`,
//!   `LESSOPEN='|…'`), shells' `-c` payloads, `eval`'s words, scripts fed to a shell or an
//!   interpreter's standard input, process substitutions they read, and command substitutions
//!   are returned as command lines of their own;
//! - a program named as the one data is handed to (a pager, preprocessor, editor or filter)
//!   that runs what it is handed (`man -P sh`) is reported;
//! - a command word built at run time is returned with its spellings;
//! - a word that reaches another process's environment or memory (`/proc/PID/environ`, however
//!   spelled, see [`crate::procfs`]) is reported, unless a data program only shows it.

use crate::procfs::ProcessRead;
use crate::programs::{Arguments, Expansion, Programs, Spawned};
use crate::syntax::{ArgWord, Parsed, Simple, Span};
use crate::views::{SCRIPT_SHELLS, SHELLS, is_assignment, is_dash_c, wrapped_start};

/// What the screen found in a parsed line.
#[derive(Debug, Default)]
pub(crate) struct Screening {
    /// The line with data arguments masked and abbreviated long options written out.
    pub rewritten: String,
    /// A masked argument belongs to a program that may run it.
    pub masked_runnable: bool,
    /// Command lines the line's programs run.
    pub spawned: Vec<String>,
    /// For each command word built at run time, the command lines it may stand for.
    pub dynamic: Vec<Vec<String>>,
    /// A command run through an option, variable or `-c` payload is built at run time.
    pub dynamic_spawn: bool,
    /// Why a program the line hands data to runs that data as code (`man -P sh`).
    pub runs_handed_data: Option<String>,
    /// The line reaches another process's environment or memory.
    pub process_read: Option<ProcessRead>,
}

/// What a masked argument is replaced with: a word with no meaning to any list.
const MASK: &str = "_";

/// Screens the parsed `line`.
pub(crate) fn screen(line: &str, parsed: &Parsed, programs: &Programs) -> Screening {
    let mut screening = Screening {
        process_read: parsed.process_read,
        ..Screening::default()
    };
    let mut replacements: Vec<(Span, String)> = Vec::new();
    for simple in &parsed.commands {
        Command::new(simple, programs).screen(&mut screening, &mut replacements);
    }
    for assigned in &parsed.assignments {
        if let Some(spawned) = programs.spawn_variable(&assigned.name) {
            screening.spawn_variable(assigned.value.literal.as_deref(), spawned, programs);
        }
    }
    screening
        .spawned
        .extend(parsed.substitutions.iter().cloned());
    screening.spawned.sort();
    screening.spawned.dedup();
    screening.rewritten = apply(line, replacements);
    screening
}

impl Screening {
    /// A command to screen: its text, or the note that it is built at run time.
    fn spawn_word(&mut self, word: &ArgWord) {
        match &word.literal {
            Some(text) => self.spawned.push(text.clone()),
            None => self.dynamic_spawn = true,
        }
    }

    /// The value of a variable that names a command (`None`: built at run time); `LESSOPEN`
    /// writes `|cmd %s` or `||cmd`.
    fn spawn_variable(&mut self, value: Option<&str>, spawned: Spawned, programs: &Programs) {
        match value {
            Some(text) => {
                let command = text.trim_start_matches(['|', '-']);
                if spawned == Spawned::Filter {
                    self.handed_data(command, programs);
                }
                self.spawned.push(command.to_owned());
            }
            None => self.dynamic_spawn = true,
        }
    }

    /// `program` (a command line) is what data is handed to: noted when it runs that data.
    fn handed_data(&mut self, program: &str, programs: &Programs) {
        if self.runs_handed_data.is_none() {
            self.runs_handed_data = runs_what_it_is_handed(program, programs);
        }
    }

    fn process_read(&mut self, read: Option<ProcessRead>) {
        self.process_read = self.process_read.or(read);
    }
}

/// One simple command, with its program found behind any wrappers.
struct Command<'a> {
    simple: &'a Simple,
    programs: &'a Programs,
    /// Words in lower case (`None` for a word built at run time).
    lowered: Vec<Option<String>>,
}

impl<'a> Command<'a> {
    fn new(simple: &'a Simple, programs: &'a Programs) -> Self {
        let lowered = simple
            .words
            .iter()
            .map(|word| word.literal.as_ref().map(|text| text.to_lowercase()))
            .collect();
        Self {
            simple,
            programs,
            lowered,
        }
    }

    fn screen(&self, screening: &mut Screening, replacements: &mut Vec<(Span, String)>) {
        let start = self.program_start(screening);
        let Some(word) = self.simple.words.get(start) else {
            return;
        };
        let Some(lowered) = &self.lowered[start] else {
            let rest = self.raw_from(start + 1);
            screening.dynamic.push(
                word.spellings
                    .iter()
                    .map(|spelled| format!("{spelled} {rest}").trim().to_owned())
                    .collect(),
            );
            return;
        };
        let program = basename(lowered);
        let arguments = self.programs.arguments(program);
        let command = self.command_words(start, program);
        let table = self.long_option_table(&command);
        self.expand_long_options(start, table.as_deref(), replacements);
        self.spawns(start, &command, table.as_deref(), screening);
        let masked_payload = self.shell_payload(start, program, screening);
        if program == "eval" {
            let words: Vec<&str> = self.simple.words[start + 1..]
                .iter()
                .map(|word| word.literal.as_deref().unwrap_or(&word.raw))
                .collect();
            screening.spawned.push(words.join(" "));
        }
        self.fed(program, arguments, screening, replacements);
        if let Some(printed) = &self.simple.piped {
            self.feed_script(program, printed, screening);
        }
        self.process_reads(program, arguments, screening);
        for substituted in &self.simple.substituted {
            if self.runs_scripts(program) {
                screening.spawned.push(format!("{substituted} | {program}"));
            }
        }
        if arguments == Arguments::Runs {
            if let Some(index) = masked_payload {
                mask(&self.simple.words[index], replacements);
            }
            return;
        }
        for word in &self.simple.words[start + 1..] {
            if holds_separator(word) && mask(word, replacements) {
                screening.masked_runnable |= arguments == Arguments::Unknown;
            }
        }
    }

    /// The index of the word that names the program, behind wrappers (`sudo -u bob env A=1 …`).
    /// Variables a wrapper sets (`env LESSOPEN=… less`) are screened on the way.
    fn program_start(&self, screening: &mut Screening) -> usize {
        let mut start = 0;
        while let Some(Some(word)) = self.lowered.get(start) {
            if is_assignment(word) {
                let name = word.split('=').next().unwrap_or_default().to_uppercase();
                if let Some(spawned) = self.programs.spawn_variable(&name) {
                    let assignment = self.simple.words[start].literal.as_deref();
                    screening.spawn_variable(
                        assignment
                            .and_then(|text| text.split_once('='))
                            .map(|(_, value)| value),
                        spawned,
                        self.programs,
                    );
                }
                start += 1;
                continue;
            }
            let words: Vec<&str> = self.lowered[start..]
                .iter()
                .map(|word| word.as_deref().unwrap_or("$"))
                .collect();
            let named = basename(words[0]);
            // `flock LOCK -c CMD` and `su -c CMD` run a payload, not the words after them.
            if SHELLS.contains(&named) && words.iter().any(|word| is_dash_c(word)) {
                break;
            }
            let mut renamed = words.clone();
            renamed[0] = named;
            match wrapped_start(&renamed) {
                Some(offset) if offset > 0 => start += offset,
                _ => break,
            }
        }
        start
    }

    /// The program and the subcommands it is run with (`git -C dir push` → `git push`).
    fn command_words(&self, start: usize, program: &'a str) -> Vec<&str> {
        let valued = self.programs.global_options_with_values(program);
        let mut command = vec![program];
        let mut index = start + 1;
        while let Some(word) = self.simple.words.get(index) {
            let Some(word) = word.literal.as_deref() else {
                break;
            };
            if word.starts_with('-') {
                let takes_value = command.len() == 1 && valued.iter().any(|option| option == word);
                index += if takes_value { 2 } else { 1 };
                continue;
            }
            command.push(self.lowered[index].as_deref().unwrap_or(word));
            if command.len() == 3 {
                break;
            }
            index += 1;
        }
        command
    }

    /// The long-option table of the command: its subcommand's, else its program's.
    fn long_option_table(&self, command: &[&str]) -> Option<String> {
        (1..=command.len())
            .rev()
            .map(|len| command[..len].join(" "))
            .find(|name| self.programs.has_long_options(name))
    }

    /// Writes out abbreviated long options (`--har` → `--hard`).
    fn expand_long_options(
        &self,
        start: usize,
        table: Option<&str>,
        replacements: &mut Vec<(Span, String)>,
    ) {
        for (index, word) in self.lowered.iter().enumerate().skip(start + 1) {
            if let Some(word) = word
                && let Some((full, value)) = self.written_out(word, table)
                && let Some(span) = self.simple.words[index].span
            {
                let written = match value {
                    Some(value) => format!("{full}={}", quote(value)),
                    None => full.to_owned(),
                };
                replacements.push((span, written));
            }
        }
    }

    /// Option values, keyed option values and trailing words that are commands the program runs.
    fn spawns(
        &self,
        start: usize,
        command: &[&str],
        table: Option<&str>,
        screening: &mut Screening,
    ) {
        let words = &self.simple.words;
        for (spawn, named) in self.programs.spawns(command) {
            if spawn.rest {
                // The words after the last subcommand the rule names.
                let last = command[named - 1];
                let after = self.lowered[start + 1..]
                    .iter()
                    .position(|word| word.as_deref() == Some(last))
                    .map_or(words.len(), |offset| start + offset + 2);
                let rest: Vec<&str> = words[after.min(words.len())..]
                    .iter()
                    .skip_while(|word| word.raw.starts_with('-'))
                    .map(|word| word.literal.as_deref().unwrap_or(&word.raw))
                    .collect();
                if !rest.is_empty() {
                    screening.spawned.push(rest.join(" "));
                }
            }
            for (option, spawned) in spawn.valued_options() {
                let attached_only = spawn.optional.iter().any(|listed| listed == option);
                for value in self.option_values(start, option, attached_only, table) {
                    if let (Spawned::Filter, Some(program)) = (spawned, &value.literal) {
                        screening.handed_data(program, self.programs);
                    }
                    screening.spawn_word(&value);
                }
            }
            if let Some(keyed) = &spawn.keyed {
                for value in self.option_values(start, &keyed.option, false, table) {
                    let Some(text) = &value.literal else {
                        screening.dynamic_spawn = true;
                        continue;
                    };
                    let (key, command) = text
                        .split_once(['=', ' '])
                        .map_or((text.as_str(), ""), |(key, command)| (key, command));
                    let key = key.trim().to_lowercase();
                    let Some(spawned) = keyed.names_command(&key) else {
                        continue;
                    };
                    // A git alias runs a shell only when it starts with `!`; else it is a
                    // git command line.
                    let command = match (key.starts_with("alias."), command.strip_prefix('!')) {
                        (_, Some(shell)) => shell.to_owned(),
                        (true, None) => format!("{} {command}", spawn.program()),
                        (false, None) => command.to_owned(),
                    };
                    if spawned == Spawned::Filter {
                        screening.handed_data(&command, self.programs);
                    }
                    screening.spawned.push(command);
                }
            }
        }
    }

    /// The values given to `option` after the program: `-P cmd`, `-Pcmd`, `-aP cmd`,
    /// `--pager cmd`, `--pager=cmd`, and abbreviated (`--pag=cmd`) where the program allows;
    /// only attached ones (`-Pcmd`, `--pager=cmd`) when the value is `attached_only`.
    fn option_values(
        &self,
        start: usize,
        option: &str,
        attached_only: bool,
        table: Option<&str>,
    ) -> Vec<ArgWord> {
        let words = &self.simple.words;
        let mut values = Vec::new();
        let mut index = start + 1;
        while index < words.len() {
            // Short options are case-sensitive (`-P`, `-p`); the literal is compared.
            let Some(word) = words[index].literal.as_deref() else {
                // `--opt="$(…)"`: a value built at run time.
                if words[index].raw.starts_with(option) {
                    values.push(ArgWord::default());
                }
                index += 1;
                continue;
            };
            let expanded = self
                .written_out(word, table)
                .map(|(full, value)| match value {
                    Some(value) => format!("{full}={value}"),
                    None => full.to_owned(),
                });
            let word = expanded.as_deref().unwrap_or(word);
            let attached = attached_value(word, option);
            // `-P cmd`, or `-aP cmd` (a cluster ending in the option).
            if word == option || attached == Some("") {
                if attached_only {
                    index += 1;
                } else {
                    if let Some(next) = words.get(index + 1) {
                        values.push(next.clone());
                    }
                    index += 2;
                }
                continue;
            }
            if let Some(value) = attached {
                values.push(ArgWord {
                    literal: Some(value.to_owned()),
                    ..ArgWord::default()
                });
            }
            index += 1;
        }
        values
    }

    /// The option `word` abbreviates (`--pag=x` → `--pager`, `x`), when it abbreviates one
    /// option of the command's table.
    fn written_out<'w>(
        &self,
        word: &'w str,
        table: Option<&str>,
    ) -> Option<(&'a str, Option<&'w str>)> {
        let table = table.filter(|_| word.starts_with("--"))?;
        let (name, value) = match word.split_once('=') {
            Some((name, value)) => (name, Some(value)),
            None => (word, None),
        };
        match self.programs.expand_long_option(table, name) {
            Expansion::Unique(full) if name.len() > 2 => Some((full, value)),
            _ => None,
        }
    }

    /// A shell's `-c` payload is screened as a command line; returns its word's index.
    fn shell_payload(
        &self,
        start: usize,
        program: &str,
        screening: &mut Screening,
    ) -> Option<usize> {
        if !SHELLS.contains(&program) {
            return None;
        }
        let flag = self.lowered[start + 1..]
            .iter()
            .position(|word| word.as_deref().is_some_and(is_dash_c))?;
        let index = start + 1 + flag + 1;
        let payload = self.simple.words.get(index)?;
        screening.spawn_word(payload);
        Some(index)
    }

    /// Text fed to the standard input: a script for a shell, inline code for an interpreter,
    /// data for the rest (masked like an argument).
    fn fed(
        &self,
        program: &str,
        arguments: Arguments,
        screening: &mut Screening,
        replacements: &mut Vec<(Span, String)>,
    ) {
        for fed in &self.simple.fed {
            if self.runs_scripts(program) {
                self.feed_script(program, &fed.text, screening);
            } else if arguments != Arguments::Runs
                && !(fed.expands && fed.text.contains(['$', '`']))
                && let Some(span) = fed.span
            {
                replacements.push((span, MASK.to_owned()));
                screening.masked_runnable |= arguments == Arguments::Unknown;
            }
        }
    }

    /// A script a shell or interpreter reads: screened as a command line, or as the
    /// interpreter's inline code (`python3 -c …`).
    fn feed_script(&self, program: &str, script: &str, screening: &mut Screening) {
        if SCRIPT_SHELLS.contains(&program) {
            screening.spawned.push(script.to_owned());
        } else if let Some(flag) = self.programs.interpreter_flag(program) {
            screening
                .spawned
                .push(format!("{program} {flag} {}", quote(script)));
        }
    }

    /// Shells and interpreters run what they read.
    fn runs_scripts(&self, program: &str) -> bool {
        SCRIPT_SHELLS.contains(&program) || self.programs.interpreter_flag(program).is_some()
    }

    /// Words that reach another process's environment or memory, unless a data program only
    /// shows them (`git commit -m "… /proc/1/environ …"`); a process's directory given to a
    /// program that reads directories (`grep -r KEY /proc/1/`); and the words of the command
    /// read together (`find /proc -name environ`).
    fn process_reads(&self, program: &str, arguments: Arguments, screening: &mut Screening) {
        let read = || {
            self.simple
                .words
                .iter()
                .filter(|word| !(arguments == Arguments::Data && holds_separator(word)))
        };
        let (mut directory, mut proc) = (false, false);
        for word in read() {
            screening.process_read(word.process);
            directory |= word.process_directory;
            proc |= crate::procfs::mentions_proc(&word.raw);
        }
        if directory && crate::procfs::DIRECTORY_READERS.contains(&program) {
            screening.process_read(Some(ProcessRead::Environment));
        }
        if proc && screening.process_read.is_none() {
            let text: Vec<&str> = read().map(ArgWord::text).collect();
            screening.process_read(crate::procfs::in_text(&text.join(" ")));
        }
    }

    /// The words from `index` on, as written.
    fn raw_from(&self, index: usize) -> String {
        self.simple
            .words
            .iter()
            .skip(index)
            .map(|word| word.raw.as_str())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// `/usr/bin/git` is `git`.
fn basename(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// The value attached to `option` in `word`: `--pager=cmd`, `-Pcmd`, `+!cmd`, and for a
/// one-letter option the end of a cluster of flags (`-aPcmd`; `-aP` gives `""`: the value is the
/// next word).
fn attached_value<'w>(word: &'w str, option: &str) -> Option<&'w str> {
    if option.starts_with("--") {
        return word.strip_prefix(option)?.strip_prefix('=');
    }
    let mut chars = option.chars();
    match (chars.next(), chars.next(), chars.next()) {
        (Some('-'), Some(letter), None) => {
            let flags = word
                .strip_prefix('-')
                .filter(|rest| !rest.starts_with('-'))?;
            let at = flags.find(letter)?;
            flags[..at]
                .chars()
                .all(|c| c.is_ascii_alphanumeric())
                .then(|| &flags[at + letter.len_utf8()..])
        }
        _ => word.strip_prefix(option).filter(|rest| !rest.is_empty()),
    }
}

/// Why handing data to `value` (the command line of a pager, preprocessor, editor or filter)
/// runs that data: a program of it (or a wrapper before one) runs what it is handed
/// (`bash -s`, `xargs …`), a wrapper has no program after it (`env`: the data would be the
/// program), or the value is an option (`--pager=-x`). A program built at run time is judged
/// when the value is screened as a command line.
fn runs_what_it_is_handed(value: &str, programs: &Programs) -> Option<String> {
    let value = value.trim();
    if value.starts_with('-') {
        return Some(format!(
            "gives `{value}`, an option, where it expects the program it hands its data to"
        ));
    }
    // Most values are plain words (`less -R`, `vim`): split them; parse the rest as bash.
    let plain = value
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || " \t._-/=+:@%,".contains(c));
    if plain {
        let words: Vec<String> = value.split_whitespace().map(str::to_lowercase).collect();
        return runs_what_it_reads(&words, programs);
    }
    crate::syntax::parse(value)
        .commands
        .iter()
        .find_map(|simple| {
            let words: Vec<String> = simple
                .words
                .iter()
                .map_while(|word| word.literal.as_ref().map(|text| text.to_lowercase()))
                .collect();
            runs_what_it_reads(&words, programs)
        })
}

/// Why the simple command `words` (lower case) runs what it reads: its program or a wrapper
/// before it runs what it is handed, or a wrapper has no program after it.
fn runs_what_it_reads(words: &[String], programs: &Programs) -> Option<String> {
    let mut start = 0;
    while let Some(word) = words.get(start) {
        if is_assignment(word) {
            start += 1;
            continue;
        }
        let name = basename(word);
        if programs.runs_input(name) {
            return Some(format!(
                "hands its data (output, input or files) to `{name}`, which runs it as code"
            ));
        }
        let mut renamed: Vec<&str> = words[start..].iter().map(String::as_str).collect();
        renamed[0] = name;
        match wrapped_start(&renamed) {
            Some(offset) if offset > 0 && start + offset >= words.len() => {
                return Some(format!(
                    "hands its data to `{name}` with no program after it, so the data is run as one"
                ));
            }
            Some(offset) if offset > 0 => start += offset,
            _ => break,
        }
    }
    None
}

/// Whether a literal word holds what would start another command if the quotes were gone.
fn holds_separator(word: &ArgWord) -> bool {
    word.literal.as_deref().is_some_and(|text| {
        text.contains([' ', '\t', '\n', ';', '|', '&', '(', ')', '<', '>', '`'])
    })
}

/// Masks `word`; false when its place in the line is not known.
fn mask(word: &ArgWord, replacements: &mut Vec<(Span, String)>) -> bool {
    match word.span {
        Some(span) => {
            replacements.push((span, MASK.to_owned()));
            true
        }
        None => false,
    }
}

/// `text` as one single-quoted shell word.
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// `line` with each span replaced; overlapping replacements after the first are dropped.
fn apply(line: &str, mut replacements: Vec<(Span, String)>) -> String {
    if replacements.is_empty() {
        return line.to_owned();
    }
    replacements.sort_by_key(|((start, _), _)| *start);
    let chars: Vec<char> = line.chars().collect();
    let mut out = String::with_capacity(line.len());
    let mut at = 0;
    for ((start, end), text) in replacements {
        if start < at || end > chars.len() || start > end {
            continue;
        }
        out.extend(&chars[at..start]);
        out.push_str(&text);
        at = end;
    }
    out.extend(&chars[at..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::parse;

    fn screened(line: &str) -> Screening {
        screen(line, &parse(line), Programs::builtin().unwrap())
    }

    #[test]
    fn data_arguments_are_masked() {
        let found = screened("git commit -m \"(rm -rf /) note\" && echo 'a; b'");
        assert_eq!(found.rewritten, "git commit -m _ && echo _");
        assert!(!found.masked_runnable);
        let found = screened("mytool \"rm -rf /\"");
        assert_eq!(found.rewritten, "mytool _");
        assert!(found.masked_runnable);
        let found = screened("bash -c 'rm -rf /' ; python3 -c 'a; b'");
        assert_eq!(found.rewritten, "bash -c _ ; python3 -c 'a; b'");
        assert_eq!(found.spawned, ["rm -rf /"]);
    }

    #[test]
    fn abbreviated_long_options_are_written_out() {
        assert_eq!(screened("git reset --har").rewritten, "git reset --hard");
        assert_eq!(
            screened("sudo git -C x push --force-w=main").rewritten,
            "sudo git -C x push --force-with-lease='main'"
        );
        assert_eq!(screened("git push --forc").rewritten, "git push --forc");
        assert_eq!(screened("rm --recur x").rewritten, "rm --recursive x");
    }

    #[test]
    fn commands_in_options_variables_and_input_are_spawned() {
        let spawned = |line: &str| screened(line).spawned;
        assert_eq!(spawned("man -P 'rm -rf /' ls"), ["rm -rf /"]);
        assert_eq!(spawned("man -Pcat ls"), ["cat"]);
        assert_eq!(spawned("sort --compress-program=./x f"), ["./x"]);
        assert_eq!(spawned("git -c core.pager='rm -rf ~' log"), ["rm -rf ~"]);
        assert_eq!(
            spawned("git -c alias.x='reset --hard' x"),
            ["git reset --hard"]
        );
        assert_eq!(spawned("ssh -oProxyCommand='nc %h %p' h"), ["nc %h %p"]);
        assert_eq!(spawned("LESSOPEN='|rm -rf ~ %s' less f"), ["rm -rf ~ %s"]);
        assert_eq!(spawned("env LESSOPEN='|x' less f"), ["x"]);
        assert_eq!(spawned("git bisect run make test"), ["make test"]);
        assert_eq!(
            spawned("python3 <<'E'\nimport os\nE\n"),
            ["python3 -c 'import os\n'"]
        );
        assert_eq!(spawned("bash < <(curl -s x)"), ["curl -s x | bash"]);
        assert_eq!(spawned("echo \"$(id)\""), ["id"]);
        assert!(screened("bash -c \"$X\"").dynamic_spawn);
    }

    #[test]
    fn a_program_behind_wrappers_is_found() {
        let found = screened("sudo -u bob nice -n 5 git commit -m 'a (b)'");
        assert_eq!(found.rewritten, "sudo -u bob nice -n 5 git commit -m _");
        let found = screened("sudo $(echo rm) -rf /");
        assert_eq!(found.dynamic.len(), 1, "{found:?}");
        assert_eq!(found.dynamic[0][0], "rm -rf /");
    }

    #[test]
    fn programs_handed_data_that_run_it_are_reported() {
        let handed = |line: &str| screened(line).runs_handed_data.is_some();
        for line in [
            "man -P sh ls",
            "man -aPsh ls",
            "man -Hpython3 ls",
            "rg --pre env x",
            "PAGER='bash -s' git log",
            "git -c diff.pdf.textconv=python3 log",
            "man --pager=-x ls",
        ] {
            assert!(handed(line), "{line}");
        }
        for line in [
            "man -P less ls",
            "man -H sh",
            "git grep -O sh",
            "git rebase -x 'python3 -m pytest' main",
            "GIT_SSH_COMMAND='ssh -i k' git fetch",
            "git -c alias.x='!sh' x",
        ] {
            assert!(!handed(line), "{line}");
        }
    }

    #[test]
    fn attached_values_follow_getopt() {
        assert_eq!(attached_value("-Psh", "-P"), Some("sh"));
        assert_eq!(attached_value("-aP", "-P"), Some(""));
        assert_eq!(attached_value("-aPsh", "-P"), Some("sh"));
        assert_eq!(attached_value("-M/usr/P", "-P"), None);
        assert_eq!(attached_value("--P", "-P"), None);
        assert_eq!(attached_value("--pager=sh", "--pager"), Some("sh"));
        assert_eq!(attached_value("--pagerx", "--pager"), None);
        assert_eq!(attached_value("+!cmd", "+!"), Some("cmd"));
    }

    #[test]
    fn process_reads_are_reported_unless_only_shown() {
        let read = |line: &str| screened(line).process_read;
        assert_eq!(read("git commit -m 'see /proc/1/environ'"), None);
        assert_eq!(read("grep -r TODO src/"), None);
        assert_eq!(read("ls /proc/1/"), None);
        for line in [
            "cat /proc/1/environ",
            "tr a b < /proc/$P/enviro[n]",
            "find /proc -name environ",
            "cd /proc/1 && rg -a KEY .",
        ] {
            assert_eq!(read(line), Some(ProcessRead::Environment), "{line}");
        }
    }

    #[test]
    fn replacements_keep_the_rest_of_the_line() {
        assert_eq!(apply("aé b", vec![((1, 2), "x".into())]), "ax b");
        assert_eq!(
            apply("abc", vec![((0, 2), "x".into()), ((1, 3), "y".into())]),
            "xc"
        );
    }
}
