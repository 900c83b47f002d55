//! Conditional visibility: which skills the level-0 index offers.

use std::collections::BTreeSet;

use crate::meta::SkillMeta;

/// What the current session has: the platform it runs on and the toolsets
/// and tools the model can call.
#[derive(Debug, Clone, Copy)]
pub struct Visibility<'a> {
    /// `linux`, `macos` or `windows` (aliases such as `darwin` or `win32`
    /// are understood).
    pub platform: &'a str,
    /// Toolsets enabled in this session.
    pub toolsets: &'a BTreeSet<String>,
    /// Tools enabled in this session.
    pub tools: &'a BTreeSet<String>,
}

impl Visibility<'_> {
    /// Whether a skill with this frontmatter is offered: its platform list
    /// (when set) includes ours, every `requires_*` is available, and no
    /// `fallback_for_*` is (a fallback is only for when the real thing is
    /// missing).
    pub fn allows(&self, meta: &SkillMeta) -> bool {
        let platform = normalize_platform(self.platform);
        let conditions = &meta.conditions;
        (meta.platforms.is_empty() || meta.platforms.contains(&platform))
            && conditions
                .requires_toolsets
                .iter()
                .all(|t| self.toolsets.contains(t))
            && conditions
                .requires_tools
                .iter()
                .all(|t| self.tools.contains(t))
            && !conditions
                .fallback_for_toolsets
                .iter()
                .any(|t| self.toolsets.contains(t))
            && !conditions
                .fallback_for_tools
                .iter()
                .any(|t| self.tools.contains(t))
    }
}

/// The canonical name for a platform: Hermes writes `macos` / `darwin`,
/// Rust's `std::env::consts::OS` says `macos`, Python's `sys.platform` says
/// `darwin` / `win32`.
pub(crate) fn normalize_platform(platform: &str) -> String {
    let lower = platform.trim().to_ascii_lowercase();
    match lower.as_str() {
        "darwin" | "osx" | "mac" | "macosx" => "macos".to_owned(),
        "win32" | "win" | "win64" | "cygwin" => "windows".to_owned(),
        _ => lower,
    }
}
