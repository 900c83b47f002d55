//! Plugins placed in a session's working directory.

use std::path::{Path, PathBuf};

use crate::error::HostError;
use crate::loaded::LoadedPlugin;
use crate::log::{LogLevel, LogSource};
use crate::sandbox::Sandbox;

/// A loaded plugin placed in one working directory: its preopens there, or
/// why they could not be set up (then every call into it fails).
pub(crate) struct Placed {
    pub(crate) plugin: LoadedPlugin,
    pub(crate) sandbox: Result<Sandbox, String>,
    /// An Extism plugin compiled with this directory's preopens.
    #[cfg(feature = "extism")]
    pub(crate) extism: crate::runtime::extism::Placement,
}

impl Placed {
    /// Resolves `plugin`'s grants for `cwd`; a failure is logged to the plugin.
    pub(crate) fn new(plugin: LoadedPlugin, cwd: &Path) -> Self {
        let sandbox = Sandbox::resolve(&plugin.inner.shared, Some(cwd));
        if let Err(message) = &sandbox {
            plugin.log().push(LogLevel::Error, LogSource::Host, message);
        }
        Self {
            plugin,
            sandbox,
            #[cfg(feature = "extism")]
            extism: crate::runtime::extism::Placement::default(),
        }
    }
}

/// The plugin names of `placed`, for `Debug` output.
pub(crate) fn names(placed: &[Placed]) -> Vec<&str> {
    placed.iter().map(|p| p.plugin.name()).collect()
}

/// The session's working directory, resolved once for every plugin placed in it.
pub(crate) fn canonical_cwd(cwd: &Path) -> Result<PathBuf, HostError> {
    cwd.canonicalize().map_err(|source| HostError::Io {
        path: cwd.to_path_buf(),
        source,
    })
}
