//! Tool handlers: JSON arguments in, JSON result (or an error string the
//! model reads) out.

use serde_json::{Value, json};

use crate::args::{optional_bool, optional_str, required_str};
use crate::error::SkillError;
use crate::index::SkillIndex;
use crate::manage::{ManageOutcome, Scanner, SkillManager};

/// `skills_list(category?)`: every loaded skill (or one category's) with
/// name, description and category, plus the count per category.
pub fn handle_skills_list(index: &SkillIndex, args: &Value) -> Result<Value, String> {
    let category = optional_str(args, "category")
        .map_err(|e| e.to_string())?
        .map(str::trim)
        .filter(|c| !c.is_empty());
    let skills: Vec<Value> = index
        .skills()
        .iter()
        .filter(|skill| category.is_none_or(|c| skill.category == c))
        .map(|skill| {
            json!({
                "name": skill.meta.name,
                "description": skill.meta.description,
                "category": skill.category,
            })
        })
        .collect();
    let categories = index.categories();
    let mut result = json!({
        "success": true,
        "count": skills.len(),
        "skills": skills,
        "categories": categories,
        "hint": "Load a skill with skill_view(name).",
    });
    if let Some(category) = category.filter(|c| !categories.contains_key(c)) {
        result["message"] = json!(format!(
            "No category '{category}'; the categories are listed under 'categories'."
        ));
    }
    Ok(result)
}

/// `skill_view(name, file_path?)`: level 1 or level 2.
pub fn handle_skill_view(index: &SkillIndex, args: &Value) -> Result<Value, String> {
    let view = || -> Result<Value, SkillError> {
        let name = required_str(args, "name", "the skill to load")?;
        let file_path = optional_str(args, "file_path")?;
        let view = index.view(name, file_path)?;
        let mut value = serde_json::to_value(view)
            .map_err(|e| SkillError::Argument(format!("cannot encode the result: {e}")))?;
        value["success"] = json!(true);
        if value["files"]
            .as_object()
            .is_some_and(|files| !files.is_empty())
        {
            value["hint"] = json!("Read a listed file with skill_view(name, file_path).");
        }
        Ok(value)
    };
    view().map_err(|e| e.to_string())
}

/// `skill_manage(action, name, …)`: every write is checked by `scan`.
pub fn handle_skill_manage(
    manager: &mut SkillManager,
    args: &Value,
    scan: Scanner<'_>,
) -> Result<Value, String> {
    manage(manager, args, scan)
        .map(|outcome| {
            json!({
                "success": true,
                "action": outcome.action,
                "name": outcome.name,
                "path": outcome.path.display().to_string(),
                "message": outcome.message,
            })
        })
        .map_err(|e| e.to_string())
}

fn manage(
    manager: &mut SkillManager,
    args: &Value,
    scan: Scanner<'_>,
) -> Result<ManageOutcome, SkillError> {
    const SKILL_MD: &str = "the full SKILL.md text ('---', name and description, '---', markdown)";
    let action = required_str(
        args,
        "action",
        "one of create, patch, edit, delete, write_file, remove_file",
    )?;
    let name = required_str(args, "name", "the skill's name")?;
    match action {
        "create" => {
            let content = required_str(args, "content", SKILL_MD)?;
            let category = optional_str(args, "category")?;
            manager.create(name, category, content, scan)
        }
        "edit" => {
            let content = required_str(args, "content", SKILL_MD)?;
            manager.edit(name, content, scan)
        }
        "patch" => {
            let old = required_str(args, "old_string", "the exact text to replace")?;
            let new = required_str(args, "new_string", "the replacement text (may be empty)")?;
            let replace_all = optional_bool(args, "replace_all")?;
            let file_path = optional_str(args, "file_path")?;
            manager.patch(name, file_path, old, new, replace_all, scan)
        }
        "delete" => manager.delete(name),
        "write_file" => {
            let hint = "a path under references/, templates/, scripts/ or assets/";
            let file_path = required_str(args, "file_path", hint)?;
            let content = required_str(args, "file_content", "the file's content")?;
            manager.write_file(name, file_path, content, scan)
        }
        "remove_file" => {
            let file_path = required_str(args, "file_path", "the file to remove")?;
            manager.remove_file(name, file_path)
        }
        other => Err(SkillError::Argument(format!(
            "unknown action '{other}'; use one of create, patch, edit, delete, write_file, remove_file"
        ))),
    }
}
