//! `plugin pack`, `plugin publish` and `plugin keygen`: the author's and the
//! index maintainer's side.

use std::path::{Path, PathBuf};

use talaria_registry::{RegistryError, SecretKey};

use super::Outcome;
use crate::exit::Status;

/// Largest archive `publish` reads.
const MAX_ARCHIVE_BYTES: u64 = 512 * 1024 * 1024;

/// `plugin pack [DIR] [--out FILE]`.
pub(crate) fn pack(dir: Option<PathBuf>, out: Option<PathBuf>) -> Outcome {
    let dir = dir.unwrap_or_else(|| PathBuf::from("."));
    let packed = talaria_registry::pack(&dir)?;
    let out = out.unwrap_or_else(|| PathBuf::from(packed.file_name()));
    std::fs::write(&out, &packed.archive).map_err(RegistryError::io(&out))?;
    println!("{}", out.display());
    println!("  {} {}", packed.manifest.name, packed.manifest.version);
    println!("  size   {} bytes", packed.archive.len());
    println!("  sha256 {}", packed.sha256());
    Ok(Status::Answered)
}

/// `plugin publish ARCHIVE --index DIR --key FILE`.
pub(crate) fn publish(archive: &Path, index: &Path, key: &Path, url_base: Option<&str>) -> Outcome {
    let key = SecretKey::load(key)?;
    let size = std::fs::metadata(archive)
        .map_err(RegistryError::io(archive))?
        .len();
    if size > MAX_ARCHIVE_BYTES {
        return Err(RegistryError::TooLarge {
            url: archive.display().to_string(),
            limit: MAX_ARCHIVE_BYTES,
        }
        .into());
    }
    let bytes = std::fs::read(archive).map_err(RegistryError::io(archive))?;
    let published = talaria_registry::publish(&bytes, index, &key, url_base)?;
    if published.added {
        println!(
            "published {} {} to {} (signed with key '{}')",
            published.name,
            published.version,
            index.display(),
            key.id()
        );
    } else {
        println!(
            "{} {} is already published with this archive; nothing changed",
            published.name, published.version
        );
    }
    println!("  archive {}", published.archive.display());
    Ok(Status::Answered)
}

/// `plugin keygen --out FILE [--id ID]`.
pub(crate) fn keygen(out: &Path, id: &str) -> Outcome {
    let key = SecretKey::generate(id)?;
    key.save(out)?;
    let public = key.public();
    println!(
        "wrote the secret key to {} (keep it private)",
        out.display()
    );
    println!("public key {} = {}", public.id, public.ed25519);
    println!(
        "index.json: \"keys\": [{{\"id\": \"{}\", \"ed25519\": \"{}\"}}]",
        public.id, public.ed25519
    );
    Ok(Status::Answered)
}
