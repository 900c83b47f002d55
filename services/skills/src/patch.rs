//! `old_string` → `new_string` replacement with a uniqueness check.

use crate::error::SkillError;

/// Replaces `old` in `text`: exactly one occurrence unless `replace_all`.
/// `file` names the file in errors.
pub(crate) fn replace(
    text: &str,
    old: &str,
    new: &str,
    replace_all: bool,
    file: &str,
) -> Result<String, SkillError> {
    if old.is_empty() {
        return Err(SkillError::Argument(
            "old_string is empty; give the exact text to replace".to_owned(),
        ));
    }
    let count = text.matches(old).count();
    match count {
        0 => Err(SkillError::PatchNotFound(file.to_owned())),
        1 => Ok(text.replacen(old, new, 1)),
        _ if replace_all => Ok(text.replace(old, new)),
        _ => Err(SkillError::PatchAmbiguous {
            file: file.to_owned(),
            count,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::replace;
    use crate::error::SkillError;

    #[test]
    fn unique_match_is_replaced() {
        assert_eq!(replace("a b c", "b", "x", false, "f").unwrap(), "a x c");
    }

    #[test]
    fn ambiguous_match_needs_replace_all() {
        let error = replace("a a", "a", "b", false, "f").unwrap_err();
        assert!(matches!(error, SkillError::PatchAmbiguous { count: 2, .. }));
        assert_eq!(replace("a a", "a", "b", true, "f").unwrap(), "b b");
    }

    #[test]
    fn missing_and_empty_old_string_are_errors() {
        assert!(matches!(
            replace("abc", "x", "y", false, "f"),
            Err(SkillError::PatchNotFound(_))
        ));
        assert!(matches!(
            replace("abc", "", "y", false, "f"),
            Err(SkillError::Argument(_))
        ));
    }
}
