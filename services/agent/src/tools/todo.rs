//! `todo`: the agent's task list for the current session (Hermes-compatible:
//! `todos` = list of {id, content, status}, `merge`).

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use talaria_kernel::{ToolContext, ToolSpec};

use super::NativeTool;

const STATUSES: [&str; 4] = ["pending", "in_progress", "completed", "cancelled"];

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct TodoItem {
    id: String,
    content: String,
    status: String,
}

/// Per-session task lists.
#[derive(Debug, Default)]
pub struct TodoTool {
    lists: Mutex<HashMap<String, Vec<TodoItem>>>,
}

#[async_trait]
impl NativeTool for TodoTool {
    fn toolset(&self) -> &'static str {
        "todo"
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "todo".into(),
            description: "Manage your task list for this session. Call with no arguments to read \
                it. Pass `todos` to replace the list, or with `merge: true` to update items by id \
                and add new ones. Use it for work with 3 or more steps; keep one item in_progress."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "todos": {
                        "type": "array",
                        "description": "Items to write.",
                        "items": {
                            "type": "object",
                            "properties": {
                                "id": {"type": "string", "description": "Stable identifier."},
                                "content": {"type": "string", "description": "What to do."},
                                "status": {"type": "string", "enum": STATUSES}
                            },
                            "required": ["id"]
                        }
                    },
                    "merge": {
                        "type": "boolean",
                        "description": "Update by id and add new items instead of replacing the list.",
                        "default": false
                    }
                }
            }),
            refunds_iteration: false,
        }
    }

    async fn call(&self, arguments: &Value, context: &ToolContext) -> Result<Value, String> {
        let merge = match arguments.get("merge") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(merge)) => *merge,
            Some(other) => return Err(format!("'merge' must be true or false, not {other}")),
        };
        let updates = match arguments.get("todos") {
            None | Some(Value::Null) => None,
            Some(Value::Array(items)) => Some(parse_items(items)?),
            Some(_) => return Err("'todos' must be a list of {id, content, status}".into()),
        };
        let mut lists = self
            .lists
            .lock()
            .map_err(|_| "todo list unavailable".to_owned())?;
        let list = lists.entry(context.session_id.clone()).or_default();
        if let Some(updates) = updates {
            apply(list, updates, merge)?;
        }
        Ok(render(list))
    }
}

/// An item as given: fields other than `id` may be left out when merging.
struct Update {
    id: String,
    content: Option<String>,
    status: Option<String>,
}

fn parse_items(items: &[Value]) -> Result<Vec<Update>, String> {
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let field = |name: &str| -> Result<Option<String>, String> {
                match item.get(name) {
                    None | Some(Value::Null) => Ok(None),
                    Some(Value::String(s)) => Ok(Some(s.clone())),
                    Some(Value::Number(n)) if name == "id" => Ok(Some(n.to_string())),
                    Some(other) => Err(format!("todos[{i}].{name} must be a string, not {other}")),
                }
            };
            if !item.is_object() {
                return Err(format!(
                    "todos[{i}] must be an object with id, content and status"
                ));
            }
            let id = field("id")?.filter(|id| !id.trim().is_empty());
            let id = id.ok_or_else(|| format!("todos[{i}] needs a non-empty 'id'"))?;
            let status = field("status")?;
            if let Some(status) = &status
                && !STATUSES.contains(&status.as_str())
            {
                return Err(format!(
                    "todos[{i}].status '{status}' is not one of {}",
                    STATUSES.join(", ")
                ));
            }
            Ok(Update {
                id,
                content: field("content")?,
                status,
            })
        })
        .collect()
}

fn apply(list: &mut Vec<TodoItem>, updates: Vec<Update>, merge: bool) -> Result<(), String> {
    if !merge {
        let mut fresh: Vec<TodoItem> = Vec::with_capacity(updates.len());
        for update in updates {
            let content = update.content.ok_or_else(|| {
                format!("todo '{}' needs 'content' (or use merge: true)", update.id)
            })?;
            let item = TodoItem {
                id: update.id,
                content,
                status: update.status.unwrap_or_else(|| "pending".into()),
            };
            match fresh.iter_mut().find(|existing| existing.id == item.id) {
                Some(existing) => *existing = item,
                None => fresh.push(item),
            }
        }
        *list = fresh;
        return Ok(());
    }
    for update in updates {
        match list.iter_mut().find(|item| item.id == update.id) {
            Some(item) => {
                if let Some(content) = update.content {
                    item.content = content;
                }
                if let Some(status) = update.status {
                    item.status = status;
                }
            }
            None => {
                let content = update
                    .content
                    .ok_or_else(|| format!("new todo '{}' needs 'content'", update.id))?;
                list.push(TodoItem {
                    id: update.id,
                    content,
                    status: update.status.unwrap_or_else(|| "pending".into()),
                });
            }
        }
    }
    Ok(())
}

fn render(list: &[TodoItem]) -> Value {
    let count = |status: &str| list.iter().filter(|item| item.status == status).count();
    json!({
        "todos": list,
        "summary": {
            "total": list.len(),
            "pending": count("pending"),
            "in_progress": count("in_progress"),
            "completed": count("completed"),
            "cancelled": count("cancelled"),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(id: &str) -> ToolContext {
        ToolContext {
            session_id: id.into(),
        }
    }

    #[tokio::test]
    async fn replace_then_merge_then_read() {
        let tool = TodoTool::default();
        let written = tool
            .call(
                &json!({"todos": [
                    {"id": "1", "content": "plan", "status": "in_progress"},
                    {"id": "2", "content": "build"}
                ]}),
                &ctx("s"),
            )
            .await
            .unwrap();
        assert_eq!(written["summary"]["total"], 2);
        assert_eq!(written["todos"][1]["status"], "pending");

        let merged = tool
            .call(
                &json!({"merge": true, "todos": [
                    {"id": "1", "status": "completed"},
                    {"id": "3", "content": "ship"}
                ]}),
                &ctx("s"),
            )
            .await
            .unwrap();
        assert_eq!(
            merged["todos"][0],
            json!({"id": "1", "content": "plan", "status": "completed"})
        );
        assert_eq!(merged["summary"]["total"], 3);
        assert_eq!(merged["summary"]["completed"], 1);

        let read = tool.call(&json!({}), &ctx("s")).await.unwrap();
        assert_eq!(read, merged);
        let other = tool.call(&json!({}), &ctx("other")).await.unwrap();
        assert_eq!(other["summary"]["total"], 0, "lists are per session");
    }

    #[tokio::test]
    async fn bad_items_are_refused_and_the_list_is_kept() {
        let tool = TodoTool::default();
        tool.call(&json!({"todos": [{"id": "1", "content": "a"}]}), &ctx("s"))
            .await
            .unwrap();
        let error = tool
            .call(
                &json!({"todos": [{"id": "2", "content": "b", "status": "done"}]}),
                &ctx("s"),
            )
            .await
            .unwrap_err();
        assert!(
            error.contains("'done' is not one of pending, in_progress"),
            "{error}"
        );
        let error = tool
            .call(&json!({"todos": [{"content": "no id"}]}), &ctx("s"))
            .await
            .unwrap_err();
        assert!(error.contains("needs a non-empty 'id'"), "{error}");
        let error = tool
            .call(&json!({"todos": [{"id": "9"}]}), &ctx("s"))
            .await
            .unwrap_err();
        assert!(error.contains("needs 'content'"), "{error}");
        let read = tool.call(&json!({}), &ctx("s")).await.unwrap();
        assert_eq!(
            read["todos"],
            json!([{"id": "1", "content": "a", "status": "pending"}])
        );
    }
}
