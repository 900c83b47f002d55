//! Recent stdin of a background process, screened together with new input.
//!
//! A command sent in pieces (`rm -r`, then `f ~/x\n`) is harmless in each
//! piece; screening each write with the input before it sees it whole.

use talaria_approval::Approval;

/// Bytes of earlier input kept for screening.
const WINDOW_BYTES: usize = 16 * 1024;

/// Input written since the last write that needed approval (at most
/// [`WINDOW_BYTES`], cut at a line start when trimmed).
#[derive(Debug, Default)]
pub(crate) struct InputWindow {
    recent: String,
}

impl InputWindow {
    /// The text to screen for writing `data`: the recent input and `data`.
    pub(crate) fn with(&self, data: &[u8]) -> String {
        let mut text = self.recent.clone();
        text.push_str(&String::from_utf8_lossy(data));
        text
    }

    /// Records that `text` (from [`with`](Self::with)) was written after
    /// `approval`. Input that needed approval is forgotten, so the user is
    /// not asked about it again with every later write.
    pub(crate) fn record(&mut self, text: String, approval: &Approval) {
        if *approval != Approval::Safe {
            self.recent.clear();
            return;
        }
        self.recent = text;
        if self.recent.len() > WINDOW_BYTES {
            let mut cut = self.recent.len() - WINDOW_BYTES;
            while !self.recent.is_char_boundary(cut) {
                cut += 1;
            }
            // Prefer whole lines; a window of one long line keeps its tail.
            if let Some(newline) = self.recent[cut..].find('\n') {
                cut += newline + 1;
            }
            self.recent.drain(..cut);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn safe_input_is_kept_for_the_next_write() {
        let mut window = InputWindow::default();
        let text = window.with(b"rm -r");
        window.record(text, &Approval::Safe);
        assert_eq!(window.with(b"f x\n"), "rm -rf x\n");
    }

    #[test]
    fn approved_input_is_forgotten() {
        let mut window = InputWindow::default();
        let text = window.with(b"rm -rf x\n");
        window.record(text, &Approval::Once);
        assert_eq!(window.with(b"ls\n"), "ls\n");
    }

    #[test]
    fn the_window_is_bounded_at_a_line_start() {
        let mut window = InputWindow::default();
        let long = format!("{}\nlast line\n", "é".repeat(WINDOW_BYTES));
        let text = window.with(long.as_bytes());
        window.record(text, &Approval::Safe);
        assert_eq!(window.with(b""), "last line\n");
        let one_line = "x".repeat(3 * WINDOW_BYTES);
        let text = window.with(one_line.as_bytes());
        window.record(text, &Approval::Safe);
        assert_eq!(window.with(b"").len(), WINDOW_BYTES);
    }
}
