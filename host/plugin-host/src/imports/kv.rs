//! The key-value store behind the `kv` import: one directory per plugin and
//! profile, one file per key named by the SHA-256 of the key, written
//! atomically (temporary file + rename). Each file holds the key (so keys can
//! be listed) followed by the value.

use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::bindings::HostError;
use crate::bindings::talaria::plugin::kv;
use crate::state::HostCtx;

/// Longest key, in bytes.
pub const MAX_KEY_BYTES: usize = 1024;
/// Largest value, in bytes.
pub const MAX_VALUE_BYTES: usize = 4 * 1024 * 1024;

/// A plugin's store for one profile.
#[derive(Debug, Clone)]
pub(crate) struct KvStore {
    dir: PathBuf,
}

impl KvStore {
    pub(crate) fn new(dir: PathBuf) -> Self {
        Self { dir }
    }

    fn file(&self, key: &str) -> PathBuf {
        self.dir
            .join(format!("{}.kv", hex(&Sha256::digest(key.as_bytes()))))
    }

    fn check_key(key: &str) -> Result<(), String> {
        if key.len() > MAX_KEY_BYTES {
            return Err(format!("key is longer than {MAX_KEY_BYTES} bytes"));
        }
        Ok(())
    }

    pub(crate) fn get(&self, key: &str) -> Result<Option<Vec<u8>>, String> {
        Self::check_key(key)?;
        match std::fs::read(self.file(key)) {
            Ok(bytes) => match decode(&bytes) {
                Some((stored, value)) if stored == key => Ok(Some(value.to_vec())),
                Some(_) => Ok(None),
                None => Err("stored value is corrupt".into()),
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!("reading the store: {e}")),
        }
    }

    pub(crate) fn set(&self, key: &str, value: &[u8]) -> Result<(), String> {
        Self::check_key(key)?;
        if value.len() > MAX_VALUE_BYTES {
            return Err(format!("value is larger than {MAX_VALUE_BYTES} bytes"));
        }
        std::fs::create_dir_all(&self.dir).map_err(|e| format!("creating the store: {e}"))?;
        let mut encoded = Vec::with_capacity(4 + key.len() + value.len());
        encoded.extend_from_slice(&u32::try_from(key.len()).unwrap_or(u32::MAX).to_le_bytes());
        encoded.extend_from_slice(key.as_bytes());
        encoded.extend_from_slice(value);
        write_atomically(&self.file(key), &encoded).map_err(|e| format!("writing the store: {e}"))
    }

    pub(crate) fn delete(&self, key: &str) -> Result<(), String> {
        Self::check_key(key)?;
        match std::fs::remove_file(self.file(key)) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(format!("deleting from the store: {e}")),
        }
    }

    pub(crate) fn list_keys(&self, prefix: &str) -> Result<Vec<String>, String> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(format!("listing the store: {e}")),
        };
        let mut keys = Vec::new();
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_none_or(|ext| ext != "kv") {
                continue;
            }
            let Ok(bytes) = std::fs::read(&path) else {
                continue;
            };
            if let Some((key, _)) = decode(&bytes)
                && key.starts_with(prefix)
            {
                keys.push(key.to_owned());
            }
        }
        keys.sort();
        Ok(keys)
    }
}

fn decode(bytes: &[u8]) -> Option<(&str, &[u8])> {
    let len_bytes: [u8; 4] = bytes.get(..4)?.try_into().ok()?;
    let len = usize::try_from(u32::from_le_bytes(len_bytes)).ok()?;
    let key = std::str::from_utf8(bytes.get(4..4 + len)?).ok()?;
    Some((key, bytes.get(4 + len..)?))
}

/// Lower-case hex of bytes.
pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// Writes `bytes` to `path` through a temporary file in the same directory
/// and a rename, so readers see the old or the new content, never a part.
/// The file is created 0600: it is in the profile home (plugin stores, the
/// compile cache).
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_atomically_with_mode(path, bytes, 0o600)
}

/// [`write_atomically`] for what others read (a distribution's prebuilt
/// plugins): the mode follows the umask.
pub(crate) fn write_atomically_shared(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_atomically_with_mode(path, bytes, 0o666)
}

fn write_atomically_with_mode(path: &Path, bytes: &[u8], mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let dir = path.parent().unwrap_or(Path::new("."));
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let nonce = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let tmp = dir.join(format!(".{file_name}.{}.{nonce}.tmp", std::process::id()));
    let result = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// The `kv` import over the plugin's store; denied without the grant.
impl HostCtx {
    fn kv(&self) -> Result<&KvStore, HostError> {
        self.plugin
            .kv
            .as_ref()
            .ok_or_else(|| HostError::Denied(self.plugin.denied("kv")))
    }
}

impl kv::Host for HostCtx {
    async fn get(&mut self, key: String) -> Result<Option<Vec<u8>>, HostError> {
        self.kv()?.get(&key).map_err(HostError::Failed)
    }

    async fn set(&mut self, key: String, value: Vec<u8>) -> Result<(), HostError> {
        self.kv()?.set(&key, &value).map_err(HostError::Failed)
    }

    async fn delete(&mut self, key: String) -> Result<(), HostError> {
        self.kv()?.delete(&key).map_err(HostError::Failed)
    }

    async fn list_keys(&mut self, prefix: String) -> Result<Vec<String>, HostError> {
        self.kv()?.list_keys(&prefix).map_err(HostError::Failed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_list() {
        let dir = tempfile::tempdir().unwrap();
        let kv = KvStore::new(dir.path().join("kv"));
        assert_eq!(kv.get("a").unwrap(), None);
        assert_eq!(kv.list_keys("").unwrap(), Vec::<String>::new());
        kv.set("a/1", b"one").unwrap();
        kv.set("a/2", b"two").unwrap();
        kv.set("b", b"").unwrap();
        assert_eq!(kv.get("a/1").unwrap().as_deref(), Some(&b"one"[..]));
        assert_eq!(kv.list_keys("a/").unwrap(), vec!["a/1", "a/2"]);
        kv.set("a/1", b"uno").unwrap();
        assert_eq!(kv.get("a/1").unwrap().as_deref(), Some(&b"uno"[..]));
        kv.delete("a/1").unwrap();
        kv.delete("missing").unwrap();
        assert_eq!(kv.get("a/1").unwrap(), None);
        assert_eq!(kv.list_keys("").unwrap(), vec!["a/2", "b"]);
        assert!(kv.set(&"k".repeat(MAX_KEY_BYTES + 1), b"").is_err());
    }
}
