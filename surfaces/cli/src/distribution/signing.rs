//! A distribution's own signing key: made at its first build and kept in the builder's profile
//! (`dist-keys/NAME.toml`, owner-only), so rebuilds keep one public key. Its public half is
//! compiled into the distribution's binary (`TALARIA_DIST_KEY`) and shipped beside it
//! (`dist-key.pub`); it signs the digest list of the plugins compiled at the build, and the
//! binary loads compiled plugins only under that signature.

use std::path::{Path, PathBuf};

use talaria_plugin_host::{PREBUILT_DIGESTS, PREBUILT_SIGNATURE, prebuilt_signed_message};
use talaria_profile::ProfileHome;
use talaria_registry::SecretKey;

/// The public key's file in a distribution directory.
pub(super) const PUBLIC_KEY_FILE: &str = "dist-key.pub";

/// The key of distribution `name`, created on its first build.
pub(super) struct DistKey {
    key: SecretKey,
    path: PathBuf,
}

impl DistKey {
    pub(super) fn load_or_create(home: &ProfileHome, name: &str) -> Result<Self, String> {
        let dir = home.root().join("dist-keys");
        let path = dir.join(format!("{name}.toml"));
        if path.is_file() {
            let key = SecretKey::load(&path).map_err(|e| e.to_string())?;
            return Ok(Self { key, path });
        }
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let key = SecretKey::generate(name).map_err(|e| e.to_string())?;
        key.save(&path).map_err(|e| e.to_string())?;
        eprintln!(
            "made a signing key for distribution {name}: {} (secret; rebuilds reuse it)",
            path.display()
        );
        Ok(Self { key, path })
    }

    /// The public half, in base64.
    pub(super) fn public(&self) -> String {
        self.key.public().ed25519
    }

    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// Signs the digest list in `compiled` (a distribution's `plugins/.compiled`).
    pub(super) fn sign_compiled(&self, compiled: &Path) -> Result<(), String> {
        let list_path = compiled.join(PREBUILT_DIGESTS);
        let list =
            std::fs::read(&list_path).map_err(|e| format!("{}: {e}", list_path.display()))?;
        let signature = self.key.sign_message(&prebuilt_signed_message(&list));
        let signature_path = compiled.join(PREBUILT_SIGNATURE);
        std::fs::write(&signature_path, format!("{signature}\n"))
            .map_err(|e| format!("{}: {e}", signature_path.display()))
    }

    /// Writes the public half into the distribution directory `out`.
    pub(super) fn write_public(&self, out: &Path) -> Result<(), String> {
        let path = out.join(PUBLIC_KEY_FILE);
        std::fs::write(&path, format!("{}\n", self.public()))
            .map_err(|e| format!("{}: {e}", path.display()))
    }
}
