//! The egress proxy every request of the browser goes through. Chromium is
//! started with `--proxy-server` pointing here, so navigations, redirects,
//! subresources and (tunnelled with `CONNECT`) HTTPS and WebSockets all pass
//! one check: the host is resolved once, every address it resolves to must be
//! public unless private URLs are allowed, and the connection is made to
//! exactly the addresses checked — a rebinding DNS server gets no second say.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Method, Request, Response, StatusCode, Uri, Version};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Empty, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use talaria_plugin_manifest::address::{literal_address, non_public_reason};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};
use tokio::task::JoinHandle;

/// A client that sends no complete request head in this time is cut off.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// Connections (and the tunnels they became) served at once; one browser
/// opens far fewer, so more means something is wrong and is dropped.
const MAX_CONNECTIONS: usize = 256;
/// How long one upstream address may take to accept a connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a name may take to resolve.
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(10);
/// Refusals kept until taken; a page with many blocked subresources must not
/// grow this without bound, and the newest say most about a failure.
const MAX_REFUSALS: usize = 256;
/// What every private-address refusal ends with: what the user can do.
const PRIVATE_HINT: &str =
    "private addresses are refused (set security.allow_private_urls: true to allow them)";

/// The body of every response the proxy sends: its own short texts or an
/// origin's body streamed through.
type ProxyBody = BoxBody<Bytes, hyper::Error>;

/// A request the proxy refused because of the private-address rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The host as the browser named it (`example.org`, `127.0.0.1`, `[::1]`).
    pub host: String,
    /// Why, in one line (`127.0.0.1 is loopback: private addresses are refused …`).
    pub reason: String,
}

/// A forward HTTP proxy on 127.0.0.1 for one browser. It serves until
/// dropped; dropping it ends every connection and tunnel it holds.
pub struct EgressProxy {
    port: u16,
    shared: Arc<Shared>,
    accept: JoinHandle<()>,
    /// Dropped with the proxy: every task it spawned watches for that.
    _alive: watch::Sender<()>,
}

impl std::fmt::Debug for EgressProxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EgressProxy")
            .field("port", &self.port)
            .field("allow_private", &self.shared.allow_private)
            .finish_non_exhaustive()
    }
}

impl Drop for EgressProxy {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

impl EgressProxy {
    /// Listens on 127.0.0.1 on a free port and serves until dropped.
    /// `allow_private` is `security.allow_private_urls`: when true, every
    /// address a host resolves to may be reached.
    pub async fn start(allow_private: bool) -> std::io::Result<Self> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
        let port = listener.local_addr()?.port();
        let (alive, closed) = watch::channel(());
        let shared = Arc::new(Shared {
            allow_private,
            refusals: Mutex::new(VecDeque::new()),
            closed,
        });
        let accept = tokio::spawn(accept(listener, shared.clone()));
        Ok(Self {
            port,
            shared,
            accept,
            _alive: alive,
        })
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The requests refused since the last call (oldest first), for the
    /// tool's error message.
    pub fn take_refusals(&self) -> Vec<Refusal> {
        let mut refusals = self
            .shared
            .refusals
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        refusals.drain(..).collect()
    }
}

/// What the accept loop and every connection share.
struct Shared {
    allow_private: bool,
    refusals: Mutex<VecDeque<Refusal>>,
    /// Changes (to closed) when the proxy is dropped.
    closed: watch::Receiver<()>,
}

impl Shared {
    fn record(&self, host: &str, reason: &str) {
        let mut refusals = self.refusals.lock().unwrap_or_else(PoisonError::into_inner);
        if refusals.len() >= MAX_REFUSALS {
            refusals.pop_front();
        }
        refusals.push_back(Refusal {
            host: host.to_owned(),
            reason: reason.to_owned(),
        });
    }

    /// The socket addresses a request to `host`:`port` may connect to, or
    /// the response that says why it may go nowhere. A refusal under the
    /// private-address rule is recorded.
    async fn destinations(
        &self,
        host: &str,
        port: u16,
    ) -> Result<Vec<SocketAddr>, Response<ProxyBody>> {
        let bare = bare_host(host);
        if bare.is_empty() {
            return Err(text(StatusCode::BAD_REQUEST, "the request names no host"));
        }
        // A literal or numeric spelling (`2130706433`) is read here and
        // never sent to DNS, which might answer something else for it.
        let literal = literal_address(bare);
        let addrs: Vec<SocketAddr> = match literal {
            Some(ip) => vec![SocketAddr::new(ip, port)],
            None => {
                let lookup =
                    tokio::time::timeout(RESOLVE_TIMEOUT, tokio::net::lookup_host((bare, port)));
                match lookup.await {
                    Ok(Ok(addrs)) => addrs.collect(),
                    Ok(Err(error)) => {
                        return Err(text(
                            StatusCode::BAD_GATEWAY,
                            &format!("cannot resolve {host}: {error}"),
                        ));
                    }
                    Err(_) => {
                        return Err(text(
                            StatusCode::BAD_GATEWAY,
                            &format!("cannot resolve {host}: timed out"),
                        ));
                    }
                }
            }
        };
        if addrs.is_empty() {
            return Err(text(
                StatusCode::BAD_GATEWAY,
                &format!("cannot resolve {host}: no address"),
            ));
        }
        if !self.allow_private {
            // Any private address refuses the host: which of them the
            // connection would use is not for the DNS server to decide.
            let private = addrs
                .iter()
                .find_map(|addr| non_public_reason(addr.ip()).map(|why| (addr.ip(), why)));
            if let Some((ip, why)) = private {
                let reason = refusal_reason(bare, literal, ip, why);
                self.record(host, &reason);
                return Err(text(StatusCode::FORBIDDEN, &format!("refused: {reason}")));
            }
        }
        Ok(addrs)
    }
}

/// The one-line reason a host is refused, naming the address when the host
/// does not spell it plainly.
fn refusal_reason(bare: &str, literal: Option<IpAddr>, ip: IpAddr, why: &str) -> String {
    let shown = if bare == ip.to_string() {
        format!("{ip} is {why}")
    } else if literal.is_some() {
        format!("{bare} means {ip}, which is {why}")
    } else {
        format!("{bare} resolves to {ip}, which is {why}")
    };
    format!("{shown}: {PRIVATE_HINT}")
}

/// The host without the brackets of an IPv6 literal.
fn bare_host(host: &str) -> &str {
    host.strip_prefix('[')
        .and_then(|inner| inner.strip_suffix(']'))
        .unwrap_or(host)
}

/// Runs `work` until it ends or the proxy is dropped, whichever is first.
fn spawn_until_closed<F>(closed: &watch::Receiver<()>, work: F)
where
    F: Future<Output = ()> + Send + 'static,
{
    let mut closed = closed.clone();
    tokio::spawn(async move {
        tokio::select! {
            () = work => {}
            // Nothing is ever sent: this returns only when the sender is gone.
            _ = closed.changed() => {}
        }
    });
}

async fn accept(listener: TcpListener, shared: Arc<Shared>) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let mut closed = shared.closed.clone();
    loop {
        let accepted = tokio::select! {
            _ = closed.changed() => break,
            accepted = listener.accept() => accepted,
        };
        let Ok((stream, _)) = accepted else {
            // Out of descriptors and the like: wait instead of spinning.
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        // Over the limit the connection is dropped: the browser retries.
        let Ok(permit) = slots.clone().try_acquire_owned() else {
            continue;
        };
        let _ = stream.set_nodelay(true);
        serve_connection(stream, Arc::new(permit), shared.clone());
    }
}

/// Serves one browser connection: any number of kept-alive requests, or one
/// `CONNECT` that becomes a tunnel.
fn serve_connection(stream: TcpStream, permit: Arc<OwnedSemaphorePermit>, shared: Arc<Shared>) {
    let closed = shared.closed.clone();
    // The permit is held by the connection and by a tunnel it turns into.
    let service = service_fn(move |request| {
        let shared = shared.clone();
        let permit = permit.clone();
        async move { Ok::<_, Infallible>(handle(shared, permit, request).await) }
    });
    let connection = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT)
        .serve_connection(TokioIo::new(stream), service)
        .with_upgrades();
    spawn_until_closed(&closed, async move {
        // A browser that hangs up ends only its own connection.
        let _ = connection.await;
    });
}

async fn handle(
    shared: Arc<Shared>,
    permit: Arc<OwnedSemaphorePermit>,
    request: Request<Incoming>,
) -> Response<ProxyBody> {
    if request.method() == Method::CONNECT {
        tunnel(shared, permit, request).await
    } else {
        forward(&shared, request).await
    }
}

/// `CONNECT host:port`: checks the host, connects to a checked address and
/// copies bytes both ways once the browser has the 200.
async fn tunnel(
    shared: Arc<Shared>,
    permit: Arc<OwnedSemaphorePermit>,
    mut request: Request<Incoming>,
) -> Response<ProxyBody> {
    let Some(authority) = request.uri().authority().cloned() else {
        return text(StatusCode::BAD_REQUEST, "CONNECT needs host:port");
    };
    let Some(port) = authority.port_u16() else {
        return text(StatusCode::BAD_REQUEST, "CONNECT needs host:port");
    };
    let addrs = match shared.destinations(authority.host(), port).await {
        Ok(addrs) => addrs,
        Err(response) => return response,
    };
    let mut upstream = match connect(&addrs).await {
        Ok(stream) => stream,
        Err(message) => return text(StatusCode::BAD_GATEWAY, &message),
    };
    let upgrade = hyper::upgrade::on(&mut request);
    spawn_until_closed(&shared.closed, async move {
        let _permit = permit;
        // The upgrade fails when the browser hangs up before taking the 200.
        if let Ok(upgraded) = upgrade.await {
            let mut browser = TokioIo::new(upgraded);
            let _ = tokio::io::copy_bidirectional(&mut browser, &mut upstream).await;
        }
    });
    Response::new(Empty::new().map_err(|never| match never {}).boxed())
}

/// An absolute-form request (`GET http://host/path`): checks the host and
/// sends the request in origin form over a fresh connection to a checked
/// address, streaming the response back.
async fn forward(shared: &Shared, mut request: Request<Incoming>) -> Response<ProxyBody> {
    let uri = request.uri().clone();
    let Some(host) = uri.host() else {
        return text(
            StatusCode::BAD_REQUEST,
            "this is a proxy: requests must name an absolute http:// URL",
        );
    };
    if uri.scheme_str() != Some("http") {
        return text(
            StatusCode::BAD_REQUEST,
            "only http:// URLs are forwarded (HTTPS goes through CONNECT)",
        );
    }
    let port = uri.port_u16().unwrap_or(80);
    let addrs = match shared.destinations(host, port).await {
        Ok(addrs) => addrs,
        Err(response) => return response,
    };
    let Ok(origin_form) = origin_form(&uri) else {
        return text(StatusCode::BAD_REQUEST, "the request's path is not valid");
    };
    // The authority is the origin's name for itself; a Host header the
    // browser sent is replaced by it, as a proxy must.
    let host_header = match uri.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    };
    let Ok(host_header) = HeaderValue::from_str(&host_header) else {
        return text(StatusCode::BAD_REQUEST, "the request's host is not valid");
    };
    *request.uri_mut() = origin_form;
    *request.version_mut() = Version::HTTP_11;
    remove_hop_by_hop(request.headers_mut());
    request.headers_mut().insert(header::HOST, host_header);

    let stream = match connect(&addrs).await {
        Ok(stream) => stream,
        Err(message) => return text(StatusCode::BAD_GATEWAY, &message),
    };
    let (mut sender, connection) =
        match hyper::client::conn::http1::handshake(TokioIo::new(stream)).await {
            Ok(pair) => pair,
            Err(error) => return text(StatusCode::BAD_GATEWAY, &format!("{host}: {error}")),
        };
    // Drives the origin connection until the response body is read.
    spawn_until_closed(&shared.closed, async move {
        let _ = connection.await;
    });
    match sender.send_request(request).await {
        Ok(response) => {
            let mut response = response.map(BodyExt::boxed);
            remove_hop_by_hop(response.headers_mut());
            response
        }
        Err(error) => text(StatusCode::BAD_GATEWAY, &format!("{host}: {error}")),
    }
}

/// The path and query of an absolute URI, as the origin expects them.
fn origin_form(uri: &Uri) -> Result<Uri, http::uri::InvalidUri> {
    let path = match uri.path() {
        "" => "/",
        path => path,
    };
    match uri.query() {
        Some(query) => format!("{path}?{query}").parse(),
        None => path.parse(),
    }
}

/// Removes the headers that describe one connection rather than the
/// message: `Connection` and the headers it names, and the fixed set.
/// Framing (`Transfer-Encoding`) is redone by hyper on each side.
fn remove_hop_by_hop(headers: &mut HeaderMap) {
    let named: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .filter_map(|name| HeaderName::from_bytes(name.trim().as_bytes()).ok())
        .collect();
    for name in named {
        headers.remove(name);
    }
    for name in [
        header::CONNECTION,
        HeaderName::from_static("proxy-connection"),
        header::PROXY_AUTHORIZATION,
        header::PROXY_AUTHENTICATE,
        HeaderName::from_static("keep-alive"),
        header::TE,
        header::TRAILER,
        header::TRANSFER_ENCODING,
        header::UPGRADE,
    ] {
        headers.remove(name);
    }
}

/// A connection to the first of `addrs` that accepts one, or why none did.
async fn connect(addrs: &[SocketAddr]) -> Result<TcpStream, String> {
    let mut failure = String::from("no address to connect to");
    for addr in addrs {
        match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr)).await {
            Ok(Ok(stream)) => {
                let _ = stream.set_nodelay(true);
                return Ok(stream);
            }
            Ok(Err(error)) => failure = format!("cannot connect to {addr}: {error}"),
            Err(_) => failure = format!("cannot connect to {addr}: timed out"),
        }
    }
    Err(failure)
}

/// A short plain-text response from the proxy itself.
fn text(status: StatusCode, message: &str) -> Response<ProxyBody> {
    let body = Full::new(Bytes::from(format!("{message}\n")))
        .map_err(|never| match never {})
        .boxed();
    let mut response = Response::new(body);
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    /// A loopback origin answering each connection with one response whose
    /// body is `body`; it keeps the request heads it saw.
    struct Origin {
        port: u16,
        connections: Arc<AtomicUsize>,
        heads: Arc<Mutex<Vec<String>>>,
    }

    async fn origin(body: &'static str) -> Origin {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let connections = Arc::new(AtomicUsize::new(0));
        let heads = Arc::new(Mutex::new(Vec::new()));
        let (count, seen) = (connections.clone(), heads.clone());
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                count.fetch_add(1, Ordering::SeqCst);
                let seen = seen.clone();
                tokio::spawn(async move {
                    let head = read_head(&mut stream).await;
                    seen.lock().unwrap().push(head);
                    let response = format!(
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    stream.write_all(response.as_bytes()).await.unwrap();
                });
            }
        });
        Origin {
            port,
            connections,
            heads,
        }
    }

    /// A loopback server echoing every byte back; counts its connections.
    async fn echo() -> (u16, Arc<AtomicUsize>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let connections = Arc::new(AtomicUsize::new(0));
        let count = connections.clone();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                count.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(async move {
                    let (mut read, mut write) = stream.split();
                    let _ = tokio::io::copy(&mut read, &mut write).await;
                });
            }
        });
        (port, connections)
    }

    /// Reads up to and including the blank line ending a message head.
    async fn read_head(stream: &mut TcpStream) -> String {
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            if stream.read(&mut byte).await.unwrap() == 0 {
                break;
            }
            head.push(byte[0]);
        }
        String::from_utf8(head).unwrap()
    }

    /// One response on `stream`: its status, head and body (by Content-Length).
    async fn read_response(stream: &mut TcpStream) -> (u16, String, String) {
        let head = read_head(stream).await;
        let status = head
            .split(' ')
            .nth(1)
            .and_then(|code| code.parse().ok())
            .unwrap_or_else(|| panic!("no status line in {head:?}"));
        let length: usize = head
            .lines()
            .find_map(|line| {
                let (name, value) = line.split_once(':')?;
                name.eq_ignore_ascii_case("content-length")
                    .then(|| value.trim().parse().unwrap())
            })
            .unwrap_or(0);
        let mut body = vec![0; length];
        stream.read_exact(&mut body).await.unwrap();
        (status, head, String::from_utf8(body).unwrap())
    }

    async fn send(proxy: &EgressProxy, request: &str) -> (u16, String, String) {
        let mut stream = TcpStream::connect(("127.0.0.1", proxy.port()))
            .await
            .unwrap();
        stream.write_all(request.as_bytes()).await.unwrap();
        read_response(&mut stream).await
    }

    #[tokio::test]
    async fn private_addresses_are_refused_in_every_spelling() {
        let origin = origin("secret").await;
        let proxy = EgressProxy::start(false).await.unwrap();
        let port = origin.port;
        for host in ["127.0.0.1", "localhost", "2130706433", "[::1]", "0x7f.1"] {
            let request =
                format!("GET http://{host}:{port}/ HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n");
            let (status, _, body) = send(&proxy, &request).await;
            assert_eq!(status, 403, "{host}: {body}");
            assert!(body.contains("loopback"), "{host}: {body}");
            let refusals = proxy.take_refusals();
            assert_eq!(refusals.len(), 1, "{host}: {refusals:?}");
            assert_eq!(refusals[0].host, host);
            assert!(refusals[0].reason.contains("loopback"), "{refusals:?}");
            assert!(
                refusals[0].reason.contains("allow_private_urls"),
                "{refusals:?}"
            );
            assert!(!refusals[0].reason.contains('\n'), "{refusals:?}");
        }
        let (status, _, _) = send(
            &proxy,
            &format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n"),
        )
        .await;
        assert_eq!(status, 403);
        let refusals = proxy.take_refusals();
        assert_eq!(
            refusals,
            vec![Refusal {
                host: "127.0.0.1".into(),
                reason: format!("127.0.0.1 is loopback: {PRIVATE_HINT}"),
            }]
        );
        assert_eq!(origin.connections.load(Ordering::SeqCst), 0);
    }

    #[tokio::test]
    async fn refusal_reasons_name_the_address_behind_a_name() {
        let proxy = EgressProxy::start(false).await.unwrap();
        send(&proxy, "GET http://2130706433/ HTTP/1.1\r\n\r\n").await;
        send(&proxy, "GET http://169.254.169.254/latest HTTP/1.1\r\n\r\n").await;
        let reasons: Vec<String> = proxy
            .take_refusals()
            .into_iter()
            .map(|r| r.reason)
            .collect();
        assert!(
            reasons[0].starts_with("2130706433 means 127.0.0.1, which is loopback: "),
            "{reasons:?}"
        );
        assert!(
            reasons[1].starts_with("169.254.169.254 is link-local"),
            "{reasons:?}"
        );
    }

    #[tokio::test]
    async fn allowed_requests_are_forwarded_in_origin_form_each_on_a_kept_alive_connection() {
        let origin = origin("hello").await;
        let proxy = EgressProxy::start(true).await.unwrap();
        let port = origin.port;
        let mut stream = TcpStream::connect(("127.0.0.1", proxy.port()))
            .await
            .unwrap();
        for _ in 0..2 {
            let request = format!(
                "GET http://127.0.0.1:{port}/a?b=1 HTTP/1.1\r\nHost: elsewhere\r\n\
                 Proxy-Connection: keep-alive\r\nConnection: keep-alive, X-Hop\r\nX-Hop: 1\r\n\
                 X-Kept: 2\r\n\r\n"
            );
            stream.write_all(request.as_bytes()).await.unwrap();
            let (status, head, body) = read_response(&mut stream).await;
            assert_eq!(status, 200, "{head}");
            assert_eq!(body, "hello");
        }
        assert_eq!(origin.connections.load(Ordering::SeqCst), 2);
        let heads = origin.heads.lock().unwrap().clone();
        assert_eq!(heads.len(), 2);
        for head in heads {
            let lower = head.to_ascii_lowercase();
            assert!(head.starts_with("GET /a?b=1 HTTP/1.1\r\n"), "{head}");
            assert!(
                lower.contains(&format!("host: 127.0.0.1:{port}\r\n")),
                "{head}"
            );
            assert!(lower.contains("x-kept: 2\r\n"), "{head}");
            assert!(!lower.contains("proxy-connection"), "{head}");
            assert!(!lower.contains("x-hop"), "{head}");
        }
        assert!(proxy.take_refusals().is_empty());
    }

    #[tokio::test]
    async fn connect_tunnels_bytes_both_ways_and_dies_with_the_proxy() {
        let (port, connections) = echo().await;
        let proxy = EgressProxy::start(true).await.unwrap();
        let mut stream = TcpStream::connect(("127.0.0.1", proxy.port()))
            .await
            .unwrap();
        let request =
            format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n");
        stream.write_all(request.as_bytes()).await.unwrap();
        let head = read_head(&mut stream).await;
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        for message in [&b"ping"[..], b"\x16\x03\x01 not http at all"] {
            stream.write_all(message).await.unwrap();
            let mut back = vec![0; message.len()];
            stream.read_exact(&mut back).await.unwrap();
            assert_eq!(back, message);
        }
        assert_eq!(connections.load(Ordering::SeqCst), 1);

        drop(proxy);
        let mut rest = Vec::new();
        let read =
            tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut rest)).await;
        assert!(matches!(read, Ok(Ok(0)) | Ok(Err(_))), "{read:?}");
    }

    #[tokio::test]
    async fn an_unreachable_origin_is_a_bad_gateway() {
        let closed = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = closed.local_addr().unwrap().port();
        drop(closed);
        let proxy = EgressProxy::start(true).await.unwrap();
        let (status, _, body) = send(
            &proxy,
            &format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n"),
        )
        .await;
        assert_eq!(status, 502, "{body}");
        let (status, _, body) = send(
            &proxy,
            &format!("GET http://127.0.0.1:{port}/ HTTP/1.1\r\n\r\n"),
        )
        .await;
        assert_eq!(status, 502, "{body}");
    }

    #[tokio::test]
    async fn requests_a_proxy_cannot_serve_are_bad_requests() {
        let proxy = EgressProxy::start(true).await.unwrap();
        for request in [
            "GET ftp://x/ HTTP/1.1\r\nHost: x\r\n\r\n",
            "GET https://example.org/ HTTP/1.1\r\nHost: example.org\r\n\r\n",
            "GET / HTTP/1.1\r\nHost: x\r\n\r\n",
            "CONNECT example.org HTTP/1.1\r\nHost: example.org\r\n\r\n",
        ] {
            let (status, _, body) = send(&proxy, request).await;
            assert_eq!(status, 400, "{request:?}: {body}");
        }
        // Garbage gets a 400 or a closed connection, and the proxy lives on.
        let mut stream = TcpStream::connect(("127.0.0.1", proxy.port()))
            .await
            .unwrap();
        stream
            .write_all(b"\x00\x01 nonsense\r\n\r\n")
            .await
            .unwrap();
        let mut answer = Vec::new();
        let _ = stream.read_to_end(&mut answer).await;
        let answer = String::from_utf8_lossy(&answer);
        assert!(
            answer.is_empty() || answer.starts_with("HTTP/1.1 400"),
            "{answer}"
        );
        let (status, _, _) = send(&proxy, "GET / HTTP/1.1\r\nHost: x\r\n\r\n").await;
        assert_eq!(status, 400);
    }

    #[tokio::test]
    async fn take_refusals_drains() {
        let proxy = EgressProxy::start(false).await.unwrap();
        send(&proxy, "GET http://10.0.0.1/ HTTP/1.1\r\n\r\n").await;
        send(&proxy, "GET http://[::1]/ HTTP/1.1\r\n\r\n").await;
        let hosts: Vec<String> = proxy.take_refusals().into_iter().map(|r| r.host).collect();
        assert_eq!(hosts, ["10.0.0.1", "[::1]"]);
        assert!(proxy.take_refusals().is_empty());
    }
}
