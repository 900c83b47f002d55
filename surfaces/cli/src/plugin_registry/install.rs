//! `plugin install|update|remove|list --outdated`.

use std::path::{Path, PathBuf};

use talaria_agent::grants::{GrantStore, UserSources, describe};
use talaria_plugin_manifest::{Grants, HOST_API};
use talaria_profile::ProfileHome;
use talaria_registry::{
    ArchiveLimits, Expected, Layout, LockedPlugin, Lockfile, PATH_SOURCE, Prepared, Provenance,
    Registry, RegistryError, pack, parse_spec, resolve,
};

use super::grants::decide;
use super::{Failure, Outcome, layout, registry};
use crate::args::InstallArgs;
use crate::exit::Status;

/// Largest local package archive read.
const MAX_LOCAL_ARCHIVE_BYTES: u64 = 512 * 1024 * 1024;

/// `plugin install`.
pub(crate) async fn install(home: &ProfileHome, args: InstallArgs) -> Outcome {
    if args.locked {
        return install_locked(home, &args).await;
    }
    if args.specs.is_empty() {
        return Err(Failure::Usage(
            "name what to install (NAME[@REQ] or PATH), or pass --locked to install the lockfile"
                .into(),
        ));
    }
    let mut registry_cache: Option<Registry> = None;
    let mut failed = false;
    for spec in &args.specs {
        let prepared = if looks_like_path(spec) {
            prepare_path(&layout(home), Path::new(spec), semver::VersionReq::STAR)
        } else {
            let (name, requirement) = parse_spec(spec)?;
            let registry = match &registry_cache {
                Some(registry) => registry,
                None => registry_cache.insert(registry(home)?),
            };
            prepare_from_index(
                &layout(home),
                registry,
                &name,
                &requirement,
                args.index.as_deref(),
                None,
            )
            .await
        };
        let result = match prepared {
            Ok(prepared) => {
                finish(home, prepared, args.grant.as_deref(), args.allow_downgrade).await
            }
            Err(error) => Err(error.into()),
        };
        if let Err(failure) = result {
            // Several specs: report each failure and go on; the exit status says one failed.
            if args.specs.len() == 1 {
                return Err(failure);
            }
            report(&failure);
            failed = true;
        }
    }
    Ok(if failed {
        Status::Failed
    } else {
        Status::Answered
    })
}

fn report(failure: &Failure) {
    eprintln!("error: {}", failure.message());
}

/// A spec naming a file or directory rather than an index plugin.
fn looks_like_path(spec: &str) -> bool {
    spec.contains('/') || spec.ends_with(".tar.gz") || spec.starts_with('.')
}

/// Stages a local package archive or directory.
pub(crate) fn prepare_path(
    layout: &Layout,
    path: &Path,
    requirement: semver::VersionReq,
) -> Result<Prepared, RegistryError> {
    let archive = if path.is_dir() {
        pack(path)?.archive
    } else {
        let size = std::fs::metadata(path)
            .map_err(RegistryError::io(path))?
            .len();
        if size > MAX_LOCAL_ARCHIVE_BYTES {
            return Err(RegistryError::TooLarge {
                url: path.display().to_string(),
                limit: MAX_LOCAL_ARCHIVE_BYTES,
            });
        }
        std::fs::read(path).map_err(RegistryError::io(path))?
    };
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let provenance = Provenance {
        requirement,
        source: PATH_SOURCE.to_owned(),
        url: absolute.display().to_string(),
        sha256: talaria_registry::sha256_hex(&archive),
        size: archive.len() as u64,
    };
    Prepared::from_archive(
        layout,
        &archive,
        &Expected::any(),
        provenance,
        ArchiveLimits::default(),
    )
}

/// Resolves, verifies, downloads and stages `name` from the indexes; with
/// `locked`, exactly the locked version and checksum.
pub(crate) async fn prepare_from_index(
    layout: &Layout,
    registry: &Registry,
    name: &str,
    requirement: &semver::VersionReq,
    only: Option<&str>,
    locked: Option<&LockedPlugin>,
) -> Result<Prepared, RegistryError> {
    let (index, file) = registry.find(name, only).await?;
    let entry = match locked {
        None => resolve(&file, requirement, &HOST_API, index.name())?,
        Some(locked) => {
            let entry = file
                .version(&locked.version)
                .ok_or_else(|| RegistryError::Locked {
                    name: name.to_owned(),
                    version: locked.version.to_string(),
                    message: format!("index '{}' no longer lists this version", index.name()),
                })?;
            if !entry.sha256.eq_ignore_ascii_case(&locked.sha256) || entry.size != locked.size {
                return Err(RegistryError::Locked {
                    name: name.to_owned(),
                    version: locked.version.to_string(),
                    message: format!(
                        "index '{}' now lists a different archive (sha256 {}) than the lockfile \
                         ({}); refusing to install something else under the same version",
                        index.name(),
                        entry.sha256,
                        locked.sha256
                    ),
                });
            }
            entry
        }
    };
    index.verify(name, entry)?;
    let archive = index.download(name, entry).await?;
    let provenance = Provenance {
        requirement: requirement.clone(),
        source: index.name().to_owned(),
        url: entry.url.clone(),
        sha256: entry.sha256.to_lowercase(),
        size: entry.size,
    };
    Prepared::from_archive(
        layout,
        &archive,
        &Expected {
            name: Some(name.to_owned()),
            version: Some(entry.version.clone()),
            capabilities: Some(entry.capabilities.clone()),
        },
        provenance,
        ArchiveLimits::default(),
    )
}

/// Decides grants, then swaps the staged package in and records it, under
/// the install lock; then compiles it ahead of its first session.
async fn finish(
    home: &ProfileHome,
    prepared: Prepared,
    grant: Option<&str>,
    allow_downgrade: bool,
) -> Result<(), Failure> {
    let layout = layout(home);
    let name = prepared.manifest.name.clone();
    let version = prepared.manifest.version.clone();
    let previous = layout.installed(&name);
    if let Some(old) = &previous
        && old.version > version
        && !allow_downgrade
    {
        return Err(RegistryError::Downgrade {
            name,
            installed: old.version.to_string(),
            candidate: version.to_string(),
        }
        .into());
    }
    // Grants are bound to where the plugin comes from: the same name from another index
    // (or with other pinned keys), or a local package replacing an index's, asks again.
    let sources = UserSources::load(home);
    let grant_source = sources.source_for(&prepared.locked.source);
    let replaced_source = previous.as_ref().map(|_| sources.source_of(&name));
    let decision = decide(
        &GrantStore::load(home)?,
        &grant_source,
        &prepared.manifest,
        previous.as_ref(),
        grant,
    )?;
    let source = prepared.locked.source.clone();
    let sha256 = prepared.locked.sha256.clone();
    let lock = layout.lock()?;
    // Loaded under the lock so a concurrent install's grants are not lost.
    let mut store = GrantStore::load(home)?;
    let manifest = prepared.manifest.clone();
    prepared.commit(&lock)?;
    if let Some(grants) = &decision {
        store.set(&grant_source, &manifest, grants.clone())?;
    }
    if let Some(old) = replaced_source.filter(|old| *old != grant_source) {
        store.forget(&old, &name)?;
    }
    drop(lock);
    let from = if source == PATH_SOURCE {
        "a local package".to_owned()
    } else {
        format!("index {source}")
    };
    match &previous {
        Some(old) if old.version == version => {
            println!("reinstalled {name} {version} from {from}")
        }
        Some(old) => println!(
            "installed {name} {version} (was {}) from {from}",
            old.version
        ),
        None => println!("installed {name} {version} from {from}"),
    }
    println!("  sha256 {sha256}");
    let granted = decision.unwrap_or_else(|| {
        store
            .decided(&grant_source, &name)
            .cloned()
            .unwrap_or_else(Grants::none)
    });
    let granted = describe(&granted);
    println!(
        "  granted: {}",
        if granted.is_empty() {
            "nothing".to_owned()
        } else {
            granted.join(", ")
        }
    );
    crate::plugin_compile::ahead_of_time(home, &layout.package_dir(&name)).await;
    Ok(())
}

async fn install_locked(home: &ProfileHome, args: &InstallArgs) -> Outcome {
    let lockfile = Lockfile::load(&home.plugin_lockfile())?;
    let wanted: Vec<LockedPlugin> = if args.specs.is_empty() {
        lockfile.plugins().to_vec()
    } else {
        args.specs
            .iter()
            .map(|spec| {
                let (name, _) = parse_spec(spec)?;
                lockfile.get(&name).cloned().ok_or_else(|| {
                    RegistryError::Settings(format!(
                        "{name} is not in the lockfile {}",
                        home.plugin_lockfile().display()
                    ))
                })
            })
            .collect::<Result<_, _>>()?
    };
    if wanted.is_empty() {
        println!("The lockfile lists no plugins.");
        return Ok(Status::Answered);
    }
    let registry = registry(home)?;
    for locked in &wanted {
        let installed = layout(home).installed(&locked.name);
        if installed
            .as_ref()
            .is_some_and(|m| m.version == locked.version)
        {
            println!("{} {} is installed as locked", locked.name, locked.version);
            continue;
        }
        let prepared = if locked.source == PATH_SOURCE {
            prepare_locked_path(home, locked)
        } else {
            prepare_from_index(
                &layout(home),
                &registry,
                &locked.name,
                &locked.requirement,
                Some(&locked.source),
                Some(locked),
            )
            .await
        }?;
        finish(home, prepared, args.grant.as_deref(), true).await?;
    }
    Ok(Status::Answered)
}

fn prepare_locked_path(
    home: &ProfileHome,
    locked: &LockedPlugin,
) -> Result<Prepared, RegistryError> {
    let path = PathBuf::from(&locked.url);
    let prepared = prepare_path(&layout(home), &path, locked.requirement.clone())?;
    check_archive_record(locked, &prepared.locked)?;
    Ok(prepared)
}

fn check_archive_record(locked: &LockedPlugin, actual: &LockedPlugin) -> Result<(), RegistryError> {
    let problem = |message: String| RegistryError::Locked {
        name: locked.name.clone(),
        version: locked.version.to_string(),
        message,
    };
    if actual.name != locked.name || actual.version != locked.version {
        return Err(problem(format!(
            "{} now holds {} {}",
            locked.url, actual.name, actual.version
        )));
    }
    if actual.sha256 != locked.sha256 {
        return Err(problem(format!(
            "{} changed since it was locked (sha256 {} instead of {})",
            locked.url, actual.sha256, locked.sha256
        )));
    }
    Ok(())
}

/// `plugin update [NAME...]`.
pub(crate) async fn update(home: &ProfileHome, names: &[String], grant: Option<&str>) -> Outcome {
    let lockfile = Lockfile::load(&home.plugin_lockfile())?;
    let wanted: Vec<LockedPlugin> = if names.is_empty() {
        lockfile
            .plugins()
            .iter()
            .filter(|p| p.source != PATH_SOURCE)
            .cloned()
            .collect()
    } else {
        names
            .iter()
            .map(|name| {
                lockfile.get(name).cloned().ok_or_else(|| {
                    RegistryError::Settings(format!(
                        "{name} was not installed from an index (see `talaria plugin list`)"
                    ))
                })
            })
            .collect::<Result<_, _>>()?
    };
    let registry = registry(home)?;
    let mut failed = false;
    for locked in &wanted {
        if locked.source == PATH_SOURCE {
            eprintln!(
                "{} was installed from {}; install the new package file to update it",
                locked.name, locked.url
            );
            continue;
        }
        let step = async {
            let (index, file) = registry.find(&locked.name, Some(&locked.source)).await?;
            let newest = resolve(&file, &locked.requirement, &HOST_API, index.name())?;
            Ok::<_, RegistryError>(newest.version.clone())
        };
        let newest = match step.await {
            Ok(version) => version,
            Err(error) => {
                eprintln!("error: {error}");
                failed = true;
                continue;
            }
        };
        let installed = layout(home).installed(&locked.name).map(|m| m.version);
        if installed.as_ref().is_some_and(|v| v >= &newest) {
            println!(
                "{} {} is up to date ({})",
                locked.name, locked.version, locked.requirement
            );
            continue;
        }
        let exact: semver::VersionReq = format!("={newest}")
            .parse()
            .map_err(|e| Failure::Failed(format!("{newest}: {e}")))?;
        let result = match prepare_from_index(
            &layout(home),
            &registry,
            &locked.name,
            &exact,
            Some(&locked.source),
            None,
        )
        .await
        {
            Ok(mut prepared) => {
                // Keep the user's own requirement for the next update.
                prepared.locked.requirement = locked.requirement.clone();
                finish(home, prepared, grant, false).await
            }
            Err(error) => Err(error.into()),
        };
        if let Err(failure) = result {
            report(&failure);
            failed = true;
        }
    }
    Ok(if failed {
        Status::Failed
    } else {
        Status::Answered
    })
}

/// `plugin remove NAME`.
pub(crate) fn remove(home: &ProfileHome, name: &str) -> Outcome {
    let layout = layout(home);
    let lock = layout.lock()?;
    let source = UserSources::load(home).source_of(name);
    layout.remove(name, &lock)?;
    GrantStore::load(home)?.forget(&source, name)?;
    drop(lock);
    println!("removed {name}");
    Ok(Status::Answered)
}

/// `plugin list --outdated`: the plugins installed from an index that lists
/// a newer version, and how to get it.
pub(crate) async fn outdated(home: &ProfileHome) -> Outcome {
    let layout = layout(home);
    let lockfile = Lockfile::load(&home.plugin_lockfile())?;
    let (installed, problems) = layout.installed_all();
    for problem in &problems {
        eprintln!("warning: {problem}");
    }
    if installed.is_empty() {
        println!("No plugins installed in {}.", home.plugins_dir().display());
        return Ok(Status::Answered);
    }
    let registry = registry(home)?;
    let mut shown = 0;
    for manifest in &installed {
        let Some(locked) = lockfile
            .get(&manifest.name)
            .filter(|l| l.source != PATH_SOURCE)
        else {
            continue;
        };
        let newest = async {
            let (index, file) = registry.find(&manifest.name, Some(&locked.source)).await?;
            let any = resolve(&file, &semver::VersionReq::STAR, &HOST_API, index.name())
                .map(|e| e.version.clone())?;
            let within = resolve(&file, &locked.requirement, &HOST_API, index.name())
                .ok()
                .map(|e| e.version.clone());
            Ok::<_, RegistryError>((any, within))
        };
        match newest.await {
            Ok((any, within)) if any > manifest.version => {
                let within = match within {
                    Some(v) if v > manifest.version => format!("`plugin update` gets {v}"),
                    _ => format!(
                        "outside {}: `plugin install {}@^{any}`",
                        locked.requirement, manifest.name
                    ),
                };
                println!("{} {} → {any}  ({within})", manifest.name, manifest.version);
                shown += 1;
            }
            Ok(_) => {}
            Err(error) => eprintln!("warning: {}: {error}", manifest.name),
        }
    }
    if shown == 0 {
        println!("Every plugin installed from an index is up to date.");
    }
    Ok(Status::Answered)
}
