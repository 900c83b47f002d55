//! Model-facing tool names: `mcp_<server>_<tool>` within the providers' rule
//! (`^[a-zA-Z0-9_-]{1,64}$`), unique, and the same for the same tools whatever order they come
//! in. What a name stands for is kept in a map; a name is never parsed back.

use std::collections::BTreeMap;

use sha2::{Digest, Sha256};

/// The longest tool name providers accept.
pub const MAX_TOOL_NAME: usize = 64;
/// Hex digits of the suffix that tells colliding or cut names apart.
const HASH_LEN: usize = 8;

/// What a model-facing name stands for.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Target {
    /// One of the server's own tools, by its original name.
    Tool {
        /// The server.
        server: String,
        /// The tool's name on the server.
        tool: String,
    },
    /// A helper Talaria adds for the server's resources or prompts.
    Helper {
        /// The server.
        server: String,
        /// Which helper.
        helper: Helper,
    },
}

impl Target {
    /// The server the name belongs to.
    pub fn server(&self) -> &str {
        match self {
            Target::Tool { server, .. } | Target::Helper { server, .. } => server,
        }
    }

    /// The label after `mcp_<server>_`.
    fn label(&self) -> &str {
        match self {
            Target::Tool { tool, .. } => tool,
            Target::Helper { helper, .. } => helper.label(),
        }
    }
}

/// The resource and prompt helpers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Helper {
    /// `resources/list`.
    ListResources,
    /// `resources/read`.
    ReadResource,
    /// `prompts/list`.
    ListPrompts,
    /// `prompts/get`.
    GetPrompt,
}

impl Helper {
    /// Its label in the tool name.
    pub fn label(self) -> &'static str {
        match self {
            Helper::ListResources => "list_resources",
            Helper::ReadResource => "read_resource",
            Helper::ListPrompts => "list_prompts",
            Helper::GetPrompt => "get_prompt",
        }
    }
}

/// Characters outside `[A-Za-z0-9_-]` become `_`.
pub fn sanitise(part: &str) -> String {
    part.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The name → target map of a set of tools.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolNames {
    by_name: BTreeMap<String, Target>,
}

impl ToolNames {
    /// Names every target. A name is `mcp_<server>_<label>` sanitised; when that is longer than
    /// [`MAX_TOOL_NAME`], or several targets share it, they get a suffix from a hash of the
    /// server and original name instead — except the one target that keeps it by right (the
    /// only server tool whose name needed no change), so adding a tool rarely renames another.
    pub fn assign(targets: impl IntoIterator<Item = Target>) -> Self {
        let mut groups: BTreeMap<String, Vec<Target>> = BTreeMap::new();
        for target in targets {
            let base = format!(
                "mcp_{}_{}",
                sanitise(target.server()),
                sanitise(target.label())
            );
            groups.entry(base).or_default().push(target);
        }
        let mut by_name = BTreeMap::new();
        let mut hashed = Vec::new();
        for (base, mut members) in groups {
            members.sort();
            members.dedup();
            let fits = base.len() <= MAX_TOOL_NAME;
            let mut ranked: Vec<(u8, Target)> = members
                .into_iter()
                .map(|target| (rank(&target), target))
                .collect();
            ranked.sort();
            let keeper = match ranked.as_slice() {
                [(first, _), (second, _), ..] if fits && first < second => Some(0),
                [_] if fits => Some(0),
                _ => None,
            };
            for (index, (_, target)) in ranked.into_iter().enumerate() {
                if keeper == Some(index) {
                    by_name.insert(base.clone(), target);
                } else {
                    hashed.push((base.clone(), target));
                }
            }
        }
        for (base, target) in hashed {
            let digest = hash(&target);
            let mut len = HASH_LEN;
            loop {
                let suffix = &digest[..len];
                let keep = MAX_TOOL_NAME - 1 - suffix.len();
                let stem = cut(&base, keep);
                let name = format!("{stem}_{suffix}");
                if !by_name.contains_key(&name) || len == digest.len() {
                    by_name.insert(name, target);
                    break;
                }
                len += 4;
            }
        }
        Self { by_name }
    }

    /// What `name` stands for.
    pub fn get(&self, name: &str) -> Option<&Target> {
        self.by_name.get(name)
    }

    /// The name given to `target`.
    pub fn name_of(&self, target: &Target) -> Option<&str> {
        self.by_name
            .iter()
            .find(|(_, t)| *t == target)
            .map(|(name, _)| name.as_str())
    }

    /// Every name with its target, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Target)> {
        self.by_name
            .iter()
            .map(|(name, target)| (name.as_str(), target))
    }

    /// How many names there are.
    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }
}

/// Who keeps a shared name: a server tool whose name needed no change, then a helper, then
/// anything changed by sanitising.
fn rank(target: &Target) -> u8 {
    let exact = |s: &str| sanitise(s) == s;
    match target {
        Target::Tool { server, tool } if exact(server) && exact(tool) => 0,
        Target::Helper { .. } => 1,
        Target::Tool { .. } => 2,
    }
}

fn hash(target: &Target) -> String {
    let mut hasher = Sha256::new();
    let kind = match target {
        Target::Tool { .. } => "tool",
        Target::Helper { .. } => "helper",
    };
    for part in [kind, target.server(), target.label()] {
        hasher.update(part.as_bytes());
        hasher.update([0]);
    }
    hasher
        .finalize()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// The first `len` bytes of an ASCII name.
fn cut(name: &str, len: usize) -> &str {
    &name[..len.min(name.len())]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(server: &str, tool: &str) -> Target {
        Target::Tool {
            server: server.into(),
            tool: tool.into(),
        }
    }

    fn valid(name: &str) -> bool {
        !name.is_empty()
            && name.len() <= MAX_TOOL_NAME
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    }

    #[test]
    fn plain_names_are_prefixed_and_sanitised() {
        let names = ToolNames::assign([tool("fs", "read_file"), tool("my-api", "list.items v2")]);
        assert_eq!(
            names.get("mcp_fs_read_file"),
            Some(&tool("fs", "read_file"))
        );
        assert_eq!(
            names.get("mcp_my-api_list_items_v2"),
            Some(&tool("my-api", "list.items v2"))
        );
        assert_eq!(names.len(), 2);
    }

    #[test]
    fn collisions_get_stable_hash_suffixes_whatever_the_order() {
        let targets = [
            tool("s", "a.b"),
            tool("s", "a b"),
            tool("s", "a_b"),
            Target::Helper {
                server: "s".into(),
                helper: Helper::ListPrompts,
            },
            tool("s", "list_prompts"),
        ];
        let forward = ToolNames::assign(targets.clone());
        let backward = ToolNames::assign(targets.iter().rev().cloned());
        assert_eq!(forward, backward);
        assert_eq!(forward.len(), 5);
        // The tool whose name needed no change keeps the plain name.
        assert_eq!(forward.get("mcp_s_a_b"), Some(&tool("s", "a_b")));
        assert_eq!(
            forward.get("mcp_s_list_prompts"),
            Some(&tool("s", "list_prompts"))
        );
        for (name, target) in forward.iter() {
            assert!(valid(name), "{name}");
            if !matches!(name, "mcp_s_a_b" | "mcp_s_list_prompts") {
                assert!(
                    name.len() == "mcp_s_a_b_".len() + HASH_LEN
                        || name.starts_with("mcp_s_list_prompts_"),
                    "{name}"
                );
            }
            assert_eq!(forward.name_of(target), Some(name));
        }
    }

    #[test]
    fn two_changed_names_both_get_suffixes() {
        let names = ToolNames::assign([tool("s", "a.b"), tool("s", "a b")]);
        assert!(names.get("mcp_s_a_b").is_none());
        assert_eq!(names.len(), 2);
    }

    #[test]
    fn long_names_are_cut_with_a_suffix_and_stay_unique() {
        let long = "x".repeat(80);
        let names = ToolNames::assign([
            tool("server", &format!("{long}1")),
            tool("server", &format!("{long}2")),
            tool("s", &"y".repeat(58)),
        ]);
        assert_eq!(names.len(), 3);
        for (name, _) in names.iter() {
            assert!(valid(name), "{name}");
        }
        // Exactly 64 characters fits as it is.
        assert!(names.get(&format!("mcp_s_{}", "y".repeat(58))).is_some());
    }
}
