//! Native plugins (the `native-probe` shared library): loaded only with the
//! `trust-native` grant, the C ABI's tools called in-process, and a broken
//! library's results turned into tool errors.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::{call, host, probe_dir, tool_names};
use serde_json::{Value, json};
use talaria_plugin_host::{Grants, LoadError, Manifest, PluginTools, Runtime};

#[tokio::test(flavor = "multi_thread")]
async fn a_native_plugin_loads_only_when_trusted() {
    let root = tempfile::tempdir().unwrap();
    let host = host(root.path());
    let dir = probe_dir("test/native-probe");

    let error = host.load(&dir, &Grants::none()).await.unwrap_err();
    assert!(matches!(error, LoadError::NotTrusted { .. }), "{error:?}");
    assert!(
        error
            .to_string()
            .contains("`talaria plugin grant native-probe trust-native`"),
        "{error}"
    );

    let manifest = Manifest::load(&dir.join("plugin.toml")).unwrap();
    let trusted = Grants {
        trust_native: true,
        ..Grants::none()
    };
    assert!(
        Grants::all_requested(&manifest).trust_native,
        "the manifest requests it"
    );
    let plugin = host.load(&dir, &trusted).await.unwrap();
    assert_eq!(plugin.runtime(), Runtime::Native);
    assert_eq!(
        tool_names(&plugin),
        [
            "native_echo",
            "native_fail",
            "native_null",
            "native_garbage"
        ]
    );
    assert!(plugin.tools()[0].flags.read_only);

    let cwd = tempfile::tempdir().unwrap();
    let tools = PluginTools::new(vec![plugin.clone()], cwd.path()).unwrap();
    let out = call(
        &tools,
        "s1",
        "native_echo",
        json!({ "text": "hi \"there\"" }),
    )
    .await;
    assert!(!out.is_error, "{out:?}");
    let value: Value = serde_json::from_str(&out.content).unwrap();
    assert_eq!(value["echo"], "hi \"there\"");
    assert_eq!(
        value["pid"],
        std::process::id(),
        "native code runs in the host's process"
    );

    let out = call(&tools, "s1", "native_fail", json!({})).await;
    assert_eq!(
        (out.is_error, out.content.as_str()),
        (true, "native probe refused: it always does")
    );
    let out = call(&tools, "s1", "native_null", json!({})).await;
    assert!(out.is_error);
    assert_eq!(
        out.content,
        "plugin native-probe trapped during native_null: talaria_call returned null"
    );
    let out = call(&tools, "s1", "native_garbage", json!({})).await;
    assert!(out.is_error);
    assert!(
        out.content
            .starts_with("plugin native-probe: native_garbage returned invalid JSON"),
        "{}",
        out.content
    );
    assert!(plugin.log().contains("talaria_call returned null"));
    call(&tools, "s1", "native_null", json!({})).await;
    let out = call(&tools, "s1", "native_echo", json!({ "text": "x" })).await;
    assert!(
        out.content
            .contains("disabled for this session after 3 failures"),
        "a broken library is disabled like a trapping component: {}",
        out.content
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_missing_library_is_a_load_error() {
    let root = tempfile::tempdir().unwrap();
    let host = host(root.path());
    let dir = root.path().join("ghost");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(
        probe_dir("test/native-probe").join("plugin.toml"),
        dir.join("plugin.toml"),
    )
    .unwrap();
    let trusted = Grants {
        trust_native: true,
        ..Grants::none()
    };
    let error = host.load(&dir, &trusted).await.unwrap_err();
    assert!(matches!(error, LoadError::Native { .. }), "{error:?}");
    assert!(
        error.to_string().contains("libtalaria_native_probe.so"),
        "{error}"
    );
}
