//! The Rust plugin SDK of this very binary, embedded in it, so a plugin
//! author who has only `talaria` can build: `talaria plugin new` writes it
//! into the project (`vendor/talaria-plugin-sdk`) and `talaria plugin sdk
//! DIR` writes it again after Talaria is updated. The copy is the SDK crate
//! with the WIT package it binds, and a manifest with its dependencies
//! spelled out (the source's come from this repository's workspace).

use std::path::Path;

/// Where a project keeps its copy of the SDK, relative to the project.
pub const VENDOR_DIR: &str = "vendor/talaria-plugin-sdk";

/// Set to an SDK checkout (a directory with the SDK's `Cargo.toml`) to build
/// new projects against it instead of a copy: for work on the SDK itself.
pub const SDK_PATH_ENV: &str = "TALARIA_PLUGIN_SDK";

/// The WIT package's directory inside the copy.
const WIT_DIR: &str = "wit";

/// How the SDK's sources name the WIT package in this repository.
const SOURCE_WIT_PATH: &str = "\"../../wit/plugin\"";

/// One embedded file: (its path in the copy, its text), from the SDK's
/// `src/` or the WIT package's directory.
macro_rules! embedded {
    (src $file:literal) => {
        (
            concat!("src/", $file),
            include_str!(concat!("../../../sdk/rust/src/", $file)),
        )
    };
    (wit $file:literal) => {
        (
            concat!("wit/", $file),
            include_str!(concat!("../../../wit/plugin/", $file)),
        )
    };
}

/// The SDK's files: (path in the copy, text).
const SOURCES: &[(&str, &str)] = &[
    embedded!(src "lib.rs"),
    embedded!(src "chat.rs"),
    embedded!(src "commands.rs"),
    embedded!(src "error.rs"),
    embedded!(src "hooks.rs"),
    embedded!(src "host.rs"),
    embedded!(src "http.rs"),
    embedded!(src "memory.rs"),
    embedded!(src "skins.rs"),
    embedded!(src "tests.rs"),
    embedded!(src "tool.rs"),
    embedded!(wit "host.wit"),
    embedded!(wit "exports.wit"),
    embedded!(wit "types.wit"),
    embedded!(wit "chat.wit"),
    embedded!(wit "deps/io.wit"),
];

/// The SDK's manifest and the workspace's, whose versions it inherits.
const SDK_MANIFEST: &str = include_str!("../../../sdk/rust/Cargo.toml");
const WORKSPACE_MANIFEST: &str = include_str!("../../../Cargo.toml");

/// The dependency line a new project's `Cargo.toml` uses for the SDK: the
/// copy in the project, or the checkout [`SDK_PATH_ENV`] names.
pub fn dependency() -> String {
    match std::env::var_os(SDK_PATH_ENV) {
        Some(path) => format!("{{ path = {:?} }}", Path::new(&path).display().to_string()),
        None => format!("{{ path = \"{VENDOR_DIR}\" }}"),
    }
}

/// Whether new projects get a copy of the SDK (not when [`SDK_PATH_ENV`] is set).
pub fn vendored() -> bool {
    std::env::var_os(SDK_PATH_ENV).is_none()
}

/// The files of the copy: (path relative to the project, text).
pub fn files() -> Result<Vec<(String, String)>, String> {
    let mut files = vec![(format!("{VENDOR_DIR}/Cargo.toml"), manifest()?)];
    for (path, text) in SOURCES {
        let text = if *path == "src/lib.rs" {
            text.replace(SOURCE_WIT_PATH, &format!("{WIT_DIR:?}"))
        } else {
            (*text).to_owned()
        };
        files.push((format!("{VENDOR_DIR}/{path}"), text));
    }
    Ok(files)
}

/// Writes the copy into the project `dir`, replacing an older one.
pub fn write(dir: &Path) -> Result<(), String> {
    let files = files()?;
    let vendor = dir.join(VENDOR_DIR);
    if vendor.exists() {
        std::fs::remove_dir_all(&vendor)
            .map_err(|e| format!("cannot replace {}: {e}", vendor.display()))?;
    }
    for (path, text) in files {
        let path = dir.join(path);
        path.parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(&path, text))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(())
}

/// The copy's `Cargo.toml`: the SDK's own, with what it inherits from the
/// workspace (version, edition, dependency versions) written out.
/// Errors here mean a build of Talaria whose embedded manifests do not fit.
fn manifest() -> Result<String, String> {
    let broken = |what: &str| format!("the embedded SDK manifest is broken: {what}");
    let sdk: toml::Table = SDK_MANIFEST
        .parse()
        .map_err(|e: toml::de::Error| broken(&e.to_string()))?;
    let workspace: toml::Table = WORKSPACE_MANIFEST
        .parse()
        .map_err(|e: toml::de::Error| broken(&e.to_string()))?;
    let shared = workspace
        .get("workspace")
        .and_then(toml::Value::as_table)
        .ok_or_else(|| broken("no [workspace]"))?;
    let package_defaults = shared
        .get("package")
        .and_then(toml::Value::as_table)
        .ok_or_else(|| broken("no [workspace.package]"))?;
    let versions = shared
        .get("dependencies")
        .and_then(toml::Value::as_table)
        .ok_or_else(|| broken("no [workspace.dependencies]"))?;

    let mut package = toml::Table::new();
    for (key, value) in sdk
        .get("package")
        .and_then(toml::Value::as_table)
        .ok_or_else(|| broken("no [package] in the SDK"))?
    {
        let inherited = value
            .as_table()
            .is_some_and(|t| t.get("workspace") == Some(&toml::Value::Boolean(true)));
        let value = if inherited {
            package_defaults
                .get(key)
                .cloned()
                .ok_or_else(|| broken(&format!("workspace.package.{key} is missing")))?
        } else {
            value.clone()
        };
        package.insert(key.clone(), value);
    }
    let mut dependencies = toml::Table::new();
    for (name, value) in sdk
        .get("dependencies")
        .and_then(toml::Value::as_table)
        .ok_or_else(|| broken("no [dependencies] in the SDK"))?
    {
        dependencies.insert(name.clone(), spelled_out(name, value, versions)?);
    }
    let mut copy = toml::Table::new();
    copy.insert("package".into(), toml::Value::Table(package));
    copy.insert("dependencies".into(), toml::Value::Table(dependencies));
    let body = toml::to_string(&copy).map_err(|e| broken(&e.to_string()))?;
    Ok(format!(
        "# The Talaria plugin SDK of talaria {}, copied by `talaria plugin new`.\n\
         # `talaria plugin sdk .` in the project replaces it with the running version's.\n\n{body}",
        env!("CARGO_PKG_VERSION")
    ))
}

/// A dependency of the SDK with `workspace = true` replaced by the
/// workspace's entry (plus the SDK's own `features`).
fn spelled_out(
    name: &str,
    value: &toml::Value,
    versions: &toml::Table,
) -> Result<toml::Value, String> {
    let Some(table) = value.as_table() else {
        return Ok(value.clone());
    };
    if table.get("workspace") != Some(&toml::Value::Boolean(true)) {
        return Ok(value.clone());
    }
    let shared = versions
        .get(name)
        .ok_or_else(|| format!("workspace.dependencies.{name} is missing"))?;
    let mut entry = match shared {
        toml::Value::String(version) => {
            toml::Table::from_iter([("version".to_owned(), toml::Value::String(version.clone()))])
        }
        toml::Value::Table(entry) => entry.clone(),
        _ => {
            return Err(format!(
                "workspace.dependencies.{name} is neither a version nor a table"
            ));
        }
    };
    for (key, extra) in table.iter().filter(|(key, _)| key.as_str() != "workspace") {
        entry.insert(key.clone(), extra.clone());
    }
    Ok(toml::Value::Table(entry))
}

/// Every file under `dir`, for tests.
#[cfg(test)]
pub(crate) fn files_under(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(files_under(&path));
        } else {
            found.push(path);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_of_the_sdk_and_its_wit_package_is_embedded() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let embedded: Vec<&str> = SOURCES.iter().map(|(path, _)| *path).collect();
        let mut on_disk = Vec::new();
        for (dir, prefix) in [("sdk/rust/src", "src"), ("wit/plugin", "wit")] {
            for entry in files_under(&root.join(dir)) {
                let relative = entry.strip_prefix(root.join(dir)).unwrap();
                on_disk.push(format!("{prefix}/{}", relative.display()));
            }
        }
        for path in &on_disk {
            assert!(
                embedded.contains(&path.as_str()),
                "{path} is not embedded in plugin_sdk::SOURCES"
            );
        }
    }

    #[test]
    fn the_copy_binds_its_own_wit_and_names_concrete_versions() {
        let files = files().unwrap();
        let lib = &files
            .iter()
            .find(|(path, _)| path.ends_with("src/lib.rs"))
            .unwrap()
            .1;
        assert!(!lib.contains(SOURCE_WIT_PATH));
        assert_eq!(
            lib.matches("path: \"wit\"").count(),
            include_str!("../../../sdk/rust/src/lib.rs")
                .matches(SOURCE_WIT_PATH)
                .count()
        );
        let manifest: toml::Table = files[0].1.parse().unwrap();
        let text = &files[0].1;
        assert!(!text.contains("workspace"), "{text}");
        assert_eq!(
            manifest["package"]["version"].as_str(),
            Some(env!("CARGO_PKG_VERSION"))
        );
        let bindgen = &manifest["dependencies"]["wit-bindgen"];
        assert!(bindgen["version"].as_str().is_some(), "{text}");
        assert!(
            bindgen["features"]
                .as_array()
                .unwrap()
                .contains(&"macros".into())
        );
        assert!(manifest["dependencies"]["serde"]["version"].is_str());
    }
}
