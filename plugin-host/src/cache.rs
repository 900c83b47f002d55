//! The compiled-artefact cache: `<cache_dir>/<sha256 of the wasm>-<engine
//! compatibility hash>.cwasm`, written atomically by this host into a
//! directory it created, loaded with `Component::deserialize_file`. A
//! distribution's read-only `plugins/.compiled` (same names) is consulted on
//! a miss, so a fresh profile starts without compiling.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

use crate::kv::{hex, write_atomically};

/// Feeds `Hash` output into SHA-256, so the engine's compatibility hash is
/// stable across processes (unlike `DefaultHasher`, whose keys may change).
struct Sha256Hasher(Sha256);

impl Hasher for Sha256Hasher {
    fn finish(&self) -> u64 {
        let digest = self.0.clone().finalize();
        let mut first = [0u8; 8];
        first.copy_from_slice(&digest[..8]);
        u64::from_le_bytes(first)
    }

    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
}

/// Counters for tests and diagnostics.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) compiled: AtomicU64,
    pub(crate) cache_hits: AtomicU64,
}

#[derive(Debug)]
pub(crate) struct CompileCache {
    dir: PathBuf,
    prebuilt: Vec<PathBuf>,
    engine_hash: String,
    pub(crate) counters: Counters,
}

/// How a component was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Origin {
    Compiled,
    Cached,
}

impl CompileCache {
    pub(crate) fn new(
        dir: PathBuf,
        prebuilt: Vec<PathBuf>,
        engine: &Engine,
    ) -> std::io::Result<Self> {
        create_private_dir(&dir)?;
        let mut hasher = Sha256Hasher(Sha256::new());
        engine.precompile_compatibility_hash().hash(&mut hasher);
        let engine_hash = format!("{:016x}", hasher.finish());
        Ok(Self {
            dir,
            prebuilt,
            engine_hash,
            counters: Counters::default(),
        })
    }

    /// The file name of `wasm`'s compiled form for this engine.
    fn file_name(&self, wasm: &[u8]) -> String {
        let digest = hex(&Sha256::digest(wasm));
        format!("{digest}-{}.cwasm", self.engine_hash)
    }

    /// The component for `wasm`, from the cache when possible.
    pub(crate) fn load(&self, engine: &Engine, wasm: &[u8]) -> Result<(Component, Origin), String> {
        // One hash of the component names it in both the profile cache and the prebuilt dirs.
        let name = self.file_name(wasm);
        let path = self.dir.join(&name);
        if path.is_file() {
            match deserialize_cached(engine, &path) {
                Ok(component) => {
                    self.counters.cache_hits.fetch_add(1, Ordering::Relaxed);
                    return Ok((component, Origin::Cached));
                }
                // Stale or damaged: compile again and replace it.
                Err(_) => {
                    let _ = std::fs::remove_file(&path);
                }
            }
        }
        for dir in &self.prebuilt {
            let prebuilt = dir.join(&name);
            if prebuilt.is_file()
                && let Ok(component) = deserialize_cached(engine, &prebuilt)
            {
                self.counters.cache_hits.fetch_add(1, Ordering::Relaxed);
                return Ok((component, Origin::Cached));
            }
        }
        let compiled = engine
            .precompile_component(wasm)
            .map_err(|e| format!("compiling the component: {}", error_text(&e)))?;
        self.counters.compiled.fetch_add(1, Ordering::Relaxed);
        match write_atomically(&path, &compiled) {
            Ok(()) => deserialize_cached(engine, &path)
                .map(|c| (c, Origin::Compiled))
                .map_err(|e| format!("loading the compiled component: {}", error_text(&e))),
            // An unwritable cache costs a second compilation, never a failure.
            Err(_) => Component::new(engine, wasm)
                .map(|c| (c, Origin::Compiled))
                .map_err(|e| format!("compiling the component: {}", error_text(&e))),
        }
    }
}

/// Deserialises a compiled component from the cache.
#[allow(unsafe_code)]
fn deserialize_cached(engine: &Engine, path: &Path) -> wasmtime::Result<Component> {
    // SAFETY: `Component::deserialize_file` trusts its input to be a
    // compiled artefact produced by a compatible wasmtime. The only files
    // passed here are ones this host wrote itself (`CompileCache::load`,
    // via `Engine::precompile_component` and an atomic temp-file + rename)
    // into a cache directory it created with owner-only permissions. Each is
    // named by the SHA-256 of its source component and the engine's
    // compatibility hash, so a file is only ever read back by an engine it
    // was compiled for, for the component it was compiled from; wasmtime
    // additionally checks the header and refuses incompatible artefacts.
    // Prebuilt directories hold files of the same kind written the same way by
    // `talaria dist build` (this code, run by the distribution's own binary),
    // shipped next to that binary: as trusted as the executable itself.
    unsafe { Component::deserialize_file(engine, path) }
}

pub(crate) fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)
}

/// A wasmtime error with its causes, on one line.
pub(crate) fn error_text(err: &wasmtime::Error) -> String {
    let mut text = err.to_string();
    for cause in err.chain().skip(1) {
        let cause = cause.to_string();
        if !text.contains(&cause) {
            text.push_str(": ");
            text.push_str(&cause);
        }
    }
    text
}
