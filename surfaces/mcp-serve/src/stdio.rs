//! Stdio mode: JSON-RPC lines on stdin and stdout, and nothing else on stdout.

use std::os::fd::OwnedFd;

use rmcp::ServiceExt;

use crate::ServeError;
use crate::handler::TalariaServer;

/// The protocol's own copies of stdin and stdout. Afterwards fd 0 reads
/// /dev/null and fd 1 writes to stderr, so whatever else in the process (a
/// plugin, a library, a stray `println!`, a child that inherits them) prints
/// or reads cannot corrupt the frame stream.
fn take_standard_streams() -> Result<(OwnedFd, OwnedFd), ServeError> {
    let fail = |what: &str, error: nix::Error| ServeError::Stdio(format!("{what}: {error}"));
    let input = nix::unistd::dup(std::io::stdin()).map_err(|e| fail("cannot copy stdin", e))?;
    let output = nix::unistd::dup(std::io::stdout()).map_err(|e| fail("cannot copy stdout", e))?;
    let null = std::fs::File::open("/dev/null")
        .map_err(|e| ServeError::Stdio(format!("cannot open /dev/null: {e}")))?;
    nix::unistd::dup2_stdin(&null).map_err(|e| fail("cannot detach stdin", e))?;
    nix::unistd::dup2_stdout(std::io::stderr())
        .map_err(|e| fail("cannot point stdout at stderr", e))?;
    Ok((input, output))
}

/// Serves one client on the standard streams until it closes stdin.
pub async fn serve(server: TalariaServer) -> Result<(), ServeError> {
    let (input, output) = take_standard_streams()?;
    let input = tokio::fs::File::from_std(std::fs::File::from(input));
    let output = tokio::fs::File::from_std(std::fs::File::from(output));
    let running = server
        .serve((input, output))
        .await
        .map_err(|e| ServeError::Protocol(e.to_string()))?;
    running
        .waiting()
        .await
        .map_err(|e| ServeError::Protocol(e.to_string()))?;
    Ok(())
}
