//! TLS for the model client: the platform's certificate verifier, created at the first TLS
//! handshake instead of when the client is built. Loading the system's root certificates costs
//! milliseconds of a one-shot run, and an endpoint on plain HTTP (a local model server) never
//! needs them.

use std::sync::{Arc, OnceLock};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, SignatureScheme};
use rustls_platform_verifier::Verifier;

/// The client's TLS settings: TLS 1.2 and 1.3 with the ring provider, HTTP/2 or HTTP/1.1 by ALPN,
/// certificates checked by the platform verifier (loaded on first use).
pub(crate) fn client_config() -> Result<ClientConfig, rustls::Error> {
    let provider = CryptoProvider::get_default()
        .cloned()
        .unwrap_or_else(|| Arc::new(rustls::crypto::ring::default_provider()));
    let mut config = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()?
        .dangerous() // the rustls name for "a verifier of our own"; it is the platform's
        .with_custom_certificate_verifier(Arc::new(LazyPlatformVerifier::new(provider)))
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

/// [`Verifier`] (the platform's roots and policy), created when a certificate is first checked.
#[derive(Debug)]
struct LazyPlatformVerifier {
    provider: Arc<CryptoProvider>,
    verifier: OnceLock<Result<Verifier, String>>,
}

impl LazyPlatformVerifier {
    fn new(provider: Arc<CryptoProvider>) -> Self {
        Self {
            provider,
            verifier: OnceLock::new(),
        }
    }

    fn verifier(&self) -> Result<&Verifier, rustls::Error> {
        self.verifier
            .get_or_init(|| Verifier::new(self.provider.clone()).map_err(|e| e.to_string()))
            .as_ref()
            .map_err(|message| {
                rustls::Error::General(format!("cannot load the system's certificates: {message}"))
            })
    }
}

impl ServerCertVerifier for LazyPlatformVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.verifier()?.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        )
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.verifier()?.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.verifier()?.verify_tls13_signature(message, cert, dss)
    }

    /// Offered in the ClientHello, so answered without loading anything (the platform verifier
    /// gives the provider's schemes too).
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_verifier_loads_on_first_check_and_rejects_garbage() {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let lazy = LazyPlatformVerifier::new(provider);
        assert!(!lazy.supported_verify_schemes().is_empty());
        assert!(lazy.verifier.get().is_none(), "loaded before any handshake");
        let name = ServerName::try_from("example.invalid").expect("a valid name");
        let verdict = lazy.verify_server_cert(
            &CertificateDer::from(vec![0x30, 0x00]),
            &[],
            &name,
            &[],
            UnixTime::now(),
        );
        assert!(verdict.is_err());
        assert!(lazy.verifier.get().is_some());
    }

    #[test]
    fn the_config_offers_http2_and_http1() {
        let config = client_config().expect("default protocol versions");
        assert_eq!(
            config.alpn_protocols,
            [b"h2".to_vec(), b"http/1.1".to_vec()]
        );
    }
}
