//! The command line as bash parses it (brush-parser): every simple command with its words
//! (their text once unquoted, where in the line they stand, and what a word built at run time may
//! spell), the text fed to its standard input, and the assignments and command substitutions of
//! the line. [`crate::screen`] judges what the programs do with them.
//!
//! A word built at run time is spelled out as far as the line itself says (`$IFS` is a space, a
//! variable assigned a literal earlier on the line is its value, `$(echo WORDS)` is the words);
//! what stays unknown is tried as each program of [`STAND_INS`].
//!
//! Each word is also checked for another process's environment or memory ([`crate::procfs`]),
//! spelled with its unknown parts marked and read against the directory a `cd` or `pushd`
//! earlier on the line moved to.

use std::collections::HashMap;

use brush_parser::ast::{
    Assignment, AssignmentName, AssignmentValue, Command, CommandPrefixOrSuffixItem,
    CompoundCommand, CompoundList, IoFileRedirectKind, IoFileRedirectTarget, IoRedirect,
    SimpleCommand, SubshellCommand, Word,
};
use brush_parser::word::{Parameter, ParameterExpr, WordPiece, WordPieceWithSource};
use brush_parser::{Parser, ParserOptions};

use crate::procfs::{ProcessRead, UNKNOWN};

/// Programs an unknown command word is tried as: those whose arguments decide whether they are
/// hardline (`… -rf /`, `… of=/dev/sda`, `… -R 777 /`). Not programs that are hardline whatever
/// follows (`mkfs`): then every unknown word would be.
const STAND_INS: &[&str] = &["rm", "dd", "chmod", "chown"];

/// A span of characters in the parsed line: start, end (exclusive).
pub(crate) type Span = (usize, usize);

/// What the parse of a command line found.
#[derive(Debug, Default)]
pub(crate) struct Parsed {
    /// Bash would not parse it.
    pub unparseable: bool,
    /// Every simple command, those nested in compound commands and process substitutions too.
    pub commands: Vec<Simple>,
    /// `NAME=value` words: standalone, a command's environment, or operands of `export`.
    pub assignments: Vec<Assigned>,
    /// The text of every command substitution (`$(…)`, backquotes) in a word of the line.
    pub substitutions: Vec<String>,
    /// A word that is no command's argument (a redirect's file, a `for` list, an assignment)
    /// reaches another process's environment or memory.
    pub process_read: Option<ProcessRead>,
}

/// One simple command.
#[derive(Debug, Default)]
pub(crate) struct Simple {
    /// The command word, then its arguments.
    pub words: Vec<ArgWord>,
    /// Here-documents and here-strings: text fed to its standard input.
    pub fed: Vec<Fed>,
    /// Process substitutions it reads (`< <(cmd)`) or takes as arguments (`<(cmd)`).
    pub substituted: Vec<String>,
    /// What `echo`/`printf` prints into it through a pipe (`echo TEXT | sh`).
    pub piped: Option<String>,
}

/// A word of a simple command.
#[derive(Debug, Clone, Default)]
pub(crate) struct ArgWord {
    /// The word as written.
    pub raw: String,
    /// Its text once unquoted, when it has no expansion.
    pub literal: Option<String>,
    /// For a word built at run time, what it may spell.
    pub spellings: Vec<String>,
    /// For a word built at run time, its text with [`UNKNOWN`] for each part the line does
    /// not say.
    pub shape: Option<String>,
    /// Where it stands in the line.
    pub span: Option<Span>,
    /// As a path, it reaches another process's environment or memory.
    pub process: Option<ProcessRead>,
    /// As a path, it is another process's directory, or `/proc`.
    pub process_directory: bool,
}

impl ArgWord {
    /// Its text once unquoted, or for a word built at run time its shape.
    pub fn text(&self) -> &str {
        self.literal
            .as_deref()
            .or(self.shape.as_deref())
            .unwrap_or(&self.raw)
    }
}

/// Text fed to a command's standard input.
#[derive(Debug)]
pub(crate) struct Fed {
    pub text: String,
    /// Bash expands `$…` and substitutions in it (an unquoted here-document delimiter, or a
    /// here-string that is not a literal).
    pub expands: bool,
    pub span: Option<Span>,
}

/// A `NAME=value` word.
#[derive(Debug)]
pub(crate) struct Assigned {
    pub name: String,
    pub value: ArgWord,
}

/// Parses `command`. A parser that fails in any way, even by panicking, makes the line
/// unparseable: never a crash (where panics abort, [`crate::parse_check`] has a child parse
/// the whole line first).
pub(crate) fn parse(command: &str) -> Parsed {
    let unparseable = Parsed {
        unparseable: true,
        ..Parsed::default()
    };
    // The parser recurses per level: a hostile line nested thousands deep would overflow the
    // stack (an abort, not a panic), so it is not parsed.
    if nesting(command) > MAX_NESTING {
        return unparseable;
    }
    std::panic::catch_unwind(|| parse_unguarded(command)).unwrap_or(unparseable)
}

/// The deepest nesting parsed; real command lines stay far below it.
const MAX_NESTING: usize = 64;

/// How deep brackets and backquotes nest in `text` (counted on the raw text, quotes included:
/// an upper bound of what the parser recurses into).
fn nesting(text: &str) -> usize {
    let (mut depth, mut deepest, mut backquoted) = (0usize, 0usize, false);
    for c in text.chars() {
        match c {
            '(' | '{' | '[' => depth += 1,
            ')' | '}' | ']' => depth = depth.saturating_sub(1),
            '`' => {
                backquoted = !backquoted;
                if backquoted {
                    depth += 1;
                } else {
                    depth = depth.saturating_sub(1);
                }
            }
            _ => {}
        }
        deepest = deepest.max(depth);
    }
    deepest
}

fn parse_unguarded(command: &str) -> Parsed {
    let options = ParserOptions::default();
    let mut parser = Parser::new(std::io::Cursor::new(command.as_bytes()), &options);
    let Ok(program) = parser.parse_program() else {
        return Parsed {
            unparseable: true,
            ..Parsed::default()
        };
    };
    let mut walk = Walk {
        options,
        source: command.chars().collect(),
        known: HashMap::new(),
        cwd: None,
        pushed: Vec::new(),
        parsed: Parsed::default(),
    };
    for list in &program.complete_commands {
        walk.list(list);
    }
    walk.parsed
}

struct Walk {
    options: ParserOptions,
    /// The line, for the text of process substitutions.
    source: Vec<char>,
    /// Variables assigned a literal earlier on the line.
    known: HashMap<String, String>,
    /// The directory a `cd` or `pushd` earlier on the line moved to (`None`: the command's own).
    cwd: Option<String>,
    /// The directories `pushd` left, for `popd`.
    pushed: Vec<Option<String>>,
    parsed: Parsed,
}

impl Walk {
    fn list(&mut self, list: &CompoundList) {
        for item in &list.0 {
            let and_or = &item.0;
            self.pipeline(&and_or.first.seq);
            for next in &and_or.additional {
                let (brush_parser::ast::AndOr::And(pipeline)
                | brush_parser::ast::AndOr::Or(pipeline)) = next;
                self.pipeline(&pipeline.seq);
            }
        }
    }

    fn pipeline(&mut self, commands: &[Command]) {
        let mut printed = None;
        for command in commands {
            self.command(command);
            let Command::Simple(_) = command else {
                printed = None;
                continue;
            };
            // A simple command is recorded after what is nested in it: it is the last one.
            if let Some(simple) = self.parsed.commands.last_mut() {
                simple.piped = printed.take();
                printed = printed_text(simple);
            }
        }
    }

    fn command(&mut self, command: &Command) {
        match command {
            Command::Simple(simple) => self.simple(simple),
            Command::Compound(compound, redirects) => {
                self.compound(compound);
                let mut ignored = Simple::default();
                for redirect in redirects.iter().flat_map(|list| &list.0) {
                    self.redirect(redirect, &mut ignored);
                }
            }
            Command::Function(function) => self.compound(&function.body.0),
            Command::ExtendedTest(..) => {}
        }
    }

    fn compound(&mut self, compound: &CompoundCommand) {
        match compound {
            CompoundCommand::BraceGroup(group) => self.list(&group.list),
            CompoundCommand::Subshell(subshell) => self.list(&subshell.list),
            CompoundCommand::ForClause(clause) => {
                for value in clause.values.iter().flatten() {
                    self.loose_word(value);
                }
                self.list(&clause.body.list);
            }
            CompoundCommand::ArithmeticForClause(clause) => self.list(&clause.body.list),
            CompoundCommand::CaseClause(clause) => {
                self.loose_word(&clause.value);
                for case in &clause.cases {
                    if let Some(list) = &case.cmd {
                        self.list(list);
                    }
                }
            }
            CompoundCommand::IfClause(clause) => {
                self.list(&clause.condition);
                self.list(&clause.then);
                for other in clause.elses.iter().flatten() {
                    if let Some(condition) = &other.condition {
                        self.list(condition);
                    }
                    self.list(&other.body);
                }
            }
            CompoundCommand::WhileClause(clause) | CompoundCommand::UntilClause(clause) => {
                self.list(&clause.0);
                self.list(&clause.1.list);
            }
            CompoundCommand::Coprocess(coprocess) => self.command(&coprocess.body),
            CompoundCommand::Arithmetic(_) => {}
        }
    }

    fn redirect(&mut self, redirect: &IoRedirect, simple: &mut Simple) {
        match redirect {
            IoRedirect::File(_, kind, target) => match target {
                IoFileRedirectTarget::ProcessSubstitution(_, subshell) => {
                    if matches!(kind, IoFileRedirectKind::Read) {
                        simple.substituted.push(self.text_of(subshell));
                    }
                    self.list(&subshell.list);
                }
                IoFileRedirectTarget::Filename(word) | IoFileRedirectTarget::Duplicate(word) => {
                    self.loose_word(word);
                }
                IoFileRedirectTarget::Fd(_) => {}
            },
            IoRedirect::HereDocument(_, document) => {
                let text = document.doc.value.clone();
                let span = document.doc.loc.as_ref().map(|loc| {
                    let start = loc.start.index;
                    (start, start + text.chars().count())
                });
                if document.requires_expansion {
                    self.substitutions_in(&text);
                }
                simple.fed.push(Fed {
                    text,
                    expands: document.requires_expansion,
                    span,
                });
            }
            IoRedirect::HereString(_, word) => {
                let word = self.word(word);
                simple.fed.push(Fed {
                    expands: word.literal.is_none(),
                    text: word.literal.unwrap_or(word.raw),
                    span: word.span,
                });
            }
            IoRedirect::OutputAndError(word, _) => {
                self.loose_word(word);
            }
        }
    }

    fn simple(&mut self, command: &SimpleCommand) {
        let mut simple = Simple::default();
        let standalone = command.word_or_name.is_none();
        for item in command.prefix.iter().flat_map(|prefix| &prefix.0) {
            self.item(item, &mut simple, Some(standalone));
        }
        if let Some(word) = &command.word_or_name {
            let word = self.word(word);
            simple.words.push(word);
        }
        for item in command.suffix.iter().flat_map(|suffix| &suffix.0) {
            self.item(item, &mut simple, None);
        }
        self.change_directory(&simple.words);
        if !simple.words.is_empty() || !simple.fed.is_empty() {
            self.parsed.commands.push(simple);
        }
    }

    /// Follows `cd DIR`, `pushd DIR` and `popd`: later relative names are read against DIR.
    /// A directory the line does not say is [`UNKNOWN`]; home is the command's own (`None`).
    fn change_directory(&mut self, words: &[ArgWord]) {
        let Some(program) = words.first().and_then(|word| word.literal.as_deref()) else {
            return;
        };
        let target = words[1..]
            .iter()
            .map(ArgWord::text)
            .find(|text| !(text.starts_with('-') && text.len() > 1));
        match program {
            "cd" | "pushd" => {
                let next = match target {
                    None | Some("~") => None,
                    Some(dir) if dir.starts_with('~') => None,
                    Some("-") => Some(UNKNOWN.to_string()),
                    Some(dir) if dir.starts_with(['/', UNKNOWN]) => Some(dir.to_owned()),
                    Some(dir) => Some(match &self.cwd {
                        Some(cwd) => format!("{cwd}/{dir}"),
                        None => dir.to_owned(),
                    }),
                };
                if program == "pushd" {
                    self.pushed.push(self.cwd.take());
                }
                self.cwd = next;
            }
            "popd" => self.cwd = self.pushed.pop().flatten(),
            _ => {}
        }
    }

    /// An item before the command word (`prefix` says whether there is no command word) or
    /// after it (`None`).
    fn item(
        &mut self,
        item: &CommandPrefixOrSuffixItem,
        simple: &mut Simple,
        prefix: Option<bool>,
    ) {
        match item {
            CommandPrefixOrSuffixItem::Word(word) => {
                let word = self.word(word);
                simple.words.push(word);
            }
            CommandPrefixOrSuffixItem::AssignmentWord(assignment, word) => {
                self.assign(assignment, prefix == Some(true));
                // After the command word it is an argument (`ssh -o Key=value`), and an
                // assignment only for `export` and the like.
                if prefix.is_none() {
                    let word = self.word(word);
                    simple.words.push(word);
                }
            }
            CommandPrefixOrSuffixItem::ProcessSubstitution(_, subshell) => {
                simple.substituted.push(self.text_of(subshell));
                self.list(&subshell.list);
            }
            CommandPrefixOrSuffixItem::IoRedirect(redirect) => self.redirect(redirect, simple),
        }
    }

    /// Records `NAME=value`; on its own (not a command's environment) a literal value is known
    /// to later commands of the line.
    fn assign(&mut self, assignment: &Assignment, standalone: bool) {
        let words: Vec<&Word> = match &assignment.value {
            AssignmentValue::Scalar(value) => vec![value],
            AssignmentValue::Array(values) => values.iter().map(|(_, value)| value).collect(),
        };
        let values: Vec<ArgWord> = words
            .into_iter()
            .map(|word| self.loose_word(word))
            .collect();
        let AssignmentName::VariableName(name) = &assignment.name else {
            return;
        };
        match (&assignment.value, values.first()) {
            (AssignmentValue::Scalar(_), Some(value)) if standalone && value.literal.is_some() => {
                self.known
                    .insert(name.clone(), value.literal.clone().unwrap_or_default());
            }
            _ => {
                self.known.remove(name);
            }
        }
        for value in values {
            self.parsed.assignments.push(Assigned {
                name: name.clone(),
                value,
            });
        }
    }

    /// A word that is no command's argument: what it reaches is the line's.
    fn loose_word(&mut self, word: &Word) -> ArgWord {
        let word = self.word(word);
        self.parsed.process_read = self.parsed.process_read.or(word.process);
        word
    }

    /// A word: its literal text or spellings, its span, what it reaches as a path; its command
    /// substitutions are recorded.
    fn word(&mut self, word: &Word) -> ArgWord {
        let span = word
            .loc
            .as_ref()
            .map(|loc| (loc.start.index, loc.end.index));
        let Ok(pieces) = brush_parser::word::parse(&word.value, &self.options) else {
            self.parsed.unparseable = true;
            return ArgWord {
                raw: word.value.clone(),
                span,
                ..ArgWord::default()
            };
        };
        self.substitutions_of(&pieces);
        let literal = literal_text(&pieces);
        let (spellings, shape) = if literal.is_some() {
            (Vec::new(), None)
        } else {
            let (shape, unknown) = self.spell_pieces(&pieces);
            (spell(&shape, unknown), Some(shape))
        };
        let text = literal.as_deref().or(shape.as_deref()).unwrap_or_default();
        let (process, process_directory) = crate::procfs::judge_word(text, self.cwd.as_deref());
        ArgWord {
            raw: word.value.clone(),
            literal,
            spellings,
            shape,
            span,
            process,
            process_directory,
        }
    }

    fn substitutions_of(&mut self, pieces: &[WordPieceWithSource]) {
        for piece in pieces {
            match &piece.piece {
                WordPiece::CommandSubstitution(body)
                | WordPiece::BackquotedCommandSubstitution(body) => {
                    self.parsed.substitutions.push(body.clone());
                }
                WordPiece::DoubleQuotedSequence(inner)
                | WordPiece::GettextDoubleQuotedSequence(inner) => self.substitutions_of(inner),
                _ => {}
            }
        }
    }

    /// The command substitutions of text bash expands (an unquoted here-document).
    fn substitutions_in(&mut self, text: &str) {
        let quoted = format!("\"{}\"", text.replace('"', "\\\""));
        if let Ok(pieces) = brush_parser::word::parse(&quoted, &self.options) {
            self.substitutions_of(&pieces);
        }
    }

    fn text_of(&self, subshell: &SubshellCommand) -> String {
        let (start, end) = (subshell.loc.start.index, subshell.loc.end.index);
        let text: String = self
            .source
            .get(start..end)
            .map(|chars| chars.iter().collect())
            .unwrap_or_default();
        // The span may include the substitution's `(` and `)`.
        text.trim_start_matches(['<', '>'])
            .trim_start_matches('(')
            .trim_end_matches(')')
            .to_owned()
    }

    /// The text the line says `pieces` are, with [`UNKNOWN`] for each part it does not say,
    /// and whether there is one.
    fn spell_pieces(&self, pieces: &[WordPieceWithSource]) -> (String, bool) {
        let mut spelled = String::new();
        let mut unknown = false;
        for piece in pieces {
            match &piece.piece {
                WordPiece::Text(text)
                | WordPiece::SingleQuotedText(text)
                | WordPiece::AnsiCQuotedText(text)
                | WordPiece::EscapeSequence(text) => spelled.push_str(text),
                WordPiece::TildeExpansion(_) => spelled.push('~'),
                WordPiece::DoubleQuotedSequence(inner)
                | WordPiece::GettextDoubleQuotedSequence(inner) => {
                    let (text, inner_unknown) = self.spell_pieces(inner);
                    spelled.push_str(&text);
                    unknown |= inner_unknown;
                }
                WordPiece::ParameterExpansion(expr) => match self.parameter_value(expr) {
                    Some(value) => spelled.push_str(&value),
                    None => {
                        unknown = true;
                        spelled.push(UNKNOWN);
                    }
                },
                WordPiece::CommandSubstitution(body)
                | WordPiece::BackquotedCommandSubstitution(body) => match echoed(body) {
                    Some(words) => spelled.push_str(&words),
                    None => {
                        unknown = true;
                        spelled.push(UNKNOWN);
                    }
                },
                WordPiece::ArithmeticExpression(_) => {
                    unknown = true;
                    spelled.push(UNKNOWN);
                }
            }
        }
        (spelled, unknown)
    }

    /// What a parameter expansion is, when the line says.
    fn parameter_value(&self, expr: &ParameterExpr) -> Option<String> {
        let ParameterExpr::Parameter {
            parameter: Parameter::Named(name),
            indirect: false,
        } = expr
        else {
            return None;
        };
        match name.as_str() {
            // The default field separators: a word break.
            "IFS" => Some(" ".into()),
            _ => self.known.get(name).cloned(),
        }
    }
}

/// The spellings of a word built at run time from its `shape`: what the line says it is, and
/// where a part stays `unknown`, that tried as each stand-in program.
fn spell(shape: &str, unknown: bool) -> Vec<String> {
    let spelled = shape.replace(UNKNOWN, "");
    let mut spellings = vec![spelled.clone()];
    if unknown || spelled.trim().is_empty() {
        spellings.extend(
            STAND_INS
                .iter()
                .map(|program| format!("{program} {spelled}")),
        );
    }
    spellings
}

/// What an `echo` or `printf` of literal words prints (options left out).
fn printed_text(simple: &Simple) -> Option<String> {
    let (program, arguments) = simple.words.split_first()?;
    if !matches!(program.literal.as_deref()?, "echo" | "printf") {
        return None;
    }
    let words = arguments
        .iter()
        .map(|word| word.literal.as_deref())
        .skip_while(|word| word.is_some_and(|word| word.starts_with('-')))
        .collect::<Option<Vec<&str>>>()?;
    Some(words.join(" "))
}

/// The text of a word with no expansion in it.
fn literal_text(pieces: &[WordPieceWithSource]) -> Option<String> {
    let mut text = String::new();
    for piece in pieces {
        match &piece.piece {
            WordPiece::Text(part)
            | WordPiece::SingleQuotedText(part)
            | WordPiece::AnsiCQuotedText(part)
            | WordPiece::EscapeSequence(part) => text.push_str(part),
            WordPiece::DoubleQuotedSequence(inner)
            | WordPiece::GettextDoubleQuotedSequence(inner) => text.push_str(&literal_text(inner)?),
            _ => return None,
        }
    }
    Some(text)
}

/// The words `echo WORDS` or `printf WORDS` prints, when that is all the substitution runs.
fn echoed(body: &str) -> Option<String> {
    let mut words = body.split_whitespace();
    let program = words.next()?;
    if !matches!(program, "echo" | "printf") {
        return None;
    }
    let rest: Vec<&str> = words.filter(|word| !word.starts_with('-')).collect();
    let text = rest.join(" ");
    (!text.contains(['$', '`', ';', '|', '&', '(', ')'])).then(|| text.replace(['\'', '"'], ""))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The spellings of each command word built at run time.
    fn spellings(command: &str) -> Vec<Vec<String>> {
        parse(command)
            .commands
            .iter()
            .filter_map(|simple| simple.words.first())
            .filter(|word| word.literal.is_none())
            .map(|word| word.spellings.clone())
            .collect()
    }

    #[test]
    fn literal_command_words_are_not_dynamic() {
        assert!(spellings("ls -la /tmp && echo \"$HOME\"").is_empty());
        assert!(spellings("\"rm\" -rf build").is_empty());
        assert!(!parse("ls -la /tmp").unparseable);
    }

    #[test]
    fn what_the_line_says_is_spelled_out() {
        assert_eq!(spellings("rm${IFS}-rf /")[0][0], "rm -rf");
        assert_eq!(spellings("$(echo rm) -rf ~")[0][0], "rm");
        assert_eq!(spellings("`echo rm` -rf /")[0][0], "rm");
        assert_eq!(spellings("X=rm; $X -rf ~")[0][0], "rm");
    }

    #[test]
    fn unknown_words_are_tried_as_each_stand_in() {
        for command in ["${x/a/r}m -rf /", "$CMD -rf /", "$(which tool) -rf /"] {
            let found = spellings(command);
            assert_eq!(found.len(), 1, "{command}: {found:?}");
            for program in STAND_INS {
                assert!(
                    found[0]
                        .iter()
                        .any(|line| line.starts_with(&format!("{program} "))),
                    "{command}: {program} missing from {found:?}"
                );
            }
        }
    }

    #[test]
    fn words_keep_their_place_and_unquoted_text() {
        let parsed = parse("git commit -m \"(rm -rf /) note\"");
        let words = &parsed.commands[0].words;
        assert_eq!(words[3].literal.as_deref(), Some("(rm -rf /) note"));
        assert_eq!(words[3].span, Some((14, 31)));
    }

    #[test]
    fn fed_text_substitutions_and_assignments_are_found() {
        let parsed = parse("python3 <<'PY'\nimport os\nPY\n");
        assert_eq!(parsed.commands[0].fed[0].text, "import os\n");
        assert!(!parsed.commands[0].fed[0].expands);
        let parsed = parse("echo \"$(date)\" `id`; cat <<EOF\n$(whoami)\nEOF\n");
        assert_eq!(parsed.substitutions, ["date", "id", "whoami"]);
        let parsed = parse("bash < <(curl -s x)");
        // Nested commands come first: a command is recorded once its words are walked.
        assert_eq!(parsed.commands[1].substituted, ["curl -s x"]);
        let parsed = parse("LESSOPEN='|x %s' less f");
        assert_eq!(parsed.assignments[0].name, "LESSOPEN");
        assert_eq!(
            parsed.assignments[0].value.literal.as_deref(),
            Some("|x %s")
        );
    }

    #[test]
    fn words_are_read_against_the_directory_a_cd_moved_to() {
        let last_word = |line: &str| {
            let parsed = parse(line);
            let simple = parsed.commands.last().unwrap();
            simple.words.last().unwrap().process
        };
        let environ = Some(ProcessRead::Environment);
        assert_eq!(last_word("cd /proc/1 && cat environ"), environ);
        assert_eq!(last_word("cd /proc; cd 1; cat environ"), environ);
        assert_eq!(last_word("cd /proc/$X && cat environ"), environ);
        assert_eq!(last_word("cd /proc/self && cat environ"), None);
        assert_eq!(last_word("pushd /proc/1; popd; cat environ"), None);
        assert_eq!(last_word("cat environ"), None);
        assert_eq!(last_word("P=/proc/9; cat $P/environ"), environ);
        // A word that is no command's argument.
        assert_eq!(parse("tr a b < /proc/$A/enviro[n]").process_read, environ);
    }

    #[test]
    fn deep_nesting_is_refused_without_a_crash() {
        let deep = format!("{}true{}", "$(".repeat(2000), ")".repeat(2000));
        assert!(parse(&deep).unparseable);
        let (open, close) = ("(".repeat(5000), ")".repeat(5000));
        assert!(parse(&format!("echo {open}{close}")).unparseable);
        // The deepest nesting parsed fits a test thread's (small) stack.
        let nested = format!(
            "{}true{}",
            "$(".repeat(MAX_NESTING),
            ")".repeat(MAX_NESTING)
        );
        assert!(!parse(&nested).unparseable);
    }

    #[test]
    fn unterminated_input_is_unparseable() {
        assert!(parse("echo 'unterminated").unparseable);
        assert!(parse("if true; then").unparseable);
    }
}
