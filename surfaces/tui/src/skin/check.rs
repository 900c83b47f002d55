//! Checking a skin file: its YAML parsed with line numbers, each key's type and
//! range checked, and errors located at the file, line and key they come from.

use super::*;

/// The checks of one skin file, with the origin and line map for its errors.
pub(super) struct Checker<'a> {
    origin: &'a str,
    lines: KeyLines,
}

impl Checker<'_> {
    fn err(&self, key: &str, message: impl Into<String>) -> SkinError {
        SkinError::Invalid {
            origin: self.origin.to_string(),
            line: self.lines.line_of(key),
            key: (!key.is_empty()).then(|| key.to_string()),
            message: message.into(),
        }
    }

    /// A mapping's entries with string keys, each key checked against `allowed`.
    fn mapping<'v>(
        &self,
        key: &str,
        value: &'v Value,
        allowed: Option<&[&str]>,
    ) -> Result<Vec<(String, &'v Value)>, SkinError> {
        let Value::Mapping(map) = value else {
            return Err(self.err(key, format!("expected a mapping, found {}", kind(value))));
        };
        let mut out = Vec::new();
        for (k, v) in map {
            let name = match k {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => b.to_string(),
                other => {
                    return Err(self.err(key, format!("keys must be text, found {}", kind(other))));
                }
            };
            let path = if key.is_empty() {
                name.clone()
            } else {
                format!("{key}.{name}")
            };
            if let Some(allowed) = allowed
                && !allowed.contains(&name.as_str())
            {
                return Err(self.err(
                    &path,
                    format!("unknown key (expected one of: {})", allowed.join(", ")),
                ));
            }
            out.push((name, v));
        }
        Ok(out)
    }

    /// A string (numbers and booleans are not accepted); `null` is unset.
    fn string(&self, key: &str, value: &Value) -> Result<Option<String>, SkinError> {
        match value {
            Value::Null => Ok(None),
            Value::String(s) => Ok(Some(s.clone())),
            other => Err(self.err(key, format!("expected a string, found {}", kind(other)))),
        }
    }

    fn strings(&self, key: &str, value: &Value) -> Result<Option<Vec<String>>, SkinError> {
        match value {
            Value::Null => Ok(None),
            Value::Sequence(items) => items
                .iter()
                .enumerate()
                .map(|(i, item)| {
                    let path = format!("{key}[{i}]");
                    match self.string(&path, item)? {
                        Some(s) if !s.is_empty() => Ok(s),
                        _ => Err(self.err(&path, "expected a non-empty string")),
                    }
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            other => Err(self.err(
                key,
                format!("expected a list of strings, found {}", kind(other)),
            )),
        }
    }
}

/// What a value is, for messages.
pub(super) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "nothing",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Sequence(_) => "a list",
        Value::Mapping(_) => "a mapping",
        Value::Tagged(_) => "a tagged value",
    }
}

/// Parses one skin file: its name (`name:` or `default_name`) and its contents.
pub(super) fn parse_skin(
    origin: &str,
    default_name: &str,
    text: &str,
) -> (String, Result<SkinFile, SkinError>) {
    let checker = Checker {
        origin,
        lines: KeyLines::scan(text),
    };
    let value: Value = match serde_yaml_ng::from_str(text) {
        Ok(value) => value,
        Err(e) => {
            let message = strip_location(&e);
            let error = match duplicate_key(&message, &checker.lines) {
                Some((key, line)) => SkinError::Invalid {
                    origin: origin.to_string(),
                    line: Some(line),
                    key: Some(key),
                    message: "duplicate key".into(),
                },
                None => SkinError::Invalid {
                    origin: origin.to_string(),
                    line: e.location().map(|l| l.line()),
                    key: None,
                    message: format!("invalid YAML: {message}"),
                },
            };
            return (default_name.to_string(), Err(error));
        }
    };
    let mut name = default_name.to_string();
    let file = check_skin(&checker, &value, &mut name);
    let file = file.and_then(|f| {
        if valid_name(&name) {
            Ok(f)
        } else {
            Err(checker.err(
                "name",
                format!("invalid skin name '{name}' (use letters, digits, '-', '_', '.')"),
            ))
        }
    });
    (name, file)
}

/// The key path and line of the second occurrence named by serde_yaml_ng's
/// `[path: ]duplicate entry with key "K"` message.
pub(super) fn duplicate_key(message: &str, lines: &KeyLines) -> Option<(String, usize)> {
    let (prefix, rest) = match message.split_once(": duplicate entry with key ") {
        Some((prefix, rest)) => (Some(prefix), rest),
        None => (None, message.strip_prefix("duplicate entry with key ")?),
    };
    let key = rest.strip_prefix('"')?.strip_suffix('"')?;
    let path = match prefix {
        Some(prefix) => format!("{prefix}.{key}"),
        None => key.to_string(),
    };
    let line = lines.second_line_of(&path)?;
    Some((path, line))
}

/// serde_yaml_ng's message without the ` at line L column C` of its location
/// (which the error shows in front).
pub(super) fn strip_location(e: &serde_yaml_ng::Error) -> String {
    let message = e.to_string();
    match e.location() {
        Some(loc) => {
            let at = format!(" at line {} column {}", loc.line(), loc.column());
            message.replacen(&at, "", 1)
        }
        None => message,
    }
}

pub(super) fn check_skin(
    c: &Checker<'_>,
    value: &Value,
    name: &mut String,
) -> Result<SkinFile, SkinError> {
    let mut file = SkinFile {
        inherits: None,
        inherits_line: None,
        description: String::new(),
        fields: Partial::default(),
    };
    if matches!(value, Value::Null) {
        return Ok(file);
    }
    let f = &mut file.fields;
    for (key, v) in c.mapping("", value, Some(&TOP_KEYS))? {
        match key.as_str() {
            "name" => {
                if let Some(n) = c.string("name", v)? {
                    *name = n;
                }
            }
            "inherits" => {
                file.inherits = c.string("inherits", v)?;
                file.inherits_line = c.lines.line_of("inherits");
            }
            "description" => file.description = c.string("description", v)?.unwrap_or_default(),
            "agent_name" => f.agent_name = c.string("agent_name", v)?,
            "greeting" => f.greeting = c.string("greeting", v)?,
            "farewell" => f.farewell = c.string("farewell", v)?,
            "prompt_symbol" => f.prompt_symbol = c.string("prompt_symbol", v)?,
            "banner" => {
                f.banner = c
                    .string("banner", v)?
                    .map(|b| b.trim_end_matches(['\n', '\r']).to_string());
            }
            "colors" => check_colours(c, v, f)?,
            "spinner" => check_spinner(c, v, f)?,
            "tool_emoji" => check_tool_emoji(c, v, f)?,
            _ => {}
        }
    }
    Ok(file)
}

pub(super) fn check_colours(c: &Checker<'_>, v: &Value, f: &mut Partial) -> Result<(), SkinError> {
    if matches!(v, Value::Null) {
        return Ok(());
    }
    let roles: Vec<&str> = Role::ALL.iter().map(|r| r.name()).collect();
    for (key, colour) in c.mapping("colors", v, Some(&roles))? {
        let path = format!("colors.{key}");
        let Some(role) = Role::from_name(&key) else {
            continue;
        };
        let Some(text) = c.string(&path, colour)? else {
            continue;
        };
        let parsed: Colour = text.parse().map_err(|e| c.err(&path, format!("{e}")))?;
        f.colours[role as usize] = Some(parsed);
    }
    Ok(())
}

pub(super) fn check_tool_emoji(
    c: &Checker<'_>,
    v: &Value,
    f: &mut Partial,
) -> Result<(), SkinError> {
    if matches!(v, Value::Null) {
        return Ok(());
    }
    for (tool, emoji) in c.mapping("tool_emoji", v, None)? {
        let path = format!("tool_emoji.{tool}");
        if let Some(emoji) = c.string(&path, emoji)? {
            f.tool_emoji.insert(tool, emoji);
        }
    }
    Ok(())
}

pub(super) fn check_spinner(c: &Checker<'_>, v: &Value, f: &mut Partial) -> Result<(), SkinError> {
    if matches!(v, Value::Null) {
        return Ok(());
    }
    for (key, value) in c.mapping("spinner", v, Some(&SPINNER_KEYS))? {
        let path = format!("spinner.{key}");
        match key.as_str() {
            "faces" => {
                let faces = c.strings(&path, value)?;
                if faces.as_ref().is_some_and(Vec::is_empty) {
                    return Err(c.err(&path, "needs at least one face"));
                }
                f.faces = faces;
            }
            "verbs" => f.verbs = c.strings(&path, value)?,
            "interval_ms" => match value {
                Value::Null => {}
                Value::Number(n) => match n.as_u64().filter(|n| INTERVAL_RANGE.contains(n)) {
                    Some(ms) => f.interval_ms = Some(ms),
                    None => {
                        return Err(c.err(
                            &path,
                            format!(
                                "expected whole milliseconds from {} to {}, found {n}",
                                INTERVAL_RANGE.start(),
                                INTERVAL_RANGE.end()
                            ),
                        ));
                    }
                },
                other => {
                    return Err(c.err(&path, format!("expected a number, found {}", kind(other))));
                }
            },
            _ => {}
        }
    }
    Ok(())
}
