//! The compiled-artefact cache: `<cache_dir>/<sha256 of the wasm>-<engine
//! compatibility hash>.cwasm`, written atomically by this host into a
//! directory it created, loaded with `Component::deserialize_file`. A
//! distribution's read-only `plugins/.compiled` (same names) is consulted on
//! a miss, so a fresh profile starts without compiling.
//!
//! Hashing a component means reading all of it (megabytes) on every start, so the digest is
//! remembered per source file in `<cache_dir>/sources/`, keyed by the file's path and checked
//! against its size, inode and modification and change times: an unchanged file is not read at
//! all, only its compiled form mapped.

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

/// Why [`CompileCache::load_file`] failed.
#[derive(Debug)]
pub(crate) enum LoadFileError {
    /// The component file could not be read.
    Read(std::io::Error),
    /// It could not be compiled or its compiled form not loaded.
    Compile(String),
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

    /// The file name of the compiled form, for this engine, of the component whose SHA-256 is
    /// `digest` (hex).
    fn file_name(&self, digest: &str) -> String {
        format!("{digest}-{}.cwasm", self.engine_hash)
    }

    /// The component in the file at `path`, from the cache when possible; the file is read
    /// (and hashed) only when its remembered digest is missing or out of date.
    pub(crate) fn load_file(
        &self,
        engine: &Engine,
        path: &Path,
    ) -> Result<(Component, Origin), LoadFileError> {
        let memo = self
            .dir
            .join("sources")
            .join(hex(&Sha256::digest(path.as_os_str().as_encoded_bytes())));
        let stamp = std::fs::metadata(path)
            .map(|metadata| file_stamp(&metadata))
            .map_err(LoadFileError::Read)?;
        if let Some(digest) = remembered_digest(&memo, &stamp)
            && let Some(found) = self.find_compiled(engine, &self.file_name(&digest))
        {
            return Ok(found);
        }
        let wasm = std::fs::read(path).map_err(LoadFileError::Read)?;
        let digest = hex(&Sha256::digest(&wasm));
        // A memo that cannot be written only costs hashing again next time.
        let _ = create_private_dir(&self.dir.join("sources"))
            .and_then(|()| write_atomically(&memo, format!("{stamp} {digest}\n").as_bytes()));
        self.load_digested(engine, &wasm, &digest)
            .map_err(LoadFileError::Compile)
    }

    /// The compiled form named `name` from the profile cache or a prebuilt dir, if one loads.
    fn find_compiled(&self, engine: &Engine, name: &str) -> Option<(Component, Origin)> {
        let path = self.dir.join(name);
        if path.is_file() {
            match deserialize_cached(engine, &path) {
                Ok(component) => {
                    self.counters.cache_hits.fetch_add(1, Ordering::Relaxed);
                    return Some((component, Origin::Cached));
                }
                // Stale or damaged: compiled again (and replaced) by the caller.
                Err(_) => {
                    let _ = std::fs::remove_file(&path);
                }
            }
        }
        self.prebuilt.iter().find_map(|dir| {
            let prebuilt = dir.join(name);
            let component = deserialize_cached(engine, &prebuilt).ok()?;
            self.counters.cache_hits.fetch_add(1, Ordering::Relaxed);
            Some((component, Origin::Cached))
        })
    }

    /// The component `wasm`, whose SHA-256 is `digest`, from the cache or compiled now.
    fn load_digested(
        &self,
        engine: &Engine,
        wasm: &[u8],
        digest: &str,
    ) -> Result<(Component, Origin), String> {
        // One hash of the component names it in both the profile cache and the prebuilt dirs.
        let name = self.file_name(digest);
        if let Some(found) = self.find_compiled(engine, &name) {
            return Ok(found);
        }
        let path = self.dir.join(&name);
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

/// What identifies one version of a file without reading it: size, inode, device, and the
/// modification and change times in nanoseconds (the change time cannot be set back by hand).
fn file_stamp(metadata: &std::fs::Metadata) -> String {
    use std::os::unix::fs::MetadataExt;
    format!(
        "{} {} {} {}.{} {}.{}",
        metadata.len(),
        metadata.ino(),
        metadata.dev(),
        metadata.mtime(),
        metadata.mtime_nsec(),
        metadata.ctime(),
        metadata.ctime_nsec()
    )
}

/// The digest remembered in `memo` if it was taken of the file version `stamp` describes.
fn remembered_digest(memo: &Path, stamp: &str) -> Option<String> {
    let text = std::fs::read_to_string(memo).ok()?;
    let (remembered, digest) = text.trim_end().rsplit_once(' ')?;
    (remembered == stamp && digest.len() == 64 && digest.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| digest.to_owned())
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
