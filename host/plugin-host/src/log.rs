//! Per-plugin log: what the plugin logs through `log.log`, what it writes to
//! stdout/stderr, and what the host notes about it (traps, timeouts, skipped
//! hooks). Bounded, in memory, never printed; lines at info level and above
//! are also appended to the host's log file when it has one.

use std::collections::VecDeque;
use std::fmt;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::SystemTime;

use tokio::io::AsyncWrite;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};

/// Lines kept per plugin; older lines are dropped first.
pub const MAX_LOG_LINES: usize = 2000;
/// Longest line kept, in bytes; longer lines are cut.
pub const MAX_LINE_BYTES: usize = 4096;
/// Most guest stdout/stderr bytes kept per call; the rest is discarded.
pub const MAX_OUTPUT_BYTES_PER_CALL: usize = 64 * 1024;

/// Severity of a log line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogLevel {
    /// Very detailed.
    Trace,
    /// For debugging.
    Debug,
    /// Normal operation.
    Info,
    /// Something odd.
    Warn,
    /// A failure.
    Error,
}

impl fmt::Display for LogLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Trace => "trace",
            Self::Debug => "debug",
            Self::Info => "info",
            Self::Warn => "warn",
            Self::Error => "error",
        })
    }
}

impl fmt::Display for LogSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Plugin => "plugin",
            Self::Stdout => "stdout",
            Self::Stderr => "stderr",
            Self::Host => "host",
        })
    }
}

/// Where a log line came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LogSource {
    /// The plugin's `log.log` import.
    Plugin,
    /// The guest's stdout.
    Stdout,
    /// The guest's stderr.
    Stderr,
    /// The host, about the plugin (failures, denials).
    Host,
}

/// One log line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    /// When it was recorded.
    pub time: SystemTime,
    /// Severity.
    pub level: LogLevel,
    /// Origin.
    pub source: LogSource,
    /// The text (one line, at most [`MAX_LINE_BYTES`]).
    pub message: String,
}

#[derive(Debug, Default)]
struct LogInner {
    lines: VecDeque<LogLine>,
    dropped: u64,
}

/// An append-only text file all plugins' logs go to, one line per entry:
/// `2026-11-30T01:16:30.123Z info fs [plugin] message`.
#[derive(Debug)]
pub(crate) struct LogFile {
    file: Mutex<std::fs::File>,
}

impl LogFile {
    /// Opens (creating it and its directory) `path` for appending.
    pub(crate) fn open(path: &std::path::Path) -> std::io::Result<Self> {
        // Owner-only (0700 / 0600) whatever the umask: logs quote tool calls.
        let mut options = std::fs::OpenOptions::new();
        options.create(true).append(true);
        if let Some(parent) = path.parent() {
            let mut builder = std::fs::DirBuilder::new();
            builder.recursive(true);
            #[cfg(unix)]
            std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
            builder.create(parent)?;
        }
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let file = options.open(path)?;
        Ok(Self {
            file: Mutex::new(file),
        })
    }

    fn write(&self, plugin: &str, line: &LogLine) {
        use std::io::Write;
        let text = format!(
            "{} {} {plugin} [{}] {}\n",
            humantime::format_rfc3339_millis(line.time),
            line.level,
            line.source,
            line.message
        );
        // Logging must never fail a call; a full disk loses log lines only.
        let _ = self
            .file
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .write_all(text.as_bytes());
    }
}

/// A plugin's bounded log, shared by all its instances. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct PluginLog {
    inner: Arc<Mutex<LogInner>>,
    /// The plugin's name and the host's log file, when there is one.
    file: Option<(Arc<str>, Arc<LogFile>)>,
}

impl PluginLog {
    /// A log that also appends to `file`, tagged with `plugin`.
    pub(crate) fn to_file(plugin: &str, file: Arc<LogFile>) -> Self {
        Self {
            inner: Arc::default(),
            file: Some((plugin.into(), file)),
        }
    }

    fn lock(&self) -> MutexGuard<'_, LogInner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Records a line (split on newlines, each cut to [`MAX_LINE_BYTES`], keys and passwords
    /// replaced by a marker: a log never needs them).
    pub fn push(&self, level: LogLevel, source: LogSource, message: &str) {
        let mut inner = self.lock();
        for line in message.lines() {
            if line.trim().is_empty() {
                continue;
            }
            let line = LogLine {
                time: SystemTime::now(),
                level,
                source,
                message: talaria_redact::redact(truncate(line, MAX_LINE_BYTES)).into_owned(),
            };
            if let Some((plugin, file)) = &self.file
                && level >= LogLevel::Info
            {
                file.write(plugin, &line);
            }
            if inner.lines.len() >= MAX_LOG_LINES {
                inner.lines.pop_front();
                inner.dropped += 1;
            }
            inner.lines.push_back(line);
        }
    }

    /// A copy of the lines kept.
    pub fn lines(&self) -> Vec<LogLine> {
        self.lock().lines.iter().cloned().collect()
    }

    /// Takes the lines kept, leaving the log empty.
    pub fn drain(&self) -> Vec<LogLine> {
        self.lock().lines.drain(..).collect()
    }

    /// How many lines were dropped because the log was full.
    pub fn dropped(&self) -> u64 {
        self.lock().dropped
    }

    /// Whether any kept line contains `needle`.
    pub fn contains(&self, needle: &str) -> bool {
        self.lock().lines.iter().any(|l| l.message.contains(needle))
    }
}

/// Cuts `s` to at most `max` bytes on a character boundary.
pub(crate) fn truncate(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Captures a guest's stdout or stderr for one call: keeps up to a cap, then
/// silently discards (a write never fails, so a chatty guest never traps).
#[derive(Debug, Clone)]
pub(crate) struct CapturedOutput {
    buffer: Arc<Mutex<Vec<u8>>>,
    cap: usize,
}

impl CapturedOutput {
    pub(crate) fn new(cap: usize) -> Self {
        Self {
            buffer: Arc::new(Mutex::new(Vec::new())),
            cap,
        }
    }

    /// A copy of what was captured so far.
    pub(crate) fn snapshot(&self) -> Vec<u8> {
        self.buffer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Moves what was captured into `log`.
    pub(crate) fn flush_into(&self, log: &PluginLog, source: LogSource) {
        let bytes = std::mem::take(
            &mut *self
                .buffer
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        if !bytes.is_empty() {
            let level = if source == LogSource::Stderr {
                LogLevel::Warn
            } else {
                LogLevel::Info
            };
            log.push(level, source, &String::from_utf8_lossy(&bytes));
        }
    }
}

impl IsTerminal for CapturedOutput {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for CapturedOutput {
    fn async_stream(&self) -> Box<dyn AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

impl AsyncWrite for CapturedOutput {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let mut buffer = self
            .buffer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let room = self.cap.saturating_sub(buffer.len());
        buffer.extend_from_slice(&buf[..buf.len().min(room)]);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_is_bounded() {
        let log = PluginLog::default();
        for i in 0..(MAX_LOG_LINES + 5) {
            log.push(LogLevel::Info, LogSource::Plugin, &format!("line {i}"));
        }
        assert_eq!(log.lines().len(), MAX_LOG_LINES);
        assert_eq!(log.dropped(), 5);
        assert!(log.contains(&format!("line {}", MAX_LOG_LINES + 4)));
    }

    #[test]
    fn lines_at_info_and_above_go_to_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("logs/plugins.log");
        let file = Arc::new(LogFile::open(&path).unwrap());
        let log = PluginLog::to_file("fs", file);
        log.push(LogLevel::Debug, LogSource::Plugin, "quiet");
        log.push(LogLevel::Warn, LogSource::Host, "first\nsecond");
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert!(lines[0].ends_with(" warn fs [host] first"), "{text}");
        assert!(lines[1].ends_with(" warn fs [host] second"), "{text}");
        assert_eq!(log.lines().len(), 3, "memory keeps every level");
    }

    #[test]
    fn secrets_never_reach_the_log() {
        let log = PluginLog::default();
        log.push(
            LogLevel::Info,
            LogSource::Plugin,
            "calling with Authorization: Bearer abcdefghijklmnop1234",
        );
        assert!(!log.contains("abcdefghijklmnop1234"));
        assert!(log.contains("[REDACTED]"));
    }

    #[test]
    fn truncate_respects_char_boundaries() {
        assert_eq!(truncate("héllo", 2), "h");
        assert_eq!(truncate("abc", 10), "abc");
    }
}
