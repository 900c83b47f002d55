//! Every `skill_manage` action through the tool handler, including scanner
//! rejection, size limits, path escapes and bundled skills being read-only.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use talaria_skills::{
    SkillManager, SkillRoots, handle_skill_manage, handle_skill_view, handle_skills_list,
};

struct Setup {
    manager: SkillManager,
    root: PathBuf,
    bundled: PathBuf,
    _home: tempfile::TempDir,
}

fn setup() -> Setup {
    let home = tempfile::tempdir().unwrap();
    let root = home.path().join("skills");
    let bundled = home.path().join("bundled");
    crate::common::write(
        &root,
        "ops/deploy/SKILL.md",
        crate::common::skill_md("deploy", "Deploys."),
    );
    crate::common::write(
        &bundled,
        "shipped/stock/SKILL.md",
        crate::common::skill_md("stock", "Shipped."),
    );
    let (manager, issues) = SkillManager::load(SkillRoots::new(&root).with_bundled(&bundled));
    assert!(issues.is_empty(), "{issues:#?}");
    Setup {
        manager,
        root,
        bundled,
        _home: home,
    }
}

impl Setup {
    fn run(&mut self, args: Value) -> Result<Value, String> {
        handle_skill_manage(&mut self.manager, &args, &crate::common::refuse_evil)
    }

    fn body(&self, name: &str) -> String {
        let view = handle_skill_view(self.manager.index(), &json!({"name": name})).unwrap();
        view["content"].as_str().unwrap().to_owned()
    }
}

/// Everything under `dir`, for "nothing changed" checks.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                out.push((path.clone(), Vec::new()));
                stack.push(path);
            } else {
                out.push((path.clone(), fs::read(&path).unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn create_makes_a_skill_visible_to_later_calls() {
    let mut s = setup();
    let content = crate::common::skill_md("new-skill", "Does new things.");
    let result = s
        .run(
            json!({"action": "create", "name": "new-skill", "category": "dev", "content": content}),
        )
        .unwrap();
    assert_eq!(result["success"], true);
    assert_eq!(result["action"], "create");
    assert!(
        result["message"]
            .as_str()
            .unwrap()
            .contains("category 'dev'")
    );
    assert_eq!(
        fs::read_to_string(s.root.join("dev/new-skill/SKILL.md")).unwrap(),
        content
    );
    assert_eq!(s.body("new-skill"), "# new-skill\n\nSteps.\n");
    let listed = handle_skills_list(s.manager.index(), &json!({"category": "dev"})).unwrap();
    assert_eq!(listed["skills"][0]["name"], "new-skill");

    // No category: directly under the root, category "general".
    s.run(json!({"action": "create", "name": "flat", "content": crate::common::skill_md("flat", "d")}))
        .unwrap();
    assert!(s.root.join("flat/SKILL.md").is_file());
    assert_eq!(s.manager.index().get("flat").unwrap().category, "general");
}

#[test]
fn create_refusals() {
    let mut s = setup();
    let before = snapshot(&s.root);
    let create =
        |name: &str, content: String| json!({"action": "create", "name": name, "content": content});
    let cases = [
        (
            create("deploy", crate::common::skill_md("deploy", "d")),
            "already exists",
        ),
        (
            create("stock", crate::common::skill_md("stock", "d")),
            "bundled",
        ),
        (
            create("other", crate::common::skill_md("mismatch", "d")),
            "does not match",
        ),
        (
            create("Bad_Name", crate::common::skill_md("Bad_Name", "d")),
            "invalid name",
        ),
        (
            create("no-fm", "# no frontmatter".to_owned()),
            "no YAML frontmatter",
        ),
        (
            create(
                "long-desc",
                crate::common::skill_md("long-desc", &"d".repeat(1025)),
            ),
            "limit is 1024",
        ),
        (
            create(
                "big",
                format!(
                    "{}{}",
                    crate::common::skill_md("big", "d"),
                    "x".repeat(100 * 1024)
                ),
            ),
            "limit is 102400 bytes",
        ),
        (
            create("ops", crate::common::skill_md("ops", "d")),
            "directory",
        ),
        (
            json!({"action": "create", "name": "x", "category": "ops/deploy", "content": crate::common::skill_md("x", "d")}),
            "invalid name 'ops/deploy'",
        ),
        (
            json!({"action": "create", "name": "y"}),
            "missing required argument 'content'",
        ),
        (
            create("evil", crate::common::skill_md("evil", "EVIL text")),
            "security scan",
        ),
    ];
    for (args, expected) in cases {
        let error = s.run(args.clone()).unwrap_err();
        assert!(error.contains(expected), "{args}: {error}");
    }
    assert_eq!(
        snapshot(&s.root),
        before,
        "a refused create changes nothing"
    );
}

#[test]
fn create_under_a_skill_directory_is_refused() {
    let mut s = setup();
    crate::common::write(
        &s.root,
        "loose/SKILL.md",
        crate::common::skill_md("loose", "d"),
    );
    s.manager.reload();
    let error = s
        .run(json!({"action": "create", "name": "x", "category": "loose", "content": crate::common::skill_md("x", "d")}))
        .unwrap_err();
    assert!(error.contains("is a skill, not a category"), "{error}");
}

#[test]
fn edit_replaces_the_whole_file() {
    let mut s = setup();
    let content = crate::common::skill_md("deploy", "Deploys better.");
    s.run(json!({"action": "edit", "name": "deploy", "content": content}))
        .unwrap();
    assert_eq!(
        s.manager.index().get("deploy").unwrap().meta.description,
        "Deploys better."
    );

    let before = snapshot(&s.root);
    for (content, expected) in [
        (crate::common::skill_md("renamed", "d"), "does not match"),
        (crate::common::skill_md("deploy", "EVIL"), "security scan"),
        (
            "---\nname: deploy\n---\n".to_owned(),
            "'description' is missing",
        ),
    ] {
        let error = s
            .run(json!({"action": "edit", "name": "deploy", "content": content}))
            .unwrap_err();
        assert!(error.contains(expected), "{error}");
    }
    assert_eq!(snapshot(&s.root), before);
}

#[test]
fn patch_skill_md() {
    let mut s = setup();
    s.run(json!({"action": "patch", "name": "deploy", "old_string": "Steps.", "new_string": "Run make deploy."}))
        .unwrap();
    assert_eq!(s.body("deploy"), "# deploy\n\nRun make deploy.\n");

    // The description changes in the index straight away.
    s.run(json!({"action": "patch", "name": "deploy", "old_string": "description: Deploys.", "new_string": "description: Ships it."}))
        .unwrap();
    assert_eq!(
        s.manager.index().get("deploy").unwrap().meta.description,
        "Ships it."
    );

    let before = snapshot(&s.root);
    let patch = |old: &str, new: &str| json!({"action": "patch", "name": "deploy", "old_string": old, "new_string": new});
    for (args, expected) in [
        (patch("absent", "x"), "was not found in SKILL.md"),
        (patch("deploy", "x"), "occurs 3 times in SKILL.md"),
        (patch("name: deploy", "name: other"), "does not match"),
        (patch("---\nname", "name"), "invalid SKILL.md"),
        (patch("Run make deploy.", "EVIL"), "security scan"),
        (patch("", "x"), "old_string is empty"),
        (
            json!({"action": "patch", "name": "deploy", "old_string": "x"}),
            "missing required argument 'new_string'",
        ),
    ] {
        let error = s.run(args.clone()).unwrap_err();
        assert!(error.contains(expected), "{args}: {error}");
    }
    assert_eq!(snapshot(&s.root), before);

    s.run(json!({"action": "patch", "name": "deploy", "old_string": "# deploy", "new_string": "# Deploy", "replace_all": "true"}))
        .unwrap();
    assert!(s.body("deploy").starts_with("# Deploy\n"));
}

#[test]
fn patch_replace_all_and_supporting_files() {
    let mut s = setup();
    s.run(json!({"action": "write_file", "name": "deploy", "file_path": "references/notes.md", "file_content": "a a a\n"}))
        .unwrap();
    let args = |all: bool| json!({"action": "patch", "name": "deploy", "file_path": "references/notes.md", "old_string": "a", "new_string": "b", "replace_all": all});
    let error = s.run(args(false)).unwrap_err();
    assert!(
        error.contains("occurs 3 times in references/notes.md"),
        "{error}"
    );
    s.run(args(true)).unwrap();
    let path = s.root.join("ops/deploy/references/notes.md");
    assert_eq!(fs::read_to_string(&path).unwrap(), "b b b\n");

    let error = s
        .run(json!({"action": "patch", "name": "deploy", "file_path": "../../other.md", "old_string": "a", "new_string": "b"}))
        .unwrap_err();
    assert!(error.contains("'..' is not allowed"), "{error}");
    let error = s
        .run(json!({"action": "patch", "name": "deploy", "file_path": "references/none.md", "old_string": "a", "new_string": "b"}))
        .unwrap_err();
    assert!(error.contains("no such file"), "{error}");
}

#[test]
fn write_and_remove_files() {
    let mut s = setup();
    let write = |path: &str, content: &str| json!({"action": "write_file", "name": "deploy", "file_path": path, "file_content": content});
    s.run(write("scripts/nested/run.sh", "#!/bin/sh\necho hi\n"))
        .unwrap();
    s.run(write("scripts/nested/run.sh", "#!/bin/sh\necho bye\n"))
        .unwrap();
    let file = s.root.join("ops/deploy/scripts/nested/run.sh");
    assert_eq!(fs::read_to_string(&file).unwrap(), "#!/bin/sh\necho bye\n");
    let view = handle_skill_view(s.manager.index(), &json!({"name": "deploy"})).unwrap();
    assert_eq!(view["files"]["scripts"], json!(["scripts/nested/run.sh"]));
    let level2 = handle_skill_view(
        s.manager.index(),
        &json!({"name": "deploy", "file_path": "scripts/nested/run.sh"}),
    )
    .unwrap();
    assert_eq!(level2["content"], "#!/bin/sh\necho bye\n");

    let before = snapshot(&s.root);
    for (args, expected) in [
        (write("SKILL.md", "x"), "files go under references/"),
        (write("notes.md", "x"), "files go under references/"),
        (write("references", "x"), "files go under references/"),
        (
            write("references/../../escape.md", "x"),
            "'..' is not allowed",
        ),
        (write("/tmp/abs.md", "x"), "absolute paths are not allowed"),
        (write("assets/evil.txt", "EVIL"), "security scan"),
        (
            write("assets/big.txt", &"z".repeat(1024 * 1024 + 1)),
            "limit is 1048576 bytes",
        ),
        (write("scripts/nested", "x"), "it is a directory"),
        (
            json!({"action": "write_file", "name": "deploy", "file_path": "assets/a"}),
            "missing required argument 'file_content'",
        ),
    ] {
        let error = s.run(args.clone()).unwrap_err();
        assert!(error.contains(expected), "{}: {error}", args["file_path"]);
    }
    assert_eq!(snapshot(&s.root), before);

    s.run(json!({"action": "remove_file", "name": "deploy", "file_path": "scripts/nested/run.sh"}))
        .unwrap();
    assert!(
        !s.root.join("ops/deploy/scripts").exists(),
        "empty directories are tidied"
    );
    assert!(s.root.join("ops/deploy/SKILL.md").is_file());
    for (path, expected) in [
        ("scripts/nested/run.sh", "no such file"),
        ("SKILL.md", "files go under references/"),
        ("../deploy/SKILL.md", "'..' is not allowed"),
    ] {
        let error = s
            .run(json!({"action": "remove_file", "name": "deploy", "file_path": path}))
            .unwrap_err();
        assert!(error.contains(expected), "{path}: {error}");
    }
}

#[cfg(unix)]
#[test]
fn writes_never_follow_symlinks_out_of_the_skill() {
    let mut s = setup();
    let outside = s.root.parent().unwrap().join("outside");
    fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, s.root.join("ops/deploy/references")).unwrap();
    fs::write(outside.join("target.md"), "a").unwrap();
    for args in [
        json!({"action": "write_file", "name": "deploy", "file_path": "references/x.md", "file_content": "x"}),
        json!({"action": "remove_file", "name": "deploy", "file_path": "references/target.md"}),
        json!({"action": "patch", "name": "deploy", "file_path": "references/target.md", "old_string": "a", "new_string": "b"}),
    ] {
        let error = s.run(args).unwrap_err();
        assert!(error.contains("symbolic link"), "{error}");
    }
    assert_eq!(fs::read_to_string(outside.join("target.md")).unwrap(), "a");
    assert!(!outside.join("x.md").exists());
}

#[test]
fn delete_removes_the_skill_and_its_empty_category() {
    let mut s = setup();
    s.run(json!({"action": "delete", "name": "deploy"}))
        .unwrap();
    assert!(!s.root.join("ops").exists());
    assert!(s.manager.index().get("deploy").is_none());
    let error = handle_skill_view(s.manager.index(), &json!({"name": "deploy"})).unwrap_err();
    assert!(error.contains("not found"));
    let error = s
        .run(json!({"action": "delete", "name": "deploy"}))
        .unwrap_err();
    assert!(error.contains("not found"), "{error}");
}

#[test]
fn bundled_skills_are_read_only() {
    let mut s = setup();
    let before = snapshot(&s.bundled);
    for args in [
        json!({"action": "delete", "name": "stock"}),
        json!({"action": "edit", "name": "stock", "content": crate::common::skill_md("stock", "d")}),
        json!({"action": "patch", "name": "stock", "old_string": "Steps.", "new_string": "x"}),
        json!({"action": "write_file", "name": "stock", "file_path": "references/a.md", "file_content": "x"}),
        json!({"action": "remove_file", "name": "stock", "file_path": "references/a.md"}),
    ] {
        let error = s.run(args.clone()).unwrap_err();
        assert!(error.contains("bundled and read-only"), "{args}: {error}");
    }
    assert_eq!(snapshot(&s.bundled), before);
    assert!(s.manager.index().get("stock").is_some());
}

#[test]
fn argument_errors() {
    let mut s = setup();
    for (args, expected) in [
        (
            json!({"name": "deploy"}),
            "missing required argument 'action'",
        ),
        (
            json!({"action": "delete"}),
            "missing required argument 'name'",
        ),
        (
            json!({"action": "rename", "name": "deploy"}),
            "unknown action 'rename'",
        ),
        (json!("create"), "must be a JSON object"),
        (
            json!({"action": "patch", "name": "deploy", "old_string": "a", "new_string": "b", "replace_all": 3}),
            "'replace_all' must be true or false",
        ),
    ] {
        let error = s.run(args.clone()).unwrap_err();
        assert!(error.contains(expected), "{args}: {error}");
    }
}

#[test]
fn writes_leave_no_temp_files() {
    let mut s = setup();
    s.run(json!({"action": "edit", "name": "deploy", "content": crate::common::skill_md("deploy", "v2")}))
        .unwrap();
    s.run(json!({"action": "write_file", "name": "deploy", "file_path": "assets/a.txt", "file_content": "x"}))
        .unwrap();
    let names: Vec<String> = snapshot(&s.root)
        .into_iter()
        .map(|(path, _)| path.strip_prefix(&s.root).unwrap().display().to_string())
        .collect();
    assert_eq!(
        names,
        [
            "ops",
            "ops/deploy",
            "ops/deploy/SKILL.md",
            "ops/deploy/assets",
            "ops/deploy/assets/a.txt"
        ]
    );
}

#[cfg(unix)]
#[test]
fn written_files_get_normal_permissions_and_keep_existing_ones() {
    use std::os::unix::fs::PermissionsExt;
    let mut s = setup();
    let skill_md = s.root.join("ops/deploy/SKILL.md");
    s.run(json!({"action": "edit", "name": "deploy", "content": crate::common::skill_md("deploy", "v2")}))
        .unwrap();
    assert_eq!(
        fs::metadata(&skill_md).unwrap().permissions().mode() & 0o777,
        0o644
    );
    s.run(json!({"action": "write_file", "name": "deploy", "file_path": "scripts/run.sh", "file_content": "a"}))
        .unwrap();
    let script = s.root.join("ops/deploy/scripts/run.sh");
    fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
    s.run(json!({"action": "write_file", "name": "deploy", "file_path": "scripts/run.sh", "file_content": "b"}))
        .unwrap();
    assert_eq!(
        fs::metadata(&script).unwrap().permissions().mode() & 0o777,
        0o755
    );
}

#[test]
fn the_scanner_sees_the_full_text_being_written() {
    let mut s = setup();
    let seen = std::cell::RefCell::new(Vec::new());
    let scan = |text: &str| {
        seen.borrow_mut().push(text.to_owned());
        Ok(())
    };
    handle_skill_manage(
        &mut s.manager,
        &json!({"action": "patch", "name": "deploy", "old_string": "Steps.", "new_string": "New steps."}),
        &scan,
    )
    .unwrap();
    assert_eq!(
        seen.borrow().as_slice(),
        [crate::common::skill_md("deploy", "Deploys.").replace("Steps.", "New steps.")]
    );
}

#[test]
fn patch_matches_a_crlf_skill_md_with_lf_text() {
    let mut s = setup();
    crate::common::write(
        &s.root,
        "win/SKILL.md",
        "\u{feff}---\r\nname: win\r\ndescription: d\r\n---\r\nline one\r\nline two\r\n",
    );
    s.manager.reload();
    s.run(json!({"action": "patch", "name": "win", "old_string": "line one\nline two", "new_string": "lines"}))
        .unwrap();
    assert_eq!(
        fs::read_to_string(s.root.join("win/SKILL.md")).unwrap(),
        "---\nname: win\ndescription: d\n---\nlines\n"
    );
}
