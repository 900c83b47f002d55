//! Guards of the file tools: only regular files are read or written (opening
//! a FIFO blocks until a writer comes, a device may never end), and a file with
//! several hard links is replaced by a new file rather than written in place,
//! since another of its names may lie outside the working directory.

use std::fs::{self, Metadata};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use talaria_plugin_sdk::ToolError;

use crate::paths::{self, Target};

/// Refuses anything that is neither a regular file nor a directory (FIFOs,
/// sockets, devices), before it is opened.
pub fn ensure_regular(verb: &str, target: &Target, meta: &Metadata) -> Result<(), ToolError> {
    if meta.is_file() || meta.is_dir() {
        return Ok(());
    }
    Err(ToolError::failed(format!(
        "cannot {verb} {}: it is not a regular file (a FIFO, socket or device); only regular \
         files can be read or written",
        target.shown
    )))
}

/// Metadata of an existing path (following symlinks), `None` when it does not
/// exist; special files are refused.
pub fn existing(verb: &str, target: &Target) -> Result<Option<Metadata>, ToolError> {
    match fs::metadata(&target.full) {
        Ok(meta) => {
            ensure_regular(verb, target, &meta)?;
            Ok(Some(meta))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(paths::io_error(verb, target, &e)),
    }
}

/// What [`write`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    /// Written in place (or created).
    InPlace,
    /// The file had other hard links: a new file took its name, the other
    /// names keep the old content.
    LinkBroken,
}

impl Written {
    /// A note for the tool's result, when there is something to say.
    pub fn note(self, shown: &str) -> Option<String> {
        (self == Written::LinkBroken).then(|| {
            format!(
                "{shown} had other hard links; it was replaced by a new file, so the other \
                 names keep the old content"
            )
        })
    }
}

/// Writes `content` to the existing or new file at `target`. A file with one
/// name is written in place, keeping its mode, owner and other attributes; a
/// file with several (or an unknown number of) names is written to a temporary
/// file in the same directory that is then renamed over it, so no other name
/// changes. The rename copies the permission bits where the platform allows.
pub fn write(
    target: &Target,
    content: &[u8],
    meta: Option<&Metadata>,
) -> Result<Written, ToolError> {
    let single = meta.is_none() || link_count(&target.full, meta) == Some(1);
    if single {
        fs::write(&target.full, content).map_err(|e| paths::io_error("write", target, &e))?;
        return Ok(Written::InPlace);
    }
    replace(&target.full, content, meta).map_err(|e| paths::io_error("write", target, &e))?;
    Ok(Written::LinkBroken)
}

fn replace(path: &Path, content: &[u8], meta: Option<&Metadata>) -> io::Result<()> {
    let (temp, mut file) = temp_beside(path)?;
    let written = file
        .write_all(content)
        .and_then(|()| file.sync_all())
        .and_then(|()| {
            if let Some(meta) = meta {
                // Unsupported in WASI (no modes there): the new file keeps the default.
                let _ = fs::set_permissions(&temp, meta.permissions());
            }
            fs::rename(&temp, path)
        });
    if written.is_err() {
        let _ = fs::remove_file(&temp);
    }
    written
}

/// A new, empty file next to `path` (`.<name>.talaria-<n>.tmp`).
fn temp_beside(path: &Path) -> io::Result<(PathBuf, fs::File)> {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let salt = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    loop {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let temp = path.with_file_name(format!(".{name}.talaria-{salt:x}-{n}.tmp"));
        match fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)
        {
            Ok(file) => return Ok((temp, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && n < 1000 => {}
            Err(e) => return Err(e),
        }
    }
}

/// How many names (hard links) the file has; `None` when unknown.
#[cfg(unix)]
fn link_count(_path: &Path, meta: Option<&Metadata>) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    meta.map(MetadataExt::nlink)
}

/// How many names (hard links) the file has; `None` when unknown. WASI's
/// stat has the count but std exposes it only on nightly, so the preopened
/// directory holding the path is asked directly.
#[cfg(target_os = "wasi")]
fn link_count(path: &Path, _meta: Option<&Metadata>) -> Option<u64> {
    use wasip2::filesystem::{preopens, types::PathFlags};
    let path = path.to_str()?;
    let mut best: Option<(usize, u64)> = None;
    for (dir, guest) in preopens::get_directories() {
        let Some(rest) = path.strip_prefix(guest.trim_end_matches('/')) else {
            continue;
        };
        let rel = match rest.strip_prefix('/') {
            Some(rel) if !rel.is_empty() => rel,
            _ => continue,
        };
        if best.is_some_and(|(len, _)| len >= guest.len()) {
            continue;
        }
        if let Ok(stat) = dir.stat_at(PathFlags::SYMLINK_FOLLOW, rel) {
            best = Some((guest.len(), stat.link_count));
        }
    }
    best.map(|(_, count)| count)
}

#[cfg(not(any(unix, target_os = "wasi")))]
fn link_count(_path: &Path, _meta: Option<&Metadata>) -> Option<u64> {
    None
}
