//! Streamable-HTTP servers: rmcp's transport over a reqwest client of our own (rustls with
//! ring, the platform's certificate verifier for `https`, no redirects followed so configured
//! headers never travel to another host), with the configured headers on every request. An
//! expired session (HTTP 404 on a request carrying its id) is re-initialised once by the
//! transport itself.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use http::{HeaderName, HeaderValue};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rustls::ClientConfig;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use rustls_platform_verifier::BuilderVerifierExt;

use crate::error::McpError;
use crate::spec::ServerSpec;

/// Time allowed to open a connection (TCP + TLS); `connect_timeout` bounds the whole start.
const TCP_CONNECT_TIMEOUT: Duration = Duration::from_secs(15);

/// The transport for an HTTP server.
pub(crate) fn transport(
    spec: &ServerSpec,
) -> Result<StreamableHttpClientTransport<reqwest::Client>, McpError> {
    let config_error = |message: String| McpError::Config {
        server: spec.name.clone(),
        message: spec.clean(&message),
    };
    let url = spec.config.url.clone().unwrap_or_default();
    let mut headers = HashMap::new();
    for (name, value) in &spec.config.headers {
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| config_error(format!("invalid header name {name:?}")))?;
        let mut value = HeaderValue::from_str(value)
            .map_err(|_| config_error(format!("the value of header {name} is not valid")))?;
        value.set_sensitive(true);
        headers.insert(name, value);
    }
    let https = url.to_ascii_lowercase().starts_with("https://");
    let client = client(https).map_err(config_error)?;
    let config = StreamableHttpClientTransportConfig::with_uri(url)
        .custom_headers(headers)
        .reinit_on_expired_session(true);
    Ok(StreamableHttpClientTransport::with_client(client, config))
}

fn client(https: bool) -> Result<reqwest::Client, String> {
    let provider = CryptoProvider::get_default()
        .cloned()
        .unwrap_or_else(|| Arc::new(rustls::crypto::ring::default_provider()));
    let builder = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS setup failed: {e}"))?;
    let mut tls = if https {
        builder
            .with_platform_verifier()
            .map_err(|e| format!("cannot load the system's certificates: {e}"))?
            .with_no_client_auth()
    } else {
        // Plain HTTP: no handshake ever happens (redirects are not followed).
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoTls))
            .with_no_client_auth()
    };
    tls.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .connect_timeout(TCP_CONNECT_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .pool_max_idle_per_host(0)
        .user_agent(concat!("talaria/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))
}

/// The verifier of a client that only speaks plain HTTP: every certificate is refused.
#[derive(Debug)]
struct NoTls;

impl ServerCertVerifier for NoTls {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Err(rustls::Error::General(
            "this MCP client was configured for plain HTTP".into(),
        ))
    }

    fn verify_tls12_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Err(rustls::Error::General("no TLS".into()))
    }

    fn verify_tls13_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Err(rustls::Error::General("no TLS".into()))
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        vec![
            SignatureScheme::ED25519,
            SignatureScheme::ECDSA_NISTP256_SHA256,
        ]
    }
}
