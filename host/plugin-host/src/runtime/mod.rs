//! Which plugin runtimes this build runs, and reading a manifest for it.

use std::path::Path;

use talaria_plugin_manifest::{Manifest, ManifestError, Runtime};

/// Whether this build can run plugins of `runtime` (Extism and native plugins
/// need their cargo features).
pub fn runs(runtime: Runtime) -> bool {
    match runtime {
        Runtime::Component => true,
        Runtime::Extism => cfg!(feature = "extism"),
        Runtime::Native => cfg!(feature = "native"),
    }
}

/// Reads the manifest at `path` for this build: a runtime it cannot run is an
/// error at the manifest's `runtime` key.
pub fn read_manifest(path: &Path) -> Result<Manifest, ManifestError> {
    Manifest::load_for(path, runs)
}
