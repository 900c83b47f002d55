//! HTTP plumbing shared by the providers: the shared client, sending a request
//! and reading its body under an idle timeout and a cancellation token, and
//! driving a wire-format decoder over the (streamed or whole) body.

use std::pin::Pin;
use std::sync::OnceLock;
use std::time::Duration;

use reqwest::header::CONTENT_TYPE;
use talaria_kernel::{CancellationToken, ModelError, ModelResponse};
use tokio::time::{Instant, Sleep};
use tokio_util::sync::WaitForCancellationFuture;

use crate::config::ConfigError;
use crate::errors::{self, malformed};
use crate::sse::{SseEvent, SseParser};

/// Time allowed to establish a connection (TCP + TLS).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);

/// Largest error body read for classification.
const MAX_ERROR_BODY_BYTES: usize = 1 << 20;
/// How long, and how much, the rest of a finished stream is read in the background.
const DRAIN_TIME: Duration = Duration::from_secs(5);
const DRAIN_BYTES: usize = 64 << 10;

static SHARED_CLIENT: OnceLock<reqwest::Client> = OnceLock::new();

static CONNECTIONS: OnceLock<Result<tokio::runtime::Runtime, String>> = OnceLock::new();

/// The runtime every request of the shared client is sent from. A pooled
/// connection is driven by a task of the runtime that opened it, and
/// surfaces run agents on runtimes of their own that end with the run (a
/// gateway turn, an API request): a connection opened there would be dead
/// for the next run that takes it from the pool ("dispatch task is gone"),
/// and its retry would ask the model twice. This runtime lives as long as
/// the process, so the pool works from every runtime.
fn connections() -> Result<&'static tokio::runtime::Runtime, ModelError> {
    CONNECTIONS
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("talaria-http")
                .enable_all()
                .build()
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| ModelError::Connect {
            message: format!("cannot start the HTTP runtime: {e}"),
        })
}

/// Aborts a task when the request waiting for it is dropped (cancelled or
/// timed out), so nothing keeps talking to the provider on its behalf.
struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The process-wide client (one connection pool for every provider).
pub fn shared_client() -> Result<reqwest::Client, ConfigError> {
    if let Some(client) = SHARED_CLIENT.get() {
        return Ok(client.clone());
    }
    let client = build_client()?;
    Ok(SHARED_CLIENT.get_or_init(|| client).clone())
}

/// Builds a new client: rustls with the ring provider, the platform's
/// certificate verifier (loaded at the first handshake), and a connect timeout. No overall timeout: the
/// providers enforce an idle timeout per read instead.
pub fn build_client() -> Result<reqwest::Client, ConfigError> {
    client_builder()?
        .build()
        .map_err(|e| ConfigError::Client(errors::describe(&e)))
}

/// The builder of [`build_client`], for clients that add rules of their own (the image
/// fetcher's address checks).
pub fn client_builder() -> Result<reqwest::ClientBuilder, ConfigError> {
    // Fails only when a process-wide provider is already installed (by an
    // earlier call or by the host program), which is just as good.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let tls = crate::tls::client_config().map_err(|e| ConfigError::Client(e.to_string()))?;
    Ok(reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .connect_timeout(CONNECT_TIMEOUT)
        .tcp_keepalive(Duration::from_secs(30))
        .user_agent(concat!("talaria/", env!("CARGO_PKG_VERSION"))))
}

/// One request/response exchange, bounded by an idle timeout and a cancel token.
pub(crate) struct Exchange<'a> {
    /// Provider name for error messages.
    pub provider: &'a str,
    /// Longest silence tolerated before the head and between chunks.
    pub idle: Duration,
    /// Fires when the user interrupts.
    pub cancel: &'a CancellationToken,
    /// Largest successful reply body read (`model.max_reply_bytes`).
    pub max_reply: usize,
}

impl Exchange<'_> {
    /// Sends the request and returns the body of a successful response;
    /// unsuccessful statuses are read and classified.
    pub async fn send(&self, request: reqwest::RequestBuilder) -> Result<Body<'_>, ModelError> {
        let sending = connections()?.spawn(request.send());
        let _abort = AbortOnDrop(sending.abort_handle());
        let response = self
            .guard(sending)
            .await?
            .map_err(|e| ModelError::Connect {
                message: format!("{}: the request was lost: {e}", self.provider),
            })?
            .map_err(|e| errors::from_send_error(self.provider, &e))?;
        let status = response.status();
        let headers = response.headers().clone();
        let mut body = Body::new(response, self);
        if status.is_success() {
            return Ok(body);
        }
        let bytes = match body.read_to_end(MAX_ERROR_BODY_BYTES).await {
            Err(ModelError::Cancelled) => return Err(ModelError::Cancelled),
            Ok(bytes) => bytes,
            Err(_) => Vec::new(), // the status alone still classifies
        };
        Err(errors::from_http(status.as_u16(), &headers, &bytes))
    }

    /// Sends the request and decodes the response, streamed or whole as the
    /// server chose (`stream` says which was asked for).
    pub async fn run<D: Decoder>(
        &self,
        request: reqwest::RequestBuilder,
        stream: bool,
        mut decoder: D,
    ) -> Result<ModelResponse, ModelError> {
        let mut body = self.send(request).await?;
        if body.is_event_stream(stream) {
            body.read_sse(&mut decoder).await?;
            body.release();
        } else {
            decoder.on_whole(body.read_json().await?)?;
        }
        Ok(decoder.finish())
    }

    /// Runs `future` unless the idle timeout or cancellation comes first.
    async fn guard<T>(&self, future: impl Future<Output = T>) -> Result<T, ModelError> {
        tokio::select! {
            biased;
            () = self.cancel.cancelled() => Err(ModelError::Cancelled),
            result = tokio::time::timeout(self.idle, future) => result.map_err(|_| self.idle_error()),
        }
    }

    fn too_large(&self) -> ModelError {
        ModelError::TooLarge {
            message: format!(
                "the reply from {} exceeds model.max_reply_bytes ({} bytes); reading stopped. \
                 Raise model.max_reply_bytes if such replies are expected",
                self.provider, self.max_reply
            ),
        }
    }

    fn idle_error(&self) -> ModelError {
        ModelError::Timeout {
            message: format!("no data from {} for {:?}", self.provider, self.idle),
        }
    }
}

/// What one read of the body produced.
pub(crate) enum Chunk {
    Data(bytes::Bytes),
    End,
    /// The transfer failed mid-body (reset, truncated chunked encoding, ...).
    Broken(String),
}

/// A successful response's body. Dropping it aborts the transfer.
///
/// A streamed answer arrives in many small pieces, so the idle timeout is one
/// timer for the whole body rather than one per piece: each piece only moves
/// `last_data`, and when the timer fires early it is pushed to the new
/// deadline. Likewise the cancellation wait is registered once.
pub(crate) struct Body<'a> {
    response: reqwest::Response,
    exchange: &'a Exchange<'a>,
    last_data: Instant,
    idle_timer: Pin<Box<Sleep>>,
    cancelled: Pin<Box<WaitForCancellationFuture<'a>>>,
}

/// Turns one wire format's response (streamed or whole) into a [`ModelResponse`].
pub(crate) trait Decoder {
    /// Handles one streamed event; `Ok(true)` once the stream's end marker arrived.
    fn on_event(&mut self, event: SseEvent) -> Result<bool, ModelError>;
    /// Whether the stream may end here even though no end marker arrived.
    fn may_end(&self) -> bool;
    /// Handles a whole (non-streamed) JSON response.
    fn on_whole(&mut self, body: serde_json::Value) -> Result<(), ModelError>;
    /// The assembled response.
    fn finish(self) -> ModelResponse;
}

impl<'a> Body<'a> {
    fn new(response: reqwest::Response, exchange: &'a Exchange<'a>) -> Self {
        let now = Instant::now();
        Self {
            response,
            exchange,
            last_data: now,
            idle_timer: Box::pin(tokio::time::sleep_until(now + exchange.idle)),
            cancelled: Box::pin(exchange.cancel.cancelled()),
        }
    }

    /// Whether the body is an event stream (assumed when `requested` and the
    /// server sent no content type).
    pub fn is_event_stream(&self, requested: bool) -> bool {
        match self
            .response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
        {
            Some(content_type) => content_type
                .to_ascii_lowercase()
                .contains("text/event-stream"),
            None => requested,
        }
    }

    /// The next piece of the body, unless the idle timeout or cancellation comes first.
    async fn next(&mut self) -> Result<Chunk, ModelError> {
        let Self {
            response,
            exchange,
            last_data,
            idle_timer,
            cancelled,
        } = self;
        let chunk = response.chunk();
        tokio::pin!(chunk);
        let result = loop {
            tokio::select! {
                biased;
                () = cancelled.as_mut() => return Err(ModelError::Cancelled),
                result = &mut chunk => break result,
                () = idle_timer.as_mut() => {
                    let deadline = *last_data + exchange.idle;
                    if Instant::now() >= deadline {
                        return Err(exchange.idle_error());
                    }
                    idle_timer.as_mut().reset(deadline);
                }
            }
        };
        *last_data = Instant::now();
        Ok(match result {
            Ok(Some(bytes)) => Chunk::Data(bytes),
            Ok(None) => Chunk::End,
            Err(e) if e.is_timeout() => return Err(exchange.idle_error()),
            Err(e) => Chunk::Broken(errors::describe(&e)),
        })
    }

    /// Reads the whole (non-streamed) body.
    pub async fn read_to_end(&mut self, limit: usize) -> Result<Vec<u8>, ModelError> {
        let mut out = Vec::new();
        loop {
            match self.next().await? {
                // Only a reply's reading reports the error (error bodies are cut short quietly).
                Chunk::Data(bytes) if out.len() + bytes.len() > limit => {
                    return Err(self.exchange.too_large());
                }
                Chunk::Data(bytes) => out.extend_from_slice(&bytes),
                Chunk::End => return Ok(out),
                Chunk::Broken(reason) => {
                    return Err(ModelError::StreamInterrupted {
                        message: format!("response body incomplete: {reason}"),
                    });
                }
            }
        }
    }

    /// Reads a whole JSON response body.
    pub async fn read_json(&mut self) -> Result<serde_json::Value, ModelError> {
        let bytes = self.read_to_end(self.exchange.max_reply).await?;
        serde_json::from_slice(&bytes).map_err(|e| malformed(format!("invalid JSON response: {e}")))
    }

    /// Lets the connection go back to the pool once the stream's end marker was read. The
    /// end of the chunked encoding usually follows the marker at once, but in a packet of its
    /// own; dropping the body before it arrived would close the connection, and the next
    /// request would pay for a new one (a TLS handshake with a hosted API). So what is left
    /// is read in the background, briefly and up to a bound.
    fn release(self) {
        let mut response = self.response;
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        runtime.spawn(async move {
            let drain = async {
                let mut left = DRAIN_BYTES;
                while let Ok(Some(bytes)) = response.chunk().await {
                    left = match left.checked_sub(bytes.len()) {
                        Some(left) => left,
                        None => return,
                    };
                }
            };
            let _ = tokio::time::timeout(DRAIN_TIME, drain).await;
        });
    }

    /// Feeds the event stream to `handler` until its end marker, the end of
    /// the body, or an error.
    pub async fn read_sse(&mut self, handler: &mut impl Decoder) -> Result<(), ModelError> {
        let mut parser = SseParser::new();
        let mut read = 0usize;
        loop {
            let (events, ended) = match self.next().await? {
                Chunk::Data(bytes) => {
                    read = read.saturating_add(bytes.len());
                    if read > self.exchange.max_reply {
                        return Err(self.exchange.too_large());
                    }
                    (parser.push(&bytes), None)
                }
                Chunk::End => (parser.finish(), Some(String::new())),
                Chunk::Broken(reason) => (Vec::new(), Some(format!(": {reason}"))),
            };
            for event in events {
                if handler.on_event(event)? {
                    return Ok(());
                }
            }
            if let Some(detail) = ended {
                if handler.may_end() {
                    return Ok(());
                }
                return Err(ModelError::StreamInterrupted {
                    message: format!("stream ended before completion{detail}"),
                });
            }
        }
    }
}
