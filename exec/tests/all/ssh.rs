//! The ssh backend against a real sshd on a loopback port, with a throwaway
//! host key and user key. Skipped with a notice when OpenSSH's server or
//! client is not installed (Debian: openssh-server, openssh-client).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::common::{eventually, sh};
use talaria_exec::{Backend, ExecOutput, ExecRequest, SshBackend, SshConfig, run};
use tokio_util::sync::CancellationToken;

const SSHD: &str = "/usr/sbin/sshd";

/// An sshd child, killed when dropped.
struct Sshd {
    child: Child,
    log: PathBuf,
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn installed() -> bool {
    let missing: Vec<&str> = [SSHD, "ssh", "ssh-keygen"]
        .into_iter()
        .filter(|program| {
            Command::new("sh")
                .args(["-c", &format!("command -v {program}")])
                .stdout(Stdio::null())
                .status()
                .map_or(true, |s| !s.success())
        })
        .collect();
    if !missing.is_empty() {
        eprintln!("SKIPPED: ssh tests need {missing:?} (Debian: openssh-server, openssh-client)");
    }
    missing.is_empty()
}

fn keygen(path: &Path) {
    let status = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", "talaria-test", "-f"])
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success());
}

fn current_user() -> String {
    let out = Command::new("id").arg("-un").output().unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Starts sshd on a free loopback port with keys in `dir` and waits until it
/// accepts connections. Returns it with a config for the backend.
async fn start_sshd(dir: &Path) -> (Sshd, SshConfig) {
    keygen(&dir.join("host_key"));
    keygen(&dir.join("user_key"));
    std::fs::copy(dir.join("user_key.pub"), dir.join("authorized_keys")).unwrap();
    // sshd refuses to start without its privilege separation directory.
    let _ = std::fs::create_dir_all("/run/sshd");
    let port = free_port();
    let config = format!(
        "Port {port}\n\
         ListenAddress 127.0.0.1\n\
         HostKey {dir}/host_key\n\
         AuthorizedKeysFile {dir}/authorized_keys\n\
         PidFile {dir}/sshd.pid\n\
         StrictModes no\n\
         UsePAM no\n\
         PasswordAuthentication no\n\
         KbdInteractiveAuthentication no\n\
         PubkeyAuthentication yes\n\
         PermitRootLogin yes\n",
        dir = dir.display()
    );
    let config_file = dir.join("sshd_config");
    std::fs::write(&config_file, config).unwrap();
    let log = dir.join("sshd.log");
    let child = Command::new(SSHD)
        .arg("-D")
        .arg("-e")
        .arg("-f")
        .arg(&config_file)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let mut sshd = Sshd { child, log };
    eventually("sshd to accept connections", || {
        if let Some(status) = sshd.child.try_wait().unwrap() {
            panic!(
                "sshd exited with {status}: {}",
                std::fs::read_to_string(&sshd.log).unwrap_or_default()
            );
        }
        TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_secs(1)).is_ok()
    })
    .await;

    let mut ssh = SshConfig::new("127.0.0.1", current_user());
    ssh.port = port;
    ssh.identity_file = Some(dir.join("user_key"));
    ssh.known_hosts = Some(dir.join("known_hosts"));
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
        std::fs::read_to_string(&sshd.log).unwrap_or_default()
    );
    out
}

#[tokio::test]
async fn round_trip_through_a_real_sshd() {
    if !installed() {
        return;
    }
    let keys = tempfile::tempdir().unwrap();
    let (sshd, config) = start_sshd(keys.path()).await;
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
