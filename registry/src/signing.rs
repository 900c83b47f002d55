//! ed25519 keys of an index: a maintainer's secret key file, and verification
//! of entries against the public keys a client pinned.

use std::path::Path;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use ed25519_dalek::{Signer as _, SigningKey, Verifier as _, VerifyingKey};
use serde::{Deserialize, Serialize};

use crate::error::RegistryError;
use crate::index::{IndexKey, Signature, VersionEntry};

/// A maintainer's signing key, as stored in its key file (TOML):
///
/// ```toml
/// id = "main"
/// ed25519-secret = "<32 bytes, base64>"
/// ```
#[derive(Debug)]
pub struct SecretKey {
    id: String,
    key: SigningKey,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct KeyFile {
    id: String,
    ed25519_secret: String,
}

impl SecretKey {
    /// A new random key named `id`.
    pub fn generate(id: &str) -> Result<Self, RegistryError> {
        valid_key_id(id)?;
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed)
            .map_err(|e| RegistryError::Key(format!("no randomness for a new key: {e}")))?;
        Ok(Self {
            id: id.to_owned(),
            key: SigningKey::from_bytes(&seed),
        })
    }

    /// Reads a key file.
    pub fn load(path: &Path) -> Result<Self, RegistryError> {
        let text = std::fs::read_to_string(path).map_err(RegistryError::io(path))?;
        let bad = |message: String| RegistryError::Key(format!("{}: {message}", path.display()));
        let file: KeyFile = toml::from_str(&text).map_err(|e| bad(e.message().to_owned()))?;
        valid_key_id(&file.id)?;
        let seed: [u8; 32] = BASE64
            .decode(file.ed25519_secret.trim())
            .ok()
            .and_then(|bytes| bytes.try_into().ok())
            .ok_or_else(|| bad("ed25519-secret must be 32 bytes in base64".to_owned()))?;
        Ok(Self {
            id: file.id,
            key: SigningKey::from_bytes(&seed),
        })
    }

    /// Writes the key file, readable only by its owner; refuses to overwrite.
    pub fn save(&self, path: &Path) -> Result<(), RegistryError> {
        use std::io::Write as _;
        let text = toml::to_string(&KeyFile {
            id: self.id.clone(),
            ed25519_secret: BASE64.encode(self.key.to_bytes()),
        })
        .map_err(|e| RegistryError::Key(e.to_string()))?;
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(path).map_err(RegistryError::io(path))?;
        file.write_all(
            format!(
                "# Talaria signing key: secret, keep it out of indexes and distributions.\n{text}"
            )
            .as_bytes(),
        )
        .map_err(RegistryError::io(path))
    }

    /// The key's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The public half, as listed in `index.json`.
    pub fn public(&self) -> IndexKey {
        IndexKey {
            id: self.id.clone(),
            ed25519: BASE64.encode(self.key.verifying_key().to_bytes()),
        }
    }

    /// Signs `message` (for what is not an index entry: a distribution's compiled plugins);
    /// the signature in base64.
    pub fn sign_message(&self, message: &[u8]) -> String {
        BASE64.encode(self.key.sign(message).to_bytes())
    }

    /// Signs `entry` of `plugin`.
    pub fn sign(&self, plugin: &str, entry: &VersionEntry) -> Signature {
        let signature = self.key.sign(&entry.signed_payload(plugin));
        Signature {
            key: self.id.clone(),
            ed25519: BASE64.encode(signature.to_bytes()),
        }
    }
}

fn valid_key_id(id: &str) -> Result<(), RegistryError> {
    let ok = !id.is_empty()
        && id.len() <= 64
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(RegistryError::Key(format!(
            "'{id}' is not a valid key id: use letters, digits, '-', '_' and '.'"
        )))
    }
}

/// Decodes a public key, checking it is a valid ed25519 point.
pub fn decode_public(key: &IndexKey) -> Result<VerifyingKey, RegistryError> {
    BASE64
        .decode(key.ed25519.trim())
        .ok()
        .and_then(|bytes| <[u8; 32]>::try_from(bytes).ok())
        .and_then(|bytes| VerifyingKey::from_bytes(&bytes).ok())
        .ok_or_else(|| {
            RegistryError::Key(format!(
                "key '{}' is not an ed25519 public key (32 bytes in base64)",
                key.id
            ))
        })
}

/// Checks `entry`'s signature against `trusted` keys; the error says why it
/// does not verify.
pub fn verify(plugin: &str, entry: &VersionEntry, trusted: &[IndexKey]) -> Result<(), String> {
    let Some(signature) = &entry.signature else {
        return Err("the entry is not signed".to_owned());
    };
    let Some(key) = trusted.iter().find(|k| k.id == signature.key) else {
        return Err(format!(
            "signed with key '{}', which is not one of this index's trusted keys ({})",
            signature.key,
            trusted
                .iter()
                .map(|k| k.id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    };
    let public = decode_public(key).map_err(|e| e.to_string())?;
    let bytes: [u8; 64] = BASE64
        .decode(signature.ed25519.trim())
        .ok()
        .and_then(|bytes| bytes.try_into().ok())
        .ok_or_else(|| "the signature is not 64 bytes of base64".to_owned())?;
    public
        .verify(
            &entry.signed_payload(plugin),
            &ed25519_dalek::Signature::from_bytes(&bytes),
        )
        .map_err(|_| format!("the signature does not verify against key '{}'", key.id))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry() -> VersionEntry {
        VersionEntry {
            version: semver::Version::new(1, 0, 0),
            api: "^0.1".parse().unwrap(),
            sha256: "00".repeat(32),
            size: 1,
            capabilities: serde_json::json!({}),
            url: "p.tar.gz".into(),
            yanked: false,
            signature: None,
        }
    }

    #[test]
    fn a_signed_entry_verifies_and_any_change_breaks_it() {
        let key = SecretKey::generate("main").unwrap();
        let mut signed = entry();
        signed.signature = Some(key.sign("x", &signed));
        let trusted = [key.public()];
        assert_eq!(verify("x", &signed, &trusted), Ok(()));
        let mut tampered = signed.clone();
        tampered.sha256 = "11".repeat(32);
        assert!(
            verify("x", &tampered, &trusted)
                .unwrap_err()
                .contains("does not verify")
        );
        assert!(
            verify("y", &signed, &trusted).is_err(),
            "bound to the plugin name"
        );
        let other = SecretKey::generate("main").unwrap();
        assert!(verify("x", &signed, &[other.public()]).is_err());
        assert!(
            verify("x", &entry(), &trusted)
                .unwrap_err()
                .contains("not signed")
        );
        let stranger = SecretKey::generate("other").unwrap();
        let mut foreign = entry();
        foreign.signature = Some(stranger.sign("x", &foreign));
        assert!(
            verify("x", &foreign, &trusted)
                .unwrap_err()
                .contains("'other'")
        );
    }

    #[test]
    fn a_key_file_round_trips_and_is_private() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.key");
        let key = SecretKey::generate("k-1").unwrap();
        key.save(&path).unwrap();
        assert!(key.save(&path).is_err(), "never overwrites a key");
        let loaded = SecretKey::load(&path).unwrap();
        assert_eq!(loaded.public(), key.public());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o077, 0);
        }
        std::fs::write(&path, "id = \"k\"\ned25519-secret = \"c2hvcnQ=\"\n").unwrap();
        assert!(
            SecretKey::load(&path)
                .unwrap_err()
                .to_string()
                .contains("32 bytes")
        );
        assert!(SecretKey::generate("bad id").is_err());
    }
}
