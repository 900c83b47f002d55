//! The compiled-artefact cache: `<cache_dir>/<sha256 of the wasm>-<engine
//! compatibility hash>.cwasm`, written atomically by this host into a
//! directory it created. A distribution's read-only `plugins/.compiled` (same
//! names) is consulted on a miss, so a fresh profile starts without compiling.
//!
//! Compiled code runs natively, so no file is deserialised on trust: each cache
//! file ends with a keyed BLAKE3 MAC over its name and contents under the
//! profile's secret ([`crate::mac`]). The file is read into memory, the MAC
//! checked over those bytes and the same bytes deserialised, so nothing can be
//! swapped in between. A file that does not verify (tampered, truncated,
//! renamed, written before MACs or under another key) is compiled again from
//! its component and replaced; it is never loaded.
//!
//! Prebuilt directories are written by `talaria dist build` into the
//! distribution, next to the binary, where the agent's commands cannot write;
//! [`crate::prebuilt`] checks them (digests, and the distribution's signature).
//! A runtime-only host (built without the `compiler` feature) has no
//! compatibility hash to name files with: it takes any listed compiled form of
//! the component, which wasmtime refuses when it does not fit this engine.
//!
//! Hashing a component means reading all of it (megabytes) on every start, so the digest is
//! remembered per source file in `<cache_dir>/sources/`, keyed by the file's path and checked
//! against its size, inode and modification and change times: an unchanged file is not read at
//! all, only its compiled form. A memo carries a MAC too: a forged one could otherwise point a
//! plugin at another plugin's (validly sealed) compiled form.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

use crate::imports::kv::{hex, write_atomically, write_atomically_shared};
use crate::loaded_code::Trust;
use crate::mac::{CacheKey, KEY_LEN, Purpose, mac, seal, unseal};
use crate::prebuilt::{PREBUILT_DIGESTS, PrebuiltDir};
use talaria_plugin_manifest::files::{read_regular, require_regular};

/// What the cache remembers besides compiled code, each in its own directory and under its
/// own MAC purpose.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Record {
    /// An Extism module's tool list.
    #[cfg_attr(not(feature = "extism"), allow(dead_code))]
    Described,
    /// What a component listed at load ([`crate::listing`]).
    Listing,
}

impl Record {
    fn dir(self) -> &'static str {
        match self {
            Record::Described => "described",
            Record::Listing => "listed",
        }
    }

    fn purpose(self) -> Purpose {
        match self {
            Record::Described => Purpose::Described,
            Record::Listing => Purpose::Listing,
        }
    }
}

/// Feeds `Hash` output into SHA-256, so the engine's compatibility hash is
/// stable across processes (unlike `DefaultHasher`, whose keys may change).
#[cfg(feature = "compiler")]
struct Sha256Hasher(Sha256);

#[cfg(feature = "compiler")]
impl std::hash::Hasher for Sha256Hasher {
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
    pub(crate) deferred: AtomicU64,
}

#[derive(Debug)]
pub(crate) struct CompileCache {
    dir: PathBuf,
    prebuilt: Vec<PrebuiltDir>,
    /// The engine's compatibility hash, in every compiled file's name; none in a runtime-only
    /// host, which cannot compute it.
    engine_hash: Option<String>,
    key: CacheKey,
    pub(crate) counters: Counters,
}

/// Why [`CompileCache::load_file`] failed.
#[derive(Debug)]
pub(crate) enum LoadFileError {
    /// The component file could not be read.
    Read(std::io::Error),
    /// It could not be compiled or its compiled form not loaded.
    Compile(String),
    /// It is not the component expected (changed on disk).
    Changed,
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
        key_file: PathBuf,
        prebuilt: Vec<PathBuf>,
        prebuilt_key: Option<String>,
        engine: &Engine,
    ) -> std::io::Result<Self> {
        create_private_dir(&dir)?;
        #[cfg(feature = "compiler")]
        let engine_hash = {
            use std::hash::{Hash as _, Hasher as _};
            let mut hasher = Sha256Hasher(Sha256::new());
            engine.precompile_compatibility_hash().hash(&mut hasher);
            Some(format!("{:016x}", hasher.finish()))
        };
        #[cfg(not(feature = "compiler"))]
        let engine_hash = {
            let _ = engine;
            None
        };
        Ok(Self {
            dir,
            prebuilt: prebuilt
                .into_iter()
                .map(|dir| PrebuiltDir::new(dir, prebuilt_key.clone()))
                .collect(),
            engine_hash,
            key: CacheKey::new(key_file),
            counters: Counters::default(),
        })
    }

    /// The file name of the compiled form, for this engine, of the component whose SHA-256 is
    /// `digest` (hex); none in a runtime-only host.
    fn file_name(&self, digest: &str) -> Option<String> {
        self.engine_hash
            .as_ref()
            .map(|hash| format!("{digest}-{hash}.cwasm"))
    }

    /// The SHA-256 of the component file at `path` as remembered, when the memo is of the
    /// file's current version and verifies: nothing of the component is read.
    pub(crate) fn remembered(&self, path: &Path) -> Option<String> {
        let metadata = std::fs::metadata(path).ok()?;
        require_regular(&metadata).ok()?;
        let key = self.key.existing()?;
        remembered_digest(&key, &self.memo_path(path), path, &file_stamp(&metadata))
    }

    fn memo_path(&self, path: &Path) -> PathBuf {
        self.dir
            .join("sources")
            .join(hex(&Sha256::digest(path.as_os_str().as_encoded_bytes())))
    }

    /// The component in the file at `path`, from the cache when possible, and its SHA-256;
    /// the file is read (and hashed) only when its remembered digest is missing or out of
    /// date. Anything but a regular file is refused before it is opened.
    /// `before_compile` hears the component's size when it must be compiled. With `expected`,
    /// a component of another digest is refused before anything is compiled or loaded.
    pub(crate) fn load_file(
        &self,
        engine: &Engine,
        path: &Path,
        expected: Option<&str>,
        before_compile: &dyn Fn(u64),
    ) -> Result<(Component, Origin, String), LoadFileError> {
        let memo = self.memo_path(path);
        let metadata = std::fs::metadata(path).map_err(LoadFileError::Read)?;
        require_regular(&metadata).map_err(LoadFileError::Read)?;
        if let Some(key) = self.key.existing()
            && let Some(digest) = remembered_digest(&key, &memo, path, &file_stamp(&metadata))
            && let Some((component, origin)) = self.find_compiled(engine, &digest)
        {
            return Ok((component, origin, digest));
        }
        let (wasm, metadata) = read_regular(path).map_err(LoadFileError::Read)?;
        let digest = hex(&Sha256::digest(&wasm));
        if expected.is_some_and(|expected| expected != digest) {
            return Err(LoadFileError::Changed);
        }
        // A memo that cannot be written only costs hashing again next time.
        if let Ok(key) = self.key.get_or_create() {
            let line = memo_line(&key, path, &file_stamp(&metadata), &digest);
            let _ = create_private_dir(&self.dir.join("sources"))
                .and_then(|()| write_atomically(&memo, line.as_bytes()));
        }
        let (component, origin) = self
            .load_digested(engine, &wasm, &digest, before_compile)
            .map_err(LoadFileError::Compile)?;
        Ok((component, origin, digest))
    }

    /// The compiled form of the component whose SHA-256 is `digest`: from the profile cache (if
    /// its MAC verifies) or a prebuilt dir (if it is listed there and its bytes match), if one
    /// loads.
    fn find_compiled(&self, engine: &Engine, digest: &str) -> Option<(Component, Origin)> {
        let Some(name) = self.file_name(digest) else {
            // Runtime-only: nothing is compiled into the profile; any listed form of the
            // component may fit this engine (wasmtime checks that it does).
            let prefix = format!("{digest}-");
            return self.prebuilt.iter().find_map(|prebuilt| {
                prebuilt
                    .names_starting(&prefix)
                    .iter()
                    .find_map(|name| self.load_prebuilt(engine, prebuilt, name))
            });
        };
        let path = self.dir.join(&name);
        if let Some(key) = self.key.existing() {
            // Verified under this key earlier in the process (another key trusts nothing).
            let trust = Trust::Key(blake3::hash(&key));
            if let Some(component) = crate::loaded_code::remembered(&path, trust) {
                self.counters.cache_hits.fetch_add(1, Ordering::Relaxed);
                return Some((component, Origin::Cached));
            }
            if let Ok((sealed, metadata)) = read_regular(&path) {
                match unseal(&key, Purpose::Compiled, &name, &sealed)
                    .map(|body| deserialize_verified(engine, body))
                {
                    Some(Ok(component)) => {
                        self.counters.cache_hits.fetch_add(1, Ordering::Relaxed);
                        let stamp = file_stamp(&metadata);
                        crate::loaded_code::remember(&path, trust, &stamp, &component);
                        return Some((component, Origin::Cached));
                    }
                    // Tampered, unsealed, stale or damaged: compiled again (and replaced) by the
                    // caller, never loaded.
                    Some(Err(_)) | None => {
                        let _ = std::fs::remove_file(&path);
                    }
                }
            }
        }
        self.prebuilt
            .iter()
            .find_map(|prebuilt| self.load_prebuilt(engine, prebuilt, &name))
    }

    fn load_prebuilt(
        &self,
        engine: &Engine,
        prebuilt: &PrebuiltDir,
        name: &str,
    ) -> Option<(Component, Origin)> {
        if let Some(component) = prebuilt
            .listed_path(name)
            .and_then(|path| crate::loaded_code::remembered(&path, Trust::Distribution))
        {
            self.counters.cache_hits.fetch_add(1, Ordering::Relaxed);
            return Some((component, Origin::Cached));
        }
        let (bytes, path, metadata) = prebuilt.verified(name)?;
        let component = deserialize_verified(engine, &bytes).ok()?;
        self.counters.cache_hits.fetch_add(1, Ordering::Relaxed);
        let stamp = file_stamp(&metadata);
        crate::loaded_code::remember(&path, Trust::Distribution, &stamp, &component);
        Some((component, Origin::Cached))
    }

    /// The component `wasm`, whose SHA-256 is `digest`, from the cache or compiled now.
    fn load_digested(
        &self,
        engine: &Engine,
        wasm: &[u8],
        digest: &str,
        before_compile: &dyn Fn(u64),
    ) -> Result<(Component, Origin), String> {
        // One hash of the component names it in both the profile cache and the prebuilt dirs.
        if let Some(found) = self.find_compiled(engine, digest) {
            return Ok(found);
        }
        #[cfg(not(feature = "compiler"))]
        {
            let _ = (wasm, before_compile);
            Err(self.cannot_compile())
        }
        #[cfg(feature = "compiler")]
        self.compile(engine, wasm, digest, before_compile)
    }

    /// Why a runtime-only host has no compiled form to load.
    #[cfg(not(feature = "compiler"))]
    fn cannot_compile(&self) -> String {
        let mut text = "this Talaria cannot compile plugins (a runtime-only distribution): it \
                        runs only those compiled when the distribution was built, and this \
                        component is not among them"
            .to_owned();
        for reason in self.prebuilt.iter().filter_map(PrebuiltDir::refused) {
            text.push_str(&format!(" ({reason})"));
        }
        text
    }

    #[cfg(feature = "compiler")]
    fn compile(
        &self,
        engine: &Engine,
        wasm: &[u8],
        digest: &str,
        before_compile: &dyn Fn(u64),
    ) -> Result<(Component, Origin), String> {
        let name = self.file_name(digest).unwrap_or_default();
        before_compile(u64::try_from(wasm.len()).unwrap_or(u64::MAX));
        let compiled = engine
            .precompile_component(wasm)
            .map_err(|e| format!("compiling the component: {}", error_text(&e)))?;
        self.counters.compiled.fetch_add(1, Ordering::Relaxed);
        // Loaded from the bytes just compiled, not from the file: an unwritable cache (or
        // secret) costs a compilation next time, never a failure.
        let component = deserialize_verified(engine, &compiled)
            .map_err(|e| format!("loading the compiled component: {}", error_text(&e)))?;
        if let Ok(key) = self.key.get_or_create() {
            let path = self.dir.join(&name);
            if write_atomically(&path, &seal(&key, Purpose::Compiled, &name, compiled)).is_ok() {
                let trust = Trust::Key(blake3::hash(&key));
                crate::loaded_code::remember_current(&path, trust, &component);
            }
        }
        Ok((component, Origin::Compiled))
    }

    /// A record stored by [`Self::store_record`] as `name`, if its MAC verifies: a planted
    /// tool list could claim a tool is read-only, or say anything to the model.
    pub(crate) fn record(&self, kind: Record, name: &str) -> Option<Vec<u8>> {
        let key = self.key.existing()?;
        let (sealed, _) = read_regular(&self.dir.join(kind.dir()).join(name)).ok()?;
        unseal(&key, kind.purpose(), name, &sealed).map(<[u8]>::to_vec)
    }

    /// Remembers a record as `name` (a failure only costs listing the plugin again at the
    /// next start).
    pub(crate) fn store_record(&self, kind: Record, name: &str, body: &[u8]) {
        let Ok(key) = self.key.get_or_create() else {
            return;
        };
        let dir = self.dir.join(kind.dir());
        let sealed = seal(&key, kind.purpose(), name, body.to_vec());
        let _ = create_private_dir(&dir).and_then(|()| write_atomically(&dir.join(name), &sealed));
    }

    /// The engine's compatibility hash (none in a runtime-only host).
    pub(crate) fn engine_hash(&self) -> Option<&str> {
        self.engine_hash.as_deref()
    }

    /// Writes every compiled component of this cache whose MAC verifies into `out` as a
    /// prebuilt directory (plain compiled files and their [`PREBUILT_DIGESTS`]); returns the
    /// file names written.
    pub(crate) fn export_prebuilt(&self, out: &Path) -> std::io::Result<Vec<String>> {
        create_private_dir(out)?;
        let key = self.key.existing();
        let mut names: Vec<String> = std::fs::read_dir(&self.dir)?
            .filter_map(Result::ok)
            .filter_map(|entry| entry.file_name().into_string().ok())
            .filter(|name| name.ends_with(".cwasm"))
            .collect();
        names.sort();
        let mut list = String::new();
        let mut written = Vec::new();
        for name in names {
            let Some(key) = &key else { break };
            let Ok((sealed, _)) = read_regular(&self.dir.join(&name)) else {
                continue;
            };
            let Some(body) = unseal(key, Purpose::Compiled, &name, &sealed) else {
                continue;
            };
            write_atomically_shared(&out.join(&name), body)?;
            list.push_str(&format!("{}  {name}\n", blake3::hash(body).to_hex()));
            written.push(name);
        }
        write_atomically_shared(&out.join(PREBUILT_DIGESTS), list.as_bytes())?;
        Ok(written)
    }
}

/// What identifies one version of a file without reading it: size, inode, device, and the
/// modification and change times in nanoseconds (the change time cannot be set back by hand).
pub(crate) fn file_stamp(metadata: &std::fs::Metadata) -> String {
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

/// A memo's text: the stamp, the digest and their MAC for the component at `path`.
fn memo_line(key: &[u8; KEY_LEN], path: &Path, stamp: &str, digest: &str) -> String {
    let remembered = format!("{stamp} {digest}");
    let tag = mac(
        key,
        Purpose::Memo,
        path.as_os_str().as_encoded_bytes(),
        remembered.as_bytes(),
    );
    format!("{remembered} {}\n", tag.to_hex())
}

/// The digest remembered in `memo` if it was taken of the file version `stamp` describes and
/// its MAC verifies.
fn remembered_digest(key: &[u8; KEY_LEN], memo: &Path, path: &Path, stamp: &str) -> Option<String> {
    let (bytes, _) = read_regular(memo).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    let (remembered, tag) = text.trim_end().rsplit_once(' ')?;
    let tag = blake3::Hash::from_hex(tag).ok()?;
    let expected = mac(
        key,
        Purpose::Memo,
        path.as_os_str().as_encoded_bytes(),
        remembered.as_bytes(),
    );
    // `blake3::Hash` compares in constant time.
    if tag != expected {
        return None;
    }
    let (remembered_stamp, digest) = remembered.rsplit_once(' ')?;
    (remembered_stamp == stamp
        && digest.len() == 64
        && digest.bytes().all(|b| b.is_ascii_hexdigit()))
    .then(|| digest.to_owned())
}

/// Deserialises a compiled component from bytes already in memory.
#[allow(unsafe_code)]
fn deserialize_verified(engine: &Engine, bytes: &[u8]) -> wasmtime::Result<Component> {
    // SAFETY: `Component::deserialize` trusts its input to be a compiled artefact produced by a
    // compatible wasmtime. Only three kinds of bytes reach it, all already in memory so they
    // cannot change after the check: bytes `Engine::precompile_component` just returned in
    // this process; a profile cache file whose keyed BLAKE3 MAC under the profile's secret
    // verified over exactly these bytes and the file's name (so this host wrote them, for this
    // component and engine, whose compatibility hash is in the name); and a prebuilt file of
    // the distribution whose BLAKE3 digest matched the list `talaria dist build` wrote next to
    // the binary (as trusted as the executable itself). wasmtime additionally checks the
    // header and refuses incompatible artefacts.
    unsafe { Component::deserialize(engine, bytes) }
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
