//! The bearer key: checked in constant time, and named in the session-mapping
//! table only by a digest (never the key itself).

use http::HeaderMap;
use sha2::{Digest, Sha256};

use crate::error::ApiError;

/// Shortest key accepted.
pub const MIN_KEY_CHARS: usize = 16;

/// The key, checked once at start.
#[derive(Debug, Clone)]
pub struct KeyGate {
    digest: [u8; 32],
}

/// Which key a request used, as the hex of a digest (the per-key namespace of
/// the session mapping).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyId(pub String);

impl KeyGate {
    /// A gate for `key`, refused when it is too short or unfit for a header.
    pub fn new(key: &str) -> Result<Self, String> {
        let chars = key.chars().count();
        if chars < MIN_KEY_CHARS {
            return Err(format!(
                "the API key is {chars} characters; at least {MIN_KEY_CHARS} are needed \
                 (set TALARIA_API_SERVER_KEY or api_server.key)"
            ));
        }
        if key.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(
                "the API key has whitespace or control characters; it must fit in an HTTP header"
                    .to_owned(),
            );
        }
        Ok(Self {
            digest: Sha256::digest(key.as_bytes()).into(),
        })
    }

    /// The caller's key from `Authorization: Bearer …`, checked.
    pub fn check(&self, headers: &HeaderMap) -> Result<KeyId, ApiError> {
        let given = talaria_http_listener::bearer_token(headers).ok_or_else(|| {
            ApiError::unauthorized("missing API key: send 'Authorization: Bearer <key>'")
        })?;
        let digest: [u8; 32] = Sha256::digest(given.as_bytes()).into();
        if !same(&digest, &self.digest) {
            return Err(ApiError::unauthorized("incorrect API key"));
        }
        // A second digest, so the stored id cannot be checked against the gate's.
        let id: [u8; 32] =
            Sha256::digest([b"talaria-api-key:".as_slice(), &digest].concat()).into();
        Ok(KeyId(hex(&id[..16])))
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

    fn headers(auth: Option<&str>) -> HeaderMap {
        let mut map = HeaderMap::new();
        if let Some(auth) = auth {
            map.insert("authorization", auth.parse().unwrap());
        }
        map
    }

    #[test]
    fn short_or_unprintable_keys_are_refused() {
        assert!(KeyGate::new("short").is_err());
        assert!(KeyGate::new("0123456789abcde").is_err());
        assert!(KeyGate::new("0123456789 abcdef").is_err());
        assert!(KeyGate::new(KEY).is_ok());
    }

    #[test]
    fn only_the_right_bearer_key_passes() {
        let gate = KeyGate::new(KEY).unwrap();
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
        let gate = KeyGate::new(KEY).unwrap();
        let id = gate
            .check(&headers(Some("Bearer 0123456789abcdef")))
            .unwrap();
        assert_eq!(
            id,
            gate.check(&headers(Some("Bearer 0123456789abcdef")))
                .unwrap()
        );
        assert!(!id.0.contains(KEY));
        assert_ne!(id.0, hex(&Sha256::digest(KEY.as_bytes())[..16]));
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
}
