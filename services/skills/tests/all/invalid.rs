//! Broken skills are reported with their file and a reason, and skipped;
//! the rest still load.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use talaria_skills::{IssueKind, SkillIndex, SkillIssue, SkillRoots};

fn skipped_reason<'a>(issues: &'a [SkillIssue], dir: &str) -> &'a str {
    let issue = issues
        .iter()
        .find(|i| i.kind == IssueKind::Skipped && i.path.parent().unwrap().ends_with(dir))
        .unwrap_or_else(|| panic!("no skipped issue for {dir}: {issues:#?}"));
    assert!(issue.path.ends_with("SKILL.md"), "{issue}");
    &issue.reason
}

#[test]
fn invalid_skills_are_reported_and_skipped() {
    let home = tempfile::tempdir().unwrap();
    let root = home.path();
    let write = |rel: &str, content: &[u8]| {
        crate::common::write(root, rel, content);
    };
    write(
        "good/ok/SKILL.md",
        crate::common::skill_md("ok", "Fine.").as_bytes(),
    );
    write("bad/no-frontmatter/SKILL.md", b"# Just markdown\n");
    write(
        "bad/broken-yaml/SKILL.md",
        b"---\nname: broken-yaml\ndescription: [unclosed\n---\n",
    );
    let long_name = "n".repeat(65);
    write(
        &format!("bad/{long_name}/SKILL.md"),
        crate::common::skill_md(&long_name, "d").as_bytes(),
    );
    write(
        "bad/long-description/SKILL.md",
        crate::common::skill_md("long-description", &"d".repeat(5000)).as_bytes(),
    );
    let mut huge = crate::common::skill_md("huge", "Too big.");
    huge.push_str(&"x".repeat(300 * 1024));
    write("bad/huge/SKILL.md", huge.as_bytes());
    let junk: Vec<u8> = (0..4096u32).map(|i| (i * 7919 % 256) as u8).collect();
    write("bad/binary/SKILL.md", &junk);
    write("bad/no-name/SKILL.md", b"---\ndescription: d\n---\n");
    write(
        "bad/no-description/SKILL.md",
        b"---\nname: no-description\n---\n",
    );

    let (index, issues) = SkillIndex::load(SkillRoots::new(root));
    let names: Vec<&str> = index
        .skills()
        .iter()
        .map(talaria_skills::Skill::name)
        .collect();
    assert_eq!(names, ["ok"], "{issues:#?}");

    assert!(skipped_reason(&issues, "no-frontmatter").contains("no YAML frontmatter"));
    assert!(skipped_reason(&issues, "broken-yaml").contains("not valid YAML"));
    assert!(skipped_reason(&issues, &long_name).contains("65 characters"));
    assert!(skipped_reason(&issues, "long-description").contains("5000 characters"));
    assert!(skipped_reason(&issues, "huge").contains("limit is 262144 bytes"));
    assert!(skipped_reason(&issues, "binary").contains("not UTF-8"));
    assert!(skipped_reason(&issues, "no-name").contains("'name' is missing"));
    assert!(skipped_reason(&issues, "no-description").contains("'description' is missing"));
    assert_eq!(issues.len(), 8, "{issues:#?}");
    for issue in &issues {
        assert!(issue.to_string().contains("SKILL.md: skipped: "), "{issue}");
    }
}

#[test]
fn crlf_and_bom_files_load() {
    let home = tempfile::tempdir().unwrap();
    let text =
        "\u{feff}---\r\nname: windows\r\ndescription: Saved on Windows.\r\n---\r\n# Body\r\n";
    crate::common::write(home.path(), "windows/SKILL.md", text);
    let (index, issues) = SkillIndex::load(SkillRoots::new(home.path()));
    assert!(issues.is_empty(), "{issues:#?}");
    let skill = index.get("windows").unwrap();
    assert_eq!(skill.category, "general");
    assert_eq!(skill.meta.description, "Saved on Windows.");
    let talaria_skills::SkillView::Skill(page) = index.view("windows", None).unwrap() else {
        panic!("level 1");
    };
    assert_eq!(page.content, "# Body\n");
}

#[test]
fn name_differing_from_directory_is_a_warning() {
    let home = tempfile::tempdir().unwrap();
    crate::common::write(
        home.path(),
        "tools/dir-name/SKILL.md",
        crate::common::skill_md("front-name", "d"),
    );
    let (index, issues) = SkillIndex::load(SkillRoots::new(home.path()));
    assert!(index.get("front-name").is_some());
    assert_eq!(issues.len(), 1);
    assert_eq!(issues[0].kind, IssueKind::Warning);
    assert!(
        issues[0]
            .reason
            .contains("differs from its directory 'dir-name'")
    );
}

#[test]
fn duplicates_keep_the_first_root_and_report_the_rest() {
    let user = tempfile::tempdir().unwrap();
    let bundled = tempfile::tempdir().unwrap();
    crate::common::write(
        user.path(),
        "mine/dup/SKILL.md",
        crate::common::skill_md("dup", "Mine."),
    );
    crate::common::write(
        bundled.path(),
        "shipped/dup/SKILL.md",
        crate::common::skill_md("dup", "Shipped."),
    );
    let roots = SkillRoots::new(user.path()).with_bundled(bundled.path());
    let (index, issues) = SkillIndex::load(roots);
    let skill = index.get("dup").unwrap();
    assert_eq!(skill.meta.description, "Mine.");
    assert!(!skill.bundled);
    assert_eq!(issues.len(), 1);
    assert!(issues[0].reason.contains("duplicate skill name 'dup'"));
    assert!(issues[0].path.starts_with(bundled.path()));
}

#[test]
fn layout_rules() {
    let home = tempfile::tempdir().unwrap();
    let root = home.path();
    crate::common::write(root, "flat/SKILL.md", crate::common::skill_md("flat", "d"));
    crate::common::write(
        root,
        "cat/nested/SKILL.md",
        crate::common::skill_md("nested", "d"),
    );
    // A skill's subdirectories are its files, not more skills.
    crate::common::write(
        root,
        "flat/references/inner/SKILL.md",
        crate::common::skill_md("inner", "d"),
    );
    // Hidden directories and loose files are ignored.
    crate::common::write(
        root,
        ".hub/hidden/SKILL.md",
        crate::common::skill_md("hidden", "d"),
    );
    crate::common::write(root, "README.md", "not a skill");
    // Categories nest (Hermes: `mlops/evaluation/<skill>`), up to three folders.
    crate::common::write(
        root,
        "a/b/deep/SKILL.md",
        crate::common::skill_md("deep", "d"),
    );
    // Too deep for the layout.
    crate::common::write(
        root,
        "w/x/y/z/deeper/SKILL.md",
        crate::common::skill_md("deeper", "d"),
    );

    let (index, issues) = SkillIndex::load(SkillRoots::new(root));
    let found: Vec<(&str, &str)> = index
        .skills()
        .iter()
        .map(|s| (s.category.as_str(), s.name()))
        .collect();
    assert_eq!(
        found,
        [("a/b", "deep"), ("cat", "nested"), ("general", "flat")]
    );
    assert!(issues.is_empty(), "{issues:#?}");
    assert_eq!(index.categories().get("cat"), Some(&1));
}

#[test]
fn a_missing_root_is_empty_not_an_error() {
    let (index, issues) = SkillIndex::load(SkillRoots::new(Path::new("/nonexistent/talaria")));
    assert!(index.skills().is_empty());
    assert!(issues.is_empty());
}

#[test]
fn reload_sees_external_changes() {
    let home = tempfile::tempdir().unwrap();
    let path = crate::common::write(
        home.path(),
        "a/SKILL.md",
        crate::common::skill_md("a", "First."),
    );
    let (mut index, _) = SkillIndex::load(SkillRoots::new(home.path()));
    assert_eq!(index.get("a").unwrap().meta.description, "First.");
    std::fs::write(&path, crate::common::skill_md("a", "Second, longer.")).unwrap();
    crate::common::write(
        home.path(),
        "b/SKILL.md",
        crate::common::skill_md("b", "New."),
    );
    assert!(index.reload().is_empty());
    assert_eq!(index.get("a").unwrap().meta.description, "Second, longer.");
    assert!(index.get("b").is_some());
}

#[test]
fn hermes_layout_nested_categories_load_with_their_path() {
    let home = tempfile::tempdir().unwrap();
    let root = home.path();
    for (rel, name) in [
        ("mlops/evaluation/lm-eval/SKILL.md", "lm-eval"),
        ("mlops/inference/vllm-serve/SKILL.md", "vllm-serve"),
        ("a/b/c/deepest/SKILL.md", "deepest"),
        ("a/b/c/d/too-deep/SKILL.md", "too-deep"),
        ("top/SKILL.md", "top"),
    ] {
        crate::common::write(root, rel, crate::common::skill_md(name, "Does things."));
    }
    // About 100 KB of body: only the frontmatter matters for the index.
    let mut big = crate::common::skill_md("big-one", "A long skill.");
    big.push_str(&"word ".repeat(20_000));
    crate::common::write(root, "research/big-one/SKILL.md", big);

    let (index, issues) = SkillIndex::load(SkillRoots::new(root));
    let found: Vec<(String, &str)> = index
        .skills()
        .iter()
        .map(|s| (s.category.clone(), s.name()))
        .collect();
    assert!(
        found.contains(&("mlops/evaluation".into(), "lm-eval")),
        "{found:?}"
    );
    assert!(
        found.contains(&("mlops/inference".into(), "vllm-serve")),
        "{found:?}"
    );
    assert!(found.contains(&("a/b/c".into(), "deepest")), "{found:?}");
    assert!(found.contains(&("general".into(), "top")), "{found:?}");
    assert!(found.contains(&("research".into(), "big-one")), "{found:?}");
    assert!(
        !found.iter().any(|(_, n)| *n == "too-deep"),
        "four folders deep is too deep"
    );
    assert!(index.get("mlops/evaluation/lm-eval").is_some());
    assert!(
        issues.iter().all(|i| i.kind != IssueKind::Skipped),
        "{issues:#?}"
    );
}

#[test]
fn frontmatter_yaml_rejects_is_read_as_plain_lines_when_that_is_clean() {
    let home = tempfile::tempdir().unwrap();
    let root = home.path();
    crate::common::write(
        root,
        "tools/colon-desc/SKILL.md",
        "---\nname: colon-desc\ndescription: Use it: when the build breaks\n---\n# Body\n",
    );
    let (index, issues) = SkillIndex::load(SkillRoots::new(root));
    let skill = index.get("colon-desc").expect("loaded from plain lines");
    assert_eq!(skill.meta.description, "Use it: when the build breaks");
    assert!(
        issues
            .iter()
            .any(|i| i.kind == IssueKind::Warning && i.reason.contains("plain 'key: value'")),
        "{issues:#?}"
    );
}

/// A skill written by anything (a command's `cp` as much as `skill_manage`) passes the scan
/// when it is loaded and again when it is read; one it refuses is skipped, named, never shown.
#[test]
fn skills_the_scan_refuses_are_left_out_at_load_and_at_view() {
    let home = tempfile::tempdir().unwrap();
    let root = home.path();
    crate::common::write(
        root,
        "x/planted/SKILL.md",
        crate::common::skill_md("planted", "Helps. EVIL orders inside.").as_bytes(),
    );
    crate::common::write(
        root,
        "x/fine/SKILL.md",
        crate::common::skill_md("fine", "Helps.").as_bytes(),
    );
    let scan = talaria_skills::ContentScan(std::sync::Arc::new(crate::common::refuse_evil));
    let roots = SkillRoots::new(root).with_scan(scan);
    let (index, issues) = SkillIndex::load(roots);
    let names: Vec<&str> = index
        .skills()
        .iter()
        .map(talaria_skills::Skill::name)
        .collect();
    assert_eq!(names, ["fine"]);
    let reason = skipped_reason(&issues, "planted");
    assert!(
        reason.contains("security scan") && reason.contains("EVIL"),
        "{reason}"
    );
    // Changed after loading: reading it again refuses it too.
    crate::common::write(
        root,
        "x/fine/SKILL.md",
        crate::common::skill_md("fine", "Helps.")
            .replace("Steps.", "EVIL steps.")
            .as_bytes(),
    );
    crate::common::write(root, "x/fine/notes.md", "EVIL notes");
    let err = index.view("fine", None).unwrap_err();
    assert!(err.to_string().contains("security scan"), "{err}");
    let err = index.view("fine", Some("notes.md")).unwrap_err();
    assert!(err.to_string().contains("security scan"), "{err}");
}
