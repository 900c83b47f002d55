//! Loading: the compile cache, the API version check, grants, and the tool list.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

// The cache's integrity checks, in this binary rather than one more that links wasmtime.
#[path = "loading/deferred.rs"]
mod deferred;
#[path = "loading/integrity.rs"]
mod integrity;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::common::*;
use talaria_plugin_host::{Grants, LoadError, PluginHost, PluginKind, PluginTools, ToolProviders};

#[tokio::test(flavor = "multi_thread")]
async fn second_load_deserialises_without_compiling() {
    let root = tempfile::tempdir().unwrap();
    let host = host(root.path());
    let first = host.load(&noop_dir(), &Grants::none()).await.unwrap();
    assert!(!first.from_cache());
    assert_eq!(host.cache_stats().compiled, 1);
    assert_eq!(host.cache_stats().cache_hits, 0);

    let cached: Vec<_> = compiled_entries(&root.path().join("cache"))
        .iter()
        .map(|path| path.file_name().unwrap().to_str().unwrap().to_owned())
        .collect();
    assert_eq!(cached.len(), 1, "{cached:?}");
    // The component's digest is remembered, so a later start need not read it.
    assert_eq!(
        std::fs::read_dir(root.path().join("cache/sources"))
            .unwrap()
            .count(),
        1
    );
    // The cache is part of the profile home: private to its user.
    let memo = std::fs::read_dir(root.path().join("cache/sources"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    for file in [root.path().join("cache").join(&cached[0]), memo] {
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(&file).unwrap().permissions(),
        );
        assert_eq!(mode & 0o777, 0o600, "{}", file.display());
    }
    let name = &cached[0];
    assert!(name.ends_with(".cwasm"), "{name}");
    let (digest, engine) = name.trim_end_matches(".cwasm").split_once('-').unwrap();
    assert_eq!(digest.len(), 64, "{name}");
    assert_eq!(engine.len(), 16, "{name}");

    let second = host.load(&noop_dir(), &Grants::none()).await.unwrap();
    assert!(second.from_cache());
    assert_eq!(host.cache_stats().compiled, 1, "the second load compiled");
    assert_eq!(host.cache_stats().cache_hits, 1);

    // Another host (another process, in effect) over the same cache compiles nothing.
    let other = PluginHost::new(talaria_plugin_host::HostOptions::new(
        root.path().join("cache"),
        root.path().join("data2"),
    ))
    .unwrap();
    let third = other.load(&noop_dir(), &Grants::none()).await.unwrap();
    assert!(third.from_cache());
    assert_eq!(other.cache_stats().compiled, 0);

    // And the cached component works.
    integrity::assert_is_noop(third, root.path()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_damaged_cache_entry_is_recompiled() {
    let root = tempfile::tempdir().unwrap();
    let host = host(root.path());
    host.load(&noop_dir(), &Grants::none()).await.unwrap();
    let entry = compiled_entries(&root.path().join("cache")).remove(0);
    std::fs::write(&entry, b"not a compiled component").unwrap();
    let again = host.load(&noop_dir(), &Grants::none()).await.unwrap();
    assert!(!again.from_cache());
    assert_eq!(host.cache_stats().compiled, 2);
    let third = host.load(&noop_dir(), &Grants::none()).await.unwrap();
    assert!(third.from_cache());
}

#[tokio::test(flavor = "multi_thread")]
async fn tools_are_listed_with_parsed_schemas() {
    let root = tempfile::tempdir().unwrap();
    let host = host(root.path());
    let noop = host.load(&noop_dir(), &Grants::none()).await.unwrap();
    assert_eq!(noop.name(), "noop");
    assert_eq!(noop.kinds(), &[PluginKind::Tools]);
    assert_eq!(noop.api_version(), &talaria_plugin_host::HOST_API);
    let tools = PluginTools::new(vec![noop], root.path()).unwrap();
    let specs = tools.specs();
    assert_eq!(specs.len(), 1);
    assert_eq!(specs[0].name, "noop");
    assert!(specs[0].parameters.is_object());
    assert!(tools.flags("noop").unwrap().read_only);
}

/// The `greeting` the `config` tool of the dispatcher's hostile plugin reads.
async fn greeting_served(tools: &PluginTools) -> serde_json::Value {
    let out = call(
        tools,
        "s",
        "config",
        serde_json::json!({ "name": "greeting" }),
    )
    .await;
    assert!(!out.is_error, "{out:?}");
    let value: serde_json::Value = serde_json::from_str(&out.content).unwrap();
    value["value"].clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_name_two_plugins_define_is_served_by_one_plugin_and_the_choice_is_the_users() {
    let root = tempfile::tempdir().unwrap();
    let host = host(root.path());
    let greeting = |value: &str| BTreeMap::from([("greeting".to_owned(), value.to_owned())]);
    let first = host
        .load_configured(&hostile_dir(), &Grants::none(), &greeting("one"))
        .await
        .unwrap();
    let copy = variant(&hostile_dir(), &root.path().join("two"), |m| {
        m.replace("name = \"hostile\"", "name = \"hostile-two\"")
    });
    let second = host
        .load_configured(&copy, &Grants::none(), &greeting("two"))
        .await
        .unwrap();
    let names: Vec<String> = first.tools().iter().map(|t| t.spec.name.clone()).collect();
    assert!(names.len() > 2 && names.contains(&"config".to_owned()));

    // Unchosen: the plugin loaded first serves every name both define; each
    // clash is explained with the setting that changes it.
    let tools = PluginTools::new(vec![first.clone(), second.clone()], root.path()).unwrap();
    let served: Vec<String> = tools.specs().into_iter().map(|s| s.name).collect();
    assert_eq!(served, names, "each name once, in load order");
    assert_eq!(greeting_served(&tools).await, "one");
    assert_eq!(tools.clashes().len(), names.len());
    let config = tools.clashes().iter().find(|c| c.tool == "config").unwrap();
    assert_eq!(
        (config.serving.as_str(), config.unused.as_str()),
        ("hostile", "hostile-two")
    );
    assert!(!config.chosen);
    assert!(
        config
            .to_string()
            .contains("set tools.providers: {config: hostile-two}"),
        "{config}"
    );

    // Chosen: that one name goes to the chosen plugin, the others stay with
    // the first; a choice nothing meets is reported, not fatal.
    let providers = ToolProviders::from([
        ("config".to_owned(), "hostile-two".to_owned()),
        ("nowhere".to_owned(), "hostile".to_owned()),
        (names[0].clone(), "absent".to_owned()),
    ]);
    let tools = PluginTools::choosing(vec![first, second], root.path(), &providers).unwrap();
    assert_eq!(tools.specs().len(), names.len());
    assert_eq!(greeting_served(&tools).await, "two");
    let clash = |tool: &str| {
        tools
            .clashes()
            .iter()
            .find(|c| c.tool == tool)
            .unwrap()
            .clone()
    };
    assert_eq!(clash("config").serving, "hostile-two");
    assert!(clash("config").chosen);
    assert_eq!(clash(&names[0]).serving, "hostile");
    assert!(!clash(&names[0]).chosen);
    let unmet = tools.unmet_choices();
    assert_eq!(unmet.len(), 2, "{unmet:?}");
    assert!(
        unmet
            .iter()
            .any(|u| u.contains("no plugin defines tool 'nowhere'")),
        "{unmet:?}"
    );
    assert!(
        unmet.iter().any(|u| u.contains(&format!(
            "plugin absent does not define tool '{}'",
            names[0]
        ))),
        "{unmet:?}"
    );
}

/// The compiled components in a cache directory.
fn compiled_entries(cache: &Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(cache)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "cwasm"))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_component_file_changed_in_place_is_read_again() {
    let root = tempfile::tempdir().unwrap();
    let host = host(root.path());
    let dir = variant(&noop_dir(), &root.path().join("plugin"), |m| m);
    host.load(&dir, &Grants::none()).await.unwrap();
    // Same path, other content: the remembered digest no longer applies, so the old compiled
    // form must not be used (this content exports another API line and is refused).
    export_api_0_2(&dir);
    let err = host.load(&dir, &Grants::none()).await.unwrap_err();
    assert!(matches!(err, LoadError::ApiVersion { .. }), "{err:?}");
    assert_eq!(host.cache_stats().cache_hits, 0);
    // A damaged memo is ignored: the file is hashed again.
    host.load(&noop_dir(), &Grants::none()).await.unwrap();
    for memo in std::fs::read_dir(root.path().join("cache/sources")).unwrap() {
        std::fs::write(memo.unwrap().path(), "garbage").unwrap();
    }
    let again = host.load(&noop_dir(), &Grants::none()).await.unwrap();
    assert!(again.from_cache());
}

/// Rewrites the plugin in `dir` in place to export the tool world of API line 0.2.
fn export_api_0_2(dir: &Path) {
    let wasm_path = dir.join("plugin.wasm");
    let mut wasm = std::fs::read(&wasm_path).unwrap();
    let patched = patch_bytes(
        &mut wasm,
        "talaria:plugin/tool-provider@0.1.3",
        "talaria:plugin/tool-provider@0.2.0",
    );
    assert!(patched > 0);
    std::fs::write(&wasm_path, &wasm).unwrap();
}

/// Replaces every occurrence of `from` by `to` (same length) in the bytes.
fn patch_bytes(bytes: &mut [u8], from: &str, to: &str) -> usize {
    assert_eq!(from.len(), to.len());
    let (from, to) = (from.as_bytes(), to.as_bytes());
    let mut count = 0;
    let mut i = 0;
    while i + from.len() <= bytes.len() {
        if &bytes[i..i + from.len()] == from {
            bytes[i..i + from.len()].copy_from_slice(to);
            count += 1;
            i += from.len();
        } else {
            i += 1;
        }
    }
    count
}

#[tokio::test(flavor = "multi_thread")]
async fn a_manifest_for_another_api_line_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let host = host(root.path());
    for api in ["0.2.0", "1.0.0"] {
        let dir = variant(&noop_dir(), &root.path().join(api), |m| {
            m.replace("api = \"0.1.3\"", &format!("api = \"{api}\""))
        });
        let err = host.load(&dir, &Grants::none()).await.unwrap_err();
        assert!(matches!(err, LoadError::ApiVersion { .. }), "{err:?}");
        let text = err.to_string();
        assert!(
            text.contains(&format!("talaria:plugin@{api}"))
                && text.contains("talaria:plugin@0.1.3"),
            "{text}"
        );
    }
    // Same line, newer patch: fine.
    let dir = variant(&noop_dir(), &root.path().join("patch"), |m| {
        m.replace("api = \"0.1.3\"", "api = \"0.1.9\"")
    });
    host.load(&dir, &Grants::none()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_component_exporting_another_api_line_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let host = host(root.path());
    let dir = variant(&noop_dir(), &root.path().join("v2"), |m| m);
    export_api_0_2(&dir);
    let err = host.load(&dir, &Grants::none()).await.unwrap_err();
    assert!(matches!(err, LoadError::ApiVersion { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains("talaria:plugin/tool-provider@0.2.0")
            && text.contains("talaria:plugin@0.1.3"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_component_built_against_the_previous_wit_version_loads_and_runs() {
    // `legacy` is built from wit/versions/0.1.0 (the frozen first release);
    // this host implements 0.1.3.
    assert_eq!(talaria_plugin_host::HOST_API, semver::Version::new(0, 1, 3));
    let root = tempfile::tempdir().unwrap();
    let host = host(root.path());
    let plugin = load_all(&host, &plugin_dir("test/legacy")).await;
    assert_eq!(*plugin.api_version(), semver::Version::new(0, 1, 0));
    assert_eq!(plugin.tools()[0].spec.name, "legacy_echo");
    let tools = PluginTools::new(vec![plugin.clone()], root.path()).unwrap();
    let out = call(
        &tools,
        "s",
        "legacy_echo",
        serde_json::json!({"text": "hi"}),
    )
    .await;
    assert!(!out.is_error, "{out:?}");
    assert_eq!(out.content, r#"{"echo":{"text":"hi"}}"#);
    assert!(
        plugin.log().contains("legacy_echo called"),
        "the 0.1.0 log import works"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_manifest_promising_other_kinds_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let host = host(root.path());
    let dir = variant(&noop_dir(), &root.path().join("kinds"), |m| {
        m.replace(
            "provides = [\"tools\"]",
            "provides = [\"tools\", \"memory\"]",
        )
    });
    let err = host.load(&dir, &Grants::none()).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("does not export talaria:plugin/memory-provider"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn missing_files_and_grants_are_load_errors() {
    let root = tempfile::tempdir().unwrap();
    let host = host(root.path());
    let err = host
        .load(&root.path().join("nowhere"), &Grants::none())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("plugin.toml"), "{err}");

    let dir = variant(&noop_dir(), &root.path().join("nowasm"), |m| m);
    std::fs::remove_file(dir.join("plugin.wasm")).unwrap();
    let err = host.load(&dir, &Grants::none()).await.unwrap_err();
    assert!(err.to_string().contains("plugin.wasm"), "{err}");

    let dir = variant(&noop_dir(), &root.path().join("garbage"), |m| m);
    std::fs::write(dir.join("plugin.wasm"), b"\0asm garbage").unwrap();
    let err = host.load(&dir, &Grants::none()).await.unwrap_err();
    assert!(matches!(err, LoadError::Compile { .. }), "{err:?}");

    let dir = variant(&noop_dir(), &root.path().join("absent-grant"), |m| {
        with_capability(m, "filesystem = [{ path = \"/definitely/not/here\" }]")
    });
    let manifest = talaria_plugin_host::Manifest::load(&dir.join("plugin.toml")).unwrap();
    let err = host
        .load(&dir, &Grants::all_requested(&manifest))
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("filesystem grant /definitely/not/here"),
        "{err}"
    );
    // Not granted: not checked, not preopened.
    host.load(&dir, &Grants::none()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn plugin_data_is_created_on_demand() {
    let root = tempfile::tempdir().unwrap();
    let host = host(root.path());
    let dir = variant(&noop_dir(), &root.path().join("data"), |m| {
        with_capability(
            m,
            "filesystem = [{ path = \"$PLUGIN_DATA/state\", access = \"read-write\" }]",
        )
    });
    let manifest = talaria_plugin_host::Manifest::load(&dir.join("plugin.toml")).unwrap();
    let plugin = host
        .load(&dir, &Grants::all_requested(&manifest))
        .await
        .unwrap();
    assert!(Path::new(&root.path().join("data/noop/state")).is_dir());
    assert_eq!(plugin.capabilities().filesystem.len(), 1);
}

/// A released WIT version is frozen: while `wit/plugin` is at the newest
/// released version, it is that release, file for file (an addition must
/// move it to the next version first).
#[test]
fn the_wit_in_development_matches_its_frozen_release_until_it_moves_on() {
    let wit = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../wit");
    let host_api = talaria_plugin_host::HOST_API.to_string();
    let released = wit.join("versions").join(&host_api);
    if !released.is_dir() {
        return; // in development: not released yet
    }
    let files = |root: &Path| -> Vec<(PathBuf, String)> {
        let mut found = Vec::new();
        let mut dirs = vec![root.to_path_buf()];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                } else {
                    let text = std::fs::read_to_string(&path).unwrap();
                    found.push((path.strip_prefix(root).unwrap().to_path_buf(), text));
                }
            }
        }
        found.sort();
        found
    };
    assert_eq!(
        files(&wit.join("plugin")),
        files(&released),
        "wit/plugin differs from the frozen {host_api}: move it to the next version"
    );
}
