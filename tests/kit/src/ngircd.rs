//! A real IRC server (ngIRCd, Debian: ngircd) on loopback ports, for tests of
//! the IRC chat adapter: plain, and optionally TLS with a throwaway CA and
//! server certificate made with the `openssl` command at start.
//! [`Ngircd::installed`] says whether it can run here.
//!
//! ngIRCd started as root drops to `nobody` after reading its configuration
//! and keys, so nothing it reads later may live in a private directory; it
//! reads nothing later with this configuration (MOTD inline, no PID file).

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const NGIRCD: &str = "/usr/sbin/ngircd";

/// The server's name, as it appears in the prefix of its own lines.
pub const SERVER_NAME: &str = "irc.talaria.test";

/// How long [`Ngircd::start`] waits for the server to accept connections.
const START_LIMIT: Duration = Duration::from_secs(20);

/// What the server is started with.
#[derive(Debug, Clone, Default)]
pub struct NgircdOptions {
    /// Also listen with TLS ([`Ngircd::tls_port`], [`Ngircd::ca_pem`]).
    pub tls: bool,
    /// The server password clients must send with `PASS`.
    pub password: Option<String>,
    /// The plain port; a free one when `None`. A fixed port is for plugins
    /// whose network grant names it (the IRC adapter's default `*:6667`).
    pub port: Option<u16>,
    /// The TLS port; a free one when `None` (the adapter's grant: `*:6697`).
    pub tls_port: Option<u16>,
}

/// A running ngIRCd, killed when dropped.
pub struct Ngircd {
    child: Option<Child>,
    config: PathBuf,
    log: PathBuf,
    /// The plain port (127.0.0.1).
    pub port: u16,
    /// The TLS port (127.0.0.1), when started with TLS.
    pub tls_port: Option<u16>,
    /// The CA certificate (PEM) that signed the server's certificate, which
    /// is valid for `localhost` and `127.0.0.1`; when started with TLS.
    pub ca_pem: Option<PathBuf>,
}

impl Drop for Ngircd {
    fn drop(&mut self) {
        self.stop();
    }
}

impl Ngircd {
    /// Whether ngircd (and, for TLS, openssl) is installed; prints a notice
    /// naming what is missing.
    pub fn installed(tls: bool) -> bool {
        let mut missing = Vec::new();
        if !Path::new(NGIRCD).exists() {
            missing.push("ngircd");
        }
        if tls && !on_path("openssl") {
            missing.push("openssl");
        }
        if !missing.is_empty() {
            eprintln!("SKIPPED: IRC tests need {missing:?} (Debian: ngircd, openssl)");
        }
        missing.is_empty()
    }

    /// Writes a configuration (and, with TLS, keys) into `dir`, starts
    /// `ngircd -n -f CONF` on free loopback ports and waits until it accepts
    /// connections.
    pub fn start(dir: &Path, options: &NgircdOptions) -> std::io::Result<Self> {
        // A free port can be taken by another test before ngircd binds it:
        // pick again (only when the ports were ours to pick).
        let mut attempt = 0;
        loop {
            match Self::start_once(dir, options) {
                Err(error)
                    if attempt < 4
                        && options.port.is_none()
                        && error.to_string().contains("Address already in use") =>
                {
                    attempt += 1;
                }
                outcome => return outcome,
            }
        }
    }

    fn start_once(dir: &Path, options: &NgircdOptions) -> std::io::Result<Self> {
        let port = match options.port {
            Some(port) => port,
            None => free_port()?,
        };
        let mut tls_section = String::new();
        let (mut tls_port, mut ca_pem) = (None, None);
        if options.tls {
            make_certificates(dir)?;
            let port = match options.tls_port {
                Some(port) => port,
                None => free_port()?,
            };
            tls_section = format!(
                "[SSL]\n\
                 CertFile = {dir}/server.crt\n\
                 KeyFile = {dir}/server.key\n\
                 DHFile = {dir}/dh.pem\n\
                 Ports = {port}\n",
                dir = dir.display()
            );
            tls_port = Some(port);
            ca_pem = Some(dir.join("ca.pem"));
        }
        let password = options
            .password
            .as_deref()
            .map(|p| format!("Password = {p}\n"))
            .unwrap_or_default();
        // DNS and ident lookups off: registration is immediate. No include
        // directory: the system's /etc/ngircd must not leak in.
        let config = format!(
            "[Global]\n\
             Name = {SERVER_NAME}\n\
             Info = Talaria test server\n\
             AdminInfo1 = Talaria tests\n\
             AdminInfo2 = loopback\n\
             AdminEMail = tests@talaria.invalid\n\
             Listen = 127.0.0.1\n\
             Ports = {port}\n\
             MotdPhrase = \"Talaria test server\"\n\
             {password}\
             [Limits]\n\
             MaxConnectionsIP = 0\n\
             MaxNickLength = 30\n\
             [Options]\n\
             IncludeDir = {dir}/conf.d\n\
             DNS = no\n\
             Ident = no\n\
             PAM = no\n\
             {tls_section}",
            dir = dir.display()
        );
        std::fs::create_dir_all(dir.join("conf.d"))?;
        let config_file = dir.join("ngircd.conf");
        std::fs::write(&config_file, config)?;
        let mut server = Self {
            child: None,
            config: config_file,
            log: dir.join("ngircd.log"),
            port,
            tls_port,
            ca_pem,
        };
        server.launch()?;
        Ok(server)
    }

    /// Stops the server (clients see their connections close) and starts it
    /// again with the same configuration on the same ports.
    pub fn restart(&mut self) -> std::io::Result<()> {
        self.stop();
        self.launch()
    }

    /// Stops the server; [`restart`](Self::restart) brings it back.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// `127.0.0.1:PORT` of the plain port.
    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// What the server logged so far (all its runs).
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn launch(&mut self) -> std::io::Result<()> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)?;
        let child = Command::new(NGIRCD)
            .arg("-n")
            .arg("-f")
            .arg(&self.config)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()?;
        self.child = Some(child);
        let deadline = Instant::now() + START_LIMIT;
        let ports: Vec<u16> = std::iter::once(self.port).chain(self.tls_port).collect();
        loop {
            if let Some(child) = self.child.as_mut()
                && let Some(status) = child.try_wait()?
            {
                self.child = None;
                return Err(std::io::Error::other(format!(
                    "ngircd exited with {status}: {}",
                    self.log()
                )));
            }
            let accepting = ports.iter().all(|&port| {
                let address = ([127, 0, 0, 1], port).into();
                TcpStream::connect_timeout(&address, Duration::from_secs(1)).is_ok()
            });
            if accepting {
                return Ok(());
            }
            if Instant::now() > deadline {
                self.stop();
                return Err(std::io::Error::other(format!(
                    "ngircd did not accept connections: {}",
                    self.log()
                )));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

fn on_path(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The test PKI ([`crate::pki`]) and fixed DH parameters (RFC 7919
/// ffdhe2048, so ngircd does not spend a second generating its own).
fn make_certificates(dir: &Path) -> std::io::Result<()> {
    crate::pki::make_test_pki(dir)?;
    crate::pki::openssl(
        dir,
        &[
            "genpkey",
            "-genparam",
            "-algorithm",
            "DH",
            "-pkeyopt",
            "dh_param:ffdhe2048",
            "-out",
            "dh.pem",
        ],
    )
}
