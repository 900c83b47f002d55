//! `plugin.toml` parsing: defaults, validation, and errors that name the file,
//! the line and the key.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

use std::path::Path;

use talaria_plugin_host::{Access, Manifest, ManifestError, PluginKind};

const PATH: &str = "/x/plugin.toml";

fn parse(text: &str) -> Result<Manifest, ManifestError> {
    Manifest::parse_for(text, Path::new(PATH), talaria_plugin_host::runs)
}

fn error(text: &str) -> String {
    parse(text).unwrap_err().to_string()
}

const MINIMAL: &str = r#"name = "fs"
version = "0.1.0"
api = "0.1.0"
provides = ["tools"]
"#;

#[test]
fn minimal_manifest_gets_defaults() {
    let m = parse(MINIMAL).unwrap();
    assert_eq!(m.name, "fs");
    assert_eq!(m.version, semver::Version::new(0, 1, 0));
    assert_eq!(m.api, semver::Version::new(0, 1, 0));
    assert_eq!(m.provides, vec![PluginKind::Tools]);
    assert_eq!(m.wasm, Path::new("plugin.wasm"));
    assert_eq!(m.limits.memory_mb, 256);
    assert_eq!(m.limits.timeout_ms, 30_000);
    assert!(m.capabilities.filesystem.is_empty());
    assert!(!m.capabilities.exec);
    assert!(m.config.is_empty());
}

#[test]
fn full_manifest_parses() {
    let m = parse(
        r#"name = "fs-2"
version = "1.2.3-beta.1"
api = "0.1.0"
description = "Files"
provides = ["tools", "hooks"]
wasm = "bin/fs.wasm"

[capabilities]
filesystem = [
  { path = "$CWD", access = "read-write" },
  { path = "$PLUGIN_DATA/cache" },
  { path = "/usr/share/dict", access = "read-only" },
]
network = ["*.example.org:443", "127.0.0.1:*"]
exec = true
env = ["GITHUB_TOKEN"]
kv = true
session-search = true

[limits]
memory-mb = 64
timeout-ms = 5000

[config]
greeting = "hi"
retries = 3
verbose = true
"#,
    )
    .unwrap();
    assert_eq!(m.provides, vec![PluginKind::Tools, PluginKind::Hooks]);
    assert_eq!(m.wasm, Path::new("bin/fs.wasm"));
    let caps = &m.capabilities;
    assert_eq!(caps.filesystem.len(), 3);
    assert_eq!(caps.filesystem[0].access, Access::ReadWrite);
    assert_eq!(caps.filesystem[1].access, Access::ReadOnly);
    assert_eq!(caps.network.len(), 2);
    assert!(caps.exec && caps.kv && caps.session_search);
    assert_eq!(caps.env, vec!["GITHUB_TOKEN"]);
    assert_eq!(m.limits.memory_mb, 64);
    assert_eq!(m.limits.timeout_ms, 5000);
    assert_eq!(m.config["greeting"], "hi");
    assert_eq!(m.config["retries"], "3");
    assert_eq!(m.config["verbose"], "true");
}

#[test]
fn wrong_type_names_file_line_and_key() {
    let text = format!("{MINIMAL}\n[capabilities]\nexec = \"yes\"\n");
    let err = parse(&text).unwrap_err();
    assert_eq!(err.key(), Some("capabilities.exec"));
    assert_eq!(err.line(), Some(7));
    assert_eq!(
        err.to_string(),
        "/x/plugin.toml:7:8: capabilities.exec: invalid type: string \"yes\", expected a boolean"
    );
}

#[test]
fn unknown_keys_are_errors() {
    let err = error(&format!("{MINIMAL}colour = \"blue\"\n"));
    assert!(
        err.starts_with("/x/plugin.toml:5:1: colour: unknown field `colour`"),
        "{err}"
    );

    let err = error(&format!(
        "{MINIMAL}[capabilities]\nfilesystem = []\nnetwrok = []\n"
    ));
    assert!(
        err.starts_with("/x/plugin.toml:7:1: capabilities.netwrok: unknown field `netwrok`"),
        "{err}"
    );

    let err = error(&format!(
        "{MINIMAL}[capabilities]\nfilesystem = [{{ path = \"$CWD\", acces = \"read-only\" }}]\n"
    ));
    assert!(err.contains(":6:"), "{err}");
    assert!(err.contains("capabilities.filesystem[0].acces"), "{err}");

    let err = error(&format!("{MINIMAL}[limits]\nmemory = 5\n"));
    assert!(err.contains(":6:1: limits.memory: unknown field"), "{err}");

    let err = error(&format!("{MINIMAL}[extra]\n"));
    assert!(err.contains("extra: unknown field `extra`"), "{err}");
}

#[test]
fn bad_semver_is_refused() {
    let err = error("name = \"fs\"\nversion = \"1.0\"\napi = \"0.1.0\"\nprovides = [\"tools\"]\n");
    assert!(
        err.starts_with("/x/plugin.toml:2:11: version: \"1.0\" is not a semver version"),
        "{err}"
    );
    let err =
        error("name = \"fs\"\nversion = \"1.0.0\"\napi = \"latest\"\nprovides = [\"tools\"]\n");
    assert!(
        err.starts_with("/x/plugin.toml:3:7: api: \"latest\" is not a semver version"),
        "{err}"
    );
}

#[test]
fn bad_values_are_refused_with_their_key() {
    let cases: &[(&str, &str)] = &[
        ("name = \"Fs\"", "name: invalid plugin name"),
        ("name = \"\"", "name: invalid plugin name"),
        ("provides = []", "provides: a plugin must provide"),
        ("provides = [\"widgets\"]", "provides"),
        (
            "wasm = \"../x.wasm\"",
            "wasm: \"../x.wasm\" must be a relative path",
        ),
        ("wasm = \"/abs.wasm\"", "wasm:"),
    ];
    for (line, expected) in cases {
        let key = line.split(' ').next().unwrap();
        let text: String = MINIMAL
            .lines()
            .filter(|l| !l.starts_with(&format!("{key} ")))
            .chain(std::iter::once(*line))
            .map(|l| format!("{l}\n"))
            .collect();
        let err = error(&text);
        assert!(err.contains(expected), "{line}: {err}");
        assert!(err.starts_with("/x/plugin.toml:"), "{err}");
    }
    let caps: &[(&str, &str)] = &[
        (
            "filesystem = [{ path = \"relative/dir\" }]",
            "capabilities.filesystem[0].path",
        ),
        (
            "filesystem = [{ path = \"$HOME\" }]",
            "only $CWD and $PLUGIN_DATA",
        ),
        (
            "filesystem = [{ path = \"$CWD/../up\" }]",
            "must not contain `..`",
        ),
        (
            "filesystem = [{ path = \"$CWD\", access = \"write\" }]",
            "capabilities.filesystem[0].access",
        ),
        ("network = [\"example.org\"]", "capabilities.network[0]"),
        (
            "network = [\"a.org:443\", \"b.org:http\"]",
            "capabilities.network[1]",
        ),
        ("env = [\"NOT-A-NAME\"]", "capabilities.env[0]"),
    ];
    for (line, expected) in caps {
        let err = error(&format!("{MINIMAL}[capabilities]\n{line}\n"));
        assert!(err.contains(expected), "{line}: {err}");
        assert!(err.starts_with("/x/plugin.toml:6:"), "{line}: {err}");
    }
    let err = error(&format!("{MINIMAL}[limits]\nmemory-mb = 0\n"));
    assert!(
        err.starts_with("/x/plugin.toml:6:13: limits.memory-mb: must be between"),
        "{err}"
    );
    let err = error(&format!("{MINIMAL}[limits]\ntimeout-ms = -5\n"));
    assert!(err.contains("limits.timeout-ms"), "{err}");
}

#[test]
fn syntax_errors_name_the_line() {
    let err = error("name = \"fs\"\nversion = \"0.1.0\n");
    assert!(err.starts_with("/x/plugin.toml:2:"), "{err}");
}

#[test]
fn missing_required_keys_are_named() {
    let err = error("name = \"fs\"\nversion = \"0.1.0\"\nprovides = [\"tools\"]\n");
    assert_eq!(err, "/x/plugin.toml:1:1: api: missing field `api`");
    let err = error(&format!(
        "{MINIMAL}[capabilities]\nfilesystem = [{{ access = \"read-only\" }}]\n"
    ));
    assert!(
        err.contains("capabilities.filesystem[0].path: missing field `path`"),
        "{err}"
    );
}

#[test]
fn load_reads_the_file_and_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plugin.toml");
    std::fs::write(&path, format!("{MINIMAL}exec = true\n")).unwrap();
    let err = Manifest::load(&path).unwrap_err().to_string();
    assert!(
        err.starts_with(&format!("{}:5:1: exec: unknown field", path.display())),
        "{err}"
    );
    let err = Manifest::load(&dir.path().join("missing.toml"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("missing.toml"), "{err}");
}

const NATIVE: &str = r#"name = "fast"
version = "0.1.0"
api = "0.1.1"
runtime = "native"
library = "libfast.so"
provides = ["tools"]

[capabilities]
trust-native = true
"#;

#[test]
fn the_runtime_defaults_to_component() {
    let m = parse(MINIMAL).unwrap();
    assert_eq!(m.runtime, talaria_plugin_host::Runtime::Component);
    assert!(!m.capabilities.trust_native);
    let e = error(&format!("{MINIMAL}runtime = \"python\"\n"));
    assert!(
        e.starts_with("/x/plugin.toml:5:11: runtime: unknown variant `python`"),
        "{e}"
    );
}

#[test]
fn only_native_plugins_request_trust_native() {
    let e = error(&format!("{MINIMAL}[capabilities]\ntrust-native = true\n"));
    assert!(
        e.contains("capabilities.trust-native: only native plugins (`runtime = \"native\"`) request trust-native"),
        "{e}"
    );
}

#[test]
fn a_library_belongs_to_native_plugins() {
    let e = error(&format!("{MINIMAL}library = \"libx.so\"\n"));
    assert!(e.contains("library: only native plugins"), "{e}");
}

#[cfg(feature = "extism")]
#[test]
fn extism_plugins_provide_tools_from_a_module() {
    let m = parse(&format!(
        "{MINIMAL}runtime = \"extism\"\nwasm = \"probe.wasm\"\n"
    ))
    .unwrap();
    assert_eq!(m.runtime, talaria_plugin_host::Runtime::Extism);
    assert_eq!(m.wasm, Path::new("probe.wasm"));
    let e = error(
        &(MINIMAL.replace("[\"tools\"]", "[\"tools\", \"hooks\"]") + "runtime = \"extism\"\n"),
    );
    assert!(
        e.contains("provides: a plugin with runtime \"extism\" can only provide tools"),
        "{e}"
    );
}

#[cfg(not(feature = "extism"))]
#[test]
fn extism_needs_the_feature() {
    let e = error(&format!("{MINIMAL}runtime = \"extism\"\n"));
    assert_eq!(
        e,
        "/x/plugin.toml:5:11: runtime: this build has no Extism support (feature `extism`)"
    );
}

#[cfg(not(feature = "native"))]
#[test]
fn native_needs_the_feature() {
    let e = error(NATIVE);
    assert!(
        e.ends_with("runtime: this build has no native plugin support (feature `native`)"),
        "{e}"
    );
}

#[cfg(feature = "native")]
#[test]
fn native_plugins_name_a_library_and_request_only_trust() {
    let m = parse(NATIVE).unwrap();
    assert_eq!(m.runtime, talaria_plugin_host::Runtime::Native);
    assert_eq!(m.wasm, Path::new("libfast.so"));
    assert!(m.capabilities.trust_native);

    for (text, expected) in [
        (
            NATIVE.replace("trust-native = true", ""),
            "capabilities.trust-native: a native plugin runs unsandboxed and must request it",
        ),
        (
            NATIVE.replace("\n[capabilities]\ntrust-native = true\n", ""),
            "capabilities.trust-native: a native plugin runs unsandboxed and must request it",
        ),
        (
            NATIVE.replace(
                "trust-native = true",
                "trust-native = true\nnetwork = [\"a.org:443\"]",
            ),
            "capabilities.network: a native plugin runs unsandboxed: it cannot be limited",
        ),
        (
            NATIVE.replace("library = \"libfast.so\"\n", ""),
            "library: a native plugin must name its shared library",
        ),
        (
            NATIVE.replace("library = \"libfast.so\"", "wasm = \"x.wasm\""),
            "wasm: a native plugin names its shared library with `library`",
        ),
        (
            NATIVE.replace("library = \"libfast.so\"", "library = \"../libfast.so\""),
            "library: \"../libfast.so\" must be a relative path inside the plugin directory",
        ),
        (
            format!("{NATIVE}[limits]\nmemory-mb = 64\n"),
            "limits.memory-mb: a native plugin's memory cannot be limited",
        ),
    ] {
        let e = error(&text);
        assert!(e.contains(expected), "{expected:?} not in {e:?}");
    }
    let m = parse(&format!("{NATIVE}[limits]\ntimeout-ms = 500\n")).unwrap();
    assert_eq!(m.limits.timeout_ms, 500, "the host stops waiting after it");
}
