//! The execution layer of a session: the configured backend (local, bwrap,
//! ssh), the approval policy and the surface's approver, gating every
//! command plugins run.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use talaria_approval::{ApprovalPolicy, Approver, DenyAll, PathContext, ProtectedPaths};
use talaria_exec::{
    Backend, BwrapBackend, Confinement, GatedExecutor, LocalBackend, SshBackend, SshConfig,
};
use talaria_plugin_host::ExecServices;
use talaria_profile::config::{ApprovalMode, ApprovalsConfig, BackendKind, TerminalConfig};
use talaria_profile::config_view::without_secrets;
use talaria_profile::home::ProfileHome;

use crate::agent::BuildError;
use crate::auxiliary::Auxiliary;
use crate::smart_approval::SmartApprover;

/// The backend `terminal` selects, confining what runs on this machine with
/// `confinement`.
fn backend(
    config: &TerminalConfig,
    confinement: &Confinement,
) -> Result<Arc<dyn Backend>, BuildError> {
    Ok(match config.backend {
        BackendKind::Local => Arc::new(
            LocalBackend::new()
                .with_passthrough(config.env_passthrough.clone())
                .with_confinement(confinement.clone()),
        ),
        BackendKind::Bwrap => Arc::new(
            BwrapBackend::new(config.network)
                .map_err(|e| BuildError(format!("terminal.backend bwrap: {e}")))?
                .with_confinement(confinement.clone())
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
/// `--yolo` flag) overrides `approvals.mode`; under `smart`, `rater` rates
/// commands before `approver` is asked.
pub fn exec_services(
    terminal: &TerminalConfig,
    approvals: &ApprovalsConfig,
    yolo: bool,
    home: &ProfileHome,
    approver: Arc<dyn Approver>,
    rater: Option<Arc<Auxiliary>>,
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
    let confinement = confinement(home, &protected);
    let policy = ApprovalPolicy::load(home.approvals_file())
        .map_err(|e| BuildError(e.to_string()))?
        .with_yolo(mode == ApprovalMode::Yolo)
        .with_timeout(Duration::from_secs(approvals.timeout_secs.max(1)))
        .with_protected(protected, &context);
    let approver: Arc<dyn Approver> = match (mode, rater) {
        (ApprovalMode::Deny, _) => Arc::new(DenyAll),
        (ApprovalMode::Smart, Some(rater)) => Arc::new(SmartApprover::new(
            rater,
            approver,
            Duration::from_secs(approvals.smart_timeout_secs.max(1)),
            home.root().join("logs").join("approvals.log"),
        )),
        (ApprovalMode::Ask | ApprovalMode::Yolo | ApprovalMode::Smart, _) => approver,
    };
    let executor = GatedExecutor::new(backend(terminal, &confinement)?, Arc::new(policy), approver)
        .with_confinement(confinement);
    Ok(ExecServices::new(Arc::new(executor)))
}

/// The confinement of `home`'s processes, for reports (`talaria doctor`); a session builds
/// the same in [`exec_services`].
pub fn profile_confinement(home: &ProfileHome) -> Confinement {
    let user_home = std::env::var_os("HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from);
    confinement(home, &protected_paths(home, user_home.as_deref()))
}

/// What every process the agent starts on this machine (commands, MCP servers, the
/// browser) may not touch, whatever it runs: the profile homes read-only (wherever they are,
/// inside the working directory too) with the control files outside them, the binary and
/// the plugins and skills that ship with it, a trusted project's plugins; the secrets
/// hidden; each `config.yaml` holding literal keys shown without them.
pub fn confinement(home: &ProfileHome, protected: &ProtectedPaths) -> Confinement {
    let mut confinement = Confinement::new();
    let inside_a_home = |path: &Path| protected.homes.iter().any(|h| path.starts_with(h));
    for path in &protected.homes {
        confinement = confinement.read_only(path);
    }
    for path in protected.write.iter().filter(|path| !inside_a_home(path)) {
        confinement = confinement.read_only(path);
    }
    // The code the next session runs: the distribution's plugins and skills, a trusted
    // project's plugins, the binary itself.
    let shipped = crate::plugins::distribution_dirs()
        .into_iter()
        .chain(crate::knowledge::bundled_skill_dirs())
        .chain(std::env::current_dir().map(|cwd| cwd.join(".talaria").join("plugins")))
        .chain(std::env::current_exe());
    for path in shipped {
        confinement = confinement.read_only(path);
    }
    for secret in protected.hidden() {
        confinement = confinement.hidden(secret);
    }
    for config in protected
        .homes
        .iter()
        .flat_map(|h| [h.join("config.yaml"), h.join("config.yaml.bak")])
    {
        if let Some(view) = config_view(home, &config) {
            confinement = confinement.view(config, view);
        }
    }
    confinement
}

/// Writes `config` without its literal keys for commands to see in its place, under the
/// active home; `None` (and no file) when it holds none or cannot be read.
fn config_view(home: &ProfileHome, config: &Path) -> Option<PathBuf> {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    config.hash(&mut hasher);
    let view = home
        .sandbox_views_dir()
        .join(format!("{:016x}.yaml", hasher.finish()));
    let text = std::fs::read_to_string(config).ok();
    match text.as_deref().and_then(without_secrets) {
        Some(shown) => {
            // Written aside and renamed: a command starting meanwhile sees a whole file.
            let partial = view.with_extension(format!("{}.part", std::process::id()));
            talaria_profile::home_modes::create_private_dir(&home.sandbox_views_dir()).ok()?;
            talaria_profile::home_modes::write_private(&partial, shown.as_bytes()).ok()?;
            std::fs::rename(&partial, &view).ok()?;
            Some(view)
        }
        None => {
            let _ = std::fs::remove_file(&view);
            None
        }
    }
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
        let none = Confinement::new();
        let local = backend(&TerminalConfig::default(), &none).unwrap();
        assert!(!local.sandboxed());
        let ssh = TerminalConfig {
            backend: BackendKind::Ssh,
            network: true,
            ssh: None,
            ..TerminalConfig::default()
        };
        let err = backend(&ssh, &none).err().unwrap();
        assert!(err.0.contains("terminal.ssh"), "{err}");
        let ssh = TerminalConfig {
            ssh: Some(SshTargetConfig {
                host: "build-box".into(),
                port: Some(2222),
                ..SshTargetConfig::default()
            }),
            ..ssh
        };
        assert_eq!(backend(&ssh, &none).unwrap().name(), "ssh");
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
            None,
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
            None,
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

    #[test]
    fn the_confinement_keeps_the_homes_read_only_hides_secrets_and_shows_config_without_keys() {
        use talaria_exec::Mount;
        let dir = tempfile::tempdir().unwrap();
        let home = ProfileHome::at(dir.path().join(".talaria"));
        std::fs::create_dir_all(home.root()).unwrap();
        std::fs::write(
            home.config_file(),
            "model:\n  name: m\n  api_key: sk-literal-0123456789\n",
        )
        .unwrap();
        let protected = protected_paths(&home, Some(dir.path()));
        let confined = confinement(&home, &protected);
        let mounts = confined.mounts();
        assert!(mounts.contains(&Mount::ReadOnly(home.root().to_path_buf())));
        assert!(mounts.contains(&Mount::Hidden(home.env_file())));
        assert!(mounts.contains(&Mount::Hidden(home.plugin_cache_key_file())));
        let view = mounts
            .iter()
            .find_map(|mount| match mount {
                Mount::View { path, shown } if *path == home.config_file() => Some(shown),
                _ => None,
            })
            .expect("config.yaml is shown through a view");
        let shown = std::fs::read_to_string(view).unwrap();
        assert!(!shown.contains("sk-literal"), "{shown}");
        assert!(shown.contains("name: m"), "{shown}");
        // Read-only binds come first, so the hidden files and views sit on top of them.
        let first_other = mounts
            .iter()
            .position(|m| !matches!(m, Mount::ReadOnly(_)))
            .unwrap();
        assert!(
            mounts[first_other..]
                .iter()
                .all(|m| !matches!(m, Mount::ReadOnly(_)))
        );

        // Without literal keys there is no view, and no stale file.
        std::fs::write(home.config_file(), "model:\n  api_key: ${KEY}\n").unwrap();
        let again = confinement(&home, &protected);
        assert!(
            !again
                .mounts()
                .iter()
                .any(|m| matches!(m, Mount::View { .. })),
            "{again:?}"
        );
        assert!(!view.exists());
    }
}
