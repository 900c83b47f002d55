//! Running commands on the local backend: output, exit codes, stdin, the
//! environment policy, output caps and start-up errors.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::sh;
use talaria_exec::{Backend, ExecError, ExecRequest, LocalBackend, PASSED_ENV, run};
use tokio_util::sync::CancellationToken;

const SECRET: &str = "TALARIA_TEST_SECRET";

async fn local(request: &ExecRequest) -> Result<talaria_exec::ExecOutput, ExecError> {
    run(&LocalBackend::new(), request, &CancellationToken::new()).await
}

#[tokio::test]
async fn echo_collects_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let out = local(&ExecRequest::new("echo", vec!["hello".into()], dir.path()))
        .await
        .unwrap();
    assert_eq!(out.status, Some(0));
    assert_eq!(out.stdout, b"hello\n");
    assert!(out.stderr.is_empty());
    assert!(!out.timed_out && !out.truncated);
}

#[tokio::test]
async fn exit_code_and_stderr_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let out = local(&sh("echo oops >&2; exit 3", dir.path()))
        .await
        .unwrap();
    assert_eq!(out.status, Some(3));
    assert_eq!(out.stderr, b"oops\n");
    assert!(out.stdout.is_empty());
}

#[tokio::test]
async fn killed_by_a_signal_has_no_status() {
    let dir = tempfile::tempdir().unwrap();
    let out = local(&sh("kill -9 $$", dir.path())).await.unwrap();
    assert_eq!(out.status, None);
    assert!(!out.timed_out);
}

#[tokio::test]
async fn runs_in_the_working_directory() {
    let dir = tempfile::tempdir().unwrap();
    let out = local(&ExecRequest::new("pwd", vec![], dir.path()))
        .await
        .unwrap();
    assert_eq!(
        String::from_utf8(out.stdout).unwrap().trim_end(),
        dir.path().to_str().unwrap()
    );
}

#[tokio::test]
async fn stdin_is_written_then_closed() {
    let dir = tempfile::tempdir().unwrap();
    let mut request = ExecRequest::new("cat", vec![], dir.path());
    request.stdin = Some(b"line one\nline two\n".to_vec());
    let out = local(&request).await.unwrap();
    assert_eq!(out.stdout, b"line one\nline two\n");
}

#[tokio::test]
async fn large_stdin_and_stdout_flow_together() {
    // More than a pipe buffer each way: writing and reading must overlap.
    let dir = tempfile::tempdir().unwrap();
    let data: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
    let mut request = ExecRequest::new("cat", vec![], dir.path());
    request.stdin = Some(data.clone());
    request.output_cap = data.len();
    let out = local(&request).await.unwrap();
    assert_eq!(out.status, Some(0));
    assert!(!out.truncated);
    assert!(out.stdout == data);
}

#[tokio::test]
async fn without_stdin_the_command_reads_end_of_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = local(&ExecRequest::new("cat", vec![], dir.path()))
        .await
        .unwrap();
    assert_eq!(out.status, Some(0));
    assert!(out.stdout.is_empty());
}

#[test]
fn host_secrets_are_scrubbed_unless_passed() {
    if std::env::var_os(SECRET).is_none() {
        // Setting a variable in this (multi-threaded) test process is unsafe,
        // so run this test again in a child process that has it.
        let output = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "local::host_secrets_are_scrubbed_unless_passed",
                "--test-threads=1",
            ])
            .env(SECRET, "hunter2")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "{stdout}{}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(stdout.contains("1 passed"), "{stdout}");
        return;
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let script = format!("echo \"secret=${{{SECRET}-unset}} path=${{PATH:+set}}\"");
        let out = local(&sh(&script, dir.path())).await.unwrap();
        assert_eq!(out.stdout, b"secret=unset path=set\n");

        let mut passed = sh(&script, dir.path());
        passed.env = vec![(SECRET.into(), "given".into())];
        let out = local(&passed).await.unwrap();
        assert_eq!(out.stdout, b"secret=given path=set\n");

        // Named in `terminal.env_passthrough`: the host's value goes through.
        let through = LocalBackend::new().with_passthrough([SECRET.to_owned()]);
        let out = run(
            &through,
            &sh(&script, dir.path()),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
        assert_eq!(out.stdout, b"secret=hunter2 path=set\n");

        // The whole environment of a program started directly.
        let mut request = ExecRequest::new("env", vec![], dir.path());
        request.env = vec![("EXTRA".into(), "1".into())];
        let out = local(&request).await.unwrap();
        let env = String::from_utf8(out.stdout).unwrap();
        for line in env.lines() {
            let name = line.split('=').next().unwrap();
            assert!(
                PASSED_ENV.contains(&name) || name == "EXTRA",
                "unexpected variable {name} in {env}"
            );
        }
        assert!(env.lines().any(|l| l == "EXTRA=1"), "{env}");
    });
}

#[tokio::test]
async fn output_beyond_the_cap_is_drained_and_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let mut request = sh("head -c 10000000 /dev/zero; echo done >&2", dir.path());
    request.output_cap = 1000;
    let out = local(&request).await.unwrap();
    // The command finished: its 10 MB were read, not left blocking on a full pipe.
    assert_eq!(out.status, Some(0));
    assert_eq!(out.stdout.len(), 1000);
    assert_eq!(out.stderr, b"done\n");
    assert!(out.truncated);
}

#[tokio::test]
async fn stderr_is_capped_separately() {
    let dir = tempfile::tempdir().unwrap();
    let mut request = sh("head -c 10000000 /dev/zero >&2; echo ok", dir.path());
    request.output_cap = 10;
    let out = local(&request).await.unwrap();
    assert_eq!(out.status, Some(0));
    assert_eq!(out.stdout, b"ok\n");
    assert_eq!(out.stderr.len(), 10);
    assert!(out.truncated);
}

#[tokio::test]
async fn missing_program_is_a_clear_failure() {
    let dir = tempfile::tempdir().unwrap();
    let err = local(&ExecRequest::new(
        "talaria-no-such-program",
        vec![],
        dir.path(),
    ))
    .await
    .unwrap_err();
    match err {
        ExecError::Failed(message) => {
            assert!(message.contains("talaria-no-such-program"), "{message}")
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test]
async fn missing_working_directory_is_a_clear_failure() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("gone");
    let err = local(&ExecRequest::new("true", vec![], &missing))
        .await
        .unwrap_err();
    match err {
        ExecError::Failed(message) => {
            assert!(message.contains(missing.to_str().unwrap()), "{message}");
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test]
async fn an_already_cancelled_token_starts_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let cancel = CancellationToken::new();
    cancel.cancel();
    let result = run(&LocalBackend::new(), &sh("touch ran", dir.path()), &cancel).await;
    assert_eq!(result, Err(ExecError::Cancelled));
    assert!(!dir.path().join("ran").exists());
}

#[test]
fn local_backend_is_not_sandboxed() {
    assert!(!LocalBackend::new().sandboxed());
    assert_eq!(LocalBackend::new().name(), "local");
}
