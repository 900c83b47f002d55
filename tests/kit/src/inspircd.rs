//! A real IRC network with services, for tests of identification by
//! account: InspIRCd (Debian: inspircd) with Atheme's NickServ (Debian:
//! atheme-services) linked to it, both on loopback ports from configurations
//! written into a directory, in the foreground. The server offers the IRCv3
//! account capabilities (`account-tag`, `extended-join`, `account-notify`)
//! and WHOIS 330; users sign in with `PRIVMSG NickServ :REGISTER pw email`
//! or `:IDENTIFY pw`. [`Inspircd::installed`] says whether it can run here;
//! [`Inspircd::shared`] is one network per test binary.
//!
//! Each daemon runs under a shell that stops it once its standard input
//! closes, which happens when the test process exits however it ends: a
//! network shared by a test binary outlives no test run.

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

const INSPIRCD: &str = "/usr/sbin/inspircd";
const ATHEME: &str = "/usr/bin/atheme-services";

/// The server's name, as in the prefix of its own lines.
pub const SERVER_NAME: &str = "irc.talaria.test";
/// The services' server name.
pub const SERVICES_NAME: &str = "services.talaria.test";

/// How long [`Inspircd::start`] waits for the server and its services.
const START_LIMIT: Duration = Duration::from_secs(30);

/// Stops the daemon (`$@`) once standard input closes, then removes
/// `$REMOVE_AFTER` when set.
const UNTIL_STDIN_CLOSES: &str = "\"$@\" & child=$!; cat >/dev/null; kill $child 2>/dev/null; \
                                  wait $child; if [ -n \"$REMOVE_AFTER\" ]; then rm -rf \"$REMOVE_AFTER\"; fi";

/// A daemon under [`UNTIL_STDIN_CLOSES`].
struct Daemon {
    shell: Child,
    /// Dropped to stop it.
    stdin: Option<ChildStdin>,
}

impl Daemon {
    fn spawn(
        program: &str,
        args: &[&str],
        log: &Path,
        remove_after: Option<&Path>,
    ) -> std::io::Result<Self> {
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)?;
        let mut shell = Command::new("sh")
            .arg("-c")
            .arg(UNTIL_STDIN_CLOSES)
            .arg("sh")
            .arg(program)
            .args(args)
            .env("REMOVE_AFTER", remove_after.unwrap_or(Path::new("")))
            .stdin(Stdio::piped())
            .stdout(out.try_clone()?)
            .stderr(out)
            .spawn()?;
        let stdin = shell.stdin.take();
        Ok(Self { shell, stdin })
    }

    fn exited(&mut self) -> bool {
        self.shell.try_wait().ok().flatten().is_some()
    }

    fn stop(&mut self) {
        if let Some(mut stdin) = self.stdin.take() {
            let _ = stdin.flush();
        }
        let _ = self.shell.wait();
    }
}

/// A running InspIRCd with Atheme, stopped when dropped.
pub struct Inspircd {
    daemons: Vec<Daemon>,
    dir: PathBuf,
    /// The clients' port (127.0.0.1).
    pub port: u16,
    /// How long the server and its services took to be ready.
    pub started_in: Duration,
}

impl Drop for Inspircd {
    fn drop(&mut self) {
        // Services first: the server then sees them leave, not vanish.
        for daemon in self.daemons.iter_mut().rev() {
            daemon.stop();
        }
    }
}

impl std::fmt::Debug for Inspircd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inspircd")
            .field("port", &self.port)
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

impl Inspircd {
    /// Whether inspircd and atheme-services are installed; prints a notice
    /// naming what is missing.
    pub fn installed() -> bool {
        let missing: Vec<&str> = [INSPIRCD, ATHEME]
            .into_iter()
            .filter(|program| !Path::new(program).exists())
            .collect();
        if !missing.is_empty() {
            eprintln!(
                "SKIPPED: IRC services tests need {missing:?} (Debian: inspircd, atheme-services)"
            );
        }
        missing.is_empty()
    }

    /// The network of this test binary, started at first use in a directory
    /// of its own under the system's temporary directory and stopped when
    /// the test process exits. Every test gets the same one: use nicks and
    /// accounts of your own.
    pub fn shared() -> Result<&'static Self, String> {
        static SHARED: OnceLock<Result<Inspircd, String>> = OnceLock::new();
        SHARED
            .get_or_init(|| {
                let dir =
                    std::env::temp_dir().join(format!("talaria-inspircd-{}", std::process::id()));
                std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
                let server = Self::start_in(&dir, true).map_err(|e| e.to_string())?;
                eprintln!(
                    "inspircd with atheme ready on 127.0.0.1:{} in {} ms",
                    server.port,
                    server.started_in.as_millis()
                );
                Ok(server)
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Writes the configurations into `dir`, starts both daemons on free
    /// loopback ports and waits until the services have joined the network.
    pub fn start(dir: &Path) -> std::io::Result<Self> {
        Self::start_in(dir, false)
    }

    /// [`start`](Self::start), removing `dir` once stopped when `remove`.
    fn start_in(dir: &Path, remove: bool) -> std::io::Result<Self> {
        let mut attempt = 0;
        loop {
            match Self::start_once(dir, remove) {
                // A free port can be taken by another test before it is bound.
                Err(error) if attempt < 3 && error.to_string().contains("bind") => {
                    attempt += 1;
                }
                outcome => return outcome,
            }
        }
    }

    fn start_once(dir: &Path, remove: bool) -> std::io::Result<Self> {
        let started = Instant::now();
        // A failed attempt that was to remove it has.
        std::fs::create_dir_all(dir)?;
        let (port, link_port) = (free_port()?, free_port()?);
        let dir_text = dir.display().to_string();
        std::fs::write(
            dir.join("inspircd.conf"),
            inspircd_conf(&dir_text, port, link_port),
        )?;
        std::fs::write(dir.join("atheme.conf"), atheme_conf(link_port))?;
        let mut server = Self {
            daemons: Vec::new(),
            dir: dir.to_path_buf(),
            port,
            started_in: Duration::ZERO,
        };
        let config = format!("--config={}", dir.join("inspircd.conf").display());
        let mut args = vec![config.as_str(), "--nofork", "--nopid"];
        // It refuses root unless told; the tests may run as root.
        if std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0) {
            args.push("--runasroot");
        }
        server.daemons.push(Daemon::spawn(
            INSPIRCD,
            &args,
            &dir.join("inspircd.out"),
            remove.then_some(dir),
        )?);
        server.wait_for("inspircd", |_| {
            let ports = [port, link_port];
            ports.iter().all(|&p| {
                let address = ([127, 0, 0, 1], p).into();
                TcpStream::connect_timeout(&address, Duration::from_secs(1)).is_ok()
            })
        })?;
        let atheme_log = dir.join("atheme.log");
        server.daemons.push(Daemon::spawn(
            ATHEME,
            &[
                "-n",
                "-c",
                &format!("{dir_text}/atheme.conf"),
                "-D",
                &dir_text,
                "-l",
                &atheme_log.display().to_string(),
                "-p",
                &format!("{dir_text}/atheme.pid"),
            ],
            &dir.join("atheme.out"),
            None,
        )?);
        server.wait_for("atheme", |_| {
            std::fs::read_to_string(&atheme_log)
                .is_ok_and(|log| log.contains("finished synching with uplink"))
        })?;
        server.started_in = started.elapsed();
        Ok(server)
    }

    /// Waits until `ready` holds, failing when a daemon exits first.
    fn wait_for(&mut self, what: &str, ready: impl Fn(&Self) -> bool) -> std::io::Result<()> {
        let deadline = Instant::now() + START_LIMIT;
        loop {
            if self.daemons.iter_mut().any(Daemon::exited) {
                return Err(std::io::Error::other(format!(
                    "{what} exited: {}",
                    self.log()
                )));
            }
            if ready(self) {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(std::io::Error::other(format!(
                    "{what} was not ready within {} s: {}",
                    START_LIMIT.as_secs(),
                    self.log()
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// What the daemons wrote so far.
    pub fn log(&self) -> String {
        ["inspircd.out", "ircd.log", "atheme.out", "atheme.log"]
            .iter()
            .map(|name| {
                let text = std::fs::read_to_string(self.dir.join(name)).unwrap_or_default();
                format!("--- {name}\n{text}")
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// The server: clients and the services' link on loopback, no DNS or ident
/// lookups, the account capabilities and WHOIS 330.
fn inspircd_conf(dir: &str, port: u16, link_port: u16) -> String {
    format!(
        r#"<config format="xml">
<server name="{SERVER_NAME}" description="Talaria test server" network="TalariaTest">
<admin name="tests" nick="tests" email="tests@talaria.invalid">
<bind address="127.0.0.1" port="{port}" type="clients">
<bind address="127.0.0.1" port="{link_port}" type="servers">
<connect allow="*" timeout="60" threshold="1000" commandrate="100000" pingfreq="120"
         hardsendq="1048576" softsendq="65536" recvq="65536" localmax="1000"
         globalmax="1000" useident="no" resolvehostnames="no">
<log method="file" type="* -USERINPUT -USEROUTPUT" level="default" target="{dir}/ircd.log">
<module name="spanningtree">
<module name="services_account">
<module name="cap">
<module name="ircv3">
<module name="ircv3_accounttag">
<link name="{SERVICES_NAME}" ipaddr="127.0.0.1" port="{link_port}" allowmask="127.0.0.0/8"
      sendpass="talaria-link" recvpass="talaria-link">
<uline server="{SERVICES_NAME}" silent="yes">
"#
    )
}

/// The services: NickServ with registration and sign-in, no mail, no
/// enforcement of registered nicks (a test takes them over on purpose).
fn atheme_conf(link_port: u16) -> String {
    format!(
        r#"loadmodule "modules/protocol/inspircd";
loadmodule "modules/backend/opensex";
loadmodule "modules/crypto/pbkdf2v2";
loadmodule "modules/nickserv/main";
loadmodule "modules/nickserv/register";
loadmodule "modules/nickserv/identify";
loadmodule "modules/nickserv/logout";
loadmodule "modules/nickserv/help";
serverinfo {{
    name = "{SERVICES_NAME}";
    desc = "Talaria test services";
    numeric = "00A";
    recontime = 1;
    netname = "TalariaTest";
    hidehostsuffix = "users.talaria.test";
    adminname = "tests";
    adminemail = "tests@talaria.invalid";
    registeremail = "noreply@talaria.invalid";
    loglevel = {{ error; info; network; }};
    maxlogins = 5;
    maxusers = 50;
    mdlimit = 30;
    emaillimit = 10;
    emailtime = 300;
    auth = none;
    casemapping = rfc1459;
}};
uplink "{SERVER_NAME}" {{
    host = "127.0.0.1";
    port = {link_port};
    send_password = "talaria-link";
    receive_password = "talaria-link";
}};
nickserv {{
    nick = "NickServ";
    user = "NickServ";
    host = "{SERVICES_NAME}";
    real = "Nickname Services";
    maxnicks = 5;
    expire = 30;
}};
general {{
    flood_msgs = 0;
    flood_time = 10;
    ratelimit_uses = 1000;
    ratelimit_period = 1;
    kline_time = 7;
    commit_interval = 5;
    uplink_sendq_limit = 1048576;
    language = "en";
    immune_level = immune;
}};
"#
    )
}
