//! Compiled code this process has already verified and loaded, shared by every plugin host
//! in it: a long-lived surface (gateway, API server, ACP, batch) builds a host per session,
//! and without this each session would read, verify and map every component again.
//!
//! An entry is keyed by the compiled file's path and holds the file's stamp (size, inode,
//! modification and change times) at the time it was verified: a file changed since (rewritten,
//! tampered with) is read and verified again, as a new process would. The code in memory was
//! verified when it was read, so an entry can never hand out unverified code.
//!
//! What a component prepared for instantiation is kept alongside ([`prepared`]), keyed by the
//! component's digest and checked to be of the same loaded code: linking the same component
//! against the process's linkers gives the same result every time.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock, PoisonError};

use wasmtime::component::{Component, InstancePre};

use crate::cache::file_stamp;
use crate::state::PluginState;

/// What vouched for a compiled file: a profile's cache key (by its hash: a host under another
/// key trusts none of it) or a distribution's digest list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Trust {
    Key(blake3::Hash),
    Distribution,
}

struct Entry {
    stamp: String,
    component: Component,
}

type Entries = HashMap<(PathBuf, Trust), Entry>;

fn entries() -> &'static Mutex<Entries> {
    static ENTRIES: OnceLock<Mutex<Entries>> = OnceLock::new();
    ENTRIES.get_or_init(Mutex::default)
}

/// The component loaded from `path` under `trust` earlier in this process, if the file is
/// unchanged since.
pub(crate) fn remembered(path: &Path, trust: Trust) -> Option<Component> {
    let metadata = std::fs::symlink_metadata(path).ok()?;
    if !metadata.is_file() {
        return None;
    }
    let stamp = file_stamp(&metadata);
    let entries = entries().lock().unwrap_or_else(PoisonError::into_inner);
    entries
        .get(&(path.to_path_buf(), trust))
        .filter(|entry| entry.stamp == stamp)
        .map(|entry| entry.component.clone())
}

/// Remembers `component`, verified under `trust` from the file at `path` whose stamp was
/// `stamp` when read.
pub(crate) fn remember(path: &Path, trust: Trust, stamp: &str, component: &Component) {
    let mut entries = entries().lock().unwrap_or_else(PoisonError::into_inner);
    entries.insert(
        (path.to_path_buf(), trust),
        Entry {
            stamp: stamp.to_owned(),
            component: component.clone(),
        },
    );
}

/// Remembers `component` as loaded from `path` as the file is now (just written by this
/// process from the same bytes).
pub(crate) fn remember_current(path: &Path, trust: Trust, component: &Component) {
    if let Ok(metadata) = std::fs::symlink_metadata(path) {
        remember(path, trust, &file_stamp(&metadata), component);
    }
}

struct PreparedEntry {
    image: std::ops::Range<usize>,
    pre: InstancePre<PluginState>,
}

fn prepared_entries() -> &'static Mutex<HashMap<(String, bool), PreparedEntry>> {
    static PREPARED: OnceLock<Mutex<HashMap<(String, bool), PreparedEntry>>> = OnceLock::new();
    PREPARED.get_or_init(Mutex::default)
}

fn image_of(component: &Component) -> std::ops::Range<usize> {
    let range = component.image_range();
    range.start as usize..range.end as usize
}

/// `component` (whose SHA-256 is `digest`) prepared against the chat linker (`chat`) or the
/// plain one, by `link` unless this process already prepared the same loaded code.
pub(crate) fn prepared(
    digest: &str,
    chat: bool,
    component: &Component,
    link: impl FnOnce() -> wasmtime::Result<InstancePre<PluginState>>,
) -> wasmtime::Result<InstancePre<PluginState>> {
    let key = (digest.to_owned(), chat);
    let image = image_of(component);
    {
        let entries = prepared_entries()
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(entry) = entries.get(&key).filter(|entry| entry.image == image) {
            return Ok(entry.pre.clone());
        }
    }
    let pre = link()?;
    prepared_entries()
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(
            key,
            PreparedEntry {
                image,
                pre: pre.clone(),
            },
        );
    Ok(pre)
}
