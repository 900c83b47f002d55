//! Exporting a session as JSON lines.

use std::io::Write;

use crate::db::SessionDb;
use crate::error::{Result, StoreError};
use crate::read::{session_row, stored_messages};
use crate::rows::ExportLine;

impl SessionDb {
    /// Writes the session as JSON lines: one [`ExportLine::Session`] header,
    /// then one [`ExportLine::Message`] per message, in order. Header and
    /// messages come from one snapshot, so they agree even while a writer
    /// is appending. With `redact`, keys and passwords in message text,
    /// reasoning and tool-call arguments are replaced by a marker.
    pub fn export_jsonl(&self, session_id: &str, mut out: impl Write, redact: bool) -> Result<()> {
        let (session, messages) = self.read(|tx| {
            let session = session_row(tx, session_id)?
                .ok_or_else(|| StoreError::NotFound(session_id.to_owned()))?;
            Ok((session, stored_messages(tx, session_id)?))
        })?;
        write_line(&mut out, &ExportLine::Session(session))?;
        for mut message in messages {
            if redact {
                redact_message(&mut message.message);
            }
            write_line(&mut out, &ExportLine::Message(message))?;
        }
        out.flush()?;
        Ok(())
    }
}

/// Replaces the secrets in a message's text, reasoning and tool-call arguments.
fn redact_message(message: &mut talaria_kernel::Message) {
    let clean = |text: &mut String| {
        if let std::borrow::Cow::Owned(redacted) = talaria_redact::redact(text) {
            *text = redacted;
        }
    };
    clean(&mut message.content);
    if let Some(reasoning) = &mut message.reasoning {
        clean(reasoning);
    }
    for call in &mut message.tool_calls {
        clean(&mut call.arguments);
    }
}

fn write_line(out: &mut impl Write, line: &ExportLine) -> Result<()> {
    serde_json::to_writer(&mut *out, line)?;
    out.write_all(b"\n")?;
    Ok(())
}
