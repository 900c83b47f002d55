//! The system-prompt nudge that makes the agent keep its skills.

/// Prompt text telling the agent when to save and fix skills.
pub const SKILL_GUIDANCE: &str = "\
Skills are your procedural memory. After finishing a task that took 5 or more tool calls, or after \
working out a non-obvious fix, save the procedure with skill_manage(action=\"create\") so next time \
is quick: a SKILL.md with `name` and `description` frontmatter, then concise steps, commands and \
pitfalls. When a skill you used turned out wrong, outdated or incomplete, fix it right away with \
skill_manage(action=\"patch\"). Do not save one-off facts or trivial steps.";
