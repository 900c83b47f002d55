//! Unified diffs: rendering changed regions as hunks, and parsing and
//! applying patches (unified diff, or the `*** Begin Patch` format).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::{Value, json};
use talaria_plugin_sdk::ToolError;

use crate::paths::{self, Target};
use crate::replace::split_lines;
use crate::similar;

/// Whole lines `old_start..old_start + old_len` (0-based) replaced by
/// `new_lines`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Region {
    pub old_start: usize,
    pub old_len: usize,
    pub new_lines: Vec<String>,
}

/// Renders `regions` (sorted, not overlapping) of a file whose lines were
/// `old` as a unified diff with `context` lines, at most `max_lines` lines
/// after the header.
pub fn render_regions(
    old: &[&str],
    regions: &[Region],
    path: &str,
    context: usize,
    max_lines: usize,
) -> String {
    let mut out = vec![format!("--- a/{path}"), format!("+++ b/{path}")];
    let mut body = Vec::new();
    let mut delta: isize = 0;
    let mut i = 0;
    while i < regions.len() {
        // Regions whose contexts touch form one hunk.
        let mut j = i + 1;
        while j < regions.len() {
            let prev_end = regions[j - 1].old_start + regions[j - 1].old_len;
            if regions[j].old_start.saturating_sub(prev_end) > 2 * context {
                break;
            }
            j += 1;
        }
        let begin = regions[i].old_start.saturating_sub(context);
        let last_end = regions[j - 1].old_start + regions[j - 1].old_len;
        let end = (last_end + context).min(old.len());
        let mut lines = Vec::new();
        let mut at = begin;
        let mut old_count = 0;
        let mut new_count = 0;
        let hunk_delta = delta;
        for r in &regions[i..j] {
            for l in &old[at..r.old_start] {
                lines.push(format!(" {l}"));
            }
            old_count += r.old_start - at;
            new_count += r.old_start - at;
            for l in &old[r.old_start..r.old_start + r.old_len] {
                lines.push(format!("-{l}"));
            }
            for l in &r.new_lines {
                lines.push(format!("+{l}"));
            }
            old_count += r.old_len;
            new_count += r.new_lines.len();
            delta += r.new_lines.len() as isize - r.old_len as isize;
            at = r.old_start + r.old_len;
        }
        for l in &old[at..end] {
            lines.push(format!(" {l}"));
        }
        old_count += end - at;
        new_count += end - at;
        let old_start = if old_count == 0 { begin } else { begin + 1 };
        let new_begin = (begin as isize + hunk_delta).max(0) as usize;
        let new_start = if new_count == 0 {
            new_begin
        } else {
            new_begin + 1
        };
        body.push(format!(
            "@@ -{old_start},{old_count} +{new_start},{new_count} @@"
        ));
        body.extend(lines);
        i = j;
    }
    if body.len() > max_lines {
        let more = body.len() - max_lines;
        body.truncate(max_lines);
        body.push(format!("… ({more} more diff lines)"));
    }
    out.extend(body);
    out.join("\n")
}

/// One line of a hunk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Line {
    Context(String),
    Remove(String),
    Add(String),
}

/// A hunk to apply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hunk {
    /// The `@@ … @@` line, for messages.
    pub header: String,
    /// 1-based old start line, when the format gives one.
    pub old_start: Option<usize>,
    /// A line to find first (the `@@ anchor` of the `*** Begin Patch` format).
    pub anchor: Option<String>,
    pub lines: Vec<Line>,
    /// `\ No newline at end of file` followed the new side's last line.
    pub new_no_eol: bool,
    /// `\ No newline at end of file` followed only the old side's last line.
    pub old_no_eol: bool,
}

/// The changes to one file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FilePatch {
    /// `None` for a new file (`/dev/null`).
    pub old_path: Option<String>,
    /// `None` for a deleted file.
    pub new_path: Option<String>,
    pub hunks: Vec<Hunk>,
}

/// Parses a patch: a unified diff (`---`/`+++` headers and `@@` hunks; a
/// bare list of hunks applies to `default_path`) or the `*** Begin Patch`
/// format.
pub fn parse(text: &str, default_path: Option<&str>) -> Result<Vec<FilePatch>, String> {
    let lines: Vec<&str> = text
        .strip_suffix('\n')
        .unwrap_or(text)
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    if lines.iter().any(|l| l.trim() == "*** Begin Patch") {
        return parse_begin_patch(&lines);
    }
    let mut files: Vec<FilePatch> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if line.starts_with("--- ") && lines.get(i + 1).is_some_and(|n| n.starts_with("+++ ")) {
            files.push(FilePatch {
                old_path: header_path(&line[4..]),
                new_path: header_path(&lines[i + 1][4..]),
                hunks: Vec::new(),
            });
            i += 2;
            continue;
        }
        if line.starts_with("@@") {
            let (old_start, old_len, new_len) = parse_hunk_header(line)?;
            if files.is_empty() {
                let Some(path) = default_path else {
                    return Err(format!(
                        "the patch has a hunk (`{line}`) before any `--- a/file` / `+++ b/file` \
                         header; add the headers or pass `path`"
                    ));
                };
                files.push(FilePatch {
                    old_path: Some(path.to_string()),
                    new_path: Some(path.to_string()),
                    hunks: Vec::new(),
                });
            }
            let mut hunk = Hunk {
                header: line.to_string(),
                old_start: Some(old_start),
                anchor: None,
                lines: Vec::new(),
                new_no_eol: false,
                old_no_eol: false,
            };
            let (mut old_seen, mut new_seen) = (0, 0);
            i += 1;
            while i < lines.len() {
                let l = lines[i];
                let complete = old_seen >= old_len && new_seen >= new_len;
                let next_file = l.starts_with("--- ")
                    && lines.get(i + 1).is_some_and(|n| n.starts_with("+++ "));
                if l.starts_with("@@") || l.starts_with("diff ") || next_file {
                    break;
                }
                if let Some(rest) = l.strip_prefix('+') {
                    hunk.lines.push(Line::Add(rest.to_string()));
                    new_seen += 1;
                } else if let Some(rest) = l.strip_prefix('-') {
                    hunk.lines.push(Line::Remove(rest.to_string()));
                    old_seen += 1;
                } else if let Some(rest) = l.strip_prefix(' ') {
                    hunk.lines.push(Line::Context(rest.to_string()));
                    old_seen += 1;
                    new_seen += 1;
                } else if l.starts_with('\\') {
                    match hunk.lines.last() {
                        Some(Line::Remove(_)) => hunk.old_no_eol = true,
                        Some(_) => hunk.new_no_eol = true,
                        None => {}
                    }
                } else if l.is_empty() && !complete {
                    // An empty context line whose leading space was lost.
                    hunk.lines.push(Line::Context(String::new()));
                    old_seen += 1;
                    new_seen += 1;
                } else {
                    break;
                }
                i += 1;
            }
            if let Some(file) = files.last_mut() {
                file.hunks.push(hunk);
            }
            continue;
        }
        i += 1;
    }
    if files.is_empty() {
        return Err(
            "no diff found: expected `--- a/file`, `+++ b/file` and `@@ -l,n +l,n @@` hunks \
             (or a `*** Begin Patch` block)"
                .into(),
        );
    }
    if let Some(f) = files
        .iter()
        .find(|f| f.hunks.is_empty() && f.old_path.is_some() && f.new_path.is_some())
    {
        return Err(format!(
            "the patch for {} has no hunks",
            f.new_path.as_deref().unwrap_or("?")
        ));
    }
    Ok(files)
}

/// The path of a `---`/`+++` header: `None` for `/dev/null`; a tab and what
/// follows (a timestamp) and surrounding quotes are dropped.
fn header_path(raw: &str) -> Option<String> {
    let path = raw.split('\t').next().unwrap_or(raw).trim();
    let path = path.trim_matches('"');
    (path != "/dev/null").then(|| path.to_string())
}

/// `@@ -12,5 +12,6 @@ …` → (12, 5, 6); a missing count is 1.
fn parse_hunk_header(line: &str) -> Result<(usize, usize, usize), String> {
    let bad = || format!("malformed hunk header `{line}` (expected `@@ -12,5 +12,6 @@`)");
    let inner = line.trim_start_matches('@').trim_start();
    let mut parts = inner.split_whitespace();
    let old = parts
        .next()
        .and_then(|p| p.strip_prefix('-'))
        .ok_or_else(bad)?;
    let new = parts
        .next()
        .and_then(|p| p.strip_prefix('+'))
        .ok_or_else(bad)?;
    let range = |r: &str| -> Result<(usize, usize), String> {
        let (start, len) = r.split_once(',').unwrap_or((r, "1"));
        Ok((
            start.parse().map_err(|_| bad())?,
            len.parse().map_err(|_| bad())?,
        ))
    };
    let (old_start, old_len) = range(old)?;
    let (_, new_len) = range(new)?;
    Ok((old_start, old_len, new_len))
}

/// Parses the `*** Begin Patch` … `*** End Patch` format (`*** Update File:`,
/// `*** Add File:`, `*** Delete File:`, `*** Move to:`, `@@ anchor` chunks).
fn parse_begin_patch(lines: &[&str]) -> Result<Vec<FilePatch>, String> {
    let mut files: Vec<FilePatch> = Vec::new();
    let mut adding = false;
    for raw in lines {
        let trimmed = raw.trim_end();
        if trimmed == "*** Begin Patch" || trimmed == "*** End of File" {
            continue;
        }
        if trimmed == "*** End Patch" {
            break;
        }
        if let Some(p) = trimmed.strip_prefix("*** Update File:") {
            let p = p.trim().to_string();
            files.push(FilePatch {
                old_path: Some(p.clone()),
                new_path: Some(p),
                hunks: Vec::new(),
            });
            adding = false;
            continue;
        }
        if let Some(p) = trimmed.strip_prefix("*** Add File:") {
            files.push(FilePatch {
                old_path: None,
                new_path: Some(p.trim().to_string()),
                hunks: vec![new_chunk("*** Add File", None)],
            });
            adding = true;
            continue;
        }
        if let Some(p) = trimmed.strip_prefix("*** Delete File:") {
            files.push(FilePatch {
                old_path: Some(p.trim().to_string()),
                new_path: None,
                hunks: Vec::new(),
            });
            adding = false;
            continue;
        }
        let Some(file) = files.last_mut() else {
            if trimmed.is_empty() {
                continue;
            }
            return Err(format!(
                "unexpected line before any `*** Update File:`: `{raw}`"
            ));
        };
        if let Some(p) = trimmed.strip_prefix("*** Move to:") {
            file.new_path = Some(p.trim().to_string());
            continue;
        }
        if let Some(anchor) = trimmed.strip_prefix("@@") {
            let anchor = anchor.trim();
            let anchor = (!anchor.is_empty()).then(|| anchor.to_string());
            file.hunks.push(new_chunk(trimmed, anchor));
            continue;
        }
        if file.hunks.is_empty() {
            file.hunks.push(new_chunk("@@", None));
        }
        let Some(hunk) = file.hunks.last_mut() else {
            continue;
        };
        let line = if let Some(rest) = raw.strip_prefix('+') {
            Line::Add(rest.to_string())
        } else if adding {
            return Err(format!(
                "in `*** Add File`, every line must start with `+`: `{raw}`"
            ));
        } else if let Some(rest) = raw.strip_prefix('-') {
            Line::Remove(rest.to_string())
        } else if let Some(rest) = raw.strip_prefix(' ') {
            Line::Context(rest.to_string())
        } else if raw.is_empty() {
            Line::Context(String::new())
        } else {
            return Err(format!(
                "unexpected line in the patch of {}: `{raw}` (lines start with ` `, `-` or `+`)",
                file.new_path.as_deref().unwrap_or("?")
            ));
        };
        hunk.lines.push(line);
    }
    // Drop empty context lines trailing a chunk (blank lines between files).
    for file in &mut files {
        for hunk in &mut file.hunks {
            while matches!(hunk.lines.last(), Some(Line::Context(c)) if c.is_empty()) {
                hunk.lines.pop();
            }
        }
        file.hunks
            .retain(|h| !h.lines.is_empty() || h.header == "*** Add File");
    }
    if files.is_empty() {
        return Err("the `*** Begin Patch` block changes no file".into());
    }
    Ok(files)
}

fn new_chunk(header: &str, anchor: Option<String>) -> Hunk {
    Hunk {
        header: header.to_string(),
        old_start: None,
        anchor,
        lines: Vec::new(),
        new_no_eol: false,
        old_no_eol: false,
    }
}

/// How strictly lines are compared when placing a hunk.
#[derive(Clone, Copy)]
enum Fuzz {
    Exact,
    TrailingSpace,
    AllSpace,
}

fn same(a: &str, b: &str, fuzz: Fuzz) -> bool {
    match fuzz {
        Fuzz::Exact => a == b,
        Fuzz::TrailingSpace => a.trim_end() == b.trim_end(),
        Fuzz::AllSpace => similar::squash(a) == similar::squash(b),
    }
}

/// The result of applying hunks to a text.
#[derive(Debug, PartialEq, Eq)]
pub struct Applied {
    pub text: String,
    pub added: usize,
    pub removed: usize,
}

/// Applies `hunks` in order to `content`. A hunk goes where its old lines
/// (context and removals) are found, nearest to the line its header names;
/// trailing and then all whitespace differences are tolerated when there is
/// no exact match.
pub fn apply(content: &str, hunks: &[Hunk], shown: &str) -> Result<Applied, String> {
    let crlf = content.contains("\r\n");
    let mut eol_at_end = content.is_empty() || content.ends_with('\n');
    let mut lines: Vec<String> = split_lines(content).into_iter().map(String::from).collect();
    let mut min_pos = 0usize;
    let mut offset: isize = 0;
    let (mut added, mut removed) = (0, 0);
    for (n, hunk) in hunks.iter().enumerate() {
        let old: Vec<&str> = hunk
            .lines
            .iter()
            .filter_map(|l| match l {
                Line::Context(s) | Line::Remove(s) => Some(s.as_str()),
                Line::Add(_) => None,
            })
            .collect();
        let mut from = min_pos;
        if let Some(anchor) = &hunk.anchor {
            let found = (from..lines.len()).find(|&i| lines[i].trim() == anchor.trim());
            let found =
                found.or_else(|| (from..lines.len()).find(|&i| lines[i].contains(anchor.trim())));
            match found {
                Some(i) => from = i + 1,
                None => {
                    return Err(format!(
                        "hunk {} of {shown} does not apply: its anchor line `{anchor}` was not found{}",
                        n + 1,
                        after(from)
                    ));
                }
            }
        }
        let expected = match hunk.old_start {
            Some(s) if old.is_empty() => (s as isize + offset).max(0) as usize,
            Some(s) => (s as isize - 1 + offset).max(0) as usize,
            None if old.is_empty() => lines.len(),
            None => from,
        };
        let pos = if old.is_empty() {
            Some(expected.clamp(from, lines.len()))
        } else {
            [Fuzz::Exact, Fuzz::TrailingSpace, Fuzz::AllSpace]
                .iter()
                .find_map(|&fuzz| find_block(&lines, &old, from, expected, fuzz))
        };
        let Some(pos) = pos else {
            return Err(not_applying(n, hunk, &lines, &old, from, shown));
        };
        // Context lines keep the file's text; additions come from the patch.
        let mut replacement = Vec::new();
        let mut k = pos;
        for l in &hunk.lines {
            match l {
                Line::Context(_) => {
                    replacement.push(lines[k].clone());
                    k += 1;
                }
                Line::Remove(_) => {
                    k += 1;
                    removed += 1;
                }
                Line::Add(s) => {
                    replacement.push(s.clone());
                    added += 1;
                }
            }
        }
        let touches_end = pos + old.len() == lines.len();
        let new_len = replacement.len();
        lines.splice(pos..pos + old.len(), replacement);
        if touches_end {
            if hunk.new_no_eol {
                eol_at_end = false;
            } else if hunk.old_no_eol {
                eol_at_end = true;
            }
        }
        min_pos = pos + new_len;
        offset += new_len as isize - old.len() as isize;
    }
    let sep = if crlf { "\r\n" } else { "\n" };
    let mut text = lines.join(sep);
    if eol_at_end && !lines.is_empty() {
        text.push_str(sep);
    }
    Ok(Applied {
        text,
        added,
        removed,
    })
}

fn after(from: usize) -> String {
    if from > 0 {
        format!(" after line {from}")
    } else {
        String::new()
    }
}

/// Where `block` occurs in `lines` at or after `from`, nearest to `expected`.
fn find_block(
    lines: &[String],
    block: &[&str],
    from: usize,
    expected: usize,
    fuzz: Fuzz,
) -> Option<usize> {
    if block.len() > lines.len() {
        return None;
    }
    (from..=lines.len() - block.len())
        .filter(|&p| {
            block
                .iter()
                .enumerate()
                .all(|(i, b)| same(&lines[p + i], b, fuzz))
        })
        .min_by_key(|&p| p.abs_diff(expected))
}

fn not_applying(
    n: usize,
    hunk: &Hunk,
    lines: &[String],
    old: &[&str],
    from: usize,
    shown: &str,
) -> String {
    let mut msg = format!(
        "hunk {} of {shown} (`{}`) does not apply: its context and removed lines were not found{}. \
         The hunk expects:\n{}",
        n + 1,
        hunk.header,
        after(from),
        old.iter()
            .take(30)
            .map(|l| format!("  {l}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    if let Some(near) = similar::most_similar(&refs, old, 1, 0.5).first() {
        msg.push_str(&format!(
            "\nThe most similar lines of the file ({:.0}% similar):\n{}",
            near.score * 100.0,
            similar::excerpt(&refs, near.start, near.len, 30)
        ));
    }
    msg.push_str("\nNothing was changed. Read the file and make the patch match its current text.");
    msg
}

/// What applying a patch does to one file.
enum Change {
    Write {
        target: Target,
        text: String,
        created: bool,
    },
    Delete {
        target: Target,
    },
}

/// Applies a patch to files under `cwd`: every file and hunk must apply,
/// or nothing is written. Returns a summary.
pub fn apply_to_files(
    patch: &str,
    default_path: Option<&str>,
    cwd: Option<&str>,
) -> Result<Value, ToolError> {
    let files = parse(patch, default_path).map_err(ToolError::invalid)?;
    // Current (possibly already patched) contents, for files patched twice.
    let mut state: BTreeMap<PathBuf, Option<String>> = BTreeMap::new();
    let mut changes: Vec<Change> = Vec::new();
    let mut summary = Vec::new();
    for file in &files {
        let old = file.old_path.as_deref().map(|p| strip_git_prefix(p, cwd));
        let new = file.new_path.as_deref().map(|p| strip_git_prefix(p, cwd));
        let (old_t, new_t) = (
            old.as_deref().map(|p| paths::resolve(p, cwd)).transpose()?,
            new.as_deref().map(|p| paths::resolve(p, cwd)).transpose()?,
        );
        let Some(source) = old_t.as_ref().or(new_t.as_ref()) else {
            return Err(ToolError::invalid(
                "a file in the patch is /dev/null on both sides",
            ));
        };
        let current = match state.get(&source.full) {
            Some(c) => c.clone(),
            None => read_existing(source)?,
        };
        let content = match (&old_t, current) {
            (Some(_), Some(c)) => c,
            (Some(t), None) => {
                return Err(ToolError::failed(format!(
                    "cannot patch {}: no such file{}",
                    t.shown,
                    paths::similar_names_hint(t)
                )));
            }
            (None, Some(c)) if !c.is_empty() => {
                return Err(ToolError::invalid(format!(
                    "the patch creates {}, but it already exists",
                    source.shown
                )));
            }
            (None, _) => String::new(),
        };
        let applied = apply(&content, &file.hunks, &source.shown).map_err(ToolError::invalid)?;
        let hunks = file.hunks.len();
        let (added, removed) = (applied.added, applied.removed);
        match (&old_t, &new_t) {
            (Some(o), None) => {
                if !applied.text.is_empty() && hunks > 0 {
                    return Err(ToolError::invalid(format!(
                        "the patch deletes {} but its hunks do not remove all of its lines",
                        o.shown
                    )));
                }
                state.insert(o.full.clone(), None);
                changes.push(Change::Delete { target: o.clone() });
                summary.push(json!({"path": o.shown, "status": "deleted", "removed": split_lines(&content).len()}));
            }
            (old_t, Some(n)) => {
                let renamed = old_t.as_ref().filter(|o| o.full != n.full);
                if let Some(o) = renamed {
                    state.insert(o.full.clone(), None);
                    changes.push(Change::Delete { target: o.clone() });
                }
                let created = old_t.is_none() || (renamed.is_some() && !n.full.exists());
                state.insert(n.full.clone(), Some(applied.text.clone()));
                changes.push(Change::Write {
                    target: n.clone(),
                    text: applied.text,
                    created,
                });
                let status = match (old_t, renamed) {
                    (None, _) => "created".to_string(),
                    (Some(_), Some(o)) => format!("renamed from {}", o.shown),
                    _ => "modified".to_string(),
                };
                summary.push(json!({"path": n.shown, "status": status, "hunks": hunks, "added": added, "removed": removed}));
            }
            (None, None) => {}
        }
    }
    commit(&changes)?;
    let text: Vec<String> = summary
        .iter()
        .map(|s| {
            let path = s["path"].as_str().unwrap_or("?");
            match s["status"].as_str() {
                Some("deleted") => format!("{path}: deleted"),
                Some(status) => format!(
                    "{path}: {status}, +{} -{}",
                    s["added"].as_u64().unwrap_or(0),
                    s["removed"].as_u64().unwrap_or(0)
                ),
                None => path.to_string(),
            }
        })
        .collect();
    Ok(json!({ "files": summary, "summary": text.join("; ") }))
}

/// `a/src/x.rs` → `src/x.rs` (git's prefixes), unless the prefixed path exists.
fn strip_git_prefix(path: &str, cwd: Option<&str>) -> String {
    let Some(stripped) = path.strip_prefix("a/").or_else(|| path.strip_prefix("b/")) else {
        return path.to_string();
    };
    let exists = paths::resolve(path, cwd).is_ok_and(|t| t.full.exists());
    if exists {
        path.to_string()
    } else {
        stripped.to_string()
    }
}

/// The text of an existing file, `None` when it does not exist.
fn read_existing(target: &Target) -> Result<Option<String>, ToolError> {
    if crate::files::existing("patch", target)?.is_none() {
        return Ok(None);
    }
    crate::buffers::read_text("patch", target).map(Some)
}

/// Performs the changes; on a failure, restores what was already changed.
fn commit(changes: &[Change]) -> Result<(), ToolError> {
    let mut undo: Vec<(&Target, Option<Vec<u8>>)> = Vec::new();
    for change in changes {
        let result = match change {
            Change::Write {
                target,
                text,
                created,
            } => {
                // Checked before anything opens it: reading a FIFO would block.
                crate::files::existing("write", target).and_then(|meta| {
                    undo.push((target, crate::buffers::snapshot(target)));
                    if *created && let Some(parent) = target.full.parent() {
                        let _ = std::fs::create_dir_all(parent);
                    }
                    crate::buffers::write_text(target, text, meta.as_ref()).map(|_| ())
                })
            }
            Change::Delete { target } => {
                let regular = std::fs::metadata(&target.full).is_ok_and(|m| m.is_file());
                undo.push((
                    target,
                    regular.then(|| crate::buffers::snapshot(target)).flatten(),
                ));
                std::fs::remove_file(&target.full)
                    .map_err(|e| paths::io_error("delete", target, &e))
            }
        };
        if let Err(e) = result {
            for (target, before) in undo.into_iter().rev() {
                crate::buffers::restore(target, before);
            }
            return Err(e);
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "diff_tests.rs"]
mod tests;
