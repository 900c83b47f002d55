//! `talaria gateway status|stop|install|uninstall`: the gateway process of a
//! profile, seen from outside. One runs per profile (its lock file says
//! which pid); the systemd user unit is written or removed, never enabled.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use talaria_gateway::{ServiceUnit, running, user_unit_dir};
use talaria_profile::ProfileHome;

use crate::args::GatewayCommand;
use crate::exit::{Status, usage_error};

/// How long `stop` waits for the gateway to let go of its lock.
const STOP_WAIT: Duration = Duration::from_secs(15);

/// The profile a command acts on: its home, its name (`None` for the
/// default profile) and the Talaria root.
pub struct GatewayProfile<'a> {
    /// The profile's home.
    pub home: &'a ProfileHome,
    /// Its name, `None` for the default profile.
    pub name: Option<&'a str>,
    /// The Talaria root (`TALARIA_HOME`).
    pub root: &'a Path,
}

/// The directory of the profile's gateway state (its lock).
pub fn gateway_dir(home: &ProfileHome) -> PathBuf {
    home.root().join("gateway")
}

/// Runs a `gateway` subcommand.
pub async fn run(command: GatewayCommand, profile: &GatewayProfile<'_>) -> Status {
    let dir = gateway_dir(profile.home);
    match command {
        GatewayCommand::Run { model } => serve(profile, &model).await,
        GatewayCommand::Status => match running(&dir) {
            Ok(Some(pid)) => {
                println!("the gateway is running (pid {pid})");
                Status::Answered
            }
            Ok(None) => {
                println!("no gateway is running for this profile");
                Status::Failed
            }
            Err(error) => usage_error(&error.to_string()),
        },
        GatewayCommand::Stop => stop(&dir),
        GatewayCommand::Install => service(profile, true),
        GatewayCommand::Uninstall => service(profile, false),
    }
}

/// `talaria gateway run`: until SIGINT or SIGTERM.
async fn serve(profile: &GatewayProfile<'_>, model: &crate::args::ModelArgs) -> Status {
    let cwd = match std::env::current_dir() {
        Ok(cwd) => cwd,
        Err(error) => return usage_error(&format!("cannot read the working directory: {error}")),
    };
    let options = talaria_gateway::serve::GatewayOptions {
        home: profile.home.clone(),
        profile: profile
            .name
            .unwrap_or(talaria_profile::DEFAULT_PROFILE)
            .to_owned(),
        overrides: crate::run::overrides(model),
        cwd,
    };
    let shutdown = tokio_util::sync::CancellationToken::new();
    crate::shutdown::stop_on_signals(shutdown.clone(), "gateway");
    match talaria_gateway::serve::run(options, shutdown).await {
        Ok(()) => Status::Answered,
        Err(talaria_gateway::serve::StartError::Locked(error)) => {
            eprintln!("error: {error}");
            Status::Failed
        }
        Err(error) => usage_error(&error.to_string()),
    }
}

fn stop(dir: &Path) -> Status {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    let pid = match running(dir) {
        Ok(Some(pid)) => pid,
        Ok(None) => {
            println!("no gateway is running for this profile");
            return Status::Answered;
        }
        Err(error) => return usage_error(&error.to_string()),
    };
    let Ok(raw) = i32::try_from(pid) else {
        return usage_error(&format!("the gateway's lock names no valid pid ({pid})"));
    };
    if raw <= 0 {
        return usage_error("the gateway's lock file holds no pid; stop it by hand");
    }
    if let Err(error) = kill(Pid::from_raw(raw), Signal::SIGTERM) {
        eprintln!("error: cannot stop the gateway (pid {pid}): {error}");
        return Status::Failed;
    }
    let started = Instant::now();
    while started.elapsed() < STOP_WAIT {
        if matches!(running(dir), Ok(None)) {
            println!("stopped the gateway (pid {pid})");
            return Status::Answered;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    eprintln!(
        "error: the gateway (pid {pid}) is still running {} s after SIGTERM",
        STOP_WAIT.as_secs()
    );
    Status::Failed
}

fn service(profile: &GatewayProfile<'_>, install: bool) -> Status {
    let unit_dir = match user_unit_dir(
        std::env::var_os("XDG_CONFIG_HOME")
            .as_deref()
            .map(Path::new),
        std::env::var_os("HOME").as_deref().map(Path::new),
    ) {
        Ok(dir) => dir,
        Err(error) => return usage_error(&error.to_string()),
    };
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(error) => return usage_error(&format!("cannot find the talaria binary: {error}")),
    };
    let unit = ServiceUnit::new(&exe, profile.root, profile.name, &unit_dir);
    if install {
        match unit.install() {
            Ok(()) => {
                println!("wrote {}", unit.path.display());
                println!("to enable and start it:\n{}", unit.enable_hint());
                Status::Answered
            }
            Err(error) => usage_error(&error.to_string()),
        }
    } else {
        match unit.uninstall() {
            Ok(true) => {
                println!("removed {}", unit.path.display());
                println!("if it was enabled: {}", unit.disable_hint());
                Status::Answered
            }
            Ok(false) => {
                println!("no unit at {}", unit.path.display());
                Status::Answered
            }
            Err(error) => usage_error(&error.to_string()),
        }
    }
}
