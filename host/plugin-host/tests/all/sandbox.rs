//! The sandbox against the `hostile` test plugin: filesystem and network
//! confinement, time and memory limits, traps, invalid output, ungranted
//! host imports, failure isolation and disabling. After each failure the host
//! keeps working: a following normal call succeeds.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

use std::io::ErrorKind;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::common::*;
use serde_json::json;
use talaria_kernel::{ToolCall, ToolContext, ValidatedCall};
use talaria_plugin_host::{Grants, LoadedPlugin, LogSource, Manifest, PluginTools};
use talaria_tools::ToolSource;
use tokio_util::sync::CancellationToken;

const SECRET: &str = "TOP-SECRET-OUTSIDE";
const INSIDE: &str = "hello from inside";

/// The JSON a `hostile` probe returned (`{"ok": ..., ...}`).
fn probe(out: &Outcome) -> serde_json::Value {
    serde_json::from_str(&out.content).unwrap_or(serde_json::Value::Null)
}

/// Whether a probe succeeded (a call that ran and reported `ok: true`).
fn succeeded(out: &Outcome) -> bool {
    !out.is_error && probe(out)["ok"] == json!(true)
}

/// The message of a host import's `denied` error, as the probe reports it.
fn denied_message(out: &Outcome) -> String {
    let v = probe(out);
    assert!(!out.is_error, "{out:?}");
    assert_eq!(v["ok"], json!(false), "{out:?}");
    assert_eq!(v["error"]["kind"], json!("denied"), "{out:?}");
    v["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

struct Fixture {
    _root: tempfile::TempDir,
    root: PathBuf,
    cwd: PathBuf,
    outside: PathBuf,
    plugin: LoadedPlugin,
    tools: PluginTools,
}

/// `root/work` is the working directory (with `inside.txt` and symlinks that
/// point out of it); `root/outside/secret.txt` must stay unreachable.
async fn fixture_with(edit: impl FnOnce(String) -> String, grants: Option<Grants>) -> Fixture {
    let root_dir = tempfile::tempdir().unwrap();
    let root = root_dir.path().canonicalize().unwrap();
    let cwd = root.join("work");
    let outside = root.join("outside");
    std::fs::create_dir_all(&cwd).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), SECRET).unwrap();
    std::fs::write(cwd.join("inside.txt"), INSIDE).unwrap();
    std::os::unix::fs::symlink(outside.join("secret.txt"), cwd.join("abs-link")).unwrap();
    std::os::unix::fs::symlink("../outside/secret.txt", cwd.join("rel-link")).unwrap();
    std::os::unix::fs::symlink(&outside, cwd.join("dir-link")).unwrap();

    let dir = variant(&hostile_dir(), &root.join("plugin"), edit);
    let manifest = Manifest::load(&dir.join("plugin.toml")).unwrap();
    let grants = grants.unwrap_or_else(|| Grants::all_requested(&manifest));
    let host = cached_host(&root.join("host"));
    let plugin = host.load(&dir, &grants).await.unwrap();
    let tools = PluginTools::new(vec![plugin.clone()], &cwd).unwrap();
    Fixture {
        _root: root_dir,
        root,
        cwd,
        outside,
        plugin,
        tools,
    }
}

async fn fixture() -> Fixture {
    fixture_with(|m| m, None).await
}

impl Fixture {
    async fn call(&self, session: &str, tool: &str, args: serde_json::Value) -> Outcome {
        call(&self.tools, session, tool, args).await
    }

    async fn read(&self, session: &str, path: &str) -> Outcome {
        self.call(session, "read_file_at", json!({ "path": path }))
            .await
    }

    /// A normal call that must succeed: the host (and the plugin, unless
    /// disabled in that session) still works.
    async fn assert_still_works(&self, session: &str) {
        let out = self.read(session, "inside.txt").await;
        assert!(succeeded(&out), "a normal call failed: {out:?}");
        assert_eq!(probe(&out)["content"], json!(INSIDE), "{out:?}");
    }

    /// `path` must not yield the secret (nor any file outside the cwd).
    async fn assert_unreadable(&self, path: &str) {
        let out = self.read("escape", path).await;
        assert!(!succeeded(&out), "{path} was readable: {out:?}");
        assert!(!out.content.contains(SECRET), "{path} leaked: {out:?}");
        assert!(!out.content.contains("root:x:0"), "{path} leaked: {out:?}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn files_inside_the_working_directory_are_readable() {
    let f = fixture().await;
    f.assert_still_works("s").await;
    let absolute = f.cwd.join("inside.txt");
    let out = f.read("s", absolute.to_str().unwrap()).await;
    assert!(succeeded(&out) && out.content.contains(INSIDE), "{out:?}");
    let out = f.read("s", "./inside.txt").await;
    assert!(succeeded(&out) && out.content.contains(INSIDE), "{out:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_call_context_carries_the_canonical_cwd() {
    let f = fixture().await;
    let out = f.call("ctx-session", "context", json!({})).await;
    assert!(succeeded(&out), "{out:?}");
    let v = probe(&out);
    assert_eq!(v["cwd"], json!(f.cwd.to_str().unwrap()));
    assert_eq!(v["session_id"], json!("ctx-session"));
    assert_eq!(v["call_id"], json!("call-context"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_read_only_grant_refuses_writes() {
    let f = fixture().await;
    for path in ["new.txt", "inside.txt"] {
        let out = f
            .call(
                "s",
                "write_file_at",
                json!({ "path": path, "content": "overwritten" }),
            )
            .await;
        assert!(!succeeded(&out), "{path}: {out:?}");
    }
    assert!(!f.cwd.join("new.txt").exists());
    assert_eq!(
        std::fs::read_to_string(f.cwd.join("inside.txt")).unwrap(),
        INSIDE
    );
    let out = f
        .call(
            "s",
            "write_file_at",
            json!({ "path": "/tmp/hostile-was-here", "content": "x" }),
        )
        .await;
    assert!(!succeeded(&out), "{out:?}");
    assert!(!Path::new("/tmp/hostile-was-here").exists());
    f.assert_still_works("s").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn directories_outside_are_not_listable() {
    let f = fixture().await;
    for path in [
        "/etc",
        "/tmp",
        "..",
        "../outside",
        f.outside.to_str().unwrap(),
    ] {
        let out = f.call("s", "list_dir", json!({ "path": path })).await;
        assert!(!succeeded(&out), "{path}: {out:?}");
    }
    let cwd_listing = json!(["abs-link", "dir-link", "inside.txt", "rel-link"]);
    let out = f.call("s", "list_dir", json!({ "path": "." })).await;
    assert!(succeeded(&out), "{out:?}");
    assert_eq!(probe(&out)["names"], cwd_listing);
    // wasi-libc resolves "/" against the "." preopen: the root the guest
    // sees is the working directory, never the host's root.
    let out = f.call("s", "list_dir", json!({ "path": "/" })).await;
    if succeeded(&out) {
        assert_eq!(probe(&out)["names"], cwd_listing, "{out:?}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_environment_is_empty() {
    let f = fixture().await;
    let out = f.call("s", "env_vars", json!({})).await;
    assert!(succeeded(&out), "{out:?}");
    let v = probe(&out);
    assert_eq!(v["vars"], json!({}), "{out:?}");
    assert_eq!(v["args"], json!([]), "{out:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn etc_passwd_is_denied() {
    let f = fixture().await;
    f.assert_unreadable("/etc/passwd").await;
    f.assert_still_works("s").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn dotdot_escapes_are_denied() {
    let f = fixture().await;
    f.assert_unreadable("../outside/secret.txt").await;
    f.assert_unreadable("./../outside/secret.txt").await;
    f.assert_unreadable("sub/../../outside/secret.txt").await;
    let absolute_dotdot = format!("{}/../outside/secret.txt", f.cwd.display());
    f.assert_unreadable(&absolute_dotdot).await;
    f.assert_unreadable(f.outside.join("secret.txt").to_str().unwrap())
        .await;
    f.assert_still_works("s").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn symlinks_pointing_outside_are_denied() {
    let f = fixture().await;
    f.assert_unreadable("abs-link").await;
    f.assert_unreadable("rel-link").await;
    f.assert_unreadable("dir-link/secret.txt").await;
    f.assert_unreadable(f.cwd.join("rel-link").to_str().unwrap())
        .await;
    f.assert_still_works("s").await;
}

/// Whether someone connected to `listener` (non-blocking accept).
fn accepted(listener: &TcpListener) -> bool {
    match listener.accept() {
        Ok(_) => true,
        Err(e) if e.kind() == ErrorKind::WouldBlock => false,
        Err(e) => panic!("accept: {e}"),
    }
}

fn listener() -> (TcpListener, u16) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    (listener, port)
}

#[tokio::test(flavor = "multi_thread")]
async fn connecting_without_a_network_grant_is_denied() {
    let f = fixture().await;
    let (listener, port) = listener();
    let out = f
        .call(
            "s",
            "connect",
            json!({ "addr": format!("127.0.0.1:{port}") }),
        )
        .await;
    assert!(!succeeded(&out), "{out:?}");
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        !accepted(&listener),
        "the plugin reached an undeclared port"
    );
    f.assert_still_works("s").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn only_granted_addresses_can_be_reached() {
    let (allowed, allowed_port) = listener();
    let (other, other_port) = listener();
    let f = fixture_with(
        |m| with_capability(m, &format!("network = [\"127.0.0.1:{allowed_port}\"]")),
        None,
    )
    .await;
    let out = f
        .call(
            "s",
            "connect",
            json!({ "addr": format!("127.0.0.1:{other_port}") }),
        )
        .await;
    assert!(!succeeded(&out), "{out:?}");
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!accepted(&other), "the plugin reached an undeclared port");
    // The refusal is logged with the grant it lacks, and a call that fails
    // in its own words (as Python's urllib does) gets it appended; a kept
    // instance starts each call anew.
    let missing = format!(
        "refused connection to 127.0.0.1:{other_port}: no network grant of plugin hostile covers \
         127.0.0.1:{other_port} (its manifest must ask for it under [capabilities] network, and \
         the user grant it: talaria plugin grant hostile network:127.0.0.1:{other_port})"
    );
    assert!(f.plugin.log().contains(&missing), "{:?}", f.plugin.log());
    let connect = |addr: &str| json!({ "addr": addr, "fail": true });
    let other_addr = format!("127.0.0.1:{other_port}");
    let out = f.call("s", "connect", connect(&other_addr)).await;
    assert!(out.is_error, "{out:?}");
    assert_eq!(
        out.content,
        format!("ConnectionError: the connection failed (the host {missing})")
    );
    let mut kept = f.plugin.instantiate(Some(&f.cwd)).await.unwrap();
    let refused = kept
        .call("connect", &connect(&other_addr).to_string())
        .await
        .unwrap_err();
    assert!(refused.to_string().contains(&missing), "{refused}");
    let failed = kept
        .call("connect", &connect("no port").to_string())
        .await
        .unwrap_err();
    assert!(!failed.to_string().contains("the host refused"), "{failed}");

    let out = f
        .call(
            "s",
            "connect",
            json!({ "addr": format!("127.0.0.1:{allowed_port}") }),
        )
        .await;
    assert!(succeeded(&out), "the granted address was refused: {out:?}");
    let deadline = Instant::now() + Duration::from_secs(2);
    while !accepted(&allowed) {
        assert!(
            Instant::now() < deadline,
            "no connection on the granted port"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    // Requested but not granted: denied.
    let manifest = Manifest::load(&f.root.join("plugin/plugin.toml")).unwrap();
    let mut grants = Grants::all_requested(&manifest);
    grants.network.clear();
    let f2 = fixture_with(
        |m| with_capability(m, &format!("network = [\"127.0.0.1:{allowed_port}\"]")),
        Some(grants),
    )
    .await;
    let out = f2
        .call(
            "s",
            "connect",
            json!({ "addr": format!("127.0.0.1:{allowed_port}") }),
        )
        .await;
    assert!(!succeeded(&out), "{out:?}");
    // With no grant at all, a connection by address and a name lookup are refused in words
    // naming the grant, as with some (the lookup has no port to name yet).
    let log = f2.plugin.log();
    assert!(
        log.contains(&format!(
            "refused connection to 127.0.0.1:{allowed_port}: no network grant of plugin hostile"
        )),
        "{log:?}"
    );
    let out = f2
        .call(
            "s",
            "connect",
            json!({ "addr": "localhost:80", "fail": true }),
        )
        .await;
    assert_eq!(
        out.content,
        "ConnectionError: the connection failed (the host refused name lookup of localhost: \
         plugin hostile has no network grant (its manifest must ask for one under \
         [capabilities] network, and the user grant it: talaria plugin grant hostile \
         network:localhost:PORT))"
    );
    f2.assert_still_works("s").await;
}

/// A loopback HTTP server answering every request with `hello over http`;
/// returns its port and a counter of the requests it served.
async fn http_server() -> (u16, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let served = std::sync::Arc::new(AtomicUsize::new(0));
    let counter = served.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            counter.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut buf = [0u8; 1024];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                let body = "hello over http";
                let response = format!(
                    "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(response.as_bytes()).await;
            });
        }
    });
    (port, served)
}

#[tokio::test(flavor = "multi_thread")]
async fn outgoing_http_is_checked_against_the_network_grants() {
    use std::sync::atomic::Ordering;
    let (port, served) = http_server().await;
    let (other_port, other_served) = http_server().await;

    let f = fixture().await;
    let out = f
        .call(
            "s",
            "http_get",
            json!({ "url": format!("http://127.0.0.1:{port}/") }),
        )
        .await;
    assert!(
        denied_message(&out).contains(&format!(
            "no network grant of plugin hostile covers 127.0.0.1:{port} (its manifest must ask \
             for it under [capabilities] network, and the user grant it: talaria plugin grant \
             hostile network:127.0.0.1:{port})"
        )),
        "{out:?}"
    );

    let f = fixture_with(
        |m| with_capability(m, &format!("network = [\"localhost:{port}\"]")),
        None,
    )
    .await;
    let out = f
        .call(
            "s",
            "http_get",
            json!({ "url": format!("http://localhost:{port}/x?y=1") }),
        )
        .await;
    assert!(succeeded(&out), "a granted host name was refused: {out:?}");
    assert_eq!(probe(&out)["status"], json!(200));
    assert_eq!(probe(&out)["body"], json!("hello over http"));

    for url in [
        format!("http://localhost:{other_port}/"),
        format!("http://127.0.0.1:{port}/"),
    ] {
        let out = f.call("s", "http_get", json!({ "url": url })).await;
        assert!(!denied_message(&out).is_empty(), "{url}: {out:?}");
    }
    assert_eq!(
        served.load(Ordering::SeqCst),
        1,
        "only the granted request arrived"
    );
    assert_eq!(other_served.load(Ordering::SeqCst), 0);
    // The log and the call name the grant that is missing; a call that fails
    // in its own words gets the host's reason after them.
    let missing = format!(
        "refused HTTP request to http://localhost:{other_port}/: no network grant of plugin \
         hostile covers localhost:{other_port}"
    );
    assert!(f.plugin.log().contains(&missing), "{:?}", f.plugin.log());
    assert!(
        f.plugin.log().contains(&format!(
            "talaria plugin grant hostile network:localhost:{other_port}"
        )),
        "{:?}",
        f.plugin.log()
    );
    let url = format!("http://localhost:{other_port}/");
    let out = f
        .call("s", "http_get", json!({ "url": url, "fail": true }))
        .await;
    assert!(out.is_error, "{out:?}");
    assert!(
        out.content
            .starts_with("NetworkError: the fetch failed (the host refused HTTP request to"),
        "{out:?}"
    );
    assert!(out.content.contains(&missing), "{out:?}");
    // A kept instance starts each call anew: a later failure that had no
    // refusal does not repeat an earlier call's.
    let mut kept = f.plugin.instantiate(Some(&f.cwd)).await.unwrap();
    let fetch = |url: &str| json!({ "url": url, "fail": true }).to_string();
    let refused = kept.call("http_get", &fetch(&url)).await.unwrap_err();
    assert!(refused.to_string().contains(&missing), "{refused}");
    let failed = kept
        .call("http_get", &fetch("not a url"))
        .await
        .unwrap_err();
    assert!(!failed.to_string().contains("the host refused"), "{failed}");
    f.assert_still_works("s").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn spinning_times_out() {
    let f = fixture().await;
    let start = Instant::now();
    let out = f.call("spin", "spin", json!({})).await;
    let elapsed = start.elapsed();
    assert!(out.is_error, "{out:?}");
    assert_eq!(
        out.content,
        "plugin hostile: call to spin timed out after 2000 ms"
    );
    assert!(
        elapsed >= Duration::from_millis(1900) && elapsed < Duration::from_millis(3500),
        "{elapsed:?}"
    );
    assert!(f.plugin.log().contains("timed out after 2000 ms"));
    f.assert_still_works("s").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn hogging_memory_hits_the_limit() {
    let f = fixture().await;
    let out = f.call("hog", "hog", json!({})).await;
    assert!(out.is_error, "{out:?}");
    assert!(
        out.content
            .contains("plugin hostile: ran out of memory (limit 32 MiB)"),
        "{out:?}"
    );
    f.assert_still_works("s").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_panic_is_a_trap() {
    let f = fixture().await;
    let out = f.call("panic", "panic", json!({})).await;
    assert!(out.is_error, "{out:?}");
    assert!(
        out.content
            .starts_with("plugin hostile trapped during panic: "),
        "{out:?}"
    );
    // The guest's stderr went to the plugin's log, not the terminal.
    let lines = f.plugin.log().lines();
    assert!(
        lines
            .iter()
            .any(|l| l.source == LogSource::Stderr && l.message.contains("panicked")),
        "{lines:#?}"
    );
    f.assert_still_works("s").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn invalid_json_output_is_reported() {
    let f = fixture().await;
    let out = f.call("bad", "bad_json", json!({})).await;
    assert!(out.is_error, "{out:?}");
    assert!(
        out.content
            .starts_with("plugin hostile: bad_json returned invalid JSON"),
        "{out:?}"
    );
    f.assert_still_works("s").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn exec_is_denied_without_a_grant() {
    let f = fixture().await;
    let out = f.call("s", "exec", json!({ "program": "echo" })).await;
    assert_eq!(denied_message(&out), "hostile was not granted exec");
    f.assert_still_works("s").await;
    // A tool error is not a plugin failure.
    assert!(!f.tools.is_disabled("hostile", "s"));
}

#[tokio::test(flavor = "multi_thread")]
async fn exec_runs_when_granted() {
    let f = fixture_with(|m| with_capability(m, "exec = true"), None).await;
    let out = f.call("s", "exec", json!({ "program": "pwd" })).await;
    assert!(succeeded(&out), "{out:?}");
    let v = probe(&out);
    assert_eq!(v["status"], json!(0), "{out:?}");
    assert_eq!(
        v["stdout"],
        json!(format!("{}\n", f.cwd.display())),
        "{out:?}"
    );
    // The process inherits only the harmless basics (PATH, HOME, LANG…):
    // nothing else of the host's environment, such as API keys.
    let out = f.call("s", "exec", json!({ "program": "env" })).await;
    let stdout = probe(&out)["stdout"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let names: Vec<&str> = stdout.lines().filter_map(|l| l.split('=').next()).collect();
    assert!(names.contains(&"PATH"), "{out:?}");
    for name in &names {
        assert!(
            talaria_exec::PASSED_ENV.contains(name),
            "{name} leaked: {out:?}"
        );
    }
    // A dangerous command needs approval; with nobody to ask it is denied.
    let out = f
        .call(
            "s",
            "exec",
            json!({ "program": "sh", "args": ["-c", "rm -rf ./build"] }),
        )
        .await;
    assert_eq!(probe(&out)["error"]["kind"], json!("denied"), "{out:?}");
}

async fn config_of(f: &Fixture, key: &str) -> Outcome {
    f.call("s", "config", json!({ "name": key })).await
}

#[tokio::test(flavor = "multi_thread")]
async fn config_and_environment_follow_the_grants() {
    let name = "CARGO_MANIFEST_DIR";
    let value = env!("CARGO_MANIFEST_DIR");
    let greeting = "hello from the manifest";

    // As shipped: [config] is readable, the environment is not.
    let f = fixture().await;
    let out = config_of(&f, "greeting").await;
    assert!(succeeded(&out), "{out:?}");
    assert_eq!(probe(&out)["value"], json!(greeting));
    for undeclared in ["PATH", "HOME", name] {
        let out = config_of(&f, undeclared).await;
        assert!(succeeded(&out), "{out:?}");
        assert_eq!(
            probe(&out)["value"],
            json!(null),
            "{undeclared} leaked: {out:?}"
        );
    }

    // Requested and granted: readable, through config.get and the WASI environment.
    let edit = |m: String| with_capability(m, &format!("env = [\"{name}\"]"));
    let f = fixture_with(edit, None).await;
    let out = config_of(&f, name).await;
    assert!(succeeded(&out), "{out:?}");
    assert_eq!(probe(&out)["value"], json!(value));
    let out = f.call("s", "env_vars", json!({})).await;
    assert_eq!(probe(&out)["vars"], json!({ name: value }), "{out:?}");

    // Requested but not granted: denied.
    let mut grants = Grants::none();
    grants
        .filesystem
        .insert("$CWD".into(), talaria_plugin_host::Access::ReadOnly);
    let f = fixture_with(edit, Some(grants)).await;
    let out = config_of(&f, name).await;
    assert_eq!(
        denied_message(&out),
        format!("hostile was not granted env {name}")
    );
    assert!(!out.content.contains(value), "{out:?}");
    let out = config_of(&f, "greeting").await;
    assert_eq!(probe(&out)["value"], json!(greeting));
}

#[tokio::test(flavor = "multi_thread")]
async fn kv_follows_the_grant() {
    let f = fixture().await;
    let out = f.call("s", "kv_roundtrip", json!({})).await;
    assert_eq!(denied_message(&out), "hostile was not granted kv");

    let f = fixture_with(|m| with_capability(m, "kv = true"), None).await;
    let out = f.call("s", "kv_roundtrip", json!({})).await;
    assert!(succeeded(&out), "{out:?}");
    assert_eq!(probe(&out)["value"], json!("roundtrip"));
    let store = f.root.join("host/data/hostile/kv/default");
    assert_eq!(
        std::fs::read_dir(&store).unwrap().count(),
        1,
        "one file per key in {}",
        store.display()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn three_failures_disable_the_plugin_for_the_session() {
    let f = fixture().await;
    // Ordinary tool errors (here: invalid arguments) do not count.
    for _ in 0..4 {
        let out = f
            .call("session-a", "read_file_at", json!({ "wrong": 1 }))
            .await;
        assert!(out.is_error, "{out:?}");
        assert!(out.content.starts_with("invalid arguments: "), "{out:?}");
    }
    f.assert_still_works("session-a").await;

    for i in 0..3 {
        let out = f.call("session-a", "panic", json!({})).await;
        assert!(out.content.contains("trapped"), "failure {i}: {out:?}");
    }
    assert!(f.tools.is_disabled("hostile", "session-a"));
    let out = f.read("session-a", "inside.txt").await;
    assert!(out.is_error);
    assert_eq!(
        out.content,
        "plugin hostile is disabled for this session after 3 failures"
    );
    // Still listed: the tool list (and the prompt prefix) stays stable.
    assert!(f.tools.specs().iter().any(|s| s.name == "read_file_at"));
    assert!(f.plugin.log().contains("disabled for session session-a"));
    // Other sessions are unaffected.
    f.assert_still_works("session-b").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn mixed_failures_count_toward_disabling() {
    let f = fixture().await;
    assert!(f.call("m", "bad_json", json!({})).await.is_error);
    assert!(f.call("m", "hog", json!({})).await.is_error);
    assert!(!f.tools.is_disabled("hostile", "m"));
    f.assert_still_works("m").await;
    assert!(f.call("m", "panic", json!({})).await.is_error);
    assert!(f.tools.is_disabled("hostile", "m"));
}

#[tokio::test(flavor = "multi_thread")]
async fn cancellation_aborts_a_call_promptly() {
    let f = fixture().await;
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        trigger.cancel();
    });
    let start = Instant::now();
    let err = f
        .tools
        .call("spin", "{}", "c1", "cancel", &cancel)
        .await
        .unwrap_err();
    assert!(
        start.elapsed() < Duration::from_millis(1000),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(
        err.to_string(),
        "plugin hostile: call to spin was cancelled"
    );
    assert!(!err.is_plugin_failure());
    f.assert_still_works("cancel").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn every_call_gets_its_own_result() {
    let f = fixture().await;
    let calls: Vec<ValidatedCall> = [
        ("1", "read_file_at", json!({ "path": "inside.txt" })),
        ("2", "panic", json!({})),
        ("3", "no_such_tool", json!({})),
        ("4", "read_file_at", json!({ "path": "/etc/passwd" })),
        ("5", "read_file_at", json!({ "path": "inside.txt" })),
    ]
    .into_iter()
    .map(|(id, name, args)| ValidatedCall {
        call: ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: args.to_string(),
        },
        arguments: args,
    })
    .collect();
    let context = ToolContext {
        session_id: "order".into(),
    };
    let mut results = Vec::new();
    for call in &calls {
        results.push(ToolSource::call(&f.tools, call, &context, &CancellationToken::new()).await);
    }
    let ids: Vec<&str> = results.iter().map(|r| r.call_id.as_str()).collect();
    assert_eq!(ids, ["1", "2", "3", "4", "5"]);
    let errors: Vec<bool> = results.iter().map(|r| r.is_error).collect();
    assert_eq!(errors, [false, true, true, false, false]);
    assert!(
        results[3].content.contains("\"ok\":false"),
        "{:?}",
        results[3]
    );
    assert!(results[2].content.contains("unknown tool"));
}

#[tokio::test(flavor = "multi_thread")]
async fn paths_resolve_against_the_canonical_working_directory() {
    // The working directory given through a symlink still works, and the
    // guest sees the canonical path.
    let f = fixture().await;
    let alias = f.root.join("alias");
    std::os::unix::fs::symlink(&f.cwd, &alias).unwrap();
    let tools = PluginTools::new(vec![f.plugin.clone()], &alias).unwrap();
    assert_eq!(tools.cwd(), f.cwd.as_path());
    let out = call(&tools, "s", "read_file_at", json!({ "path": "inside.txt" })).await;
    assert!(succeeded(&out), "{out:?}");
    let absolute = Path::new(&f.cwd).join("inside.txt");
    let out = call(
        &tools,
        "s",
        "read_file_at",
        json!({ "path": absolute.to_str().unwrap() }),
    )
    .await;
    assert!(succeeded(&out), "{out:?}");
}
