//! A server's service wrapped so the listener knows when a connection is
//! being served: from the moment its request's headers are in and it holds
//! one of the `max_connections` slots, until its response body is done.
//! Before and after, the connection counts as waiting (see [`crate::admission`]).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::service::Service;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::admission::Connection;

/// `inner`, reporting each request's span to the tally and holding a slot for it.
pub(crate) struct Tracked<S> {
    inner: S,
    connection: Connection,
    slots: Arc<Semaphore>,
}

impl<S> Tracked<S> {
    pub(crate) fn new(inner: S, connection: Connection, slots: Arc<Semaphore>) -> Self {
        Self {
            inner,
            connection,
            slots,
        }
    }
}

/// A request being served: its slot, and the connection to report back to.
struct Serving {
    connection: Connection,
    keeps_alive: bool,
    _slot: Option<OwnedSemaphorePermit>,
}

impl Drop for Serving {
    fn drop(&mut self) {
        // A connection that closes after this answer is about to leave the
        // tally; counting it as waiting meanwhile could shed another.
        if self.keeps_alive {
            self.connection.waiting();
        }
    }
}

/// Whether `Connection` in `headers` names `token`.
fn connection_says(headers: &http::HeaderMap, token: &str) -> bool {
    headers
        .get_all(http::header::CONNECTION)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .any(|part| part.trim().eq_ignore_ascii_case(token))
}

/// Whether the connection stays open after this request (HTTP/1.1 unless
/// `Connection: close`; HTTP/1.0 only with `keep-alive`).
fn keeps_alive<T>(request: &http::Request<T>) -> bool {
    if request.version() == http::Version::HTTP_10 {
        connection_says(request.headers(), "keep-alive")
    } else {
        !connection_says(request.headers(), "close")
    }
}

type Boxed<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S, B> Service<http::Request<Incoming>> for Tracked<S>
where
    S: Service<http::Request<Incoming>, Response = http::Response<B>>,
    S::Future: Send + 'static,
    B: Body + Send + 'static,
{
    type Response = http::Response<Released<B>>;
    type Error = S::Error;
    type Future = Boxed<Result<Self::Response, Self::Error>>;

    fn call(&self, request: http::Request<Incoming>) -> Self::Future {
        let keeps_alive = keeps_alive(&request);
        // Services build their futures lazily; nothing runs before the slot.
        let answer = self.inner.call(request);
        let connection = self.connection.clone();
        let slots = self.slots.clone();
        Box::pin(async move {
            // Waiting for a slot still counts as waiting: it may be shed.
            let slot = slots.acquire_owned().await.ok();
            connection.serving();
            let mut serving = Serving {
                connection,
                keeps_alive,
                _slot: slot,
            };
            let response = match answer.await {
                Ok(response) => response,
                Err(error) => {
                    // hyper closes the connection on a service's error.
                    serving.keeps_alive = false;
                    return Err(error);
                }
            };
            // The service may close the connection too (a refused body).
            serving.keeps_alive &= !connection_says(response.headers(), "close");
            Ok(response.map(|body| Released {
                body: Box::pin(body),
                _serving: serving,
            }))
        })
    }
}

/// A response body that frees its request's slot when it is done or dropped.
pub struct Released<B> {
    body: Pin<Box<B>>,
    _serving: Serving,
}

impl<B: Body> Body for Released<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        self.body.as_mut().poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keep_alive_follows_the_version_and_the_connection_header() {
        let request = |version, connection: Option<&str>| {
            let mut builder = http::Request::builder().version(version);
            if let Some(value) = connection {
                builder = builder.header(http::header::CONNECTION, value);
            }
            builder.body(()).unwrap()
        };
        assert!(keeps_alive(&request(http::Version::HTTP_11, None)));
        assert!(!keeps_alive(&request(
            http::Version::HTTP_11,
            Some("Upgrade, close")
        )));
        assert!(!keeps_alive(&request(http::Version::HTTP_10, None)));
        assert!(keeps_alive(&request(
            http::Version::HTTP_10,
            Some("Keep-Alive")
        )));
    }
}
