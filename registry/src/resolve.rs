//! Choosing a version: the newest one that matches the user's requirement,
//! works with this host's plugin API and is not yanked. When none does, every
//! rejected version is listed with the reason.

use semver::{Version, VersionReq};

use crate::error::RegistryError;
use crate::index::{PluginFile, VersionEntry};

/// Why a version was not chosen.
fn rejection(entry: &VersionEntry, requirement: &VersionReq, host_api: &Version) -> Option<String> {
    if !requirement.matches(&entry.version) {
        return Some(if entry.version.pre.is_empty() {
            format!("does not match {requirement}")
        } else {
            format!(
                "is a pre-release; ask for it explicitly (e.g. @={})",
                entry.version
            )
        });
    }
    if !entry.api.matches(host_api) {
        return Some(format!(
            "needs plugin API {}, this Talaria implements {host_api}",
            entry.api
        ));
    }
    if entry.yanked {
        return Some("was yanked by the index".to_owned());
    }
    None
}

/// The newest acceptable entry of `file`, or why there is none.
pub fn resolve<'a>(
    file: &'a PluginFile,
    requirement: &VersionReq,
    host_api: &Version,
    index: &str,
) -> Result<&'a VersionEntry, RegistryError> {
    let mut entries: Vec<&VersionEntry> = file.versions.iter().collect();
    entries.sort_by(|a, b| b.version.cmp(&a.version));
    let mut reasons = Vec::new();
    for entry in entries {
        match rejection(entry, requirement, host_api) {
            None => return Ok(entry),
            Some(reason) => reasons.push(format!("  {} {reason}", entry.version)),
        }
    }
    if reasons.is_empty() {
        reasons.push("  (the index lists no versions)".to_owned());
    }
    Err(RegistryError::Unsatisfiable {
        name: file.name.clone(),
        requirement: requirement.to_string(),
        index: index.to_owned(),
        reasons: reasons.join("\n"),
    })
}

/// Parses `NAME[@REQ]`; as with cargo, a bare `1.2` means `^1.2` and `=1.2.3` pins.
pub fn parse_spec(spec: &str) -> Result<(String, VersionReq), RegistryError> {
    let (name, requirement) = match spec.split_once('@') {
        Some((name, requirement)) => {
            let parsed = VersionReq::parse(requirement).map_err(|e| {
                RegistryError::Settings(format!(
                    "'{requirement}' is not a semver requirement ({e}); e.g. ^1.2, ~1.2.3, =1.2.3, >=1, <2"
                ))
            })?;
            (name, parsed)
        }
        None => (spec, VersionReq::STAR),
    };
    if !crate::index::valid_plugin_name(name) {
        return Err(RegistryError::Settings(format!(
            "'{name}' is not a plugin name: lowercase letters, digits and '-', starting with a letter"
        )));
    }
    Ok((name.to_owned(), requirement))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(version: &str, api: &str, yanked: bool) -> VersionEntry {
        VersionEntry {
            version: version.parse().unwrap(),
            api: api.parse().unwrap(),
            sha256: "0".repeat(64),
            size: 1,
            capabilities: serde_json::json!({}),
            url: "x".into(),
            yanked,
            signature: None,
        }
    }

    fn file(entries: Vec<VersionEntry>) -> PluginFile {
        PluginFile {
            name: "x".into(),
            description: String::new(),
            license: String::new(),
            homepage: None,
            versions: entries,
        }
    }

    const HOST: Version = Version::new(0, 1, 1);

    #[test]
    fn the_newest_matching_compatible_unyanked_version_wins() {
        let plugin = file(vec![
            entry("1.0.0", "^0.1", false),
            entry("1.3.0", "^0.1.1", false),
            entry("1.4.0", "^0.2", false),
            entry("1.5.0", "^0.1", true),
            entry("2.0.0", "^0.1", false),
            entry("1.6.0-beta.1", "^0.1", false),
        ]);
        let pick = |req: &str| {
            resolve(&plugin, &req.parse().unwrap(), &HOST, "main").map(|e| e.version.to_string())
        };
        assert_eq!(pick("^1").unwrap(), "1.3.0");
        assert_eq!(pick("*").unwrap(), "2.0.0");
        assert_eq!(pick("=1.0.0").unwrap(), "1.0.0");
        assert_eq!(pick("=1.6.0-beta.1").unwrap(), "1.6.0-beta.1");
        let error = pick("^1.4").unwrap_err().to_string();
        assert!(
            error.contains("1.4.0 needs plugin API ^0.2, this Talaria implements 0.1.1"),
            "{error}"
        );
        assert!(error.contains("1.5.0 was yanked"), "{error}");
        assert!(error.contains("1.6.0-beta.1 is a pre-release"), "{error}");
        assert!(error.contains("2.0.0 does not match ^1.4"), "{error}");
        assert!(error.contains("(index main)"), "{error}");
    }

    #[test]
    fn specs_parse_with_clear_errors() {
        assert_eq!(parse_spec("web-fetch").unwrap().1, VersionReq::STAR);
        assert_eq!(parse_spec("x@^1.2").unwrap().1.to_string(), "^1.2");
        assert!(
            parse_spec("x@banana")
                .unwrap_err()
                .to_string()
                .contains("semver requirement")
        );
        assert!(
            parse_spec("X@1")
                .unwrap_err()
                .to_string()
                .contains("not a plugin name")
        );
    }
}
