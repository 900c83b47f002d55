//! The compile cache's integrity: a per-profile 32-byte secret and keyed BLAKE3
//! MACs under it. Compiled code runs natively, so a cache file is only
//! deserialised when its MAC proves this profile's host wrote it, for the name
//! it has (a valid file copied under another name does not verify).
//!
//! The secret lives outside the cache directory (`$TALARIA_HOME/cache/plugins.key`
//! for a profile), is created owner-only from the OS's random source when the
//! cache is first written, and is never shown.

use std::io::{self, Write as _};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use talaria_plugin_manifest::files::read_regular;

/// Bytes of the secret.
pub(crate) const KEY_LEN: usize = 32;
/// Bytes of a MAC appended to a sealed file.
pub(crate) const MAC_LEN: usize = blake3::OUT_LEN;

/// What a MAC is over, so a MAC made for one purpose never verifies another.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Purpose {
    /// A compiled component, named by its file name.
    Compiled,
    /// A remembered component digest, named by the component's path.
    Memo,
    /// An Extism module's tool list, named by the module and its settings.
    #[cfg_attr(not(feature = "extism"), allow(dead_code))]
    Described,
    /// What a component listed at load, named by the component, its settings and grants.
    Listing,
}

impl Purpose {
    fn label(self) -> &'static [u8] {
        match self {
            Purpose::Compiled => b"talaria compiled component v1",
            Purpose::Memo => b"talaria component digest memo v1",
            Purpose::Described => b"talaria extism tool list v1",
            Purpose::Listing => b"talaria component listing v1",
        }
    }
}

/// The cache's secret, read (or created) on first use.
pub(crate) struct CacheKey {
    path: PathBuf,
    key: Mutex<Option<[u8; KEY_LEN]>>,
}

impl std::fmt::Debug for CacheKey {
    // The secret itself is never printed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CacheKey")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl CacheKey {
    pub(crate) fn new(path: PathBuf) -> Self {
        Self {
            path,
            key: Mutex::new(None),
        }
    }

    /// The secret, if there is a valid one; without it nothing in the cache verifies.
    pub(crate) fn existing(&self) -> Option<[u8; KEY_LEN]> {
        let mut slot = self.key.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.is_none() {
            *slot = read_key(&self.path);
        }
        *slot
    }

    /// The secret, created now if there is none (or the file is not a valid one).
    pub(crate) fn get_or_create(&self) -> io::Result<[u8; KEY_LEN]> {
        let mut slot = self.key.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(key) = *slot {
            return Ok(key);
        }
        let key = match read_key(&self.path) {
            Some(key) => key,
            None => create_key(&self.path)?,
        };
        *slot = Some(key);
        Ok(key)
    }
}

fn read_key(path: &Path) -> Option<[u8; KEY_LEN]> {
    let (bytes, _) = read_regular(path).ok()?;
    <[u8; KEY_LEN]>::try_from(bytes.as_slice()).ok()
}

/// Writes a fresh secret to `path` (mode 0600) and returns the one in force:
/// published with a hard link, which never replaces, so when two processes
/// create it at once both end up with the first one's.
fn create_key(path: &Path) -> io::Result<[u8; KEY_LEN]> {
    let mut key = [0u8; KEY_LEN];
    getrandom::fill(&mut key).map_err(|e| io::Error::other(format!("the OS RNG: {e}")))?;
    let parent = path.parent().unwrap_or(Path::new("."));
    crate::cache::create_private_dir(parent)?;
    let nonce = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let temp = parent.join(format!(".plugins-key.{}.{nonce}.tmp", std::process::id()));
    let written = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temp)?;
        file.write_all(&key)?;
        file.sync_all()
    })();
    let result = written.and_then(|()| match std::fs::hard_link(&temp, path) {
        Ok(()) => Ok(key),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => match read_key(path) {
            Some(theirs) => Ok(theirs),
            // A malformed secret verifies nothing: replace it.
            None => std::fs::rename(&temp, path).map(|()| key),
        },
        Err(e) => Err(e),
    });
    let _ = std::fs::remove_file(&temp);
    result
}

/// The keyed BLAKE3 MAC of `body` as `name`, for `purpose`.
pub(crate) fn mac(key: &[u8; KEY_LEN], purpose: Purpose, name: &[u8], body: &[u8]) -> blake3::Hash {
    let mut hasher = blake3::Hasher::new_keyed(key);
    let name_len = u64::try_from(name.len()).unwrap_or(u64::MAX);
    hasher
        .update(purpose.label())
        .update(&name_len.to_le_bytes())
        .update(name)
        .update(body);
    hasher.finalize()
}

/// `body` followed by its MAC as `name`, for `purpose`.
pub(crate) fn seal(
    key: &[u8; KEY_LEN],
    purpose: Purpose,
    name: &str,
    mut body: Vec<u8>,
) -> Vec<u8> {
    let tag = mac(key, purpose, name.as_bytes(), &body);
    body.extend_from_slice(tag.as_bytes());
    body
}

/// The body of `sealed` if its MAC as `name`, for `purpose`, verifies
/// (compared in constant time).
pub(crate) fn unseal<'a>(
    key: &[u8; KEY_LEN],
    purpose: Purpose,
    name: &str,
    sealed: &'a [u8],
) -> Option<&'a [u8]> {
    let split = sealed.len().checked_sub(MAC_LEN)?;
    let (body, tag) = sealed.split_at(split);
    let tag: [u8; MAC_LEN] = tag.try_into().ok()?;
    // `blake3::Hash` compares in constant time.
    (blake3::Hash::from_bytes(tag) == mac(key, purpose, name.as_bytes(), body)).then_some(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_created_once_private_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cache").join("plugins.key");
        assert_eq!(CacheKey::new(path.clone()).existing(), None);
        let key = CacheKey::new(path.clone()).get_or_create().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), key);
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(CacheKey::new(path.clone()).get_or_create().unwrap(), key);
        assert_eq!(CacheKey::new(path.clone()).existing(), Some(key));
        // A malformed secret is replaced.
        std::fs::write(&path, b"short").unwrap();
        assert_eq!(CacheKey::new(path.clone()).existing(), None);
        let fresh = CacheKey::new(path.clone()).get_or_create().unwrap();
        assert_ne!(fresh, key);
        assert_eq!(std::fs::read(&path).unwrap(), fresh);
        assert!(format!("{:?}", CacheKey::new(path)).contains("plugins.key"));
    }

    #[cfg(feature = "compiler")]
    #[test]
    fn a_seal_verifies_only_under_its_key_and_name() {
        let key = [7u8; KEY_LEN];
        let sealed = seal(&key, Purpose::Compiled, "a.cwasm", b"compiled".to_vec());
        assert_eq!(
            unseal(&key, Purpose::Compiled, "a.cwasm", &sealed),
            Some(&b"compiled"[..])
        );
        assert_eq!(
            unseal(&[8u8; KEY_LEN], Purpose::Compiled, "a.cwasm", &sealed),
            None,
            "wrong key"
        );
        assert_eq!(
            unseal(&key, Purpose::Compiled, "b.cwasm", &sealed),
            None,
            "renamed"
        );
        let mut flipped = sealed.clone();
        flipped[0] ^= 1;
        assert_eq!(
            unseal(&key, Purpose::Compiled, "a.cwasm", &flipped),
            None,
            "tampered"
        );
        assert_eq!(
            unseal(&key, Purpose::Compiled, "a.cwasm", b"short"),
            None,
            "no MAC"
        );
        assert_eq!(
            unseal(&key, Purpose::Compiled, "a.cwasm", &sealed[..MAC_LEN]),
            None
        );
        assert_eq!(
            unseal(&key, Purpose::Described, "a.cwasm", &sealed),
            None,
            "another purpose"
        );
    }
}
