//! The command line as bash parses it (brush-parser), for what patterns on the
//! flat text cannot see: a command word built at run time (`rm${IFS}-rf /`,
//! `$(echo rm) -rf ~`, `X=rm; $X -rf ~`) and input bash would not parse.
//!
//! A simple command whose command word is not a literal is spelled out as far
//! as the line itself says (`$IFS` is a space, a variable assigned a literal
//! earlier on the line is its value, `$(echo WORDS)` is the words); what stays
//! unknown is tried as each program of [`STAND_INS`]. The classifier then
//! judges those spellings with the same lists as any command.

use std::collections::HashMap;

use brush_parser::ast::{
    Command, CommandPrefixOrSuffixItem, CompoundCommand, CompoundList, IoFileRedirectTarget,
    IoRedirect, SimpleCommand,
};
use brush_parser::word::{Parameter, ParameterExpr, WordPiece, WordPieceWithSource};
use brush_parser::{Parser, ParserOptions};

/// Programs an unknown command word is tried as: those whose arguments decide
/// whether they are hardline (`… -rf /`, `… of=/dev/sda`, `… -R 777 /`). Not
/// programs that are hardline whatever follows (`mkfs`): then every unknown
/// word would be.
const STAND_INS: &[&str] = &["rm", "dd", "chmod", "chown"];

/// What the parse of a command line found.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Parsed {
    /// Bash would not parse it.
    pub unparseable: bool,
    /// For each simple command whose command word is built at run time, the
    /// command lines it may stand for.
    pub dynamic: Vec<Vec<String>>,
}

/// Parses `command` and collects what [`Parsed`] lists. A parser that fails
/// in any way, even by panicking, makes the line unparseable: never a crash.
pub(crate) fn parse(command: &str) -> Parsed {
    let unparseable = Parsed {
        unparseable: true,
        dynamic: Vec::new(),
    };
    // The parser recurses per level: a hostile line nested thousands deep
    // would overflow the stack (an abort, not a panic), so it is not parsed.
    if nesting(command) > MAX_NESTING {
        return unparseable;
    }
    std::panic::catch_unwind(|| parse_unguarded(command)).unwrap_or(unparseable)
}

/// The deepest nesting parsed; real command lines stay far below it.
const MAX_NESTING: usize = 64;

/// How deep brackets and backquotes nest in `text` (counted on the raw text,
/// quotes included: an upper bound of what the parser recurses into).
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
            dynamic: Vec::new(),
        };
    };
    let mut walk = Walk {
        options,
        known: HashMap::new(),
        parsed: Parsed::default(),
    };
    for list in &program.complete_commands {
        walk.list(list);
    }
    walk.parsed
}

struct Walk {
    options: ParserOptions,
    /// Variables assigned a literal earlier on the line.
    known: HashMap<String, String>,
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
        for command in commands {
            self.command(command);
        }
    }

    fn command(&mut self, command: &Command) {
        match command {
            Command::Simple(simple) => self.simple(simple),
            Command::Compound(compound, redirects) => {
                self.compound(compound);
                for redirect in redirects.iter().flat_map(|list| &list.0) {
                    self.redirect(redirect);
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
            CompoundCommand::ForClause(clause) => self.list(&clause.body.list),
            CompoundCommand::ArithmeticForClause(clause) => self.list(&clause.body.list),
            CompoundCommand::CaseClause(clause) => {
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

    fn redirect(&mut self, redirect: &IoRedirect) {
        if let IoRedirect::File(_, _, IoFileRedirectTarget::ProcessSubstitution(_, subshell)) =
            redirect
        {
            self.list(&subshell.list);
        }
    }

    fn simple(&mut self, simple: &SimpleCommand) {
        let items = simple
            .prefix
            .iter()
            .flat_map(|prefix| &prefix.0)
            .chain(simple.suffix.iter().flat_map(|suffix| &suffix.0));
        let mut arguments = Vec::new();
        for item in items {
            match item {
                CommandPrefixOrSuffixItem::Word(word) => arguments.push(word.value.clone()),
                CommandPrefixOrSuffixItem::AssignmentWord(assignment, _) => {
                    self.assign(assignment, simple.word_or_name.is_none());
                }
                CommandPrefixOrSuffixItem::ProcessSubstitution(_, subshell) => {
                    self.list(&subshell.list);
                }
                CommandPrefixOrSuffixItem::IoRedirect(redirect) => self.redirect(redirect),
            }
        }
        let Some(word) = &simple.word_or_name else {
            return;
        };
        let Ok(pieces) = brush_parser::word::parse(&word.value, &self.options) else {
            self.parsed.unparseable = true;
            return;
        };
        if let Some(spellings) = self.spell(&pieces) {
            let rest = arguments.join(" ");
            self.parsed.dynamic.push(
                spellings
                    .into_iter()
                    .map(|spelled| format!("{spelled} {rest}").trim().to_owned())
                    .collect(),
            );
        }
    }

    /// `NAME=literal` on its own (not a command's environment) is known to
    /// later commands of the line.
    fn assign(&mut self, assignment: &brush_parser::ast::Assignment, standalone: bool) {
        use brush_parser::ast::{AssignmentName, AssignmentValue};
        let (AssignmentName::VariableName(name), AssignmentValue::Scalar(value)) =
            (&assignment.name, &assignment.value)
        else {
            return;
        };
        let literal = brush_parser::word::parse(&value.value, &self.options)
            .ok()
            .and_then(|pieces| literal_text(&pieces));
        match literal {
            Some(text) if standalone => {
                self.known.insert(name.clone(), text);
            }
            _ => {
                self.known.remove(name);
            }
        }
    }

    /// `None` for a literal word; else the spellings it may stand for.
    fn spell(&self, pieces: &[WordPieceWithSource]) -> Option<Vec<String>> {
        let mut spelled = String::new();
        let mut dynamic = false;
        let mut unknown = false;
        for piece in pieces {
            match &piece.piece {
                WordPiece::Text(text)
                | WordPiece::SingleQuotedText(text)
                | WordPiece::AnsiCQuotedText(text)
                | WordPiece::EscapeSequence(text) => spelled.push_str(text),
                WordPiece::TildeExpansion(_) => spelled.push('~'),
                WordPiece::DoubleQuotedSequence(inner)
                | WordPiece::GettextDoubleQuotedSequence(inner) => match self.spell(inner) {
                    None => spelled.push_str(&literal_text(inner).unwrap_or_default()),
                    Some(mut inner) => {
                        dynamic = true;
                        if inner.len() == 1 {
                            spelled.push_str(&inner.remove(0));
                        } else {
                            unknown = true;
                        }
                    }
                },
                WordPiece::ParameterExpansion(expr) => {
                    dynamic = true;
                    match self.parameter_value(expr) {
                        Some(value) => spelled.push_str(&value),
                        None => unknown = true,
                    }
                }
                WordPiece::CommandSubstitution(body)
                | WordPiece::BackquotedCommandSubstitution(body) => {
                    dynamic = true;
                    match echoed(body) {
                        Some(words) => spelled.push_str(&words),
                        None => unknown = true,
                    }
                }
                WordPiece::ArithmeticExpression(_) => {
                    dynamic = true;
                    unknown = true;
                }
            }
        }
        if !dynamic {
            return None;
        }
        let mut spellings = vec![spelled.clone()];
        if unknown || spelled.trim().is_empty() {
            spellings.extend(
                STAND_INS
                    .iter()
                    .map(|program| format!("{program} {spelled}")),
            );
        }
        Some(spellings)
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

/// The words `echo WORDS` or `printf WORDS` prints, when that is all the
/// substitution runs.
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

    fn spellings(command: &str) -> Vec<Vec<String>> {
        parse(command).dynamic
    }

    #[test]
    fn literal_command_words_are_not_dynamic() {
        assert_eq!(parse("ls -la /tmp && echo \"$HOME\""), Parsed::default());
        assert_eq!(parse("\"rm\" -rf build"), Parsed::default());
    }

    #[test]
    fn what_the_line_says_is_spelled_out() {
        assert_eq!(spellings("rm${IFS}-rf /")[0][0], "rm -rf /");
        assert_eq!(spellings("$(echo rm) -rf ~")[0][0], "rm -rf ~");
        assert_eq!(spellings("`echo rm` -rf /")[0][0], "rm -rf /");
        assert_eq!(spellings("X=rm; $X -rf ~")[0][0], "rm -rf ~");
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
