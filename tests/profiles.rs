//! Profiles, config editing and the Hermes import through the real binary.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;

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
