//! `search_files`: regex search over file contents, and file name search.

use std::fs::File;
use std::io::Read;

use globset::{Glob, GlobBuilder, GlobMatcher};
use regex::Regex;
use serde_json::{Value, json};
use talaria_plugin_sdk::ToolError;

use crate::paths::{self, Target};
use crate::text::{self, looks_binary, next_line};

/// Files looked at by one search at most.
pub const MAX_FILES: usize = 20_000;
/// Bytes read by one content search at most.
pub const MAX_BYTES: u64 = 256 * 1024 * 1024;
/// Longest line considered for matching (the rest of a line is not searched).
const MAX_MATCH_LINE: usize = 64 * 1024;
/// Longest line shown in results, in characters.
const MAX_SHOWN_CHARS: usize = 300;

/// What `search_files` reports for content matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputMode {
    /// `path:line:text`, with context lines as `path-line-text`.
    Content,
    /// Paths of files with a match.
    FilesWithMatches,
    /// `path:count` of matching lines per file.
    Count,
}

/// A search request, validated.
pub struct Search<'a> {
    pub pattern: &'a str,
    pub root: &'a str,
    pub file_glob: Option<&'a str>,
    pub limit: usize,
    pub offset: usize,
    pub mode: OutputMode,
    pub context: usize,
    pub cwd: Option<&'a str>,
}

/// A glob or name filter over (relative path, file name).
struct NameFilter {
    glob: Option<GlobMatcher>,
    /// Match the glob against the relative path (it has a `/`) or the name.
    on_path: bool,
    substring: Option<String>,
}

impl NameFilter {
    /// A glob when `pattern` has glob characters, else a case-insensitive
    /// substring of the name.
    fn new(pattern: &str, what: &str, force_glob: bool) -> Result<Self, ToolError> {
        let on_path = pattern.contains('/');
        if force_glob || pattern.contains(['*', '?', '[', '{']) {
            let pattern = pattern.strip_prefix("./").unwrap_or(pattern);
            let glob = GlobBuilder::new(pattern)
                .literal_separator(on_path)
                .build()
                .or_else(|_| Glob::new(pattern))
                .map_err(|e| ToolError::invalid(format!("invalid {what} `{pattern}`: {e}")))?;
            return Ok(Self {
                glob: Some(glob.compile_matcher()),
                on_path,
                substring: None,
            });
        }
        Ok(Self {
            glob: None,
            on_path,
            substring: Some(pattern.to_lowercase()),
        })
    }

    fn matches(&self, rel: &str, name: &str) -> bool {
        let subject = if self.on_path { rel } else { name };
        match (&self.glob, &self.substring) {
            (Some(g), _) => g.is_match(subject),
            (None, Some(s)) => subject.to_lowercase().contains(s.as_str()),
            (None, None) => true,
        }
    }
}

/// A file found by the walk.
struct Found {
    full: std::path::PathBuf,
    /// Path relative to the search root, `/`-separated.
    rel: String,
    /// How results show it.
    shown: String,
}

/// Walks the files under `root` (a file or a directory) in name order,
/// skipping hidden files and directories (`.git`, …) and what `.gitignore`
/// and `.ignore` files exclude. Stops after [`MAX_FILES`]; the flag says so.
fn walk(root: &Target, mut visit: impl FnMut(Found) -> bool) -> Result<bool, ToolError> {
    let meta = std::fs::metadata(&root.full).map_err(|e| paths::io_error("search", root, &e))?;
    let shown_root = root.shown.trim_end_matches('/');
    let show = |rel: &str| -> String {
        if shown_root == "." || shown_root.is_empty() {
            rel.to_string()
        } else {
            format!("{shown_root}/{rel}")
        }
    };
    if meta.is_file() {
        let name = root
            .full
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        visit(Found {
            full: root.full.clone(),
            rel: name,
            shown: root.shown.clone(),
        });
        return Ok(false);
    }
    let walker = ignore::WalkBuilder::new(&root.full)
        .hidden(true)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(false)
        .ignore(true)
        .parents(true)
        .require_git(false)
        .follow_links(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .build();
    let mut seen = 0usize;
    for entry in walker.flatten() {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        seen += 1;
        if seen > MAX_FILES {
            return Ok(true);
        }
        let Ok(rel) = entry.path().strip_prefix(&root.full) else {
            continue;
        };
        let rel = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/");
        let shown = show(&rel);
        if !visit(Found {
            full: entry.path().to_path_buf(),
            rel,
            shown,
        }) {
            break;
        }
    }
    Ok(false)
}

fn name_of(rel: &str) -> &str {
    rel.rsplit('/').next().unwrap_or(rel)
}

/// Cuts `text` to [`MAX_SHOWN_CHARS`] characters.
fn shorten(text: &str) -> String {
    match text.char_indices().nth(MAX_SHOWN_CHARS) {
        Some((i, _)) => format!("{}… [{} chars]", &text[..i], text.chars().count()),
        None => text.to_string(),
    }
}

/// Searches file names: `pattern` is a glob (`*.rs`, `src/**/test_*.py`) or a
/// case-insensitive part of the name.
pub fn find_files(s: &Search) -> Result<Value, ToolError> {
    let root = paths::resolve(s.root, s.cwd)?;
    let filter = NameFilter::new(s.pattern, "pattern", false)?;
    let glob = s
        .file_glob
        .map(|g| NameFilter::new(g, "file_glob", true))
        .transpose()?;
    let mut total = 0usize;
    let mut files = Vec::new();
    let capped = walk(&root, |f| {
        let name = name_of(&f.rel);
        if filter.matches(&f.rel, name) && glob.as_ref().is_none_or(|g| g.matches(&f.rel, name)) {
            if total >= s.offset && files.len() < s.limit {
                files.push(f.shown);
            }
            total += 1;
        }
        true
    })?;
    let mut out = page(total, files.len(), s.offset);
    out["files"] = json!(files);
    if capped {
        out["note"] = json!(format!(
            "stopped after {MAX_FILES} files; search a subdirectory with `path` for complete results"
        ));
    }
    Ok(out)
}

/// `total`, `shown`, `offset`, `truncated` and `next_offset` of a page.
fn page(total: usize, shown: usize, offset: usize) -> Value {
    let truncated = offset + shown < total;
    let mut out =
        json!({ "total": total, "shown": shown, "offset": offset, "truncated": truncated });
    if truncated {
        out["next_offset"] = json!(offset + shown);
    }
    out
}

/// Searches file contents with the regex `pattern`.
pub fn grep(s: &Search) -> Result<Value, ToolError> {
    let regex = Regex::new(s.pattern).map_err(|e| {
        ToolError::invalid(format!(
            "invalid regex `{}`: {e}. Escape special characters with `\\` to search for them literally",
            s.pattern
        ))
    })?;
    let root = paths::resolve(s.root, s.cwd)?;
    let glob = s
        .file_glob
        .map(|g| NameFilter::new(g, "file_glob", true))
        .transpose()?;
    let mut state = Grep {
        s,
        regex: &regex,
        out: Vec::new(),
        units: 0,
        matches: 0,
        shown: 0,
        files_searched: 0,
        bytes: 0,
        out_of_budget: false,
        error: None,
    };
    let capped = walk(&root, |f| {
        let name = name_of(&f.rel);
        if glob.as_ref().is_some_and(|g| !g.matches(&f.rel, name)) {
            return true;
        }
        state.file(&f);
        !state.out_of_budget
    })?;
    if let Some(e) = state.error.take()
        && state.files_searched <= 1
    {
        return Err(e);
    }
    let mut out = page(state.units, state.shown, s.offset);
    match s.mode {
        OutputMode::Content => out["output"] = json!(state.out.join("\n")),
        OutputMode::FilesWithMatches => out["files"] = json!(state.out),
        OutputMode::Count => {
            out["output"] = json!(state.out.join("\n"));
            out["total_matches"] = json!(state.matches);
        }
    }
    out["files_searched"] = json!(state.files_searched);
    if capped || state.out_of_budget {
        out["note"] = json!(format!(
            "stopped early (more than {MAX_FILES} files or {} MB read): totals are partial; \
             narrow the search with `path` or `file_glob`",
            MAX_BYTES / (1024 * 1024)
        ));
    }
    Ok(out)
}

/// The running state of a content search.
struct Grep<'a> {
    s: &'a Search<'a>,
    regex: &'a Regex,
    /// Output lines (content and count modes) or paths.
    out: Vec<String>,
    /// Results counted in the unit of paging: matches (content mode) or files.
    units: usize,
    /// Matching lines in all.
    matches: usize,
    /// Results shown.
    shown: usize,
    files_searched: usize,
    bytes: u64,
    out_of_budget: bool,
    /// The error of an unreadable file (reported when it was the only one).
    error: Option<ToolError>,
}

impl Grep<'_> {
    fn wants(&self, unit: usize) -> bool {
        unit >= self.s.offset && self.shown < self.s.limit
    }

    fn file(&mut self, f: &Found) {
        let target = Target {
            full: f.full.clone(),
            shown: f.shown.clone(),
        };
        let mut file = match File::open(&f.full) {
            Ok(file) => file,
            Err(e) => {
                self.error = Some(paths::io_error("read", &target, &e));
                return;
            }
        };
        let mut head = vec![0u8; text::SNIFF_BYTES];
        let n = read_full(&mut file, &mut head);
        head.truncate(n);
        if looks_binary(&head) {
            return;
        }
        self.files_searched += 1;
        let mut reader = std::io::BufReader::with_capacity(64 * 1024, head.as_slice().chain(file));
        let context = if self.s.mode == OutputMode::Content {
            self.s.context
        } else {
            0
        };
        let mut before: std::collections::VecDeque<(usize, String)> = Default::default();
        let mut after_left = 0usize;
        let mut last_emitted = 0usize;
        let mut file_matches = 0usize;
        let mut buf = Vec::new();
        let mut line_no = 0usize;
        loop {
            let len = match next_line(&mut reader, &mut buf, MAX_MATCH_LINE) {
                Ok(Some(len)) => len,
                Ok(None) => break,
                Err(e) => {
                    self.error = Some(paths::io_error("read", &target, &e));
                    break;
                }
            };
            line_no += 1;
            self.bytes += len as u64 + 1;
            if self.bytes > MAX_BYTES {
                self.out_of_budget = true;
                break;
            }
            let line = String::from_utf8_lossy(&buf);
            let is_match = self.regex.is_match(&line);
            if !is_match {
                if after_left > 0 {
                    self.out
                        .push(format!("{}-{line_no}-{}", f.shown, shorten(&line)));
                    last_emitted = line_no;
                    after_left -= 1;
                } else if context > 0 {
                    before.push_back((line_no, line.into_owned()));
                    if before.len() > context {
                        before.pop_front();
                    }
                }
                continue;
            }
            file_matches += 1;
            self.matches += 1;
            match self.s.mode {
                OutputMode::Content => {
                    let unit = self.units;
                    self.units += 1;
                    if self.wants(unit) {
                        let first = before.front().map_or(line_no, |(n, _)| *n);
                        // Groups that do not touch are separated by `--`.
                        let apart = if last_emitted > 0 {
                            first > last_emitted + 1
                        } else {
                            !self.out.is_empty()
                        };
                        if context > 0 && apart {
                            self.out.push("--".into());
                        }
                        for (n, l) in before.drain(..) {
                            self.out.push(format!("{}-{n}-{}", f.shown, shorten(&l)));
                        }
                        self.out
                            .push(format!("{}:{line_no}:{}", f.shown, shorten(&line)));
                        self.shown += 1;
                        last_emitted = line_no;
                        after_left = context;
                    } else {
                        before.clear();
                        after_left = 0;
                    }
                }
                OutputMode::FilesWithMatches => break,
                OutputMode::Count => {}
            }
        }
        if file_matches > 0 && self.s.mode != OutputMode::Content {
            let unit = self.units;
            self.units += 1;
            if self.wants(unit) {
                self.shown += 1;
                self.out.push(match self.s.mode {
                    OutputMode::Count => format!("{}:{file_matches}", f.shown),
                    _ => f.shown.clone(),
                });
            }
        }
    }
}

/// Reads until `buf` is full or the input ends; returns the bytes read.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> usize {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    n
}
