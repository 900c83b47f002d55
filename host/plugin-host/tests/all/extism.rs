//! Extism plugins (the `extism-probe` module, built with the Rust Extism PDK):
//! the tool ABI, the same grants mapped onto Extism's manifest (HTTP hosts,
//! directories, memory, time, config), and failures as tool results.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::common::{cached_host, call, load_all, probe_dir, probe_variant_of, tool_names};
use serde_json::{Value, json};
use talaria_plugin_host::{Grants, LoadError, Manifest, PluginTools, Runtime};
use tokio_util::sync::CancellationToken;

fn probe() -> PathBuf {
    probe_dir("test/extism-probe")
}

fn json_of(content: &str) -> Value {
    serde_json::from_str(content).unwrap_or_else(|e| panic!("{content}: {e}"))
}

/// A one-request-at-a-time HTTP server on 127.0.0.1 answering `hello`; counts requests.
fn http_server() -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let hits = Arc::new(AtomicUsize::new(0));
    let counted = hits.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            counted.fetch_add(1, Ordering::SeqCst);
            let _ = stream.write_all(
                b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\nconnection: close\r\n\r\nhello",
            );
        }
    });
    (port, hits)
}

#[tokio::test(flavor = "multi_thread")]
async fn tools_are_described_and_called_with_config_and_context() {
    let root = tempfile::tempdir().unwrap();
    let host = cached_host(root.path());
    let plugin = load_all(&host, &probe()).await;
    assert_eq!(plugin.runtime(), Runtime::Extism);
    assert_eq!(
        tool_names(&plugin),
        [
            "probe_echo",
            "probe_fail",
            "probe_fetch",
            "probe_panic",
            "probe_spin",
            "probe_hog",
            "probe_read",
            "probe_write"
        ]
    );
    assert!(plugin.tools()[0].flags.read_only);
    assert_eq!(
        plugin.tools()[6].flags.path_argument.as_deref(),
        Some("path")
    );
    assert_eq!(
        plugin.tools()[0].spec.parameters["required"],
        json!(["text"])
    );

    let cwd = tempfile::tempdir().unwrap();
    let tools = PluginTools::new(vec![plugin], cwd.path()).unwrap();
    let out = call(&tools, "s1", "probe_echo", json!({ "text": "hi" })).await;
    assert!(!out.is_error, "{out:?}");
    let canonical = cwd.path().canonicalize().unwrap();
    assert_eq!(
        json_of(&out.content),
        json!({
            "echo": "hi",
            "greeting": "hello from the manifest",
            "session": "s1",
            "cwd": canonical.to_str().unwrap(),
        })
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn errors_traps_timeouts_and_memory_become_tool_results() {
    let root = tempfile::tempdir().unwrap();
    let host = cached_host(root.path());
    let dir = probe_variant_of(&probe(), &root.path().join("p"), |m| {
        m.replace("timeout-ms = 2000", "timeout-ms = 300")
    });
    let plugin = load_all(&host, &dir).await;
    let cwd = tempfile::tempdir().unwrap();
    let tools = PluginTools::new(vec![plugin.clone()], cwd.path()).unwrap();

    let out = call(&tools, "s1", "probe_fail", json!({})).await;
    assert!(out.is_error);
    assert_eq!(out.content, "probe refused: it always does");

    let started = Instant::now();
    let failures = [
        (
            "probe_panic",
            json!({}),
            "plugin extism-probe trapped during probe_panic: ",
        ),
        (
            "probe_spin",
            json!({}),
            "plugin extism-probe: call to probe_spin timed out after 300 ms",
        ),
        (
            "probe_hog",
            json!({ "mb": 64 }),
            "plugin extism-probe: ran out of memory (limit 32 MiB) during probe_hog",
        ),
    ];
    for (i, (tool, args, expected)) in failures.into_iter().enumerate() {
        let session = format!("f{i}");
        let out = call(&tools, &session, tool, args).await;
        assert!(out.is_error, "{tool}: {out:?}");
        assert!(out.content.starts_with(expected), "{tool}: {}", out.content);
        let after = call(&tools, &session, "probe_echo", json!({ "text": "still" })).await;
        assert!(!after.is_error, "the plugin works after {tool}: {after:?}");
    }
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(plugin.log().contains("timed out after 300 ms"));

    for _ in 0..3 {
        call(&tools, "s2", "probe_panic", json!({})).await;
    }
    let out = call(&tools, "s2", "probe_echo", json!({ "text": "x" })).await;
    assert_eq!(
        out.content,
        "plugin extism-probe is disabled for this session after 3 failures"
    );
    assert!(!tools.is_disabled("extism-probe", "s1"));
}

/// A module's tool list is remembered (sealed with the cache's secret), so
/// a later start compiles nothing at load; calls compile on first use. A
/// tampered list is not trusted: the module is described again.
#[tokio::test(flavor = "multi_thread")]
async fn a_remembered_tool_list_spares_compiling_at_load() {
    let root = tempfile::tempdir().unwrap();
    let host = || {
        talaria_plugin_host::PluginHost::new(talaria_plugin_host::HostOptions::new(
            root.path().join("cache"),
            root.path().join("data"),
        ))
        .unwrap()
    };
    let first = load_all(&host(), &probe()).await;
    assert!(!first.from_cache(), "the first load compiles and describes");

    let again = load_all(&host(), &probe()).await;
    assert!(again.from_cache(), "the tool list was remembered");
    assert_eq!(tool_names(&again), tool_names(&first));
    assert!(again.tools()[0].flags.read_only);
    let cwd = tempfile::tempdir().unwrap();
    let tools = PluginTools::new(vec![again], cwd.path()).unwrap();
    let out = call(&tools, "s1", "probe_echo", json!({ "text": "hi" })).await;
    assert!(!out.is_error, "{out:?}");
    assert_eq!(json_of(&out.content)["echo"], "hi");

    let described = root.path().join("cache/described");
    let files: Vec<_> = std::fs::read_dir(&described)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let text = std::fs::read(&files[0]).unwrap();
    let forged = String::from_utf8_lossy(&text).replacen("probe_echo", "probe_ekho", 1);
    std::fs::write(&files[0], forged.as_bytes()).unwrap();
    let after_tampering = load_all(&host(), &probe()).await;
    assert!(!after_tampering.from_cache(), "a forged list is not used");
    assert_eq!(tool_names(&after_tampering), tool_names(&first));
}

/// A cancelled call returns at once, and its plugin is stopped whether the
/// cancel lands while the plugin is being instantiated or while it runs: the
/// log records it.
#[tokio::test(flavor = "multi_thread")]
async fn a_cancelled_call_returns_at_once_and_stops_its_plugin() {
    let root = tempfile::tempdir().unwrap();
    let host = cached_host(root.path());
    let plugin = load_all(&host, &probe()).await;
    let cwd = tempfile::tempdir().unwrap();
    let tools = PluginTools::new(vec![plugin.clone()], cwd.path()).unwrap();
    for (round, delay) in [Duration::from_millis(1), Duration::from_millis(100)]
        .into_iter()
        .enumerate()
    {
        let cancel = CancellationToken::new();
        let trigger = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            trigger.cancel();
        });
        let started = Instant::now();
        let result = tools.call("probe_spin", "{}", "c1", "s1", &cancel).await;
        assert!(
            matches!(
                result,
                Err(talaria_plugin_host::CallError::Cancelled { .. })
            ),
            "{result:?}"
        );
        assert!(started.elapsed() < Duration::from_millis(1500));
        let stops = || {
            plugin
                .log()
                .lines()
                .iter()
                .filter(|line| {
                    line.message
                        .starts_with("cancelled probe_spin: stopped after")
                })
                .count()
        };
        let waited = Instant::now();
        while stops() <= round && waited.elapsed() < Duration::from_secs(60) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(
            stops(),
            round + 1,
            "after a {delay:?} delay: {:?}",
            plugin.log().lines()
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn http_reaches_granted_hosts_only() {
    let (port, hits) = http_server();
    let root = tempfile::tempdir().unwrap();
    let host = cached_host(root.path());
    let cwd = tempfile::tempdir().unwrap();
    let granted = load_all(&host, &probe()).await;
    let granted = PluginTools::new(vec![granted], cwd.path()).unwrap();

    let out = call(
        &granted,
        "s",
        "probe_fetch",
        json!({ "url": format!("http://127.0.0.1:{port}/") }),
    )
    .await;
    assert!(!out.is_error, "{out:?}");
    assert_eq!(
        json_of(&out.content),
        json!({ "status": 200, "body": "hello" })
    );
    assert_eq!(hits.load(Ordering::SeqCst), 1);

    // The grant is for 127.0.0.1 by address; `localhost` is another host.
    let out = call(
        &granted,
        "s",
        "probe_fetch",
        json!({ "url": format!("http://localhost:{port}/") }),
    )
    .await;
    assert!(out.is_error, "{out:?}");
    assert!(out.content.contains("is not allowed"), "{}", out.content);

    // Requested but not granted: nothing is reachable.
    let denied = host.load(&probe(), &Grants::none()).await.unwrap();
    assert!(denied.capabilities().network.is_empty());
    let denied = PluginTools::new(vec![denied], cwd.path()).unwrap();
    let out = call(
        &denied,
        "s",
        "probe_fetch",
        json!({ "url": format!("http://127.0.0.1:{port}/") }),
    )
    .await;
    assert!(out.is_error, "{out:?}");
    assert!(out.content.contains("is not allowed"), "{}", out.content);
    assert_eq!(hits.load(Ordering::SeqCst), 1, "no request left the plugin");
}

/// The probe built for wasm32-wasip1 (WASI files) with `$CWD` granted as `access`.
async fn wasi_tools(
    root: &Path,
    cwd: &Path,
    grants: impl FnOnce(&Manifest) -> Grants,
) -> PluginTools {
    let host = cached_host(root);
    let dir = probe_dir("test/extism-probe-wasi");
    let manifest = Manifest::load(&dir.join("plugin.toml")).unwrap();
    let plugin = host.load(&dir, &grants(&manifest)).await.unwrap();
    PluginTools::new(vec![plugin], cwd).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn directories_follow_the_filesystem_grants() {
    let root = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    std::fs::write(cwd.path().join("a.txt"), "inside").unwrap();

    let rw = wasi_tools(root.path(), cwd.path(), Grants::all_requested).await;
    let out = call(&rw, "s", "probe_read", json!({ "path": "a.txt" })).await;
    assert_eq!((out.is_error, out.content.as_str()), (false, "inside"));
    let absolute = cwd.path().canonicalize().unwrap().join("b.txt");
    let out = call(
        &rw,
        "s",
        "probe_write",
        json!({ "path": absolute.to_str().unwrap(), "content": "written" }),
    )
    .await;
    assert!(!out.is_error, "{out:?}");
    assert_eq!(std::fs::read_to_string(&absolute).unwrap(), "written");
    let out = call(&rw, "s", "probe_read", json!({ "path": "/etc/passwd" })).await;
    assert!(out.is_error && !out.content.contains("root:"), "{out:?}");

    let ro = wasi_tools(root.path(), cwd.path(), |m| {
        Grants::all_requested(m).read_only()
    })
    .await;
    let out = call(&ro, "s", "probe_read", json!({ "path": "a.txt" })).await;
    assert_eq!((out.is_error, out.content.as_str()), (false, "inside"));
    let out = call(
        &ro,
        "s",
        "probe_write",
        json!({ "path": "a.txt", "content": "x" }),
    )
    .await;
    assert!(out.is_error, "{out:?}");
    assert_eq!(
        std::fs::read_to_string(cwd.path().join("a.txt")).unwrap(),
        "inside"
    );

    let none = wasi_tools(root.path(), cwd.path(), |_| Grants::none()).await;
    let out = call(&none, "s", "probe_read", json!({ "path": "a.txt" })).await;
    assert!(out.is_error, "{out:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_module_without_the_tool_abi_does_not_load() {
    let root = tempfile::tempdir().unwrap();
    let host = cached_host(root.path());
    let dir = root.path().join("bare");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("plugin.toml"),
        "name = \"bare\"\nversion = \"0.1.0\"\napi = \"0.1.1\"\nruntime = \"extism\"\nprovides = [\"tools\"]\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("plugin.wasm"),
        "(module (func (export \"describe\")))",
    )
    .unwrap();
    let error = host.load(&dir, &Grants::none()).await.unwrap_err();
    assert!(matches!(error, LoadError::Extism { .. }), "{error:?}");
    assert!(
        error.to_string().contains("does not export `call`"),
        "{error}"
    );

    std::fs::write(dir.join("plugin.wasm"), b"\0asm\x0d\0\x01\0").unwrap();
    let error = host.load(&dir, &Grants::none()).await.unwrap_err();
    assert!(matches!(error, LoadError::Extism { .. }), "{error:?}");
}
