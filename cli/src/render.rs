//! Renders the loop's events: human progress on stderr (and streamed text on
//! stdout in chat mode), or JSON lines on stdout.

use std::io::Write;
use std::sync::Mutex;

use talaria_kernel::{AgentEvent, EventSink, StreamEvent};

/// How events are shown.
pub enum Renderer {
    /// One JSON object per line on stdout.
    Json,
    /// Progress lines on stderr; streamed answer text on stdout if `stream_text`.
    Human {
        /// Print text deltas as they arrive (chat) instead of the final answer at the end.
        stream_text: bool,
        /// Whether the current stdout line has unterminated streamed text.
        open_line: Mutex<bool>,
    },
}

impl Renderer {
    /// A human renderer.
    pub fn human(stream_text: bool) -> Self {
        Renderer::Human {
            stream_text,
            open_line: Mutex::new(false),
        }
    }

    /// Prints a JSON line; errors writing to a closed pipe are ignored on purpose.
    pub fn json_line(value: &impl serde::Serialize) {
        if let Ok(line) = serde_json::to_string(value) {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{line}");
            let _ = out.flush();
        }
    }

    /// Ends a streamed line so following output starts on a fresh line.
    pub fn finish_line(&self) {
        if let Renderer::Human { open_line, .. } = self
            && let Ok(mut open) = open_line.lock()
            && *open
        {
            println!();
            *open = false;
        }
    }

    fn progress(&self, line: &str) {
        self.finish_line();
        eprintln!("{line}");
    }
}

impl EventSink for Renderer {
    fn emit(&self, event: AgentEvent) {
        let stream_text = match self {
            Renderer::Json => return Self::json_line(&event),
            Renderer::Human { stream_text, .. } => *stream_text,
        };
        match event {
            AgentEvent::Stream(StreamEvent::TextDelta { text }) if stream_text => {
                if let Renderer::Human { open_line, .. } = self
                    && let Ok(mut open) = open_line.lock()
                {
                    let mut out = std::io::stdout().lock();
                    let _ = out.write_all(text.as_bytes());
                    let _ = out.flush();
                    *open = !text.ends_with('\n');
                }
            }
            AgentEvent::ToolStarted {
                name, arguments, ..
            } => {
                self.progress(&format!("  → {name} {}", preview(&arguments, 80)));
            }
            AgentEvent::ToolFinished {
                name,
                is_error,
                content,
                duration_ms,
                ..
            } => {
                let line = if is_error {
                    format!("  ✗ {name} ({duration_ms} ms): {}", preview(&content, 120))
                } else {
                    format!("  ✓ {name} ({duration_ms} ms)")
                };
                self.progress(&line);
            }
            AgentEvent::Retrying {
                attempt,
                delay_ms,
                error,
            } => self.progress(&format!(
                "  ! {error}; retry {attempt} in {:.1} s",
                delay_ms as f64 / 1000.0
            )),
            AgentEvent::FallbackActivated { from, to, error } => {
                self.progress(&format!("  ! {from} failed ({error}); switching to {to}"));
            }
            AgentEvent::BudgetWarning { exhausted } => self.progress(&format!(
                "  ! {exhausted} exhausted: one last response, then a summary"
            )),
            AgentEvent::Warning { message } => self.progress(&format!("  ! {message}")),
            AgentEvent::Compressed {
                to_session,
                tokens_before,
                tokens_after,
                ..
            } => self.progress(&format!(
                "  ~ context compressed: ~{tokens_before} → ~{tokens_after} tokens (continues as session {to_session})"
            )),
            AgentEvent::ModelRequest { .. }
            | AgentEvent::Usage { .. }
            | AgentEvent::Final { .. }
            | AgentEvent::Stream(_) => {}
        }
    }
}

/// The first `max` characters of `text` on one line.
fn preview(text: &str, max: usize) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        return flat;
    }
    let mut cut: String = flat.chars().take(max).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::preview;

    #[test]
    fn previews_are_single_line_and_bounded() {
        assert_eq!(preview("a\n  b", 10), "a b");
        assert_eq!(preview("ééééé", 3), "ééé…");
    }
}
