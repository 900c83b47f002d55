//! The approval gate in front of the backends, with fake approvers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use common::sh;
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
        self.answer
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
        LocalBackend.command(request)
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
        Arc::new(LocalBackend),
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
        Arc::new(LocalBackend),
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
        Arc::new(LocalBackend),
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
        Arc::new(LocalBackend),
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
