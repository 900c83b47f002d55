//! The execution layer of a session: the configured backend (local, bwrap,
//! ssh), the approval policy and the surface's approver, gating every
//! command plugins run.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use talaria_approval::{ApprovalPolicy, Approver, DenyAll, PathContext, ProtectedPaths};
use talaria_exec::{Backend, BwrapBackend, GatedExecutor, LocalBackend, SshBackend, SshConfig};
use talaria_plugin_host::ExecServices;
use talaria_profile::config::{ApprovalMode, ApprovalsConfig, BackendKind, TerminalConfig};
use talaria_profile::home::ProfileHome;

use crate::agent::BuildError;

/// The backend `terminal` selects. A sandbox hides `hidden` (the profile's
/// read-protected secrets).
fn backend(config: &TerminalConfig, hidden: &[PathBuf]) -> Result<Arc<dyn Backend>, BuildError> {
    Ok(match config.backend {
        BackendKind::Local => {
            Arc::new(LocalBackend::new().with_passthrough(config.env_passthrough.clone()))
        }
        BackendKind::Bwrap => Arc::new(
            BwrapBackend::new(config.network)
                .map_err(|e| BuildError(format!("terminal.backend bwrap: {e}")))?
                .with_hidden(hidden.iter().cloned())
                .with_passthrough(config.env_passthrough.clone()),
        ),
        BackendKind::Ssh => {
            let Some(target) = &config.ssh else {
                return Err(BuildError(
                    "terminal.backend is ssh but terminal.ssh (host, user…) is not set".into(),
                ));
            };
            if target.host.trim().is_empty() {
                return Err(BuildError("terminal.ssh.host is empty".into()));
            }
            let user = target
                .user
                .clone()
                .or_else(|| std::env::var("USER").ok())
                .unwrap_or_else(|| "root".into());
            let mut ssh = SshConfig::new(target.host.clone(), user);
            if let Some(port) = target.port {
                ssh.port = port;
            }
            ssh.identity_file = target.identity_file.as_ref().map(PathBuf::from);
            ssh.remote_cwd = target.cwd.clone();
            Arc::new(SshBackend::new(ssh))
        }
    })
}

/// Everything plugin commands go through for one session. `yolo` (the
/// `--yolo` flag) overrides `approvals.mode`.
pub fn exec_services(
    terminal: &TerminalConfig,
    approvals: &ApprovalsConfig,
    yolo: bool,
    home: &ProfileHome,
    approver: Arc<dyn Approver>,
) -> Result<ExecServices, BuildError> {
    let mode = if yolo {
        ApprovalMode::Yolo
    } else {
        approvals.mode
    };
    let user_home = std::env::var_os("HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from);
    let protected = protected_paths(home, user_home.as_deref());
    let context = PathContext {
        cwd: std::env::current_dir().ok(),
        home_dir: user_home,
        talaria_home: Some(home.root().to_path_buf()),
    };
    let hidden = protected.hidden().to_vec();
    let policy = ApprovalPolicy::load(home.approvals_file())
        .map_err(|e| BuildError(e.to_string()))?
        .with_yolo(mode == ApprovalMode::Yolo)
        .with_timeout(Duration::from_secs(approvals.timeout_secs.max(1)))
        .with_protected(protected, &context);
    let approver: Arc<dyn Approver> = match mode {
        ApprovalMode::Deny => Arc::new(DenyAll),
        ApprovalMode::Ask | ApprovalMode::Yolo => approver,
    };
    let executor = GatedExecutor::new(backend(terminal, &hidden)?, Arc::new(policy), approver);
    Ok(ExecServices::new(Arc::new(executor)))
}

/// What commands may change only with the user's approval: the active
/// profile's control files (and, for a named profile, the root's and the
/// other profiles'), under the path as given and as resolved (a symlinked
/// home is spelled both ways), plus the default home `~/.talaria` when
/// `TALARIA_HOME` points elsewhere.
fn protected_paths(home: &ProfileHome, user_home: Option<&std::path::Path>) -> ProtectedPaths {
    let mut paths = home.protected_paths();
    let mut others = Vec::new();
    if let Ok(real) = home.root().canonicalize()
        && real != home.root()
    {
        others.push(ProfileHome::at(real));
    }
    if let Some(default) = user_home.map(|h| h.join(".talaria"))
        && default != home.root()
    {
        others.push(ProfileHome::at(default));
    }
    for other in others {
        paths.extend(other.protected_paths());
    }
    paths
}

#[cfg(test)]
mod tests {
    use super::*;
    use talaria_profile::config::SshTargetConfig;

    #[test]
    fn backends_follow_the_config() {
        let local = backend(&TerminalConfig::default(), &[]).unwrap();
        assert!(!local.sandboxed());
        let ssh = TerminalConfig {
            backend: BackendKind::Ssh,
            network: true,
            ssh: None,
            ..TerminalConfig::default()
        };
        let err = backend(&ssh, &[]).err().unwrap();
        assert!(err.0.contains("terminal.ssh"), "{err}");
        let ssh = TerminalConfig {
            ssh: Some(SshTargetConfig {
                host: "build-box".into(),
                port: Some(2222),
                ..SshTargetConfig::default()
            }),
            ..ssh
        };
        assert_eq!(backend(&ssh, &[]).unwrap().name(), "ssh");
    }

    #[test]
    fn a_corrupt_approvals_file_stops_the_build_and_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let home = ProfileHome::at(dir.path());
        std::fs::write(home.approvals_file(), "not = [valid").unwrap();
        let err = exec_services(
            &TerminalConfig::default(),
            &ApprovalsConfig::default(),
            false,
            &home,
            Arc::new(DenyAll),
        )
        .err()
        .unwrap();
        assert!(err.0.contains("approvals.toml"), "{err}");
        assert_eq!(
            std::fs::read_to_string(home.approvals_file()).unwrap(),
            "not = [valid"
        );
    }

    fn services(home: &ProfileHome, approvals: &ApprovalsConfig, yolo: bool) -> ExecServices {
        exec_services(
            &TerminalConfig::default(),
            approvals,
            yolo,
            home,
            Arc::new(DenyAll),
        )
        .unwrap()
    }

    #[tokio::test]
    async fn the_profile_controls_need_the_user_even_under_yolo() {
        let dir = tempfile::tempdir().unwrap();
        let home = ProfileHome::at(dir.path().join("home"));
        std::fs::create_dir_all(home.root()).unwrap();
        let exec = services(&home, &ApprovalsConfig::default(), true);
        let policy = exec.executor.policy();
        let config = home.config_file().display().to_string();
        for command in [
            format!("sed -i s/ask/yolo/ {config}"),
            format!("echo x >> {}", home.approvals_file().display()),
            "talaria config set approvals.mode yolo".to_owned(),
        ] {
            let denied = policy
                .check("s", "terminal", &command, false, &DenyAll)
                .await
                .unwrap_err();
            assert!(
                denied.message.contains("nobody can answer"),
                "{command}: {}",
                denied.message
            );
        }
        // Ordinary dangerous work still runs under yolo.
        let allowed = policy
            .check("s", "terminal", "rm -rf build", false, &DenyAll)
            .await;
        assert_eq!(allowed, Ok(talaria_approval::Approval::Yolo));
        assert!(
            policy
                .protected()
                .hidden()
                .contains(&home.plugin_cache_key_file()),
            "the secret sandboxes hide"
        );
        // The provider keys are a secret too: reading them needs the user.
        assert!(policy.protected().hidden().contains(&home.env_file()));
        let denied = policy
            .check(
                "s",
                "terminal",
                &format!("cat {}", home.env_file().display()),
                false,
                &DenyAll,
            )
            .await
            .unwrap_err();
        assert!(denied.message.contains("secret"), "{}", denied.message);
    }

    #[test]
    fn the_default_home_is_protected_when_talaria_home_points_elsewhere() {
        let dir = tempfile::tempdir().unwrap();
        let home = ProfileHome::at(dir.path().join("elsewhere"));
        let user_home = dir.path().join("user");
        let paths = protected_paths(&home, Some(&user_home));
        assert!(paths.write_protected(&home.config_file()).is_some());
        let default_config = user_home.join(".talaria").join("config.yaml");
        assert!(paths.write_protected(&default_config).is_some());
    }
}
