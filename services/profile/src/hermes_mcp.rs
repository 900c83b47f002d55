//! Hermes Agent's `mcp_servers` section, converted entry by entry to Talaria's
//! (`mcp_config`): the same keys where they mean the same, Hermes's looser spellings
//! (`args` as one string, `include` as one name, bool-like strings, `${env:VAR}`)
//! normalised, and every key Talaria has no equivalent for listed.

use serde_yaml_ng::{Mapping, Value};

use crate::mcp_config::MAX_SERVER_NAME;

/// One Hermes server, converted.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ServerImport {
    /// Hermes's name for it.
    pub hermes_name: String,
    /// The name it gets here (Hermes allows any string).
    pub name: String,
    /// The `mcp_servers.<name>` value, or why it is not imported.
    pub value: Result<Value, String>,
    /// Its keys with no Talaria equivalent, dotted under `mcp_servers.<hermes name>`.
    pub unmapped: Vec<String>,
}

/// Converts every entry of Hermes's `mcp_servers` mapping.
pub(crate) fn convert(section: &Value) -> Vec<ServerImport> {
    let Value::Mapping(servers) = section else {
        return Vec::new();
    };
    servers
        .iter()
        .map(|(key, entry)| {
            let hermes_name = scalar(key).unwrap_or_else(|| format!("{key:?}"));
            let mut unmapped = Vec::new();
            let value = convert_server(entry, &mut |k: &str| {
                unmapped.push(format!("mcp_servers.{hermes_name}.{k}"));
            });
            ServerImport {
                name: talaria_name(&hermes_name),
                hermes_name,
                value,
                unmapped,
            }
        })
        .collect()
}

/// A name Talaria accepts: other characters become `_`, cut to the longest name allowed.
fn talaria_name(name: &str) -> String {
    let cleaned: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(MAX_SERVER_NAME)
        .collect();
    if cleaned.is_empty() {
        "server".into()
    } else {
        cleaned
    }
}

fn scalar(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Hermes reads `yes`, `on`, `1` … as true.
fn bool_like(value: &Value) -> Option<bool> {
    match value {
        Value::Bool(b) => Some(*b),
        Value::Number(n) => n.as_i64().map(|n| n != 0),
        Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
            "true" | "yes" | "on" | "1" => Some(true),
            "false" | "no" | "off" | "0" => Some(false),
            _ => None,
        },
        _ => None,
    }
}

/// `${env:VAR}` is `${VAR}`; `${userHome}` is `${HOME}`; `${/}` and `${pathSeparator}` are `/`.
/// Hermes's workspace variables have no equivalent here.
fn translate_refs(text: &str) -> Result<String, String> {
    if text.contains("${workspaceFolder") {
        return Err(format!(
            "{text:?} uses ${{workspaceFolder…}}, which Talaria has no equivalent for"
        ));
    }
    Ok(text
        .replace("${env:", "${")
        .replace("${userHome}", "${HOME}")
        .replace("${pathSeparator}", "/")
        .replace("${/}", "/"))
}

fn text_value(value: &Value, key: &str) -> Result<Value, String> {
    let text = scalar(value).ok_or_else(|| format!("{key} is not a string"))?;
    Ok(Value::String(translate_refs(&text)?))
}

/// A list of strings, from a list or (as Hermes accepts) one string: a `[…]` list literal or
/// shell-style words.
fn string_list(value: &Value, key: &str, words: bool) -> Result<Value, String> {
    let items: Vec<String> = match value {
        Value::Null => Vec::new(),
        Value::Sequence(items) => items
            .iter()
            .map(|item| scalar(item).ok_or_else(|| format!("{key}: an item is not a string")))
            .collect::<Result<_, _>>()?,
        Value::String(text) if text.trim_start().starts_with('[') => {
            let parsed: Value = serde_yaml_ng::from_str(text)
                .map_err(|_| format!("{key}: {text:?} is not a list"))?;
            return string_list(&parsed, key, false);
        }
        Value::String(text) if words => shell_words(text)?,
        other => vec![scalar(other).ok_or_else(|| format!("{key} is not a list"))?],
    };
    let items = items
        .iter()
        .map(|item| translate_refs(item).map(Value::String))
        .collect::<Result<_, _>>()?;
    Ok(Value::Sequence(items))
}

/// Splits like a shell: whitespace separates words, quotes group, a backslash escapes.
fn shell_words(text: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut quote: Option<char> = None;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('"') | None, '\\') => {
                if let Some(next) = chars.next() {
                    word.get_or_insert_with(String::new).push(next);
                }
            }
            (Some(_), c) => word.get_or_insert_with(String::new).push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                word.get_or_insert_with(String::new);
            }
            (None, c) if c.is_whitespace() => words.extend(word.take()),
            (None, c) => word.get_or_insert_with(String::new).push(c),
        }
    }
    if quote.is_some() {
        return Err(format!("args: unbalanced quotes in {text:?}"));
    }
    words.extend(word);
    Ok(words)
}

fn string_map(value: &Value, key: &str) -> Result<Value, String> {
    let Value::Mapping(map) = value else {
        return if value.is_null() {
            Ok(Value::Mapping(Mapping::new()))
        } else {
            Err(format!("{key} is not a mapping"))
        };
    };
    let mut out = Mapping::new();
    for (name, item) in map {
        let name = scalar(name).ok_or_else(|| format!("{key}: a name is not a string"))?;
        let item = if item.is_null() {
            Value::String(String::new())
        } else {
            text_value(item, &format!("{key}.{name}"))?
        };
        out.insert(Value::String(name), item);
    }
    Ok(Value::Mapping(out))
}

fn seconds(value: &Value, key: &str) -> Result<Value, String> {
    let number = match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok(),
        _ => None,
    };
    number
        .map(|n| Value::Number(n.into()))
        .ok_or_else(|| format!("{key} is not a number of seconds"))
}

fn convert_server(entry: &Value, unmapped: &mut dyn FnMut(&str)) -> Result<Value, String> {
    let Value::Mapping(entry) = entry else {
        return Err("the entry is not a mapping".into());
    };
    let mut out = Mapping::new();
    let mut put = |key: &str, value: Value| {
        out.insert(Value::String(key.into()), value);
    };
    for (key, value) in entry {
        let Some(key) = key.as_str() else {
            unmapped(&format!("{key:?}"));
            continue;
        };
        match key {
            "command" | "cwd" | "url" => put(key, text_value(value, key)?),
            "args" => put(key, string_list(value, key, true)?),
            "env" | "headers" => put(key, string_map(value, key)?),
            "timeout" | "connect_timeout" => put(key, seconds(value, key)?),
            "enabled" => put(
                key,
                Value::Bool(bool_like(value).ok_or("enabled is not a boolean")?),
            ),
            "transport" => {
                let transport = scalar(value).unwrap_or_default().to_ascii_lowercase();
                let ours = match transport.replace(['-', '_'], "").as_str() {
                    "stdio" => "stdio",
                    "http" | "streamablehttp" => "http",
                    "sse" => {
                        return Err("transport sse (legacy HTTP+SSE) is not supported by \
                                    Talaria; if the server also serves streamable HTTP, add \
                                    it with that URL"
                            .into());
                    }
                    _ => return Err(format!("unknown transport {transport:?}")),
                };
                put(key, Value::String(ours.into()));
            }
            "tools" => put(key, convert_tools(value, unmapped)?),
            _ => unmapped(key),
        }
    }
    Ok(Value::Mapping(out))
}

fn convert_tools(value: &Value, unmapped: &mut dyn FnMut(&str)) -> Result<Value, String> {
    let Value::Mapping(tools) = value else {
        return Err("tools is not a mapping".into());
    };
    let mut out = Mapping::new();
    for (key, value) in tools {
        let name = key.as_str().unwrap_or_default();
        let converted = match name {
            "include" | "exclude" => string_list(value, &format!("tools.{name}"), false)?,
            "resources" | "prompts" => Value::Bool(
                bool_like(value).ok_or_else(|| format!("tools.{name} is not a boolean"))?,
            ),
            _ => {
                unmapped(&format!("tools.{}", scalar(key).unwrap_or_default()));
                continue;
            }
        };
        out.insert(Value::String(name.into()), converted);
    }
    Ok(Value::Mapping(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn yaml(text: &str) -> Value {
        serde_yaml_ng::from_str(text).unwrap()
    }

    #[test]
    fn hermes_spellings_are_normalised() {
        let section = yaml(
            "github:\n  command: npx\n  args: \"-y '@scope/server github' x\\\\ y\"\n  \
             env: {GITHUB_PERSONAL_ACCESS_TOKEN: \"${env:GH_TOKEN}\", EMPTY: }\n  \
             timeout: \"120\"\n  enabled: \"yes\"\n  \
             tools: {include: create_issue, resources: off, prompts: 1}\n  \
             sampling: {enabled: true}\n  trust: untrusted\n",
        );
        let [github] = convert(&section).try_into().unwrap();
        assert_eq!(github.name, "github");
        let value = github.value.unwrap();
        assert_eq!(
            value,
            yaml(
                "command: npx\nargs: [-y, '@scope/server github', x y]\n\
                 env: {GITHUB_PERSONAL_ACCESS_TOKEN: '${GH_TOKEN}', EMPTY: ''}\ntimeout: 120.0\n\
                 enabled: true\ntools: {include: [create_issue], resources: false, prompts: true}\n"
            )
        );
        assert_eq!(
            github.unmapped,
            ["mcp_servers.github.sampling", "mcp_servers.github.trust"]
        );
    }

    #[test]
    fn json_list_args_names_and_refused_entries() {
        let section = yaml(
            "my.api:\n  url: \"https://h/mcp\"\n  headers: {Authorization: Bearer x}\n  \
             transport: streamable_http\n\
             files:\n  command: npx\n  args: '[\"-y\", \"pkg\", \"${userHome}${/}p\"]'\n\
             legacy:\n  url: http://h/sse\n  transport: sse\n\
             ws:\n  command: x\n  args: [\"${workspaceFolder}\"]\n",
        );
        let servers = convert(&section);
        assert_eq!(servers[0].name, "my_api");
        assert_eq!(
            servers[0].value.as_ref().unwrap()["transport"],
            Value::String("http".into())
        );
        assert_eq!(
            servers[1].value.as_ref().unwrap()["args"],
            yaml("[-y, pkg, '${HOME}/p']")
        );
        let legacy = servers[2].value.as_ref().unwrap_err();
        assert!(legacy.contains("transport sse"), "{legacy}");
        let ws = servers[3].value.as_ref().unwrap_err();
        assert!(ws.contains("workspaceFolder"), "{ws}");
    }

    #[test]
    fn shell_words_follow_quoting() {
        assert_eq!(
            shell_words(r#"a "b c" 'd "e"' f\ g"#).unwrap(),
            ["a", "b c", "d \"e\"", "f g"]
        );
        assert_eq!(shell_words(r#"'' x"#).unwrap(), ["", "x"]);
        assert!(shell_words("'open").is_err());
    }
}
