//! The whole process group dies on timeout, cancellation, a dropped future,
//! and when the main process exits leaving background children.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use crate::common::{HANG_GUARD, eventually, live_in_group, read_pid_file, sh};
use talaria_exec::{ExecError, LocalBackend, run};
use tokio_util::sync::CancellationToken;

/// Writes the group id (the shell is the group leader) then leaves a
/// background and a foreground sleep.
const SLEEPERS: &str = "echo $$ > pid; sleep 300 & sleep 300";

#[tokio::test]
async fn cancel_kills_the_running_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let request = sh(SLEEPERS, dir.path());
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let cancel = cancel.clone();
        async move { run(&LocalBackend::new(), &request, &cancel).await }
    });
    let pgid = read_pid_file(&dir.path().join("pid")).await;
    eventually("both sleeps to start", || live_in_group(pgid) >= 2).await;

    cancel.cancel();
    let result = tokio::time::timeout(HANG_GUARD, task)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(result, Err(ExecError::Cancelled));
    eventually("the process group to die", || live_in_group(pgid) == 0).await;
}

#[tokio::test]
async fn dropping_the_future_kills_the_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let request = sh(SLEEPERS, dir.path());
    let task = tokio::spawn(async move {
        run(&LocalBackend::new(), &request, &CancellationToken::new()).await
    });
    let pgid = read_pid_file(&dir.path().join("pid")).await;
    eventually("both sleeps to start", || live_in_group(pgid) >= 2).await;

    task.abort();
    assert!(task.await.unwrap_err().is_cancelled());
    eventually("the process group to die", || live_in_group(pgid) == 0).await;
}

#[tokio::test]
async fn timeout_kills_the_group_and_keeps_the_output_so_far() {
    let dir = tempfile::tempdir().unwrap();
    let mut request = sh(
        "echo $$ > pid; echo started; sleep 300 & sleep 300",
        dir.path(),
    );
    // Long enough for the first two commands on a busy machine.
    request.timeout = Duration::from_secs(3);
    let out = tokio::time::timeout(
        HANG_GUARD,
        run(&LocalBackend::new(), &request, &CancellationToken::new()),
    )
    .await
    .unwrap()
    .unwrap();
    assert!(out.timed_out);
    assert_eq!(out.status, None);
    assert_eq!(out.stdout, b"started\n");
    let pgid = read_pid_file(&dir.path().join("pid")).await;
    eventually("the process group to die", || live_in_group(pgid) == 0).await;
}

#[tokio::test]
async fn background_children_do_not_keep_a_finished_command_running() {
    // The background sleep inherits stdout; only killing the rest of the
    // group once the shell exits lets reading end.
    let dir = tempfile::tempdir().unwrap();
    let request = sh("echo $$ > pid; sleep 300 & echo done", dir.path());
    let out = tokio::time::timeout(
        HANG_GUARD,
        run(&LocalBackend::new(), &request, &CancellationToken::new()),
    )
    .await
    .unwrap()
    .unwrap();
    assert!(!out.timed_out);
    assert_eq!(out.status, Some(0));
    assert_eq!(out.stdout, b"done\n");
    let pgid = read_pid_file(&dir.path().join("pid")).await;
    eventually("the background sleep to die", || live_in_group(pgid) == 0).await;
}
