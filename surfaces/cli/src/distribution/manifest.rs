//! `dist.toml`: what a distribution is made of.
//!
//! ```toml
//! name = "talaria-minimal"
//! description = "The CLI with file and terminal tools"
//! profile = "dist-small"       # cargo profile (default dist-small: fat LTO, one codegen
//!                              # unit, stripped, optimised for size)
//! default-features = false     # the talaria package's default cargo features (default true)
//! features = []                # cargo features to add. Without `compiler` (a default
//!                              # feature; `extism` needs it too) the binary is runtime-only:
//!                              # it runs the plugins compiled at this build and no others
//! link-args = []               # linker arguments for the binary only, e.g.
//!                              # "-Wl,-z,pack-relative-relocs" (smaller, faster to start; the
//!                              # binary then needs glibc 2.36 and binutils 2.38 or lld to build)
//!
//! [[plugin]]
//! name = "fs"                  # a first-party plugin, built from plugins/
//! version = "^0.1"             # semver requirement (default: any)
//!
//! [[plugin]]
//! name = "weather"
//! index = "community"          # from one of the profile's plugin indexes (verified as usual)
//!
//! [[plugin]]
//! name = "mine"
//! path = "../mine/dist/mine"   # a package directory or archive, relative to this file
//! ```

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// A parsed, checked `dist.toml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(crate) struct DistManifest {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default = "dist_profile")]
    pub profile: String,
    #[serde(default = "yes")]
    pub default_features: bool,
    #[serde(default)]
    pub features: Vec<String>,
    /// Passed to the linker for the `talaria` binary only (`cargo rustc -- -C link-arg=…`), so
    /// the dependencies' build cache is shared with ordinary builds.
    #[serde(default)]
    pub link_args: Vec<String>,
    #[serde(default, rename = "plugin")]
    pub plugins: Vec<DistPlugin>,
}

/// One plugin of the distribution.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct DistPlugin {
    pub name: String,
    #[serde(default)]
    pub version: Option<String>,
    #[serde(default)]
    pub index: Option<String>,
    #[serde(default)]
    pub path: Option<PathBuf>,
}

/// Where a plugin comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PluginOrigin {
    /// First-party, built from the checkout's `plugins/`.
    Builtin,
    /// A configured index.
    Index(String),
    /// A package directory or archive.
    Path(PathBuf),
}

fn dist_profile() -> String {
    "dist-small".to_owned()
}

fn yes() -> bool {
    true
}

impl DistManifest {
    /// Reads and checks `path`; relative plugin paths become relative to its directory.
    pub(crate) fn load(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let mut manifest: Self = toml::from_str(&text).map_err(|e| {
            let line = e
                .span()
                .map(|span| text[..span.start.min(text.len())].matches('\n').count() + 1);
            match line {
                Some(line) => format!("{}:{line}: {}", path.display(), e.message()),
                None => format!("{}: {}", path.display(), e.message()),
            }
        })?;
        let at = |message: String| format!("{}: {message}", path.display());
        let base = path.parent().unwrap_or(Path::new("."));
        if !talaria_registry::valid_plugin_name(&manifest.name) {
            return Err(at(format!(
                "name '{}' must be lowercase letters, digits and '-'",
                manifest.name
            )));
        }
        let profile_ok = !manifest.profile.is_empty()
            && manifest
                .profile
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'));
        if !profile_ok {
            return Err(at(format!(
                "'{}' is not a cargo profile name",
                manifest.profile
            )));
        }
        let mut seen = std::collections::BTreeSet::new();
        for plugin in &mut manifest.plugins {
            if !seen.insert(plugin.name.clone()) {
                return Err(at(format!("plugin '{}' is listed twice", plugin.name)));
            }
            if !talaria_registry::valid_plugin_name(&plugin.name) {
                return Err(at(format!("'{}' is not a plugin name", plugin.name)));
            }
            if plugin.index.is_some() && plugin.path.is_some() {
                return Err(at(format!(
                    "plugin '{}': give index or path, not both",
                    plugin.name
                )));
            }
            if let Some(version) = &plugin.version {
                semver::VersionReq::parse(version).map_err(|e| {
                    at(format!(
                        "plugin '{}': version '{version}' is not a semver requirement: {e}",
                        plugin.name
                    ))
                })?;
            }
            if let Some(relative) = &plugin.path {
                plugin.path = Some(base.join(relative));
            }
        }
        Ok(manifest)
    }
}

impl DistManifest {
    /// Whether the binary carries the plugin compiler: the `compiler` feature (a default one),
    /// or `extism`, which needs it.
    pub(crate) fn compiles_plugins(&self) -> bool {
        self.default_features
            || self
                .features
                .iter()
                .any(|feature| feature == "compiler" || feature == "extism")
    }
}

impl DistPlugin {
    pub(crate) fn origin(&self) -> PluginOrigin {
        match (&self.index, &self.path) {
            (Some(index), _) => PluginOrigin::Index(index.clone()),
            (None, Some(path)) => PluginOrigin::Path(path.clone()),
            (None, None) => PluginOrigin::Builtin,
        }
    }

    pub(crate) fn requirement(&self) -> semver::VersionReq {
        self.version
            .as_deref()
            .and_then(|v| semver::VersionReq::parse(v).ok())
            .unwrap_or(semver::VersionReq::STAR)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Result<DistManifest, String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dist.toml");
        std::fs::write(&path, text).unwrap();
        DistManifest::load(&path)
    }

    #[test]
    fn a_manifest_parses_with_defaults_and_origins() {
        let manifest = load(
            "name = \"mini\"\n[[plugin]]\nname = \"fs\"\nversion = \"^0.1\"\n\
             [[plugin]]\nname = \"w\"\nindex = \"main\"\n[[plugin]]\nname = \"p\"\npath = \"pkg\"\n",
        )
        .unwrap();
        assert_eq!(manifest.profile, "dist-small");
        assert!(manifest.default_features);
        assert!(manifest.compiles_plugins());
        assert!(manifest.link_args.is_empty());
        assert_eq!(manifest.plugins[0].origin(), PluginOrigin::Builtin);
        assert_eq!(manifest.plugins[0].requirement().to_string(), "^0.1");
        assert_eq!(
            manifest.plugins[1].origin(),
            PluginOrigin::Index("main".into())
        );
        assert!(
            matches!(manifest.plugins[2].origin(), PluginOrigin::Path(p) if p.ends_with("pkg"))
        );
    }

    #[test]
    fn without_default_features_only_compiler_or_extism_bring_the_compiler() {
        let runtime_only = load("name = \"m\"\ndefault-features = false\n").unwrap();
        assert!(!runtime_only.compiles_plugins());
        for feature in ["compiler", "extism"] {
            let manifest = load(&format!(
                "name = \"m\"\ndefault-features = false\nfeatures = [\"{feature}\"]\n"
            ))
            .unwrap();
            assert!(manifest.compiles_plugins(), "{feature}");
        }
    }

    #[test]
    fn bad_manifests_say_where_and_why() {
        assert!(
            load("name = \"x\"\nfeaturez = []\n")
                .unwrap_err()
                .contains(":2:")
        );
        assert!(load("name = \"X\"\n").unwrap_err().contains("lowercase"));
        assert!(
            load("name = \"x\"\n[[plugin]]\nname = \"a\"\n[[plugin]]\nname = \"a\"\n")
                .unwrap_err()
                .contains("listed twice")
        );
        assert!(
            load("name = \"x\"\n[[plugin]]\nname = \"a\"\nversion = \"one\"\n")
                .unwrap_err()
                .contains("semver requirement")
        );
        assert!(
            load("name = \"x\"\n[[plugin]]\nname = \"a\"\nindex = \"i\"\npath = \"p\"\n")
                .unwrap_err()
                .contains("not both")
        );
    }
}
