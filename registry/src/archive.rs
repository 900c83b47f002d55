//! Package archives: `.tar.gz` with the package's files at the root.
//!
//! Packing is reproducible (sorted entries, zero times and owners, fixed
//! modes) so the same package always has the same checksum. Unpacking trusts
//! nothing in the archive: only regular files and directories with plain
//! relative paths are written, each created fresh under the destination, and
//! the bytes actually decompressed are counted against the limits (a header's
//! size is not believed).

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::path::{Component, Path, PathBuf};

use flate2::Compression;
use flate2::read::GzDecoder;
use flate2::write::GzEncoder;

use crate::error::RegistryError;

/// How much an archive may hold once unpacked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArchiveLimits {
    /// Largest total of unpacked file bytes.
    pub max_unpacked_bytes: u64,
    /// Largest number of entries.
    pub max_entries: usize,
    /// Unpacked bytes may exceed this many times the archive's size only
    /// below `ratio_floor_bytes` (a compression bomb has a huge ratio).
    pub max_ratio: u64,
    /// Below this many unpacked bytes the ratio is not checked.
    pub ratio_floor_bytes: u64,
    /// Deepest directory nesting.
    pub max_depth: usize,
}

impl Default for ArchiveLimits {
    fn default() -> Self {
        Self {
            max_unpacked_bytes: 512 * 1024 * 1024,
            max_entries: 4096,
            max_ratio: 100,
            ratio_floor_bytes: 8 * 1024 * 1024,
            max_depth: 16,
        }
    }
}

/// Packs the package directory `dir` into a reproducible `.tar.gz`.
/// Links and special files are refused: a package holds plain files.
pub fn pack(dir: &Path) -> Result<Vec<u8>, RegistryError> {
    let mut files = Vec::new();
    collect(dir, Path::new(""), &mut files)?;
    files.sort();
    let mut builder = tar::Builder::new(GzEncoder::new(Vec::new(), Compression::best()));
    builder.mode(tar::HeaderMode::Deterministic);
    for (relative, is_dir) in &files {
        let mut header = tar::Header::new_ustar();
        header.set_mtime(0);
        header.set_uid(0);
        header.set_gid(0);
        let path = dir.join(relative);
        let write = |e: std::io::Error| RegistryError::Io {
            path: path.clone(),
            source: e,
        };
        if *is_dir {
            header.set_entry_type(tar::EntryType::Directory);
            header.set_mode(0o755);
            header.set_size(0);
            builder
                .append_data(&mut header, relative, std::io::empty())
                .map_err(write)?;
        } else {
            let bytes = std::fs::read(&path).map_err(write)?;
            header.set_entry_type(tar::EntryType::Regular);
            header.set_mode(0o644);
            header.set_size(bytes.len() as u64);
            builder
                .append_data(&mut header, relative, bytes.as_slice())
                .map_err(write)?;
        }
    }
    let encoder = builder.into_inner().map_err(RegistryError::io(dir))?;
    encoder.finish().map_err(RegistryError::io(dir))
}

fn collect(
    root: &Path,
    relative: &Path,
    out: &mut Vec<(PathBuf, bool)>,
) -> Result<(), RegistryError> {
    let dir = root.join(relative);
    let entries = std::fs::read_dir(&dir).map_err(RegistryError::io(&dir))?;
    for entry in entries {
        let entry = entry.map_err(RegistryError::io(&dir))?;
        let name = entry.file_name();
        let path = relative.join(&name);
        let kind = entry.file_type().map_err(RegistryError::io(entry.path()))?;
        if kind.is_dir() {
            out.push((path.clone(), true));
            collect(root, &path, out)?;
        } else if kind.is_file() {
            out.push((path, false));
        } else {
            return Err(RegistryError::Package(format!(
                "{} is a link or special file; a package holds only plain files",
                entry.path().display()
            )));
        }
    }
    Ok(())
}

/// Unpacks `archive` into the empty directory `dest`, refusing anything
/// unsafe before it is written. On error `dest` may hold a partial tree; the
/// caller discards it.
pub fn unpack(archive: &[u8], dest: &Path, limits: ArchiveLimits) -> Result<(), RegistryError> {
    let unsafe_archive = |message: String| RegistryError::UnsafeArchive(message);
    verify_stream(archive, limits)?;
    let mut tar = tar::Archive::new(GzDecoder::new(archive));
    let entries = tar
        .entries()
        .map_err(|e| unsafe_archive(format!("not a tar.gz archive: {e}")))?;
    let mut seen: BTreeSet<PathBuf> = BTreeSet::new();
    let mut total: u64 = 0;
    let ratio_cap = (archive.len() as u64).saturating_mul(limits.max_ratio);
    for (count, entry) in entries.enumerate() {
        if count >= limits.max_entries {
            return Err(unsafe_archive(format!(
                "more than {} entries",
                limits.max_entries
            )));
        }
        let mut entry = entry.map_err(|e| unsafe_archive(format!("corrupt archive: {e}")))?;
        let raw = entry
            .path()
            .map_err(|e| unsafe_archive(format!("an entry has an unreadable path: {e}")))?
            .into_owned();
        let relative = safe_relative(&raw, limits.max_depth).map_err(unsafe_archive)?;
        let shown = raw.display().to_string();
        let kind = entry.header().entry_type();
        match kind {
            tar::EntryType::Symlink | tar::EntryType::Link => {
                let target = entry
                    .link_name()
                    .ok()
                    .flatten()
                    .map(|t| t.display().to_string())
                    .unwrap_or_default();
                let escapes = Path::new(&target).is_absolute()
                    || Path::new(&target)
                        .components()
                        .any(|c| c == Component::ParentDir);
                return Err(unsafe_archive(if escapes {
                    format!("{shown} is a link to {target}, outside the package")
                } else {
                    format!("{shown} is a link ({target}); packages may not contain links")
                }));
            }
            tar::EntryType::Char
            | tar::EntryType::Block
            | tar::EntryType::Fifo
            | tar::EntryType::Continuous => {
                return Err(unsafe_archive(format!(
                    "{shown} is a device or special file"
                )));
            }
            tar::EntryType::Directory | tar::EntryType::Regular => {}
            tar::EntryType::XGlobalHeader | tar::EntryType::XHeader => continue,
            other => {
                return Err(unsafe_archive(format!(
                    "{shown} has an entry type ({other:?}) packages may not use"
                )));
            }
        }
        let Some(relative) = relative else {
            continue; // "." or "./": the root itself
        };
        if !seen.insert(relative.clone()) {
            return Err(unsafe_archive(format!("{shown} appears twice")));
        }
        let path = dest.join(&relative);
        if kind == tar::EntryType::Directory {
            std::fs::create_dir_all(&path).map_err(RegistryError::io(&path))?;
            continue;
        }
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(RegistryError::io(parent))?;
        }
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(RegistryError::io(&path))?;
        let mut buffer = [0u8; 64 * 1024];
        loop {
            let read = entry
                .read(&mut buffer)
                .map_err(|e| unsafe_archive(format!("corrupt archive at {shown}: {e}")))?;
            if read == 0 {
                break;
            }
            total += read as u64;
            if total > limits.max_unpacked_bytes {
                return Err(unsafe_archive(format!(
                    "unpacks to more than {} bytes",
                    limits.max_unpacked_bytes
                )));
            }
            if total > limits.ratio_floor_bytes && total > ratio_cap {
                return Err(unsafe_archive(format!(
                    "unpacks to more than {}× its size (a compression bomb?)",
                    limits.max_ratio
                )));
            }
            file.write_all(&buffer[..read])
                .map_err(RegistryError::io(&path))?;
        }
    }
    Ok(())
}

/// Decompresses the whole gzip stream once, without writing anything, so a
/// damaged archive is refused before any of it is used: tar stops reading at
/// its end-of-archive blocks, before gzip's trailer, whose CRC-32 and length
/// are only checked at the end of the stream. Bounded like unpacking (plus
/// tar's headers and padding), so a bomb is refused here too.
fn verify_stream(archive: &[u8], limits: ArchiveLimits) -> Result<(), RegistryError> {
    let tar_overhead = (limits.max_entries as u64 + 2).saturating_mul(1024);
    let by_ratio = (archive.len() as u64)
        .saturating_mul(limits.max_ratio)
        .max(limits.ratio_floor_bytes);
    let cap = limits
        .max_unpacked_bytes
        .min(by_ratio)
        .saturating_add(tar_overhead);
    let mut stream = GzDecoder::new(archive).take(cap.saturating_add(1));
    let read = std::io::copy(&mut stream, &mut std::io::sink()).map_err(|e| {
        RegistryError::UnsafeArchive(format!(
            "corrupt archive (the gzip stream does not check out): {e}"
        ))
    })?;
    if read <= cap {
        return Ok(());
    }
    // The same words as unpacking's own checks.
    Err(RegistryError::UnsafeArchive(
        if by_ratio < limits.max_unpacked_bytes {
            format!(
                "unpacks to more than {}× its size (a compression bomb?)",
                limits.max_ratio
            )
        } else {
            format!("unpacks to more than {} bytes", limits.max_unpacked_bytes)
        },
    ))
}

/// The entry path as a plain relative path (None for the root itself), or why
/// it is refused.
fn safe_relative(raw: &Path, max_depth: usize) -> Result<Option<PathBuf>, String> {
    let text = raw.to_string_lossy();
    if text.starts_with('/') || text.starts_with('\\') || raw.is_absolute() {
        return Err(format!("{text} is an absolute path"));
    }
    let mut relative = PathBuf::new();
    for component in raw.components() {
        match component {
            Component::Normal(part) => {
                let part_text = part.to_string_lossy();
                if part_text.contains('\\') || part_text.contains(':') {
                    return Err(format!(
                        "{text} has a path component tar cannot mean portably"
                    ));
                }
                relative.push(part);
            }
            Component::CurDir => {}
            Component::ParentDir => return Err(format!("{text} leaves the package (..)")),
            Component::RootDir | Component::Prefix(_) => {
                return Err(format!("{text} is an absolute path"));
            }
        }
    }
    if relative.components().count() > max_depth {
        return Err(format!(
            "{text} is nested deeper than {max_depth} directories"
        ));
    }
    Ok((!relative.as_os_str().is_empty()).then_some(relative))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A gzip'd tar with the given raw headers, built by hand so tests can
    /// write what `tar::Builder` refuses to.
    fn hostile(entries: &[(&str, tar::EntryType, &[u8], Option<&str>)]) -> Vec<u8> {
        let mut out = Vec::new();
        for (name, kind, data, link) in entries {
            let mut header = tar::Header::new_gnu();
            let bytes = name.as_bytes();
            header.as_old_mut().name[..bytes.len()].copy_from_slice(bytes);
            header.set_entry_type(*kind);
            header.set_size(data.len() as u64);
            header.set_mode(0o644);
            if let Some(link) = link {
                header.set_link_name(link).unwrap();
            }
            header.set_cksum();
            out.extend_from_slice(header.as_bytes());
            out.extend_from_slice(data);
            out.resize(out.len().div_ceil(512) * 512, 0);
        }
        out.resize(out.len() + 1024, 0);
        let mut gz = GzEncoder::new(Vec::new(), Compression::default());
        gz.write_all(&out).unwrap();
        gz.finish().unwrap()
    }

    fn refused(archive: &[u8], limits: ArchiveLimits) -> String {
        let dest = tempfile::tempdir().unwrap();
        unpack(archive, dest.path(), limits)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn packing_is_reproducible_and_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("plugin.toml"), "name = \"x\"\n").unwrap();
        std::fs::create_dir(dir.path().join("skins")).unwrap();
        std::fs::write(dir.path().join("skins/a.yaml"), "name: a\n").unwrap();
        let first = pack(dir.path()).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(dir.path().join("skins/a.yaml"), "name: a\n").unwrap();
        assert_eq!(first, pack(dir.path()).unwrap(), "mtimes do not matter");
        let out = tempfile::tempdir().unwrap();
        unpack(&first, out.path(), ArchiveLimits::default()).unwrap();
        assert_eq!(
            std::fs::read_to_string(out.path().join("skins/a.yaml")).unwrap(),
            "name: a\n"
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_damaged_gzip_trailer_is_refused_before_anything_is_written() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("plugin.toml"), "name = \"x\"\n").unwrap();
        std::fs::write(dir.path().join("plugin.wasm"), vec![7u8; 4096]).unwrap();
        let good = pack(dir.path()).unwrap();
        // The trailer: CRC-32, then the length, of the uncompressed stream.
        for at in [good.len() - 8, good.len() - 1] {
            let mut damaged = good.clone();
            damaged[at] ^= 0x01;
            let dest = tempfile::tempdir().unwrap();
            let error = unpack(&damaged, dest.path(), ArchiveLimits::default())
                .unwrap_err()
                .to_string();
            assert!(error.contains("corrupt archive"), "{error}");
            assert_eq!(
                std::fs::read_dir(dest.path()).unwrap().count(),
                0,
                "nothing written"
            );
        }
        let dest = tempfile::tempdir().unwrap();
        unpack(&good, dest.path(), ArchiveLimits::default()).unwrap();
    }

    #[test]
    fn packing_refuses_links() {
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("/etc/passwd", dir.path().join("passwd")).unwrap();
        assert!(pack(dir.path()).unwrap_err().to_string().contains("link"));
    }

    #[test]
    fn hostile_archives_are_refused_before_anything_escapes() {
        use tar::EntryType::*;
        let limits = ArchiveLimits::default();
        for (archive, why) in [
            (
                hostile(&[("/etc/evil", Regular, b"x", None)]),
                "absolute path",
            ),
            (
                hostile(&[("../evil", Regular, b"x", None)]),
                "leaves the package",
            ),
            (
                hostile(&[("a/../../evil", Regular, b"x", None)]),
                "leaves the package",
            ),
            (
                hostile(&[("link", Symlink, b"", Some("/etc/passwd"))]),
                "outside the package",
            ),
            (
                hostile(&[("link", Symlink, b"", Some("../../x"))]),
                "outside the package",
            ),
            (
                hostile(&[("hard", Link, b"", Some("plugin.toml"))]),
                "may not contain links",
            ),
            (hostile(&[("dev", Char, b"", None)]), "device"),
            (hostile(&[("fifo", Fifo, b"", None)]), "device"),
            (
                hostile(&[("a", Regular, b"1", None), ("a", Regular, b"2", None)]),
                "twice",
            ),
        ] {
            let parent = tempfile::tempdir().unwrap();
            let dest = parent.path().join("pkg");
            std::fs::create_dir(&dest).unwrap();
            let error = unpack(&archive, &dest, limits).unwrap_err().to_string();
            assert!(error.contains(why), "{error} should say {why}");
            assert!(!parent.path().join("evil").exists());
        }
    }

    #[test]
    fn bombs_and_floods_are_refused_by_what_is_actually_unpacked() {
        let zeros = vec![0u8; 4 * 1024 * 1024];
        let bomb = hostile(&[("zeros", tar::EntryType::Regular, &zeros, None)]);
        let small = ArchiveLimits {
            ratio_floor_bytes: 1024 * 1024,
            ..ArchiveLimits::default()
        };
        assert!(refused(&bomb, small).contains("compression bomb"));
        let capped = ArchiveLimits {
            max_unpacked_bytes: 1024 * 1024,
            ..ArchiveLimits::default()
        };
        assert!(refused(&bomb, capped).contains("more than 1048576 bytes"));
        let many: Vec<(String, tar::EntryType, &[u8], Option<&str>)> = (0..20)
            .map(|i| (format!("f{i}"), tar::EntryType::Regular, &b"x"[..], None))
            .collect();
        let many: Vec<(&str, tar::EntryType, &[u8], Option<&str>)> = many
            .iter()
            .map(|(n, k, d, l)| (n.as_str(), *k, *d, *l))
            .collect();
        let few = ArchiveLimits {
            max_entries: 10,
            ..ArchiveLimits::default()
        };
        assert!(refused(&hostile(&many), few).contains("more than 10 entries"));
        assert!(refused(b"not gzip at all", ArchiveLimits::default()).contains("archive"));
    }
}
