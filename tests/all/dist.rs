//! Slim distributions: `talaria dist build` on the repository's own
//! `distributions/minimal.toml` and `distributions/default.toml` (release builds), then each
//! distribution runs a conversation with a terminal tool call from a fresh
//! profile with no index configured, loading its plugins precompiled. Heavy:
//! run by `./scripts/test --heavy` (it is `#[ignore]`d otherwise).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::common::{Home, assert_code, run, stdout, tool_results};
use talaria_testkit::{ScriptedServer, Step};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Builds the distribution of `manifest` into `target/dist/<name>` and
/// returns the directory. Release builds take minutes: no hang limit here.
fn build(manifest: &str, name: &str) -> PathBuf {
    let out = repo().join("target/dist").join(name);
    let home = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_talaria"))
        .args(["dist", "build", manifest, "--out"])
        .arg(&out)
        .arg("--source")
        .arg(repo())
        .current_dir(repo())
        .env("TALARIA_HOME", home.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "dist build {manifest} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // The size table, for the record (CI logs).
    eprintln!("{}", String::from_utf8_lossy(&output.stdout));
    out
}

fn compiled_files(dir: &Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |entries| {
        entries
            .filter_map(Result::ok)
            .filter(|e| e.path().extension().is_some_and(|x| x == "cwasm"))
            .count()
    })
}

fn converse(dist: &Path) {
    let home = Home::new();
    // A fresh profile: no compiled plugins, no indexes.
    let cache = home.path().join("cache/plugins");
    let _ = std::fs::remove_dir_all(&cache);
    let server = ScriptedServer::spawn(vec![
        Step::tool_call("terminal", r#"{"command": "echo dist-ok"}"#),
        Step::text("done"),
    ])
    .unwrap();
    let work = home.workdir();
    let base = server.openai_base_url();
    let mut shipped = Command::new(dist.join("talaria"));
    shipped
        .args(["-q", "say it", "--yolo", "--provider", "openai"])
        .args(["--model", "test-model", "--base-url", &base])
        .env_clear()
        .env("TALARIA_HOME", home.path())
        .env("HOME", home.path())
        .env("TALARIA_API_KEY", "sk-test")
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .current_dir(work.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let output = run(shipped);
    assert_code(&output, 0);
    assert!(stdout(&output).contains("done"));
    assert!(
        tool_results(&server, 1)
            .iter()
            .any(|r| r.contains("dist-ok")),
        "{:?}",
        tool_results(&server, 1)
    );
    assert_eq!(
        compiled_files(&cache),
        0,
        "the distribution's plugins load precompiled: nothing is compiled into the profile"
    );
}

// Two size-optimised release builds of the whole workspace: about 13 minutes
// on CI's two cores, so this runs only under `./scripts/test --heavy`.
#[test]
#[ignore = "heavy: release builds of both distributions (./scripts/test --heavy)"]
fn minimal_and_default_distributions_build_and_run_offline() {
    for (manifest, name, plugins) in [
        (
            "distributions/minimal.toml",
            "minimal",
            &["fs", "terminal"][..],
        ),
        (
            "distributions/default.toml",
            "default",
            &["fs", "terminal", "web"][..],
        ),
    ] {
        let dist = build(manifest, name);
        for plugin in plugins {
            assert!(
                dist.join("plugins")
                    .join(plugin)
                    .join("plugin.toml")
                    .is_file()
            );
        }
        assert_eq!(
            compiled_files(&dist.join("plugins/.compiled")),
            plugins.len()
        );
        let lock = std::fs::read_to_string(dist.join("plugins.lock")).unwrap();
        assert!(lock.contains("name = \"fs\"") && lock.contains("source = \"builtin\""));
        let version = Command::new(dist.join("talaria"))
            .arg("--version")
            .output()
            .unwrap();
        assert!(version.status.success());
        // The default's link arguments reached the linker: packed relative relocations, which
        // tie the binary to a glibc with DT_RELR support; the minimal one stays portable.
        let binary = std::fs::read(dist.join("talaria")).unwrap();
        let relr = binary
            .windows(b"GLIBC_ABI_DT_RELR".len())
            .any(|window| window == b"GLIBC_ABI_DT_RELR");
        assert_eq!(relr, name == "default", "{name}: DT_RELR {relr}");
        converse(&dist);
        assert_eq!(
            extism_support(&dist),
            name == "default",
            "Extism plugins load in the default distribution only"
        );
    }
}

/// Whether the distribution's binary accepts an Extism plugin's manifest.
fn extism_support(dist: &Path) -> bool {
    let home = Home::new();
    crate::common::install_test_plugin(&home, "extism-probe");
    let output = Command::new(dist.join("talaria"))
        .args(["plugins", "list"])
        .env_clear()
        .env("TALARIA_HOME", home.path())
        .env("HOME", home.path())
        .output()
        .unwrap();
    assert!(output.status.success());
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    if text.contains("no Extism support") {
        return false;
    }
    assert!(text.contains("extism-probe"), "{text}");
    true
}
