//! The bubblewrap backend: only the working directory is writable, the
//! network is cut unless allowed, and killing the command kills the sandbox.
//! Skipped with a notice when `bwrap` is not installed (Debian: bubblewrap).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};

use crate::common::{HANG_GUARD, eventually, live_with_cmdline, sh, unique_number};
use talaria_exec::{Backend, BwrapBackend, ExecError, ExecOutput, ExecRequest, run};
use tokio_util::sync::CancellationToken;

fn sandbox(network: bool) -> Option<BwrapBackend> {
    match BwrapBackend::new(network) {
        Ok(backend) => Some(backend),
        Err(e) => {
            eprintln!("SKIPPED: bwrap tests need bubblewrap: {e}");
            None
        }
    }
}

async fn run_in(backend: &BwrapBackend, request: &ExecRequest) -> ExecOutput {
    run(backend, request, &CancellationToken::new())
        .await
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[tokio::test]
async fn writes_inside_the_working_directory_succeed() {
    let Some(backend) = sandbox(false) else {
        return;
    };
    assert!(backend.sandboxed());
    let work = tempfile::tempdir().unwrap();
    let out = run_in(
        &backend,
        &sh("echo inside > made.txt && cat made.txt && pwd", work.path()),
    )
    .await;
    assert_eq!(out.status, Some(0), "{}", text(&out.stderr));
    let canonical = work.path().canonicalize().unwrap();
    assert_eq!(
        text(&out.stdout),
        format!("inside\n{}\n", canonical.display())
    );
    assert_eq!(
        std::fs::read_to_string(work.path().join("made.txt")).unwrap(),
        "inside\n"
    );
}

/// Tries to write `target` from inside a sandbox on `work`; asserts it failed
/// and left nothing on the host.
async fn assert_cannot_write(backend: &BwrapBackend, work: &Path, target: &Path) {
    let script = format!("echo escaped > '{}'", target.display());
    let out = run_in(backend, &sh(&script, work)).await;
    let leaked = target.exists();
    if leaked {
        let _ = std::fs::remove_file(target);
    }
    assert!(!leaked, "the sandbox wrote {}", target.display());
    assert_ne!(
        out.status,
        Some(0),
        "writing {} succeeded",
        target.display()
    );
}

#[tokio::test]
async fn writes_outside_the_working_directory_fail() {
    let Some(backend) = sandbox(false) else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let name = format!("talaria-bwrap-escape-{}", unique_number());

    // A directory under the build tree: visible in the sandbox, read-only.
    let build_tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    assert_cannot_write(&backend, work.path(), &build_tmp.path().join(&name)).await;
    // Another temporary directory: /tmp is private inside the sandbox.
    let other_tmp = tempfile::tempdir().unwrap();
    assert_cannot_write(&backend, work.path(), &other_tmp.path().join(&name)).await;
    // The home directory.
    let home = PathBuf::from(std::env::var_os("HOME").expect("HOME is set"));
    assert_cannot_write(&backend, work.path(), &home.join(&name)).await;

    // Root inside the sandbox has no capabilities left to remount / writable.
    let script = format!(
        "mount -o remount,rw / 2>/dev/null; echo escaped > '{}'",
        build_tmp.path().join(&name).display()
    );
    let out = run_in(&backend, &sh(&script, work.path())).await;
    assert_ne!(out.status, Some(0));
    assert!(!build_tmp.path().join(&name).exists());
}

#[tokio::test]
async fn without_network_loopback_listeners_are_unreachable() {
    let Some(offline) = sandbox(false) else {
        return;
    };
    let Some(online) = sandbox(true) else { return };
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let work = tempfile::tempdir().unwrap();
    let connect = ExecRequest::new(
        "bash",
        vec![
            "-c".into(),
            format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected"),
        ],
        work.path(),
    );

    let out = run_in(&offline, &connect).await;
    assert_ne!(out.status, Some(0));
    assert!(!text(&out.stdout).contains("connected"));

    // The same command reaches the listener when the network is shared: the
    // failure above is the sandbox's doing.
    let out = run_in(&online, &connect).await;
    assert_eq!(out.status, Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "connected\n");
}

#[tokio::test]
async fn environment_is_scrubbed_in_the_sandbox_too() {
    let Some(backend) = sandbox(false) else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let mut request = ExecRequest::new("env", vec![], work.path());
    request.env = vec![("GIVEN".into(), "yes".into())];
    let out = run_in(&backend, &request).await;
    let env = text(&out.stdout);
    for line in env.lines() {
        let name = line.split('=').next().unwrap();
        assert!(
            // bwrap sets PWD for --chdir.
            talaria_exec::PASSED_ENV.contains(&name) || name == "GIVEN" || name == "PWD",
            "unexpected variable {name} in {env}"
        );
    }
    assert!(env.lines().any(|l| l == "GIVEN=yes"), "{env}");
}

#[tokio::test]
async fn cancel_kills_the_sandboxed_processes() {
    let Some(backend) = sandbox(false) else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    // An argument no other process has, to find the sleeps from outside.
    let marker = format!("{}.5", unique_number() % 1_000_000 + 100_000);
    let sleeper = format!("sleep {marker}");
    let request = sh(&format!("{sleeper} & {sleeper}"), work.path());
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (backend, cancel) = (backend.clone(), cancel.clone());
        async move { run(&backend, &request, &cancel).await }
    });
    eventually("the sandboxed sleeps to start", || {
        live_with_cmdline(&sleeper) == 2
    })
    .await;
    cancel.cancel();
    let result = tokio::time::timeout(HANG_GUARD, task)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(result, Err(ExecError::Cancelled));
    eventually("the sandboxed sleeps to die", || {
        live_with_cmdline(&sleeper) == 0
    })
    .await;
}

#[tokio::test]
async fn missing_program_fails_before_entering_the_sandbox() {
    let Some(backend) = sandbox(false) else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let err = run(
        &backend,
        &ExecRequest::new("talaria-no-such-program", vec![], work.path()),
        &CancellationToken::new(),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(&err, ExecError::Failed(m) if m.contains("talaria-no-such-program")),
        "{err:?}"
    );
}
