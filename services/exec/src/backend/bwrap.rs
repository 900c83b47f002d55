//! The bubblewrap backend: a read-only view of this machine with only the
//! working directory writable.

use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};
use std::process::Command;

use super::{Backend, check_env, check_local_cwd, check_program, find_program, scrub_env};
use crate::confine::{Confinement, Mount};
use crate::{ExecError, ExecRequest};

/// Runs commands inside bubblewrap: the whole file system read-only, a
/// private `/dev`, `/proc` and `/tmp`, the working directory bound
/// read-write, then the [`Confinement`]'s mounts (the profile homes
/// read-only wherever they are, inside the working directory too; secrets
/// hidden), every namespace unshared (the network too unless `network`), all
/// capabilities dropped, and the sandbox killed with its parent. What a
/// command needs from the host's `/tmp` (its program, `PATH` entries, the
/// working directory) is bound into the private one at the same path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BwrapBackend {
    /// Keep the host's network (otherwise only a private loopback exists).
    pub network: bool,
    /// The `bwrap` executable.
    pub bwrap: PathBuf,
    /// What commands may not touch (applied after the working directory's
    /// bind, so it holds inside it too).
    pub confinement: Confinement,
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
            confinement: Confinement::new(),
            passthrough: Vec::new(),
        })
    }

    /// Also passes the host's values of `names` to commands.
    pub fn with_passthrough(mut self, names: impl IntoIterator<Item = String>) -> Self {
        self.passthrough.extend(names);
        self
    }

    /// Confines commands with `confinement` (see [`confinement`](Self::confinement)).
    pub fn with_confinement(mut self, confinement: Confinement) -> Self {
        self.confinement = confinement;
        self
    }

    /// The mounts of `confinement` as bubblewrap arguments, at the paths'
    /// real locations (a symlink to a secret hides the secret); missing
    /// paths are skipped.
    fn confinement_args(confinement: &Confinement) -> Vec<OsString> {
        let mut args: Vec<OsString> = Vec::new();
        for mount in confinement.mounts() {
            let (path, shown) = match mount {
                Mount::ReadOnly(path) | Mount::Hidden(path) | Mount::Writable(path) => (path, None),
                Mount::View { path, shown } => (path, Some(shown)),
            };
            let Ok(real) = path.canonicalize() else {
                continue;
            };
            if real.parent().is_none() {
                // Hiding / would hide everything; not what anyone meant.
                continue;
            }
            match mount {
                Mount::ReadOnly(_) => args.extend(["--ro-bind".into(), real.clone().into()]),
                Mount::Writable(_) => args.extend(["--bind".into(), real.clone().into()]),
                Mount::View { .. } => {
                    args.extend([
                        "--ro-bind".into(),
                        shown.cloned().unwrap_or_default().into(),
                    ]);
                }
                Mount::Hidden(_) if real.is_dir() => {
                    args.extend(["--tmpfs".into(), real.clone().into(), "--remount-ro".into()]);
                }
                Mount::Hidden(_) => args.extend(["--ro-bind".into(), "/dev/null".into()]),
            }
            args.push(real.into());
        }
        args
    }

    /// Read-only binds of what the command needs from the host's `/tmp`,
    /// which the sandbox replaces: the top directory under `/tmp` holding
    /// its program, each `PATH` entry and the working directory (a checkout
    /// or a virtual environment there keeps its libraries beside its
    /// binaries).
    fn tmp_args(request: &ExecRequest, cwd: &Path) -> Vec<OsString> {
        let path = request
            .env
            .iter()
            .rev()
            .find(|(k, _)| k == "PATH")
            .map(|(_, v)| OsString::from(v))
            .or_else(|| std::env::var_os("PATH"))
            .unwrap_or_default();
        let program = find_program(&request.program, cwd, Some(&path));
        // As spelled and as resolved: a virtual environment's `bin/python` is a link out of
        // it, yet Python reads the environment around the link.
        let mut tops: Vec<PathBuf> = std::env::split_paths(&path)
            .chain(program)
            .chain([cwd.to_path_buf()])
            .flat_map(|dir| {
                [
                    Some(crate::workspace::lexical(&dir)),
                    dir.canonicalize().ok(),
                ]
            })
            .flatten()
            .filter_map(|dir| tmp_top(&dir))
            .filter(|top| top.exists())
            .collect();
        tops.sort();
        tops.dedup();
        tops.into_iter()
            .flat_map(|top| ["--ro-bind".into(), top.clone().into(), top.into()])
            .collect()
    }
}

/// `/tmp/<first component>` of a path under `/tmp`.
fn tmp_top(path: &Path) -> Option<PathBuf> {
    let rest = path.strip_prefix("/tmp").ok()?;
    match rest.components().next()? {
        Component::Normal(first) => Some(Path::new("/tmp").join(first)),
        _ => None,
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
        let confinement = self.confinement.for_controls(request.controls);
        let mut command = Command::new(&self.bwrap);
        command
            .args(["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"])
            .args(["--tmpfs", "/tmp"])
            .args(Self::tmp_args(request, &cwd))
            .arg("--bind")
            .arg(&cwd)
            .arg(&cwd)
            .args(Self::confinement_args(&confinement))
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
            confinement: Confinement::new()
                .hidden(&key)
                .hidden(&dir)
                .hidden(host.join("missing"))
                .hidden(link),
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
            confinement: Confinement::new(),
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
        let backend = backend.with_confinement(Confinement::new().hidden(key).hidden(dir));
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

    #[test]
    fn what_the_command_needs_from_tmp_is_bound_at_the_same_path() {
        assert_eq!(
            tmp_top(Path::new("/tmp/clone/target/venv/bin")),
            Some("/tmp/clone".into())
        );
        assert_eq!(tmp_top(Path::new("/tmp")), None);
        assert_eq!(tmp_top(Path::new("/usr/bin")), None);
        let work = tempfile::Builder::new().tempdir_in("/tmp").unwrap();
        let work = work.path().canonicalize().unwrap();
        let bin = work.join("venv/bin");
        std::fs::create_dir_all(&bin).unwrap();
        let mut request = ExecRequest::new("sh", vec![], work.join("venv"));
        request.env = vec![("PATH".into(), format!("{}:/usr/bin:/bin", bin.display()))];
        let args = BwrapBackend::tmp_args(&request, &request.cwd);
        let top = work.display().to_string();
        assert_eq!(args, ["--ro-bind", top.as_str(), top.as_str()]);
        // A program linked out of /tmp (a virtual environment's python) still brings its
        // directory in.
        let venv = tempfile::Builder::new().tempdir_in("/tmp").unwrap();
        let venv = venv.path().canonicalize().unwrap();
        std::fs::create_dir_all(venv.join("bin")).unwrap();
        std::os::unix::fs::symlink("/bin/sh", venv.join("bin/python")).unwrap();
        let python = venv.join("bin/python").display().to_string();
        let mut request = ExecRequest::new(python, vec![], "/");
        request.env = vec![("PATH".into(), "/usr/bin:/bin".into())];
        let args = BwrapBackend::tmp_args(&request, Path::new("/"));
        let top = venv.display().to_string();
        assert_eq!(args, ["--ro-bind", top.as_str(), top.as_str()]);
    }

    /// The profile home inside the working directory (`talaria` run in `~`) stays read-only
    /// and its secrets hidden, whatever a command does (when bubblewrap can run here).
    #[tokio::test]
    async fn a_profile_home_inside_the_working_directory_is_read_only() {
        let Ok(backend) = BwrapBackend::new(false) else {
            eprintln!("skipped: bwrap is not installed");
            return;
        };
        let work = tempfile::tempdir().unwrap();
        let home = work.path().join(".talaria");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(home.join("config.yaml"), "approvals:\n  mode: ask\n").unwrap();
        std::fs::write(home.join(".env"), "OPENAI_API_KEY=sk-secret\n").unwrap();
        let backend = backend.with_confinement(
            Confinement::new()
                .read_only(&home)
                .hidden(home.join(".env")),
        );
        let script = "echo 'approvals: {mode: yolo}' >> .talaria/config.yaml; \
                      cat .talaria/.env; touch .talaria/new; touch mine; echo end";
        let request = ExecRequest::new("sh", vec!["-c".into(), script.into()], work.path());
        let output = crate::run(&backend, &request, &Default::default())
            .await
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&output.stdout), "end\n");
        assert_eq!(
            std::fs::read_to_string(home.join("config.yaml")).unwrap(),
            "approvals:\n  mode: ask\n"
        );
        assert!(!home.join("new").exists());
        assert!(
            work.path().join("mine").exists(),
            "the working directory stays writable"
        );
        // What the user approved may change the controls.
        let mut request = request.clone();
        request.controls = crate::Controls::Writable;
        request.args[1] = "echo '# approved' >> .talaria/config.yaml".into();
        crate::run(&backend, &request, &Default::default())
            .await
            .unwrap();
        assert!(
            std::fs::read_to_string(home.join("config.yaml"))
                .unwrap()
                .ends_with("# approved\n")
        );
    }
}
