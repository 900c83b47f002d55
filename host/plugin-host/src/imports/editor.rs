//! The user's editor as a place for files and commands, when the session runs
//! inside one (an ACP client that offers them): the [`Editor`] port the surface
//! implements, and the `editor` import that lets file plugins read and write
//! through it, checked against their filesystem grants exactly as WASI is.

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use talaria_exec::{ExecError, ExecOutput, ExecRequest};
use talaria_plugin_manifest::Access;

use crate::bindings::HostError;
use crate::bindings::talaria::plugin::editor;
use crate::log::{LogLevel, LogSource};
use crate::sandbox::Sandbox;
use crate::state::HostCtx;

/// The editor a session runs in. Reads see its unsaved buffers, writes land
/// in them, and commands run in its terminal, where the user watches them.
/// Every method is called only after the plugin's grants (files) or the
/// approval gate (commands) let the call through.
#[async_trait]
pub trait Editor: Send + Sync + std::fmt::Debug {
    /// Whether it serves `read_text_file` and `write_text_file`.
    fn serves_files(&self) -> bool;

    /// Whether it runs commands ([`run_command`](Self::run_command)).
    fn runs_commands(&self) -> bool;

    /// The whole text of the file at the absolute `path`; `Err` is shown to the plugin.
    async fn read_text_file(&self, path: &Path) -> Result<String, String>;

    /// Replaces (or creates) the file at the absolute `path`.
    async fn write_text_file(&self, path: &Path, content: &str) -> Result<(), String>;

    /// Runs an approved command to its end in the editor's terminal: stdout
    /// carries its combined output (a terminal does not keep the streams
    /// apart), the request's timeout kills it, and dropping the future kills
    /// it too. Requests with stdin never come here. `tool` names the tool
    /// that runs it (the editor shows the terminal in that tool's call).
    async fn run_command(&self, tool: &str, request: &ExecRequest)
    -> Result<ExecOutput, ExecError>;
}

impl HostCtx {
    /// `path` checked for `access` against the plugin's filesystem grants:
    /// absolute, and inside a granted directory with that access once
    /// symlinks are resolved (as far as the path exists), so the editor is
    /// never asked for a file the plugin could not open itself.
    fn editor_path(&self, path: &str, access: Access) -> Result<PathBuf, HostError> {
        let denied = |why: String| HostError::Denied(format!("{}: {why}", self.plugin.name));
        if !Path::new(path).is_absolute() {
            return Err(denied(format!("{path} is not an absolute path")));
        }
        let lexical = talaria_exec::lexical(Path::new(path));
        let real = resolve_existing(&lexical);
        let sandbox = Sandbox::resolve(&self.plugin, self.cwd.as_deref()).map_err(denied)?;
        let granted = sandbox
            .preopens
            .iter()
            .filter(|preopen| real.starts_with(&preopen.host))
            .map(|preopen| preopen.access)
            .max();
        match granted {
            Some(granted) if granted >= access => {}
            Some(_) => return Err(denied(format!("{path} is not writable under its grants"))),
            None => {
                return Err(denied(format!(
                    "{path} is outside the directories it was granted"
                )));
            }
        }
        if access == Access::ReadWrite
            && let Some(protected) = self
                .plugin
                .exec
                .executor
                .policy()
                .protected()
                .write_protected(&real)
        {
            return Err(denied(format!(
                "{path} is protected ({}); it changes only with the user's approval",
                protected.display()
            )));
        }
        Ok(real)
    }

    fn editor_files(&self) -> Option<&std::sync::Arc<dyn Editor>> {
        self.plugin.editor.as_ref().filter(|e| e.serves_files())
    }
}

/// `path` with its longest existing ancestor canonicalized (symlinks
/// resolved) and the rest appended: where the file is, or would be created.
fn resolve_existing(path: &Path) -> PathBuf {
    let mut missing = Vec::new();
    let mut existing = path.to_path_buf();
    loop {
        if let Ok(real) = existing.canonicalize() {
            return missing.iter().rev().fold(real, |dir, name| dir.join(name));
        }
        match (
            existing.file_name().map(ToOwned::to_owned),
            existing.parent(),
        ) {
            (Some(name), Some(parent)) => {
                missing.push(name);
                existing = parent.to_path_buf();
            }
            _ => return path.to_path_buf(),
        }
    }
}

impl editor::Host for HostCtx {
    async fn serves_files(&mut self) -> bool {
        self.editor_files().is_some()
    }

    async fn read_text_file(&mut self, path: String) -> Result<String, HostError> {
        let Some(editor) = self.editor_files().cloned() else {
            return Err(HostError::Failed("no editor serves files here".into()));
        };
        let real = self.editor_path(&path, Access::ReadOnly)?;
        editor
            .read_text_file(&real)
            .await
            .map_err(|e| HostError::Failed(format!("the editor could not read {path}: {e}")))
    }

    async fn write_text_file(&mut self, path: String, content: String) -> Result<(), HostError> {
        let Some(editor) = self.editor_files().cloned() else {
            return Err(HostError::Failed("no editor serves files here".into()));
        };
        let real = self.editor_path(&path, Access::ReadWrite)?;
        self.plugin.log.push(
            LogLevel::Info,
            LogSource::Host,
            &format!("editor write {} ({} bytes)", real.display(), content.len()),
        );
        editor
            .write_text_file(&real, &content)
            .await
            .map_err(|e| HostError::Failed(format!("the editor could not write {path}: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::{Arc, Mutex};

    use async_trait::async_trait;
    use talaria_exec::{ExecError, ExecOutput, ExecRequest};
    use talaria_plugin_manifest::{Access, Capabilities, FsCapability};

    use super::Editor;
    use crate::bindings::HostError;
    use crate::bindings::talaria::plugin::editor::Host as _;
    use crate::bindings::talaria::plugin::exec::{self, Host as _};
    use crate::state::HostCtx;

    /// An editor that keeps files in memory and records what it was asked.
    #[derive(Debug, Default)]
    struct Buffers {
        files: Mutex<Vec<(String, String)>>,
        commands: Mutex<Vec<(String, String)>>,
    }

    #[async_trait]
    impl Editor for Buffers {
        fn serves_files(&self) -> bool {
            true
        }
        fn runs_commands(&self) -> bool {
            true
        }
        async fn read_text_file(&self, path: &Path) -> Result<String, String> {
            let files = self.files.lock().unwrap();
            let path = path.display().to_string();
            files
                .iter()
                .rev()
                .find(|(p, _)| *p == path)
                .map(|(_, text)| text.clone())
                .ok_or_else(|| format!("no buffer for {path}"))
        }
        async fn write_text_file(&self, path: &Path, content: &str) -> Result<(), String> {
            let entry = (path.display().to_string(), content.to_owned());
            self.files.lock().unwrap().push(entry);
            Ok(())
        }
        async fn run_command(
            &self,
            tool: &str,
            request: &ExecRequest,
        ) -> Result<ExecOutput, ExecError> {
            let line = format!("{} {}", request.program, request.args.join(" "));
            self.commands.lock().unwrap().push((tool.to_owned(), line));
            Ok(ExecOutput {
                status: Some(0),
                stdout: b"from the editor".to_vec(),
                ..ExecOutput::default()
            })
        }
    }

    fn host(dir: &Path, access: Access, editor: Option<Arc<Buffers>>) -> HostCtx {
        let caps = Capabilities {
            filesystem: vec![FsCapability {
                path: "$CWD".into(),
                access,
            }],
            exec: true,
            ..Capabilities::default()
        };
        let mut host = HostCtx::for_tests(caps, dir);
        let mut shared = host.plugin.clone_for_tests();
        shared.editor = editor.map(|e| e as Arc<dyn Editor>);
        host.plugin = Arc::new(shared);
        host
    }

    fn denied<T: std::fmt::Debug>(result: Result<T, HostError>) -> String {
        match result {
            Err(HostError::Denied(message)) => message,
            other => panic!("expected a denial, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn files_go_to_the_editor_inside_the_grants_only() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().canonicalize().unwrap();
        let buffers = Arc::new(Buffers::default());
        let mut host = host(&cwd, Access::ReadWrite, Some(buffers.clone()));
        assert!(host.serves_files().await);

        let inside = cwd.join("sub/new.txt").display().to_string();
        host.write_text_file(inside.clone(), "text".into())
            .await
            .unwrap();
        assert_eq!(host.read_text_file(inside.clone()).await.unwrap(), "text");
        assert!(
            !cwd.join("sub").exists(),
            "the editor holds it, not the disk"
        );

        let outside = tempfile::tempdir().unwrap();
        let escapes = [
            outside.path().join("x.txt").display().to_string(),
            format!("{}/../x.txt", cwd.display()),
            "relative.txt".to_owned(),
        ];
        for path in escapes {
            let message = denied(host.read_text_file(path.clone()).await);
            assert!(message.starts_with("p: "), "{message}");
            denied(host.write_text_file(path, "x".into()).await);
        }
        // A symlink inside the grant that leads out of it leads nowhere.
        std::os::unix::fs::symlink(outside.path(), cwd.join("link")).unwrap();
        let through = cwd.join("link/x.txt").display().to_string();
        denied(host.write_text_file(through, "x".into()).await);
        assert_eq!(
            buffers.files.lock().unwrap().len(),
            1,
            "only the first write"
        );
    }

    #[tokio::test]
    async fn a_read_only_grant_reads_but_never_writes_and_no_editor_serves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().canonicalize().unwrap();
        let buffers = Arc::new(Buffers::default());
        let file = cwd.join("a.txt").display().to_string();
        buffers
            .files
            .lock()
            .unwrap()
            .push((file.clone(), "unsaved".into()));
        let mut host = host(&cwd, Access::ReadOnly, Some(buffers.clone()));
        assert_eq!(host.read_text_file(file.clone()).await.unwrap(), "unsaved");
        let message = denied(host.write_text_file(file.clone(), "x".into()).await);
        assert!(message.contains("not writable"), "{message}");

        let mut plain = self::host(&cwd, Access::ReadWrite, None);
        assert!(!plain.serves_files().await);
        assert!(matches!(
            plain.read_text_file(file).await,
            Err(HostError::Failed(_))
        ));
    }

    fn command(line: &str, stdin: Option<&[u8]>) -> exec::Command {
        exec::Command {
            program: "bash".into(),
            args: vec!["-c".into(), line.into()],
            cwd: None,
            env: Vec::new(),
            stdin: stdin.map(<[u8]>::to_vec),
            timeout_ms: Some(10_000),
        }
    }

    #[tokio::test]
    async fn approved_commands_run_in_the_editors_terminal_and_the_rest_stay_here() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().canonicalize().unwrap();
        let buffers = Arc::new(Buffers::default());
        let mut host = host(&cwd, Access::ReadWrite, Some(buffers.clone()));

        let out = host.run(command("echo here", None)).await.unwrap();
        assert_eq!(out.stdout, b"from the editor");
        assert_eq!(
            buffers.commands.lock().unwrap().clone(),
            [("t".to_owned(), "bash -c echo here".to_owned())]
        );

        // Needs approval, and nobody approves: it never reaches the editor.
        let refused = host.run(command("rm -rf /tmp/x", None)).await;
        assert!(matches!(refused, Err(HostError::Denied(_))), "{refused:?}");
        // A terminal takes no stdin: such a command runs here.
        let piped = host.run(command("cat", Some(b"piped"))).await.unwrap();
        assert_eq!(piped.stdout, b"piped");
        assert_eq!(buffers.commands.lock().unwrap().len(), 1);
    }
}
