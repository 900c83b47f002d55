//! Conditional visibility: platforms, required and fallback toolsets/tools.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;

use talaria_skills::{SkillIndex, SkillRoots, Visibility, render_index};

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

fn index() -> (SkillIndex, tempfile::TempDir) {
    let home = tempfile::tempdir().unwrap();
    let root = home.path();
    let skill = |name: &str, extra: &str| {
        crate::common::write(
            root,
            &format!("{name}/SKILL.md"),
            format!("---\nname: {name}\ndescription: d\n{extra}---\nbody\n"),
        );
    };
    skill("anywhere", "");
    skill("mac-only", "platforms: [macos]\n");
    skill("unixy", "platforms: [linux, darwin]\n");
    skill(
        "needs-web",
        "metadata:\n  hermes:\n    requires_toolsets: [web]\n",
    );
    skill("needs-terminal-tool", "requires_tools: [terminal]\n");
    skill(
        "web-fallback",
        "metadata:\n  hermes:\n    fallback_for_toolsets: [web]\n",
    );
    skill("search-fallback", "fallback_for_tools: [web_search]\n");
    let (index, issues) = SkillIndex::load(SkillRoots::new(root));
    assert!(issues.is_empty(), "{issues:#?}");
    (index, home)
}

fn visible(index: &SkillIndex, platform: &str, toolsets: &[&str], tools: &[&str]) -> Vec<String> {
    let toolsets = set(toolsets);
    let tools = set(tools);
    let visibility = Visibility {
        platform,
        toolsets: &toolsets,
        tools: &tools,
    };
    index
        .visible(&visibility)
        .iter()
        .map(|s| s.name().to_owned())
        .collect()
}

#[test]
fn platforms_filter() {
    let (index, _home) = index();
    let linux = visible(&index, "linux", &[], &[]);
    assert!(linux.contains(&"unixy".to_owned()));
    assert!(!linux.contains(&"mac-only".to_owned()));
    let mac = visible(&index, "darwin", &[], &[]);
    assert!(mac.contains(&"mac-only".to_owned()) && mac.contains(&"unixy".to_owned()));
    let windows = visible(&index, "windows", &[], &[]);
    assert!(!windows.contains(&"unixy".to_owned()) && !windows.contains(&"mac-only".to_owned()));
    assert!(windows.contains(&"anywhere".to_owned()));
}

#[test]
fn requirements_must_be_available() {
    let (index, _home) = index();
    let bare = visible(&index, "linux", &[], &[]);
    assert!(!bare.contains(&"needs-web".to_owned()));
    assert!(!bare.contains(&"needs-terminal-tool".to_owned()));
    let full = visible(&index, "linux", &["web"], &["terminal"]);
    assert!(full.contains(&"needs-web".to_owned()));
    assert!(full.contains(&"needs-terminal-tool".to_owned()));
}

#[test]
fn fallbacks_hide_when_the_real_thing_is_there() {
    let (index, _home) = index();
    let bare = visible(&index, "linux", &[], &[]);
    assert!(bare.contains(&"web-fallback".to_owned()));
    assert!(bare.contains(&"search-fallback".to_owned()));
    let with_web = visible(&index, "linux", &["web"], &["web_search"]);
    assert!(!with_web.contains(&"web-fallback".to_owned()));
    assert!(!with_web.contains(&"search-fallback".to_owned()));
}

#[test]
fn render_shows_only_what_is_visible() {
    let (index, _home) = index();
    let toolsets = set(&[]);
    let tools = set(&[]);
    let visibility = Visibility {
        platform: "linux",
        toolsets: &toolsets,
        tools: &tools,
    };
    let rendered = render_index(&index.visible(&visibility));
    assert!(rendered.contains("  - web-fallback: d\n"));
    assert!(!rendered.contains("mac-only"));
    assert!(!rendered.contains("needs-web"));
}
