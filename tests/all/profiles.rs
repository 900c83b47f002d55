//! Profiles, config editing and the Hermes import through the real binary.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;

fn out(home: &Home, args: &[&str]) -> (i32, String, String) {
    let output = run(home.talaria(args));
    (
        output.status.code().unwrap_or(-1),
        stdout(&output),
        stderr(&output),
    )
}

#[test]
fn profiles_keep_their_own_settings_and_can_be_switched_and_deleted() {
    let home = Home::new();
    let (code, text, _) = out(&home, &["profile", "create", "work", "--clone"]);
    assert_eq!(code, 0, "{text}");
    assert_eq!(
        out(&home, &["-p", "work", "config", "set", "model.name", "m2"]).0,
        0
    );
    assert_eq!(
        out(&home, &["-p", "work", "config", "get", "model.name"])
            .1
            .trim(),
        "m2"
    );
    let (code, _, err) = out(&home, &["config", "get", "model.name"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        !out(&home, &["config", "show"]).1.contains("m2"),
        "the default profile is untouched"
    );
    assert!(
        out(
            &home,
            &["-p", "work", "config", "get", "retry.base_delay_ms"]
        )
        .1
        .trim()
            == "20",
        "--clone copied the setup"
    );

    assert_eq!(out(&home, &["profile", "use", "work"]).0, 0);
    assert_eq!(out(&home, &["config", "get", "model.name"]).1.trim(), "m2");
    let list = out(&home, &["profile", "list"]).1;
    assert!(list.lines().any(|l| l.starts_with("* work")), "{list}");

    let (code, _, err) = out(&home, &["profile", "delete", "work"]);
    assert_eq!(code, 2, "no --yes and no terminal: refused");
    assert!(err.contains("--yes"), "{err}");
    let (code, text, _) = out(&home, &["profile", "delete", "work", "--yes"]);
    assert_eq!(code, 0);
    assert!(text.contains("default profile is active again"), "{text}");
    let (code, _, err) = out(&home, &["-p", "work", "config", "show"]);
    assert_eq!(code, 2);
    assert!(err.contains("no profile named 'work'"), "{err}");
}

#[test]
fn config_set_refuses_bad_values_and_keeps_the_file() {
    let home = Home::new();
    let before = home.read("config.yaml");
    let (code, _, err) = out(&home, &["config", "set", "budget.max_iterations", "lots"]);
    assert_eq!(code, 2);
    assert!(err.contains("max_iterations"), "{err}");
    let (code, _, err) = out(&home, &["config", "set", "budgte.max_iterations", "3"]);
    assert_eq!(code, 2);
    assert!(err.contains("budgte"), "{err}");
    assert_eq!(home.read("config.yaml"), before);
    assert_eq!(
        out(&home, &["config", "path"]).1.trim(),
        home.path().join("config.yaml").display().to_string()
    );
}

#[test]
fn a_hermes_home_is_imported() {
    let home = Home::new();
    let hermes = home.workdir();
    let root = hermes.path();
    std::fs::create_dir_all(root.join("skills/devops/deploy")).unwrap();
    std::fs::write(
        root.join("skills/devops/deploy/SKILL.md"),
        "---\nname: deploy\ndescription: Deploy the app\n---\nSteps.\n",
    )
    .unwrap();
    std::fs::create_dir_all(root.join("memories")).unwrap();
    std::fs::write(root.join("memories/USER.md"), "Ada prefers short answers").unwrap();
    std::fs::write(
        root.join("config.yaml"),
        "model:\n  default: gpt-4.1\nagent:\n  max_turns: 33\ncompression:\n  enabled: true\n",
    )
    .unwrap();
    let from = root.display().to_string();
    let (code, text, err) = out(&home, &["import", "hermes", "--from", &from]);
    assert_eq!(code, 0, "{err}");
    assert!(text.contains("compression.enabled"), "{text}");
    assert_eq!(home.read("USER.md"), "Ada prefers short answers");
    assert!(home.path().join("skills/devops/deploy/SKILL.md").is_file());
    assert_eq!(
        out(&home, &["config", "get", "budget.max_iterations"])
            .1
            .trim(),
        "33"
    );
}

#[cfg(unix)]
fn mode(path: &std::path::Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

/// Every file and directory under `dir` that other users can access.
#[cfg(unix)]
fn open_to_others(dir: &std::path::Path) -> Vec<String> {
    use std::os::unix::fs::PermissionsExt;
    let mut open = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().filter_map(Result::ok) {
        let meta = std::fs::symlink_metadata(entry.path()).unwrap();
        if meta.file_type().is_symlink() {
            continue;
        }
        if meta.permissions().mode() & 0o077 != 0 {
            open.push(format!(
                "{} {:o}",
                entry.path().display(),
                meta.permissions().mode()
            ));
        }
        if meta.is_dir() {
            open.extend(open_to_others(&entry.path()));
        }
    }
    open
}

#[cfg(unix)]
#[test]
fn the_home_and_its_files_are_private_and_secrets_are_not_echoed() {
    use std::os::unix::fs::PermissionsExt;
    use talaria_testkit::{Script, ScriptedServer, Step};

    let home = Home::new();
    // A home as an older Talaria (or `mkdir` under umask 022) left it.
    home.write_config(
        "retry:\n  base_delay_ms: 20\n  max_delay_ms: 100\ntools:\n  result_max_bytes: 200\n",
    );
    let loose = std::fs::Permissions::from_mode(0o755);
    std::fs::set_permissions(home.path(), loose.clone()).unwrap();
    std::fs::write(home.path().join(".env"), "OTHER=1\n").unwrap();
    for file in ["config.yaml", ".env"] {
        std::fs::set_permissions(
            home.path().join(file),
            std::fs::Permissions::from_mode(0o644),
        )
        .unwrap();
    }

    let work = home.workdir();
    let long: String = (0..200).map(|i| format!("line {i}\n")).collect();
    std::fs::write(work.path().join("long.txt"), long).unwrap();
    let server = ScriptedServer::spawn(Script::new([
        Step::tool_call("read_file", r#"{"path":"long.txt"}"#),
        Step::text("Read."),
    ]))
    .unwrap();
    let output = run(home.query_in(work.path(), &server, "read it", &[]));
    assert_code(&output, 0);
    let err = stderr(&output);
    let notices: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("talaria: tightened permissions"))
        .collect();
    assert_eq!(notices.len(), 1, "one notice:\n{err}");
    assert!(notices[0].contains("readable by other users"), "{err}");

    assert_eq!(mode(home.path()), 0o700, "the home");
    for file in [
        "config.yaml",
        ".env",
        "state/sessions.sqlite",
        "logs/plugins.log",
    ] {
        assert_eq!(mode(&home.path().join(file)), 0o600, "{file}");
    }
    for dir in ["state", "logs", "sessions"] {
        assert_eq!(mode(&home.path().join(dir)), 0o700, "{dir}");
    }
    let spilled: Vec<_> = std::fs::read_dir(home.path().join("sessions"))
        .unwrap()
        .filter_map(Result::ok)
        .flat_map(|s| std::fs::read_dir(s.path().join("tool-output")).unwrap())
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    assert!(!spilled.is_empty(), "the long result was spilled");
    for file in &spilled {
        assert_eq!(mode(file), 0o600, "{}", file.display());
        assert_eq!(mode(file.parent().unwrap()), 0o700, "{}", file.display());
    }

    let open = open_to_others(home.path());
    assert!(
        open.is_empty(),
        "readable by others after the run: {open:#?}"
    );
    // Nothing left to fix: no notice the second time.
    let (code, _, err) = out(&home, &["config", "path"]);
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("tightened"), "{err}");

    // A key set from the command line is stored but never printed back.
    let secret = "sk-secret-0123456789abcdef";
    let (code, text, err) = out(&home, &["config", "set", "model.api_key", secret]);
    assert_eq!(code, 0, "{err}");
    assert!(
        !text.contains(secret) && !err.contains(secret),
        "{text}{err}"
    );
    assert!(text.contains("model.api_key = …cdef"), "{text}");
    assert!(home.read("config.yaml").contains(secret));
    assert_eq!(mode(&home.path().join("config.yaml")), 0o600);
    let (_, text, _) = out(&home, &["config", "get", "model.api_key"]);
    assert!(!text.contains(secret), "{text}");
}

#[test]
fn reply_and_prompt_size_caps_come_from_the_config() {
    use talaria_testkit::{Script, ScriptedServer, Step};

    let home = Home::new();
    home.write_config(
        "retry:\n  base_delay_ms: 20\n  max_delay_ms: 100\nmodel:\n  max_reply_bytes: 1024\n  \
         max_prompt_bytes: 1000000\n",
    );
    let work = home.workdir();
    let server = ScriptedServer::spawn(Script::new([Step::text("x".repeat(8 * 1024))])).unwrap();
    let output = run(home.query_in(work.path(), &server, "say a lot", &[]));
    assert_ne!(output.status.code(), Some(0));
    let err = stderr(&output);
    assert_contains(&err, "model.max_reply_bytes (1024 bytes)");
    assert_eq!(server.requests().len(), 1, "not retried");

    home.write_config("model:\n  max_prompt_bytes: 1024\n");
    let server = ScriptedServer::spawn(Script::new([Step::text("unused")])).unwrap();
    let prompt = "y".repeat(4 * 1024);
    let output = run(home.query_in(work.path(), &server, &prompt, &[]));
    assert_ne!(output.status.code(), Some(0));
    assert_contains(&stderr(&output), "model.max_prompt_bytes (1024 bytes)");
    assert!(server.requests().is_empty(), "nothing was sent");
}

#[test]
fn hermes_chat_platforms_are_imported_and_those_without_an_adapter_named() {
    let home = Home::new();
    let hermes = home.workdir();
    let root = hermes.path();
    std::fs::write(root.join("config.yaml"), "model:\n  default: gpt-4.1\n").unwrap();
    std::fs::write(
        root.join(".env"),
        "TELEGRAM_BOT_TOKEN=123456:ABCDEF\nTELEGRAM_ALLOWED_USERS=111\n\
         DISCORD_BOT_TOKEN=discord-token\nDISCORD_HOME_CHANNEL=42\n",
    )
    .unwrap();
    let from = root.display().to_string();
    let (code, text, err) = out(&home, &["import", "hermes", "--from", &from]);
    assert_eq!(code, 0, "{err}");
    assert!(
        text.contains("+ config gateway.platforms.telegram ("),
        "{text}"
    );
    assert!(
        text.contains("+ config gateway.platforms.discord ("),
        "{text}"
    );
    // The distribution's telegram adapter serves telegram; nothing serves discord.
    let missing: Vec<&str> = text
        .lines()
        .filter_map(|line| line.trim().strip_prefix("! "))
        .collect();
    assert_eq!(missing, ["gateway.platforms.discord"], "{text}");
    assert!(
        !text.contains("discord-token") && !text.contains("ABCDEF"),
        "{text}"
    );

    let config = home.read("config.yaml");
    assert!(config.contains("${DISCORD_BOT_TOKEN}"), "{config}");
    assert!(!config.contains("discord-token"), "{config}");
    assert!(
        home.read(".env")
            .contains("DISCORD_BOT_TOKEN=discord-token")
    );
    assert_eq!(
        out(
            &home,
            &["config", "get", "gateway.platforms.discord.home_channel"]
        )
        .1
        .trim(),
        "42"
    );
}
