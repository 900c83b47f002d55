//! The activity feed: what the agent is doing while the user waits — a spinner
//! on stderr, and one line per finished tool call.

use std::io::{IsTerminal, Write};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value};

use crate::skin::Skin;
use crate::style::{Painter, Role, Style};

/// How many characters a key argument is cut to.
const KEY_ARGUMENT_CHARS: usize = 60;
/// How many characters an error preview is cut to.
const ERROR_PREVIEW_CHARS: usize = 80;
/// Arguments that say what a call does, best first.
const KEY_ARGUMENTS: [&str; 17] = [
    "command",
    "cmd",
    "pattern",
    "query",
    "url",
    "path",
    "file_path",
    "filepath",
    "file",
    "name",
    "skill",
    "goal",
    "task",
    "question",
    "prompt",
    "code",
    "target",
];
/// What an `action` argument acts on, best first (`kill 3`, `create my-skill`).
const ACTION_OBJECTS: [&str; 10] = [
    "name",
    "session_id",
    "id",
    "pid",
    "target",
    "path",
    "file_path",
    "skill",
    "query",
    "title",
];
/// List arguments whose first element says what a call does.
const LIST_ARGUMENTS: [&str; 5] = ["urls", "paths", "files", "queries", "commands"];
/// How long a string may be to count as a "short" fallback argument.
const SHORT_STRING: usize = 200;

/// The one argument that says what a tool call does — the command, path,
/// pattern, query, URL, name; `action` and its object for tools such as
/// `process` (`kill 3`); else the first short string — on one line (further
/// lines become ` …`), control characters removed, cut to about 60
/// characters with `…`. `None` when there is nothing to show.
pub fn key_argument(tool: &str, arguments: &Value) -> Option<String> {
    let text = match arguments {
        Value::Object(map) => object_key_argument(tool, map)?,
        Value::String(s) => s.clone(),
        _ => return None,
    };
    let line = one_line(&text, KEY_ARGUMENT_CHARS);
    (!line.is_empty()).then_some(line)
}

fn object_key_argument(tool: &str, map: &Map<String, Value>) -> Option<String> {
    let scalar = |key: &str| -> Option<String> {
        match map.get(key)? {
            Value::String(s) if !s.trim().is_empty() => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        }
    };
    if tool == "todo"
        && let Some(Value::Array(items)) = map.get("todos")
    {
        let n = items.len();
        return Some(format!("{n} item{}", if n == 1 { "" } else { "s" }));
    }
    if let Some(action) = scalar("action") {
        return Some(match ACTION_OBJECTS.iter().find_map(|k| scalar(k)) {
            Some(object) => format!("{action} {object}"),
            None => action,
        });
    }
    if let Some(found) = KEY_ARGUMENTS.iter().find_map(|k| scalar(k)) {
        return Some(found);
    }
    for key in LIST_ARGUMENTS {
        if let Some(Value::Array(items)) = map.get(key) {
            let mut strings = items.iter().filter_map(Value::as_str);
            if let Some(first) = strings.next() {
                let more = strings.count();
                return Some(if more == 0 {
                    first.to_string()
                } else {
                    format!("{first} (+{more})")
                });
            }
        }
    }
    map.values()
        .filter_map(Value::as_str)
        .find(|s| !s.trim().is_empty() && s.chars().count() <= SHORT_STRING)
        .map(str::to_string)
}

/// `text`'s first non-blank line (with ` …` when more follow), control
/// characters and tabs as spaces, cut to `max` characters ending in `…`.
fn one_line(text: &str, max: usize) -> String {
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let mut line: String = lines
        .next()
        .unwrap_or_default()
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if lines.next().is_some() {
        line.push_str(" …");
    }
    if line.chars().count() > max {
        line = line.chars().take(max.saturating_sub(1)).collect();
        line = line.trim_end().to_string();
        line.push('…');
    }
    line
}

/// `12 ms`, `3.4 s`, `2m 05s`.
pub fn format_duration(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms < 60_000 {
        // Tenths of a second, without floating point.
        format!("{}.{} s", ms / 1000, ms % 1000 / 100)
    } else {
        let secs = ms / 1000;
        format!("{}m {:02}s", secs / 60, secs % 60)
    }
}

/// One finished tool call for the activity feed, without a newline:
/// `  💻 terminal  echo hi   12 ms ✓`, or with `✗` and the error preview
/// (one line, cut to about 80 characters) when it failed. `emoji` is shown
/// before the name (usually [`Skin::tool_emoji`]; empty for none), `key_arg`
/// after it (usually from [`key_argument`]; empty for none); `color` paints
/// the parts with the skin's roles. Control characters are never passed on.
#[allow(clippy::too_many_arguments)]
pub fn format_tool_line(
    skin: &Skin,
    color: bool,
    emoji: &str,
    name: &str,
    key_arg: &str,
    duration_ms: u64,
    ok: bool,
    error_preview: Option<&str>,
) -> String {
    let mut out = String::from("  ");
    let emoji = one_line(emoji, 8);
    if !emoji.is_empty() {
        out.push_str(&emoji);
        out.push(' ');
    }
    let name = one_line(name, KEY_ARGUMENT_CHARS);
    out.push_str(&skin.paint(Role::Tool, &name, color));
    let key = one_line(key_arg, KEY_ARGUMENT_CHARS);
    if !key.is_empty() {
        out.push_str("  ");
        out.push_str(&skin.paint(Role::Text, &key, color));
    }
    out.push_str("   ");
    out.push_str(&skin.paint(Role::Dim, &format_duration(duration_ms), color));
    out.push(' ');
    if ok {
        out.push_str(&skin.paint(Role::Success, "✓", color));
    } else {
        out.push_str(&skin.paint(Role::Error, "✗", color));
        if let Some(preview) = error_preview.map(|e| one_line(e, ERROR_PREVIEW_CHARS))
            && !preview.is_empty()
        {
            out.push_str("  ");
            out.push_str(&skin.paint(Role::Error, &preview, color));
        }
    }
    out
}

/// Erases the current terminal line and returns the cursor to its start.
const CLEAR_LINE: &str = "\r\x1b[2K";

/// A status line animated on stderr by a thread: `⠋ thinking… label (3s)`.
///
/// Does nothing at all when disabled or when stderr is not a terminal. Lines
/// are always drawn and erased whole (under one lock), cut to the terminal
/// width (`COLUMNS`, else 80) so they never wrap; [`stop`](Self::stop) (or
/// dropping the spinner) waits until the line is erased.
#[derive(Debug)]
pub struct Spinner {
    running: Option<Running>,
}

#[derive(Debug)]
struct Running {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

#[derive(Debug)]
struct Shared {
    state: Mutex<SpinState>,
    wake: Condvar,
}

struct SpinState {
    label: String,
    paused: usize,
    stop: bool,
    drawn: bool,
    out: Box<dyn Write + Send>,
}

impl std::fmt::Debug for SpinState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpinState")
            .field("label", &self.label)
            .field("paused", &self.paused)
            .field("stop", &self.stop)
            .field("drawn", &self.drawn)
            .finish_non_exhaustive()
    }
}

impl SpinState {
    fn clear(&mut self) {
        if self.drawn {
            // A terminal that cannot be written to has nothing to clear.
            let _ = self.out.write_all(CLEAR_LINE.as_bytes());
            let _ = self.out.flush();
            self.drawn = false;
        }
    }
}

/// What the spinner thread draws with.
struct Frames {
    faces: Vec<String>,
    verbs: Vec<String>,
    interval: Duration,
    face: Style,
    verb: Style,
    dim: Style,
    color: bool,
    seed: usize,
}

impl Frames {
    fn from_skin(skin: &Skin, color: bool) -> Frames {
        let seed = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos() as usize);
        let faces = if skin.spinner.faces.is_empty() {
            vec!["-".to_string()]
        } else {
            skin.spinner.faces.clone()
        };
        Frames {
            faces,
            verbs: skin.spinner.verbs.clone(),
            interval: Duration::from_millis(skin.spinner.interval_ms.max(10)),
            face: Style::fg(skin.palette.get(Role::Accent)),
            verb: Style::fg(skin.palette.get(Role::Text)),
            dim: Style::fg(skin.palette.get(Role::Dim)),
            color,
            seed,
        }
    }

    /// The whole line for frame `n` (without the leading clear).
    fn line(&self, n: usize, elapsed: Duration, label: &str, width: usize) -> String {
        let face = &self.faces[n % self.faces.len()];
        let secs = elapsed.as_secs();
        // A new verb every five seconds, starting from a random one.
        let verb = (!self.verbs.is_empty()).then(|| {
            let i = (self.seed + usize::try_from(secs / 5).unwrap_or(0)) % self.verbs.len();
            format!("{}…", self.verbs[i])
        });
        let time = format!("({secs}s)");
        let label = one_line(label, usize::MAX);
        // Fit the line in the terminal: the label gives way first.
        let fixed = display_width(face)
            + verb.as_ref().map_or(0, |v| display_width(v) + 1)
            + 1
            + display_width(&time);
        // If even the fixed parts do not fit, show just the face.
        if fixed >= width {
            return fit(face, width.saturating_sub(1));
        }
        // Stay off the last column: some terminals wrap there.
        let room = width.saturating_sub(fixed + 2);
        let label = fit(&label, room);
        let mut p = Painter::default();
        let styled = |p: &mut Painter, style: Style, text: &str| {
            p.text(if self.color { style } else { Style::PLAIN }, text);
        };
        styled(&mut p, self.face, face);
        if let Some(verb) = &verb {
            styled(&mut p, Style::PLAIN, " ");
            styled(&mut p, self.verb, verb);
        }
        if !label.is_empty() {
            styled(&mut p, Style::PLAIN, " ");
            styled(&mut p, self.verb, &label);
        }
        styled(&mut p, Style::PLAIN, " ");
        styled(&mut p, self.dim, &time);
        p.reset();
        p.take()
    }
}

/// A conservative terminal width: one column for ASCII, two for anything else.
fn display_width(s: &str) -> usize {
    s.chars().map(|c| if c.is_ascii() { 1 } else { 2 }).sum()
}

/// `s` cut to `width` columns (by [`display_width`]), ending in `…` when cut.
fn fit(s: &str, width: usize) -> String {
    if display_width(s) <= width {
        return s.to_string();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in s.chars() {
        let w = if c.is_ascii() { 1 } else { 2 };
        if used + w + 2 > width {
            break;
        }
        out.push(c);
        used += w;
    }
    if width >= 2 {
        out.push('…');
    }
    out
}

/// The terminal width from `COLUMNS`, else 80.
fn terminal_width() -> usize {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|c| *c >= 10)
        .unwrap_or(80)
}

fn lock(shared: &Shared) -> MutexGuard<'_, SpinState> {
    shared.state.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Spinner {
    /// Starts animating `label` on stderr with `skin`'s faces, verbs and
    /// interval — only if stderr is a terminal; otherwise the spinner does
    /// nothing at all. When the user turned colours or animation off, use
    /// [`start_if`](Self::start_if) or [`disabled`](Self::disabled).
    pub fn start(skin: &Skin, label: impl Into<String>) -> Spinner {
        Spinner::start_if(true, skin, label)
    }

    /// [`start`](Self::start) when `enabled` (the caller's colour/animation
    /// setting), else a spinner that does nothing.
    pub fn start_if(enabled: bool, skin: &Skin, label: impl Into<String>) -> Spinner {
        if !enabled || !std::io::stderr().is_terminal() {
            return Spinner::disabled();
        }
        Spinner::start_on(skin, label, Box::new(std::io::stderr()), true)
    }

    /// Starts animating on `out` whatever it is (a test buffer, another
    /// terminal handle), painted when `color` is true.
    pub fn start_on(
        skin: &Skin,
        label: impl Into<String>,
        out: Box<dyn Write + Send>,
        color: bool,
    ) -> Spinner {
        let shared = Arc::new(Shared {
            state: Mutex::new(SpinState {
                label: label.into(),
                paused: 0,
                stop: false,
                drawn: false,
                out,
            }),
            wake: Condvar::new(),
        });
        let frames = Frames::from_skin(skin, color);
        let width = terminal_width();
        let thread_shared = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("talaria-spinner".into())
            .spawn(move || animate(&thread_shared, &frames, width));
        match thread {
            Ok(thread) => Spinner {
                running: Some(Running {
                    shared,
                    thread: Some(thread),
                }),
            },
            // Without a thread there is no spinner; that is all.
            Err(_) => Spinner::disabled(),
        }
    }

    /// A spinner that does nothing.
    pub fn disabled() -> Spinner {
        Spinner { running: None }
    }

    /// Whether the spinner is animating (not disabled, not stopped).
    pub fn is_active(&self) -> bool {
        self.running.is_some()
    }

    /// Changes the label; the line is redrawn at once (unless paused).
    pub fn set_label(&self, label: impl Into<String>) {
        if let Some(running) = &self.running {
            lock(&running.shared).label = label.into();
            running.shared.wake.notify_all();
        }
    }

    /// Erases the line and stops drawing until the returned guard is dropped
    /// (for a prompt on the same terminal). Pauses nest.
    pub fn pause(&self) -> SpinnerPause<'_> {
        if let Some(running) = &self.running {
            let mut state = lock(&running.shared);
            state.paused += 1;
            state.clear();
        }
        SpinnerPause { spinner: self }
    }

    /// Stops the animation and waits until its line is erased.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        if let Some(mut running) = self.running.take() {
            lock(&running.shared).stop = true;
            running.shared.wake.notify_all();
            if let Some(thread) = running.thread.take() {
                // A panicked spinner thread has nothing more to draw.
                let _ = thread.join();
            }
            // In case the thread died before erasing.
            lock(&running.shared).clear();
        }
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Keeps a [`Spinner`] paused; drawing resumes when it is dropped.
#[derive(Debug)]
#[must_use = "the spinner resumes as soon as the guard is dropped"]
pub struct SpinnerPause<'a> {
    spinner: &'a Spinner,
}

impl Drop for SpinnerPause<'_> {
    fn drop(&mut self) {
        if let Some(running) = &self.spinner.running {
            let mut state = lock(&running.shared);
            state.paused = state.paused.saturating_sub(1);
            drop(state);
            running.shared.wake.notify_all();
        }
    }
}

/// The spinner thread: draws a frame per interval until told to stop, then erases.
fn animate(shared: &Shared, frames: &Frames, width: usize) {
    let start = Instant::now();
    let mut n = 0usize;
    let mut state = lock(shared);
    loop {
        if state.stop {
            state.clear();
            return;
        }
        if state.paused == 0 {
            let line = frames.line(n, start.elapsed(), &state.label, width);
            let mut bytes = String::with_capacity(line.len() + CLEAR_LINE.len());
            bytes.push_str(CLEAR_LINE);
            bytes.push_str(&line);
            let _ = state.out.write_all(bytes.as_bytes());
            let _ = state.out.flush();
            state.drawn = true;
            n = n.wrapping_add(1);
        }
        state = shared
            .wake
            .wait_timeout(state, frames.interval)
            .unwrap_or_else(PoisonError::into_inner)
            .0;
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn key_arguments() {
        let k = |tool: &str, args: Value| key_argument(tool, &args);
        assert_eq!(
            k("terminal", json!({"command": "echo hi", "timeout": 5})).as_deref(),
            Some("echo hi")
        );
        assert_eq!(
            k("read_file", json!({"offset": 3, "path": "src/main.rs"})).as_deref(),
            Some("src/main.rs")
        );
        assert_eq!(
            k("x", json!({"file_path": "/a/b"})).as_deref(),
            Some("/a/b")
        );
        assert_eq!(
            k("search_files", json!({"pattern": "fn main", "path": "."})).as_deref(),
            Some("fn main")
        );
        assert_eq!(
            k("web_search", json!({"query": "rust"})).as_deref(),
            Some("rust")
        );
        assert_eq!(
            k("process", json!({"action": "kill", "session_id": "3"})).as_deref(),
            Some("kill 3")
        );
        assert_eq!(
            k("process", json!({"action": "list"})).as_deref(),
            Some("list")
        );
        assert_eq!(
            k(
                "skill_manage",
                json!({"action": "create", "name": "deploy", "content": "…"})
            )
            .as_deref(),
            Some("create deploy")
        );
        assert_eq!(
            k(
                "memory",
                json!({"action": "add", "target": "user", "content": "x"})
            )
            .as_deref(),
            Some("add user")
        );
        assert_eq!(
            k("web_extract", json!({"urls": ["https://a", "https://b"]})).as_deref(),
            Some("https://a (+1)")
        );
        assert_eq!(
            k("todo", json!({"todos": [{}, {}]})).as_deref(),
            Some("2 items")
        );
        assert_eq!(
            k("odd", json!({"flag": true, "zzz": "short one"})).as_deref(),
            Some("short one")
        );
        assert_eq!(k("odd", json!({"flag": true})), None);
        assert_eq!(k("odd", json!({"command": "   "})), None);
        assert_eq!(k("odd", json!([1, 2])), None);
        assert_eq!(k("odd", json!("raw text")).as_deref(), Some("raw text"));
    }

    #[test]
    fn key_arguments_are_one_short_line() {
        let long = "x".repeat(100);
        let got = key_argument("terminal", &json!({ "command": long })).unwrap();
        assert_eq!(got.chars().count(), KEY_ARGUMENT_CHARS);
        assert!(got.ends_with('…'));
        let got = key_argument(
            "terminal",
            &json!({"command": "\n  cat <<EOF\nbody\nEOF\n"}),
        )
        .unwrap();
        assert_eq!(got, "cat <<EOF …");
        let got = key_argument("terminal", &json!({"command": "a\tb\x1b[2Jc"})).unwrap();
        assert_eq!(got, "a b [2Jc");
        let cjk = "日本語".repeat(30);
        let got = key_argument("x", &json!({ "query": cjk })).unwrap();
        assert_eq!(got.chars().count(), KEY_ARGUMENT_CHARS);
    }

    #[test]
    fn durations() {
        assert_eq!(format_duration(0), "0 ms");
        assert_eq!(format_duration(999), "999 ms");
        assert_eq!(format_duration(1234), "1.2 s");
        assert_eq!(format_duration(59_999), "59.9 s");
        assert_eq!(format_duration(125_000), "2m 05s");
    }

    #[test]
    fn tool_lines() {
        let skin = Skin::builtin_default();
        let emoji = skin.tool_emoji("terminal");
        assert_eq!(
            format_tool_line(&skin, false, emoji, "terminal", "echo hi", 12, true, None),
            "  💻 terminal  echo hi   12 ms ✓"
        );
        assert_eq!(
            format_tool_line(&skin, false, "", "read_file", "", 1500, true, None),
            "  read_file   1.5 s ✓"
        );
        assert_eq!(
            format_tool_line(
                &skin,
                false,
                "⚙",
                "mystery",
                "x",
                3,
                false,
                Some("boom\nmore")
            ),
            "  ⚙ mystery  x   3 ms ✗  boom …"
        );
        assert_eq!(
            format_tool_line(&skin, false, "", "t", "", 3, false, None),
            "  t   3 ms ✗"
        );
        let painted = format_tool_line(
            &skin,
            true,
            emoji,
            "terminal",
            "ls",
            5,
            false,
            Some("exit 1"),
        );
        assert!(painted.contains("\x1b[0;35mterminal\x1b[0m"), "{painted:?}");
        assert!(painted.contains("\x1b[0;31m✗\x1b[0m"), "{painted:?}");
        assert!(painted.contains("\x1b[0;31mexit 1\x1b[0m"), "{painted:?}");
        let evil = format_tool_line(&skin, false, "\x1b[31m", "t\x1b[2J", "\x07", 1, true, None);
        assert!(!evil.contains('\x1b') && !evil.contains('\x07'), "{evil:?}");
    }

    #[test]
    fn spinner_lines_fit_the_width() {
        let skin = Skin::builtin_default();
        let frames = Frames::from_skin(&skin, false);
        let line = frames.line(0, Duration::from_secs(3), "reading files", 80);
        assert!(line.starts_with("⠋ "), "{line}");
        assert!(line.ends_with(" reading files (3s)"), "{line}");
        assert!(line.contains("… "), "{line}");
        let long = "y".repeat(200);
        for width in [10, 20, 40, 80] {
            let line = frames.line(1, Duration::ZERO, &long, width);
            assert!(display_width(&line) < width, "{width}: {line}");
        }
        let painted = Frames::from_skin(&skin, true).line(0, Duration::ZERO, "x", 80);
        assert!(painted.starts_with("\x1b[0;36m⠋"), "{painted:?}");
        assert!(painted.ends_with("\x1b[0m"), "{painted:?}");
    }

    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl Write for Buffer {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Buffer {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
        }
    }

    fn fast_skin() -> Skin {
        let mut skin = Skin::builtin_default();
        skin.spinner.interval_ms = 20;
        skin.spinner.verbs = vec!["testing".into()];
        skin
    }

    /// Waits (up to 10 s, for loaded machines) until `cond` holds.
    fn eventually(what: &str, cond: impl Fn() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !cond() {
            assert!(Instant::now() < deadline, "timed out waiting: {what}");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn spinner_draws_pauses_and_erases() {
        let buf = Buffer::default();
        let spinner = Spinner::start_on(&fast_skin(), "first", Box::new(buf.clone()), false);
        assert!(spinner.is_active());
        eventually("two frames", || buf.text().matches(CLEAR_LINE).count() >= 2);
        let text = buf.text();
        assert!(
            text.starts_with("\r\x1b[2K⠋ testing… first (0s)\r\x1b[2K⠙ testing… first"),
            "{text:?}"
        );

        {
            let _pause = spinner.pause();
            let paused = buf.text();
            assert!(paused.ends_with(CLEAR_LINE), "{paused:?}");
            std::thread::sleep(Duration::from_millis(80));
            assert_eq!(buf.text(), paused, "nothing drawn while paused");
            {
                let _nested = spinner.pause();
            }
            spinner.set_label("second");
            std::thread::sleep(Duration::from_millis(40));
            assert_eq!(buf.text(), paused, "nothing drawn while paused");
        }
        eventually("redrawn after the pause", || buf.text().contains("second"));

        spinner.stop();
        let done = buf.text();
        assert!(done.ends_with(CLEAR_LINE), "{done:?}");
        std::thread::sleep(Duration::from_millis(60));
        assert_eq!(buf.text(), done, "nothing after stop");
    }

    #[test]
    fn dropping_the_spinner_erases_its_line() {
        let buf = Buffer::default();
        let spinner = Spinner::start_on(&fast_skin(), "x", Box::new(buf.clone()), true);
        eventually("a frame", || !buf.text().is_empty());
        drop(spinner);
        assert!(buf.text().ends_with(CLEAR_LINE));
    }

    #[test]
    fn disabled_spinner_does_nothing() {
        let skin = fast_skin();
        let spinner = Spinner::start_if(false, &skin, "x");
        assert!(!spinner.is_active());
        spinner.set_label("y");
        drop(spinner.pause());
        spinner.stop();
        // Tests run without a terminal on stderr: enabled still does nothing.
        if !std::io::stderr().is_terminal() {
            assert!(!Spinner::start(&skin, "x").is_active());
            assert!(!Spinner::start_if(true, &skin, "x").is_active());
        }
    }
}
