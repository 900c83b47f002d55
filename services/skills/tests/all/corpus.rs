//! The real corpus (Anthropic's public skills) parses, lists and renders.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::json;
use talaria_skills::{
    IssueKind, SkillIndex, SkillRoots, SkillView, Visibility, handle_skill_view,
    handle_skills_list, render_index,
};

fn skill_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            skill_files(&path, found);
        } else if path.file_name().is_some_and(|n| n == "SKILL.md") {
            found.push(path);
        }
    }
}

fn load() -> (
    SkillIndex,
    Vec<talaria_skills::SkillIssue>,
    tempfile::TempDir,
) {
    let home = tempfile::tempdir().unwrap();
    let roots = SkillRoots::new(home.path().join("skills")).with_bundled(crate::common::corpus());
    let (index, issues) = SkillIndex::load(roots);
    (index, issues, home)
}

#[test]
fn every_skill_md_in_the_corpus_parses_and_lists() {
    let mut files = Vec::new();
    skill_files(&crate::common::corpus(), &mut files);
    assert_eq!(files.len(), 12, "the corpus README promises 12 skills");

    let (index, issues, _home) = load();
    let skipped: Vec<_> = issues
        .iter()
        .filter(|i| i.kind == IssueKind::Skipped)
        .collect();
    assert!(skipped.is_empty(), "{skipped:#?}");
    assert_eq!(index.skills().len(), files.len());
    for file in &files {
        let dir_name = file
            .parent()
            .unwrap()
            .file_name()
            .unwrap()
            .to_str()
            .unwrap();
        let skill = index.get(dir_name).expect(dir_name);
        assert_eq!(skill.category, "anthropic");
        assert!(skill.bundled);
        assert!(!skill.meta.description.is_empty());
    }
    // Only claude-api is over the spec's description limit: loaded, truncated, warned.
    let warnings: Vec<_> = issues
        .iter()
        .filter(|i| i.kind == IssueKind::Warning)
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:#?}");
    assert!(warnings[0].path.ends_with("claude-api/SKILL.md"));
    assert_eq!(
        index
            .get("claude-api")
            .unwrap()
            .meta
            .description
            .chars()
            .count(),
        1024
    );

    let listed = handle_skills_list(&index, &json!({})).unwrap();
    assert_eq!(listed["count"], 12);
    assert_eq!(listed["categories"], json!({"anthropic": 12}));
    let names: Vec<&str> = listed["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted);
    assert!(names.contains(&"mcp-builder"));

    let filtered = handle_skills_list(&index, &json!({"category": "nope"})).unwrap();
    assert_eq!(filtered["count"], 0);
    assert!(filtered["message"].as_str().unwrap().contains("nope"));
}

#[test]
fn mcp_builder_files_are_listed_at_level_1_and_readable_at_level_2() {
    let (index, _, _home) = load();
    let SkillView::Skill(page) = index.view("mcp-builder", None).unwrap() else {
        panic!("expected level 1");
    };
    assert!(page.content.starts_with("# MCP Server Development Guide"));
    assert!(
        !page.content.contains("name: mcp-builder"),
        "frontmatter is not body"
    );
    assert_eq!(
        page.files.references,
        [
            "reference/evaluation.md",
            "reference/mcp_best_practices.md",
            "reference/node_mcp_server.md",
            "reference/python_mcp_server.md",
        ]
    );
    assert_eq!(page.files.scripts, ["scripts/requirements.txt"]);
    assert_eq!(page.files.other, ["LICENSE.txt"]);

    for file in &page.files.references {
        let on_disk = fs::read_to_string(
            crate::common::corpus()
                .join("anthropic/mcp-builder")
                .join(file),
        )
        .unwrap();
        let result =
            handle_skill_view(&index, &json!({"name": "mcp-builder", "file_path": file})).unwrap();
        assert_eq!(result["content"].as_str().unwrap(), on_disk, "{file}");
        assert_eq!(result["binary"], false);
        assert_eq!(result["size"], on_disk.len());
    }

    let level1 = handle_skill_view(&index, &json!({"name": "anthropic/mcp-builder"})).unwrap();
    assert_eq!(level1["success"], true);
    assert_eq!(level1["bundled"], true);
    assert!(level1["files"]["references"].is_array());
}

#[test]
fn render_index_is_byte_stable_and_ordered() {
    let (index, _, _home) = load();
    let toolsets = BTreeSet::new();
    let tools = BTreeSet::new();
    let visibility = Visibility {
        platform: "linux",
        toolsets: &toolsets,
        tools: &tools,
    };
    let visible = index.visible(&visibility);
    assert_eq!(visible.len(), 12);
    let first = render_index(&visible);

    let mut reversed = visible.clone();
    reversed.reverse();
    assert_eq!(
        render_index(&reversed),
        first,
        "input order does not matter"
    );

    let (again, _, _home2) = load();
    assert_eq!(
        render_index(&again.visible(&visibility)),
        first,
        "reload gives the same bytes"
    );

    assert!(first.contains("<available_skills>\nanthropic:\n  - algorithmic-art: "));
    assert!(first.ends_with("</available_skills>\n"));
    let lines: Vec<&str> = first.lines().filter(|l| l.starts_with("  - ")).collect();
    assert_eq!(lines.len(), 12);
    let mut sorted = lines.clone();
    sorted.sort_unstable();
    assert_eq!(lines, sorted);
    // The multi-line claude-api description is on one line.
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("  - claude-api: Reference for the Claude API"))
    );
    assert_eq!(render_index(&[]), "");
}
