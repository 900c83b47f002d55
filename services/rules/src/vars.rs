//! `{{name}}` references to a rule file's `[vars]` table.

use std::collections::BTreeMap;

/// How deeply `{{var}}` references may nest.
const MAX_VAR_DEPTH: usize = 8;

/// A pattern refers to a `{{name}}` that `[vars]` does not define (or that nests too deeply,
/// which is how a cycle shows).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("undefined variable `{{{{{0}}}}}`")]
pub struct UndefinedVar(pub String);

/// Replaces each `{{name}}` in `pattern` with the `[vars]` entry wrapped in a non-capturing group.
/// Variables may use other variables; nesting is bounded so a cycle is an error, not a hang.
pub fn expand_vars(pattern: &str, vars: &BTreeMap<String, String>) -> Result<String, UndefinedVar> {
    expand(pattern, vars, 0)
}

fn expand(
    pattern: &str,
    vars: &BTreeMap<String, String>,
    depth: usize,
) -> Result<String, UndefinedVar> {
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
            .ok_or_else(|| UndefinedVar(name.to_owned()))?;
        out.push_str(&rest[..start]);
        out.push_str("(?:");
        out.push_str(&expand(value, vars, depth + 1)?);
        out.push(')');
        rest = &rest[start + 2 + len + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn nested_vars_expand_into_groups() {
        let vars = vars(&[("a", "x|{{b}}"), ("b", "y")]);
        assert_eq!(
            expand_vars("^{{a}}$", &vars),
            Ok("^(?:x|(?:y))$".to_owned())
        );
        assert_eq!(
            expand_vars("no vars {{", &vars),
            Ok("no vars {{".to_owned())
        );
    }

    #[test]
    fn missing_and_cyclic_vars_are_errors() {
        let vars = vars(&[("a", "{{a}}")]);
        assert_eq!(
            expand_vars("{{nope}}", &vars),
            Err(UndefinedVar("nope".into()))
        );
        assert_eq!(expand_vars("{{a}}", &vars), Err(UndefinedVar("a".into())));
    }
}
