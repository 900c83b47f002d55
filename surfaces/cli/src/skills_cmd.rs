//! `talaria skill list|check`: the skills as the agent will load them.

use std::collections::BTreeSet;

use talaria_profile::ProfileHome;
use talaria_skills::{IssueKind, Skill, SkillIndex, SkillIssue};

use crate::args::SkillCommand;
use crate::exit::Status;

/// What the session the skills are judged against can call.
struct Enabled {
    tools: BTreeSet<String>,
    toolsets: BTreeSet<String>,
}

/// Runs a `talaria skill` subcommand.
pub async fn run(command: SkillCommand, home: &ProfileHome) -> Status {
    let (index, issues) = SkillIndex::load(talaria_agent::skill_roots(home));
    let skipped: Vec<&SkillIssue> = issues
        .iter()
        .filter(|issue| issue.kind == IssueKind::Skipped)
        .collect();
    match command {
        SkillCommand::List => {
            // Visibility as a terminal session of this profile would judge it; without a
            // usable profile, the conditions themselves are shown.
            let enabled = match crate::commands_cmd::terminal_session(home).await {
                Ok(agent) => {
                    let (tools, toolsets) = agent.enabled_tools();
                    Some(Enabled { tools, toolsets })
                }
                Err(reason) => {
                    eprintln!("note: {reason}; showing each skill's conditions instead");
                    None
                }
            };
            for skill in index.skills() {
                println!(
                    "{:<32} {:<24} {:<8} {}",
                    skill.name(),
                    skill.category,
                    if skill.bundled { "bundled" } else { "user" },
                    offered(skill, enabled.as_ref())
                );
            }
            for issue in &skipped {
                println!(
                    "{:<32} {:<24} {:<8} skipped: {}",
                    name_of(issue),
                    "-",
                    "-",
                    issue.reason
                );
            }
            for issue in issues.iter().filter(|i| i.kind == IssueKind::Warning) {
                eprintln!("note: {}: {}", issue.path.display(), issue.reason);
            }
            if index.skills().is_empty() && skipped.is_empty() {
                eprintln!(
                    "No skills yet (put them in {}).",
                    home.skills_dir().display()
                );
            }
            Status::Answered
        }
        SkillCommand::Check => {
            for issue in &skipped {
                eprintln!("broken: {}: {}", issue.path.display(), issue.reason);
            }
            if skipped.is_empty() {
                println!("{} skills load", index.skills().len());
                Status::Answered
            } else {
                eprintln!(
                    "{} of {} skills cannot load",
                    skipped.len(),
                    skipped.len() + index.skills().len()
                );
                Status::Failed
            }
        }
    }
}

/// Whether a terminal session offers the skill, or why not; with no session to judge
/// against, the conditions it waits for.
fn offered(skill: &Skill, enabled: Option<&Enabled>) -> String {
    let meta = &skill.meta;
    // Loaded platform lists are canonical (`macos`, `linux`, `windows`), as is the OS name.
    let here = std::env::consts::OS;
    if !meta.platforms.is_empty() && !meta.platforms.iter().any(|p| p == here) {
        return format!("hidden: only on {}", meta.platforms.join(", "));
    }
    let conditions = &meta.conditions;
    let Some(enabled) = enabled else {
        let needs = names(&conditions.requires_toolsets, &conditions.requires_tools);
        let fallback = names(
            &conditions.fallback_for_toolsets,
            &conditions.fallback_for_tools,
        );
        return match (needs.is_empty(), fallback.is_empty()) {
            (true, true) => "offered".to_owned(),
            (false, _) => format!("offered when {} is enabled", needs.join(", ")),
            (true, false) => format!("offered only when {} is missing", fallback.join(", ")),
        };
    };
    let missing: Vec<&str> = conditions
        .requires_toolsets
        .iter()
        .filter(|t| !enabled.toolsets.contains(*t))
        .chain(
            conditions
                .requires_tools
                .iter()
                .filter(|t| !enabled.tools.contains(*t)),
        )
        .map(String::as_str)
        .collect();
    if !missing.is_empty() {
        return format!("hidden: needs {}, not enabled", missing.join(", "));
    }
    let present: Vec<&str> = conditions
        .fallback_for_toolsets
        .iter()
        .filter(|t| enabled.toolsets.contains(*t))
        .chain(
            conditions
                .fallback_for_tools
                .iter()
                .filter(|t| enabled.tools.contains(*t)),
        )
        .map(String::as_str)
        .collect();
    if !present.is_empty() {
        return format!(
            "hidden: a fallback for {}, which is enabled",
            present.join(", ")
        );
    }
    "offered".to_owned()
}

fn names<'a>(toolsets: &'a [String], tools: &'a [String]) -> Vec<&'a str> {
    toolsets.iter().chain(tools).map(String::as_str).collect()
}

/// The skill directory's name of a skipped `SKILL.md`.
fn name_of(issue: &SkillIssue) -> String {
    let dir = if issue.path.ends_with("SKILL.md") {
        issue.path.parent()
    } else {
        Some(issue.path.as_path())
    };
    dir.and_then(|dir| dir.file_name()).map_or_else(
        || "?".to_owned(),
        |name| name.to_string_lossy().into_owned(),
    )
}
