//! The persisted "always approved" finding ids of a profile.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::ApprovalError;

/// Written at the top of the file so a person opening it knows what it is.
const HEADER: &str = "# Command kinds approved with \"always\" (ids from Talaria's approval patterns).\n\
                      # Remove a line to be asked again.\n";

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct AlwaysFile {
    #[serde(default)]
    always: BTreeSet<String>,
}

/// The "always" set and the TOML file it lives in.
#[derive(Debug)]
pub(crate) struct AlwaysStore {
    path: PathBuf,
    ids: BTreeSet<String>,
}

impl AlwaysStore {
    /// Loads the file at `path`; a missing file is an empty set, a corrupt one an error.
    pub(crate) fn load(path: PathBuf) -> Result<Self, ApprovalError> {
        let ids = read(&path)?;
        Ok(Self { path, ids })
    }

    pub(crate) fn contains(&self, id: &str) -> bool {
        self.ids.contains(id)
    }

    /// Adds `id` and saves atomically. The file is re-read first so ids added by another
    /// session are kept, and a file that has become corrupt is reported, never overwritten.
    /// The id stays approved in memory even when saving fails.
    pub(crate) fn insert(&mut self, id: &str) -> Result<(), ApprovalError> {
        self.ids.insert(id.to_owned());
        let mut on_disk = read(&self.path)?;
        on_disk.extend(self.ids.iter().cloned());
        self.ids = on_disk;
        write(&self.path, &self.ids)
    }
}

fn read(path: &Path) -> Result<BTreeSet<String>, ApprovalError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeSet::new()),
        Err(source) => {
            return Err(ApprovalError::ReadAlways {
                path: path.to_owned(),
                source,
            });
        }
    };
    let file: AlwaysFile =
        toml::from_str(&text).map_err(|source| ApprovalError::CorruptAlways {
            path: path.to_owned(),
            source,
        })?;
    Ok(file.always)
}

/// Writes via a temporary file in the same directory and a rename, so readers never see a
/// half-written file.
fn write(path: &Path, ids: &BTreeSet<String>) -> Result<(), ApprovalError> {
    let err = |source| ApprovalError::WriteAlways {
        path: path.to_owned(),
        source,
    };
    let body = toml::to_string(&AlwaysFile {
        always: ids.clone(),
    })
    .map_err(|e| err(std::io::Error::other(e)))?;
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir).map_err(err)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(err)?;
    tmp.write_all(HEADER.as_bytes()).map_err(err)?;
    tmp.write_all(body.as_bytes()).map_err(err)?;
    tmp.as_file().sync_all().map_err(err)?;
    tmp.persist(path).map_err(|e| err(e.error))?;
    Ok(())
}
