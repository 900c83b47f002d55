//! The bearer key: checked in constant time, and named in the session-mapping
//! table only by a digest (never the key itself).

use http::HeaderMap;
use sha2::{Digest, Sha256};
use talaria_kernel::Principal;

use crate::error::ApiError;

/// Shortest key accepted.
pub const MIN_KEY_CHARS: usize = 16;

/// The keys, checked once at start: the owner's, and the named clients'.
#[derive(Debug, Clone)]
pub struct KeyGate {
    keys: Vec<([u8; 32], Principal)>,
}

/// Which key a request used: the hex of a digest (the per-key namespace of the session
/// mapping) and whom its sessions belong to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyId {
    /// The digest's hex.
    pub digest: String,
    /// The key's principal.
    pub principal: Principal,
}

impl KeyGate {
    /// A gate for each of `keys` (a key and whom its sessions belong to); a key too short or
    /// unfit for a header, or given twice, is refused, naming whose it is.
    pub fn with_keys(keys: &[(String, Principal)]) -> Result<Self, String> {
        if keys.is_empty() {
            return Err(
                "no API key is set (TALARIA_API_SERVER_KEY, api_server.key or \
                        api_server.keys)"
                    .to_owned(),
            );
        }
        let mut checked: Vec<([u8; 32], Principal)> = Vec::new();
        for (key, principal) in keys {
            let whose = if principal.is_owner() {
                "the API key".to_owned()
            } else {
                format!("the API key of {principal}")
            };
            let chars = key.chars().count();
            if chars < MIN_KEY_CHARS {
                return Err(format!(
                    "{whose} is {chars} characters; at least {MIN_KEY_CHARS} are needed \
                     (set TALARIA_API_SERVER_KEY, api_server.key or api_server.keys)"
                ));
            }
            if key.chars().any(|c| c.is_whitespace() || c.is_control()) {
                return Err(format!(
                    "{whose} has whitespace or control characters; it must fit in an HTTP header"
                ));
            }
            let digest: [u8; 32] = Sha256::digest(key.as_bytes()).into();
            if checked.iter().any(|(seen, _)| *seen == digest) {
                return Err(format!("{whose} is the same as another client's"));
            }
            checked.push((digest, principal.clone()));
        }
        Ok(Self { keys: checked })
    }

    /// The caller's key from `Authorization: Bearer …`, checked against every key (all of
    /// them, whichever matches: the time taken says nothing about which).
    pub fn check(&self, headers: &HeaderMap) -> Result<KeyId, ApiError> {
        let given = talaria_http_listener::bearer_token(headers).ok_or_else(|| {
            ApiError::unauthorized("missing API key: send 'Authorization: Bearer <key>'")
        })?;
        let digest: [u8; 32] = Sha256::digest(given.as_bytes()).into();
        let mut principal = None;
        for (key, owner) in &self.keys {
            if same(&digest, key) && principal.is_none() {
                principal = Some(owner.clone());
            }
        }
        let principal = principal.ok_or_else(|| ApiError::unauthorized("incorrect API key"))?;
        // A second digest, so the stored id cannot be checked against the gate's.
        let id: [u8; 32] =
            Sha256::digest([b"talaria-api-key:".as_slice(), &digest].concat()).into();
        Ok(KeyId {
            digest: hex(&id[..16]),
            principal,
        })
    }
}

/// Compares two digests without stopping early: the time taken says nothing
/// about how much of the key was right (or its length, hashed away).
pub fn same(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a.iter()
        .zip(b.iter())
        .fold(0u8, |differ, (x, y)| differ | (x ^ y))
        == 0
}

/// Lower-case hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "0123456789abcdef";

    /// A gate for one key, the owner's.
    fn owner_gate(key: &str) -> Result<KeyGate, String> {
        KeyGate::with_keys(&[(key.to_owned(), Principal::owner())])
    }

    fn headers(auth: Option<&str>) -> HeaderMap {
        let mut map = HeaderMap::new();
        if let Some(auth) = auth {
            map.insert("authorization", auth.parse().unwrap());
        }
        map
    }

    #[test]
    fn short_or_unprintable_keys_are_refused() {
        assert!(owner_gate("short").is_err());
        assert!(owner_gate("0123456789abcde").is_err());
        assert!(owner_gate("0123456789 abcdef").is_err());
        assert!(owner_gate(KEY).is_ok());
    }

    #[test]
    fn only_the_right_bearer_key_passes() {
        let gate = owner_gate(KEY).unwrap();
        assert!(
            gate.check(&headers(Some("Bearer 0123456789abcdef")))
                .is_ok()
        );
        assert!(
            gate.check(&headers(Some("bearer 0123456789abcdef")))
                .is_ok()
        );
        for wrong in [
            "Bearer 0123456789abcdeX",
            "Bearer 0123456789abcdef0",
            "Basic 0123456789abcdef",
            "0123456789abcdef",
        ] {
            let refused = gate.check(&headers(Some(wrong))).unwrap_err();
            assert_eq!(refused.status, http::StatusCode::UNAUTHORIZED, "{wrong}");
        }
        assert_eq!(
            gate.check(&headers(None)).unwrap_err().status,
            http::StatusCode::UNAUTHORIZED
        );
    }

    #[test]
    fn the_key_id_is_stable_and_is_not_the_key() {
        let gate = owner_gate(KEY).unwrap();
        let id = gate
            .check(&headers(Some("Bearer 0123456789abcdef")))
            .unwrap();
        assert_eq!(
            id,
            gate.check(&headers(Some("Bearer 0123456789abcdef")))
                .unwrap()
        );
        assert!(!id.digest.contains(KEY));
        assert_ne!(id.digest, hex(&Sha256::digest(KEY.as_bytes())[..16]));
        assert!(id.principal.is_owner());
    }

    #[test]
    fn same_compares_every_byte() {
        let a = [7u8; 32];
        let mut b = a;
        assert!(same(&a, &b));
        b[31] ^= 1;
        assert!(!same(&a, &b));
        b = a;
        b[0] ^= 0x80;
        assert!(!same(&a, &b));
    }

    #[test]
    fn each_named_key_is_its_own_principal() {
        let ci = Principal::api_client("ci");
        let gate = KeyGate::with_keys(&[
            (KEY.to_owned(), Principal::owner()),
            ("ci-key-0123456789ab".to_owned(), ci.clone()),
        ])
        .unwrap();
        let owner = gate
            .check(&headers(Some("Bearer 0123456789abcdef")))
            .unwrap();
        let client = gate
            .check(&headers(Some("Bearer ci-key-0123456789ab")))
            .unwrap();
        assert!(owner.principal.is_owner());
        assert_eq!(client.principal, ci);
        assert_ne!(owner.digest, client.digest);
        let twice =
            KeyGate::with_keys(&[(KEY.to_owned(), Principal::owner()), (KEY.to_owned(), ci)]);
        assert!(twice.unwrap_err().contains("same as another"));
    }
}
