//! The classifier: pattern lists loaded from TOML data and matched against normalised commands.
//!
//! A rule's regexes are compiled the first time a command contains a literal they require
//! (talaria-rules), so classifying `ls` compiles nothing.

use std::collections::HashSet;
use std::sync::OnceLock;

use serde::Deserialize;
use talaria_rules::{LiteralTable, PatternSet, Screen, expand_vars};

use crate::error::ApprovalError;
use crate::normalize::normalize;
use crate::views::command_views;

/// The built-in lists, kept as data so they can be reviewed and extended without code changes.
const BUILTIN_PATTERNS: &str = include_str!("../patterns.toml");

/// The required literals of the built-in patterns, worked out by `build.rs`.
const BUILTIN_LITERALS: LiteralTable = include!(concat!(env!("OUT_DIR"), "/literals.rs"));

/// Which rule matched a command, in words the user can judge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// Stable rule id; "session" and "always" approvals are remembered per id.
    pub id: String,
    /// What the matched command does, e.g. "recursive delete of a system directory".
    pub description: String,
}

/// How risky a command is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Risk {
    /// No rule matched.
    Safe,
    /// Needs the user's approval (skipped in yolo mode and sandboxes).
    Dangerous(Finding),
    /// Changes the agent's own controls: needs the user's approval even in yolo mode and in a
    /// sandbox, and is refused where nobody can answer.
    Protected(Finding),
    /// Never allowed.
    Hardline(Finding),
}

/// Classifies commands against the hardline and dangerous lists.
#[derive(Debug)]
pub struct Classifier {
    patterns: PatternSet,
    hardline: Vec<Rule>,
    protected: Vec<Rule>,
    dangerous: Vec<Rule>,
}

#[derive(Debug)]
struct Rule {
    finding: Finding,
    scope: Scope,
    /// Indices into the classifier's patterns; all must match (the same view, for command scope).
    regexes: Vec<usize>,
}

#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum Scope {
    /// Matched at every command position; `^` is the start of the command.
    #[default]
    Command,
    /// Matched once against the whole normalised line (pipelines, fork bombs).
    Line,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PatternFile {
    #[serde(default)]
    vars: std::collections::BTreeMap<String, String>,
    #[serde(default)]
    hardline: Vec<RuleData>,
    #[serde(default)]
    protected: Vec<RuleData>,
    #[serde(default)]
    dangerous: Vec<RuleData>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleData {
    id: String,
    pattern: String,
    #[serde(default)]
    also: Vec<String>,
    #[serde(default)]
    scope: Scope,
    description: String,
}

impl Classifier {
    /// The classifier for the built-in `patterns.toml`, loaded on first use.
    pub fn builtin() -> Result<&'static Classifier, ApprovalError> {
        static BUILTIN: OnceLock<Result<Classifier, String>> = OnceLock::new();
        BUILTIN
            .get_or_init(|| Classifier::from_toml(BUILTIN_PATTERNS).map_err(|e| e.to_string()))
            .as_ref()
            .map_err(|message| ApprovalError::Builtin(message.clone()))
    }

    /// Loads pattern data in the `patterns.toml` format. Syntax is checked here; a regex is
    /// compiled when a command first needs it (see [`Classifier::compile_all`]).
    pub fn from_toml(text: &str) -> Result<Self, ApprovalError> {
        let file: PatternFile = toml::from_str(text)?;
        let mut seen = HashSet::new();
        for rule in file
            .hardline
            .iter()
            .chain(&file.protected)
            .chain(&file.dangerous)
        {
            if !seen.insert(rule.id.as_str()) {
                return Err(ApprovalError::DuplicateId(rule.id.clone()));
            }
        }
        let mut sources = Vec::new();
        let mut rules = |list: Vec<RuleData>| {
            list.into_iter()
                .map(|data| {
                    let regexes = std::iter::once(&data.pattern)
                        .chain(&data.also)
                        .map(|pattern| {
                            let expanded = expand_vars(pattern, &file.vars).map_err(|var| {
                                ApprovalError::UndefinedVar {
                                    id: data.id.clone(),
                                    var: var.0,
                                }
                            })?;
                            sources.push((data.id.clone(), expanded));
                            Ok(sources.len() - 1)
                        })
                        .collect::<Result<Vec<_>, ApprovalError>>()?;
                    Ok(Rule {
                        finding: Finding {
                            id: data.id,
                            description: data.description,
                        },
                        scope: data.scope,
                        regexes,
                    })
                })
                .collect::<Result<Vec<_>, ApprovalError>>()
        };
        let hardline = rules(file.hardline)?;
        let protected = rules(file.protected)?;
        let dangerous = rules(file.dangerous)?;
        let patterns = PatternSet::new(sources, BUILTIN_LITERALS)
            .map_err(|(id, source)| ApprovalError::BadPattern { id, source })?;
        Ok(Self {
            patterns,
            hardline,
            protected,
            dangerous,
        })
    }

    /// Compiles every pattern now instead of on first use: checks the data completely.
    pub fn compile_all(&self) -> Result<(), ApprovalError> {
        self.patterns
            .compile_all()
            .map_err(|(id, source)| ApprovalError::BadPattern { id, source })
    }

    /// Classifies `command` as bash would run it: the lists judge the line with data arguments
    /// masked and abbreviated options written out, and every command line its programs run
    /// (option values, `-c` payloads, fed scripts, substitutions); a command word built at run
    /// time is judged as each line it may spell and is at least dangerous, and so is a shell or
    /// interpreter named as the program data is handed to (`man -P sh`) and a path to another
    /// process's environment or memory however spelled. A line bash would not parse is judged
    /// on its text and is at least dangerous.
    pub fn classify(&self, command: &str) -> Risk {
        // Where panics abort, a child parses the line and every line it runs first.
        if !crate::parse_check::parser_survives(command) {
            return self.unparseable(command);
        }
        self.classify_nested(command, 0)
    }

    fn classify_nested(&self, command: &str, depth: usize) -> Risk {
        let parsed = crate::syntax::parse(command);
        if parsed.unparseable {
            return self.unparseable(command);
        }
        let Ok(programs) = crate::programs::Programs::builtin() else {
            // The built-in data is checked by tests; without it only the text can be judged.
            return self.classify_text(command);
        };
        let screening = crate::screen::screen(command, &parsed, programs);
        let mut risk = self.classify_text(&screening.rewritten);
        for line in screening.dynamic.iter().flatten() {
            if let Risk::Hardline(finding) = self.classify_text(line) {
                return Risk::Hardline(Finding {
                    description: format!(
                        "{} (its command name is built at run time)",
                        finding.description
                    ),
                    ..finding
                });
            }
        }
        if depth < MAX_SPAWN_DEPTH {
            for line in &screening.spawned {
                risk = worse(risk, self.classify_nested(line, depth + 1));
            }
        } else if !screening.spawned.is_empty() {
            risk = at_least_dangerous(
                risk,
                "nested-too-deep",
                "runs commands nested too deep to check",
            );
        }
        if let Some(why) = &screening.runs_handed_data {
            risk = at_least_dangerous(risk, "interpreter-as-filter", why);
        }
        if let Some(read) = screening.process_read {
            risk = at_least_dangerous(risk, read.id(), read.description());
        }
        if screening.masked_runnable && screening.rewritten != command {
            risk = match self.classify_text(command) {
                Risk::Hardline(finding) => at_least_dangerous(
                    risk,
                    "command-in-argument",
                    &format!(
                        "passes what looks like a {} as an argument to a program that may run it",
                        finding.description
                    ),
                ),
                unmasked => worse(risk, unmasked),
            };
        }
        if !screening.dynamic.is_empty() {
            risk = at_least_dangerous(
                risk,
                "dynamic-command-word",
                "runs a command whose name is built at run time",
            );
        }
        if screening.dynamic_spawn {
            risk = at_least_dangerous(
                risk,
                "dynamic-spawned-command",
                "passes a command built at run time to a program that runs it",
            );
        }
        risk
    }

    /// A line bash would not parse: judged on its text, at least dangerous.
    fn unparseable(&self, command: &str) -> Risk {
        at_least_dangerous(
            self.classify_text(command),
            "unparseable",
            "is not a command line bash can parse, so it cannot be checked",
        )
    }

    /// Classifies the text of `command` against the lists: hardline rules first (and the
    /// fork-bomb shapes regexes cannot express), then protected ones, then dangerous ones, each
    /// in file order; the first match wins.
    pub fn classify_text(&self, command: &str) -> Risk {
        let normalised = normalize(command);
        let views = command_views(&normalised);
        // Views are slices of the line: a literal missing from the line is missing from all.
        let screen = self.patterns.screen(&normalised);
        let first_match = |rules: &[Rule]| {
            rules
                .iter()
                .find(|rule| rule.matches(&self.patterns, &screen, &normalised, &views))
                .map(|rule| rule.finding.clone())
        };
        if let Some(finding) = first_match(&self.hardline) {
            Risk::Hardline(finding)
        } else if crate::shapes::recursive_background_function(&normalised) {
            Risk::Hardline(Finding {
                id: "fork-bomb-function".into(),
                description: "fork bomb".into(),
            })
        } else if let Some(finding) = first_match(&self.protected) {
            Risk::Protected(finding)
        } else if let Some(finding) = first_match(&self.dangerous) {
            Risk::Dangerous(finding)
        } else {
            Risk::Safe
        }
    }
}

/// How many command lines deep (a payload's payload …) the screen follows.
const MAX_SPAWN_DEPTH: usize = 8;

/// Parses `command` and every line it runs that [`Classifier::classify`] would parse (the
/// same walk, with no lists to judge by): what the parse check's child does.
pub(crate) fn parse_all(command: &str, depth: usize) {
    let parsed = crate::syntax::parse(command);
    let Ok(programs) = crate::programs::Programs::builtin() else {
        return;
    };
    if parsed.unparseable || depth >= MAX_SPAWN_DEPTH {
        return;
    }
    for line in &crate::screen::screen(command, &parsed, programs).spawned {
        parse_all(line, depth + 1);
    }
}

impl Risk {
    fn severity(&self) -> u8 {
        match self {
            Risk::Safe => 0,
            Risk::Dangerous(_) => 1,
            Risk::Protected(_) => 2,
            Risk::Hardline(_) => 3,
        }
    }
}

/// The more severe of two risks (the first on a tie).
fn worse(first: Risk, second: Risk) -> Risk {
    if second.severity() > first.severity() {
        second
    } else {
        first
    }
}

/// `risk`, or dangerous with this finding when it is safe.
fn at_least_dangerous(risk: Risk, id: &str, description: &str) -> Risk {
    match risk {
        Risk::Safe => Risk::Dangerous(Finding {
            id: id.into(),
            description: description.into(),
        }),
        other => other,
    }
}

impl Rule {
    fn matches(&self, patterns: &PatternSet, screen: &Screen, line: &str, views: &[&str]) -> bool {
        if !self.regexes.iter().all(|&index| screen.may_match(index)) {
            return false;
        }
        // A pattern that cannot be compiled counts as matching: the command needs a person.
        let all_match = |text: &str| {
            self.regexes.iter().all(|&index| {
                patterns
                    .regex(index)
                    .map_or(true, |regex| regex.is_match(text))
            })
        };
        match self.scope {
            Scope::Line => all_match(line),
            Scope::Command => views.iter().any(|view| all_match(view)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_patterns_load_and_compile() {
        let classifier = Classifier::builtin();
        assert!(classifier.is_ok(), "{:?}", classifier.err());
        let compiled = classifier.map(Classifier::compile_all);
        assert!(matches!(compiled, Ok(Ok(()))), "{compiled:?}");
    }

    #[test]
    fn bad_data_is_an_error_not_a_panic() {
        assert!(matches!(
            Classifier::from_toml("[[dangerous]]\nid = 'x'\npattern = '('\ndescription = 'd'"),
            Err(ApprovalError::BadPattern { .. })
        ));
        assert!(matches!(
            Classifier::from_toml(
                "[[dangerous]]\nid = 'x'\npattern = '{{nope}}'\ndescription = 'd'"
            ),
            Err(ApprovalError::UndefinedVar { .. })
        ));
        assert!(matches!(
            Classifier::from_toml("hardline = 3"),
            Err(ApprovalError::PatternData(_))
        ));
        let twice = "[[hardline]]\nid = 'x'\npattern = 'a'\ndescription = 'd'\n\
                     [[dangerous]]\nid = 'x'\npattern = 'b'\ndescription = 'd'";
        assert!(matches!(
            Classifier::from_toml(twice),
            Err(ApprovalError::DuplicateId(_))
        ));
    }

    #[test]
    fn payloads_are_followed_a_bounded_depth() {
        let classifier = Classifier::builtin().unwrap();
        let three = format!("{}rm -rf /", "eval ".repeat(3));
        assert!(matches!(classifier.classify(&three), Risk::Hardline(_)));
        // Deeper than the screen follows: still not safe.
        let twenty = format!("{}rm -rf /", "eval ".repeat(20));
        assert!(matches!(classifier.classify(&twenty), Risk::Dangerous(_)));
    }

    #[test]
    fn quoted_commands_stay_dangerous_where_the_program_may_run_them() {
        let classifier = Classifier::builtin().unwrap();
        assert_eq!(classifier.classify("echo 'a; rm -rf /'"), Risk::Safe);
        assert!(matches!(
            classifier.classify("mytool 'a; rm -rf /'"),
            Risk::Dangerous(f) if f.id == "command-in-argument"
        ));
        assert!(matches!(
            classifier.classify("sh -c 'a; rm -rf /'"),
            Risk::Hardline(f) if f.id == "rm-system-root"
        ));
    }

    #[test]
    fn hardline_wins_over_dangerous() {
        let data = "[[dangerous]]\nid = 'd'\npattern = '^rm'\ndescription = 'delete'\n\
                    [[hardline]]\nid = 'h'\npattern = '^rm -rf /$'\ndescription = 'root'";
        let classifier = Classifier::from_toml(data).unwrap();
        assert!(matches!(classifier.classify("rm -rf /"), Risk::Hardline(f) if f.id == "h"));
        assert!(matches!(classifier.classify("rm x"), Risk::Dangerous(f) if f.id == "d"));
        assert_eq!(classifier.classify("ls"), Risk::Safe);
    }
}
