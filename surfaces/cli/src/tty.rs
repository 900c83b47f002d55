//! Questions on the controlling terminal (`/dev/tty`), so they work while
//! stdin and stdout are pipes. Command approvals and `clarify` both ask here.
//! The read polls, so a question can be given up (Ctrl-C at a `clarify`
//! question, an interrupted turn) without a thread left reading the terminal.

use std::io::{Read, Write};
use std::os::fd::AsFd;

use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use talaria_kernel::CancellationToken;

/// How often a waiting read looks whether it was given up, in milliseconds.
const STOP_CHECK_MS: u16 = 100;

/// What came of a question on the terminal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TtyAnswer {
    /// The line typed, without its newline.
    Line(String),
    /// Given up before a line came (or the terminal closed).
    Stopped,
    /// There is no terminal: nobody can answer.
    NoTerminal,
    /// The terminal could not be written or read.
    Failed,
}

/// The controlling terminal, where questions are asked.
pub fn open_tty() -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty")
}

/// Writes `question` and reads one line, off the runtime. Cancelling `stop`
/// or dropping the future gives the question up.
pub async fn ask(question: String, stop: CancellationToken) -> TtyAnswer {
    let give_up_when_dropped = stop.clone().drop_guard();
    let answer = tokio::task::spawn_blocking(move || ask_blocking(&question, &stop))
        .await
        .unwrap_or(TtyAnswer::Failed);
    give_up_when_dropped.disarm();
    answer
}

fn ask_blocking(question: &str, stop: &CancellationToken) -> TtyAnswer {
    let Ok(mut tty) = open_tty() else {
        return TtyAnswer::NoTerminal;
    };
    if tty.write_all(question.as_bytes()).is_err() || tty.flush().is_err() {
        return TtyAnswer::Failed;
    }
    let mut line = Vec::new();
    loop {
        if stop.is_cancelled() {
            // Ctrl-C's echo (`^C`) left the cursor on the question's line.
            let _ = tty.write_all(b"\n");
            return TtyAnswer::Stopped;
        }
        let mut ready = [PollFd::new(tty.as_fd(), PollFlags::POLLIN)];
        match poll(&mut ready, PollTimeout::from(STOP_CHECK_MS)) {
            Ok(0) | Err(Errno::EINTR) => continue,
            Ok(_) => {}
            Err(_) => return TtyAnswer::Failed,
        }
        let mut chunk = [0u8; 1024];
        match tty.read(&mut chunk) {
            // Ctrl-D at the start of the line, or the terminal went away.
            Ok(0) => return TtyAnswer::Stopped,
            Ok(n) => {
                line.extend_from_slice(&chunk[..n]);
                if let Some(end) = line.iter().position(|b| *b == b'\n') {
                    line.truncate(end);
                    return TtyAnswer::Line(String::from_utf8_lossy(&line).into_owned());
                }
            }
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return TtyAnswer::Failed,
        }
    }
}
