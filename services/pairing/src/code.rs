//! Pairing codes: drawn from the OS's random source, kept only as salted
//! SHA-256 hashes, compared in constant time.

use sha2::{Digest, Sha256};

/// 32 characters without the look-alikes 0/O and 1/I, so a code read aloud or
/// retyped from a phone survives; 32 divides 256, so each byte maps evenly.
pub const ALPHABET: &[u8; 32] = b"ABCDEFGHJKLMNPQRSTUVWXYZ23456789";

/// Characters per code (40 bits).
pub const CODE_LENGTH: usize = 8;

/// A fresh code.
pub(crate) fn new_code() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; CODE_LENGTH];
    getrandom::fill(&mut bytes)?;
    Ok(bytes
        .iter()
        .map(|b| char::from(ALPHABET[usize::from(*b) % ALPHABET.len()]))
        .collect())
}

/// A fresh salt, hex.
pub(crate) fn new_salt() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)?;
    Ok(hex(&bytes))
}

/// What a code is stored as: hex SHA-256 of the salt and the code as typed
/// back (trimmed, upper case).
pub(crate) fn hash(salt: &str, code: &str) -> String {
    let mut digest = Sha256::new();
    digest.update(salt.as_bytes());
    digest.update(b":");
    digest.update(normalize(code).as_bytes());
    hex(&digest.finalize())
}

/// A code as the owner may type it: spaces and dashes dropped, upper case.
pub(crate) fn normalize(code: &str) -> String {
    code.chars()
        .filter(|c| !c.is_whitespace() && *c != '-')
        .map(|c| c.to_ascii_uppercase())
        .collect()
}

/// Equal strings, compared without an early exit.
pub(crate) fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |diff, (x, y)| diff | (x ^ y))
            == 0
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_use_the_alphabet_and_differ() {
        let a = new_code().unwrap();
        let b = new_code().unwrap();
        assert_eq!(a.len(), CODE_LENGTH);
        assert!(a.bytes().all(|c| ALPHABET.contains(&c)), "{a}");
        assert_ne!(a, b);
        assert!(!ALPHABET.iter().any(|c| b"01IO".contains(c)));
    }

    #[test]
    fn a_hash_matches_the_code_as_retyped_only() {
        let salt = new_salt().unwrap();
        let stored = hash(&salt, "ABCD2345");
        assert!(same(&stored, &hash(&salt, " abcd-2345 ")));
        assert!(!same(&stored, &hash(&salt, "ABCD2346")));
        assert!(!same(&stored, &hash("other", "ABCD2345")));
        assert!(!stored.contains("ABCD"));
    }
}
