//! Starting one headless Chromium for a session: which program, with which
//! flags, in a private profile directory, under the exec crate's supervisor
//! (so it dies with the agent, even by SIGKILL, and is confined: the profile
//! homes hidden, its own profile excepted), in a process group of its own (so
//! closing the session kills every process it started), driven over a pipe.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use command_fds::{CommandFdExt, FdMapping};
use nix::fcntl::OFlag;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::{Pid, pipe2};
use talaria_exec::Confinement;
use tempfile::TempDir;
use tokio::net::unix::pipe;

use crate::BrowserError;
use crate::cdp::Cdp;

/// The programs looked for on `PATH`, in order: the headless shell first
/// (one process group, no crash reporter, less memory), then full browsers.
const CANDIDATES: &[&str] = &[
    "chromium-headless-shell",
    "chromium",
    "chromium-browser",
    "google-chrome",
    "google-chrome-stable",
];

/// Debian installs the headless shell here without a link on `PATH`.
const DEBIAN_HEADLESS_SHELL: &str = "/usr/lib/chromium/chromium-headless-shell";

/// How long a starting browser may take to answer its first command.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// The Chromium to run: `configured` when set (if it is an executable
/// file), else the first candidate on `PATH`.
pub fn find_executable(configured: Option<&Path>) -> Option<PathBuf> {
    if let Some(path) = configured {
        return is_executable(path).then(|| path.to_path_buf());
    }
    let path = std::env::var_os("PATH")?;
    let on_path = CANDIDATES.iter().find_map(|name| {
        std::env::split_paths(&path)
            .map(|dir| dir.join(name))
            .find(|candidate| is_executable(candidate))
    });
    on_path.or_else(|| {
        let shell = PathBuf::from(DEBIAN_HEADLESS_SHELL);
        is_executable(&shell).then_some(shell)
    })
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

/// The flags every browser gets. Background networking, sync, updates and
/// first-run pages are off so the browser only talks to the pages the agent
/// opens; WebRTC may not send UDP around the proxy. Its DevTools channel is a
/// pipe (fds 3 and 4), never a port anything else could connect to.
fn flags(profile: &Path, proxy_port: u16) -> Vec<String> {
    let mut flags: Vec<String> = [
        "--headless=new",
        "--remote-debugging-pipe",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-default-apps",
        "--disable-extensions",
        "--disable-breakpad",
        "--disable-crash-reporter",
        "--disable-dev-shm-usage",
        "--disable-features=Translate,MediaRouter,OptimizationHints,AutofillServerCommunication",
        "--metrics-recording-only",
        "--mute-audio",
        "--hide-scrollbars",
        "--window-size=1280,800",
        "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
        "--proxy-bypass-list=<-loopback>",
    ]
    .iter()
    .map(|flag| (*flag).to_owned())
    .collect();
    flags.push(format!("--user-data-dir={}", profile.display()));
    flags.push(format!("--proxy-server=http://127.0.0.1:{proxy_port}"));
    // Chromium's sandbox cannot start as root; elsewhere it stays on.
    if nix::unistd::geteuid().is_root() {
        flags.push("--no-sandbox".to_owned());
    }
    flags.push("about:blank".to_owned());
    flags
}

/// A running browser; dropping it kills its whole process group and removes
/// its profile.
pub(crate) struct Chromium {
    child: tokio::process::Child,
    group: Option<Pid>,
    log_path: PathBuf,
    // Dropped after the processes are killed (field order).
    _profile: TempDir,
}

impl Drop for Chromium {
    fn drop(&mut self) {
        self.kill();
    }
}

impl Chromium {
    /// Starts `program` with a fresh profile under `profiles`, its traffic
    /// through the proxy on `proxy_port`, the `hidden` directories (the
    /// profile homes) out of its sight but for its own profile, and returns it
    /// with the DevTools connection over its pipe. The caller waits for its
    /// first answer ([`Self::started`]).
    pub fn start(
        program: &Path,
        profiles: &Path,
        proxy_port: u16,
        hidden: &[PathBuf],
    ) -> Result<(Self, Cdp), BrowserError> {
        std::fs::create_dir_all(profiles).map_err(|e| {
            BrowserError::Start(format!("cannot create {}: {e}", profiles.display()))
        })?;
        let profile = tempfile::Builder::new()
            .prefix("session-")
            .tempdir_in(profiles)
            .map_err(|e| BrowserError::Start(format!("cannot create a browser profile: {e}")))?;
        let log_path = profile.path().join("stderr.log");
        let log = std::fs::File::create(&log_path).map_err(|e| {
            BrowserError::Start(format!("cannot create {}: {e}", log_path.display()))
        })?;
        let program_text = program.to_string_lossy().into_owned();
        // No `file:` page reaches the homes: they are hidden from the browser's
        // processes, its own profile (inside one) excepted.
        let confinement = hidden
            .iter()
            .fold(Confinement::new(), Confinement::hidden)
            .writable(profile.path());
        let mut command = talaria_exec::confined_command(
            &program_text,
            &flags(profile.path(), proxy_port),
            &confinement,
        );
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let pipe_error = |e: nix::Error| BrowserError::Start(format!("cannot make a pipe: {e}"));
        let (its_commands, our_commands) = pipe2(OFlag::O_CLOEXEC).map_err(pipe_error)?;
        let (our_answers, its_answers) = pipe2(OFlag::O_CLOEXEC).map_err(pipe_error)?;
        command
            .fd_mappings(vec![
                FdMapping {
                    parent_fd: its_commands,
                    child_fd: 3,
                },
                FdMapping {
                    parent_fd: its_answers,
                    child_fd: 4,
                },
            ])
            .map_err(|e| BrowserError::Start(format!("cannot hand the browser its pipe: {e}")))?;
        // The browser gets no provider keys or tokens from the agent's
        // environment, and its HOME is its throwaway profile.
        command
            .env_clear()
            .envs(
                ["PATH", "LANG", "LC_ALL", "TZ", "FONTCONFIG_PATH"]
                    .iter()
                    .filter_map(|name| Some((*name, std::env::var_os(name)?))),
            )
            .env("HOME", profile.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log);
        let child = tokio::process::Command::from(command)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| BrowserError::Start(format!("cannot run {program_text}: {e}")))?;
        // The command (and with it the browser's ends of the pipes) is gone: a
        // browser that dies closes the answers.
        let group = child
            .id()
            .and_then(|pid| i32::try_from(pid).ok())
            .map(Pid::from_raw);
        let io_error = |e: std::io::Error| BrowserError::Start(format!("cannot use the pipe: {e}"));
        let cdp = Cdp::over_pipe(
            pipe::Sender::from_owned_fd(our_commands).map_err(io_error)?,
            pipe::Receiver::from_owned_fd(our_answers).map_err(io_error)?,
        );
        let browser = Self {
            child,
            group,
            log_path,
            _profile: profile,
        };
        Ok((browser, cdp))
    }

    /// Waits for the browser's first answer (it is up), or says why it did not come.
    pub async fn started(&mut self, cdp: &Cdp) -> Result<(), BrowserError> {
        let first = tokio::time::timeout(
            START_TIMEOUT,
            cdp.call("Browser.getVersion", serde_json::json!({}), None),
        )
        .await;
        match first {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(error)) => {
                let exited = match self.child.try_wait() {
                    Ok(Some(status)) => format!("it exited ({status})"),
                    _ => format!("{error}"),
                };
                Err(BrowserError::Start(format!(
                    "the browser did not answer at start: {exited}: {}",
                    log_tail(&self.log_path)
                )))
            }
            Err(_) => Err(BrowserError::Start(format!(
                "the browser did not answer within {}s: {}",
                START_TIMEOUT.as_secs(),
                log_tail(&self.log_path)
            ))),
        }
    }

    /// The browser's main process id (the leader of its process group).
    pub fn pid(&self) -> Option<u32> {
        self.group.and_then(|pid| u32::try_from(pid.as_raw()).ok())
    }

    /// Kills every process of the browser's group.
    pub fn kill(&mut self) {
        if let Some(group) = self.group.take() {
            let _ = killpg(group, Signal::SIGKILL);
        }
        let _ = self.child.start_kill();
    }
}

/// The last lines Chromium wrote to stderr, for a start failure's message.
fn log_tail(path: &Path) -> String {
    let mut text = String::new();
    if let Ok(mut file) = std::fs::File::open(path) {
        let _ = file.read_to_string(&mut text);
    }
    let lines: Vec<&str> = text
        .lines()
        .filter(|line| !line.contains("dbus/bus.cc"))
        .collect();
    let tail = lines[lines.len().saturating_sub(5)..].join(" | ");
    if tail.is_empty() {
        "(it wrote nothing)".to_owned()
    } else {
        tail
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_keep_the_browser_private_and_behind_the_proxy() {
        let flags = flags(Path::new("/p/session-1"), 4100);
        for expected in [
            "--user-data-dir=/p/session-1",
            "--proxy-server=http://127.0.0.1:4100",
            "--proxy-bypass-list=<-loopback>",
            "--disable-background-networking",
            "--no-first-run",
            "--remote-debugging-pipe",
        ] {
            assert!(flags.iter().any(|f| f == expected), "missing {expected}");
        }
        let root = nix::unistd::geteuid().is_root();
        assert_eq!(flags.iter().any(|f| f == "--no-sandbox"), root);
    }

    #[test]
    fn a_configured_program_wins_over_the_path_if_it_can_run() {
        let configured = Path::new("/bin/sh");
        assert_eq!(
            find_executable(Some(configured)),
            Some(configured.to_path_buf())
        );
        assert_eq!(
            find_executable(Some(Path::new("/nonexistent/chrome"))),
            None
        );
        let plain = tempfile::NamedTempFile::new().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(find_executable(Some(plain.path())), None, "not executable");
    }
}
