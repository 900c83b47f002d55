//! Level 2 stays inside the skill: no `..`, no absolute paths, no symlink
//! escapes; big and binary files are handled.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;
use talaria_skills::{SkillIndex, SkillRoots, handle_skill_view};

fn setup() -> (SkillIndex, tempfile::TempDir) {
    let home = tempfile::tempdir().unwrap();
    let root = home.path().join("skills");
    crate::common::write(
        &root,
        "demo/SKILL.md",
        crate::common::skill_md("demo", "Demo."),
    );
    crate::common::write(&root, "demo/references/api.md", "# API\n");
    crate::common::write(
        &root,
        "demo/assets/logo.png",
        [0x89u8, b'P', b'N', b'G', 0, 1, 2, 3],
    );
    crate::common::write(home.path(), "secret.txt", "top secret");
    let (index, issues) = SkillIndex::load(SkillRoots::new(&root));
    assert!(issues.is_empty(), "{issues:#?}");
    (index, home)
}

fn view(index: &SkillIndex, file_path: &str) -> Result<serde_json::Value, String> {
    handle_skill_view(index, &json!({"name": "demo", "file_path": file_path}))
}

#[test]
fn reads_a_file_inside_the_skill() {
    let (index, _home) = setup();
    let result = view(&index, "references/api.md").unwrap();
    assert_eq!(result["content"], "# API\n");
    assert_eq!(
        view(&index, "./references/api.md").unwrap()["content"],
        "# API\n"
    );
}

#[test]
fn binary_files_are_reported_by_size() {
    let (index, _home) = setup();
    let result = view(&index, "assets/logo.png").unwrap();
    assert_eq!(result["binary"], true);
    assert_eq!(result["size"], 8);
    assert!(result.get("content").is_none());
}

#[test]
fn parent_and_absolute_paths_are_refused() {
    let (index, home) = setup();
    let absolute = home.path().join("secret.txt").display().to_string();
    for path in [
        "../../secret.txt",
        "references/../../../secret.txt",
        &absolute,
        "/etc/passwd",
    ] {
        let error = view(&index, path).unwrap_err();
        assert!(error.contains("invalid file_path"), "{path}: {error}");
        assert!(!error.contains("top secret"));
    }
}

#[cfg(unix)]
#[test]
fn symlinks_leading_out_are_refused_and_inside_ones_followed() {
    let (index, home) = setup();
    let skill = home.path().join("skills/demo");
    std::os::unix::fs::symlink(
        home.path().join("secret.txt"),
        skill.join("references/leak.md"),
    )
    .unwrap();
    std::os::unix::fs::symlink(home.path(), skill.join("references/up")).unwrap();
    std::os::unix::fs::symlink(
        skill.join("references/api.md"),
        skill.join("references/alias.md"),
    )
    .unwrap();
    for path in ["references/leak.md", "references/up/secret.txt"] {
        let error = view(&index, path).unwrap_err();
        assert!(
            error.contains("outside the skill directory"),
            "{path}: {error}"
        );
    }
    assert_eq!(
        view(&index, "references/alias.md").unwrap()["content"],
        "# API\n"
    );

    // The listing shows the inside symlink and not the escaping ones.
    let level1 = handle_skill_view(&index, &json!({"name": "demo"})).unwrap();
    assert_eq!(
        level1["files"]["references"],
        json!(["references/alias.md", "references/api.md"])
    );
}

#[test]
fn missing_files_directories_and_huge_text_are_errors() {
    let (index, home) = setup();
    assert!(
        view(&index, "references/none.md")
            .unwrap_err()
            .contains("no such file")
    );
    assert!(
        view(&index, "references")
            .unwrap_err()
            .contains("not a file")
    );
    let big = "y".repeat(1024 * 1024 + 1);
    crate::common::write(&home.path().join("skills"), "demo/references/big.md", &big);
    assert!(
        view(&index, "references/big.md")
            .unwrap_err()
            .contains("limit is 1048576")
    );
}

#[test]
fn huge_binary_is_still_reported_by_size() {
    let (index, home) = setup();
    let mut big = vec![0u8; 2 * 1024 * 1024];
    big[0] = 0xff;
    crate::common::write(&home.path().join("skills"), "demo/assets/big.bin", &big);
    let result = view(&index, "assets/big.bin").unwrap();
    assert_eq!(result["binary"], true);
    assert_eq!(result["size"], 2 * 1024 * 1024);
}

#[test]
fn unknown_skills_and_bad_arguments_are_clear_errors() {
    let (index, _home) = setup();
    let error = handle_skill_view(&index, &json!({"name": "nope"})).unwrap_err();
    assert!(error.contains("skill 'nope' not found"), "{error}");
    let error = handle_skill_view(&index, &json!({})).unwrap_err();
    assert!(
        error.contains("missing required argument 'name'"),
        "{error}"
    );
    let error = handle_skill_view(&index, &json!({"name": 3})).unwrap_err();
    assert!(error.contains("'name' must be a string"), "{error}");
}
