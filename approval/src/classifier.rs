//! The classifier: pattern lists loaded from TOML data and matched against normalised commands.

use std::collections::{BTreeMap, HashSet};
use std::sync::OnceLock;

use regex::Regex;
use serde::Deserialize;

use crate::error::ApprovalError;
use crate::normalize::normalize;
use crate::views::command_views;

/// The built-in lists, kept as data so they can be reviewed and extended without code changes.
const BUILTIN_PATTERNS: &str = include_str!("../patterns.toml");

/// How deeply `{{var}}` references may nest.
const MAX_VAR_DEPTH: usize = 8;

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
    /// Never allowed.
    Hardline(Finding),
}

/// Classifies commands against the hardline and dangerous lists.
#[derive(Debug)]
pub struct Classifier {
    hardline: Vec<Rule>,
    dangerous: Vec<Rule>,
}

#[derive(Debug)]
struct Rule {
    finding: Finding,
    scope: Scope,
    /// All must match (the same view, for command scope).
    regexes: Vec<Regex>,
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
    vars: BTreeMap<String, String>,
    #[serde(default)]
    hardline: Vec<RuleData>,
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
    /// The classifier for the built-in `patterns.toml`, compiled on first use.
    pub fn builtin() -> Result<&'static Classifier, ApprovalError> {
        static BUILTIN: OnceLock<Result<Classifier, String>> = OnceLock::new();
        BUILTIN
            .get_or_init(|| Classifier::from_toml(BUILTIN_PATTERNS).map_err(|e| e.to_string()))
            .as_ref()
            .map_err(|message| ApprovalError::Builtin(message.clone()))
    }

    /// Compiles pattern data in the `patterns.toml` format.
    pub fn from_toml(text: &str) -> Result<Self, ApprovalError> {
        let file: PatternFile = toml::from_str(text)?;
        let mut seen = HashSet::new();
        for rule in file.hardline.iter().chain(&file.dangerous) {
            if !seen.insert(rule.id.as_str()) {
                return Err(ApprovalError::DuplicateId(rule.id.clone()));
            }
        }
        let compile = |rules: Vec<RuleData>| {
            rules
                .into_iter()
                .map(|rule| Rule::compile(rule, &file.vars))
                .collect::<Result<Vec<_>, _>>()
        };
        Ok(Self {
            hardline: compile(file.hardline)?,
            dangerous: compile(file.dangerous)?,
        })
    }

    /// Classifies `command`; hardline rules are checked first, then dangerous ones, each in file
    /// order, and the first match wins.
    pub fn classify(&self, command: &str) -> Risk {
        let normalised = normalize(command);
        let views = command_views(&normalised);
        let first_match = |rules: &[Rule]| {
            rules
                .iter()
                .find(|rule| rule.matches(&normalised, &views))
                .map(|rule| rule.finding.clone())
        };
        if let Some(finding) = first_match(&self.hardline) {
            Risk::Hardline(finding)
        } else if let Some(finding) = first_match(&self.dangerous) {
            Risk::Dangerous(finding)
        } else {
            Risk::Safe
        }
    }
}

impl Rule {
    fn compile(data: RuleData, vars: &BTreeMap<String, String>) -> Result<Self, ApprovalError> {
        let regexes = std::iter::once(&data.pattern)
            .chain(&data.also)
            .map(|pattern| {
                let expanded = expand_vars(&data.id, pattern, vars, 0)?;
                Regex::new(&expanded).map_err(|source| ApprovalError::BadPattern {
                    id: data.id.clone(),
                    source,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            finding: Finding {
                id: data.id,
                description: data.description,
            },
            scope: data.scope,
            regexes,
        })
    }

    fn matches(&self, line: &str, views: &[&str]) -> bool {
        let all_match = |text: &str| self.regexes.iter().all(|re| re.is_match(text));
        match self.scope {
            Scope::Line => all_match(line),
            Scope::Command => views.iter().any(|view| all_match(view)),
        }
    }
}

/// Replaces each `{{name}}` in `pattern` with the `[vars]` entry wrapped in a non-capturing group.
/// Variables may use other variables; nesting is bounded so a cycle is an error, not a hang.
fn expand_vars(
    id: &str,
    pattern: &str,
    vars: &BTreeMap<String, String>,
    depth: usize,
) -> Result<String, ApprovalError> {
    let mut out = String::with_capacity(pattern.len());
    let mut rest = pattern;
    while let Some(start) = rest.find("{{") {
        let Some(len) = rest[start + 2..].find("}}") else {
            break;
        };
        let name = &rest[start + 2..start + 2 + len];
        let value = vars
            .get(name)
            .filter(|_| depth < MAX_VAR_DEPTH)
            .ok_or_else(|| ApprovalError::UndefinedVar {
                id: id.to_owned(),
                var: name.to_owned(),
            })?;
        out.push_str(&rest[..start]);
        out.push_str("(?:");
        out.push_str(&expand_vars(id, value, vars, depth + 1)?);
        out.push(')');
        rest = &rest[start + 2 + len + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_patterns_load() {
        let classifier = Classifier::builtin();
        assert!(classifier.is_ok(), "{:?}", classifier.err());
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
    fn hardline_wins_over_dangerous() {
        let data = "[[dangerous]]\nid = 'd'\npattern = '^rm'\ndescription = 'delete'\n\
                    [[hardline]]\nid = 'h'\npattern = '^rm -rf /$'\ndescription = 'root'";
        let classifier = Classifier::from_toml(data).unwrap();
        assert!(matches!(classifier.classify("rm -rf /"), Risk::Hardline(f) if f.id == "h"));
        assert!(matches!(classifier.classify("rm x"), Risk::Dangerous(f) if f.id == "d"));
        assert_eq!(classifier.classify("ls"), Risk::Safe);
    }
}
