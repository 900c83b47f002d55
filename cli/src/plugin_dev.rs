//! `talaria plugin new` and `talaria plugin build`: start a plugin project and
//! turn it into a package ready to drop into a plugin directory.

use std::path::{Path, PathBuf};
use std::process::Command;

use talaria_plugin_host::{HOST_API, Manifest};

use crate::exit::{Status, usage_error};

/// The toolchain the SDK needs, with the wasm32-wasip2 target: the same file
/// Talaria itself is built with.
const TOOLCHAIN_FILE: &str = include_str!("../../rust-toolchain.toml");

/// Where the SDK comes from: this checkout's `sdk/rust` when it exists (a
/// development build), else the published crate.
fn sdk_dependency() -> String {
    let checkout = Path::new(env!("CARGO_MANIFEST_DIR")).join("../sdk/rust");
    match checkout.canonicalize() {
        Ok(path) => format!("{{ path = {:?} }}", path.display().to_string()),
        Err(_) => format!("\"{}\"", env!("CARGO_PKG_VERSION")),
    }
}

fn valid_name(name: &str) -> bool {
    name.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// Creates a buildable plugin project in `dir` (default `./NAME`).
pub fn new(name: &str, dir: Option<PathBuf>) -> Status {
    if !valid_name(name) {
        return usage_error(&format!(
            "'{name}' is not a valid plugin name: use lowercase letters, digits and '-', starting with a letter"
        ));
    }
    let dir = dir.unwrap_or_else(|| PathBuf::from(name));
    if dir.exists() && std::fs::read_dir(&dir).map_or(true, |mut d| d.next().is_some()) {
        return usage_error(&format!(
            "{} already exists and is not empty",
            dir.display()
        ));
    }
    let files = [
        ("Cargo.toml", cargo_toml(name)),
        ("plugin.toml", manifest(name)),
        ("src/lib.rs", LIB_RS.to_owned()),
        ("rust-toolchain.toml", TOOLCHAIN_FILE.to_owned()),
        (".gitignore", "/target\n/dist\n".to_owned()),
    ];
    for (file, text) in files {
        let path = dir.join(file);
        let written = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(&path, text));
        if let Err(error) = written {
            return usage_error(&format!("cannot write {}: {error}", path.display()));
        }
    }
    println!("Created plugin {name} in {}.", dir.display());
    println!("Build it with: talaria plugin build {}", dir.display());
    Status::Answered
}

fn cargo_toml(name: &str) -> String {
    format!(
        r#"[package]
name = "{name}"
version = "0.1.0"
edition = "2024"

[lib]
crate-type = ["cdylib"]

[dependencies]
talaria-plugin-sdk = {sdk}
schemars = "1"
serde = {{ version = "1", features = ["derive"] }}

# Small, fast components; a panic aborts, which the host reports as a failed call.
[profile.release]
opt-level = "s"
lto = true
codegen-units = 1
strip = true
panic = "abort"

# A project of its own, not part of an enclosing workspace.
[workspace]
"#,
        sdk = sdk_dependency()
    )
}

fn manifest(name: &str) -> String {
    format!(
        r#"name = "{name}"
version = "0.1.0"
api = "{HOST_API}"
description = "Describe what {name} does"
provides = ["tools"]

# Ask only for what the tools need; the user grants it at install time.
[capabilities]
# filesystem = [{{ path = "$CWD", access = "read-only" }}]
# network = ["api.example.org:443"]
# env = ["EXAMPLE_TOKEN"]

[limits]
memory-mb = 64
timeout-ms = 10000
"#
    )
}

const LIB_RS: &str = r#"//! A Talaria tool plugin.

use schemars::JsonSchema;
use serde::Deserialize;
use talaria_plugin_sdk::{CallContext, Tool, ToolError, ToolFlags, Value, json};

#[derive(Deserialize, JsonSchema)]
struct HelloArgs {
    /// Who to greet.
    name: String,
}

#[derive(Default)]
struct Hello;

impl Tool for Hello {
    const NAME: &'static str = "hello";
    const DESCRIPTION: &'static str = "Greets someone by name";
    type Args = HelloArgs;

    fn flags() -> ToolFlags {
        ToolFlags::read_only()
    }

    fn call(&self, args: HelloArgs, _ctx: &CallContext) -> Result<Value, ToolError> {
        if args.name.trim().is_empty() {
            return Err(ToolError::InvalidArguments("name must not be empty".into()));
        }
        Ok(json!({ "greeting": format!("Hello, {}!", args.name) }))
    }
}

talaria_plugin_sdk::export_tools!(Hello);
"#;

/// Builds the project in `dir` into `dir/dist/<name>/{plugin.toml,plugin.wasm}`.
pub fn build(dir: &Path) -> Status {
    // Cargo runs inside the project, so every path must be absolute.
    let dir = match dir.canonicalize() {
        Ok(dir) => dir,
        Err(error) => return usage_error(&format!("cannot open {}: {error}", dir.display())),
    };
    let dir = dir.as_path();
    let manifest_path = dir.join("plugin.toml");
    let manifest = match Manifest::load(&manifest_path) {
        Ok(manifest) => manifest,
        Err(error) => return usage_error(&error.to_string()),
    };
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let cargo_toml = dir.join("Cargo.toml");
    let status = Command::new(&cargo)
        .args([
            "build",
            "--release",
            "--target",
            "wasm32-wasip2",
            "--manifest-path",
        ])
        .arg(&cargo_toml)
        .current_dir(dir)
        .status();
    match status {
        Ok(status) if status.success() => {}
        Ok(_) => return Status::Failed,
        Err(error) => return usage_error(&format!("cannot run cargo: {error}")),
    }
    let wasm = match built_wasm(&cargo, &cargo_toml, dir) {
        Ok(wasm) => wasm,
        Err(message) => return usage_error(&message),
    };
    match std::fs::read(&wasm) {
        Ok(bytes) if bytes.starts_with(b"\0asm\x0d\x00\x01\x00") => {}
        Ok(_) => {
            return usage_error(&format!(
                "{} is not a WebAssembly component",
                wasm.display()
            ));
        }
        Err(error) => return usage_error(&format!("cannot read {}: {error}", wasm.display())),
    }
    let package = dir.join("dist").join(&manifest.name);
    let copied = std::fs::create_dir_all(&package)
        .and_then(|()| std::fs::copy(&manifest_path, package.join("plugin.toml")))
        .and_then(|_| std::fs::copy(&wasm, package.join(&manifest.wasm)));
    if let Err(error) = copied {
        return usage_error(&format!("cannot write {}: {error}", package.display()));
    }
    println!(
        "Built {} {} into {}",
        manifest.name,
        manifest.version,
        package.display()
    );
    println!("Install it by copying that directory into $TALARIA_HOME/plugins/.");
    Status::Answered
}

/// The component cargo produced, wherever the target directory is.
fn built_wasm(cargo: &std::ffi::OsStr, cargo_toml: &Path, dir: &Path) -> Result<PathBuf, String> {
    let output = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--manifest-path",
        ])
        .arg(cargo_toml)
        .current_dir(dir)
        .output()
        .map_err(|e| format!("cannot run cargo metadata: {e}"))?;
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout)
        .map_err(|e| format!("cannot read cargo metadata: {e}"))?;
    let target = metadata["target_directory"]
        .as_str()
        .ok_or("cargo metadata has no target directory")?;
    let crate_name = metadata["packages"][0]["name"]
        .as_str()
        .ok_or("cargo metadata has no package")?;
    Ok(Path::new(target)
        .join("wasm32-wasip2/release")
        .join(format!("{}.wasm", crate_name.replace('-', "_"))))
}
