//! The ssh backend: commands on a remote host through the `ssh` client.

use std::path::PathBuf;
use std::process::Command;

use super::{Backend, CwdKind, check_env, scrub_env};
use crate::{ExecError, ExecRequest, shell_quote};

/// Where and how to connect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SshConfig {
    /// Host name or address.
    pub host: String,
    /// Port (22 by default).
    pub port: u16,
    /// Remote user.
    pub user: String,
    /// Private key (`-i`); `None`: the agent and ssh's defaults.
    pub identity_file: Option<PathBuf>,
    /// Known-hosts file to check and record the host key in; `None`: ssh's.
    pub known_hosts: Option<PathBuf>,
    /// The remote working directory; `None`: the request's `cwd`.
    pub remote_cwd: Option<String>,
    /// More `-o` options, each as `Name=value` (e.g. `ConnectTimeout=10`).
    pub extra_options: Vec<String>,
}

impl SshConfig {
    /// `user@host` on port 22 with ssh's default keys and known hosts.
    pub fn new(host: impl Into<String>, user: impl Into<String>) -> Self {
        Self {
            host: host.into(),
            port: 22,
            user: user.into(),
            identity_file: None,
            known_hosts: None,
            remote_cwd: None,
            extra_options: Vec::new(),
        }
    }
}

/// Runs commands on a remote host with `ssh` in batch mode (never prompts;
/// new host keys are accepted once, changed ones refused). The remote login
/// shell must be POSIX. Not a sandbox: the remote side is a real machine.
///
/// Killing the local `ssh` client (timeout, cancel) closes the connection;
/// a remote command that ignores the hang-up may outlive it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SshBackend {
    /// Connection settings.
    pub config: SshConfig,
}

impl SshBackend {
    /// A backend for `config`.
    pub fn new(config: SshConfig) -> Self {
        Self { config }
    }

    /// The command line the remote shell runs.
    fn remote_command(&self, request: &ExecRequest) -> Result<String, ExecError> {
        let cwd = match &self.config.remote_cwd {
            Some(cwd) => cwd.clone(),
            None => request
                .cwd
                .to_str()
                .ok_or_else(|| {
                    ExecError::Failed(format!(
                        "the working directory is not valid UTF-8: {}",
                        request.cwd.display()
                    ))
                })?
                .to_owned(),
        };
        // `env` would read a program name containing `=` as one more variable.
        if request.program.is_empty() || (!request.env.is_empty() && request.program.contains('='))
        {
            return Err(ExecError::Failed(format!(
                "cannot run program {:?} over ssh",
                request.program
            )));
        }
        let mut line = format!("cd {} && exec", shell_quote(&cwd));
        if !request.env.is_empty() {
            line.push_str(" env");
            for (name, value) in &request.env {
                line.push(' ');
                line.push_str(&shell_quote(&format!("{name}={value}")));
            }
        }
        for word in std::iter::once(&request.program).chain(&request.args) {
            line.push(' ');
            line.push_str(&shell_quote(word));
        }
        Ok(line)
    }
}

impl Backend for SshBackend {
    fn name(&self) -> &str {
        "ssh"
    }

    fn sandboxed(&self) -> bool {
        false
    }

    fn cwd_kind(&self) -> CwdKind {
        if self.config.remote_cwd.is_some() {
            CwdKind::Fixed
        } else {
            CwdKind::Remote
        }
    }

    fn command(&self, request: &ExecRequest) -> Result<Command, ExecError> {
        check_env(request)?;
        let config = &self.config;
        // A host or user starting with `-` would be read as an ssh option.
        if config.host.is_empty() || config.host.starts_with('-') || config.user.starts_with('-') {
            return Err(ExecError::Failed(format!(
                "invalid ssh destination: {:?}@{:?}",
                config.user, config.host
            )));
        }
        let remote = self.remote_command(request)?;
        let mut command = Command::new("ssh");
        // LogLevel=ERROR keeps "Permanently added … to known hosts" out of the command's stderr.
        command.args([
            "-T",
            "-o",
            "BatchMode=yes",
            "-o",
            "StrictHostKeyChecking=accept-new",
        ]);
        command.args(["-o", "LogLevel=ERROR"]);
        if let Some(known_hosts) = &config.known_hosts {
            command
                .arg("-o")
                .arg(format!("UserKnownHostsFile={}", known_hosts.display()));
        }
        for option in &config.extra_options {
            command.arg("-o").arg(option);
        }
        command.arg("-p").arg(config.port.to_string());
        if let Some(identity) = &config.identity_file {
            command
                .arg("-i")
                .arg(identity)
                .args(["-o", "IdentitiesOnly=yes"]);
        }
        let destination = if config.user.is_empty() {
            config.host.clone()
        } else {
            format!("{}@{}", config.user, config.host)
        };
        command.arg(destination).arg("--").arg(remote);
        // The request's variables go to the remote command (above), not to the
        // local client; the client only needs its agent socket.
        scrub_env(&mut command, &["SSH_AUTH_SOCK"], &[]);
        Ok(command)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(command: &Command) -> Vec<String> {
        command
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn builds_batch_mode_command_with_quoted_remote_line() {
        let mut config = SshConfig::new("example.invalid", "alice");
        config.port = 2222;
        config.identity_file = Some("/k/id".into());
        config.known_hosts = Some("/k/known".into());
        config.extra_options = vec!["ConnectTimeout=5".into()];
        let backend = SshBackend::new(config);
        let mut request = ExecRequest::new(
            "sh",
            vec!["-c".into(), "echo 'hi' $X".into()],
            "/srv/my dir",
        );
        request.env = vec![("X".into(), "a b".into())];
        let command = backend.command(&request).unwrap();
        assert_eq!(command.get_program(), "ssh");
        let args = args(&command);
        let joined = args.join(" ");
        assert!(
            joined.contains("-o BatchMode=yes -o StrictHostKeyChecking=accept-new"),
            "{joined}"
        );
        assert!(
            joined.contains("-o UserKnownHostsFile=/k/known -o ConnectTimeout=5 -p 2222 -i /k/id"),
            "{joined}"
        );
        let n = args.len();
        assert_eq!(args[n - 3], "alice@example.invalid");
        assert_eq!(args[n - 2], "--");
        assert_eq!(
            args[n - 1],
            "cd '/srv/my dir' && exec env 'X=a b' sh -c 'echo '\\''hi'\\'' $X'"
        );
    }

    #[test]
    fn remote_cwd_overrides_the_request_cwd() {
        let mut config = SshConfig::new("h", "u");
        config.remote_cwd = Some("/remote".into());
        let command = SshBackend::new(config)
            .command(&ExecRequest::new("ls", vec![], "/local"))
            .unwrap();
        assert_eq!(args(&command).last().unwrap(), "cd /remote && exec ls");
    }

    #[test]
    fn option_like_host_is_rejected() {
        let backend = SshBackend::new(SshConfig::new("-oProxyCommand=x", "u"));
        let err = backend
            .command(&ExecRequest::new("ls", vec![], "/"))
            .unwrap_err();
        assert!(matches!(err, ExecError::Failed(m) if m.contains("invalid ssh destination")));
    }
}
