//! Which plugin serves a tool name that more than one plugin defines: the one
//! the user chose (`tools.providers: {TOOL: PLUGIN}`), else the first loaded.
//! The other plugins keep every other tool of theirs.

use std::collections::{BTreeMap, HashMap};

use talaria_kernel::ToolSpec;

use crate::loaded::LoadedPlugin;

/// Tool name → the plugin chosen to serve it.
pub type ToolProviders = BTreeMap<String, String>;

/// A tool name defined by more than one plugin, and the plugin whose
/// definition is left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolClash {
    /// The tool name.
    pub tool: String,
    /// The plugin serving it.
    pub serving: String,
    /// The plugin whose tool of that name is not used.
    pub unused: String,
    /// Whether `tools.providers` chose `serving` (else it was loaded first).
    pub chosen: bool,
}

impl std::fmt::Display for ToolClash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Self {
            tool,
            serving,
            unused,
            chosen,
        } = self;
        if *chosen {
            write!(
                f,
                "plugin {unused}: its tool '{tool}' is not used: tools.providers chooses plugin {serving}"
            )
        } else {
            write!(
                f,
                "plugin {unused}: its tool '{tool}' is not used: plugin {serving} defines it too and \
                 serves it (to use {unused}'s, set tools.providers: {{{tool}: {unused}}}); \
                 its other tools are loaded"
            )
        }
    }
}

/// The tools served, in load order, and what was left out.
pub(crate) struct Chosen {
    /// Tool name → (plugin index, tool index).
    pub by_name: HashMap<String, (usize, usize)>,
    pub specs: Vec<ToolSpec>,
    pub clashes: Vec<ToolClash>,
    /// `tools.providers` entries that name no plugin defining the tool.
    pub unmet: Vec<String>,
}

/// Chooses one plugin per tool name among `plugins` (in load order).
pub(crate) fn choose<'a>(
    plugins: impl Iterator<Item = &'a LoadedPlugin>,
    providers: &ToolProviders,
) -> Chosen {
    let plugins: Vec<&LoadedPlugin> = plugins.collect();
    // Every definition of each name, in load order.
    let mut candidates: BTreeMap<&str, Vec<(usize, usize)>> = BTreeMap::new();
    for (p, plugin) in plugins.iter().enumerate() {
        for (t, tool) in plugin.tools().iter().enumerate() {
            candidates.entry(&tool.spec.name).or_default().push((p, t));
        }
    }
    let mut by_name = HashMap::new();
    let mut clashes = Vec::new();
    let mut unmet = Vec::new();
    for (tool, defined) in &candidates {
        let wanted = providers.get(*tool);
        let picked = wanted.and_then(|name| {
            defined
                .iter()
                .copied()
                .find(|(p, _)| plugins[*p].name() == name.as_str())
        });
        if let (Some(name), None) = (wanted, picked) {
            let by: Vec<&str> = defined.iter().map(|(p, _)| plugins[*p].name()).collect();
            unmet.push(format!(
                "tools.providers: plugin {name} does not define tool '{tool}' (defined by {})",
                by.join(", ")
            ));
        }
        let chosen = picked.is_some();
        let (serving, index) = picked.unwrap_or(defined[0]);
        by_name.insert((*tool).to_owned(), (serving, index));
        for (other, _) in defined.iter().filter(|(p, _)| *p != serving) {
            clashes.push(ToolClash {
                tool: (*tool).to_owned(),
                serving: plugins[serving].name().to_owned(),
                unused: plugins[*other].name().to_owned(),
                chosen,
            });
        }
    }
    for (tool, name) in providers {
        if !candidates.contains_key(tool.as_str()) {
            unmet.push(format!(
                "tools.providers: no plugin defines tool '{tool}' (chosen: plugin {name})"
            ));
        }
    }
    // The prompt lists tools in load order, whichever plugin serves them.
    let mut specs = Vec::new();
    for (p, plugin) in plugins.iter().enumerate() {
        for (t, tool) in plugin.tools().iter().enumerate() {
            if by_name.get(&tool.spec.name) == Some(&(p, t)) {
                specs.push(tool.spec.clone());
            }
        }
    }
    Chosen {
        by_name,
        specs,
        clashes,
        unmet,
    }
}
