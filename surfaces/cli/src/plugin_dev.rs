//! `talaria plugin new` and `talaria plugin build`: start a plugin project and
//! turn it into a package ready to drop into a plugin directory.
//!
//! Rust projects are generated here (the chat adapter's sources come from its
//! template in `sdk/rust/templates`) and built with cargo; projects in other
//! languages are copies of the templates in `sdk/` (see `plugin_templates`)
//! and are built by their own `build.sh`.

use std::path::{Path, PathBuf};
use std::process::Command;

use talaria_plugin_manifest::{HOST_API, Manifest};

use crate::exit::{Status, usage_error};
use crate::plugin_templates::{Kind, Lang, Template};

/// The environment variable naming the directory `scripts/plugin-toolchains`
/// installs the other languages' toolchains into.
const TOOLCHAINS_ENV: &str = "TALARIA_TOOLCHAINS";

/// The toolchain Talaria itself is built with, whose channel new projects use.
const TOOLCHAIN_FILE: &str = include_str!("../../../rust-toolchain.toml");

/// A new project's `rust-toolchain.toml`: Talaria's Rust release, with the
/// components target plugins need (and none of Talaria's own notes).
fn toolchain_file() -> String {
    let channel = TOOLCHAIN_FILE
        .parse::<toml::Table>()
        .ok()
        .and_then(|t| {
            t.get("toolchain")?
                .get("channel")?
                .as_str()
                .map(str::to_owned)
        })
        .unwrap_or_else(|| "stable".to_owned());
    format!(
        "[toolchain]\n# The Rust release the SDK is built and tested with.\nchannel = \"{channel}\"\n\
         profile = \"minimal\"\ncomponents = [\"rustfmt\", \"clippy\"]\ntargets = [\"wasm32-wasip2\"]\n"
    )
}

fn valid_name(name: &str) -> bool {
    name.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// The language, kind and template of a new project from `--lang` and
/// `--kind` (default: a Rust tool plugin), or why there is none.
fn choose(
    lang: Option<&str>,
    kind: Option<&str>,
) -> Result<(Lang, Kind, Option<&'static Template>), String> {
    let lang = lang.map_or(Ok(Lang::Rust), Lang::parse)?;
    let kind = kind.map_or(Ok(Kind::Tool), Kind::parse)?;
    let template = crate::plugin_templates::template(lang, kind)?;
    Ok((lang, kind, template))
}

/// Creates a buildable plugin project in `dir` (default `./NAME`) in the
/// language `lang` (default Rust) of the kind `kind` (default a tool plugin).
pub fn new(name: &str, dir: Option<PathBuf>, lang: Option<&str>, kind: Option<&str>) -> Status {
    let (lang, kind, template) = match choose(lang, kind) {
        Ok(chosen) => chosen,
        Err(message) => return usage_error(&message),
    };
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
    let build_hint = format!("talaria plugin build {}", dir.display());
    let (files, origin, hint) = match template {
        None => (rust_tool_files(name), String::new(), build_hint),
        Some(template) if template.lang == Lang::Rust => {
            let mut files = rust_project_files(name, kind);
            files.extend(template.render(name));
            (
                files,
                format!(
                    " from the example {} {}",
                    kind.noun(),
                    template.example_name
                ),
                build_hint,
            )
        }
        Some(template) => (
            template.render(name),
            format!(" from the example plugin {}", template.example_name),
            format!(
                "{build_hint} (or: cd {} && {})",
                dir.display(),
                template.build_hint
            ),
        ),
    };
    for (file, text, executable) in files {
        let path = dir.join(file);
        let written = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(&path, text))
            .and_then(|()| {
                if executable {
                    make_executable(&path)
                } else {
                    Ok(())
                }
            });
        if let Err(error) = written {
            return usage_error(&format!("cannot write {}: {error}", path.display()));
        }
    }
    let vendored_sdk = lang == Lang::Rust && crate::plugin_sdk::vendored();
    if vendored_sdk && let Err(message) = crate::plugin_sdk::write(&dir) {
        return usage_error(&message);
    }
    println!(
        "Created {lang} {} {name} in {}{origin}.",
        kind.noun(),
        dir.display()
    );
    if vendored_sdk {
        println!(
            "The SDK of this talaria is in {}; `talaria plugin sdk {}` replaces it after an update.",
            crate::plugin_sdk::VENDOR_DIR,
            dir.display()
        );
    }
    println!("Build it with: {hint}");
    if kind == Kind::Adapter {
        println!(
            "Then configure it under gateway.platforms.{name} in config.yaml \
             ({} says how).",
            dir.join("README.md").display()
        );
    }
    Status::Answered
}

/// The files of every new Rust project: (path, text, executable).
fn rust_project_files(name: &str, kind: Kind) -> Vec<(&'static str, String, bool)> {
    vec![
        ("Cargo.toml", cargo_toml(name, kind), false),
        ("rust-toolchain.toml", toolchain_file(), false),
        (".gitignore", "/target\n/dist\n".to_owned(), false),
    ]
}

/// The files of a new Rust tool plugin project.
fn rust_tool_files(name: &str) -> Vec<(&'static str, String, bool)> {
    let mut files = rust_project_files(name, Kind::Tool);
    files.push(("plugin.toml", manifest(name), false));
    files.push(("src/lib.rs", LIB_RS.to_owned(), false));
    files
}

#[cfg(unix)]
fn make_executable(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
}

#[cfg(not(unix))]
fn make_executable(_path: &Path) -> std::io::Result<()> {
    Ok(())
}

fn cargo_toml(name: &str, kind: Kind) -> String {
    // A tool derives its argument schema; an adapter needs only the SDK.
    let tool_dependencies = match kind {
        Kind::Tool => "schemars = \"1\"\nserde = { version = \"1\", features = [\"derive\"] }\n",
        Kind::Adapter | Kind::Memory | Kind::Command | Kind::Skin | Kind::Hooks => "",
    };
    format!(
        r#"[package]
name = "{name}"
version = "0.1.0"
edition = "2024"

[lib]
crate-type = ["cdylib"]

[dependencies]
talaria-plugin-sdk = {sdk}
{tool_dependencies}
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
        sdk = crate::plugin_sdk::dependency()
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

/// Writes this version's Rust SDK into the Rust project in `dir`.
pub fn sdk(dir: &Path) -> Status {
    if !dir.join("Cargo.toml").is_file() {
        return usage_error(&format!(
            "{} is not a Rust plugin project (it has no Cargo.toml)",
            dir.display()
        ));
    }
    match crate::plugin_sdk::write(dir) {
        Ok(()) => {
            println!(
                "Wrote the SDK of talaria {} into {}.",
                env!("CARGO_PKG_VERSION"),
                dir.join(crate::plugin_sdk::VENDOR_DIR).display()
            );
            Status::Answered
        }
        Err(message) => usage_error(&message),
    }
}

/// [`build`], then the package compiled into the profile's cache, so the
/// first session with it starts at once.
pub async fn build_and_compile(dir: &Path, home: &talaria_profile::ProfileHome) -> Status {
    let (status, package) = build(dir);
    if let Some(package) = package {
        crate::plugin_compile::ahead_of_time(home, &package).await;
    }
    status
}

/// Builds the project in `dir` into `dir/dist/<name>/{plugin.toml,plugin.wasm}`:
/// with its `build.sh` when it has one (the other languages' templates),
/// else with cargo when it is a Rust project. The package's directory comes back when it
/// was built.
fn build(dir: &Path) -> (Status, Option<PathBuf>) {
    // Cargo runs inside the project, so every path must be absolute.
    let dir = match dir.canonicalize() {
        Ok(dir) => dir,
        Err(error) => {
            return (
                usage_error(&format!("cannot open {}: {error}", dir.display())),
                None,
            );
        }
    };
    let dir = dir.as_path();
    let manifest_path = dir.join("plugin.toml");
    let manifest = match Manifest::load(&manifest_path) {
        Ok(manifest) => manifest,
        Err(error) => return (usage_error(&error.to_string()), None),
    };
    let status = match detect(dir) {
        Project::Script(lang) => build_with_script(dir, &manifest, lang),
        Project::Cargo => build_with_cargo(dir, &manifest_path, &manifest),
        Project::Unbuilt(template) => usage_error(&format!(
            "{} looks like a {} plugin project but has no build.sh; build it with \
             the template's script (talaria plugin new NAME --lang {} writes one), or run: {}",
            dir.display(),
            template.lang,
            template.lang,
            manual_build(template.lang, &manifest.name)
        )),
        Project::Unknown => usage_error(&format!(
            "{} has neither a build.sh nor a Cargo.toml: start a project with \
             talaria plugin new NAME --lang rust|js|python|zig",
            dir.display()
        )),
    };
    let package = (status == Status::Answered).then(|| dir.join("dist").join(&manifest.name));
    (status, package)
}

/// How a project is built.
#[derive(Debug)]
enum Project {
    /// By its `build.sh`; the language when it can be told.
    Script(Option<Lang>),
    /// By cargo (Rust).
    Cargo,
    /// A project of a template's language without its build script.
    Unbuilt(&'static Template),
    /// Not a plugin project this command knows.
    Unknown,
}

/// The language of the project in `dir`, from the files that mark it.
fn language(dir: &Path) -> Option<Lang> {
    let has = |file: &str| dir.join(file).exists();
    if has("Cargo.toml") {
        Some(Lang::Rust)
    } else if has("package.json") {
        Some(Lang::Js)
    } else if has("pyproject.toml") || has("app.py") {
        Some(Lang::Python)
    } else if has("build.zig") || has("src/main.zig") {
        Some(Lang::Zig)
    } else {
        None
    }
}

fn detect(dir: &Path) -> Project {
    let lang = language(dir);
    if dir.join("build.sh").is_file() {
        Project::Script(lang)
    } else if lang == Some(Lang::Rust) {
        Project::Cargo
    } else if let Some(template) = lang.and_then(Lang::template) {
        Project::Unbuilt(template)
    } else {
        Project::Unknown
    }
}

/// What to run by hand, in the project, for a project of `lang` without a
/// build script, to make the package of the plugin `name`.
fn manual_build(lang: Lang, name: &str) -> String {
    let steps = match lang {
        Lang::Rust => {
            return "cargo build --release --target wasm32-wasip2, then copy the .wasm \
                    and plugin.toml into dist/NAME"
                .replace("NAME", name);
        }
        Lang::Js => {
            "npx componentize-js src/plugin.js --wit wit --world-name tool-plugin \
             --disable fetch-event --out dist/NAME/plugin.wasm"
        }
        Lang::Python => {
            "componentize-py -d wit -w tool --import-interface-name talaria:plugin/types@API=types \
             componentize app -p . -o dist/NAME/plugin.wasm (API: plugin.toml's api)"
        }
        Lang::Zig => {
            "zig build-exe src/main.zig -target wasm32-wasi -O ReleaseSmall -fno-entry -rdynamic \
             -femit-bin=core.wasm && wasm-tools component embed wit --world tool-plugin core.wasm \
             -o embedded.wasm && wasm-tools component new embedded.wasm --adapt \
             wasi_snapshot_preview1=wasi_snapshot_preview1.reactor.wasm -o dist/NAME/plugin.wasm"
        }
    };
    format!("mkdir -p dist/NAME && {steps} && cp plugin.toml dist/NAME/").replace("NAME", name)
}

/// The toolchains of a development build (`scripts/plugin-toolchains` in
/// this checkout), used when `TALARIA_TOOLCHAINS` is not set.
fn checkout_toolchains() -> Option<PathBuf> {
    let dir = Path::new(crate::CHECKOUT).join("target/toolchains");
    dir.canonicalize().ok()
}

/// Runs the project's `build.sh` and checks the package it made.
fn build_with_script(dir: &Path, manifest: &Manifest, lang: Option<Lang>) -> Status {
    let mut command = Command::new("bash");
    command.arg(dir.join("build.sh")).current_dir(dir);
    if std::env::var_os(TOOLCHAINS_ENV).is_none()
        && let Some(toolchains) = checkout_toolchains()
    {
        command.env(TOOLCHAINS_ENV, toolchains);
    }
    match command.status() {
        Ok(status) if status.success() => {}
        Ok(_) => {
            eprintln!(
                "error: {}/build.sh failed{}",
                dir.display(),
                lang.map(|l| format!(" (a {l} project)"))
                    .unwrap_or_default()
            );
            return Status::Failed;
        }
        Err(error) => return usage_error(&format!("cannot run bash: {error}")),
    }
    let package = dir.join("dist").join(&manifest.name);
    let wasm = package.join(&manifest.wasm);
    if let Err(message) = check_component(&wasm) {
        return usage_error(&format!("build.sh did not produce the package: {message}"));
    }
    if !package.join("plugin.toml").is_file() {
        return usage_error(&format!(
            "build.sh did not produce {}",
            package.join("plugin.toml").display()
        ));
    }
    built(manifest, &package)
}

/// Checks that `wasm` is a WebAssembly component (not a core module).
fn check_component(wasm: &Path) -> Result<(), String> {
    use std::io::Read;
    let mut header = [0u8; 8];
    std::fs::File::open(wasm)
        .and_then(|mut file| file.read_exact(&mut header))
        .map_err(|error| format!("cannot read {}: {error}", wasm.display()))?;
    if header == *b"\0asm\x0d\x00\x01\x00" {
        Ok(())
    } else {
        Err(format!("{} is not a WebAssembly component", wasm.display()))
    }
}

fn built(manifest: &Manifest, package: &Path) -> Status {
    println!(
        "Built {} {} into {}",
        manifest.name,
        manifest.version,
        package.display()
    );
    println!("Install it by copying that directory into $TALARIA_HOME/plugins/.");
    Status::Answered
}

/// Builds a Rust project with cargo and packages the component.
fn build_with_cargo(dir: &Path, manifest_path: &Path, manifest: &Manifest) -> Status {
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
    if let Err(message) = check_component(&wasm) {
        return usage_error(&message);
    }
    let package = dir.join("dist").join(&manifest.name);
    let copied = std::fs::create_dir_all(&package)
        .and_then(|()| std::fs::copy(manifest_path, package.join("plugin.toml")))
        .and_then(|_| std::fs::copy(&wasm, package.join(&manifest.wasm)));
    if let Err(error) = copied {
        return usage_error(&format!("cannot write {}: {error}", package.display()));
    }
    built(manifest, &package)
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use talaria_plugin_manifest::PluginKind;

    use super::*;

    fn project(files: &[&str]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for file in files {
            let path = dir.path().join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "").unwrap();
        }
        dir
    }

    #[test]
    fn a_build_script_wins_and_the_language_is_told_by_its_files() {
        let cases: [(&[&str], Option<Lang>); 5] = [
            (&["build.sh", "package.json"], Some(Lang::Js)),
            (&["build.sh", "pyproject.toml"], Some(Lang::Python)),
            (&["build.sh", "src/main.zig"], Some(Lang::Zig)),
            (&["build.sh", "Cargo.toml"], Some(Lang::Rust)),
            (&["build.sh"], None),
        ];
        for (files, lang) in cases {
            let dir = project(files);
            match detect(dir.path()) {
                Project::Script(found) => assert_eq!(found, lang, "{files:?}"),
                other => panic!("{files:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn without_a_build_script_rust_uses_cargo_and_others_are_told_what_to_run() {
        assert!(matches!(
            detect(project(&["Cargo.toml"]).path()),
            Project::Cargo
        ));
        match detect(project(&["app.py"]).path()) {
            Project::Unbuilt(template) => assert_eq!(template.lang, Lang::Python),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            detect(project(&["README.md"]).path()),
            Project::Unknown
        ));
        let zig = manual_build(Lang::Zig, "sum-it");
        assert!(zig.starts_with("mkdir -p dist/sum-it && "), "{zig}");
        assert!(zig.contains("--adapt") && zig.ends_with("cp plugin.toml dist/sum-it/"));
    }

    #[test]
    fn new_writes_the_chosen_template_with_an_executable_build_script() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("sum-it");
        assert_eq!(
            new("sum-it", Some(dir.clone()), Some("zig"), None),
            Status::Answered
        );
        let manifest = Manifest::load(&dir.join("plugin.toml")).unwrap();
        assert_eq!(manifest.name, "sum-it");
        for file in [
            "src/main.zig",
            "src/talaria.zig",
            "wit/exports.wit",
            "README.md",
        ] {
            assert!(dir.join(file).is_file(), "{file}");
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.join("build.sh"))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o111, 0o111, "build.sh is executable");
        }
        assert!(matches!(detect(&dir), Project::Script(Some(Lang::Zig))));
    }

    #[test]
    fn new_refuses_an_unknown_language_and_writes_nothing() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("x");
        assert_eq!(
            new("x", Some(dir.clone()), Some("cobol"), None),
            Status::Usage
        );
        assert!(!dir.exists());
    }

    #[test]
    fn rust_stays_the_default() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("plain");
        assert_eq!(
            new("plain", Some(dir.clone()), None, None),
            Status::Answered
        );
        assert!(dir.join("Cargo.toml").is_file() && dir.join("src/lib.rs").is_file());
        assert!(!dir.join("build.sh").exists());
        let manifest = Manifest::load(&dir.join("plugin.toml")).unwrap();
        assert_eq!(manifest.provides, [PluginKind::Tools]);
        let cargo = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
        assert!(cargo.contains("\nschemars = \"1\"\n"), "{cargo}");
    }

    #[test]
    fn an_unknown_kind_or_an_adapter_in_another_language_is_a_usage_error() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("x");
        for (lang, kind) in [
            (None, "widget"),
            (Some("python"), "memory"),
            (Some("js"), "hooks"),
            (Some("js"), "adapter"),
            (Some("zig"), "chat"),
        ] {
            assert_eq!(
                new("x", Some(dir.clone()), lang, Some(kind)),
                Status::Usage,
                "{lang:?} {kind}"
            );
            assert!(!dir.exists(), "nothing written for {lang:?} {kind}");
        }
        let unknown = choose(None, Some("widget")).unwrap_err();
        assert_eq!(
            unknown,
            "unknown kind 'widget' for --kind: choose one of tool, command, skin, hooks, memory, adapter"
        );
        assert_eq!(
            choose(Some("zig"), Some("skin")).unwrap_err(),
            "there is no zig skin plugin template: Rust has one \
             (--lang rust, the default, with --kind skin)"
        );
        let js = choose(Some("js"), Some("adapter")).unwrap_err();
        assert_eq!(
            js,
            "there is no js adapter template: Rust and Python have one \
             (--lang rust, the default, or --lang python with --kind adapter)"
        );
        assert!(matches!(
            choose(Some("python"), Some("adapter")),
            Ok((Lang::Python, Kind::Adapter, Some(_)))
        ));
        // A bad language is reported before the kind is looked at.
        let both = choose(Some("cobol"), Some("adapter")).unwrap_err();
        assert!(both.starts_with("unknown language 'cobol'"), "{both}");
        assert!(matches!(
            choose(Some("rust"), Some("adapter")),
            Ok((Lang::Rust, Kind::Adapter, Some(_)))
        ));
        assert!(matches!(
            choose(None, None),
            Ok((Lang::Rust, Kind::Tool, None))
        ));
    }

    #[test]
    fn an_adapter_is_a_rust_project_with_the_chat_template_and_only_the_sdk() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("my-chat");
        assert_eq!(
            new("my-chat", Some(dir.clone()), None, Some("adapter")),
            Status::Answered
        );
        let mut files: Vec<String> = crate::plugin_sdk::files_under(&dir)
            .into_iter()
            .map(|p| p.strip_prefix(&dir).unwrap().display().to_string())
            .filter(|p| !p.starts_with("vendor/"))
            .collect();
        files.sort();
        assert_eq!(
            files,
            [
                ".gitignore",
                "Cargo.toml",
                "README.md",
                "plugin.toml",
                "rust-toolchain.toml",
                "src/lib.rs"
            ]
        );
        let manifest = Manifest::load(&dir.join("plugin.toml")).unwrap();
        assert_eq!(manifest.name, "my-chat");
        assert_eq!(manifest.provides, [PluginKind::Chat]);
        let cargo = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
        assert!(cargo.contains("name = \"my-chat\""), "{cargo}");
        assert!(cargo.contains("talaria-plugin-sdk = "), "{cargo}");
        assert!(
            !cargo.contains("schemars") && !cargo.contains("serde"),
            "{cargo}"
        );
        let lib = std::fs::read_to_string(dir.join("src/lib.rs")).unwrap();
        assert!(lib.contains("impl ChatConnection for"), "{lib}");
        assert!(matches!(detect(&dir), Project::Cargo));
    }
}
