//! The listener: hyper's HTTP/1 connections (with a header-read timeout, so a
//! client that sends part of its headers and stalls is cut off) around the
//! axum router, a cap on open connections, and a clean stop on `shutdown`.

use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::{ServeError, ServeOptions};

/// Serves until `shutdown` is cancelled. The bound address is printed on
/// stderr (`talaria serve: listening on http://ADDR`), so port 0 works.
pub async fn serve(options: ServeOptions, shutdown: CancellationToken) -> Result<(), ServeError> {
    let router = crate::router(&options)?;
    let listener = TcpListener::bind(options.addr)
        .await
        .map_err(|source| ServeError::Bind {
            addr: options.addr,
            source,
        })?;
    let addr = listener.local_addr().map_err(|source| ServeError::Bind {
        addr: options.addr,
        source,
    })?;
    crate::log(format_args!("listening on http://{addr}"));
    let connections = Arc::new(Semaphore::new(options.max_connections.max(1)));
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
                crate::log(format_args!("accept failed: {error}"));
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let service = TowerToHyperService::new(router.clone());
        let read_timeout = options.read_timeout;
        tokio::spawn(async move {
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(read_timeout)
                .max_buf_size(64 * 1024)
                .serve_connection(TokioIo::new(stream), service);
            // A client that hangs up or is cut off ends only its own connection.
            let _ = connection.await;
            drop(permit);
        });
    }
    Ok(())
}
