//! The listener: the axum router behind talaria-http-listener's HTTP/1
//! connections (a cap on requests served at once, caps per source and in
//! total on connections not being served, a short header timeout, a clean
//! stop on `shutdown`).

use hyper_util::service::TowerToHyperService;
use talaria_http_listener::{Limits, accept, bind};
use tokio_util::sync::CancellationToken;

use crate::{ServeError, ServeOptions};

/// Serves until `shutdown` is cancelled. The bound address is printed on
/// stderr (`talaria serve: listening on http://ADDR`), so port 0 works.
pub async fn serve(options: ServeOptions, shutdown: CancellationToken) -> Result<(), ServeError> {
    let router = crate::router(&options)?;
    let (listener, addr) = bind(options.addr)
        .await
        .map_err(|source| ServeError::Bind {
            addr: options.addr,
            source,
        })?;
    crate::log(format_args!("listening on http://{addr}"));
    let limits = Limits::new(options.max_connections, options.read_timeout);
    accept(listener, limits, shutdown, "serve", || {
        TowerToHyperService::new(router.clone())
    })
    .await;
    Ok(())
}
