//! Reading tool arguments, with errors the model can act on.

use serde_json::Value;

use crate::error::SkillError;

fn field<'a>(args: &'a Value, key: &str) -> Result<Option<&'a Value>, SkillError> {
    match args {
        Value::Object(map) => Ok(map.get(key).filter(|value| !value.is_null())),
        Value::Null => Ok(None),
        _ => Err(SkillError::Argument(
            "the arguments must be a JSON object".to_owned(),
        )),
    }
}

/// A string argument that must be present; `hint` explains what it is for.
pub(crate) fn required_str<'a>(
    args: &'a Value,
    key: &str,
    hint: &str,
) -> Result<&'a str, SkillError> {
    match field(args, key)? {
        Some(Value::String(text)) => Ok(text),
        Some(_) => Err(SkillError::Argument(format!("'{key}' must be a string"))),
        None => Err(SkillError::Argument(format!(
            "missing required argument '{key}': {hint}"
        ))),
    }
}

/// A string argument that may be absent.
pub(crate) fn optional_str<'a>(args: &'a Value, key: &str) -> Result<Option<&'a str>, SkillError> {
    match field(args, key)? {
        Some(Value::String(text)) => Ok(Some(text)),
        Some(_) => Err(SkillError::Argument(format!("'{key}' must be a string"))),
        None => Ok(None),
    }
}

/// A boolean argument, false when absent; `"true"` / `"false"` strings are
/// accepted because models send them.
pub(crate) fn optional_bool(args: &Value, key: &str) -> Result<bool, SkillError> {
    match field(args, key)? {
        None => Ok(false),
        Some(Value::Bool(flag)) => Ok(*flag),
        Some(Value::String(text)) if text.eq_ignore_ascii_case("true") => Ok(true),
        Some(Value::String(text)) if text.eq_ignore_ascii_case("false") => Ok(false),
        Some(_) => Err(SkillError::Argument(format!(
            "'{key}' must be true or false"
        ))),
    }
}
