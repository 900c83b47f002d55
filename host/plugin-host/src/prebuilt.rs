//! A distribution's read-only directory of components compiled by `talaria dist build`
//! (`plugins/.compiled`): plain compiled files, listed with their BLAKE3 digests in
//! [`PREBUILT_DIGESTS`] (`b3sum`'s format), the list signed ([`PREBUILT_SIGNATURE`]) with an
//! ed25519 key made for that distribution.
//!
//! A host given the distribution's public key ([`crate::HostOptions::prebuilt_key`], built into
//! a distribution's binary) loads a file only when the list's signature verifies under that key
//! and the file's bytes match their listed digest: whoever can write the directory but not the
//! binary cannot slip native code in. A host without a key checks the digests only (damage and
//! stray files).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use ed25519_dalek::{Signature, Verifier as _, VerifyingKey};

use talaria_plugin_manifest::files::read_regular;

/// The digest list of a prebuilt directory: `<blake3 hex>  <file name>` per line.
pub const PREBUILT_DIGESTS: &str = "B3SUMS";

/// The ed25519 signature of [`prebuilt_signed_message`] of the digest list, in base64.
pub const PREBUILT_SIGNATURE: &str = "B3SUMS.sig";

/// What a distribution's key signs: the digest list behind a context line of its own, so that
/// no signature made for something else verifies here.
pub fn prebuilt_signed_message(list: &[u8]) -> Vec<u8> {
    let mut message = b"talaria prebuilt plugins v1\n".to_vec();
    message.extend_from_slice(list);
    message
}

/// One prebuilt directory; its list is read (and its signature checked) once.
#[derive(Debug)]
pub(crate) struct PrebuiltDir {
    dir: PathBuf,
    /// The distribution's public key (base64), when the list must be signed.
    key: Option<String>,
    listed: OnceLock<Listed>,
}

#[derive(Debug, Default)]
struct Listed {
    digests: HashMap<String, blake3::Hash>,
    /// Why the whole list was refused, if it was (a compiling host compiles instead).
    #[cfg_attr(feature = "compiler", allow(dead_code))]
    refused: Option<String>,
}

impl PrebuiltDir {
    pub(crate) fn new(dir: PathBuf, key: Option<String>) -> Self {
        Self {
            dir,
            key,
            listed: OnceLock::new(),
        }
    }

    fn listed(&self) -> &Listed {
        self.listed.get_or_init(|| {
            let list_path = self.dir.join(PREBUILT_DIGESTS);
            let list = match read_regular(&list_path) {
                Ok((bytes, _)) => bytes,
                Err(e) => {
                    return Listed {
                        refused: Some(format!("{}: {e}", list_path.display())),
                        ..Listed::default()
                    };
                }
            };
            if let Some(key) = &self.key
                && let Err(reason) = verify_signature(&self.dir, key, &list)
            {
                return Listed {
                    refused: Some(reason),
                    ..Listed::default()
                };
            }
            let digests = String::from_utf8_lossy(&list)
                .lines()
                .filter_map(|line| {
                    let (digest, name) = line.split_once("  ")?;
                    Some((name.to_owned(), blake3::Hash::from_hex(digest).ok()?))
                })
                .collect();
            Listed {
                digests,
                refused: None,
            }
        })
    }

    /// The compiled file `name` if it is listed and its bytes match the list, with its
    /// path and its metadata as read.
    pub(crate) fn verified(&self, name: &str) -> Option<(Vec<u8>, PathBuf, std::fs::Metadata)> {
        let expected = self.listed().digests.get(name)?;
        let path = self.dir.join(name);
        let (bytes, metadata) = read_regular(&path).ok()?;
        (blake3::hash(&bytes) == *expected).then_some((bytes, path, metadata))
    }

    /// Where the compiled file `name` would be, if it is listed.
    pub(crate) fn listed_path(&self, name: &str) -> Option<PathBuf> {
        self.listed()
            .digests
            .contains_key(name)
            .then(|| self.dir.join(name))
    }

    /// The listed files whose names start with `prefix` (a component's digest and `-`), sorted.
    #[cfg_attr(feature = "compiler", allow(dead_code))]
    pub(crate) fn names_starting(&self, prefix: &str) -> Vec<String> {
        let mut names: Vec<String> = self
            .listed()
            .digests
            .keys()
            .filter(|name| name.starts_with(prefix))
            .cloned()
            .collect();
        names.sort();
        names
    }

    /// Why this directory's list is not used, if it is not.
    #[cfg_attr(feature = "compiler", allow(dead_code))]
    pub(crate) fn refused(&self) -> Option<&str> {
        self.listed().refused.as_deref()
    }
}

/// Checks `dir`'s signature file over `list` under the base64 public `key`.
fn verify_signature(dir: &Path, key: &str, list: &[u8]) -> Result<(), String> {
    let key: [u8; 32] = BASE64
        .decode(key.trim())
        .ok()
        .and_then(|bytes| bytes.try_into().ok())
        .ok_or("the distribution's key is not 32 bytes in base64")?;
    let key = VerifyingKey::from_bytes(&key)
        .map_err(|_| "the distribution's key is not an ed25519 public key")?;
    let signature_path = dir.join(PREBUILT_SIGNATURE);
    let (text, _) = read_regular(&signature_path).map_err(|e| {
        format!(
            "{}: {e} (the compiled plugins are not signed)",
            signature_path.display()
        )
    })?;
    let signature: [u8; 64] = BASE64
        .decode(String::from_utf8_lossy(&text).trim())
        .ok()
        .and_then(|bytes| bytes.try_into().ok())
        .ok_or_else(|| {
            format!(
                "{}: not an ed25519 signature in base64",
                signature_path.display()
            )
        })?;
    key.verify(
        &prebuilt_signed_message(list),
        &Signature::from_bytes(&signature),
    )
    .map_err(|_| {
        format!(
            "{}: the signature of {PREBUILT_DIGESTS} does not verify with this distribution's key",
            signature_path.display()
        )
    })
}
