//! Code read at its first use (`HostOptions::defer_code`): a later load lists a component's
//! tools from what it listed before, sealed in the cache, without reading its code; the code
//! is read, verified and prepared when a tool is first called, and a tampered compiled file is
//! still never run.
use std::path::Path;

use crate::common::*;
use talaria_plugin_host::{Grants, HostOptions, PluginHost, PluginTools};

fn deferring_host(root: &Path, data: &str) -> PluginHost {
    PluginHost::new(HostOptions::new(root.join("cache"), root.join(data)).deferring_code(true))
        .unwrap()
}

/// Loads `dir` once with nothing granted (compiling it and remembering what it lists).
async fn list_once(root: &Path, dir: &Path) {
    deferring_host(root, "data1")
        .load(dir, &Grants::none())
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_listed_component_is_read_at_its_first_call() {
    let root = tempfile::tempdir().unwrap();
    let noop = variant(&noop_dir(), &root.path().join("noop"), |m| m);
    let first = deferring_host(root.path(), "data1");
    let eager = first.load(&noop, &Grants::none()).await.unwrap();
    assert!(eager.code_loaded(), "the first load lists in an instance");
    assert_eq!(first.cache_stats().deferred, 0);

    let second = deferring_host(root.path(), "data2");
    let listed = second.load(&noop, &Grants::none()).await.unwrap();
    assert_eq!(second.cache_stats().deferred, 1);
    assert!(!listed.code_loaded(), "the code was read at load");
    assert_eq!(tool_names(&listed), ["noop"]);
    assert_eq!(listed.tools(), eager.tools());
    assert!(listed.from_cache());

    let tools = PluginTools::new(vec![listed.clone()], root.path()).unwrap();
    let out = call(&tools, "s", "noop", serde_json::json!({})).await;
    assert_eq!((out.content.as_str(), out.is_error), ("{}", false));
    assert!(listed.code_loaded());
    assert_eq!(second.cache_stats().compiled, 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn other_settings_or_grants_are_listed_again() {
    let root = tempfile::tempdir().unwrap();
    let fs = variant(&fs_dir(), &root.path().join("fs"), |m| m);
    list_once(root.path(), &fs).await;
    let manifest = talaria_plugin_host::Manifest::load(&fs.join("plugin.toml")).unwrap();
    let granted = deferring_host(root.path(), "data2");
    let loaded = granted
        .load(&fs, &Grants::all_requested(&manifest))
        .await
        .unwrap();
    assert_eq!(
        granted.cache_stats().deferred,
        0,
        "a listing under other grants was used"
    );
    assert!(loaded.code_loaded());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tampered_compiled_file_is_refused_at_first_use() {
    let root = tempfile::tempdir().unwrap();
    let noop = variant(&noop_dir(), &root.path().join("noop"), |m| m);
    list_once(root.path(), &noop).await;
    let files = super::compiled_entries(&root.path().join("cache"));
    let [entry] = files.as_slice() else {
        panic!("one compiled file expected: {files:?}");
    };
    let mut bytes = std::fs::read(entry).unwrap();
    let middle = bytes.len() / 2;
    for byte in &mut bytes[middle..middle + 16] {
        *byte ^= 0x5a;
    }
    std::fs::write(entry, &bytes).unwrap();

    let host = deferring_host(root.path(), "data2");
    let listed = host.load(&noop, &Grants::none()).await.unwrap();
    assert!(!listed.code_loaded());
    assert_eq!(host.cache_stats().compiled, 0, "nothing is read at load");
    let tools = PluginTools::new(vec![listed], root.path()).unwrap();
    let out = call(&tools, "s", "noop", serde_json::json!({})).await;
    assert_eq!((out.content.as_str(), out.is_error), ("{}", false));
    assert_eq!(
        host.cache_stats().compiled,
        1,
        "the tampered file was loaded instead of compiled again"
    );
    assert_ne!(
        std::fs::read(entry).unwrap(),
        bytes,
        "the cache was rewritten"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_component_replaced_after_listing_is_not_run_under_the_old_listing() {
    let root = tempfile::tempdir().unwrap();
    let noop = variant(&noop_dir(), &root.path().join("noop"), |m| m);
    list_once(root.path(), &noop).await;
    let host = deferring_host(root.path(), "data2");
    let listed = host.load(&noop, &Grants::none()).await.unwrap();
    assert!(!listed.code_loaded());
    std::fs::copy(hostile_dir().join("plugin.wasm"), noop.join("plugin.wasm")).unwrap();

    let tools = PluginTools::new(vec![listed], root.path()).unwrap();
    let out = call(&tools, "s", "noop", serde_json::json!({})).await;
    assert!(out.is_error, "{out:?}");
    assert!(
        out.content
            .contains("changed since this session listed what it provides"),
        "{}",
        out.content
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_planted_listing_is_not_believed() {
    let root = tempfile::tempdir().unwrap();
    let noop = variant(&noop_dir(), &root.path().join("noop"), |m| m);
    list_once(root.path(), &noop).await;
    let listed_dir = root.path().join("cache/listed");
    for entry in std::fs::read_dir(&listed_dir).unwrap() {
        let path = entry.unwrap().path();
        let sealed = std::fs::read(&path).unwrap();
        let text = String::from_utf8_lossy(&sealed).replace("noop", "evil");
        std::fs::write(&path, text.as_bytes()).unwrap();
    }
    let host = deferring_host(root.path(), "data2");
    let loaded = host.load(&noop, &Grants::none()).await.unwrap();
    assert_eq!(host.cache_stats().deferred, 0);
    assert_eq!(tool_names(&loaded), ["noop"]);
}
