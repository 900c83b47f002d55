//! The approval gate in front of the backends, with fake approvers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::common::sh;
use async_trait::async_trait;
use talaria_approval::{ApprovalPolicy, ApprovalRequest, Approver, Decision, DenyAll};
use talaria_exec::{
    Backend, ExecError, ExecOrigin, ExecRequest, Executor, GatedExecutor, LocalBackend,
};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// Answers every request the same way and records what it was asked.
struct Fake {
    answer: Decision,
    asked: Mutex<Vec<ApprovalRequest>>,
}

impl Fake {
    fn new(answer: Decision) -> Arc<Self> {
        Arc::new(Self {
            answer,
            asked: Mutex::new(Vec::new()),
        })
    }

    fn asked(&self) -> Vec<ApprovalRequest> {
        self.asked.lock().unwrap().clone()
    }
}

#[async_trait]
impl Approver for Fake {
    async fn ask(&self, request: &ApprovalRequest) -> Decision {
        self.asked.lock().unwrap().push(request.clone());
        self.answer.clone()
    }
}

/// Never answers; tells the test when it was asked.
struct Silent(Notify);

#[async_trait]
impl Approver for Silent {
    async fn ask(&self, _request: &ApprovalRequest) -> Decision {
        self.0.notify_one();
        std::future::pending().await
    }
}

/// A sandboxed backend for the test: runs locally (the commands used with it
/// only touch a temporary directory) but claims to be a sandbox.
struct PretendSandbox;

impl Backend for PretendSandbox {
    fn name(&self) -> &str {
        "pretend-sandbox"
    }
    fn sandboxed(&self) -> bool {
        true
    }
    fn command(&self, request: &ExecRequest) -> Result<Command, ExecError> {
        LocalBackend::new().command(request)
    }
}

/// Must never be asked for a command: counts the attempts and refuses.
#[derive(Default)]
struct NeverRun {
    calls: AtomicUsize,
}

impl Backend for NeverRun {
    fn name(&self) -> &str {
        "never-run"
    }
    fn sandboxed(&self) -> bool {
        true
    }
    fn command(&self, _request: &ExecRequest) -> Result<Command, ExecError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Err(ExecError::Failed(
            "this backend must never run anything".into(),
        ))
    }
}

fn policy(dir: &tempfile::TempDir) -> ApprovalPolicy {
    ApprovalPolicy::load(dir.path().join("approvals.toml")).unwrap()
}

fn origin() -> ExecOrigin {
    ExecOrigin::new("core", "terminal", "session-1")
}

/// A temporary directory holding a `build` directory to delete.
fn workdir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("build")).unwrap();
    dir
}

#[tokio::test]
async fn dangerous_command_denied_by_deny_all() {
    let (profile, work) = (tempfile::tempdir().unwrap(), workdir());
    let gate = GatedExecutor::new(
        Arc::new(LocalBackend::new()),
        Arc::new(policy(&profile)),
        Arc::new(DenyAll),
    );
    let err = gate
        .execute(
            sh("rm -rf build", work.path()),
            &origin(),
            &CancellationToken::new(),
        )
        .await
        .unwrap_err();
    match err {
        ExecError::Denied(message) => assert!(message.contains("recursive delete"), "{message}"),
        other => panic!("unexpected {other:?}"),
    }
    assert!(work.path().join("build").exists());
}

#[tokio::test]
async fn safe_command_runs_without_asking() {
    let (profile, work) = (tempfile::tempdir().unwrap(), workdir());
    let approver = Fake::new(Decision::Deny);
    let gate = GatedExecutor::new(
        Arc::new(LocalBackend::new()),
        Arc::new(policy(&profile)),
        approver.clone(),
    );
    assert!(!gate.sandboxed());
    let out = gate
        .execute(
            sh("echo safe", work.path()),
            &origin(),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(out.stdout, b"safe\n");
    assert!(approver.asked().is_empty());
}

#[tokio::test]
async fn approved_dangerous_command_runs_and_the_user_saw_it() {
    let (profile, work) = (tempfile::tempdir().unwrap(), workdir());
    let approver = Fake::new(Decision::Once);
    let gate = GatedExecutor::new(
        Arc::new(LocalBackend::new()),
        Arc::new(policy(&profile)),
        approver.clone(),
    );
    let out = gate
        .execute(
            sh("rm -rf build", work.path()),
            &origin(),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(out.status, Some(0));
    assert!(!work.path().join("build").exists());
    let asked = approver.asked();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].command, "rm -rf build");
    assert_eq!(asked[0].tool, "terminal");
    assert_eq!(asked[0].session_id, "session-1");
}

#[tokio::test]
async fn hardline_is_denied_even_in_yolo_mode_and_a_sandbox() {
    let profile = tempfile::tempdir().unwrap();
    let backend = Arc::new(NeverRun::default());
    let approver = Fake::new(Decision::Always);
    let gate = GatedExecutor::new(
        backend.clone(),
        Arc::new(policy(&profile).with_yolo(true)),
        approver.clone(),
    );
    let err = gate
        .execute(
            sh("rm -rf /", std::path::Path::new("/")),
            &origin(),
            &CancellationToken::new(),
        )
        .await
        .unwrap_err();
    match err {
        ExecError::Denied(message) => assert!(message.contains("hardline"), "{message}"),
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(backend.calls.load(Ordering::SeqCst), 0);
    assert!(approver.asked().is_empty());
}

#[tokio::test]
async fn sandboxed_backend_skips_asking() {
    let (profile, work) = (tempfile::tempdir().unwrap(), workdir());
    let approver = Fake::new(Decision::Deny);
    let gate = GatedExecutor::new(
        Arc::new(PretendSandbox),
        Arc::new(policy(&profile)),
        approver.clone(),
    );
    assert!(gate.sandboxed());
    let out = gate
        .execute(
            sh("rm -rf build", work.path()),
            &origin(),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(out.status, Some(0));
    assert!(!work.path().join("build").exists());
    assert!(approver.asked().is_empty());
}

#[tokio::test]
async fn cancel_while_waiting_for_the_user() {
    let (profile, work) = (tempfile::tempdir().unwrap(), workdir());
    let approver = Arc::new(Silent(Notify::new()));
    let gate = GatedExecutor::new(
        Arc::new(LocalBackend::new()),
        Arc::new(policy(&profile)),
        approver.clone(),
    );
    let cancel = CancellationToken::new();
    let request = sh("rm -rf build", work.path());
    let origin = origin();
    let execute = gate.execute(request, &origin, &cancel);
    let cancel_when_asked = async {
        approver.0.notified().await;
        cancel.cancel();
    };
    let (result, ()) = tokio::join!(execute, cancel_when_asked);
    assert_eq!(result, Err(ExecError::Cancelled));
    assert!(work.path().join("build").exists());
}

/// A session working directory `proj` and, beside it, `outside/build` (both
/// in one temporary directory) with a symlink `proj/link` to `outside`.
struct Escape {
    root: tempfile::TempDir,
}

impl Escape {
    fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("proj/build")).unwrap();
        std::fs::create_dir_all(root.path().join("proj/sub")).unwrap();
        std::fs::create_dir_all(root.path().join("outside/build")).unwrap();
        std::os::unix::fs::symlink(root.path().join("outside"), root.path().join("proj/link"))
            .unwrap();
        Self { root }
    }
    fn proj(&self) -> std::path::PathBuf {
        self.root.path().join("proj")
    }
    fn outside(&self) -> std::path::PathBuf {
        self.root.path().join("outside").canonicalize().unwrap()
    }
    fn origin(&self) -> ExecOrigin {
        origin().with_workspace(self.proj())
    }
}

#[tokio::test]
async fn a_sandbox_does_not_cover_a_directory_outside_the_workspace() {
    let (profile, escape) = (tempfile::tempdir().unwrap(), Escape::new());
    let gate = GatedExecutor::new(
        Arc::new(PretendSandbox),
        Arc::new(policy(&profile)),
        Arc::new(DenyAll),
    );
    let proj = escape.proj();
    // Every spelling of the outside directory: direct, `..`, a symlink.
    for cwd in [
        escape.outside(),
        proj.join("../outside"),
        proj.join("link"),
        proj.join("sub/../link"),
    ] {
        for script in ["rm -rf build", "echo harmless > note"] {
            let err = gate
                .execute(
                    sh(script, &cwd),
                    &escape.origin(),
                    &CancellationToken::new(),
                )
                .await
                .unwrap_err();
            match err {
                ExecError::Denied(message) => assert!(
                    message.contains(&escape.outside().display().to_string()),
                    "{script} in {}: {message}",
                    cwd.display()
                ),
                other => panic!("unexpected {other:?}"),
            }
        }
    }
    assert!(escape.outside().join("build").is_dir());
    assert!(!escape.outside().join("note").exists());
    // Inside the workspace the sandbox still lets it run without asking.
    let out = gate
        .execute(
            sh("rm -rf build", &proj),
            &escape.origin(),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(out.status, Some(0));
    assert!(!proj.join("build").exists());
}

#[tokio::test]
async fn a_directory_outside_the_workspace_is_shown_and_approved_per_directory() {
    let (profile, escape) = (tempfile::tempdir().unwrap(), Escape::new());
    let approver = Fake::new(Decision::Session);
    let gate = GatedExecutor::new(
        Arc::new(PretendSandbox),
        Arc::new(policy(&profile)),
        approver.clone(),
    );
    let outside = escape.outside();
    let run = |cwd: std::path::PathBuf, script: &'static str| {
        let gate = &gate;
        let origin = escape.origin();
        async move {
            gate.execute(sh(script, &cwd), &origin, &CancellationToken::new())
                .await
                .unwrap()
        }
    };
    // Through the symlink: the command runs in (and the user sees) the real directory.
    let out = run(escape.proj().join("link"), "pwd").await;
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        outside.display().to_string()
    );
    let asked = approver.asked();
    assert_eq!(asked.len(), 1);
    assert!(
        asked[0]
            .finding
            .description
            .contains(&outside.display().to_string()),
        "{:?}",
        asked[0].finding
    );
    // Approved for the session: that directory again is not asked about…
    run(outside.clone(), "ls").await;
    assert_eq!(approver.asked().len(), 1);
    // …but a dangerous command there is, and so is another directory.
    run(outside.clone(), "rm -rf build").await;
    let asked = approver.asked();
    assert_eq!(asked.len(), 2);
    assert!(
        asked[1].finding.description.contains("recursive delete"),
        "{:?}",
        asked[1].finding
    );
    assert!(!outside.join("build").exists());
    run(escape.root.path().to_owned(), "ls").await;
    assert_eq!(approver.asked().len(), 3);
}

#[tokio::test]
async fn stdin_for_a_shell_is_screened_with_the_command() {
    let (profile, work) = (tempfile::tempdir().unwrap(), workdir());
    let gate = GatedExecutor::new(
        Arc::new(LocalBackend::new()),
        Arc::new(policy(&profile)),
        Arc::new(DenyAll),
    );
    let mut request = ExecRequest::new("bash", vec![], work.path());
    request.stdin = Some(b"rm -rf build\n".to_vec());
    let err = gate
        .execute(request, &origin(), &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(matches!(err, ExecError::Denied(_)), "{err:?}");
    assert!(work.path().join("build").is_dir());
    // Data for a program that does not run it is not screened.
    let mut request = ExecRequest::new("cat", vec![], work.path());
    request.stdin = Some(b"rm -rf build\n".to_vec());
    let out = gate
        .execute(request, &origin(), &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(out.stdout, b"rm -rf build\n");
}

/// Relative names in a command are read against the command's own directory
/// (`workdir`), not the directory the agent started in: `sed -i … config.yaml`
/// run in the profile home changes the home's control file.
#[tokio::test]
async fn protected_paths_are_resolved_against_the_commands_directory() {
    let root = tempfile::tempdir().unwrap();
    let root_path = root.path().canonicalize().unwrap();
    let home = root_path.join("home");
    let start = root_path.join("start");
    let elsewhere = root_path.join("elsewhere");
    for dir in [&home, &start, &elsewhere] {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join("config.yaml"), "a\n").unwrap();
    }
    let paths = talaria_approval::ProtectedPaths {
        write: vec![home.join("config.yaml")],
        read: vec![],
        homes: vec![home.clone()],
    };
    let context = talaria_approval::PathContext {
        cwd: Some(start.clone()),
        home_dir: None,
        talaria_home: Some(home.clone()),
    };
    let policy = ApprovalPolicy::load(root_path.join("approvals.toml"))
        .unwrap()
        .with_protected(paths, &context)
        .with_yolo(true);
    let gate = GatedExecutor::new(
        Arc::new(LocalBackend::new()),
        Arc::new(policy),
        Arc::new(DenyAll),
    );
    let script = "sed -i s/a/b/ config.yaml";
    // In the home (as a workdir): protected, refused even in yolo mode.
    let err = gate
        .execute(sh(script, &home), &origin(), &CancellationToken::new())
        .await
        .unwrap_err();
    match err {
        ExecError::Denied(message) => assert!(message.contains("protected"), "{message}"),
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(
        std::fs::read_to_string(home.join("config.yaml")).unwrap(),
        "a\n"
    );
    // Also when the session is confined to a workspace holding the home.
    let confined = origin().with_workspace(&root_path);
    let err = gate
        .execute(sh(script, &home), &confined, &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(matches!(err, ExecError::Denied(_)), "{err:?}");
    // Elsewhere the same command edits an ordinary file.
    let out = gate
        .execute(sh(script, &elsewhere), &confined, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(out.status, Some(0));
    assert_eq!(
        std::fs::read_to_string(elsewhere.join("config.yaml")).unwrap(),
        "b\n"
    );
    assert_eq!(
        std::fs::read_to_string(home.join("config.yaml")).unwrap(),
        "a\n"
    );
}

/// Records the controls each request reached the backend with, and runs nothing.
#[derive(Default)]
struct RecordControls(Mutex<Vec<talaria_exec::Controls>>);

impl Backend for RecordControls {
    fn name(&self) -> &str {
        "record-controls"
    }
    fn sandboxed(&self) -> bool {
        false
    }
    fn command(&self, request: &ExecRequest) -> Result<Command, ExecError> {
        self.0.lock().unwrap().push(request.controls);
        Ok(Command::new("true"))
    }
}

/// The confinement keeps the profile's controls from every command, except what the user
/// approved: a change of a control file makes them writable for that command, reading a
/// secret makes it visible.
#[tokio::test]
async fn only_a_users_approval_of_the_controls_opens_them_for_that_command() {
    let (profile, work) = (tempfile::tempdir().unwrap(), workdir());
    let home = profile.path().join("home");
    let paths = talaria_approval::ProtectedPaths {
        write: vec![home.join("config.yaml")],
        read: vec![home.join(".env")],
        homes: vec![home.clone()],
    };
    let context = talaria_approval::PathContext {
        cwd: Some(work.path().to_path_buf()),
        home_dir: None,
        talaria_home: Some(home.clone()),
    };
    let backend = Arc::new(RecordControls::default());
    let gate = GatedExecutor::new(
        backend.clone(),
        Arc::new(
            policy(&profile)
                .with_yolo(true)
                .with_protected(paths, &context),
        ),
        Fake::new(Decision::Once),
    );
    let config = home.join("config.yaml").display().to_string();
    let env = home.join(".env").display().to_string();
    for script in [
        "rm -rf build".to_owned(),
        format!("echo x >> {config}"),
        format!("cat {env}"),
    ] {
        gate.execute(
            sh(&script, work.path()),
            &origin(),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    }
    use talaria_exec::Controls;
    assert_eq!(
        *backend.0.lock().unwrap(),
        [Controls::Protected, Controls::Writable, Controls::Open]
    );
}
