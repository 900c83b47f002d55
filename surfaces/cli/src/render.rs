//! Renders a one-shot run's events: human progress on stderr (the answer is
//! printed at the end), or JSON lines on stdout. The REPL has its own view.

use std::io::Write;

use talaria_commands::preview;
use talaria_kernel::{AgentEvent, EventSink};

/// How events are shown.
pub enum Renderer {
    /// One JSON object per line on stdout.
    Json,
    /// Progress lines on stderr.
    Human,
}

impl Renderer {
    /// Prints a JSON line; errors writing to a closed pipe are ignored on purpose.
    pub fn json_line(value: &impl serde::Serialize) {
        if let Ok(line) = serde_json::to_string(value) {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{line}");
            let _ = out.flush();
        }
    }
}

fn progress(line: &str) {
    eprintln!("{line}");
}

impl EventSink for Renderer {
    fn emit(&self, event: AgentEvent) {
        if let Renderer::Json = self {
            return Self::json_line(&event);
        }
        match event {
            AgentEvent::ToolStarted {
                name, arguments, ..
            } => {
                progress(&format!("  → {name} {}", preview(&arguments, 80)));
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
                progress(&line);
            }
            other => {
                if let Some(line) = status_line(&other) {
                    progress(&line);
                }
            }
        }
    }
}

/// The line for a retry, fallback, budget, warning or compression event;
/// `None` for the other events (each surface shows those its own way).
pub fn status_line(event: &AgentEvent) -> Option<String> {
    Some(match event {
        AgentEvent::Retrying {
            attempt,
            delay_ms,
            error,
        } => format!(
            "  ! {error}; retry {attempt} in {:.1} s",
            *delay_ms as f64 / 1000.0
        ),
        AgentEvent::FallbackActivated { from, to, error } => {
            format!("  ! {from} failed ({error}); switching to {to}")
        }
        AgentEvent::BudgetWarning { exhausted } => {
            format!("  ! {exhausted} exhausted: one last response, then a summary")
        }
        AgentEvent::Warning { message } => format!("  ! {message}"),
        AgentEvent::Compressed {
            to_session,
            tokens_before,
            tokens_after,
            ..
        } => format!(
            "  ~ context compressed: ~{tokens_before} → ~{tokens_after} tokens (continues as session {to_session})"
        ),
        _ => return None,
    })
}
