//! The threat scanner: rules loaded from TOML data (`threats.toml`) and matched against text that
//! is about to enter a system prompt — memory entries, context files, retrieved memory.
//!
//! Other crates (skills, plugins) use it through [`Scanner::builtin`].

use std::borrow::Cow;
use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::ops::Range;
use std::sync::OnceLock;

use serde::Deserialize;
use talaria_rules::{LiteralTable, PatternSet, Screen, expand_vars};

use crate::error::ScanError;
use crate::normalize::{is_invisible, normalize};

/// The built-in rules, kept as data so they can be reviewed and extended without code changes.
const BUILTIN_THREATS: &str = include_str!("../threats.toml");

/// The required literals of the built-in patterns, worked out by `build.rs`.
const BUILTIN_LITERALS: LiteralTable = include!(concat!(env!("OUT_DIR"), "/literals.rs"));

/// Characters of context shown on each side of a match in [`Threat::excerpt`].
const EXCERPT_CONTEXT: usize = 24;

/// Longest match shown in an excerpt; longer matches are cut in the middle.
const EXCERPT_MATCH_MAX: usize = 80;

/// What kind of attack a rule looks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// Text that tries to override the agent's instructions ("ignore previous instructions").
    PromptInjection,
    /// Fake conversation turns or chat-template markers (`system:`, `<|im_start|>`, `[INST]`).
    RoleHijack,
    /// Telling the agent to hide things from its user, or to leave no trace (no script on disk).
    Deception,
    /// Sending secrets somewhere or reading credential files.
    Exfiltration,
    /// Backdoors that outlive the session (authorized_keys, crontab, shell start-up files).
    Persistence,
    /// Instructions hidden in HTML (comments, `display:none`).
    HiddenHtml,
    /// Characters that render as nothing (zero-width, bidi overrides, tag characters).
    InvisibleUnicode,
    /// A secret written out in the text (`api_key="sk-…"`): never worth remembering.
    Credential,
    /// Text that makes agents spread or report in: beacon or send heartbeats to a
    /// command-and-control server, register as a node, take tasking from it, connect to a C2
    /// framework, unset the agent's own keys, copy the instruction into other files or agents.
    Promptware,
}

impl Category {
    /// Every category, in declaration order.
    pub const ALL: [Category; 9] = [
        Category::PromptInjection,
        Category::RoleHijack,
        Category::Deception,
        Category::Exfiltration,
        Category::Persistence,
        Category::HiddenHtml,
        Category::InvisibleUnicode,
        Category::Credential,
        Category::Promptware,
    ];

    /// The snake_case name used in `threats.toml` and in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Category::PromptInjection => "prompt_injection",
            Category::RoleHijack => "role_hijack",
            Category::Deception => "deception",
            Category::Exfiltration => "exfiltration",
            Category::Persistence => "persistence",
            Category::HiddenHtml => "hidden_html",
            Category::InvisibleUnicode => "invisible_unicode",
            Category::Credential => "credential",
            Category::Promptware => "promptware",
        }
    }
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A rule that matched, with enough context for a person to judge it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Threat {
    /// Stable rule id from `threats.toml`.
    pub rule_id: String,
    /// The kind of attack.
    pub category: Category,
    /// What the rule detects, in words.
    pub description: String,
    /// The matched text with a little context (normalised text, or for invisible characters the
    /// original text with those characters written as `\u{…}`).
    pub excerpt: String,
}

impl fmt::Display for Threat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({}): {} — {:?}",
            self.rule_id, self.category, self.description, self.excerpt
        )
    }
}

/// Which text a rule is matched against.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Stage {
    /// The original text, before normalisation (which removes invisible characters).
    Raw,
    /// The normalised text.
    #[default]
    Normalized,
}

/// Which texts a rule applies to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Applies {
    /// Every text: memory, context files, skills.
    #[default]
    Everywhere,
    /// Memory only: a project document may describe a cron job or an SSH key; a memory entry
    /// that does so is a backdoor or a leak.
    Memory,
}

/// What is being scanned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// A memory entry (written, or read into the snapshot): every rule.
    Memory,
    /// A document that enters the prompt (context files, skills): the rules marked
    /// `applies = "memory"` are skipped.
    Document,
}

/// Scans text for prompt injection, exfiltration, backdoors, hidden HTML and invisible Unicode.
/// A rule's regexes are compiled the first time a text contains a literal they require.
#[derive(Debug)]
pub struct Scanner {
    patterns: PatternSet,
    raw: Vec<Rule>,
    normalized: Vec<Rule>,
}

#[derive(Debug)]
struct Rule {
    id: String,
    category: Category,
    description: String,
    stage: Stage,
    applies: Applies,
    /// This and the following are indices into the scanner's patterns.
    pattern: usize,
    /// Must all match the same text as well.
    also: Vec<usize>,
    /// Harmless look-alikes, blanked out before `pattern` and `also` are tried.
    allow: Vec<usize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PatternFile {
    #[serde(default)]
    vars: BTreeMap<String, String>,
    #[serde(default)]
    rule: Vec<RuleData>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleData {
    id: String,
    category: Category,
    description: String,
    pattern: String,
    #[serde(default)]
    also: Vec<String>,
    #[serde(default)]
    allow: Vec<String>,
    #[serde(default)]
    stage: Stage,
    #[serde(default)]
    applies: Applies,
}

impl Scanner {
    /// The scanner for the built-in `threats.toml`, compiled on first use.
    pub fn builtin() -> Result<&'static Scanner, ScanError> {
        static BUILTIN: OnceLock<Result<Scanner, String>> = OnceLock::new();
        BUILTIN
            .get_or_init(|| Scanner::from_toml(BUILTIN_THREATS).map_err(|e| e.to_string()))
            .as_ref()
            .map_err(|message| ScanError::Builtin(message.clone()))
    }

    /// Loads rule data in the `threats.toml` format. Syntax is checked here; a regex is compiled
    /// when a text first needs it (see [`Scanner::compile_all`]).
    pub fn from_toml(text: &str) -> Result<Self, ScanError> {
        let file: PatternFile = toml::from_str(text)?;
        let mut seen = HashSet::new();
        for rule in &file.rule {
            if !seen.insert(rule.id.as_str()) {
                return Err(ScanError::DuplicateId(rule.id.clone()));
            }
        }
        let mut sources = Vec::new();
        let mut raw = Vec::new();
        let mut normalized = Vec::new();
        for data in file.rule {
            let rule = Rule::new(data, &file.vars, &mut sources)?;
            match rule.stage {
                Stage::Raw => raw.push(rule),
                Stage::Normalized => normalized.push(rule),
            }
        }
        let patterns = PatternSet::new(sources, BUILTIN_LITERALS)
            .map_err(|(id, source)| ScanError::BadPattern { id, source })?;
        Ok(Self {
            patterns,
            raw,
            normalized,
        })
    }

    /// Compiles every pattern now instead of on first use: checks the data completely.
    pub fn compile_all(&self) -> Result<(), ScanError> {
        self.patterns
            .compile_all()
            .map_err(|(id, source)| ScanError::BadPattern { id, source })
    }

    /// The first rule that matches the memory entry `text`: rules on the original text
    /// (invisible characters) first, then rules on the normalised text, each in file order.
    pub fn scan(&self, text: &str) -> Option<Threat> {
        self.matches(text, Scope::Memory).next()
    }

    /// Every rule that matches the memory entry `text` (each rule at most once), in the order
    /// [`Scanner::scan`] tries them.
    pub fn scan_all(&self, text: &str) -> Vec<Threat> {
        self.matches(text, Scope::Memory).collect()
    }

    /// Like [`Scanner::scan`], for text of the given scope.
    pub fn scan_in(&self, text: &str, scope: Scope) -> Option<Threat> {
        self.matches(text, scope).next()
    }

    /// Like [`Scanner::scan_all`], for text of the given scope.
    pub fn scan_all_in(&self, text: &str, scope: Scope) -> Vec<Threat> {
        self.matches(text, scope).collect()
    }

    /// The rules matching `text`, lazily, in [`Scanner::scan`]'s order.
    fn matches<'a>(&'a self, text: &'a str, scope: Scope) -> impl Iterator<Item = Threat> + 'a {
        let applies =
            move |rule: &&Rule| scope == Scope::Memory || rule.applies == Applies::Everywhere;
        let raw_screen = self.patterns.screen(text);
        let raw = self
            .raw
            .iter()
            .filter(applies)
            .filter_map(move |rule| rule.find(&self.patterns, &raw_screen, text));
        let normalized = std::iter::once_with(move || {
            let normalised = normalize(text);
            let screen = self.patterns.screen(&normalised);
            self.normalized
                .iter()
                .filter(applies)
                .filter_map(|rule| rule.find(&self.patterns, &screen, &normalised))
                .collect::<Vec<_>>()
        })
        .flatten();
        raw.chain(normalized)
    }

    /// The id and category of every rule, raw-stage rules first.
    pub fn rules(&self) -> impl Iterator<Item = (&str, Category)> {
        self.raw
            .iter()
            .chain(&self.normalized)
            .map(|rule| (rule.id.as_str(), rule.category))
    }
}

impl Rule {
    /// The rule for `data`, its expanded patterns appended to `sources`.
    fn new(
        data: RuleData,
        vars: &BTreeMap<String, String>,
        sources: &mut Vec<(String, String)>,
    ) -> Result<Self, ScanError> {
        let id = data.id;
        let mut add = |pattern: &String| {
            let expanded = expand_vars(pattern, vars).map_err(|var| ScanError::UndefinedVar {
                id: id.clone(),
                var: var.0,
            })?;
            sources.push((id.clone(), expanded));
            Ok::<_, ScanError>(sources.len() - 1)
        };
        let pattern = add(&data.pattern)?;
        let also = data.also.iter().map(&mut add).collect::<Result<_, _>>()?;
        let allow = data.allow.iter().map(&mut add).collect::<Result<_, _>>()?;
        Ok(Self {
            id,
            category: data.category,
            description: data.description,
            stage: data.stage,
            applies: data.applies,
            pattern,
            also,
            allow,
        })
    }

    /// Matches the rule against text already prepared for its stage and screened.
    fn find(&self, patterns: &PatternSet, screen: &Screen, text: &str) -> Option<Threat> {
        let mut text = Cow::Borrowed(text);
        // Blanking changes the text, so after it a pattern's own literals are checked again.
        let may_match = |index: usize, text: &Cow<'_, str>| match text {
            Cow::Borrowed(_) => screen.may_match(index),
            Cow::Owned(changed) => patterns.may_match(index, changed),
        };
        for &allowed in &self.allow {
            if !may_match(allowed, &text) {
                continue;
            }
            let regex = match patterns.regex(allowed) {
                Ok(regex) => regex,
                Err(error) => return Some(self.broken(&error)),
            };
            // A space keeps the words on either side apart.
            if let Cow::Owned(blanked) = regex.replace_all(&text, " ") {
                text = Cow::Owned(blanked);
            }
        }
        if !may_match(self.pattern, &text) {
            return None;
        }
        let found = match patterns.regex(self.pattern) {
            Ok(regex) => regex.find(&text)?.range(),
            Err(error) => return Some(self.broken(&error)),
        };
        for &also in &self.also {
            if !may_match(also, &text) {
                return None;
            }
            match patterns.regex(also) {
                Ok(regex) if !regex.is_match(&text) => return None,
                Ok(_) => {}
                Err(error) => return Some(self.broken(&error)),
            }
        }
        Some(self.threat(excerpt(&text, found)))
    }

    fn threat(&self, excerpt: String) -> Threat {
        Threat {
            rule_id: self.id.clone(),
            category: self.category,
            description: self.description.clone(),
            excerpt,
        }
    }

    /// A rule whose regex cannot be compiled blocks what it screens in: better a false alarm
    /// than letting an attack through unchecked.
    fn broken(&self, error: &talaria_rules::PatternError) -> Threat {
        self.threat(format!("(this rule's pattern does not compile: {error})"))
    }
}

/// The matched text with some context, on one line, invisible characters made visible.
fn excerpt(text: &str, range: Range<usize>) -> String {
    let before: Vec<char> = text[..range.start].chars().collect();
    let matched: Vec<char> = text[range.clone()].chars().collect();
    let after: Vec<char> = text[range.end..].chars().collect();
    let mut out = String::new();
    if before.len() > EXCERPT_CONTEXT {
        out.push('…');
    }
    let context_start = before.len().saturating_sub(EXCERPT_CONTEXT);
    out.extend(before[context_start..].iter().map(|&c| shown(c)));
    if matched.len() > EXCERPT_MATCH_MAX {
        let half = EXCERPT_MATCH_MAX / 2;
        out.extend(matched[..half].iter().map(|&c| shown(c)));
        out.push('…');
        out.extend(matched[matched.len() - half..].iter().map(|&c| shown(c)));
    } else {
        out.extend(matched.iter().map(|&c| shown(c)));
    }
    out.extend(after.iter().take(EXCERPT_CONTEXT).map(|&c| shown(c)));
    if after.len() > EXCERPT_CONTEXT {
        out.push('…');
    }
    out
}

/// How a character appears in an excerpt: line breaks as spaces, invisible and control
/// characters as `\u{…}` escapes.
fn shown(c: char) -> String {
    match c {
        '\n' | '\r' | '\t' => " ".to_owned(),
        c if is_invisible(c) || c.is_control() => format!("\\u{{{:x}}}", c as u32),
        c => c.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_threats_load_compile_and_cover_every_category() {
        let scanner = Scanner::builtin();
        assert!(scanner.is_ok(), "{:?}", scanner.err());
        let scanner = scanner.unwrap();
        let compiled = scanner.compile_all();
        assert!(compiled.is_ok(), "{compiled:?}");
        for category in Category::ALL {
            assert!(
                scanner.rules().any(|(_, c)| c == category),
                "no rule for {category}"
            );
        }
    }

    #[test]
    fn bad_data_is_an_error_not_a_panic() {
        let rule = |pattern: &str| {
            format!(
                "[[rule]]\nid = 'x'\ncategory = 'deception'\ndescription = 'd'\npattern = '{pattern}'"
            )
        };
        assert!(matches!(
            Scanner::from_toml(&rule("(")),
            Err(ScanError::BadPattern { .. })
        ));
        assert!(matches!(
            Scanner::from_toml(&rule("{{nope}}")),
            Err(ScanError::UndefinedVar { .. })
        ));
        assert!(matches!(
            Scanner::from_toml(
                "[[rule]]\nid = 'x'\ncategory = 'nonsense'\ndescription = 'd'\npattern = 'a'"
            ),
            Err(ScanError::PatternData(_))
        ));
        let twice = format!("{}\n{}", rule("a"), rule("b"));
        assert!(matches!(
            Scanner::from_toml(&twice),
            Err(ScanError::DuplicateId(_))
        ));
        let cycle = "[vars]\na = '{{a}}'\n[[rule]]\nid = 'x'\ncategory = 'deception'\n\
                     description = 'd'\npattern = '{{a}}'";
        assert!(matches!(
            Scanner::from_toml(cycle),
            Err(ScanError::UndefinedVar { .. })
        ));
    }

    #[test]
    fn also_and_allow_refine_a_match() {
        let data = "[[rule]]\nid = 'send'\ncategory = 'exfiltration'\ndescription = 'd'\n\
                    pattern = 'send'\nalso = ['token']\nallow = ['never send']";
        let scanner = Scanner::from_toml(data).unwrap();
        assert!(scanner.scan("send the token").is_some());
        assert!(scanner.scan("send the file").is_none());
        assert!(scanner.scan("never send the token").is_none());
        assert!(scanner.scan("never send it; send the token").is_some());
    }

    #[test]
    fn raw_rules_run_before_normalisation_removes_their_characters() {
        let data = "[[rule]]\nid = 'zw'\ncategory = 'invisible_unicode'\ndescription = 'd'\n\
                    stage = 'raw'\npattern = '\\x{200b}'\n\
                    [[rule]]\nid = 'word'\ncategory = 'prompt_injection'\ndescription = 'd'\n\
                    pattern = 'ignore'";
        let scanner = Scanner::from_toml(data).unwrap();
        let threat = scanner.scan("IG\u{200b}NORE").unwrap();
        assert_eq!(threat.rule_id, "zw");
        assert_eq!(threat.excerpt, "IG\\u{200b}NORE");
        let all: Vec<String> = scanner
            .scan_all("IG\u{200b}NORE")
            .into_iter()
            .map(|t| t.rule_id)
            .collect();
        assert_eq!(all, ["zw", "word"]);
    }

    #[test]
    fn excerpt_is_short_and_on_one_line() {
        let text = format!("{}\nmatch\n{}", "a".repeat(100), "b".repeat(100));
        let start = 101;
        let shown = excerpt(&text, start..start + 5);
        assert_eq!(
            shown,
            format!("…{} match {}…", "a".repeat(23), "b".repeat(23))
        );
        assert_eq!(excerpt("xyz", 1..2), "xyz");
    }
}
