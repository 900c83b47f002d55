//! Server-sent events fed from a channel; the stream holds the run's cancel
//! guard, so a client that goes away cancels its run.

use std::convert::Infallible;

use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::Stream;
use tokio::sync::mpsc;
use tokio_util::sync::DropGuard;

/// The response body for `events`, cancelling the run when dropped.
pub fn stream(
    events: mpsc::UnboundedReceiver<Event>,
    guard: DropGuard,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let body = futures_util::stream::unfold((events, guard), |(mut events, guard)| async move {
        let event = events.recv().await?;
        Some((Ok(event), (events, guard)))
    });
    Sse::new(body).keep_alive(KeepAlive::default())
}

/// A `data:` event holding `value` as JSON.
pub fn data(value: &serde_json::Value) -> Event {
    Event::default().data(value.to_string())
}
