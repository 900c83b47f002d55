//! The three tools' names, descriptions and argument schemas (Hermes
//! argument names, so skills written for Hermes call them unchanged).

use serde_json::{Value, json};

/// Name of the listing tool.
pub const SKILLS_LIST: &str = "skills_list";
/// Name of the viewing tool.
pub const SKILL_VIEW: &str = "skill_view";
/// Name of the managing tool.
pub const SKILL_MANAGE: &str = "skill_manage";

/// What `skills_list` does, for the model.
pub const SKILLS_LIST_DESCRIPTION: &str = "List the available skills (name, description, \
    category) with a count per category, optionally only one category. Load one with skill_view.";

/// What `skill_view` does, for the model.
pub const SKILL_VIEW_DESCRIPTION: &str = "Load a skill: with just `name`, its instructions \
    (SKILL.md body) and the list of its supporting files; with `file_path` too, the content of \
    that file (e.g. references/api.md). Load a skill before doing a task it matches.";

/// What `skill_manage` does, for the model.
pub const SKILL_MANAGE_DESCRIPTION: &str = "Create and maintain your skills (reusable \
    procedures). Actions: create (name, content = the full SKILL.md: '---' frontmatter with \
    name and description, '---', then markdown; optional category), edit (name, content: \
    replaces SKILL.md), patch (name, old_string, new_string, optional replace_all and file_path; \
    old_string must match exactly and be unique unless replace_all), delete (name), write_file \
    (name, file_path under references/, templates/, scripts/ or assets/, file_content), \
    remove_file (name, file_path). Bundled skills are read-only.";

/// Arguments of `skills_list`.
pub fn skills_list_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "category": {
                "type": "string",
                "description": "Only list skills in this category."
            }
        }
    })
}

/// Arguments of `skill_view`.
pub fn skill_view_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {
                "type": "string",
                "description": "The skill's name (or category/name)."
            },
            "file_path": {
                "type": "string",
                "description": "A file of the skill, relative to its directory \
                    (e.g. references/api.md). Omit to load the skill itself."
            }
        },
        "required": ["name"]
    })
}

/// Arguments of `skill_manage`.
pub fn skill_manage_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "action": {
                "type": "string",
                "enum": ["create", "patch", "edit", "delete", "write_file", "remove_file"],
                "description": "What to do."
            },
            "name": {
                "type": "string",
                "description": "The skill's name: lowercase letters, digits and hyphens, at most 64."
            },
            "content": {
                "type": "string",
                "description": "create/edit: the full SKILL.md (frontmatter with name and \
                    description, then the markdown instructions)."
            },
            "old_string": {
                "type": "string",
                "description": "patch: the exact text to replace."
            },
            "new_string": {
                "type": "string",
                "description": "patch: the replacement (may be empty)."
            },
            "replace_all": {
                "type": "boolean",
                "description": "patch: replace every occurrence instead of exactly one.",
                "default": false
            },
            "category": {
                "type": "string",
                "description": "create: the category directory (default: general)."
            },
            "file_path": {
                "type": "string",
                "description": "patch: a file of the skill to patch instead of SKILL.md; \
                    write_file/remove_file: a path under references/, templates/, scripts/ or assets/."
            },
            "file_content": {
                "type": "string",
                "description": "write_file: the file's content."
            }
        },
        "required": ["action", "name"]
    })
}
