//! Running one request to completion: stdin, capped output, timeout,
//! cancellation, and the process group killed on every way out.

use tokio_util::sync::CancellationToken;

use crate::backend::Backend;
use crate::supervise::{feed, pump, spawn, wait_and_drain};
use crate::{ExecError, ExecOutput, ExecRequest};

/// Runs `request` on `backend` in its own process group and collects its
/// output (at most `request.output_cap` bytes of each stream; the rest is
/// drained and dropped, and `truncated` set).
///
/// - When the command exits, whatever is left of its group is killed.
/// - When `request.timeout` passes, the group is killed and the output so far
///   is returned with `timed_out` set and no `status`.
/// - When `cancel` fires, the group is killed and [`ExecError::Cancelled`]
///   is returned.
/// - When the returned future is dropped, the group is killed.
///
/// A command that cannot be started is [`ExecError::Failed`] naming the
/// program or working directory.
pub async fn run(
    backend: &dyn Backend,
    request: &ExecRequest,
    cancel: &CancellationToken,
) -> Result<ExecOutput, ExecError> {
    if cancel.is_cancelled() {
        return Err(ExecError::Cancelled);
    }
    let (mut child, group) = spawn(backend, request, request.stdin.is_some())?;
    let stdin = child.stdin.take();
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let mut out = Capped::new(request.output_cap);
    let mut err = Capped::new(request.output_cap);

    let outcome = {
        let io = async {
            tokio::join!(
                pump(stdout, |chunk| out.push(chunk)),
                pump(stderr, |chunk| err.push(chunk)),
                feed(stdin, request.stdin.as_deref()),
            );
        };
        let work = wait_and_drain(&mut child, &group, io, std::future::pending());
        tokio::select! {
            biased;
            () = cancel.cancelled() => Outcome::Cancelled,
            result = tokio::time::timeout(request.timeout, work) => match result {
                Ok(status) => Outcome::Exited(status),
                Err(_elapsed) => Outcome::TimedOut,
            },
        }
    };

    let timed_out = matches!(outcome, Outcome::TimedOut);
    let status = match outcome {
        Outcome::Exited(Ok(status)) => status.code(),
        Outcome::Exited(Err(e)) => {
            return Err(ExecError::Failed(format!(
                "waiting for {} failed: {e}",
                request.program
            )));
        }
        Outcome::TimedOut | Outcome::Cancelled => {
            group.kill();
            let _ = child.start_kill();
            // Reap it now rather than leave a zombie to tokio's orphan queue.
            let _ = child.wait().await;
            if !timed_out {
                return Err(ExecError::Cancelled);
            }
            None
        }
    };
    Ok(ExecOutput {
        status,
        truncated: out.dropped || err.dropped,
        timed_out,
        stdout: out.data,
        stderr: err.data,
    })
}

/// How the wait ended.
enum Outcome {
    Exited(std::io::Result<std::process::ExitStatus>),
    TimedOut,
    Cancelled,
}

/// Keeps the first `cap` bytes of a stream and notes whether more came.
struct Capped {
    data: Vec<u8>,
    cap: usize,
    dropped: bool,
}

impl Capped {
    fn new(cap: usize) -> Self {
        Self {
            data: Vec::new(),
            cap,
            dropped: false,
        }
    }

    fn push(&mut self, chunk: &[u8]) {
        let room = self.cap.saturating_sub(self.data.len());
        let kept = chunk.len().min(room);
        self.data.extend_from_slice(&chunk[..kept]);
        self.dropped |= kept < chunk.len();
    }
}

#[cfg(test)]
mod tests {
    use super::Capped;

    #[test]
    fn capped_keeps_the_head_and_notes_the_rest() {
        let mut capped = Capped::new(5);
        capped.push(b"abc");
        assert!(!capped.dropped);
        capped.push(b"defg");
        capped.push(b"h");
        assert_eq!(capped.data, b"abcde");
        assert!(capped.dropped);
    }

    #[test]
    fn exactly_the_cap_is_not_truncated() {
        let mut capped = Capped::new(3);
        capped.push(b"abc");
        capped.push(b"");
        assert_eq!(capped.data, b"abc");
        assert!(!capped.dropped);
    }
}
