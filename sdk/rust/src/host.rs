//! Safe wrappers over the host imports.
//!
//! Inside a component these call the host. In a native build (unit tests of a
//! plugin crate) there is no host: logging goes to stderr and every other call
//! returns [`HostError::Failed`], so plugin logic stays testable natively.

#[cfg(not(target_arch = "wasm32"))]
use crate::HostError;

#[cfg(not(target_arch = "wasm32"))]
fn no_host<T>() -> Result<T, HostError> {
    Err(HostError::Failed(
        "no plugin host: host imports only work inside a wasm component".into(),
    ))
}

/// Logging into the host's log, tagged with the plugin's name. Always granted.
pub mod log {
    pub use crate::bindings::talaria::plugin::log::Level;

    /// Logs `message` at `level`.
    pub fn log(level: Level, message: &str) {
        #[cfg(target_arch = "wasm32")]
        crate::bindings::talaria::plugin::log::log(level, message);
        #[cfg(not(target_arch = "wasm32"))]
        eprintln!("[{level:?}] {message}");
    }

    /// Logs at [`Level::Trace`].
    pub fn trace(message: impl AsRef<str>) {
        log(Level::Trace, message.as_ref());
    }

    /// Logs at [`Level::Debug`].
    pub fn debug(message: impl AsRef<str>) {
        log(Level::Debug, message.as_ref());
    }

    /// Logs at [`Level::Info`].
    pub fn info(message: impl AsRef<str>) {
        log(Level::Info, message.as_ref());
    }

    /// Logs at [`Level::Warn`].
    pub fn warn(message: impl AsRef<str>) {
        log(Level::Warn, message.as_ref());
    }

    /// Logs at [`Level::Error`].
    pub fn error(message: impl AsRef<str>) {
        log(Level::Error, message.as_ref());
    }
}

/// Configuration values and environment variables declared in the manifest.
pub mod config {
    use crate::HostError;

    /// A value from the plugin's `[config]` section (or the user's override),
    /// or a granted environment variable; `Ok(None)` when unset.
    pub fn get(name: &str) -> Result<Option<String>, HostError> {
        #[cfg(target_arch = "wasm32")]
        return crate::bindings::talaria::plugin::config::get(name);
        #[cfg(not(target_arch = "wasm32"))]
        {
            let _ = name;
            super::no_host()
        }
    }
}

/// A key-value store scoped to this plugin and profile. Needs `kv = true`.
pub mod kv {
    use crate::HostError;

    /// The value under `key`, if any.
    pub fn get(key: &str) -> Result<Option<Vec<u8>>, HostError> {
        #[cfg(target_arch = "wasm32")]
        return crate::bindings::talaria::plugin::kv::get(key);
        #[cfg(not(target_arch = "wasm32"))]
        {
            let _ = key;
            super::no_host()
        }
    }

    /// The value under `key` as UTF-8 text (invalid bytes are replaced).
    pub fn get_string(key: &str) -> Result<Option<String>, HostError> {
        Ok(get(key)?.map(|v| String::from_utf8_lossy(&v).into_owned()))
    }

    /// Stores `value` under `key`.
    pub fn set(key: &str, value: impl AsRef<[u8]>) -> Result<(), HostError> {
        #[cfg(target_arch = "wasm32")]
        return crate::bindings::talaria::plugin::kv::set(key, value.as_ref());
        #[cfg(not(target_arch = "wasm32"))]
        {
            let _ = (key, value);
            super::no_host()
        }
    }

    /// Removes `key` (no error when it is absent).
    pub fn delete(key: &str) -> Result<(), HostError> {
        #[cfg(target_arch = "wasm32")]
        return crate::bindings::talaria::plugin::kv::delete(key);
        #[cfg(not(target_arch = "wasm32"))]
        {
            let _ = key;
            super::no_host()
        }
    }

    /// The keys starting with `prefix` (`""` for all).
    pub fn list_keys(prefix: &str) -> Result<Vec<String>, HostError> {
        #[cfg(target_arch = "wasm32")]
        return crate::bindings::talaria::plugin::kv::list_keys(prefix);
        #[cfg(not(target_arch = "wasm32"))]
        {
            let _ = prefix;
            super::no_host()
        }
    }
}

/// Running a process through the host's approval layer and execution backend.
/// Needs `exec = true`.
pub mod exec {
    use crate::HostError;
    pub use crate::bindings::talaria::plugin::exec::{Command, Output};

    impl Command {
        /// A command running `program` with no arguments, in the session's
        /// working directory, with no extra environment and no stdin.
        pub fn new(program: impl Into<String>) -> Self {
            Self {
                program: program.into(),
                args: Vec::new(),
                cwd: None,
                env: Vec::new(),
                stdin: None,
                timeout_ms: None,
            }
        }

        /// Appends one argument.
        #[must_use]
        pub fn arg(mut self, arg: impl Into<String>) -> Self {
            self.args.push(arg.into());
            self
        }

        /// Appends arguments.
        #[must_use]
        pub fn args<I, S>(mut self, args: I) -> Self
        where
            I: IntoIterator<Item = S>,
            S: Into<String>,
        {
            self.args.extend(args.into_iter().map(Into::into));
            self
        }

        /// Runs in `dir` instead of the session's working directory.
        #[must_use]
        pub fn cwd(mut self, dir: impl Into<String>) -> Self {
            self.cwd = Some(dir.into());
            self
        }

        /// Sets an environment variable for the process.
        #[must_use]
        pub fn env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
            self.env.push((name.into(), value.into()));
            self
        }

        /// Feeds `input` to the process's stdin.
        #[must_use]
        pub fn stdin(mut self, input: impl Into<Vec<u8>>) -> Self {
            self.stdin = Some(input.into());
            self
        }

        /// Kills the process after `ms` milliseconds.
        #[must_use]
        pub fn timeout_ms(mut self, ms: u64) -> Self {
            self.timeout_ms = Some(ms);
            self
        }
    }

    impl Output {
        /// Exited on its own with status 0.
        pub fn success(&self) -> bool {
            self.status == Some(0) && !self.timed_out
        }

        /// Stdout as UTF-8 text (invalid bytes are replaced).
        pub fn stdout_text(&self) -> String {
            String::from_utf8_lossy(&self.stdout).into_owned()
        }

        /// Stderr as UTF-8 text (invalid bytes are replaced).
        pub fn stderr_text(&self) -> String {
            String::from_utf8_lossy(&self.stderr).into_owned()
        }
    }

    /// Runs `command` and waits for it. A non-zero exit is an `Ok` output; an
    /// `Err` means the host refused or could not run it.
    pub fn run(command: &Command) -> Result<Output, HostError> {
        #[cfg(target_arch = "wasm32")]
        return crate::bindings::talaria::plugin::exec::run(command);
        #[cfg(not(target_arch = "wasm32"))]
        {
            let _ = command;
            super::no_host()
        }
    }
}

/// Background processes of the session, started through the host's approval
/// layer and execution backend like [`exec`]. Needs `exec = true`.
/// `talaria:plugin@0.1.1` and later.
pub mod process {
    use crate::HostError;
    pub use crate::bindings::talaria::plugin::exec::Command;
    pub use crate::bindings::talaria::plugin::process::{Chunk, ProcessInfo};

    /// Starts `command` in the background; returns its id.
    pub fn spawn(command: &Command) -> Result<u64, HostError> {
        #[cfg(target_arch = "wasm32")]
        return crate::bindings::talaria::plugin::process::spawn(command);
        #[cfg(not(target_arch = "wasm32"))]
        {
            let _ = command;
            super::no_host()
        }
    }

    /// Output (stdout and stderr combined) from `offset`, at most `max_bytes`.
    pub fn read(id: u64, offset: u64, max_bytes: u32) -> Result<Chunk, HostError> {
        #[cfg(target_arch = "wasm32")]
        return crate::bindings::talaria::plugin::process::read(id, offset, max_bytes);
        #[cfg(not(target_arch = "wasm32"))]
        {
            let _ = (id, offset, max_bytes);
            super::no_host()
        }
    }

    /// Waits up to `timeout_ms` for the process to end, then reads like [`read`].
    pub fn wait(id: u64, timeout_ms: u64, offset: u64, max_bytes: u32) -> Result<Chunk, HostError> {
        #[cfg(target_arch = "wasm32")]
        return crate::bindings::talaria::plugin::process::wait(id, timeout_ms, offset, max_bytes);
        #[cfg(not(target_arch = "wasm32"))]
        {
            let _ = (id, timeout_ms, offset, max_bytes);
            super::no_host()
        }
    }

    /// Writes `data` to the process's stdin.
    pub fn write(id: u64, data: &[u8]) -> Result<(), HostError> {
        #[cfg(target_arch = "wasm32")]
        return crate::bindings::talaria::plugin::process::write(id, data);
        #[cfg(not(target_arch = "wasm32"))]
        {
            let _ = (id, data);
            super::no_host()
        }
    }

    /// Kills the process and everything it started.
    pub fn kill(id: u64) -> Result<(), HostError> {
        #[cfg(target_arch = "wasm32")]
        return crate::bindings::talaria::plugin::process::kill(id);
        #[cfg(not(target_arch = "wasm32"))]
        {
            let _ = id;
            super::no_host()
        }
    }

    /// The session's processes (empty outside a component).
    pub fn list() -> Vec<ProcessInfo> {
        #[cfg(target_arch = "wasm32")]
        return crate::bindings::talaria::plugin::process::list();
        #[cfg(not(target_arch = "wasm32"))]
        Vec::new()
    }
}

/// Full-text search over past sessions. Needs `session-search = true`.
pub mod session_search {
    use crate::HostError;
    pub use crate::bindings::talaria::plugin::session_search::Hit;

    /// Up to `limit` hits for `query`, best first.
    pub fn search(query: &str, limit: u32) -> Result<Vec<Hit>, HostError> {
        #[cfg(target_arch = "wasm32")]
        return crate::bindings::talaria::plugin::session_search::search(query, limit);
        #[cfg(not(target_arch = "wasm32"))]
        {
            let _ = (query, limit);
            super::no_host()
        }
    }
}

/// The session's auxiliary model (0.1.2), granted with `auxiliary-model`:
/// one request without tools, e.g. to summarise a fetched page.
pub mod auxiliary {
    use crate::HostError;

    /// The model's answer to `prompt` under `instructions`, at most
    /// `max_tokens` tokens (the host caps it at 4096).
    pub fn complete(
        instructions: &str,
        prompt: &str,
        max_tokens: u32,
    ) -> Result<String, HostError> {
        #[cfg(target_arch = "wasm32")]
        return crate::bindings::talaria::plugin::auxiliary::complete(
            instructions,
            prompt,
            max_tokens,
        );
        #[cfg(not(target_arch = "wasm32"))]
        {
            let _ = (instructions, prompt, max_tokens);
            super::no_host()
        }
    }
}

/// The user's editor, when the session runs inside one that serves files
/// (0.1.1): reads see its unsaved buffers, writes land in them. Paths are
/// absolute and inside the plugin's filesystem grants. Natively no editor
/// serves files.
pub mod editor {
    use crate::HostError;

    /// Whether an editor serves files in this call's session.
    pub fn serves_files() -> bool {
        #[cfg(target_arch = "wasm32")]
        return crate::bindings::talaria::plugin::editor::serves_files();
        #[cfg(not(target_arch = "wasm32"))]
        false
    }

    /// The whole text of `path` as the editor has it.
    pub fn read_text_file(path: &str) -> Result<String, HostError> {
        #[cfg(target_arch = "wasm32")]
        return crate::bindings::talaria::plugin::editor::read_text_file(path);
        #[cfg(not(target_arch = "wasm32"))]
        {
            let _ = path;
            super::no_host()
        }
    }

    /// Replaces (or creates) `path` in the editor.
    pub fn write_text_file(path: &str, content: &str) -> Result<(), HostError> {
        #[cfg(target_arch = "wasm32")]
        return crate::bindings::talaria::plugin::editor::write_text_file(path, content);
        #[cfg(not(target_arch = "wasm32"))]
        {
            let _ = (path, content);
            super::no_host()
        }
    }
}
