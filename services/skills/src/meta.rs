//! Parsing and validating a `SKILL.md` (agentskills.io frontmatter).
//!
//! YAML goes into a `serde_yaml_ng::Value` first and is validated by hand, so
//! a wrong type in an optional field is a warning and unknown keys are kept,
//! never a failure.

use serde::Serialize;
use serde_yaml_ng::{Mapping, Value};

use crate::error::SkillError;
use crate::frontmatter::{normalize, split};
use crate::limits::{MAX_DESCRIPTION_CHARS, MAX_LOADED_DESCRIPTION_CHARS};
use crate::name::validate_name;
use crate::visibility::normalize_platform;

/// How strict parsing is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParseMode {
    /// Reading skills from disk: tolerate a description somewhat over the
    /// spec (truncated, with a warning) so real published skills load.
    Load,
    /// Text `skill_manage` is about to write: the spec's limits, exactly.
    Write,
}

/// When a skill is offered (the `metadata.hermes.*` fields, also accepted at
/// the top level).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Conditions {
    /// Hidden unless every one of these toolsets is available.
    pub requires_toolsets: Vec<String>,
    /// Hidden unless every one of these tools is available.
    pub requires_tools: Vec<String>,
    /// Hidden when any of these toolsets is available (the skill is a
    /// fallback for it).
    pub fallback_for_toolsets: Vec<String>,
    /// Hidden when any of these tools is available.
    pub fallback_for_tools: Vec<String>,
}

/// What a skill's frontmatter says.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SkillMeta {
    /// The skill's name (its identity).
    pub name: String,
    /// When to use it; shown in the level-0 index.
    pub description: String,
    /// `version`, as text.
    pub version: Option<String>,
    /// `license`.
    pub license: Option<String>,
    /// `platforms`, normalised to `linux` / `macos` / `windows`; empty = all.
    pub platforms: Vec<String>,
    /// `tags`.
    pub tags: Vec<String>,
    /// `related_skills`.
    pub related_skills: Vec<String>,
    /// `allowed-tools`.
    pub allowed_tools: Vec<String>,
    /// Conditional visibility.
    pub conditions: Conditions,
    /// The whole frontmatter, unknown keys included.
    #[serde(skip)]
    pub frontmatter: Mapping,
}

/// A parsed `SKILL.md`.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedSkill {
    /// The frontmatter.
    pub meta: SkillMeta,
    /// The markdown after the frontmatter (LF line endings).
    pub body: String,
    /// Non-fatal problems (ignored fields, a truncated description).
    pub warnings: Vec<String>,
}

/// Parses `SKILL.md` text. Errors name the first thing that makes the skill
/// unusable; everything milder ends up in [`ParsedSkill::warnings`].
pub fn parse_skill_md(text: &str, mode: ParseMode) -> Result<ParsedSkill, SkillError> {
    let invalid = SkillError::InvalidSkill;
    let text = normalize(text);
    let (yaml, body) = split(&text).map_err(invalid)?;
    let mut warnings = Vec::new();
    let value: Value = if yaml.trim().is_empty() {
        Value::Null
    } else {
        match serde_yaml_ng::from_str(yaml) {
            Ok(value) => value,
            // Hand-written frontmatter often trips YAML (`description: Use it: when …`);
            // plain `key: value` lines still say what was meant.
            Err(error) => match (mode, plain_key_values(yaml)) {
                (ParseMode::Load, Some(map)) => {
                    warnings.push(format!(
                        "the frontmatter is not valid YAML ({error}); read as plain 'key: value' \
                         lines"
                    ));
                    Value::Mapping(map)
                }
                _ => {
                    return Err(invalid(format!(
                        "the frontmatter is not valid YAML: {error}"
                    )));
                }
            },
        }
    };
    let Value::Mapping(map) = untag(&value).clone() else {
        return Err(invalid(
            "the frontmatter must be a YAML mapping with at least 'name' and 'description'".into(),
        ));
    };

    let name = required_string(&map, "name")?;
    validate_name(&name).map_err(|e| invalid(format!("'name': {e}")))?;
    let description = description(&map, mode, &mut warnings)?;

    let hermes = map.get("metadata").and_then(|m| untag(m).get("hermes"));
    let field = |key: &str, warnings: &mut Vec<String>| {
        let mut items = list(map.get(key), key, false, warnings);
        let nested = hermes.and_then(|h| untag(h).get(key));
        for item in list(nested, &format!("metadata.hermes.{key}"), false, warnings) {
            if !items.contains(&item) {
                items.push(item);
            }
        }
        items
    };
    let conditions = Conditions {
        requires_toolsets: field("requires_toolsets", &mut warnings),
        requires_tools: field("requires_tools", &mut warnings),
        fallback_for_toolsets: field("fallback_for_toolsets", &mut warnings),
        fallback_for_tools: field("fallback_for_tools", &mut warnings),
    };
    let mut platforms: Vec<String> = Vec::new();
    for platform in list(map.get("platforms"), "platforms", false, &mut warnings) {
        let platform = normalize_platform(&platform);
        if !platforms.contains(&platform) {
            platforms.push(platform);
        }
    }
    let meta = SkillMeta {
        name,
        description,
        version: scalar(&map, "version", &mut warnings),
        license: scalar(&map, "license", &mut warnings),
        platforms,
        tags: field("tags", &mut warnings),
        related_skills: field("related_skills", &mut warnings),
        allowed_tools: list(
            map.get("allowed-tools"),
            "allowed-tools",
            true,
            &mut warnings,
        ),
        conditions,
        frontmatter: map.clone(),
    };
    Ok(ParsedSkill {
        meta,
        body: body.to_owned(),
        warnings,
    })
}

/// YAML tags (`!foo value`) carry no meaning here; look through them.
fn untag(value: &Value) -> &Value {
    match value {
        Value::Tagged(tagged) => untag(&tagged.value),
        other => other,
    }
}

fn required_string(map: &Mapping, key: &str) -> Result<String, SkillError> {
    match map.get(key).map(untag) {
        Some(Value::String(text)) if !text.trim().is_empty() => Ok(text.trim().to_owned()),
        Some(Value::String(_)) => Err(SkillError::InvalidSkill(format!("'{key}' is empty"))),
        None | Some(Value::Null) => Err(SkillError::InvalidSkill(format!("'{key}' is missing"))),
        Some(_) => Err(SkillError::InvalidSkill(format!(
            "'{key}' must be a string"
        ))),
    }
}

fn description(
    map: &Mapping,
    mode: ParseMode,
    warnings: &mut Vec<String>,
) -> Result<String, SkillError> {
    let description = required_string(map, "description")?;
    let chars = description.chars().count();
    let limit = match mode {
        ParseMode::Write => MAX_DESCRIPTION_CHARS,
        ParseMode::Load => MAX_LOADED_DESCRIPTION_CHARS,
    };
    if chars > limit {
        return Err(SkillError::InvalidSkill(format!(
            "'description' is {chars} characters long; the limit is {limit}"
        )));
    }
    if chars > MAX_DESCRIPTION_CHARS {
        warnings.push(format!(
            "'description' is {chars} characters long (limit {MAX_DESCRIPTION_CHARS}); truncated"
        ));
        let mut short: String = description
            .chars()
            .take(MAX_DESCRIPTION_CHARS - 3)
            .collect();
        short.push_str("...");
        return Ok(short);
    }
    Ok(description)
}

/// An optional scalar (string or number) as text.
fn scalar(map: &Mapping, key: &str, warnings: &mut Vec<String>) -> Option<String> {
    match map.get(key).map(untag) {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) if text.trim().is_empty() => None,
        Some(Value::String(text)) => Some(text.trim().to_owned()),
        Some(Value::Number(number)) => Some(number.to_string()),
        Some(_) => {
            warnings.push(format!("'{key}' should be a string; ignored"));
            None
        }
    }
}

/// A list of strings, also accepted as one comma-separated string (and, for
/// `allowed-tools`, a space-separated one as the spec writes it).
fn list(
    value: Option<&Value>,
    key: &str,
    split_whitespace: bool,
    warnings: &mut Vec<String>,
) -> Vec<String> {
    let mut items = Vec::new();
    match value.map(untag) {
        None | Some(Value::Null) => {}
        Some(Value::String(text)) => {
            if split_whitespace && !text.contains(',') {
                items.extend(text.split_whitespace().map(str::to_owned));
            } else {
                items.extend(text.split(',').map(|s| s.trim().to_owned()));
            }
        }
        Some(Value::Sequence(values)) => {
            let mut ignored = false;
            for value in values.iter().map(untag) {
                match value {
                    Value::String(text) => items.push(text.trim().to_owned()),
                    Value::Number(number) => items.push(number.to_string()),
                    Value::Bool(flag) => items.push(flag.to_string()),
                    _ => ignored = true,
                }
            }
            if ignored {
                warnings.push(format!("'{key}' has items that are not strings; ignored"));
            }
        }
        Some(_) => warnings.push(format!("'{key}' should be a list of strings; ignored")),
    }
    items.retain(|item| !item.is_empty());
    items
}

/// Frontmatter read as plain `key: value` lines, when every line is one (or an indented
/// continuation of the one before, or a comment): the value is the rest of the line, unquoted.
/// `None` when a line fits no such reading or a value is YAML structure (`[…`, `|` …).
fn plain_key_values(yaml: &str) -> Option<Mapping> {
    let mut map = Mapping::new();
    let mut last: Option<String> = None;
    for line in yaml.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if line.starts_with([' ', '\t']) {
            let key = last.as_ref()?;
            let value = map.get_mut(key.as_str())?;
            let joined = format!("{} {trimmed}", value.as_str().unwrap_or_default());
            *value = Value::String(joined.trim().to_owned());
            continue;
        }
        let (key, value) = line.split_once(':')?;
        let key = key.trim();
        let simple = !key.is_empty()
            && key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !simple {
            return None;
        }
        let value = value.trim();
        // YAML structure (flow lists, block scalars, anchors, tags) was meant as YAML.
        if value.starts_with(['[', '{', '|', '>', '&', '*', '!']) {
            return None;
        }
        let value = value
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .or_else(|| value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
            .unwrap_or(value);
        // A key given twice has no clean reading.
        if map
            .insert(
                Value::String(key.to_owned()),
                Value::String(value.to_owned()),
            )
            .is_some()
        {
            return None;
        }
        last = Some(key.to_owned());
    }
    (!map.is_empty()).then_some(map)
}

#[cfg(test)]
mod tests;
