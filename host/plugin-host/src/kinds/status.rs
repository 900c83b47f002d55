//! What became of each kind a plugin declares: for `talaria plugin info` and
//! the agent's plugin listing.

use std::fmt;

use talaria_plugin_manifest::{Manifest, PluginKind, Runtime};

use crate::loaded::LoadedPlugin;
use crate::runtime::runs;

/// What became of one kind of a plugin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KindState {
    /// Loaded, and sessions use it.
    Loaded,
    /// Loaded and checked (its interface, its API version, one instance),
    /// but sessions do not call plugins of this kind yet.
    LoadedNotWired,
    /// This runtime or this build cannot serve the kind.
    Unsupported {
        /// Why.
        reason: String,
    },
    /// The plugin did not load.
    NotLoaded {
        /// Why.
        reason: String,
    },
    /// The plugin was not loaded because this session has no use for it (a chat adapter
    /// outside the gateway, a memory provider that is not the profile's).
    NotNeeded {
        /// Why not.
        reason: String,
    },
}

/// One kind of a plugin with what became of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KindStatus {
    /// The kind.
    pub kind: PluginKind,
    /// What became of it.
    pub state: KindState,
}

impl fmt::Display for KindStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.state {
            KindState::Loaded => write!(f, "{}: loaded", self.kind),
            KindState::LoadedNotWired => {
                write!(f, "{}: loaded, not yet used by the agent", self.kind)
            }
            KindState::Unsupported { reason } => write!(f, "{}: unsupported: {reason}", self.kind),
            KindState::NotLoaded { reason } => write!(f, "{}: not loaded: {reason}", self.kind),
            KindState::NotNeeded { reason } => {
                write!(f, "{}: not needed in this session: {reason}", self.kind)
            }
        }
    }
}

/// Whether sessions call plugins of `kind` (the 0.1.0 platform adapters
/// load, but nothing calls them: chat adapters replaced them).
pub fn wired(kind: PluginKind) -> bool {
    match kind {
        PluginKind::Tools
        | PluginKind::Commands
        | PluginKind::Skin
        | PluginKind::Hooks
        // The session opens the active one (`memory.provider`).
        | PluginKind::Memory
        // The gateway (`talaria gateway run`) opens chat adapters.
        | PluginKind::Chat => true,
        PluginKind::Platform => false,
    }
}

/// Whether this build can serve `kind` from a plugin of `runtime`; `Err`
/// says why not.
pub fn kind_support(runtime: Runtime, kind: PluginKind) -> Result<(), String> {
    if !runs(runtime) {
        return Err(format!(
            "this build has no {runtime} support (feature `{runtime}`)"
        ));
    }
    runtime.can_provide(kind)
}

impl KindStatus {
    /// The kinds `manifest` declares, for a plugin that did not load because
    /// of `reason`: each unsupported one says why, the others repeat `reason`.
    pub fn not_loaded(manifest: &Manifest, reason: &str) -> Vec<Self> {
        manifest
            .provides
            .iter()
            .map(|&kind| Self {
                kind,
                state: match kind_support(manifest.runtime, kind) {
                    Err(reason) => KindState::Unsupported { reason },
                    Ok(()) => KindState::NotLoaded {
                        reason: reason.to_owned(),
                    },
                },
            })
            .collect()
    }
}

impl LoadedPlugin {
    /// Each kind it declares or serves, in [`PluginKind::ALL`] order, with
    /// what became of it.
    pub fn kind_statuses(&self) -> Vec<KindStatus> {
        let manifest = self.manifest();
        PluginKind::ALL
            .into_iter()
            .filter(|&kind| manifest.provides(kind) || self.serves(kind))
            .map(|kind| KindStatus {
                kind,
                state: match kind_support(manifest.runtime, kind) {
                    Err(reason) => KindState::Unsupported { reason },
                    Ok(()) if !self.serves(kind) => KindState::NotLoaded {
                        reason: format!(
                            "the component does not export talaria:plugin/{}",
                            kind.interface()
                        ),
                    },
                    Ok(()) if wired(kind) => KindState::Loaded,
                    Ok(()) => KindState::LoadedNotWired,
                },
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn components_serve_every_kind_and_modules_only_tools() {
        for kind in PluginKind::ALL {
            assert_eq!(kind_support(Runtime::Component, kind), Ok(()), "{kind}");
        }
        for runtime in [Runtime::Extism, Runtime::Native] {
            let tools = kind_support(runtime, PluginKind::Tools);
            assert_eq!(tools.is_ok(), runs(runtime), "{runtime}: {tools:?}");
            let memory = kind_support(runtime, PluginKind::Memory).unwrap_err();
            assert!(memory.contains(runtime.as_str()), "{runtime}: {memory}");
        }
    }

    #[test]
    fn only_platform_adapters_are_not_wired() {
        let unwired: Vec<PluginKind> = PluginKind::ALL.into_iter().filter(|&k| !wired(k)).collect();
        assert_eq!(unwired, [PluginKind::Platform]);
    }
}
