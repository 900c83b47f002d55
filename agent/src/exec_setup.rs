//! The execution layer of a session: the configured backend (local, bwrap,
//! ssh), the approval policy and the surface's approver, gating every
//! command plugins run.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use talaria_approval::{ApprovalPolicy, Approver, DenyAll};
use talaria_exec::{Backend, BwrapBackend, GatedExecutor, LocalBackend, SshBackend, SshConfig};
use talaria_plugin_host::ExecServices;

use crate::agent::BuildError;
use crate::config::{ApprovalMode, ApprovalsConfig, BackendKind, TerminalConfig};
use crate::home::ProfileHome;

/// The backend `terminal` selects.
fn backend(config: &TerminalConfig) -> Result<Arc<dyn Backend>, BuildError> {
    Ok(match config.backend {
        BackendKind::Local => Arc::new(LocalBackend::new()),
        BackendKind::Bwrap => Arc::new(
            BwrapBackend::new(config.network)
                .map_err(|e| BuildError(format!("terminal.backend bwrap: {e}")))?,
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
    let policy = ApprovalPolicy::load(home.approvals_file())
        .map_err(|e| BuildError(e.to_string()))?
        .with_yolo(mode == ApprovalMode::Yolo)
        .with_timeout(Duration::from_secs(approvals.timeout_secs.max(1)));
    let approver: Arc<dyn Approver> = match mode {
        ApprovalMode::Deny => Arc::new(DenyAll),
        ApprovalMode::Ask | ApprovalMode::Yolo => approver,
    };
    let executor = GatedExecutor::new(backend(terminal)?, Arc::new(policy), approver);
    Ok(ExecServices::new(Arc::new(executor)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SshTargetConfig;

    #[test]
    fn backends_follow_the_config() {
        let local = backend(&TerminalConfig::default()).unwrap();
        assert!(!local.sandboxed());
        let ssh = TerminalConfig {
            backend: BackendKind::Ssh,
            network: true,
            ssh: None,
        };
        let err = backend(&ssh).err().unwrap();
        assert!(err.0.contains("terminal.ssh"), "{err}");
        let ssh = TerminalConfig {
            ssh: Some(SshTargetConfig {
                host: "build-box".into(),
                port: Some(2222),
                ..SshTargetConfig::default()
            }),
            ..ssh
        };
        assert_eq!(backend(&ssh).unwrap().name(), "ssh");
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
}
