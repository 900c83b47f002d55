//! Level 0: the skill index block of the system prompt.

use std::fmt::Write as _;

use crate::index::Skill;

/// Renders the skills offered this session as a compact block, grouped by
/// category, sorted by category then name whatever the input order, one line
/// per skill with its description on one line. The same skills always give
/// the same bytes (the prompt prefix is cached). No skills, no block.
pub fn render_index(skills: &[&Skill]) -> String {
    if skills.is_empty() {
        return String::new();
    }
    let mut sorted = skills.to_vec();
    sorted.sort_by(|a, b| (&a.category, &a.meta.name).cmp(&(&b.category, &b.meta.name)));
    sorted.dedup_by(|a, b| a.category == b.category && a.meta.name == b.meta.name);
    let mut out = String::from(
        "Skills: before replying, check whether one of these matches the task; if one does, \
         load it with skill_view(name) and follow it.\n<available_skills>\n",
    );
    let mut category: Option<&str> = None;
    for skill in sorted {
        if category != Some(skill.category.as_str()) {
            category = Some(skill.category.as_str());
            let _ = writeln!(out, "{}:", skill.category);
        }
        let description = skill
            .meta
            .description
            .split_whitespace()
            .collect::<Vec<_>>();
        let _ = writeln!(out, "  - {}: {}", skill.meta.name, description.join(" "));
    }
    out.push_str("</available_skills>\n");
    out
}
