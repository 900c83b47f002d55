//! Outgoing HTTP (`wasi:http/outgoing-handler`) for plugins: every request's
//! host and port are checked against the plugin's network grants before a
//! connection is made; anything else is `HTTP-request-denied`, an error value
//! the guest sees.

use std::future::Future;

use http::uri::Scheme;
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody, WasiHttpHooks};

use crate::imports::net::NetPolicy;
use crate::log::{LogLevel, LogSource, PluginLog};

/// The HTTP hooks of one plugin instance.
pub(crate) struct HttpPolicy {
    pub(crate) net: NetPolicy,
    pub(crate) log: PluginLog,
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

impl HttpPolicy {
    /// Whether the request's destination is granted.
    fn allows(&self, uri: &http::Uri) -> bool {
        let Some(host) = uri.host() else {
            return false;
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let port = uri
            .port_u16()
            .unwrap_or(if uri.scheme() == Some(&Scheme::HTTP) {
                80
            } else {
                443
            });
        self.net.allows_name(host, port)
    }
}

impl WasiHttpHooks for HttpPolicy {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        _fut: Box<dyn Future<Output = Result<(), Error>> + Send>,
    ) -> Sent {
        if !self.allows(request.uri()) {
            self.log.push(
                LogLevel::Warn,
                LogSource::Host,
                &format!(
                    "denied HTTP request to {} (not in the network grants)",
                    request.uri()
                ),
            );
            return Box::new(async { Err(Error::HttpRequestDenied) });
        }
        Box::new(async move {
            use http_body_util::BodyExt;
            let (response, io) = wasmtime_wasi_http::default_send_request(request, options).await?;
            Ok((
                response.map(BodyExt::boxed_unsync),
                Box::new(io) as Box<dyn Future<Output = Result<(), Error>> + Send>,
            ))
        })
    }
}
