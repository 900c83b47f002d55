//! Outgoing HTTP (`wasi:http/outgoing-handler`) for plugins. Every request:
//! its host and port are checked against the plugin's network grants (else
//! `HTTP-request-denied`); the secrets it names are filled in for hosts the
//! manifest lists them for; its host is resolved once and every address
//! checked against the private-address rule ([`Egress`]); the connection
//! goes to those addresses, with TLS verified against the host's trust
//! roots. A refusal with a reason reaches the guest as
//! `internal-error("denied: …")`, which the SDKs read as a denial.
//! Redirects are not followed here: a plugin that follows one sends a new
//! request, checked the same way.

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use http::uri::Scheme;
use http_body_util::BodyExt;
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;
use wasmtime_wasi_http::io::TokioIo;
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody, WasiHttpHooks};

use crate::imports::chat::TlsClient;
use crate::imports::egress::{Egress, PluginSecrets};
use crate::imports::net::{NetPolicy, Refusals, ungranted};
use crate::log::PluginLog;

/// How long connecting (and the TLS and HTTP handshakes) may take when the
/// guest sets no limit; the call's own deadline still applies.
const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// How long the first response byte may take when the guest sets no limit.
const DEFAULT_FIRST_BYTE_TIMEOUT: Duration = Duration::from_secs(120);
/// The prefix of refusals the guest sees as `internal-error` text.
pub(crate) const DENIED_PREFIX: &str = "denied: ";

/// The HTTP hooks of one plugin instance.
pub(crate) struct HttpPolicy {
    /// The plugin's name, for the grant a refusal names.
    pub(crate) plugin: String,
    pub(crate) net: NetPolicy,
    pub(crate) log: PluginLog,
    pub(crate) secrets: PluginSecrets,
    pub(crate) egress: Egress,
    /// The refusals of this instance's current call (its sockets' too),
    /// which its error repeats.
    pub(crate) refused: Refusals,
}

type Sent = Box<
    dyn Future<
            Output = Result<
                (
                    http::Response<WasiBody>,
                    Box<dyn Future<Output = Result<(), Error>> + Send>,
                ),
                Error,
            >,
        > + Send,
>;

/// Where a request goes: its host (without IPv6 brackets), port and scheme.
struct Target {
    host: String,
    port: u16,
    https: bool,
}

impl Target {
    fn of(uri: &http::Uri) -> Option<Self> {
        let host = uri.host()?;
        let https = uri.scheme() != Some(&Scheme::HTTP);
        Some(Self {
            host: host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_owned(),
            port: uri.port_u16().unwrap_or(if https { 443 } else { 80 }),
            https,
        })
    }
}

/// The error a refused request ends with, logged and kept for the call's
/// error: the guest reads the reason after [`DENIED_PREFIX`].
fn refusal(log: &PluginLog, refused: &Refusals, uri: &http::Uri, reason: &str) -> Error {
    let message = format!("refused HTTP request to {uri}: {reason}");
    refused.record(log, &message);
    Error::InternalError(Some(format!("{DENIED_PREFIX}{message}")))
}

/// Why a request to `uri` is outside the grants, and what grants it.
fn ungranted_request(plugin: &str, uri: &http::Uri) -> String {
    match Target::of(uri) {
        Some(target) => ungranted(plugin, &target.host, target.port),
        None => ungranted(plugin, "(no host)", 0),
    }
}

impl WasiHttpHooks for HttpPolicy {
    fn send_request(
        &mut self,
        mut request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        _fut: Box<dyn Future<Output = Result<(), Error>> + Send>,
    ) -> Sent {
        let uri = request.uri().clone();
        let target = Target::of(&uri).filter(|t| self.net.allows_name(&t.host, t.port));
        let Some(target) = target else {
            let error = refusal(
                &self.log,
                &self.refused,
                &uri,
                &ungranted_request(&self.plugin, &uri),
            );
            return Box::new(async move { Err(error) });
        };
        if let Err(reason) = self.secrets.inject(
            request.headers_mut(),
            &target.host,
            target.port,
            self.egress.secrets.as_ref(),
        ) {
            let error = refusal(&self.log, &self.refused, &uri, &reason);
            return Box::new(async move { Err(error) });
        }
        let (egress, net, log) = (self.egress.clone(), self.net.clone(), self.log.clone());
        let refused = self.refused.clone();
        Box::new(async move {
            let addrs = match egress.destinations(&net, &target.host, target.port).await {
                Ok(addrs) => addrs,
                Err(reason) => return Err(refusal(&log, &refused, &uri, &reason)),
            };
            send_to(request, &addrs, &target, options, &egress.tls).await
        })
    }
}

/// Sends `request` over a new HTTP/1.1 connection to one of `addrs` (the
/// checked addresses of `target`), TLS-verified for `target.host`.
async fn send_to(
    mut request: http::Request<WasiBody>,
    addrs: &[SocketAddr],
    target: &Target,
    options: Option<RequestOptions>,
    tls: &TlsClient,
) -> Result<
    (
        http::Response<WasiBody>,
        Box<dyn Future<Output = Result<(), Error>> + Send>,
    ),
    Error,
> {
    let connect_timeout = options
        .and_then(|o| o.connect_timeout)
        .unwrap_or(DEFAULT_CONNECT_TIMEOUT);
    let first_byte_timeout = options
        .and_then(|o| o.first_byte_timeout)
        .unwrap_or(DEFAULT_FIRST_BYTE_TIMEOUT);
    let tcp = tokio::time::timeout(connect_timeout, TcpStream::connect(addrs))
        .await
        .map_err(|_| Error::ConnectionTimeout)?
        .map_err(Error::Connect)?;
    let (mut sender, connection) = if target.https {
        let config = tls
            .config()
            .await
            .map_err(|e| Error::InternalError(Some(format!("TLS trust roots: {e}"))))?;
        let name = ServerName::try_from(target.host.clone())
            .map_err(|e| Error::InternalError(Some(format!("TLS server name: {e}"))))?;
        let stream = tokio::time::timeout(
            connect_timeout,
            tokio_rustls::TlsConnector::from(config).connect(name, tcp),
        )
        .await
        .map_err(|_| Error::ConnectionTimeout)?
        .map_err(Error::Tls)?;
        handshake(stream, connect_timeout).await?
    } else {
        handshake(tcp, connect_timeout).await?
    };
    // The request line carries only the path: the authority is in `Host`.
    let path = request
        .uri()
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_owned();
    *request.uri_mut() = http::Uri::try_from(path).map_err(|_| Error::HttpRequestUriInvalid)?;
    let driver = tokio::spawn(connection);
    let response = tokio::time::timeout(first_byte_timeout, sender.send_request(request))
        .await
        .map_err(|_| Error::ConnectionReadTimeout)?
        .map_err(Error::from)?;
    let response = response.map(|body| body.map_err(Error::from).boxed_unsync());
    let finished = async move {
        match driver.await {
            Ok(result) => result.map_err(Error::from),
            Err(join) => Err(Error::InternalError(Some(format!(
                "HTTP connection task: {join}"
            )))),
        }
    };
    Ok((response, Box::new(finished)))
}

type Handshake = (
    hyper::client::conn::http1::SendRequest<WasiBody>,
    Box<dyn Future<Output = Result<(), hyper::Error>> + Send + Unpin>,
);

async fn handshake<S>(stream: S, limit: Duration) -> Result<Handshake, Error>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    let (sender, connection) = tokio::time::timeout(
        limit,
        hyper::client::conn::http1::handshake(TokioIo::new(stream)),
    )
    .await
    .map_err(|_| Error::ConnectionTimeout)?
    .map_err(Error::from)?;
    Ok((sender, Box::new(connection)))
}
