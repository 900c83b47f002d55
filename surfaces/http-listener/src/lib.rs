//! Accepting HTTP/1 connections for Talaria's servers (`talaria serve`,
//! `talaria mcp serve`): at most `max_connections` open at once (the next
//! waits to be accepted), a header-read timeout so a client that sends part of
//! its headers and stalls is cut off, bounded header buffers, and a clean stop
//! when `shutdown` is cancelled. What a request means is the service's job.

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

/// Largest buffer of one connection (headers included).
const MAX_BUF_BYTES: usize = 64 * 1024;

/// How many connections and how slow a client may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Connections open at once.
    pub max_connections: usize,
    /// How long a client may take to send its headers.
    pub read_timeout: Duration,
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
    let connections = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    loop {
        let Ok(permit) = connections.clone().acquire_owned().await else {
            break;
        };
        let accepted = tokio::select! {
            () = shutdown.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(error) => {
                // Out of descriptors and the like: wait instead of spinning.
                let _ = writeln!(std::io::stderr(), "talaria {name}: accept failed: {error}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let connection = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(limits.read_timeout)
            .max_buf_size(MAX_BUF_BYTES)
            .serve_connection(TokioIo::new(stream), service());
        tokio::spawn(async move {
            // A client that hangs up or is cut off ends only its own connection.
            let _ = connection.await;
            drop(permit);
        });
    }
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;

    use http_body_util::Full;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;

    use super::*;

    async fn hello(
        _: http::Request<Incoming>,
    ) -> Result<http::Response<Full<&'static [u8]>>, Infallible> {
        Ok(http::Response::new(Full::new(&b"hello"[..])))
    }

    async fn answer(addr: std::net::SocketAddr) -> String {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream
            .write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut text = String::new();
        stream.read_to_string(&mut text).await.unwrap();
        text
    }

    #[test]
    fn the_bearer_token_is_read_in_any_case_of_the_scheme() {
        let mut headers = http::HeaderMap::new();
        assert_eq!(bearer_token(&headers), None);
        for (value, token) in [
            ("Bearer abc", Some("abc")),
            ("bearer  abc ", Some("abc")),
            ("Basic abc", None),
            ("Bearer", None),
        ] {
            headers.insert(http::header::AUTHORIZATION, value.parse().unwrap());
            assert_eq!(bearer_token(&headers), token, "{value}");
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn serves_caps_connections_cuts_stalled_clients_and_stops() {
        let (listener, addr) = bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
        let shutdown = CancellationToken::new();
        let limits = Limits {
            max_connections: 1,
            read_timeout: Duration::from_millis(300),
        };
        let server = tokio::spawn(accept(listener, limits, shutdown.clone(), "test", || {
            hyper::service::service_fn(hello)
        }));
        assert!(answer(addr).await.ends_with("hello"));

        // A stalled client holds the only slot until its header timeout cuts it off;
        // the next client is then served.
        let mut stalled = TcpStream::connect(addr).await.unwrap();
        stalled.write_all(b"GET / HTTP/1.1\r\nHo").await.unwrap();
        let started = std::time::Instant::now();
        assert!(answer(addr).await.ends_with("hello"));
        assert!(started.elapsed() >= Duration::from_millis(200));
        let mut rest = Vec::new();
        let _ = stalled.read_to_end(&mut rest).await;

        shutdown.cancel();
        tokio::time::timeout(Duration::from_secs(5), server)
            .await
            .unwrap()
            .unwrap();
    }
}
