//! A real OpenSSH server on a loopback port, with a throwaway host key and
//! user key, for tests of the ssh backend (Debian: openssh-server,
//! openssh-client). [`Sshd::installed`] says whether it can run here.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const SSHD: &str = "/usr/sbin/sshd";

/// How long [`Sshd::start`] waits for the server to accept connections.
const START_LIMIT: Duration = Duration::from_secs(60);

/// A running sshd, killed when dropped.
pub struct Sshd {
    child: Child,
    log: PathBuf,
    /// The port it listens on (127.0.0.1).
    pub port: u16,
    /// The user it lets in (the current user).
    pub user: String,
    /// The private key it accepts.
    pub identity_file: PathBuf,
    /// A known-hosts file for the client (filled on first connection).
    pub known_hosts: PathBuf,
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Sshd {
    /// Whether sshd, ssh and ssh-keygen are installed; prints a notice naming
    /// what is missing.
    pub fn installed() -> bool {
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
            eprintln!(
                "SKIPPED: ssh tests need {missing:?} (Debian: openssh-server, openssh-client)"
            );
        }
        missing.is_empty()
    }

    /// Starts sshd with its keys and config in `dir` and waits until it
    /// accepts connections.
    pub fn start(dir: &Path) -> std::io::Result<Self> {
        keygen(&dir.join("host_key"))?;
        keygen(&dir.join("user_key"))?;
        std::fs::copy(dir.join("user_key.pub"), dir.join("authorized_keys"))?;
        // sshd refuses to start without its privilege separation directory.
        let _ = std::fs::create_dir_all("/run/sshd");
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
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
        std::fs::write(&config_file, config)?;
        let log = dir.join("sshd.log");
        let child = Command::new(SSHD)
            .arg("-D")
            .arg("-e")
            .arg("-f")
            .arg(&config_file)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log)?)
            .spawn()?;
        let mut sshd = Self {
            child,
            log,
            port,
            user: current_user()?,
            identity_file: dir.join("user_key"),
            known_hosts: dir.join("known_hosts"),
        };
        let deadline = Instant::now() + START_LIMIT;
        loop {
            if let Some(status) = sshd.child.try_wait()? {
                return Err(std::io::Error::other(format!(
                    "sshd exited with {status}: {}",
                    sshd.log()
                )));
            }
            let address = ([127, 0, 0, 1], port).into();
            if TcpStream::connect_timeout(&address, Duration::from_secs(1)).is_ok() {
                return Ok(sshd);
            }
            if Instant::now() > deadline {
                return Err(std::io::Error::other(format!(
                    "sshd did not accept connections: {}",
                    sshd.log()
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// What sshd logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

fn keygen(path: &Path) -> std::io::Result<()> {
    let status = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", "talaria-test", "-f"])
        .arg(path)
        .status()?;
    if status.success() {
        Ok(())
    } else {
        Err(std::io::Error::other(format!(
            "ssh-keygen failed: {status}"
        )))
    }
}

fn current_user() -> std::io::Result<String> {
    let out = Command::new("id").arg("-un").output()?;
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}
