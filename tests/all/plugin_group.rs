//! The command groups: one singular name each (`plugin`, `session`,
//! `command`, …), with the old plural spellings still accepted for scripts,
//! and the single `plugin` group's merged `list` and `info`. The index side of
//! `plugin list` and `plugin info` is in `registry.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use crate::common::{Home, assert_code, assert_contains, build_plugins, run, stderr, stdout};

/// The command names listed under "Commands:" in a help text.
fn listed_commands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|line| !line.starts_with("Commands:"))
        .skip(1)
        .take_while(|line| line.starts_with("  "))
        .filter_map(|line| line.split_whitespace().next())
        .map(str::to_owned)
        .collect()
}

#[test]
fn help_lists_only_singular_group_names() {
    let home = Home::new();
    let output = run(home.talaria(&["--help"]));
    assert_code(&output, 0);
    let commands = listed_commands(&stdout(&output));
    for singular in ["plugin", "session", "command", "profile", "skin"] {
        assert!(
            commands.iter().any(|c| c == singular),
            "{singular}: {commands:?}"
        );
    }
    for plural in ["plugins", "sessions", "commands", "profiles", "skins"] {
        assert!(
            !commands.iter().any(|c| c == plural),
            "{plural}: {commands:?}"
        );
    }

    let output = run(home.talaria(&["plugin", "--help"]));
    assert_code(&output, 0);
    let subcommands = listed_commands(&stdout(&output));
    for name in [
        "list", "info", "grant", "revoke", "trust", "new", "build", "sdk", "install", "search",
        "update", "remove", "pack", "publish", "keygen", "index",
    ] {
        assert!(
            subcommands.iter().any(|c| c == name),
            "{name}: {subcommands:?}"
        );
    }
}

#[test]
fn the_plural_spellings_still_run_every_subcommand() {
    let home = Home::new();
    let work = home.workdir();
    let text = |args: &[&str]| {
        let mut command = home.talaria(args);
        command.current_dir(work.path());
        let output = run(command);
        assert_code(&output, 0);
        stdout(&output)
    };

    assert_eq!(text(&["plugins", "list"]), text(&["plugin", "list"]));
    assert_eq!(
        text(&["plugins", "list", "--outdated"]),
        text(&["plugin", "list", "--outdated"])
    );
    let info = text(&["plugins", "info", "fs"]);
    assert_contains(&info, "status:    loads");
    assert_contains(&info, "indexes:   none configured");
    assert_contains(
        &text(&["plugins", "grant", "fs", "filesystem:$CWD:read-only"]),
        "fs is granted: filesystem:$CWD:read-only",
    );
    assert_contains(
        &text(&["plugins", "revoke", "fs", "all"]),
        "fs is granted: none",
    );
    assert_contains(&text(&["plugins", "trust"]), "Trusted ");
    assert_contains(
        &text(&["plugins", "index", "list"]),
        "No plugin index configured",
    );
    let project = work.path().join("aliased");
    text(&[
        "plugins",
        "new",
        "aliased",
        "--dir",
        project.to_str().unwrap(),
    ]);
    assert!(project.join("plugin.toml").is_file());

    assert_eq!(text(&["sessions", "list"]), text(&["session", "list"]));
    assert_eq!(
        text(&["commands", "--json", "--surface", "gateway"]),
        text(&["command", "--json", "--surface", "gateway"])
    );
}

#[test]
fn plugin_list_shows_version_source_kinds_origin_and_grants() {
    build_plugins();
    let home = Home::new();
    let built = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/plugins/test");
    // One installed from a local package, one copied in by hand.
    let package = built.join("hooks-probe");
    let output = run(home.talaria(&["plugin", "install", package.to_str().unwrap()]));
    assert_code(&output, 0);
    crate::common::install_test_plugin(&home, "commands-probe");

    let output = run(home.talaria(&["plugin", "list"]));
    assert_code(&output, 0);
    let list = stdout(&output);
    let entry = |header: &str| -> Vec<String> {
        let start = list
            .find(header)
            .unwrap_or_else(|| panic!("{header:?} not in:\n{list}"));
        list[start..]
            .lines()
            .skip(1)
            .take_while(|line| line.starts_with("    "))
            .map(|line| line.trim().to_owned())
            .collect()
    };
    let fs = entry("fs 0.1.0 [tools] (distribution)");
    assert!(
        fs.contains(&"requests:  filesystem:$CWD:read-write".to_owned()),
        "{list}"
    );
    assert!(
        fs.contains(&"granted:   filesystem:$CWD:read-write".to_owned()),
        "{list}"
    );
    assert!(!fs.iter().any(|l| l.starts_with("installed:")), "{list}");

    let hooks = entry("hooks-probe 0.1.0 [tools, hooks] (user)");
    assert!(
        hooks.contains(&format!(
            "installed: from the local package {}",
            package.display()
        )),
        "{list}"
    );
    assert!(hooks.contains(&"granted:   none".to_owned()), "{list}");

    let commands = entry("commands-probe 0.1.0 [commands, skin] (user)");
    assert!(
        commands.contains(&"installed: copied in by hand".to_owned()),
        "{list}"
    );
    assert!(
        commands.iter().any(|l| l.starts_with("requests:"))
            && commands.iter().any(|l| l.starts_with("granted:")),
        "{list}"
    );
    assert!(!list.contains("No plugins installed"), "{list}");
}

#[test]
fn plugin_info_says_when_no_index_is_configured_and_fails_on_an_unknown_name() {
    let home = Home::new();
    let output = run(home.talaria(&["plugin", "info", "fs"]));
    assert_code(&output, 0);
    let text = stdout(&output);
    assert_contains(&text, "fs 0.1.0 — ");
    assert_contains(&text, "status:    loads");
    assert_contains(
        &text,
        "indexes:   none configured (`talaria plugin index add NAME URL` adds one)",
    );

    let output = run(home.talaria(&["plugin", "info", "nope"]));
    assert_code(&output, 2);
    assert_contains(
        &stderr(&output),
        "no plugin named 'nope' (installed: facts, fs, irc, mem0, telegram, terminal, web), and no plugin index is configured",
    );
    assert!(stdout(&output).is_empty(), "{}", stdout(&output));
}

#[test]
fn plugin_info_reports_each_kind_and_names_packages_of_kinds_it_cannot_serve() {
    let home = Home::new();
    let work = home.workdir();
    let info = |name: &str| {
        let mut command = home.talaria(&["plugin", "info", name]);
        command.current_dir(work.path());
        run(command)
    };
    crate::common::install_test_plugin(&home, "memory-probe");
    crate::common::install_test_plugin(&home, "platform-probe");

    // Memory providers load and are used; 0.1.0 platform adapters load, and say they are not used.
    let output = info("memory-probe");
    assert_code(&output, 0);
    assert_contains(&stdout(&output), "kind:      memory: loaded\n");
    assert_contains(
        &stdout(&output),
        "  memory provider, not in use (talaria memory use memory-probe)",
    );
    // Commands and skins are listed like tools and hooks.
    crate::common::install_test_plugin(&home, "commands-probe");
    let output = info("commands-probe");
    assert_code(&output, 0);
    let text = stdout(&output);
    assert_contains(&text, "  command /echo-args       Echoes its arguments");
    assert_contains(&text, "  skin probe-dark");
    assert_contains(&text, "  skin probe-light");
    let output = info("platform-probe");
    assert_code(&output, 0);
    assert_contains(
        &stdout(&output),
        "kind:      platform: loaded, not yet used by the agent",
    );

    // A kind this host does not know: the package is named, with the
    // manifest's error, instead of "no plugin named".
    let weird = home.path().join("plugins/weird");
    crate::common::copy_dir(&home.path().join("plugins/memory-probe"), &weird);
    let manifest = std::fs::read_to_string(weird.join("plugin.toml")).unwrap();
    let manifest = manifest
        .replace("name = \"memory-probe\"", "name = \"weird\"")
        .replace(
            "provides = [\"memory\"]",
            "provides = [\"memory\", \"weather\"]",
        );
    assert!(manifest.contains("\"weather\""), "{manifest}");
    std::fs::write(weird.join("plugin.toml"), manifest).unwrap();
    let output = info("weird");
    assert_code(&output, 1);
    let text = stdout(&output);
    assert_contains(&text, "weird: the package in");
    assert_contains(&text, "unknown variant `weather`");

    // A kind its runtime cannot serve (an Extism module only provides tools).
    crate::common::install_test_plugin(&home, "extism-probe");
    let probe = home.path().join("plugins/extism-probe/plugin.toml");
    let manifest = std::fs::read_to_string(&probe).unwrap();
    let manifest = manifest.replace(
        "provides = [\"tools\"]",
        "provides = [\"tools\", \"hooks\"]",
    );
    assert!(manifest.contains("\"hooks\""), "{manifest}");
    std::fs::write(&probe, manifest).unwrap();
    let output = info("extism-probe");
    assert_code(&output, 1);
    assert_contains(
        &stdout(&output),
        "a plugin with runtime \"extism\" can only provide tools",
    );
}

/// A plugin is compiled when it is installed, so its first session starts
/// at once; one copied in by hand is compiled by the first session, which
/// says so on stderr (a large component takes seconds), and only that one.
#[test]
fn install_compiles_ahead_and_a_start_that_must_compile_says_so() {
    use talaria_testkit::{Script, ScriptedServer, Step};
    let built = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/plugins/test/noop");
    let session = |home: &Home| {
        let server = ScriptedServer::spawn(Script::new([Step::text("ok")])).unwrap();
        let work = home.workdir();
        let output = run(home.query_in(work.path(), &server, "hi", &[]));
        assert_code(&output, 0);
        stderr(&output)
    };

    let copied = Home::new();
    crate::common::install_test_plugin(&copied, "noop");
    assert_contains(&session(&copied), "note: compiling plugin noop (");
    let again = session(&copied);
    assert!(!again.contains("compiling plugin noop"), "{again}");

    let installed = Home::new();
    let said = stdout(&installed.install_package(&built, "none"));
    assert_contains(&said, "compiling noop (");
    assert_contains(&said, "compiled in ");
    let first = session(&installed);
    assert!(!first.contains("compiling plugin noop"), "{first}");
}

/// Two plugins defining one tool name: both load, the name is served once,
/// the clash is named with the setting that settles it, and once settled
/// nothing more is said.
#[test]
fn a_tool_name_two_plugins_define_is_served_once_and_the_user_can_choose() {
    use talaria_testkit::{Script, ScriptedServer, Step};
    let home = Home::new();
    crate::common::install_test_plugin(&home, "noop");
    let copy = home.path().join("plugins/noop-two");
    crate::common::copy_dir(&home.path().join("plugins/noop"), &copy);
    let manifest = std::fs::read_to_string(copy.join("plugin.toml")).unwrap();
    std::fs::write(
        copy.join("plugin.toml"),
        manifest.replace("name = \"noop\"", "name = \"noop-two\""),
    )
    .unwrap();
    let session = |home: &Home| {
        let server = ScriptedServer::spawn(Script::new([Step::text("ok")])).unwrap();
        let work = home.workdir();
        let output = run(home.query_in(work.path(), &server, "hi", &[]));
        assert_code(&output, 0);
        let tools = server.requests()[0].tools_raw();
        assert_eq!(tools.matches("\"name\":\"noop\"").count(), 1, "{tools}");
        stderr(&output)
    };
    let said = session(&home);
    assert_contains(&said, "its tool 'noop' is not used: plugin noop");
    assert_contains(&said, "set tools.providers: {noop: noop-two}");
    assert!(!said.contains("not loaded"), "{said}");

    home.write_config("tools:\n  providers:\n    noop: noop-two\n");
    let said = session(&home);
    assert!(!said.contains("its tool 'noop'"), "{said}");
}
