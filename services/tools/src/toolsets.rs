//! Which tools the model may see: toolsets (named groups that may include
//! other toolsets), the user's enabled/disabled lists, and the surface's
//! profile, which the user's choices can narrow but never widen.

use std::collections::{BTreeMap, BTreeSet};

use crate::source::ToolEntry;

/// A problem with toolset definitions or selections.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolsetError {
    /// A toolset includes itself, directly or not.
    #[error("toolset '{0}' includes itself (through {1})")]
    Cycle(String, String),
    /// A name is neither a toolset nor a tool's toolset.
    #[error("unknown toolset '{name}' (known: {known})")]
    Unknown {
        /// The name.
        name: String,
        /// The toolsets that exist.
        known: String,
    },
}

/// A toolset made of tools and other toolsets.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ToolsetDef {
    /// Tool names.
    pub tools: Vec<String>,
    /// Other toolsets.
    pub includes: Vec<String>,
}

/// Every toolset: those tools declare (`file`, `terminal`…, each holding the
/// tools that name it) and composite ones defined here or by the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Toolsets {
    composites: BTreeMap<String, ToolsetDef>,
}

/// The toolsets every surface starts from.
const CORE: &[&str] = &[
    "file",
    "terminal",
    "todo",
    "memory",
    "skills",
    "session_search",
    "clarify",
    "web",
    "browser",
    "vision",
    "code_execution",
    "delegation",
    "cronjob",
    "messaging",
];

impl Default for Toolsets {
    fn default() -> Self {
        let mut composites = BTreeMap::new();
        composites.insert(
            "core".to_owned(),
            ToolsetDef {
                tools: Vec::new(),
                includes: CORE.iter().map(|s| (*s).to_owned()).collect(),
            },
        );
        Self { composites }
    }
}

impl Toolsets {
    /// Adds or replaces a composite toolset (from the user's config).
    pub fn define(&mut self, name: impl Into<String>, def: ToolsetDef) {
        self.composites.insert(name.into(), def);
    }

    /// The tool names in the named toolsets. `all` means every tool.
    pub fn resolve(
        &self,
        names: &[String],
        entries: &[ToolEntry],
    ) -> Result<BTreeSet<String>, ToolsetError> {
        let mut out = BTreeSet::new();
        for name in names {
            self.collect(name, entries, &mut Vec::new(), &mut out)?;
        }
        Ok(out)
    }

    fn collect(
        &self,
        name: &str,
        entries: &[ToolEntry],
        path: &mut Vec<String>,
        out: &mut BTreeSet<String>,
    ) -> Result<(), ToolsetError> {
        if path.iter().any(|p| p == name) {
            return Err(ToolsetError::Cycle(name.to_owned(), path.join(" → ")));
        }
        if name == "all" {
            out.extend(entries.iter().map(|e| e.spec.name.clone()));
            return Ok(());
        }
        let leaf: Vec<&ToolEntry> = entries.iter().filter(|e| e.toolset == name).collect();
        let composite = self.composites.get(name);
        if leaf.is_empty() && composite.is_none() && !CORE.contains(&name) {
            return Err(ToolsetError::Unknown {
                name: name.to_owned(),
                known: self.known(entries).join(", "),
            });
        }
        out.extend(leaf.into_iter().map(|e| e.spec.name.clone()));
        if let Some(def) = composite {
            out.extend(
                def.tools
                    .iter()
                    .filter(|t| entries.iter().any(|e| &e.spec.name == *t))
                    .cloned(),
            );
            path.push(name.to_owned());
            for include in &def.includes {
                self.collect(include, entries, path, out)?;
            }
            path.pop();
        }
        Ok(())
    }

    /// Every toolset name: `all`, the composites and the tools' toolsets.
    pub fn known(&self, entries: &[ToolEntry]) -> Vec<String> {
        let mut names: BTreeSet<String> = self.composites.keys().cloned().collect();
        names.extend(entries.iter().map(|e| e.toolset.clone()));
        names.insert("all".into());
        names.into_iter().collect()
    }
}

/// A surface's tool profile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profile {
    /// The surface (`cli`, `gateway`, `webhook`, `cron`, `batch`, `acp`, `api`, `child`).
    pub name: String,
    /// The toolsets it may use.
    pub toolsets: Vec<String>,
    /// Toolsets it never uses.
    pub excluded: Vec<String>,
    /// Tools it never uses, whatever toolset they are in.
    pub excluded_tools: Vec<String>,
    /// Only tools flagged read-only (no side effects).
    pub read_only: bool,
    /// When set, only these tools, whatever the toolsets say.
    pub only_tools: Option<Vec<String>>,
}

impl Profile {
    /// The profile of a surface; unknown surfaces get the most restrictive
    /// one (the public webhook's).
    pub fn for_surface(surface: &str) -> Self {
        let strings = |names: &[&str]| names.iter().map(|s| (*s).to_owned()).collect();
        let open = |excluded: &[&str]| Self {
            name: surface.to_owned(),
            toolsets: strings(&["all"]),
            excluded: strings(excluded),
            excluded_tools: Vec::new(),
            read_only: false,
            only_tools: None,
        };
        match surface {
            "cli" | "acp" | "gateway" => open(&[]),
            // Nobody is there to answer a question; a browser only when the
            // user's configuration asks for one here (see `admit`).
            "mcp" | "api" => open(&["clarify", "browser"]),
            // A scheduled run, or a batch item, neither asks, nor schedules
            // more runs, nor writes to chats on its own.
            "cron" | "batch" => Self {
                excluded_tools: strings(&["clarify", "cronjob", "send_message"]),
                ..open(&["clarify", "browser"])
            },
            // A delegated child neither delegates further, asks the user nor
            // writes the parent's memory; nor does it share the parent's
            // browser tab, which concurrent children would fight over.
            "child" => Self {
                excluded_tools: strings(&[
                    "delegate_task",
                    "clarify",
                    "memory",
                    "send_message",
                    "execute_code",
                ]),
                ..open(&["delegation", "clarify", "memory", "browser"])
            },
            _ => Self {
                name: surface.to_owned(),
                toolsets: strings(&["web", "vision", "clarify"]),
                excluded: Vec::new(),
                excluded_tools: Vec::new(),
                read_only: true,
                only_tools: Some(strings(&[
                    "web_search",
                    "web_extract",
                    "vision_analyze",
                    "clarify",
                ])),
            },
        }
    }
}

impl Profile {
    /// Lets the profile use `toolset` (made of `tools`) after all: the
    /// user's configuration offers it on this surface. Only configuration
    /// does this, never the model or a plugin.
    pub fn admit(&mut self, toolset: &str, tools: &[&str]) {
        self.excluded.retain(|name| name != toolset);
        self.excluded_tools
            .retain(|name| !tools.contains(&name.as_str()));
        if !self
            .toolsets
            .iter()
            .any(|name| name == "all" || name == toolset)
        {
            self.toolsets.push(toolset.to_owned());
        }
        if let Some(only) = &mut self.only_tools {
            only.extend(tools.iter().map(|tool| (*tool).to_owned()));
        }
    }
}

/// The user's choice of toolsets (config `tools.enabled` / `tools.disabled`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Selection {
    /// When set, only these toolsets (still within the profile).
    pub enabled: Option<Vec<String>>,
    /// Toolsets to leave out.
    pub disabled: Vec<String>,
}

impl Selection {
    /// The tools the model may see on `profile`; problems with the user's
    /// names are returned as notices (an unknown name selects nothing).
    pub fn visible(
        &self,
        toolsets: &Toolsets,
        profile: &Profile,
        entries: &[ToolEntry],
    ) -> (BTreeSet<String>, Vec<String>) {
        let mut notices = Vec::new();
        let mut resolve = |names: &[String]| -> BTreeSet<String> {
            let mut out = BTreeSet::new();
            for name in names {
                match toolsets.resolve(std::slice::from_ref(name), entries) {
                    Ok(tools) => out.extend(tools),
                    Err(error) => notices.push(error.to_string()),
                }
            }
            out
        };
        let mut visible = resolve(&profile.toolsets);
        if let Some(enabled) = &self.enabled {
            let chosen = resolve(enabled);
            visible.retain(|t| chosen.contains(t));
        }
        let removed = resolve(&[profile.excluded.clone(), self.disabled.clone()].concat());
        visible.retain(|t| !removed.contains(t) && !profile.excluded_tools.contains(t));
        visible.retain(|name| {
            let entry = entries.iter().find(|e| &e.spec.name == name);
            let read_only_ok = !profile.read_only || entry.is_some_and(|e| e.flags.read_only);
            let listed = profile
                .only_tools
                .as_ref()
                .is_none_or(|only| only.contains(name));
            read_only_ok && listed
        });
        (visible, notices)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::ToolFlags;
    use talaria_kernel::ToolSpec;

    fn entry(name: &str, toolset: &str, read_only: bool) -> ToolEntry {
        ToolEntry {
            spec: ToolSpec {
                name: name.into(),
                description: String::new(),
                parameters: serde_json::json!({"type": "object"}),
                refunds_iteration: false,
            },
            flags: ToolFlags {
                read_only,
                ..ToolFlags::default()
            },
            toolset: toolset.into(),
        }
    }

    fn entries() -> Vec<ToolEntry> {
        vec![
            entry("read_file", "file", true),
            entry("write_file", "file", false),
            entry("terminal", "terminal", false),
            entry("todo", "todo", false),
            entry("web_search", "web", true),
            entry("web_post", "web", false),
            // As the agent offers it: it waits for the user, so not read-only.
            entry("clarify", "clarify", false),
            entry("cronjob", "cronjob", false),
            entry("send_message", "messaging", false),
            entry("browser_navigate", "browser", true),
            entry("browser_click", "browser", false),
        ]
    }

    fn names(set: &BTreeSet<String>) -> Vec<&str> {
        set.iter().map(String::as_str).collect()
    }

    #[test]
    fn composites_include_other_toolsets() {
        let mut sets = Toolsets::default();
        sets.define(
            "coding",
            ToolsetDef {
                tools: vec!["todo".into()],
                includes: vec!["file".into()],
            },
        );
        let tools = sets.resolve(&["coding".into()], &entries()).unwrap();
        assert_eq!(names(&tools), ["read_file", "todo", "write_file"]);
        let core = sets.resolve(&["core".into()], &entries()).unwrap();
        assert_eq!(core.len(), entries().len());
    }

    #[test]
    fn cycles_and_unknown_names_are_errors() {
        let mut sets = Toolsets::default();
        let def = |inc: &str| ToolsetDef {
            tools: vec![],
            includes: vec![inc.into()],
        };
        sets.define("a", def("b"));
        sets.define("b", def("a"));
        assert!(matches!(
            sets.resolve(&["a".into()], &entries()),
            Err(ToolsetError::Cycle(..))
        ));
        let err = sets.resolve(&["nope".into()], &entries()).unwrap_err();
        assert!(err.to_string().contains("unknown toolset 'nope'"), "{err}");
        assert!(err.to_string().contains("terminal"), "{err}");
    }

    #[test]
    fn disabled_toolsets_leave_the_list() {
        let selection = Selection {
            enabled: None,
            disabled: vec!["terminal".into(), "web".into()],
        };
        let (visible, notices) = selection.visible(
            &Toolsets::default(),
            &Profile::for_surface("cli"),
            &entries(),
        );
        assert!(notices.is_empty());
        assert_eq!(
            names(&visible),
            [
                "browser_click",
                "browser_navigate",
                "clarify",
                "cronjob",
                "read_file",
                "send_message",
                "todo",
                "write_file"
            ]
        );
    }

    #[test]
    fn the_public_webhook_sees_only_read_only_tools_without_side_effects() {
        let selection = Selection {
            enabled: Some(vec!["all".into()]),
            disabled: vec![],
        };
        let (visible, _) = selection.visible(
            &Toolsets::default(),
            &Profile::for_surface("webhook"),
            &entries(),
        );
        // `clarify` is listed for webhooks but is not read-only (and no
        // clarifier is ever given there): it stays out.
        assert_eq!(names(&visible), ["web_search"]);
    }

    #[test]
    fn the_browser_is_only_where_configuration_admits_it() {
        let visible = |profile: &Profile| {
            let (visible, _) =
                Selection::default().visible(&Toolsets::default(), profile, &entries());
            visible
        };
        for surface in ["cli", "acp", "gateway"] {
            assert!(
                visible(&Profile::for_surface(surface)).contains("browser_click"),
                "{surface}"
            );
        }
        for surface in ["api", "mcp", "cron", "batch", "webhook"] {
            let mut profile = Profile::for_surface(surface);
            assert!(!visible(&profile).contains("browser_navigate"), "{surface}");
            profile.admit("browser", &["browser_navigate", "browser_click"]);
            let admitted = visible(&profile);
            assert!(admitted.contains("browser_navigate"), "{surface}");
            // A webhook stays read-only: browsing, never clicking.
            assert_eq!(
                admitted.contains("browser_click"),
                surface != "webhook",
                "{surface}"
            );
        }
    }

    #[test]
    fn profiles_exclude_what_the_surface_cannot_use() {
        // Nobody answers questions in cron jobs or runs asked for over MCP.
        for surface in ["cron", "batch", "mcp"] {
            let (unattended, _) = Selection::default().visible(
                &Toolsets::default(),
                &Profile::for_surface(surface),
                &entries(),
            );
            assert!(
                !unattended.contains("clarify") && unattended.contains("terminal"),
                "{surface}"
            );
        }
        let (cron, _) = Selection::default().visible(
            &Toolsets::default(),
            &Profile::for_surface("cron"),
            &entries(),
        );
        assert!(!cron.contains("cronjob") && !cron.contains("send_message"));
        let (batch, _) = Selection::default().visible(
            &Toolsets::default(),
            &Profile::for_surface("batch"),
            &entries(),
        );
        assert!(!batch.contains("cronjob") && !batch.contains("send_message"));
        let (child, _) = Selection::default().visible(
            &Toolsets::default(),
            &Profile::for_surface("child"),
            &entries(),
        );
        assert!(!child.contains("clarify"));
    }

    #[test]
    fn unknown_enabled_names_become_notices() {
        let selection = Selection {
            enabled: Some(vec!["fiel".into()]),
            disabled: vec![],
        };
        let (visible, notices) = selection.visible(
            &Toolsets::default(),
            &Profile::for_surface("cli"),
            &entries(),
        );
        assert!(visible.is_empty());
        assert_eq!(notices.len(), 1, "{notices:?}");
    }
}
