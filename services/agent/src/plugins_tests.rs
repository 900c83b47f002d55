//! Tests of plugin discovery and loading for sessions.

mod store_search_tests {
    use super::super::*;
    use talaria_plugin_host::SessionSearch;

    #[test]
    fn plugins_search_the_session_store() {
        let db = std::sync::Arc::new(talaria_store::SessionDb::open_in_memory().unwrap());
        let session = talaria_store::NewSession {
            id: "s1".into(),
            title: None,
            source: "cli".into(),
            model: "m".into(),
            cwd: None,
            parent_session_id: None,
            principal: talaria_store::Principal::owner(),
        };
        db.append_or_create(
            &session,
            &talaria_kernel::Message::user("the zebra migration"),
        )
        .unwrap();
        let hits = StoreSearch(db, talaria_store::Principal::owner())
            .search("zebra", 5)
            .unwrap();
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].session_id, "s1");
        assert_eq!(hits[0].role, "user");
        assert!(hits[0].snippet.contains("zebra"), "{}", hits[0].snippet);
        assert!(hits[0].timestamp > 1_700_000_000, "unix seconds");
    }
}

mod load_tests {
    use std::path::{Path, PathBuf};

    use super::super::*;
    use crate::test_support::test_plugin;

    fn commands_probe() -> PathBuf {
        test_plugin("commands-probe", "talaria-plugin-commands-probe")
    }

    /// Copies a package's component and manifest into `plugins` as `name`,
    /// its manifest edited by `edit`.
    fn install_as(package: &Path, plugins: &Path, name: &str, edit: impl FnOnce(String) -> String) {
        let dir = plugins.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(package.join("plugin.wasm"), dir.join("plugin.wasm")).unwrap();
        let manifest = std::fs::read_to_string(package.join("plugin.toml")).unwrap();
        let manifest = manifest
            .lines()
            .map(|line| {
                if line.starts_with("name = ") {
                    format!("name = \"{name}\"")
                } else {
                    line.to_owned()
                }
            })
            .collect::<Vec<_>>()
            .join("\n");
        std::fs::write(dir.join("plugin.toml"), edit(manifest)).unwrap();
    }

    /// Copies the package into `plugins` as `name`.
    fn install(package: &Path, plugins: &Path, name: &str) {
        let dir = plugins.join(name);
        std::fs::create_dir_all(dir.join("skins")).unwrap();
        std::fs::copy(package.join("plugin.wasm"), dir.join("plugin.wasm")).unwrap();
        let manifest = std::fs::read_to_string(package.join("plugin.toml")).unwrap();
        let manifest = manifest.replace("name = \"commands-probe\"", &format!("name = \"{name}\""));
        std::fs::write(dir.join("plugin.toml"), manifest).unwrap();
        std::fs::copy(
            package.join("skins/probe-light.yaml"),
            dir.join("skins/probe-light.yaml"),
        )
        .unwrap();
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn command_and_skin_plugins_load_and_clashes_are_reported() {
        let package = commands_probe();
        let tmp = tempfile::tempdir().unwrap();
        let home = ProfileHome::at(tmp.path().join("home"));
        install(&package, &home.plugins_dir(), "commands-probe");
        install(&package, &home.plugins_dir(), "other-probe");
        let cwd = tmp.path().join("work");
        std::fs::create_dir_all(&cwd).unwrap();
        let exec = talaria_plugin_host::ExecServices::deny_all(&tmp.path().join("approvals.toml"))
            .unwrap();

        let session = load_plugins(
            &home,
            &ConfigFile::default(),
            &cwd,
            "cli",
            exec,
            PluginServices::default(),
        )
        .await;

        assert!(session.tools.is_none() && session.hooks.is_none());
        let commands = session.commands.expect("commands");
        let names: Vec<(String, String)> = commands
            .specs()
            .into_iter()
            .map(|s| (s.plugin, s.name))
            .collect();
        assert_eq!(
            names,
            [
                ("commands-probe".to_owned(), "echo-args".to_owned()),
                ("commands-probe".to_owned(), "fail-command".to_owned()),
            ]
        );
        let run = commands
            .run(
                "ea",
                "hi",
                talaria_kernel::HookSession {
                    session_id: "s1",
                    model: "m",
                },
            )
            .await;
        assert_eq!(run.as_deref(), Ok("echo-args: hi (session s1)"));

        let skins: Vec<(&str, &str)> = session
            .skins
            .iter()
            .map(|s| (s.plugin.as_str(), s.name.as_str()))
            .collect();
        assert_eq!(
            skins,
            [
                ("commands-probe", "probe-dark"),
                ("commands-probe", "probe-light")
            ]
        );
        for expected in [
            "command /echo-args of plugin other-probe dropped: plugin commands-probe already provides /echo-args",
            "skin probe-dark of plugin other-probe dropped: plugin commands-probe already provides it",
            "skin probe-light of plugin other-probe dropped: plugin commands-probe already provides it",
        ] {
            assert!(
                session.notices.iter().any(|n| n == expected),
                "{expected:?} not in {:#?}",
                session.notices
            );
        }
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn memory_and_platform_plugins_load_and_every_kind_has_a_status() {
        use talaria_plugin_host::{KindState, KindStatus, PluginKind};

        let memory = test_plugin("memory-probe", "talaria-plugin-memory-probe");
        let platform = test_plugin("platform-probe", "talaria-plugin-platform-probe");
        let tmp = tempfile::tempdir().unwrap();
        let home = ProfileHome::at(tmp.path().join("home"));
        let plugins = home.plugins_dir();
        install_as(&memory, &plugins, "a-memory", |m| m);
        install_as(&platform, &plugins, "b-platform", |m| m);
        // Declares a kind its component does not export: refused, and said so.
        install_as(&memory, &plugins, "c-broken", |m| {
            m.replace(
                "provides = [\"memory\"]",
                "provides = [\"memory\", \"platform\"]",
            )
        });
        let cwd = tmp.path().join("work");
        std::fs::create_dir_all(&cwd).unwrap();
        let exec = talaria_plugin_host::ExecServices::deny_all(&tmp.path().join("approvals.toml"))
            .unwrap();

        let session = load_plugins(
            &home,
            &ConfigFile::default(),
            &cwd,
            "cli",
            exec,
            PluginServices::default(),
        )
        .await;

        assert!(session.tools.is_none() && session.hooks.is_none() && session.commands.is_none());
        assert_eq!(
            session.memory.expect("memory providers").names(),
            ["a-memory"]
        );
        let adapters = session.platforms.expect("platform adapters").adapters();
        assert_eq!(adapters.len(), 1);
        assert_eq!(
            (adapters[0].plugin.as_str(), adapters[0].platform.as_str()),
            ("b-platform", "probe-chat")
        );
        let expected =
            "plugin b-platform: platform adapter for probe-chat loaded, not yet used by the agent";
        assert!(
            session.notices.iter().any(|n| n == expected),
            "{expected:?} not in {:#?}",
            session.notices
        );
        assert!(
            !session.notices.iter().any(|n| n.contains("a-memory")),
            "a memory provider loads quietly: {:#?}",
            session.notices
        );
        let broken_notice = session
            .notices
            .iter()
            .find(|n| n.starts_with("plugin c-broken not loaded: "))
            .unwrap_or_else(|| panic!("no notice for c-broken in {:#?}", session.notices));
        assert!(
            broken_notice.contains("does not export talaria:plugin/platform-adapter"),
            "{broken_notice}"
        );

        let statuses: Vec<(&str, PluginSource, &[KindStatus])> = session
            .statuses
            .iter()
            .map(|s| (s.name.as_str(), s.source, s.kinds.as_slice()))
            .collect();
        let status = |kind, state| KindStatus { kind, state };
        let not_loaded = KindState::NotLoaded {
            reason: broken_notice.clone(),
        };
        assert_eq!(
            statuses,
            [
                (
                    "a-memory",
                    PluginSource::User,
                    &[status(PluginKind::Memory, KindState::Loaded)][..]
                ),
                (
                    "b-platform",
                    PluginSource::User,
                    &[status(PluginKind::Platform, KindState::LoadedNotWired)][..]
                ),
                (
                    "c-broken",
                    PluginSource::User,
                    &[
                        status(PluginKind::Memory, not_loaded.clone()),
                        status(PluginKind::Platform, not_loaded)
                    ][..]
                ),
            ]
        );
    }
}
