//! `talaria doctor [--json]`: checks and explains, one line each (ok, warn, fail), with what to
//! do; a failure makes the exit code non-zero. Today it covers what keeps the agent's commands
//! from its controls and keys: the sandbox the kernel allows, the backend, root, the sealed
//! keys.

use serde::Serialize;
use talaria_profile::ProfileHome;
use talaria_profile::config::{BackendKind, ConfigFile};

use crate::exit::Status;

/// One check's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
enum Level {
    Ok,
    Warn,
    Fail,
}

/// One line of the report.
#[derive(Debug, Serialize)]
struct Check {
    check: &'static str,
    status: Level,
    message: String,
}

impl Check {
    fn new(check: &'static str, status: Level, message: impl Into<String>) -> Self {
        Self {
            check,
            status,
            message: message.into(),
        }
    }
}

/// Runs the checks for `home` and prints them (as JSON lines with `json`).
pub fn run(home: &ProfileHome, json: bool) -> Status {
    let (config, loaded) = match talaria_profile::load_profile(home) {
        Ok((_, config)) => (
            Some(config),
            Check::new("config", Level::Ok, "config.yaml and .env read"),
        ),
        Err(error) => (None, Check::new("config", Level::Fail, error.to_string())),
    };
    let mut checks = vec![loaded];
    checks.push(sandbox(home));
    checks.extend(backend(config.as_ref()));
    checks.push(root());
    checks.push(keys());
    for check in &checks {
        if json {
            println!("{}", serde_json::to_string(check).unwrap_or_default());
        } else {
            let status = match check.status {
                Level::Ok => "ok  ",
                Level::Warn => "warn",
                Level::Fail => "FAIL",
            };
            println!("{status}  {:<8}  {}", check.check, check.message);
        }
    }
    if checks.iter().any(|c| c.status == Level::Fail) {
        Status::Failed
    } else {
        Status::Answered
    }
}

/// What a confined process of this profile actually gets here.
fn sandbox(home: &ProfileHome) -> Check {
    let confinement = talaria_agent::exec_setup::profile_confinement(home);
    let Some(protection) = talaria_exec::probe(&confinement) else {
        return Check::new(
            "sandbox",
            Level::Fail,
            "cannot start the supervisor to find out what the kernel allows",
        );
    };
    let level = match (protection.files, protection.landlock) {
        (talaria_exec::FileProtection::MountNamespace, true) => Level::Ok,
        (talaria_exec::FileProtection::None, false) => Level::Fail,
        _ => Level::Warn,
    };
    let mut message = protection.summary();
    for note in &protection.notes {
        message.push_str(&format!("; {note}"));
    }
    if level != Level::Ok {
        message.push_str(
            " — fix: a kernel with Landlock (5.19+) and user namespaces (or run as root), \
             or terminal.backend: bwrap",
        );
    }
    Check::new("sandbox", level, message)
}

/// Whether the configured backend can run here and what it confines.
fn backend(config: Option<&ConfigFile>) -> Option<Check> {
    let terminal = &config?.terminal;
    Some(match terminal.backend {
        BackendKind::Local => Check::new(
            "backend",
            Level::Ok,
            "local: commands run on this machine under the sandbox above",
        ),
        BackendKind::Bwrap => match talaria_exec::BwrapBackend::new(terminal.network) {
            Ok(backend) => {
                let runs = std::process::Command::new(&backend.bwrap)
                    .args(["--ro-bind", "/", "/", "--unshare-all", "--", "true"])
                    .output()
                    .is_ok_and(|output| output.status.success());
                if runs {
                    Check::new("backend", Level::Ok, "bwrap: sandboxes start")
                } else {
                    Check::new(
                        "backend",
                        Level::Fail,
                        "bwrap is installed but cannot make a sandbox here (user namespaces off?)",
                    )
                }
            }
            Err(error) => Check::new("backend", Level::Fail, error.to_string()),
        },
        BackendKind::Ssh => {
            let host = terminal.ssh.as_ref().map_or("", |ssh| ssh.host.as_str());
            let loopback = host == "localhost"
                || host
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback());
            if loopback {
                Check::new(
                    "backend",
                    Level::Warn,
                    format!(
                        "ssh to {host}: commands run on this machine outside any sandbox Talaria \
                         can apply — use local or bwrap here"
                    ),
                )
            } else {
                Check::new(
                    "backend",
                    Level::Ok,
                    format!("ssh to {host}: commands run on that machine, confined by it only"),
                )
            }
        }
    })
}

fn root() -> Check {
    if nix::unistd::geteuid().is_root() {
        Check::new(
            "user",
            Level::Warn,
            "running as root: commands have root's rights on this machine beyond the sandbox — \
             run Talaria as an ordinary user where you can",
        )
    } else {
        Check::new("user", Level::Ok, "not root")
    }
}

fn keys() -> Check {
    match talaria_environ::sealed_count() {
        0 => Check::new("keys", Level::Ok, "no keys in the environment"),
        count => Check::new(
            "keys",
            Level::Ok,
            format!("{count} key(s) sealed out of the environment block"),
        ),
    }
}
