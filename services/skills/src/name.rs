//! Skill and category names: the agentskills.io form.

use crate::error::SkillError;
use crate::limits::MAX_NAME_CHARS;

/// Checks a skill (or category) name: 1–64 characters of lowercase ASCII
/// letters, digits and hyphens, not starting or ending with a hyphen and
/// without `--` (agentskills.io). The same rule keeps names safe as
/// directory names.
pub fn validate_name(name: &str) -> Result<(), SkillError> {
    let reason = if name.is_empty() {
        Some("it is empty".to_owned())
    } else if name.chars().count() > MAX_NAME_CHARS {
        Some(format!(
            "it is {} characters long; the limit is {MAX_NAME_CHARS}",
            name.chars().count()
        ))
    } else if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-'))
    {
        Some(format!(
            "{bad:?} is not allowed; use lowercase letters, digits and hyphens"
        ))
    } else if name.starts_with('-') || name.ends_with('-') {
        Some("it must not start or end with a hyphen".to_owned())
    } else if name.contains("--") {
        Some("it must not contain consecutive hyphens".to_owned())
    } else {
        None
    };
    match reason {
        Some(reason) => Err(SkillError::InvalidName {
            name: name.to_owned(),
            reason,
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::validate_name;

    #[test]
    fn accepts_the_agentskills_form() {
        for name in ["a", "mcp-builder", "web2-app", &"x".repeat(64)] {
            assert!(validate_name(name).is_ok(), "{name}");
        }
    }

    #[test]
    fn rejects_everything_else() {
        for name in [
            "",
            "Upper",
            "under_score",
            "dot.ted",
            "sp ace",
            "-lead",
            "trail-",
            "dou--ble",
            "../x",
            "a/b",
            "é",
            &"x".repeat(65),
        ] {
            assert!(validate_name(name).is_err(), "{name}");
        }
    }
}
