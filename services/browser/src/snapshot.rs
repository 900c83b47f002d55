//! A page as the model reads it: Chromium's accessibility tree as indented
//! text, one line per meaningful node, with `[ref=eN]` on the elements the
//! model can act on. Refs name DOM nodes (their backend ids) and are
//! replaced by each snapshot.

use std::collections::HashMap;
use std::fmt::Write;

use serde_json::Value;

/// Roles that can be clicked or typed into: these get refs.
const INTERACTIVE: &[&str] = &[
    "button",
    "link",
    "textbox",
    "searchbox",
    "checkbox",
    "radio",
    "combobox",
    "listbox",
    "option",
    "menuitem",
    "menuitemcheckbox",
    "menuitemradio",
    "tab",
    "switch",
    "slider",
    "spinbutton",
    "treeitem",
    "PopUpButton",
];

/// Roles that only group others; shown only in full snapshots, and then
/// only when they have a name.
const STRUCTURAL: &[&str] = &[
    "generic",
    "none",
    "presentation",
    "group",
    "LayoutTable",
    "LayoutTableRow",
    "LayoutTableCell",
    "InlineTextBox",
    "LineBreak",
    "Section",
    "div",
];

/// Longest text line of a compact snapshot.
const COMPACT_TEXT: usize = 300;

/// A rendered snapshot and the DOM nodes behind its refs.
#[derive(Debug, Default)]
pub(crate) struct Snapshot {
    pub text: String,
    /// `e1` → the node's backend DOM id.
    pub refs: HashMap<String, Ref>,
}

/// What a ref points at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ref {
    pub backend_node: i64,
    pub role: String,
    pub name: String,
}

struct Node<'a> {
    raw: &'a Value,
    children: Vec<&'a str>,
}

/// Renders the nodes of `Accessibility.getFullAXTree`; `full` keeps
/// structural nodes with names, link targets and whole texts.
pub(crate) fn render(nodes: &[Value], full: bool) -> Snapshot {
    let by_id: HashMap<&str, Node<'_>> = nodes
        .iter()
        .filter_map(|raw| {
            let id = raw["nodeId"].as_str()?;
            let children = raw["childIds"]
                .as_array()
                .map(|ids| ids.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            Some((id, Node { raw, children }))
        })
        .collect();
    let root = nodes
        .iter()
        .find(|n| n.get("parentId").is_none())
        .and_then(|n| n["nodeId"].as_str());
    let mut out = Renderer {
        by_id: &by_id,
        full,
        snapshot: Snapshot::default(),
    };
    if let Some(root) = root {
        out.node(root, 0, None);
    }
    out.snapshot
}

struct Renderer<'a> {
    by_id: &'a HashMap<&'a str, Node<'a>>,
    full: bool,
    snapshot: Snapshot,
}

impl Renderer<'_> {
    /// Renders `id` at `depth`; `parent_name` is the name of the nearest
    /// shown ancestor, whose text children would only repeat it.
    fn node(&mut self, id: &str, depth: usize, parent_name: Option<&str>) {
        let Some(node) = self.by_id.get(id) else {
            return;
        };
        let raw = node.raw;
        let role = raw["role"]["value"].as_str().unwrap_or("");
        let name = clean(raw["name"]["value"].as_str().unwrap_or(""));
        let ignored = raw["ignored"].as_bool().unwrap_or(false);
        let shown = !ignored && self.shown(role, &name, parent_name);
        let children = node.children.clone();
        if !shown {
            for child in children {
                self.node(child, depth, parent_name);
            }
            return;
        }
        let line = self.line(raw, role, &name);
        let _ = writeln!(self.snapshot.text, "{}- {line}", "  ".repeat(depth));
        let name_for_children = (!name.is_empty()).then_some(name.as_str());
        for child in children {
            self.node(child, depth + 1, name_for_children.or(parent_name));
        }
    }

    fn shown(&self, role: &str, name: &str, parent_name: Option<&str>) -> bool {
        match role {
            "RootWebArea" | "WebArea" | "" => false,
            "StaticText" => !name.is_empty() && parent_name != Some(name),
            _ if STRUCTURAL.contains(&role) => self.full && !name.is_empty(),
            _ => true,
        }
    }

    fn line(&mut self, raw: &Value, role: &str, name: &str) -> String {
        if role == "StaticText" {
            let text = if self.full {
                name.to_owned()
            } else {
                truncate(name, COMPACT_TEXT)
            };
            return format!("text: {text}");
        }
        let mut line = role.to_owned();
        if !name.is_empty() {
            let _ = write!(line, " \"{}\"", name.replace('"', "\\\""));
        }
        for (key, value) in properties(raw) {
            match (key, &value) {
                ("level", Value::Number(n)) => {
                    let _ = write!(line, " [level={n}]");
                }
                ("checked" | "pressed" | "selected" | "expanded", Value::String(s))
                    if s != "false" =>
                {
                    let _ = write!(line, " [{key}={s}]");
                }
                (
                    "checked" | "selected" | "expanded" | "disabled" | "required",
                    Value::Bool(true),
                ) => {
                    let _ = write!(line, " [{key}]");
                }
                ("url", Value::String(url)) if self.full => {
                    let _ = write!(line, " [url={url}]");
                }
                _ => {}
            }
        }
        if let Some(value) = raw["value"]["value"].as_str().filter(|v| !v.is_empty()) {
            let _ = write!(line, ": {}", truncate(&clean(value), COMPACT_TEXT));
        }
        let backend = raw["backendDOMNodeId"].as_i64();
        let focusable = properties(raw).any(|(key, value)| key == "focusable" && value == true);
        if let Some(backend_node) = backend
            && (INTERACTIVE.contains(&role) || focusable)
        {
            let key = format!("e{}", self.snapshot.refs.len() + 1);
            let _ = write!(line, " [ref={key}]");
            self.snapshot.refs.insert(
                key,
                Ref {
                    backend_node,
                    role: role.to_owned(),
                    name: name.to_owned(),
                },
            );
        }
        line
    }
}

fn properties(raw: &Value) -> impl Iterator<Item = (&str, Value)> {
    raw["properties"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| Some((p["name"].as_str()?, p["value"]["value"].clone())))
}

/// One line of text: whitespace runs become one space.
fn clean(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn truncate(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn node(id: &str, parent: Option<&str>, role: &str, name: &str, children: &[&str]) -> Value {
        let mut n = json!({
            "nodeId": id,
            "ignored": false,
            "role": {"type": "role", "value": role},
            "name": {"type": "computedString", "value": name},
            "childIds": children,
            "backendDOMNodeId": id.parse::<i64>().unwrap_or(0) + 100,
        });
        if let Some(parent) = parent {
            n["parentId"] = json!(parent);
        }
        n
    }

    fn page() -> Vec<Value> {
        let mut heading = node("2", Some("1"), "heading", "Orders", &["3"]);
        heading["properties"] =
            json!([{"name": "level", "value": {"type": "integer", "value": 1}}]);
        let mut textbox = node("7", Some("5"), "textbox", "Name", &[]);
        textbox["value"] = json!({"type": "string", "value": "Ada"});
        let mut ignored = node("8", Some("1"), "generic", "", &["9"]);
        ignored["ignored"] = json!(true);
        vec![
            node("1", None, "RootWebArea", "Shop", &["2", "4", "5", "8"]),
            heading,
            node("3", Some("2"), "StaticText", "Orders", &[]),
            node("4", Some("1"), "StaticText", "You have   two\norders.", &[]),
            node("5", Some("1"), "generic", "", &["6", "7"]),
            node("6", Some("5"), "button", "Save \"all\"", &[]),
            textbox,
            ignored,
            node("9", Some("8"), "link", "Help", &["10"]),
            node("10", Some("9"), "StaticText", "Help", &[]),
        ]
    }

    #[test]
    fn renders_text_and_refs_for_what_can_be_acted_on() {
        let snapshot = render(&page(), false);
        assert_eq!(
            snapshot.text,
            "- heading \"Orders\" [level=1]\n\
             - text: You have two orders.\n\
             - button \"Save \\\"all\\\"\" [ref=e1]\n\
             - textbox \"Name\": Ada [ref=e2]\n\
             - link \"Help\" [ref=e3]\n"
        );
        assert_eq!(snapshot.refs.len(), 3);
        assert_eq!(snapshot.refs["e1"].backend_node, 106);
        assert_eq!(snapshot.refs["e2"].role, "textbox");
        assert_eq!(snapshot.refs["e3"].name, "Help");
    }

    #[test]
    fn compact_snapshots_cut_long_texts_and_full_ones_keep_them() {
        let long = "word ".repeat(200);
        let nodes = vec![
            node("1", None, "RootWebArea", "", &["2"]),
            node("2", Some("1"), "StaticText", &long, &[]),
        ];
        let compact = render(&nodes, false).text;
        assert!(compact.ends_with("…\n") && compact.len() < 400, "{compact}");
        let full = render(&nodes, true).text;
        assert!(full.len() > 900, "{full}");
    }

    #[test]
    fn an_empty_tree_renders_nothing() {
        let snapshot = render(&[], false);
        assert!(snapshot.text.is_empty() && snapshot.refs.is_empty());
    }
}
