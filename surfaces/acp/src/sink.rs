//! The loop's events as editor updates. The kernel's sink is synchronous, so
//! updates go through an unbounded channel to the connection's task.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use talaria_kernel::{AgentEvent, EventSink, StreamEvent};
use tokio::sync::mpsc::UnboundedSender;

use crate::types::{Diff, Outbound, PlanItem, PlanStatus, ToolKind, ToolStart, Update};

/// Largest file read to show the "before" side of a `write_file` diff.
const MAX_DIFF_BYTES: u64 = 512 * 1024;

/// The latest call id of each tool name: an approval names the tool, not the call.
pub type CallIds = Arc<Mutex<HashMap<String, String>>>;

/// Forwards one session's events.
pub struct UpdateSink {
    out: UnboundedSender<Outbound>,
    calls: CallIds,
    cwd: PathBuf,
    /// The context window, for usage updates.
    window: u64,
    /// Whether the current model call streamed any visible text (else its
    /// final text is sent whole: a provider with streaming off sends no deltas).
    streamed: AtomicBool,
    cost: Mutex<f64>,
}

impl UpdateSink {
    pub fn new(out: UnboundedSender<Outbound>, calls: CallIds, cwd: PathBuf, window: u64) -> Self {
        Self {
            out,
            calls,
            cwd,
            window,
            streamed: AtomicBool::new(false),
            cost: Mutex::new(0.0),
        }
    }

    fn send(&self, update: Update) {
        let _ = self.out.send(Outbound::Update(update));
    }
}

impl EventSink for UpdateSink {
    fn emit(&self, event: AgentEvent) {
        match event {
            AgentEvent::Stream(StreamEvent::TextDelta { text }) => {
                self.streamed.store(true, Ordering::Relaxed);
                self.send(Update::AgentText(text));
            }
            AgentEvent::Stream(StreamEvent::ReasoningDelta { text }) => {
                self.send(Update::Thought(text));
            }
            AgentEvent::ModelRequest { .. } => self.streamed.store(false, Ordering::Relaxed),
            AgentEvent::ToolStarted {
                id,
                name,
                arguments,
            } => {
                if let Ok(mut calls) = self.calls.lock() {
                    calls.insert(name.clone(), id.clone());
                }
                self.send(Update::ToolStarted(tool_start(
                    &id, &name, &arguments, &self.cwd,
                )));
            }
            AgentEvent::ToolFinished {
                id,
                name,
                content,
                is_error,
                ..
            } => {
                let plan = (name == "todo" && !is_error)
                    .then(|| plan_from_todo(&content))
                    .flatten();
                self.send(Update::ToolFinished {
                    id,
                    failed: is_error,
                    text: content,
                });
                if let Some(plan) = plan {
                    self.send(Update::Plan(plan));
                }
            }
            AgentEvent::Usage {
                usage, cost_usd, ..
            } => {
                let cost = match self.cost.lock() {
                    Ok(mut total) => {
                        *total += cost_usd;
                        *total
                    }
                    Err(_) => cost_usd,
                };
                self.send(Update::Usage {
                    used: usage.input_tokens + usage.output_tokens,
                    size: self.window,
                    cost_usd: cost,
                });
            }
            AgentEvent::Final { text } => {
                if !self.streamed.load(Ordering::Relaxed) && !text.is_empty() {
                    self.send(Update::AgentText(text));
                }
            }
            AgentEvent::Warning { message } => eprintln!("talaria acp: warning: {message}"),
            AgentEvent::Retrying { attempt, error, .. } => {
                eprintln!("talaria acp: retrying the model (attempt {attempt}): {error}")
            }
            _ => {}
        }
    }
}

/// The editor's grouping of a tool by its name.
pub fn tool_kind(name: &str) -> ToolKind {
    match name {
        "read_file" => ToolKind::Read,
        "write_file" | "patch" => ToolKind::Edit,
        "search_files" | "session_search" => ToolKind::Search,
        "terminal" | "execute_code" | "process" => ToolKind::Execute,
        "todo" => ToolKind::Think,
        web if web.starts_with("web_") => ToolKind::Fetch,
        "browser_navigate" => ToolKind::Fetch,
        _ => ToolKind::Other,
    }
}

/// A started call: its kind, a title, the files it touches and, for a whole-file
/// write, the diff.
pub fn tool_start(id: &str, name: &str, arguments: &str, cwd: &Path) -> ToolStart {
    let args: Option<Value> = serde_json::from_str(arguments).ok();
    let field = |key: &str| {
        args.as_ref()
            .and_then(|a| a.get(key))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let absolute = |path: &str| {
        let path = Path::new(path);
        if path.is_absolute() {
            path.to_path_buf()
        } else {
            cwd.join(path)
        }
    };
    let path = field("path").or_else(|| field("file_path"));
    let locations: Vec<PathBuf> = path.iter().map(|p| absolute(p)).collect();
    let title = match (name, &path, field("command"), field("pattern")) {
        ("terminal", _, Some(command), _) => format!("Run `{}`", one_line(&command)),
        ("execute_code", _, _, _) => match field("code") {
            Some(code) => format!("Run a script: `{}`", one_line(&code)),
            None => "Run a script".to_owned(),
        },
        (_, _, _, Some(pattern)) if tool_kind(name) == ToolKind::Search => {
            format!("Search for `{}`", one_line(&pattern))
        }
        ("read_file", Some(path), _, _) => format!("Read {path}"),
        ("write_file", Some(path), _, _) => format!("Write {path}"),
        ("patch", Some(path), _, _) => format!("Edit {path}"),
        _ => name.to_owned(),
    };
    let diff = match (name, locations.first(), field("content")) {
        ("write_file", Some(path), Some(new_text)) => Some(Diff {
            path: path.clone(),
            old_text: read_small(path),
            new_text,
        }),
        _ => None,
    };
    ToolStart {
        id: id.to_owned(),
        title,
        kind: tool_kind(name),
        locations,
        raw_input: args,
        diff,
    }
}

fn read_small(path: &Path) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() || meta.len() > MAX_DIFF_BYTES {
        return None;
    }
    std::fs::read_to_string(path).ok()
}

fn one_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    let mut short: String = line.chars().take(120).collect();
    if short.len() < text.len() {
        short.push('…');
    }
    short
}

/// The `todo` tool's result (`{"todos": [{id, content, status}]}`) as plan entries.
pub fn plan_from_todo(content: &str) -> Option<Vec<PlanItem>> {
    let value: Value = serde_json::from_str(content).ok()?;
    let todos = value.get("todos")?.as_array()?;
    Some(
        todos
            .iter()
            .filter_map(|item| {
                let content = item.get("content")?.as_str()?.to_owned();
                let status = match item.get("status").and_then(Value::as_str) {
                    Some("in_progress") => PlanStatus::InProgress,
                    Some("completed") => PlanStatus::Completed,
                    // The protocol has no "cancelled": a dropped item is no longer pending.
                    Some("cancelled") => return None,
                    _ => PlanStatus::Pending,
                };
                Some(PlanItem { content, status })
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_are_grouped_by_name() {
        assert_eq!(tool_kind("read_file"), ToolKind::Read);
        assert_eq!(tool_kind("patch"), ToolKind::Edit);
        assert_eq!(tool_kind("search_files"), ToolKind::Search);
        assert_eq!(tool_kind("process"), ToolKind::Execute);
        assert_eq!(tool_kind("web_extract"), ToolKind::Fetch);
        assert_eq!(tool_kind("browser_navigate"), ToolKind::Fetch);
        assert_eq!(tool_kind("browser_click"), ToolKind::Other);
        assert_eq!(tool_kind("mcp_docs_lookup"), ToolKind::Other);
    }

    #[test]
    fn a_write_shows_its_file_and_diff() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "old\n").unwrap();
        let start = tool_start(
            "c1",
            "write_file",
            r#"{"path": "a.txt", "content": "new\n"}"#,
            dir.path(),
        );
        assert_eq!(start.kind, ToolKind::Edit);
        assert_eq!(start.locations, vec![dir.path().join("a.txt")]);
        assert_eq!(start.title, "Write a.txt");
        let diff = start.diff.unwrap();
        assert_eq!(diff.old_text.as_deref(), Some("old\n"));
        assert_eq!(diff.new_text, "new\n");
        let broken = tool_start("c2", "terminal", "{not json", dir.path());
        assert_eq!(broken.title, "terminal");
        assert!(broken.raw_input.is_none());
    }

    #[test]
    fn the_todo_list_becomes_a_plan() {
        let plan = plan_from_todo(
            r#"{"todos": [{"id": "1", "content": "a", "status": "completed"},
                          {"id": "2", "content": "b", "status": "in_progress"},
                          {"id": "3", "content": "c", "status": "cancelled"},
                          {"id": "4", "content": "d", "status": "pending"}]}"#,
        )
        .unwrap();
        let statuses: Vec<_> = plan
            .iter()
            .map(|p| (p.content.as_str(), p.status))
            .collect();
        assert_eq!(
            statuses,
            [
                ("a", PlanStatus::Completed),
                ("b", PlanStatus::InProgress),
                ("d", PlanStatus::Pending)
            ]
        );
        assert!(plan_from_todo("not json").is_none());
    }
}
