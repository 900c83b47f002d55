//! The ssh backend: commands on a remote host through the `ssh` client.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{Backend, CwdKind, check_env, scrub_env};
use crate::supervisor::local_command;
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

/// The remote shell's watcher, started before it `exec`s the command (which
/// keeps the shell's pid). sshd starts the shell as a session and process
/// group leader, so `-$$` is the command's group; the watcher polls the
/// shell's parent (the connection's sshd process) and kills the group,
/// itself included, once it is gone: after the connection closed, leftovers
/// of a finished command go too, as the local backend kills a finished
/// command's group. A parent owned by another user (a server whose session
/// process keeps root) fails `kill -0` while alive, so the watcher then asks
/// `ps` whether the command still has that parent. Its own streams are
/// /dev/null so it never holds the channel open. A POSIX shell's `$$` and
/// `$PPID` are the main shell's in a subshell.
const CONNECTION_WATCH: &str = "{ (while kill -0 \"$PPID\" 2>/dev/null || \
     [ \"$(ps -o ppid= -p \"$$\" 2>/dev/null | tr -d ' ')\" = \"$PPID\" ]; do sleep 1; done; \
     kill -KILL -- \"-$$\" 2>/dev/null || kill -KILL \"$$\") </dev/null >/dev/null 2>&1 & }";

/// Runs commands on a remote host with `ssh` in batch mode (never prompts;
/// new host keys are accepted once, changed ones refused). The remote login
/// shell must be POSIX. Not a sandbox: the remote side is a real machine.
///
/// Commands end with the connection: the local `ssh` client runs under the
/// supervisor like a local command (so it dies with the agent), and the
/// remote shell starts a watcher ([`CONNECTION_WATCH`]) that kills the
/// command's process group once the connection's sshd process is gone
/// (killed client, timeout, cancel, dead agent). Without a terminal sshd
/// itself leaves the command running.
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
        let mut line = format!("cd {} && {CONNECTION_WATCH} && exec", shell_quote(&cwd));
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
        // LogLevel=ERROR keeps "Permanently added … to known hosts" out of the command's stderr.
        let mut args: Vec<String> = [
            "-T",
            "-o",
            "BatchMode=yes",
            "-o",
            "StrictHostKeyChecking=accept-new",
            "-o",
            "LogLevel=ERROR",
        ]
        .map(str::to_owned)
        .into();
        if let Some(known_hosts) = &config.known_hosts {
            args.push("-o".to_owned());
            args.push(format!("UserKnownHostsFile={}", path_text(known_hosts)?));
        }
        for option in &config.extra_options {
            args.push("-o".to_owned());
            args.push(option.clone());
        }
        args.push("-p".to_owned());
        args.push(config.port.to_string());
        if let Some(identity) = &config.identity_file {
            args.push("-i".to_owned());
            args.push(path_text(identity)?.to_owned());
            args.push("-o".to_owned());
            args.push("IdentitiesOnly=yes".to_owned());
        }
        let destination = if config.user.is_empty() {
            config.host.clone()
        } else {
            format!("{}@{}", config.user, config.host)
        };
        args.extend([destination, "--".to_owned(), remote]);
        let mut command = local_command("ssh", &args);
        // The request's variables go to the remote command (above), not to the
        // local client; the client only needs its agent socket.
        scrub_env(&mut command, &["SSH_AUTH_SOCK"], &[]);
        Ok(command)
    }
}

/// `path` as text for an ssh argument.
fn path_text(path: &Path) -> Result<&str, ExecError> {
    path.to_str().ok_or_else(|| {
        ExecError::Failed(format!("ssh path is not valid UTF-8: {}", path.display()))
    })
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
            format!(
                "cd '/srv/my dir' && {CONNECTION_WATCH} && exec env 'X=a b' sh -c 'echo '\\''hi'\\'' $X'"
            )
        );
    }

    #[test]
    fn remote_cwd_overrides_the_request_cwd() {
        let mut config = SshConfig::new("h", "u");
        config.remote_cwd = Some("/remote".into());
        let command = SshBackend::new(config)
            .command(&ExecRequest::new("ls", vec![], "/local"))
            .unwrap();
        assert_eq!(
            args(&command).last().unwrap(),
            &format!("cd /remote && {CONNECTION_WATCH} && exec ls")
        );
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
