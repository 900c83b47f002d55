use super::{ParseMode, parse_skill_md};
use crate::error::SkillError;

fn parse(text: &str) -> Result<super::ParsedSkill, SkillError> {
    parse_skill_md(text, ParseMode::Load)
}

fn reason(text: &str) -> String {
    match parse(text) {
        Err(SkillError::InvalidSkill(reason)) => reason,
        other => panic!("expected an invalid skill, got {other:?}"),
    }
}

#[test]
fn minimal_skill() {
    let skill = parse("---\nname: demo\ndescription: Does things.\n---\n# Demo\n").unwrap();
    assert_eq!(skill.meta.name, "demo");
    assert_eq!(skill.meta.description, "Does things.");
    assert_eq!(skill.body, "# Demo\n");
    assert!(skill.warnings.is_empty());
}

#[test]
fn full_frontmatter_with_hermes_metadata() {
    let text = "---
name: demo
description: >
  Folded
  description.
version: 1.0
license: MIT
platforms: [macos, Linux, darwin]
tags: a, b
related_skills: [other]
allowed-tools: Bash(git:*) Read
requires_toolsets: [web]
custom_key: {nested: true}
metadata:
  author: someone
  hermes:
    tags: [b, c]
    requires_tools: [terminal]
    fallback_for_toolsets: [browser]
    fallback_for_tools: [web_search]
---
body";
    let skill = parse(text).unwrap();
    let meta = &skill.meta;
    assert_eq!(meta.description, "Folded description.");
    assert_eq!(meta.version.as_deref(), Some("1.0"));
    assert_eq!(meta.license.as_deref(), Some("MIT"));
    assert_eq!(meta.platforms, ["macos", "linux"]);
    assert_eq!(meta.tags, ["a", "b", "c"]);
    assert_eq!(meta.related_skills, ["other"]);
    assert_eq!(meta.allowed_tools, ["Bash(git:*)", "Read"]);
    assert_eq!(meta.conditions.requires_toolsets, ["web"]);
    assert_eq!(meta.conditions.requires_tools, ["terminal"]);
    assert_eq!(meta.conditions.fallback_for_toolsets, ["browser"]);
    assert_eq!(meta.conditions.fallback_for_tools, ["web_search"]);
    assert!(meta.frontmatter.get("custom_key").is_some());
    assert!(skill.warnings.is_empty(), "{:?}", skill.warnings);
}

#[test]
fn wrong_types_in_optional_fields_are_warnings() {
    let text = "---\nname: demo\ndescription: d\nlicense: [a]\nplatforms: {x: 1}\ntags: [a, {b: 1}]\n---\n";
    let skill = parse(text).unwrap();
    assert_eq!(skill.meta.license, None);
    assert!(skill.meta.platforms.is_empty());
    assert_eq!(skill.meta.tags, ["a"]);
    assert_eq!(skill.warnings.len(), 3, "{:?}", skill.warnings);
}

#[test]
fn required_fields_are_checked() {
    assert!(reason("# nothing").contains("no YAML frontmatter"));
    assert!(reason("---\ndescription: d\n---\n").contains("'name' is missing"));
    assert!(reason("---\nname: demo\n---\n").contains("'description' is missing"));
    assert!(reason("---\nname: 12\ndescription: d\n---\n").contains("must be a string"));
    assert!(reason("---\nname: Demo\ndescription: d\n---\n").contains("lowercase"));
    assert!(reason("---\nname: demo\ndescription: '  '\n---\n").contains("empty"));
    assert!(reason("---\n- a\n- b\n---\n").contains("mapping"));
    assert!(reason("---\n---\n").contains("mapping"));
    assert!(reason("---\nname: [unclosed\n---\n").contains("not valid YAML"));
    assert!(reason("---\nname: a\nname: b\ndescription: d\n---\n").contains("not valid YAML"));
}

#[test]
fn description_limits_depend_on_the_mode() {
    let text = |n: usize| format!("---\nname: demo\ndescription: {}\n---\n", "d".repeat(n));
    let at_limit = parse_skill_md(&text(1024), ParseMode::Write).unwrap();
    assert_eq!(at_limit.meta.description.len(), 1024);
    assert!(parse_skill_md(&text(1025), ParseMode::Write).is_err());

    let loaded = parse(&text(1068)).unwrap();
    assert_eq!(loaded.meta.description.chars().count(), 1024);
    assert!(loaded.meta.description.ends_with("..."));
    assert_eq!(loaded.warnings.len(), 1);
    assert!(reason(&text(4097)).contains("4097 characters"));
}

#[test]
fn billion_laughs_is_refused_not_expanded() {
    let mut yaml =
        String::from("---\nname: demo\ndescription: d\na0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..12 {
        let prev = i - 1;
        yaml.push_str(&format!(
            "a{i}: &a{i} [*a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}]\n"
        ));
    }
    yaml.push_str("---\n");
    assert!(parse(&yaml).is_err());
}

#[test]
fn deep_nesting_is_refused_not_overflowed() {
    let text = format!(
        "---\nname: demo\ndescription: d\nx: {}{}\n---\n",
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    assert!(parse(&text).is_err());
}

mod prop {
    use proptest::prelude::*;

    use super::super::{ParseMode, parse_skill_md};

    proptest! {
        #[test]
        fn never_panics_on_arbitrary_text(text in ".{0,400}") {
            let _ = parse_skill_md(&text, ParseMode::Load);
        }

        #[test]
        fn never_panics_on_arbitrary_frontmatter(yaml in "[a-z:\\-\\[\\]{}&*!|>'\" \n#0-9,]{0,300}") {
            let _ = parse_skill_md(&format!("---\n{yaml}\n---\nbody"), ParseMode::Load);
        }
    }
}
