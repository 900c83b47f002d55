//! For build scripts: the [`LiteralTable`](crate::LiteralTable) of a rule file, as Rust source.
//!
//! A crate that embeds a rule file writes the table into `OUT_DIR` from its `build.rs` and passes
//! `include!`'s result to [`PatternSet::new`](crate::PatternSet::new); a pattern that does not
//! parse (or a `{{var}}` that is not defined) then fails the build.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::error::PatternError;
use crate::literals;
use crate::vars::{UndefinedVar, expand_vars};

/// The keys whose values (a string or an array of strings) are patterns.
const PATTERN_KEYS: [&str; 3] = ["pattern", "also", "allow"];

/// Why a rule file's table could not be generated.
#[derive(Debug, thiserror::Error)]
pub enum CodegenError {
    /// Not TOML.
    #[error("not valid TOML: {0}")]
    Toml(#[from] toml::de::Error),
    /// `[vars]` holds something other than strings.
    #[error("[vars] entry `{0}` is not a string")]
    BadVar(String),
    /// A pattern uses a variable that is not defined.
    #[error("pattern {pattern:?}: {source}")]
    Var {
        /// The pattern as written.
        pattern: String,
        /// The missing variable.
        source: UndefinedVar,
    },
    /// A pattern does not parse.
    #[error("pattern {pattern:?} is not a valid regex: {source}")]
    Pattern {
        /// The pattern as written.
        pattern: String,
        /// The parser's complaint.
        source: PatternError,
    },
}

/// The whole job of a build script: writes the table of `rule_file` (a path relative to the
/// crate) to `$OUT_DIR/literals.rs` and tells cargo to run again when the file changes.
pub fn write_for_build_script(rule_file: &str) -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo::rerun-if-changed={rule_file}");
    let rules = std::fs::read_to_string(rule_file)?;
    let table = literal_table(&rules).map_err(|error| format!("{rule_file}: {error}"))?;
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR")?).join("literals.rs");
    std::fs::write(out, table)?;
    Ok(())
}

/// Rust source of a `LiteralTable` expression for every pattern in `rule_file` (TOML with a
/// `[vars]` table and `pattern`/`also`/`allow` keys at any depth).
pub fn literal_table(rule_file: &str) -> Result<String, CodegenError> {
    let document: toml::Table = rule_file.parse()?;
    let mut vars = BTreeMap::new();
    if let Some(toml::Value::Table(table)) = document.get("vars") {
        for (name, value) in table {
            let text = value
                .as_str()
                .ok_or_else(|| CodegenError::BadVar(name.clone()))?;
            vars.insert(name.clone(), text.to_owned());
        }
    }
    let mut written = Vec::new();
    for (key, value) in &document {
        if key != "vars" {
            collect(value, &mut written);
        }
    }
    let mut rows = BTreeMap::new();
    for pattern in written {
        let expanded = expand_vars(pattern, &vars).map_err(|source| CodegenError::Var {
            pattern: pattern.to_owned(),
            source,
        })?;
        let required = literals::required(&expanded).map_err(|source| CodegenError::Pattern {
            pattern: pattern.to_owned(),
            source,
        })?;
        rows.insert(expanded, required);
    }
    let mut out = String::from("&[\n");
    for (pattern, required) in rows {
        let _ = write!(out, "    ({pattern:?}, ");
        match required {
            None => out.push_str("None"),
            Some(set) => {
                out.push_str("Some(&[");
                for literal in set {
                    let _ = write!(out, "b\"{}\", ", literal.escape_ascii());
                }
                out.push_str("])");
            }
        }
        out.push_str("),\n");
    }
    out.push(']');
    Ok(out)
}

/// Every pattern string under a [`PATTERN_KEYS`] key, at any depth.
fn collect<'a>(value: &'a toml::Value, out: &mut Vec<&'a str>) {
    match value {
        toml::Value::Table(table) => {
            for (key, value) in table {
                match value {
                    toml::Value::String(text) if PATTERN_KEYS.contains(&key.as_str()) => {
                        out.push(text)
                    }
                    toml::Value::Array(items) if PATTERN_KEYS.contains(&key.as_str()) => {
                        out.extend(items.iter().filter_map(toml::Value::as_str))
                    }
                    other => collect(other, out),
                }
            }
        }
        toml::Value::Array(items) => items.iter().for_each(|item| collect(item, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_lists_every_expanded_pattern_sorted() {
        let file = "[vars]\nv = 'b|c'\n[[rule]]\npattern = 'x{{v}}'\nalso = ['.*']\n\
                    [[other]]\nallow = ['zz']\nid = 'not a pattern'\n";
        let table = literal_table(file).expect("valid file");
        assert_eq!(
            table,
            "&[\n    (\".*\", None),\n    (\"x(?:b|c)\", Some(&[b\"xb\", b\"xc\", ])),\n    \
             (\"zz\", Some(&[b\"zz\", ])),\n]"
        );
    }

    #[test]
    fn a_broken_file_fails_the_build() {
        assert!(matches!(
            literal_table("[[rule]]\npattern = '{{nope}}'"),
            Err(CodegenError::Var { .. })
        ));
        assert!(matches!(
            literal_table("[[rule]]\npattern = '('"),
            Err(CodegenError::Pattern { .. })
        ));
        assert!(matches!(
            literal_table("[vars]\nv = 1"),
            Err(CodegenError::BadVar(_))
        ));
    }
}
