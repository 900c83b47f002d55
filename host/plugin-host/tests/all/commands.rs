//! Command and skin plugins: the `commands-probe` plugin's slash commands
//! (listed at load, run by name or alias, errors, crashes, clashes between
//! plugins) and its skins (from the skin world and from `skins/*.yaml`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use talaria_kernel::HookSession;
use talaria_plugin_host::{
    CallError, CommandError, DISABLE_AFTER_FAILURES, LoadedPlugin, MAX_SKIN_BYTES,
    PluginCommandSpec, PluginCommands, PluginSkin,
};

const SESSION: HookSession<'static> = HookSession {
    session_id: "s1",
    model: "test-model",
};

async fn probe(root: &std::path::Path) -> LoadedPlugin {
    load_all(&cached_host(root), &commands_probe_dir()).await
}

/// A copy of `commands-probe` (without its data skins) named `name`, with
/// `[config] crash` set to `crash`.
async fn probe_copy(root: &std::path::Path, name: &str, crash: &str) -> LoadedPlugin {
    let dir = variant(
        &commands_probe_dir(),
        &root.join("packages").join(name),
        |manifest| {
            manifest
                .replace("name = \"commands-probe\"", &format!("name = \"{name}\""))
                .replace("crash = \"\"", &format!("crash = \"{crash}\""))
        },
    );
    load_all(&cached_host(root), &dir).await
}

fn commands(plugins: &[LoadedPlugin], root: &std::path::Path) -> PluginCommands {
    PluginCommands::new(plugins.to_vec(), root, "cli").unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn commands_are_listed_with_their_plugin() {
    let root = tempfile::tempdir().unwrap();
    let plugin = probe(root.path()).await;
    let expected = [
        PluginCommandSpec {
            plugin: "commands-probe".into(),
            name: "echo-args".into(),
            aliases: vec!["ea".into()],
            description: "Echoes its arguments and the session id".into(),
            args_hint: "<text>".into(),
            category: "Testing".into(),
        },
        PluginCommandSpec {
            plugin: "commands-probe".into(),
            name: "fail-command".into(),
            aliases: vec![],
            description: "Always fails".into(),
            args_hint: String::new(),
            category: "Testing".into(),
        },
    ];
    assert_eq!(plugin.commands(), expected);
    let commands = commands(&[plugin], root.path());
    assert_eq!(commands.specs(), expected);
    assert_eq!(
        commands.find("ea").map(|c| c.name.as_str()),
        Some("echo-args")
    );
    assert!(commands.clashes().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_command_runs_by_name_or_alias() {
    let root = tempfile::tempdir().unwrap();
    let commands = commands(&[probe(root.path()).await], root.path());
    assert_eq!(
        commands.run("echo-args", "hello world", SESSION).await,
        Ok("echo-args: hello world (session s1)".to_owned())
    );
    let other = HookSession {
        session_id: "s2",
        model: "m",
    };
    assert_eq!(
        commands.run("ea", "", other).await,
        Ok("echo-args:  (session s2)".to_owned()),
        "an alias runs the command under its name"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_plugin_error_is_failed_with_its_message() {
    let root = tempfile::tempdir().unwrap();
    let commands = commands(&[probe(root.path()).await], root.path());
    for _ in 0..DISABLE_AFTER_FAILURES + 1 {
        assert_eq!(
            commands.run("fail-command", "x", SESSION).await,
            Err(CommandError::Failed {
                plugin: "commands-probe".into(),
                message: "this command always fails".into(),
            })
        );
    }
    assert!(
        !commands.is_disabled("commands-probe", "s1"),
        "a command's own error is not a failure of the plugin"
    );
    assert!(commands.run("echo-args", "", SESSION).await.is_ok());
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unknown_command_is_reported() {
    let root = tempfile::tempdir().unwrap();
    let commands = commands(&[probe(root.path()).await], root.path());
    assert_eq!(
        commands.run("nope", "", SESSION).await,
        Err(CommandError::Unknown {
            name: "nope".into()
        })
    );
    let empty = PluginCommands::new(Vec::new(), root.path(), "cli").unwrap();
    assert!(empty.is_empty());
    assert!(matches!(
        empty.run("echo-args", "", SESSION).await,
        Err(CommandError::Unknown { .. })
    ));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_crashing_command_counts_toward_disabling_its_plugin() {
    let root = tempfile::tempdir().unwrap();
    let plugin = probe_copy(root.path(), "crashy", "echo-args").await;
    let commands = commands(std::slice::from_ref(&plugin), root.path());
    for _ in 0..DISABLE_AFTER_FAILURES {
        match commands.run("ea", "x", SESSION).await {
            Err(CommandError::Crashed {
                plugin,
                command,
                error: CallError::Trap { message, .. },
            }) => {
                assert_eq!((plugin.as_str(), command.as_str()), ("crashy", "echo-args"));
                assert!(message.contains("crashes as configured"), "{message}");
            }
            other => panic!("expected a crash, got {other:?}"),
        }
    }
    assert!(commands.is_disabled("crashy", "s1"));
    assert_eq!(
        commands.run("fail-command", "", SESSION).await,
        Err(CommandError::Disabled {
            plugin: "crashy".into(),
            failures: DISABLE_AFTER_FAILURES
        }),
        "every command of the plugin is disabled"
    );
    let other = HookSession {
        session_id: "s2",
        model: "m",
    };
    assert!(
        matches!(
            commands.run("fail-command", "", other).await,
            Err(CommandError::Failed { .. })
        ),
        "only in the session where it failed"
    );
    let clone = commands.clone();
    assert!(clone.is_disabled("crashy", "s1"), "clones share the counts");
    assert!(
        plugin
            .log()
            .lines()
            .iter()
            .any(|l| l.message.contains("disabled for session s1")),
        "the disabling is logged"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_later_plugin_loses_a_clashing_command() {
    let root = tempfile::tempdir().unwrap();
    let first = probe(root.path()).await;
    let second = probe_copy(root.path(), "second-probe", "").await;
    let commands = commands(&[first, second.clone()], root.path());
    assert!(
        commands
            .specs()
            .iter()
            .all(|spec| spec.plugin == "commands-probe"),
        "{:?}",
        commands.specs()
    );
    let clashes: Vec<String> = commands.clashes().iter().map(ToString::to_string).collect();
    assert_eq!(
        clashes,
        [
            "command /echo-args of plugin second-probe dropped: plugin commands-probe already provides /echo-args",
            "command /fail-command of plugin second-probe dropped: plugin commands-probe already provides /fail-command",
        ]
    );
    assert_eq!(
        commands.run("ea", "hi", SESSION).await.unwrap(),
        "echo-args: hi (session s1)"
    );
    assert!(
        second.log().lines().iter().any(|l| l
            .message
            .contains("/echo-args of plugin second-probe dropped")),
        "the clash is logged to the plugin that lost"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn skins_come_from_the_skin_world_then_the_package() {
    let root = tempfile::tempdir().unwrap();
    let plugin = probe(root.path()).await;
    assert_eq!(
        plugin.skins(),
        [
            PluginSkin {
                plugin: "commands-probe".into(),
                name: "probe-dark".into(),
                yaml: "agent_name: Probe\nprompt_symbol: \"probe> \"\n".into(),
            },
            PluginSkin {
                plugin: "commands-probe".into(),
                name: "probe-light".into(),
                yaml: "# A data skin: no component needed.\nagent_name: ProbeLight\n".into(),
            },
        ]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn any_package_may_ship_data_skins() {
    let root = tempfile::tempdir().unwrap();
    let dir = variant(&noop_dir(), &root.path().join("noop"), |m| m);
    let skins = dir.join("skins");
    std::fs::create_dir(&skins).unwrap();
    std::fs::write(skins.join("plain.yaml"), "agent_name: Plain\n").unwrap();
    std::fs::write(skins.join("Bad Name.yaml"), "agent_name: Bad\n").unwrap();
    std::fs::write(skins.join("huge.yaml"), "#".repeat(MAX_SKIN_BYTES + 1)).unwrap();
    std::fs::write(skins.join("readme.md"), "not a skin").unwrap();
    let noop = load_all(&cached_host(root.path()), &dir).await;
    let names: Vec<&str> = noop.skins().iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["plain"]);
    assert!(noop.commands().is_empty());
    let warnings: Vec<String> = noop
        .log()
        .lines()
        .into_iter()
        .filter(|l| l.message.starts_with("skin "))
        .map(|l| l.message)
        .collect();
    assert_eq!(warnings.len(), 2, "{warnings:#?}");
    assert!(warnings.iter().any(|w| w.contains("larger than 64 KiB")));
    let commands = PluginCommands::new(vec![noop], root.path(), "cli").unwrap();
    assert!(commands.is_empty(), "a plugin without commands adds none");
}
