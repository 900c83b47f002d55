//! The profile's control files against plugin tools.
//!
//! A plugin reaches files through WASI preopens of its filesystem grants, and
//! a preopen cannot leave out a subdirectory: a `$CWD` grant whose working
//! directory holds the profile home (cwd = `$HOME`, home = `~/.talaria`)
//! reaches `config.yaml`, `approvals.toml`, `.env` and the cache key. So
//! before a tool of a plugin with filesystem access runs, every string in its
//! arguments is read as a path (relative ones against the call's working
//! directory), resolved (symlinks too), and one that names a protected path
//! the plugin could reach needs the user's approval through the approval
//! policy, as a terminal command would: also in yolo mode and in a sandbox,
//! refused where nobody can answer.
//!
//! Residual risk: a plugin that builds paths itself (not from its arguments)
//! inside a granted directory holding the home is not seen here; the
//! sandbox grants such directories read-only where it can (see
//! `Sandbox::resolve`).

use std::path::{Path, PathBuf};

use serde_json::Value;
use talaria_approval::{PathAccess, resolve_existing};

use crate::sandbox::Sandbox;
use crate::state::PluginShared;
use talaria_plugin_manifest::Access;

/// Longer strings are text, not paths (Linux's `PATH_MAX`).
const MAX_PATH_LEN: usize = 4096;

/// What one call may touch, for the check.
pub(crate) struct CallPaths<'a> {
    pub(crate) plugin: &'a PluginShared,
    pub(crate) sandbox: &'a Sandbox,
    /// The call's working directory (relative arguments are read against it).
    pub(crate) cwd: &'a Path,
    /// The tool declares no side effects: its paths are only read.
    pub(crate) read_only: bool,
    /// Native code is not confined to its preopens.
    pub(crate) unconfined: bool,
    pub(crate) tool: &'a str,
    pub(crate) session_id: &'a str,
}

impl CallPaths<'_> {
    /// Whether the call could touch files at all.
    pub(crate) fn applies(&self) -> bool {
        self.unconfined || !self.sandbox.preopens.is_empty()
    }

    /// Checks every path in `arguments` (JSON); `Err` is the refusal for the
    /// model. Arguments that are not JSON are left to the tool to reject.
    pub(crate) async fn check(&self, arguments: &str) -> Result<(), String> {
        if !self.applies() {
            return Ok(());
        }
        let Ok(value) = serde_json::from_str::<Value>(arguments) else {
            return Ok(());
        };
        let mut strings = Vec::new();
        collect_strings(&value, &mut strings);
        let executor = &self.plugin.exec.executor;
        let policy = executor.policy();
        if policy.protected().is_empty() {
            return Ok(());
        }
        for text in strings {
            let Some(target) = self.resolve(text) else {
                continue;
            };
            let Some(access) = self.access(&target) else {
                continue;
            };
            policy
                .check_path(
                    self.session_id,
                    self.tool,
                    &target,
                    access,
                    executor.approver().as_ref(),
                )
                .await
                .map_err(|denied| format!("{} was not run: {}", self.tool, denied.message))?;
        }
        Ok(())
    }

    /// `text` as a resolved absolute path, if it can be one.
    fn resolve(&self, text: &str) -> Option<PathBuf> {
        if text.is_empty() || text.len() > MAX_PATH_LEN || text.contains('\0') {
            return None;
        }
        let path = Path::new(text);
        let absolute = if path.is_absolute() {
            path.to_path_buf()
        } else {
            self.cwd.join(path)
        };
        resolve_existing(&absolute)
    }

    /// How the call could use `target`: `None` when no preopen reaches it.
    fn access(&self, target: &Path) -> Option<PathAccess> {
        let (mut reachable, mut writable) = (self.unconfined, self.unconfined);
        for preopen in &self.sandbox.preopens {
            if target.starts_with(&preopen.host) {
                reachable = true;
                writable |= preopen.access == Access::ReadWrite;
            }
        }
        match (reachable, writable && !self.read_only) {
            (false, _) => None,
            (true, true) => Some(PathAccess::Write),
            (true, false) => Some(PathAccess::Read),
        }
    }
}

/// Every string value in `value` (object keys are names, not paths).
fn collect_strings<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
    match value {
        Value::String(text) => out.push(text),
        Value::Array(items) => items.iter().for_each(|item| collect_strings(item, out)),
        Value::Object(map) => map.values().for_each(|item| collect_strings(item, out)),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_found_at_any_depth() {
        let value: Value = serde_json::json!({
            "path": "a",
            "edits": [{"old": "b", "new": "c"}, "d"],
            "n": 1,
            "flag": true
        });
        let mut out = Vec::new();
        collect_strings(&value, &mut out);
        out.sort_unstable();
        assert_eq!(out, ["a", "b", "c", "d"]);
    }
}
