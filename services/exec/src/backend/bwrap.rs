//! The bubblewrap backend: a read-only view of this machine with only the
//! working directory writable.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Command;

use super::{Backend, check_env, check_local_cwd, check_program, find_program, scrub_env};
use crate::{ExecError, ExecRequest};

/// Runs commands inside bubblewrap: the whole file system read-only, a
/// private `/dev`, `/proc` and `/tmp`, the working directory bound
/// read-write, every namespace unshared (the network too unless `network`),
/// all capabilities dropped, and the sandbox killed with its parent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BwrapBackend {
    /// Keep the host's network (otherwise only a private loopback exists).
    pub network: bool,
    /// The `bwrap` executable.
    pub bwrap: PathBuf,
    /// Host paths the sandbox must not read (e.g. the plugin cache's MAC
    /// key): an existing file shows as an empty one, an existing directory
    /// as an empty read-only one; missing paths are skipped.
    pub hidden: Vec<PathBuf>,
    /// Host variables passed in besides [`PASSED_ENV`](crate::PASSED_ENV)
    /// (`terminal.env_passthrough`).
    pub passthrough: Vec<String>,
}

impl BwrapBackend {
    /// Uses the `bwrap` found on `PATH`; an error says how to install it.
    pub fn new(network: bool) -> Result<Self, ExecError> {
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
        let bwrap = find_program("bwrap", &cwd, std::env::var_os("PATH").as_deref()).ok_or_else(|| {
            ExecError::Failed(
                "bubblewrap (`bwrap`) is not on PATH; install it (Debian package `bubblewrap`) to run sandboxed commands"
                    .to_owned(),
            )
        })?;
        Ok(Self {
            network,
            bwrap,
            hidden: Vec::new(),
            passthrough: Vec::new(),
        })
    }

    /// Also passes the host's values of `names` to commands.
    pub fn with_passthrough(mut self, names: impl IntoIterator<Item = String>) -> Self {
        self.passthrough.extend(names);
        self
    }

    /// Also hides `paths` from the sandbox (see [`hidden`](Self::hidden)).
    pub fn with_hidden(mut self, paths: impl IntoIterator<Item = PathBuf>) -> Self {
        self.hidden.extend(paths);
        self
    }

    /// The mounts covering [`hidden`](Self::hidden) paths as they are now,
    /// at their real location (a symlink to a secret hides the secret).
    /// They come after the working directory's bind, so they apply inside it
    /// too.
    fn hide_args(&self) -> Vec<OsString> {
        let mut args = Vec::new();
        for path in &self.hidden {
            let Ok(real) = path.canonicalize() else {
                continue;
            };
            if real.parent().is_none() {
                // Hiding / would hide everything; not what anyone meant.
                continue;
            }
            if real.is_dir() {
                args.extend(["--tmpfs".into(), real.clone().into()]);
                args.extend(["--remount-ro".into(), real.into()]);
            } else {
                args.extend(["--ro-bind".into(), "/dev/null".into(), real.into()]);
            }
        }
        args
    }
}

impl Backend for BwrapBackend {
    fn name(&self) -> &str {
        "bwrap"
    }

    fn sandboxed(&self) -> bool {
        true
    }

    fn command(&self, request: &ExecRequest) -> Result<Command, ExecError> {
        check_env(request)?;
        check_local_cwd(request)?;
        check_program(request)?;
        // Bind the real directory: a symlinked path could otherwise point the
        // bind somewhere else than the user sees.
        let cwd = request.cwd.canonicalize().map_err(|e| {
            ExecError::Failed(format!(
                "cannot resolve the working directory {}: {e}",
                request.cwd.display()
            ))
        })?;
        if cwd.parent().is_none() {
            return Err(ExecError::Failed(
                "refusing to sandbox with / as the working directory: it would make everything writable"
                    .to_owned(),
            ));
        }
        let mut command = Command::new(&self.bwrap);
        command
            .args(["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"])
            .args(["--tmpfs", "/tmp", "--bind"])
            .arg(&cwd)
            .arg(&cwd)
            .args(self.hide_args())
            .arg("--chdir")
            .arg(&cwd)
            .arg("--unshare-all");
        if self.network {
            command.arg("--share-net");
        }
        // Run as root, bwrap would keep CAP_SYS_ADMIN, enough to remount / read-write.
        command.args([
            "--cap-drop",
            "ALL",
            "--die-with-parent",
            "--new-session",
            "--",
        ]);
        command.arg(&request.program).args(&request.args);
        let passed: Vec<&str> = self.passthrough.iter().map(String::as_str).collect();
        scrub_env(&mut command, &passed, &request.env);
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
    fn hidden_files_become_dev_null_and_dirs_empty_read_only_tmpfs() {
        let host = tempfile::tempdir().unwrap();
        let host = host.path().canonicalize().unwrap();
        let work = host.join("work");
        let key = host.join("cache.key");
        let dir = work.join("plugins");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(&key, "secret").unwrap();
        let link = host.join("link-to-key");
        std::os::unix::fs::symlink(&key, &link).unwrap();
        let backend = BwrapBackend {
            network: false,
            bwrap: "/usr/bin/bwrap".into(),
            hidden: vec![key.clone(), dir.clone(), host.join("missing"), link],
            passthrough: Vec::new(),
        };
        let request = ExecRequest::new("sh", vec![], &work);
        let args = args(&backend.command(&request).unwrap());
        let (key, dir, work) = (key.display(), dir.display(), work.display());
        let joined = args.join(" ");
        let expected = format!(
            "--bind {work} {work} --ro-bind /dev/null {key} --tmpfs {dir} --remount-ro {dir} \
             --ro-bind /dev/null {key} --chdir {work}"
        );
        assert!(joined.contains(&expected), "{joined}");
        assert!(!joined.contains("missing"), "{joined}");
    }

    #[test]
    fn nothing_hidden_adds_nothing() {
        let work = tempfile::tempdir().unwrap();
        let backend = BwrapBackend {
            network: false,
            bwrap: "/usr/bin/bwrap".into(),
            hidden: Vec::new(),
            passthrough: Vec::new(),
        };
        let request = ExecRequest::new("sh", vec![], work.path());
        let args = args(&backend.command(&request).unwrap());
        assert!(!args.iter().any(|a| a == "/dev/null" || a == "--remount-ro"));
    }

    /// The mounts really hide the contents (when bubblewrap can run here).
    #[tokio::test]
    async fn a_sandboxed_command_reads_nothing_from_hidden_paths() {
        let Ok(backend) = BwrapBackend::new(false) else {
            eprintln!("skipped: bwrap is not installed");
            return;
        };
        let host = tempfile::tempdir().unwrap();
        let work = host.path().join("work");
        let dir = work.join("secrets");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("inner"), "inner-secret").unwrap();
        let key = work.join("cache.key");
        std::fs::write(&key, "key-secret").unwrap();
        let backend = backend.with_hidden([key, dir]);
        let script = "cat cache.key; ls -A secrets; cat secrets/inner; touch secrets/new; echo end";
        let request = ExecRequest::new("sh", vec!["-c".into(), script.into()], &work);
        let output = crate::run(&backend, &request, &Default::default())
            .await
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert_eq!(
            stdout,
            "end\n",
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(!work.join("secrets/new").exists());
    }
}
