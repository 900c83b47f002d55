//! Accepting HTTP/1 connections for Talaria's servers (`talaria serve`, the
//! gateway's webhook listener, `talaria mcp serve --http`): at most
//! `max_connections` requests served at once, bounded header buffers, a
//! clean stop when `shutdown` is cancelled, and a guard against clients that
//! connect and stall. A connection not being served (sending its headers,
//! idle between requests, waiting for a slot) proves nothing, so those are
//! capped per source and in total (the `admission` module) and get a short header
//! timeout: however many stalled clients hold connections, a valid request
//! finds room at once. What a request means is the service's job.

mod admission;
mod tracked;

use std::error::Error;
use std::io::Write;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper::body::{Body, Incoming};
use hyper::service::Service;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::admission::{Admission, Caps, Source};
use crate::tracked::Tracked;

/// Largest buffer of one connection (headers included).
const MAX_BUF_BYTES: usize = 64 * 1024;

/// How long a shed connection that was served may take to finish its last
/// answer.
const SHED_GRACE: Duration = Duration::from_secs(1);

/// How many connections and how slow a client may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Requests served at once (from their headers to the end of their
    /// answer); more wait for a slot.
    pub max_connections: usize,
    /// How long a client may take to send a request's headers, or leave a
    /// kept-alive connection idle.
    pub read_timeout: Duration,
    /// Connections not being served, in total: past it the oldest of the
    /// source holding most is closed.
    pub max_unserved: usize,
    /// Connections not being served from one source (an IPv4 address or an
    /// IPv6 /64): past it the newest is closed.
    pub max_unserved_per_source: usize,
}

impl Limits {
    /// The longest header timeout [`Limits::new`] gives: headers are small,
    /// and 10 s still outlasts the idle time clients' pools keep a
    /// connection (which avoids closing one as it is reused).
    pub const MAX_HEADER_TIMEOUT: Duration = Duration::from_secs(10);
    /// Connections not being served, in total, by default.
    pub const DEFAULT_MAX_UNSERVED: usize = 256;
    /// Connections not being served from one source, by default.
    pub const DEFAULT_MAX_UNSERVED_PER_SOURCE: usize = 32;

    /// `max_connections` requests at once, headers within `read_timeout`
    /// (at most [`Limits::MAX_HEADER_TIMEOUT`]), and the default caps on
    /// connections not being served.
    pub fn new(max_connections: usize, read_timeout: Duration) -> Self {
        Self {
            max_connections,
            read_timeout: read_timeout.min(Self::MAX_HEADER_TIMEOUT),
            max_unserved: Self::DEFAULT_MAX_UNSERVED,
            max_unserved_per_source: Self::DEFAULT_MAX_UNSERVED_PER_SOURCE,
        }
    }
}

/// Listens on `addr`; returns the listener and the address it got (port 0
/// picks a free one).
pub async fn bind(addr: SocketAddr) -> std::io::Result<(TcpListener, SocketAddr)> {
    let listener = TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    Ok((listener, bound))
}

/// The key of an `Authorization: Bearer <key>` header (the scheme in any case).
pub fn bearer_token(headers: &http::HeaderMap) -> Option<&str> {
    headers
        .get(http::header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| {
            let (scheme, key) = value.trim().split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| key.trim())
        })
}

/// Why a request body could not be read.
#[derive(Debug)]
pub enum BodyError {
    /// Longer than the limit (declared or as sent): answer 413.
    TooLarge {
        /// The limit, in bytes.
        limit: usize,
    },
    /// Not all there within the read timeout: answer 408 and close.
    TooSlow {
        /// The timeout.
        timeout: Duration,
    },
    /// The connection broke or the body was malformed: answer 400.
    Broken(String),
}

impl std::fmt::Display for BodyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BodyError::TooLarge { limit } => {
                write!(f, "request body too large: the limit is {limit} bytes")
            }
            BodyError::TooSlow { timeout } => write!(
                f,
                "the request body did not arrive within {} s",
                timeout.as_secs_f32()
            ),
            BodyError::Broken(error) => write!(f, "cannot read the request body: {error}"),
        }
    }
}

/// Reads a request body of at most `limit` bytes within `timeout`: a
/// `Content-Length` over the limit is refused before reading, and a client
/// that sends its body too slowly is cut off.
pub async fn read_body(
    headers: &http::HeaderMap,
    body: Incoming,
    limit: usize,
    timeout: Duration,
) -> Result<bytes::Bytes, BodyError> {
    use http_body_util::BodyExt;
    let declared = headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<u64>().ok());
    if declared.is_some_and(|length| length > limit as u64) {
        return Err(BodyError::TooLarge { limit });
    }
    let read = http_body_util::Limited::new(body, limit).collect();
    match tokio::time::timeout(timeout, read).await {
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
        Ok(Err(error)) if error.is::<http_body_util::LengthLimitError>() => {
            Err(BodyError::TooLarge { limit })
        }
        Ok(Err(error)) => Err(BodyError::Broken(error.to_string())),
        Err(_) => Err(BodyError::TooSlow { timeout }),
    }
}

/// Serves each connection accepted on `listener` with a service from
/// `service`, until `shutdown` is cancelled. `name` tags the log lines on
/// stderr (`talaria NAME: accept failed: …`), written without panicking when
/// nobody reads stderr any more.
pub async fn accept<F, S, B>(
    listener: TcpListener,
    limits: Limits,
    shutdown: CancellationToken,
    name: &'static str,
    service: F,
) where
    F: Fn() -> S,
    S: Service<http::Request<Incoming>, Response = http::Response<B>> + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<Box<dyn Error + Send + Sync>>,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn Error + Send + Sync>>,
{
    let admission = Admission::new(Caps {
        total: limits.max_unserved,
        per_source: limits.max_unserved_per_source,
    });
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    loop {
        let accepted = tokio::select! {
            () = shutdown.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(error) => {
                // Out of descriptors and the like: wait instead of spinning.
                let _ = writeln!(std::io::stderr(), "talaria {name}: accept failed: {error}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        // Over its source's share: closed before anything is read.
        let Some(ticket) = admission.admit(Source::of(peer.ip())) else {
            continue;
        };
        let service = Tracked::new(service(), ticket.connection(), slots.clone());
        let connection = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(limits.read_timeout)
            .max_buf_size(MAX_BUF_BYTES)
            .serve_connection(TokioIo::new(stream), service);
        tokio::spawn(async move {
            let shed = ticket.shed();
            let mut connection = std::pin::pin!(connection);
            // A client that hangs up or is cut off ends only its own connection.
            tokio::select! {
                _ = connection.as_mut() => return,
                () = shed.cancelled() => {}
            }
            // Shed: one that was never served is dropped at once; one that was
            // may still be sending its last answer, which hyper finishes first.
            if ticket.was_served() {
                connection.as_mut().graceful_shutdown();
                let _ = tokio::time::timeout(SHED_GRACE, connection).await;
            }
        });
    }
}

#[cfg(test)]
mod tests;
