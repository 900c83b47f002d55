//! Slim distributions: `talaria dist build` on the repository's own
//! `distributions/minimal.toml` (runtime-only: no plugin compiler) and
//! `distributions/default.toml` (size-optimised release builds), then each
//! distribution runs a conversation with a terminal tool call from a fresh
//! profile with no index configured, loading its plugins precompiled and signed
//! with the distribution's key. Prints what each weighs (binary, directory,
//! peak memory of `--version`). Heavy: run by `./scripts/test --heavy` (it is
//! `#[ignore]`d otherwise).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::common::{Home, assert_code, run, stdout, tool_results};
use talaria_testkit::{ScriptedServer, Step};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Builds the distribution of `manifest` into `target/dist-build/out/<name>` (not under
/// `target/dist`: that is cargo's own directory for the `dist` profile) and returns the
/// directory. Release builds take minutes: no hang limit here.
fn build(manifest: &str, name: &str) -> PathBuf {
    let out = repo().join("target/dist-build/out").join(name);
    // The builder's profile keeps each distribution's signing key: the same key next time
    // leaves the binary unchanged, so a second run rebuilds nothing.
    let home = repo().join("target/dist-build/home");
    let output = Command::new(env!("CARGO_BIN_EXE_talaria"))
        .args(["dist", "build", manifest, "--out"])
        .arg(&out)
        .arg("--source")
        .arg(repo())
        .current_dir(repo())
        .env("TALARIA_HOME", &home)
        // A target directory of its own: ordinary builds are not blocked meanwhile, nor their
        // artefacts replaced by these features'.
        .env("CARGO_TARGET_DIR", repo().join("target/dist-build"))
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

/// A one-shot run of the distribution's binary in a fresh profile, with a terminal tool call.
fn converse(dist: &Path) {
    let (server, output, home) = run_terminal_turn(dist);
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
        compiled_files(&home.path().join("cache/plugins")),
        0,
        "the distribution's plugins load precompiled: nothing is compiled into the profile"
    );
}

/// The run's profile comes back with it, to look at its compile cache.
fn run_terminal_turn(dist: &Path) -> (ScriptedServer, std::process::Output, Home) {
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
        // No --yolo: the command runs because the approval layer parsed it as harmless, which in
        // a build whose panics abort takes its parse check (`talaria __approval-parse-check`).
        .args(["-q", "say it", "--provider", "openai"])
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
    (server, output, home)
}

/// Runs the distribution's `talaria ARGS` on `home` (also its working directory), which must
/// fail; its stderr.
fn refused(dist: &Path, home: &Home, args: &[&str]) -> String {
    let output = Command::new(dist.join("talaria"))
        .args(args)
        .current_dir(home.path())
        .env_clear()
        .env("TALARIA_HOME", home.path())
        .env("HOME", home.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(!output.status.success(), "{args:?} succeeded: {stderr}");
    stderr
}

/// The minimal distribution is the terminal alone and cannot compile: the other surfaces are not
/// subcommands of it, `plugin install` says it cannot and installs nothing, and compiled plugins
/// whose signature does not verify are not loaded (nor compiled).
fn minimal_is_terminal_only_and_runtime_only(dist: &Path) {
    let home = Home::new();
    for surface in ["gateway", "acp", "serve", "batch", "cron", "mcp"] {
        let stderr = refused(dist, &home, &[surface, "--help"]);
        assert!(
            stderr.contains("unrecognized subcommand"),
            "{surface}: {stderr}"
        );
    }
    crate::common::build_plugins();
    let package = repo().join("target/plugins/test/noop");
    let stderr = refused(
        dist,
        &home,
        &["plugin", "install", package.to_str().unwrap()],
    );
    assert!(stderr.contains("runtime-only distribution"), "{stderr}");
    assert!(!home.path().join("plugins/noop").exists());
    // The tools for building plugins are left out too, and say so.
    let stderr = refused(dist, &home, &["plugin", "new", "word_count"]);
    assert!(
        stderr.contains("without the tools for building plugins"),
        "{stderr}"
    );
    assert!(!home.path().join("word_count").exists());

    let signature = dist.join("plugins/.compiled/B3SUMS.sig");
    let good = std::fs::read(&signature).unwrap();
    std::fs::write(&signature, b"AAAA\n").unwrap();
    let (_server, output, _) = run_terminal_turn(dist);
    std::fs::write(&signature, good).unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("cannot compile plugins") && stderr.contains("B3SUMS.sig"),
        "{stderr}"
    );
}

/// The peak resident memory (KiB) of `binary --version`, as GNU time sees its one child
/// (installed by `scripts/system-deps --heavy`).
fn version_peak_rss_kib(binary: &Path) -> u64 {
    let output = Command::new("/usr/bin/time")
        .args(["-f", "%M"])
        .arg(binary)
        .arg("--version")
        .stdout(Stdio::null())
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    stderr.lines().last().unwrap().trim().parse().unwrap()
}

fn dir_bytes(path: &Path) -> u64 {
    std::fs::read_dir(path).map_or(0, |entries| {
        entries
            .filter_map(Result::ok)
            .map(|entry| {
                let meta = std::fs::symlink_metadata(entry.path()).unwrap();
                if meta.is_dir() {
                    dir_bytes(&entry.path())
                } else {
                    meta.len()
                }
            })
            .sum()
    })
}

// Three builds of the whole workspace (minimal, the quick compiler for its plugins, default):
// 20 minutes on two cores with the dependencies' sources at hand, so this runs only under
// `./scripts/test --heavy`.
#[test]
#[ignore = "heavy: release builds of both distributions (./scripts/test --heavy)"]
fn minimal_and_default_distributions_build_and_run_offline() {
    let mut table = String::from(
        "| distribution | binary | directory | `--version` peak RSS |\n|---|---|---|---|\n",
    );
    for (manifest, name, plugins) in [
        (
            "distributions/minimal.toml",
            "minimal",
            &["fs", "terminal"][..],
        ),
        (
            "distributions/default.toml",
            "default",
            &["fs", "terminal", "web", "facts", "mem0"][..],
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
        assert!(dist.join("plugins/.compiled/B3SUMS.sig").is_file());
        let public = std::fs::read_to_string(dist.join("dist-key.pub")).unwrap();
        assert_eq!(
            public.trim().len(),
            44,
            "an ed25519 key in base64: {public}"
        );
        let lock = std::fs::read_to_string(dist.join("plugins.lock")).unwrap();
        assert!(lock.contains("name = \"fs\"") && lock.contains("source = \"builtin\""));
        // Shipped to whoever runs it, unlike a profile's own lockfile.
        let mode = std::fs::metadata(dist.join("plugins.lock"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o644, "{name}: plugins.lock is {mode:o}");
        let version = Command::new(dist.join("talaria"))
            .arg("--version")
            .output()
            .unwrap();
        assert!(version.status.success());
        // The manifests' link arguments reached the linker: packed relative relocations, which
        // tie the binary to a glibc with DT_RELR support.
        let binary = std::fs::read(dist.join("talaria")).unwrap();
        let relr = binary
            .windows(b"GLIBC_ABI_DT_RELR".len())
            .any(|window| window == b"GLIBC_ABI_DT_RELR");
        assert!(relr, "{name}: no DT_RELR");
        converse(&dist);
        if name == "minimal" {
            minimal_is_terminal_only_and_runtime_only(&dist);
        }
        let mib = |bytes: u64| format!("{:.1} MiB", bytes as f64 / 1048576.0);
        table.push_str(&format!(
            "| {name} | {} | {} | {:.1} MiB |\n",
            mib(std::fs::metadata(dist.join("talaria")).unwrap().len()),
            mib(dir_bytes(&dist)),
            version_peak_rss_kib(&dist.join("talaria")) as f64 / 1024.0
        ));
        assert_eq!(
            extism_support(&dist),
            name == "default",
            "Extism plugins load in the default distribution only"
        );
    }
    eprintln!("{table}");
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
