//! Loading a WebAssembly component: compiled or from the cache, its API
//! version and exported kinds checked against the manifest before anything
//! is instantiated, then each kind's slot filled.

use std::path::Path;
use std::sync::Arc;

use talaria_plugin_manifest::version::{check_names, kind_of, parse_api_name};
use talaria_plugin_manifest::{Manifest, PluginKind};
use wasmtime::component::types::ComponentItem;
use wasmtime::component::{Component, InstancePre};

use super::Loaded;
use crate::cache::{LoadFileError, Origin, Record, error_text};
use crate::error::LoadError;
use crate::host::HostInner;
use crate::invoke::Invocation;
use crate::kinds::chat::ChatAdapterKind;
use crate::kinds::commands::CommandsKind;
use crate::kinds::hooks::HooksKind;
use crate::kinds::memory::MemoryKind;
use crate::kinds::platform::PlatformKind;
use crate::kinds::skins::SkinKind;
use crate::kinds::tools::ToolsKind;
use crate::kinds::{Kind, Slot, Slots};
use crate::listing::{Listing, record_name};
use crate::loaded::Deferred;
use crate::log::{LogLevel, LogSource};
use crate::state::{PluginShared, PluginState};
use std::sync::atomic::Ordering;

/// The plugin's component from the cache, or compiled now (on a blocking
/// thread, the host's observer told first), and its SHA-256.
pub(crate) async fn compiled(
    host: &Arc<HostInner>,
    dir: &Path,
    manifest: &Manifest,
    expected: Option<String>,
) -> Result<(Component, Origin, String), LoadError> {
    let name = manifest.name.clone();
    let wasm_path = dir.join(&manifest.wasm);
    let compiling = host.clone();
    let path = wasm_path.clone();
    let plugin = name.clone();
    tokio::task::spawn_blocking(move || {
        let tell = |bytes: u64| {
            if let Some(observer) = &compiling.compile_observer {
                observer.compiling(&plugin, bytes);
            }
        };
        compiling
            .cache
            .load_file(&compiling.engine, &path, expected.as_deref(), &tell)
    })
    .await
    .map_err(|e| LoadError::Compile {
        plugin: name.clone(),
        message: format!("compilation task failed: {e}"),
    })?
    .map_err(|error| match error {
        LoadFileError::Read(source) => LoadError::Wasm {
            plugin: name.clone(),
            path: wasm_path.clone(),
            source,
        },
        LoadFileError::Compile(message) => LoadError::Compile {
            plugin: name.clone(),
            message: format!("{}: {message}", wasm_path.display()),
        },
        LoadFileError::Changed => LoadError::Compile {
            plugin: name.clone(),
            message: format!(
                "{} changed since this session listed what it provides; a new session loads \
                 the new version",
                wasm_path.display()
            ),
        },
    })
}

/// The listing remembered for the plugin in `dir` under its capabilities, when the host
/// defers code and the component's digest is remembered too: nothing of the component is read.
fn from_listing(
    host: &HostInner,
    dir: &Path,
    manifest: &Manifest,
    shared: &PluginShared,
) -> Option<Loaded> {
    if !host.defer_code {
        return None;
    }
    let digest = host.cache.remembered(&dir.join(&manifest.wasm))?;
    let name = record_name(host.cache.engine_hash(), &digest, manifest, &shared.caps)?;
    let raw = host.cache.record(Record::Listing, &name)?;
    let listing: Listing = serde_json::from_slice(&raw).ok()?;
    let (api, kinds, slots) = listing.into_deferred()?;
    host.cache.counters.deferred.fetch_add(1, Ordering::Relaxed);
    Some(Loaded {
        deferred: Some(Deferred {
            digest,
            instance: tokio::sync::OnceCell::new(),
        }),
        api,
        kinds,
        slots,
        origin: Origin::Cached,
    })
}

/// The component `component` (whose SHA-256 is `digest`) checked against the manifest and
/// prepared against its linker, with a line in the plugin's log.
fn link(
    host: &HostInner,
    dir: &Path,
    manifest: &Manifest,
    shared: &PluginShared,
    (component, origin, digest): (&Component, Origin, &str),
) -> Result<(semver::Version, Vec<PluginKind>, InstancePre<PluginState>), LoadError> {
    let name = &manifest.name;
    let (api, kinds) = check_component(host, component, manifest)?;
    // Only chat adapters see `chat-host`.
    let chat = kinds.contains(&PluginKind::Chat);
    let linker = if chat { host.chat_linker } else { host.linker };
    let instance = crate::loaded_code::prepared(digest, chat, component, || {
        linker.instantiate_pre(component)
    })
    .map_err(|e| LoadError::Link {
        plugin: name.clone(),
        message: error_text(&e),
    })?;
    shared.log.push(
        LogLevel::Info,
        LogSource::Host,
        &format!(
            "loaded {} {} (talaria:plugin@{api}) from {}{}",
            name,
            manifest.version,
            dir.display(),
            if origin == Origin::Cached {
                " (compiled cache)"
            } else {
                ""
            }
        ),
    );
    Ok((api, kinds, instance))
}

/// Reads, verifies and prepares the code of a component loaded from its listing (at its
/// first use). A component changed on disk since it was listed is refused: what the session
/// offers the model was listed by the other one.
pub(crate) async fn prepare_deferred(
    host: &Arc<HostInner>,
    dir: &Path,
    manifest: &Manifest,
    shared: &Arc<PluginShared>,
    deferred: &Deferred,
) -> Result<InstancePre<PluginState>, LoadError> {
    let expected = Some(deferred.digest.clone());
    let (component, origin, digest) = compiled(host, dir, manifest, expected).await?;
    let (_, _, instance) = link(host, dir, manifest, shared, (&component, origin, &digest))?;
    Ok(instance)
}

/// Loads the component of the plugin in `dir` and fills a slot for each
/// kind it exports, listing each once in a fresh instance — or, when the host defers code
/// and the listing is remembered, from that listing without reading the component.
pub(crate) async fn load(
    host: &Arc<HostInner>,
    dir: &Path,
    manifest: &Manifest,
    shared: &Arc<PluginShared>,
) -> Result<Loaded, LoadError> {
    if let Some(loaded) = from_listing(host, dir, manifest, shared) {
        return Ok(loaded);
    }
    let (component, origin, digest) = compiled(host, dir, manifest, None).await?;
    let (api, kinds, instance) = link(host, dir, manifest, shared, (&component, origin, &digest))?;

    let inv = Invocation {
        engine: &host.engine,
        shared,
    };
    let mut slots = Slots::default();
    for &kind in &kinds {
        // One arm per kind: a new kind does not compile until it has a slot.
        match kind {
            PluginKind::Tools => fill::<ToolsKind>(&mut slots, &instance, &inv).await?,
            PluginKind::Memory => fill::<MemoryKind>(&mut slots, &instance, &inv).await?,
            PluginKind::Commands => fill::<CommandsKind>(&mut slots, &instance, &inv).await?,
            PluginKind::Skin => fill::<SkinKind>(&mut slots, &instance, &inv).await?,
            PluginKind::Platform => fill::<PlatformKind>(&mut slots, &instance, &inv).await?,
            PluginKind::Hooks => fill::<HooksKind>(&mut slots, &instance, &inv).await?,
            PluginKind::Chat => fill::<ChatAdapterKind>(&mut slots, &instance, &inv).await?,
        }
    }
    if host.defer_code
        && let Some(name) = record_name(host.cache.engine_hash(), &digest, manifest, &shared.caps)
        && let Ok(raw) = serde_json::to_vec(&Listing::of(&api, &kinds, &slots))
    {
        host.cache.store_record(Record::Listing, &name, &raw);
    }
    Ok(Loaded {
        api,
        kinds,
        slots,
        origin,
        deferred: None,
    })
}

/// Sees the component as kind `K` and lists what `K` lists.
async fn fill<K: Kind>(
    slots: &mut Slots,
    instance: &InstancePre<PluginState>,
    inv: &Invocation<'_>,
) -> Result<(), LoadError> {
    let pre = K::pre(instance).map_err(|e| LoadError::Exports {
        plugin: inv.shared.name.clone(),
        message: format!(
            "its talaria:plugin/{} export: {}",
            K::KIND.interface(),
            error_text(&e)
        ),
    })?;
    let listed = K::list(inv, &pre).await?;
    *K::slot_mut(slots) = Some(Slot::ready(pre, listed));
    Ok(())
}

/// Reads the `talaria:plugin` names the component exports and imports,
/// refuses an incompatible version, and checks the exported kinds against
/// the manifest. Nothing is instantiated.
fn check_component(
    host: &HostInner,
    component: &Component,
    manifest: &Manifest,
) -> Result<(semver::Version, Vec<PluginKind>), LoadError> {
    let engine = &host.engine;
    let ty = component.component_type();
    let exports: Vec<_> = ty
        .exports(engine)
        .filter(|(_, item)| matches!(item.ty, ComponentItem::ComponentInstance(_)))
        .filter_map(|(name, _)| parse_api_name(name))
        .collect();
    let imports: Vec<_> = ty
        .imports(engine)
        .filter_map(|(name, _)| parse_api_name(name))
        .collect();
    let plugin = manifest.name.clone();
    let exported = check_names(&exports, &imports, &manifest.api).map_err(|message| {
        LoadError::ApiVersion {
            plugin: plugin.clone(),
            message,
        }
    })?;
    let mut kinds: Vec<PluginKind> = exports
        .iter()
        .filter_map(|n| kind_of(&n.interface))
        .collect();
    kinds.sort();
    kinds.dedup();
    let missing: Vec<PluginKind> = manifest
        .provides
        .iter()
        .copied()
        .filter(|k| !kinds.contains(k))
        .collect();
    if !missing.is_empty() {
        let list = |each: fn(PluginKind) -> String| {
            missing
                .iter()
                .map(|&k| each(k))
                .collect::<Vec<_>>()
                .join(", ")
        };
        return Err(LoadError::Exports {
            plugin,
            message: format!(
                "the manifest says it provides {} but the component does not export {}",
                list(|k| k.as_str().to_owned()),
                list(|k| format!("talaria:plugin/{}", k.interface())),
            ),
        });
    }
    Ok((exported.unwrap_or_else(|| manifest.api.clone()), kinds))
}
