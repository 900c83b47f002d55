//! `talaria dist precompile DIR` (hidden): compiles every package in a plugin
//! directory into `DIR/.compiled` with this binary's own engine, so the
//! distribution's first run loads them without compiling. The files are
//! listed with their BLAKE3 digests (`B3SUMS`); a host loads a prebuilt file
//! only when its bytes match that list.

use std::path::Path;

use talaria_agent::plugins::PREBUILT_DIR;
use talaria_plugin_host::{Grants, HostOptions, MANIFEST_FILE, PluginHost};

pub(super) async fn precompile(dir: &Path) -> Result<(), String> {
    let compiled = dir.join(PREBUILT_DIR);
    // Compiled into a scratch cache (keyed by a scratch secret), then exported as plain files
    // with their digest list.
    let scratch = tempfile::tempdir().map_err(|e| format!("a scratch directory: {e}"))?;
    let host = PluginHost::new(HostOptions::new(
        scratch.path().join("cache"),
        scratch.path().join("data"),
    ))
    .map_err(|e| format!("the plugin host: {e}"))?;
    let mut packages: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.join(MANIFEST_FILE).is_file())
        .collect();
    packages.sort();
    for package in packages {
        let loaded = host
            .load(&package, &Grants::none())
            .await
            .map_err(|e| format!("{}: {e}", package.display()))?;
        println!("compiled {}", loaded.manifest().name);
    }
    // Files of an earlier build are replaced by exactly this build's.
    if compiled.exists() {
        std::fs::remove_dir_all(&compiled).map_err(|e| format!("{}: {e}", compiled.display()))?;
    }
    host.export_prebuilt(&compiled)
        .map_err(|e| format!("writing the compiled plugins: {e}"))?;
    make_world_readable(&compiled)
}

/// The compile cache is created owner-only; a distribution is read by whoever runs it.
fn make_world_readable(dir: &Path) -> Result<(), String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let set = |path: &Path, mode: u32| {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
                .map_err(|e| format!("{}: {e}", path.display()))
        };
        set(dir, 0o755)?;
        for entry in std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))? {
            let entry = entry.map_err(|e| format!("{}: {e}", dir.display()))?;
            set(&entry.path(), 0o644)?;
        }
    }
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}
