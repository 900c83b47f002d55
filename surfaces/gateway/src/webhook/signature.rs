//! Checking that a webhook request comes from who it claims: GitHub's
//! `X-Hub-Signature-256` (HMAC-SHA256 of the body, `sha256=<hex>`), GitLab's
//! `X-Gitlab-Token` (the shared secret itself) and a generic HMAC-SHA256 in
//! a header of the route's choosing. Comparisons take constant time.

use hmac::{Hmac, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;
use talaria_profile::WebhookSignature;

/// The header a generic HMAC route reads unless it names another.
pub const DEFAULT_HMAC_HEADER: &str = "x-signature-256";

/// How a route authenticates its requests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SignatureScheme {
    /// GitHub: `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the body>`.
    GitHub,
    /// GitLab: `X-Gitlab-Token: <secret>`.
    GitLab,
    /// Any sender: `<header>: [sha256=]<hex HMAC-SHA256 of the body>`.
    Hmac {
        /// The header carrying the signature (lower case).
        header: String,
    },
}

/// Why a request was refused (each is answered 401).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    /// The header is not there.
    #[error("the request has no {0} header")]
    Missing(String),
    /// The header is not a hex signature.
    #[error("the {0} header is not a sha256 signature in hex")]
    Malformed(String),
    /// The signature or token does not match the route's secret.
    #[error("the {0} header does not match this route's secret")]
    Mismatch(String),
}

impl SignatureScheme {
    /// The scheme a route's config names (`signature`, and `header` for hmac).
    pub fn from_config(signature: WebhookSignature, header: Option<&str>) -> Self {
        match signature {
            WebhookSignature::Github => SignatureScheme::GitHub,
            WebhookSignature::Gitlab => SignatureScheme::GitLab,
            WebhookSignature::Hmac => SignatureScheme::Hmac {
                header: header.unwrap_or(DEFAULT_HMAC_HEADER).to_ascii_lowercase(),
            },
        }
    }

    /// The header this scheme reads, in lower case.
    pub fn header(&self) -> &str {
        match self {
            SignatureScheme::GitHub => "x-hub-signature-256",
            SignatureScheme::GitLab => "x-gitlab-token",
            SignatureScheme::Hmac { header } => header,
        }
    }

    /// Checks `header_value` (the scheme's header, `None` when absent)
    /// against `secret` and the raw `body`.
    pub fn verify(
        &self,
        secret: &[u8],
        header_value: Option<&[u8]>,
        body: &[u8],
    ) -> Result<(), SignatureError> {
        let name = self.header();
        let value = header_value.ok_or_else(|| SignatureError::Missing(name.to_owned()))?;
        let matches = match self {
            SignatureScheme::GitLab => bool::from(value.ct_eq(secret)),
            SignatureScheme::GitHub => {
                let hex = value
                    .strip_prefix(b"sha256=")
                    .ok_or_else(|| SignatureError::Malformed(name.to_owned()))?;
                hmac_matches(secret, body, hex, name)?
            }
            SignatureScheme::Hmac { .. } => {
                let hex = value.strip_prefix(b"sha256=").unwrap_or(value);
                hmac_matches(secret, body, hex, name)?
            }
        };
        if matches {
            Ok(())
        } else {
            Err(SignatureError::Mismatch(name.to_owned()))
        }
    }
}

/// The signature of `body` under `secret`, as `sha256=<hex>` (for senders
/// and tests).
pub fn sign(secret: &[u8], body: &[u8]) -> String {
    format!(
        "sha256={}",
        hex::encode(mac(secret, body).finalize().into_bytes())
    )
}

fn mac(secret: &[u8], body: &[u8]) -> Hmac<Sha256> {
    // HMAC takes a key of any length; `new_from_slice` cannot fail for it.
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret)
        .unwrap_or_else(|_| unreachable!("HMAC accepts keys of every length"));
    mac.update(body);
    mac
}

fn hmac_matches(
    secret: &[u8],
    body: &[u8],
    hex_signature: &[u8],
    header: &str,
) -> Result<bool, SignatureError> {
    let given = hex::decode(hex_signature.trim_ascii())
        .map_err(|_| SignatureError::Malformed(header.to_owned()))?;
    Ok(mac(secret, body).verify_slice(&given).is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &[u8] = b"It's a Secret to Everybody";
    const BODY: &[u8] = b"Hello, World!";

    #[test]
    fn github_documents_this_signature() {
        // The example from GitHub's "Validating webhook deliveries".
        let expected = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";
        assert_eq!(sign(SECRET, BODY), expected);
        let scheme = SignatureScheme::GitHub;
        assert_eq!(
            scheme.verify(SECRET, Some(expected.as_bytes()), BODY),
            Ok(())
        );
    }

    #[test]
    fn a_changed_body_or_secret_is_refused() {
        let signature = sign(SECRET, BODY);
        let scheme = SignatureScheme::GitHub;
        assert!(matches!(
            scheme.verify(SECRET, Some(signature.as_bytes()), b"Hello, World?"),
            Err(SignatureError::Mismatch(_))
        ));
        assert!(matches!(
            scheme.verify(b"another", Some(signature.as_bytes()), BODY),
            Err(SignatureError::Mismatch(_))
        ));
    }

    #[test]
    fn missing_and_malformed_headers_are_named() {
        let scheme = SignatureScheme::GitHub;
        assert_eq!(
            scheme.verify(SECRET, None, BODY),
            Err(SignatureError::Missing("x-hub-signature-256".into()))
        );
        let bare_hex = sign(SECRET, BODY).replace("sha256=", "");
        assert!(matches!(
            scheme.verify(SECRET, Some(bare_hex.as_bytes()), BODY),
            Err(SignatureError::Malformed(_))
        ));
        assert!(matches!(
            scheme.verify(SECRET, Some(b"sha256=zz"), BODY),
            Err(SignatureError::Malformed(_))
        ));
    }

    #[test]
    fn gitlab_compares_the_token() {
        let scheme = SignatureScheme::GitLab;
        assert_eq!(scheme.verify(b"tok", Some(b"tok"), BODY), Ok(()));
        assert!(matches!(
            scheme.verify(b"tok", Some(b"toK"), BODY),
            Err(SignatureError::Mismatch(_))
        ));
        assert!(matches!(
            scheme.verify(b"tok", Some(b"tok2"), BODY),
            Err(SignatureError::Mismatch(_))
        ));
    }

    #[test]
    fn generic_hmac_takes_bare_or_prefixed_hex_in_its_header() {
        let scheme = SignatureScheme::Hmac {
            header: DEFAULT_HMAC_HEADER.into(),
        };
        let signature = sign(SECRET, BODY);
        let bare = signature.trim_start_matches("sha256=").to_uppercase();
        assert_eq!(
            scheme.verify(SECRET, Some(signature.as_bytes()), BODY),
            Ok(())
        );
        assert_eq!(scheme.verify(SECRET, Some(bare.as_bytes()), BODY), Ok(()));
        assert_eq!(scheme.header(), "x-signature-256");
    }
}
