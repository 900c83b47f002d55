//! Every kind loads into its slot: memory providers and 0.1.0 platform
//! adapters (loaded and checked, not called by sessions) next to the other
//! kinds, the sets built over them, and the status of each kind.

use std::path::Path;

use crate::common::*;
use talaria_plugin_host::{
    Grants, KindState, KindStatus, LoadError, LoadedPlugin, PlatformAdapterInfo, PluginKind,
    PluginMemoryProviders, PluginPlatformAdapters, PluginSets,
};

/// A copy of `source` named `name`, its manifest edited further by `edit`.
fn renamed(
    source: &Path,
    root: &Path,
    name: &str,
    edit: impl FnOnce(String) -> String,
) -> std::path::PathBuf {
    let from = std::fs::read_to_string(source.join("plugin.toml")).unwrap();
    let old_name = from
        .lines()
        .find_map(|l| l.strip_prefix("name = "))
        .unwrap()
        .to_owned();
    variant(source, &root.join(name), |m| {
        edit(m.replacen(
            &format!("name = {old_name}"),
            &format!("name = \"{name}\""),
            1,
        ))
    })
}

/// `platform-probe` reporting `platform` as its platform, named `name`.
fn platform_probe(root: &Path, name: &str, platform: &str) -> std::path::PathBuf {
    renamed(&platform_probe_dir(), root, name, |m| {
        m.replace(
            "platform = \"probe-chat\"",
            &format!("platform = \"{platform}\""),
        )
    })
}

async fn load(host: &talaria_plugin_host::PluginHost, dir: &Path) -> LoadedPlugin {
    host.load(dir, &Grants::none()).await.unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_memory_provider_loads_into_its_slot() {
    let root = tempfile::tempdir().unwrap();
    let host = cached_host(root.path());
    let memory = load(&host, &memory_probe_dir()).await;
    assert_eq!(memory.kinds(), &[PluginKind::Memory]);
    assert!(memory.serves(PluginKind::Memory));
    assert!(!memory.serves(PluginKind::Tools));
    assert!(memory.tools().is_empty() && memory.platform().is_none());
    assert!(memory.log().contains("loaded memory-probe 0.1.0"));

    let providers = PluginMemoryProviders::new(vec![memory.clone()], root.path()).unwrap();
    assert_eq!(providers.names(), ["memory-probe"]);
    // Other kinds are not memory providers.
    let noop = load(&host, &noop_dir()).await;
    let providers = PluginMemoryProviders::new(vec![noop, memory], root.path()).unwrap();
    assert_eq!(providers.names(), ["memory-probe"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_platform_adapter_reports_its_platform_at_load() {
    let root = tempfile::tempdir().unwrap();
    let host = cached_host(root.path());
    let probe = load(&host, &platform_probe_dir()).await;
    assert_eq!(probe.kinds(), &[PluginKind::Platform]);
    assert_eq!(probe.platform(), Some("probe-chat"));

    // The name comes from the component (which reads its [config]), not the manifest's name.
    let other = load(
        &host,
        &platform_probe(root.path(), "other-probe", "other-chat"),
    )
    .await;
    assert_eq!(other.platform(), Some("other-chat"));
    let same = load(
        &host,
        &platform_probe(root.path(), "same-probe", "probe-chat"),
    )
    .await;

    let adapters = PluginPlatformAdapters::new(vec![probe, same, other], root.path()).unwrap();
    let info = |plugin: &str, platform: &str| PlatformAdapterInfo {
        plugin: plugin.into(),
        platform: platform.into(),
    };
    assert_eq!(
        adapters.adapters(),
        [
            info("platform-probe", "probe-chat"),
            info("other-probe", "other-chat")
        ]
    );
    assert_eq!(
        adapters.find("other-chat").map(LoadedPlugin::name),
        Some("other-probe")
    );
    assert_eq!(
        adapters.clashes(),
        [
            "platform adapter probe-chat of plugin same-probe dropped: plugin platform-probe \
          already serves probe-chat"
        ]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_invalid_platform_name_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let host = cached_host(root.path());
    let dir = platform_probe(root.path(), "spaced", "two words");
    let err = host.load(&dir, &Grants::none()).await.unwrap_err();
    assert!(
        matches!(&err, LoadError::Exports { plugin, message }
            if plugin == "spaced" && message.contains("\"two words\"")),
        "{err:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_declared_kind_the_component_does_not_export_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let host = cached_host(root.path());
    let cases = [
        (
            memory_probe_dir(),
            "[\"memory\", \"platform\"]",
            "platform-adapter",
        ),
        (platform_probe_dir(), "[\"memory\"]", "memory-provider"),
        (noop_dir(), "[\"tools\", \"memory\"]", "memory-provider"),
        (memory_probe_dir(), "[\"tools\"]", "tool-provider"),
    ];
    for (i, (source, provides, missing)) in cases.into_iter().enumerate() {
        let dir = variant(&source, &root.path().join(format!("case{i}")), |m| {
            let line = m.lines().find(|l| l.starts_with("provides = ")).unwrap();
            m.replace(line, &format!("provides = {provides}"))
        });
        let err = host.load(&dir, &Grants::none()).await.unwrap_err();
        assert!(
            matches!(&err, LoadError::Exports { message, .. }
                if message.contains(&format!("does not export talaria:plugin/{missing}"))),
            "{provides}: {err:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn each_kind_has_a_status() {
    let root = tempfile::tempdir().unwrap();
    let host = cached_host(root.path());
    let status = |kind, state| KindStatus { kind, state };
    let memory = load(&host, &memory_probe_dir()).await;
    assert_eq!(
        memory.kind_statuses(),
        [status(PluginKind::Memory, KindState::Loaded)]
    );
    assert_eq!(memory.kind_statuses()[0].to_string(), "memory: loaded");
    let platform = load(&host, &platform_probe_dir()).await;
    assert_eq!(
        platform.kind_statuses(),
        [status(PluginKind::Platform, KindState::LoadedNotWired)]
    );
    let commands = load(&host, &commands_probe_dir()).await;
    assert_eq!(
        commands.kind_statuses(),
        [
            status(PluginKind::Commands, KindState::Loaded),
            status(PluginKind::Skin, KindState::Loaded)
        ]
    );
    assert_eq!(
        load(&host, &hooks_probe_dir()).await.kind_statuses(),
        [
            status(PluginKind::Tools, KindState::Loaded),
            status(PluginKind::Hooks, KindState::Loaded)
        ]
    );

    // A plugin that did not load: each declared kind says why.
    let dir = variant(&memory_probe_dir(), &root.path().join("broken"), |m| {
        m.replace(
            "provides = [\"memory\"]",
            "provides = [\"memory\", \"platform\"]",
        )
    });
    let err = host.load(&dir, &Grants::none()).await.unwrap_err();
    let manifest = talaria_plugin_host::Manifest::load(&dir.join("plugin.toml")).unwrap();
    let reason = err.to_string();
    let not_loaded = KindState::NotLoaded {
        reason: reason.clone(),
    };
    assert_eq!(
        KindStatus::not_loaded(&manifest, &reason),
        [
            status(PluginKind::Memory, not_loaded.clone()),
            status(PluginKind::Platform, not_loaded)
        ]
    );

    // A kind this runtime cannot serve is unsupported, with the reason.
    let mut extism = manifest.clone();
    extism.runtime = talaria_plugin_host::Runtime::Extism;
    let statuses = KindStatus::not_loaded(&extism, "x");
    assert!(
        matches!(&statuses[0].state, KindState::Unsupported { reason }
            if reason.contains("can only provide tools")),
        "{statuses:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn every_set_is_built_from_the_plugins_of_its_kind() {
    let root = tempfile::tempdir().unwrap();
    let host = cached_host(root.path());
    let plugins = vec![
        load(&host, &noop_dir()).await,
        load(&host, &memory_probe_dir()).await,
        load(&host, &platform_probe_dir()).await,
        load(&host, &commands_probe_dir()).await,
    ];
    let sets = PluginSets::build(&plugins, root.path(), "cli");
    let tools = sets.tools.expect("tools");
    assert_eq!(
        tools.plugins().map(LoadedPlugin::name).collect::<Vec<_>>(),
        ["noop"]
    );
    assert!(sets.hooks.is_none(), "no plugin has hooks");
    let commands = sets.commands.expect("commands");
    assert_eq!(commands.specs().len(), 2);
    let skins = sets.skins.expect("skins");
    assert_eq!(skins.skins().len(), 2);
    assert_eq!(sets.memory.expect("memory").names(), ["memory-probe"]);
    assert_eq!(
        sets.platforms.expect("platforms").adapters()[0].platform,
        "probe-chat"
    );
    assert_eq!(
        sets.notices,
        [
            "plugin platform-probe: platform adapter for probe-chat loaded, not yet used by the agent"
        ]
    );

    // No plugin of a kind: no set of it.
    let sets = PluginSets::build(&plugins[..1], root.path(), "cli");
    assert!(sets.tools.is_some());
    assert!(sets.memory.is_none() && sets.platforms.is_none() && sets.commands.is_none());
    assert!(sets.skins.is_none() && sets.notices.is_empty());
}
