//! The ssh backend against a real sshd on a loopback port, with a throwaway
//! host key and user key. Skipped with a notice when OpenSSH's server or
//! client is not installed (Debian: openssh-server, openssh-client).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use crate::common::{eventually, sh};
use talaria_exec::{Backend, ExecOutput, ExecRequest, SshBackend, SshConfig, run};
use talaria_testkit::sshd::Sshd;
use tokio_util::sync::CancellationToken;

/// Starts sshd with keys in `dir`; returns it with a config for the backend.
fn start_sshd(dir: &Path) -> (Sshd, SshConfig) {
    let sshd = Sshd::start(dir).unwrap();
    let mut ssh = SshConfig::new("127.0.0.1", sshd.user.clone());
    ssh.port = sshd.port;
    ssh.identity_file = Some(sshd.identity_file.clone());
    ssh.known_hosts = Some(sshd.known_hosts.clone());
    ssh.extra_options = vec!["ConnectTimeout=30".into()];
    (sshd, ssh)
}

async fn run_ssh(config: &SshConfig, request: &ExecRequest, sshd: &Sshd) -> ExecOutput {
    let out = run(
        &SshBackend::new(config.clone()),
        request,
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    assert!(
        out.status.is_some() && out.status != Some(255),
        "ssh failed: {}\nsshd log: {}",
        String::from_utf8_lossy(&out.stderr),
        sshd.log()
    );
    out
}

#[tokio::test]
async fn round_trip_through_a_real_sshd() {
    if !Sshd::installed() {
        return;
    }
    let keys = tempfile::tempdir().unwrap();
    let (sshd, config) = start_sshd(keys.path());
    assert!(!SshBackend::new(config.clone()).sandboxed());

    // The request's cwd is used remotely (here the same machine).
    let work = tempfile::tempdir().unwrap();
    let out = run_ssh(&config, &sh("echo hello && pwd", work.path()), &sshd).await;
    assert_eq!(out.status, Some(0));
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        format!("hello\n{}\n", work.path().display())
    );
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(keys.path().join("known_hosts").exists());

    // remote_cwd wins over a request cwd that does not even exist locally.
    let remote = tempfile::tempdir().unwrap();
    let mut with_remote_cwd = config.clone();
    with_remote_cwd.remote_cwd = Some(remote.path().to_str().unwrap().to_owned());
    let out = run_ssh(
        &with_remote_cwd,
        &sh("pwd", Path::new("/talaria/not/here")),
        &sshd,
    )
    .await;
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        format!("{}\n", remote.path().display())
    );

    // Variables, quoting, stdin and exit codes survive the trip.
    let mut request = ExecRequest::new(
        "sh",
        vec![
            "-c".into(),
            "printf '%s|%s|' \"$GREETING\" \"$1\"; cat; exit 7".into(),
            "sh".into(),
            "it's a $test".into(),
        ],
        work.path(),
    );
    request.env = vec![("GREETING".into(), "hi there".into())];
    request.stdin = Some(b"from stdin".to_vec());
    let out = run_ssh(&config, &request, &sshd).await;
    assert_eq!(out.status, Some(7));
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "hi there|it's a $test|from stdin"
    );
}

/// Live processes (not zombies) whose command line contains `marker`.
fn running_with(marker: &str) -> Vec<String> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| {
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            let state = stat
                .rsplit_once(')')?
                .1
                .split_whitespace()
                .next()?
                .to_owned();
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            (state != "Z" && cmdline.contains(marker)).then_some(cmdline)
        })
        .collect()
}

/// Without a terminal sshd leaves a remote command running when the
/// connection goes; the watcher kills the command's whole group then, both
/// for a cancelled command and for what a finished one left behind.
#[tokio::test]
async fn remote_commands_end_with_the_connection() {
    if !Sshd::installed() {
        return;
    }
    let keys = tempfile::tempdir().unwrap();
    let (sshd, config) = start_sshd(keys.path());
    let work = tempfile::tempdir().unwrap();
    let backend = SshBackend::new(config.clone());
    // Sleep durations no other process uses, to find exactly these processes.
    let marker = format!("{}.75", 500_000 + std::process::id() % 100_000);

    // Cancelled while running (the local client is killed, as when the agent dies).
    let cancel = CancellationToken::new();
    let running = {
        let request = sh(&format!("sleep 1{marker} & sleep 2{marker}"), work.path());
        let cancel = cancel.clone();
        let backend = backend.clone();
        tokio::spawn(async move { run(&backend, &request, &cancel).await })
    };
    eventually("both remote sleeps to start", || {
        ["1", "2"]
            .iter()
            .all(|n| !running_with(&format!("sleep {n}{marker}")).is_empty())
    })
    .await;
    cancel.cancel();
    assert!(matches!(
        running.await.unwrap(),
        Err(talaria_exec::ExecError::Cancelled)
    ));
    eventually("the remote sleeps to end with the connection", || {
        running_with(&marker).is_empty()
    })
    .await;

    // Finished, leaving a detached child behind: it goes with the connection.
    let request = sh(
        &format!("sleep 3{marker} </dev/null >/dev/null 2>&1 & echo done"),
        work.path(),
    );
    let out = run_ssh(&config, &request, &sshd).await;
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "done\n");
    eventually("the left-over sleep to end with the connection", || {
        running_with(&marker).is_empty()
    })
    .await;
}

/// Some servers keep the session process (the remote shell's parent) owned
/// by root, where `kill -0` fails although it lives: the watcher then asks
/// `ps`, so the command runs while that parent lives and ends after it.
/// Played locally: a root shell runs the remote line as uid 65534 in a new
/// session (as sshd would), then exits.
#[tokio::test]
async fn the_watcher_follows_a_parent_it_may_not_signal() {
    let is_root = std::process::Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| out.stdout.starts_with(b"0\n"));
    let has_setpriv = std::process::Command::new("setpriv")
        .arg("--version")
        .output()
        .is_ok_and(|out| out.status.success());
    if !is_root || !has_setpriv {
        eprintln!("SKIPPED: needs root and setpriv (util-linux)");
        return;
    }
    let marker = format!("{}.95", 600_000 + std::process::id() % 100_000);
    let request = ExecRequest::new("sleep", vec![format!("4{marker}")], Path::new("/tmp"));
    let command = SshBackend::new(SshConfig::new("example.invalid", "u"))
        .command(&request)
        .unwrap();
    let remote = command
        .get_args()
        .last()
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    let script = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(script.path(), &remote).unwrap();
    let readable: std::fs::Permissions = std::os::unix::fs::PermissionsExt::from_mode(0o644);
    std::fs::set_permissions(script.path(), readable).unwrap();
    let parent_lives = std::time::Duration::from_secs(6);
    let mut parent = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "setpriv --reuid=65534 --regid=65534 --clear-groups setsid sh {} & sleep {}",
            script.path().display(),
            parent_lives.as_secs()
        ))
        .spawn()
        .unwrap();
    eventually("the command to start", || {
        !running_with(&format!("sleep 4{marker}")).is_empty()
    })
    .await;
    // The watcher checks at once and then every second: past its first
    // checks, the command still runs while its parent lives.
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    let alive_with_parent = !running_with(&marker).is_empty();
    parent.wait().unwrap();
    eventually("the command to end after its parent", || {
        running_with(&marker).is_empty()
    })
    .await;
    assert!(
        alive_with_parent,
        "the watcher killed a command whose parent lived"
    );
}
