//! The steps of `talaria dist build`: build the binary with the manifest's
//! features and the distribution's public key, gather and verify the plugins
//! into a lockfile'd package dir, compile them ahead of time (with the new
//! binary, or for a runtime-only one with a quick build of the same features
//! plus the compiler), sign their digest list, then swap the finished
//! directory into place and print what it weighs.

use std::path::{Path, PathBuf};
use std::process::Command;

use talaria_agent::plugins::PREBUILT_DIR;
use talaria_profile::ProfileHome;
use talaria_registry::{Layout, Registry};

use super::manifest::{DistManifest, DistPlugin, PluginOrigin};
use super::signing::DistKey;
use crate::plugin_registry::install::{prepare_from_index, prepare_path};
use crate::plugin_registry::registry;

/// The name of the binary inside a distribution.
const BINARY: &str = "talaria";

/// The cargo profile of the binary that compiles a runtime-only distribution's plugins: quick to
/// build (its code generation does not depend on how it was optimised).
const COMPILER_PROFILE: &str = "dist-compiler";

pub(super) async fn build(
    home: &ProfileHome,
    manifest_path: &Path,
    out: &Path,
    source: Option<PathBuf>,
) -> Result<(), String> {
    let manifest = DistManifest::load(manifest_path)?;
    let source = source_checkout(source)?;
    check_out(out, &source)?;
    check_features(&source, &manifest)?;
    let key = DistKey::load_or_create(home, &manifest.name)?;
    let binary = build_binary(&source, &manifest, &key.public())?;

    let partial = sibling(out, "partial")?;
    remove_dir_if_present(&partial)?;
    std::fs::create_dir_all(&partial).map_err(|e| format!("{}: {e}", partial.display()))?;
    let shipped = partial.join(BINARY);
    std::fs::copy(&binary, &shipped)
        .map_err(|e| format!("copying {} to {}: {e}", binary.display(), shipped.display()))?;

    let plugins_dir = partial.join("plugins");
    let layout = Layout::new(plugins_dir.clone(), partial.join("plugins.lock"));
    let mut index_registry: Option<Registry> = None;
    let mut builtins_built = false;
    for plugin in &manifest.plugins {
        let prepared = match plugin.origin() {
            PluginOrigin::Builtin => {
                if !builtins_built {
                    build_first_party_plugins(&source)?;
                    builtins_built = true;
                }
                let dir = source.join("target/plugins/dist").join(&plugin.name);
                if !dir.join("plugin.toml").is_file() {
                    return Err(format!(
                        "'{}' is not a first-party plugin of {} (none in {}); use index = or path =",
                        plugin.name,
                        source.display(),
                        dir.display()
                    ));
                }
                let mut prepared =
                    prepare_path(&layout, &dir, plugin.requirement()).map_err(|e| e.to_string())?;
                prepared.locked.source = "builtin".to_owned();
                prepared
            }
            PluginOrigin::Path(path) => {
                prepare_path(&layout, &path, plugin.requirement()).map_err(|e| e.to_string())?
            }
            PluginOrigin::Index(index) => {
                let registry = match &index_registry {
                    Some(registry) => registry,
                    None => index_registry.insert(registry(home).map_err(|e| e.to_string())?),
                };
                prepare_from_index(
                    &layout,
                    registry,
                    &plugin.name,
                    &plugin.requirement(),
                    Some(&index),
                    None,
                )
                .await
                .map_err(|e| e.to_string())?
            }
        };
        check_version(plugin, &prepared.manifest)?;
        let lock = layout.lock().map_err(|e| e.to_string())?;
        prepared.commit(&lock).map_err(|e| e.to_string())?;
    }
    // The install lock and staging area are build leftovers, not part of the distribution.
    let _ = std::fs::remove_file(plugins_dir.join(".install.lock"));
    let _ = std::fs::remove_dir_all(plugins_dir.join(".staging"));
    // A profile's lockfile is private to its user; a distribution's is read by whoever runs it.
    let lockfile = partial.join("plugins.lock");
    if lockfile.is_file() {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&lockfile, std::fs::Permissions::from_mode(0o644))
            .map_err(|e| format!("{}: {e}", lockfile.display()))?;
    }

    if !manifest.plugins.is_empty() {
        if manifest.compiles_plugins() {
            precompile_with(&shipped, &plugins_dir)?;
        } else {
            precompile_with(&build_compiler(&source, &manifest)?, &plugins_dir)?;
        }
        key.sign_compiled(&plugins_dir.join(PREBUILT_DIR))?;
    }
    key.write_public(&partial)?;
    std::fs::copy(manifest_path, partial.join("dist.toml"))
        .map_err(|e| format!("copying {}: {e}", manifest_path.display()))?;

    remove_dir_if_present(out)?;
    std::fs::rename(&partial, out)
        .map_err(|e| format!("moving {} to {}: {e}", partial.display(), out.display()))?;
    print_sizes(&manifest, out);
    println!(
        "  signed with {} (public half: {})",
        key.path().display(),
        out.join(super::signing::PUBLIC_KEY_FILE).display()
    );
    Ok(())
}

/// Where cargo builds `source`: `CARGO_TARGET_DIR`, else its `target`.
fn cargo_target_dir(source: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|dir| {
            if dir.is_absolute() {
                dir
            } else {
                source.join(dir)
            }
        })
        .unwrap_or_else(|| source.join("target"))
}

/// Refuses an `--out` that replacing would delete cargo's own files: the target directory,
/// a directory holding it, or one directly in it (a profile's, such as `target/dist`).
fn check_out(out: &Path, source: &Path) -> Result<(), String> {
    let absolute =
        |path: &Path| std::path::absolute(path).map_err(|e| format!("{}: {e}", path.display()));
    let (out_abs, target) = (absolute(out)?, absolute(&cargo_target_dir(source))?);
    if target.starts_with(&out_abs) || out_abs.parent() == Some(target.as_path()) {
        return Err(format!(
            "--out {} is cargo's own directory (or holds it): building replaces the --out \
             directory, so choose one elsewhere, e.g. {}",
            out.display(),
            target.join("distributions").join("NAME").display()
        ));
    }
    Ok(())
}

/// The source checkout: `--source`, or the one this binary was built from.
fn source_checkout(given: Option<PathBuf>) -> Result<PathBuf, String> {
    let candidate = given
        .clone()
        .unwrap_or_else(|| Path::new(crate::CHECKOUT).to_path_buf());
    let root = candidate.canonicalize().map_err(|_| {
        format!(
            "{} is not a Talaria source checkout; pass --source DIR",
            candidate.display()
        )
    })?;
    if !root.join("Cargo.toml").is_file() || !root.join("surfaces/cli").is_dir() {
        return Err(format!(
            "{} is not a Talaria source checkout (no Cargo.toml and surfaces/cli/); pass --source DIR",
            root.display()
        ));
    }
    Ok(root)
}

/// Refuses features the `talaria` package does not have, listing those it does.
fn check_features(source: &Path, manifest: &DistManifest) -> Result<(), String> {
    let path = source.join("Cargo.toml");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let cargo: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| format!("{}: {}", path.display(), e.message()))?;
    let known: Vec<String> = cargo
        .get("features")
        .and_then(|f| f.as_table())
        .map(|table| table.keys().filter(|k| *k != "default").cloned().collect())
        .unwrap_or_default();
    for feature in &manifest.features {
        if !known.contains(feature) {
            return Err(format!(
                "feature '{feature}' does not exist; the talaria package has: {}",
                if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.join(", ")
                }
            ));
        }
    }
    Ok(())
}

/// The distribution's binary: `cargo build -p talaria` (`cargo rustc` when there are link
/// arguments) with the manifest's profile and features, the distribution's public `key` built in.
fn build_binary(source: &Path, manifest: &DistManifest, key: &str) -> Result<PathBuf, String> {
    eprintln!(
        "building {} ({})",
        manifest.name,
        describe_features(manifest)
    );
    cargo_build(
        source,
        &manifest.profile,
        manifest,
        &manifest.features,
        Some(key),
    )
}

/// For a runtime-only distribution: a binary of the same features plus the compiler (so its
/// engine is configured exactly as the distribution's), in a quick profile, to compile the
/// plugins with.
fn build_compiler(source: &Path, manifest: &DistManifest) -> Result<PathBuf, String> {
    eprintln!(
        "building a compiler for the plugins of the runtime-only {}",
        manifest.name
    );
    let mut features = manifest.features.clone();
    features.push("compiler".to_owned());
    cargo_build(source, COMPILER_PROFILE, manifest, &features, None)
}

/// `cargo build -p talaria` in `profile` with `features` (and the manifest's default features).
/// The shipped binary, which has the distribution's public `key` built in, also gets the
/// manifest's link arguments. Returns the binary.
fn cargo_build(
    source: &Path,
    profile: &str,
    manifest: &DistManifest,
    features: &[String],
    key: Option<&str>,
) -> Result<PathBuf, String> {
    let link_args: &[String] = if key.is_some() {
        &manifest.link_args
    } else {
        &[]
    };
    let mut cargo = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    let subcommand = if link_args.is_empty() {
        "build"
    } else {
        "rustc"
    };
    cargo
        .current_dir(source)
        .args([subcommand, "--locked", "-p", "talaria", "--bin", BINARY])
        .args(["--profile", profile]);
    match key {
        Some(key) => cargo.env("TALARIA_DIST_KEY", key),
        None => cargo.env_remove("TALARIA_DIST_KEY"),
    };
    if !manifest.default_features {
        cargo.arg("--no-default-features");
    }
    if !features.is_empty() {
        cargo.args(["--features", &features.join(",")]);
    }
    if !link_args.is_empty() {
        cargo.arg("--");
        for arg in link_args {
            cargo.args(["-C", &format!("link-arg={arg}")]);
        }
    }
    let status = cargo
        .status()
        .map_err(|e| format!("cannot run cargo (is Rust installed?): {e}"))?;
    if !status.success() {
        return Err(format!("cargo build failed ({status})"));
    }
    let target = cargo_target_dir(source);
    let profile_dir = match profile {
        "dev" | "test" => "debug",
        "bench" => "release",
        other => other,
    };
    let binary = target.join(profile_dir).join(BINARY);
    if binary.is_file() {
        Ok(binary)
    } else {
        Err(format!(
            "cargo reported success but {} is missing",
            binary.display()
        ))
    }
}

fn describe_features(manifest: &DistManifest) -> String {
    let mut parts = vec![format!("profile {}", manifest.profile)];
    parts.push(if manifest.default_features {
        "default features".to_owned()
    } else {
        "no default features".to_owned()
    });
    if !manifest.features.is_empty() {
        parts.push(format!("+ {}", manifest.features.join(", ")));
    }
    if !manifest.compiles_plugins() {
        parts.push("runtime-only: no plugin compiler".to_owned());
    }
    parts.join(", ")
}

fn build_first_party_plugins(source: &Path) -> Result<(), String> {
    let script = source.join("scripts/build-plugins");
    eprintln!("building the first-party plugins");
    let output = Command::new(&script)
        .current_dir(source)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", script.display()))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{} failed:\n{}",
            script.display(),
            String::from_utf8_lossy(&output.stderr)
        ))
    }
}

fn check_version(
    plugin: &DistPlugin,
    manifest: &talaria_plugin_manifest::Manifest,
) -> Result<(), String> {
    let requirement = plugin.requirement();
    if requirement.matches(&manifest.version) {
        Ok(())
    } else {
        Err(format!(
            "plugin '{}' is version {}, which does not match {requirement}",
            plugin.name, manifest.version
        ))
    }
}

/// Compiles the plugins with the distribution's own binary, so the compiled
/// forms match the engine that will load them.
fn precompile_with(binary: &Path, plugins_dir: &Path) -> Result<(), String> {
    let scratch = tempfile::tempdir().map_err(|e| format!("a scratch directory: {e}"))?;
    let output = Command::new(binary)
        .args(["dist", "precompile"])
        .arg(plugins_dir)
        .env("TALARIA_HOME", scratch.path())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", binary.display()))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "compiling the plugins ahead of time failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        ))
    }
}

fn sibling(out: &Path, suffix: &str) -> Result<PathBuf, String> {
    let name = out
        .file_name()
        .ok_or_else(|| format!("--out {} must name a directory", out.display()))?;
    Ok(out.with_file_name(format!("{}.{suffix}", name.to_string_lossy())))
}

fn remove_dir_if_present(dir: &Path) -> Result<(), String> {
    match std::fs::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("cannot replace {}: {e}", dir.display())),
    }
}

/// The size table: the binary, each plugin, the compiled forms, the total.
fn print_sizes(manifest: &DistManifest, out: &Path) {
    let binary = file_size(&out.join(BINARY));
    let plugins_dir = out.join("plugins");
    let compiled = dir_size(&plugins_dir.join(PREBUILT_DIR));
    let total = dir_size(out);
    if manifest.description.is_empty() {
        println!("{} → {}", manifest.name, out.display());
    } else {
        println!(
            "{} ({}) → {}",
            manifest.name,
            manifest.description,
            out.display()
        );
    }
    println!("  {:<28} {:>12}", "binary", human(binary));
    for plugin in &manifest.plugins {
        println!(
            "  {:<28} {:>12}",
            format!("plugin {}", plugin.name),
            human(dir_size(&plugins_dir.join(&plugin.name)))
        );
    }
    println!("  {:<28} {:>12}", "plugins compiled ahead", human(compiled));
    println!("  {:<28} {:>12}", "total", human(total));
}

fn file_size(path: &Path) -> u64 {
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

fn dir_size(path: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(path) else {
        return file_size(path);
    };
    entries
        .filter_map(Result::ok)
        .map(|entry| {
            let path = entry.path();
            if path.is_dir() {
                dir_size(&path)
            } else {
                file_size(&path)
            }
        })
        .sum()
}

fn human(bytes: u64) -> String {
    #[allow(clippy::cast_precision_loss)]
    let mib = bytes as f64 / (1024.0 * 1024.0);
    format!("{mib:.1} MiB")
}

#[cfg(test)]
mod tests {
    use super::*;

    // The release builds themselves are heavy tests (tests/all/dist.rs); this
    // keeps the checkout they start from recognised in every run.
    #[test]
    fn the_checkout_this_binary_was_built_from_is_a_source_checkout() {
        let root = source_checkout(None).unwrap();
        assert!(root.join("distributions/minimal.toml").is_file());
        let elsewhere = tempfile::tempdir().unwrap();
        let refused = source_checkout(Some(elsewhere.path().to_path_buf())).unwrap_err();
        assert!(
            refused.contains("not a Talaria source checkout"),
            "{refused}"
        );
    }

    #[test]
    fn an_out_that_replacing_would_delete_cargos_files_is_refused() {
        let source = tempfile::tempdir().unwrap();
        let target = cargo_target_dir(source.path());
        for cargos in [
            target.clone(),
            target.join("dist"),
            target.parent().unwrap().into(),
        ] {
            let refused = check_out(&cargos, source.path()).unwrap_err();
            assert!(refused.contains("cargo's own directory"), "{refused}");
        }
        for fine in [
            target.join("dist").join("minimal"),
            source.path().join("out"),
        ] {
            check_out(&fine, source.path()).unwrap();
        }
    }
}
