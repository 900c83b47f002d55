//! Stopping a long-running server command (`talaria serve`, `talaria mcp serve`) on a signal.

use tokio_util::sync::CancellationToken;

/// Cancels `shutdown` on SIGINT or SIGTERM, then says `talaria {command}: stopping` on stderr.
pub(crate) fn stop_on_signals(shutdown: CancellationToken, command: &'static str) {
    use std::io::Write;
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut interrupt), Ok(mut terminate)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        return;
    };
    tokio::spawn(async move {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
        // Cancelled first, and no eprintln! (it panics when stderr is gone, as
        // for a server whose parent died): the server must stop regardless.
        shutdown.cancel();
        let _ = writeln!(std::io::stderr(), "talaria {command}: stopping");
    });
}
