//! Talaria plugin `fs`: read, write, patch and search files in the working
//! directory. Tools (names and arguments compatible with Hermes Agent):
//! `read_file`, `write_file`, `patch` and `search_files`.
//!
//! The host grants the working directory (`$CWD`, read-write) and passes its
//! absolute path as `call-context.cwd`; relative paths resolve against it,
//! and paths outside it are refused with a clear message.
//!
//! The logic is plain Rust over `std::fs`, so it is unit-tested natively:
//! `cargo test --manifest-path plugins/Cargo.toml -p talaria-plugin-fs`.

mod buffers;
mod diff;
mod files;
mod paths;
mod replace;
mod search;
mod similar;
#[cfg(test)]
mod testdir;
#[cfg(test)]
mod tests;
mod text;

use std::fs::{self, File};
use std::io::Read;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use talaria_plugin_sdk::{CallContext, Tool, ToolError, ToolFlags};

use crate::paths::Target;
use crate::search::{OutputMode, Search};

/// Default and largest `limit` of `read_file`.
const READ_DEFAULT_LIMIT: u64 = 500;
const READ_MAX_LIMIT: u64 = 2000;
/// Default and largest `limit` of `search_files`.
const SEARCH_DEFAULT_LIMIT: u64 = 50;
const SEARCH_MAX_LIMIT: u64 = 1000;
/// Largest `context` of `search_files`.
const SEARCH_MAX_CONTEXT: u64 = 20;

fn cwd(ctx: &CallContext) -> Option<&str> {
    ctx.cwd.as_deref()
}

// ---------------------------------------------------------------- read_file

#[derive(Deserialize, JsonSchema)]
pub struct ReadFileArgs {
    /// Path of the file, relative to the working directory or absolute.
    pub path: String,
    /// Line number to start reading from (1-based; default 1).
    pub offset: Option<u64>,
    /// Maximum number of lines to return (default 500, at most 2000).
    pub limit: Option<u64>,
}

/// `read_file`.
#[derive(Default)]
pub struct ReadFile;

impl Tool for ReadFile {
    const NAME: &'static str = "read_file";
    const DESCRIPTION: &'static str = "Read a text file with line numbers. Returns up to `limit` \
        lines (default 500) starting at line `offset` (1-based), each prefixed with its line \
        number and a tab, plus `total_lines`; when `truncated` is true, call again with \
        `offset` = `next_offset` to continue. Very long lines are cut. Binary files are \
        refused. Use search_files to find files or text first.";
    type Args = ReadFileArgs;

    fn flags() -> ToolFlags {
        ToolFlags::read_only().with_path_argument("path")
    }

    fn call(&self, args: ReadFileArgs, ctx: &CallContext) -> Result<Value, ToolError> {
        let target = paths::resolve(&args.path, cwd(ctx))?;
        let offset = args.offset.unwrap_or(1).max(1);
        let limit = args.limit.unwrap_or(READ_DEFAULT_LIMIT);
        if limit == 0 {
            return Err(ToolError::invalid("limit must be at least 1"));
        }
        let limit = limit.min(READ_MAX_LIMIT);
        read_file(&target, offset as usize, limit as usize)
    }
}

fn read_file(target: &Target, offset: usize, limit: usize) -> Result<Value, ToolError> {
    let meta = fs::metadata(&target.full).map_err(|e| paths::io_error("read", target, &e))?;
    if meta.is_dir() {
        return Err(ToolError::failed(format!(
            "cannot read {}: it is a directory{}",
            target.shown,
            dir_listing(target)
        )));
    }
    files::ensure_regular("read", target, &meta)?;
    let mut file: Box<dyn Read> = match buffers::editor_text(target)? {
        Some(text) => Box::new(std::io::Cursor::new(text.into_bytes())),
        None => {
            Box::new(File::open(&target.full).map_err(|e| paths::io_error("open", target, &e))?)
        }
    };
    let mut head = vec![0u8; text::SNIFF_BYTES];
    let mut n = 0;
    while n < head.len() {
        match file.read(&mut head[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(paths::io_error("read", target, &e)),
        }
    }
    head.truncate(n);
    if text::looks_binary(&head) {
        return Err(ToolError::failed(format!(
            "cannot read {}: it looks like a binary file (it has NUL bytes; {} bytes in all)",
            target.shown,
            meta.len()
        )));
    }
    let mut reader = std::io::BufReader::with_capacity(64 * 1024, head.as_slice().chain(file));
    let w = text::read_window(&mut reader, offset, limit, text::MAX_OUTPUT_BYTES)
        .map_err(|e| paths::io_error("read", target, &e))?;
    if w.shown == 0 && w.counted > 0 {
        return Err(ToolError::invalid(format!(
            "offset {offset} is past the end of {} ({} lines)",
            target.shown, w.counted
        )));
    }
    let mut out = json!({
        "path": target.shown,
        "content": w.content,
        "total_lines": w.total_lines,
        "truncated": w.more,
    });
    if w.more {
        let next = offset + w.shown;
        out["next_offset"] = json!(next);
        let of = match w.total_lines {
            Some(t) => format!(" of {t}"),
            None => format!(
                " (the file, {} bytes, is too large to count its lines)",
                meta.len()
            ),
        };
        out["hint"] = json!(format!(
            "Showing lines {offset}-{}{of}. Use offset={next} to read more.",
            next - 1
        ));
    }
    if w.counted == 0 {
        out["hint"] = json!("The file is empty.");
    }
    if w.long_lines > 0 {
        out["long_lines_cut"] = json!(w.long_lines);
    }
    Ok(out)
}

/// "; it contains: a, b/, …" for a directory that lists.
fn dir_listing(target: &Target) -> String {
    let Ok(entries) = fs::read_dir(&target.full) else {
        return String::new();
    };
    let mut names: Vec<String> = entries
        .take(200)
        .filter_map(|e| {
            let e = e.ok()?;
            let name = e.file_name().into_string().ok()?;
            let dir = e.file_type().is_ok_and(|t| t.is_dir());
            Some(if dir { format!("{name}/") } else { name })
        })
        .collect();
    names.sort();
    let more = names.len() > 50;
    names.truncate(50);
    format!(
        "; it contains: {}{} (use search_files with target \"files\" to find files)",
        names.join(", "),
        if more { ", …" } else { "" }
    )
}

// --------------------------------------------------------------- write_file

#[derive(Deserialize, JsonSchema)]
pub struct WriteFileArgs {
    /// Path of the file, relative to the working directory or absolute.
    pub path: String,
    /// The complete new content of the file.
    pub content: String,
}

/// `write_file`.
#[derive(Default)]
pub struct WriteFile;

impl Tool for WriteFile {
    const NAME: &'static str = "write_file";
    const DESCRIPTION: &'static str = "Write a file: creates it (and missing parent \
        directories) or replaces its whole content. For changes to part of an existing file \
        use patch instead.";
    type Args = WriteFileArgs;

    fn flags() -> ToolFlags {
        ToolFlags::default().with_path_argument("path")
    }

    fn call(&self, args: WriteFileArgs, ctx: &CallContext) -> Result<Value, ToolError> {
        let target = paths::resolve(&args.path, cwd(ctx))?;
        write_file(&target, &args.content)
    }
}

fn write_file(target: &Target, content: &str) -> Result<Value, ToolError> {
    let meta = match fs::metadata(&target.full) {
        Ok(m) if m.is_dir() => {
            return Err(ToolError::failed(format!(
                "cannot write {}: it is a directory",
                target.shown
            )));
        }
        Ok(m) => {
            files::ensure_regular("write", target, &m)?;
            Some(m)
        }
        Err(_) => None,
    };
    let existed = meta.is_some();
    if let Some(parent) = target.full.parent()
        && !parent.as_os_str().is_empty()
    {
        fs::create_dir_all(parent).map_err(|e| {
            let parent_target = Target {
                full: parent.to_path_buf(),
                shown: format!("the parent directory of {}", target.shown),
            };
            paths::io_error("create", &parent_target, &e)
        })?;
    }
    let written = buffers::write_text(target, content, meta.as_ref())?;
    let mut out = json!({
        "path": target.shown,
        "bytes_written": content.len(),
        "lines": replace::split_lines(content).len(),
        "created": !existed,
    });
    if let Some(note) = written.note(&target.shown) {
        out["note"] = json!(note);
    }
    Ok(out)
}

// -------------------------------------------------------------------- patch

#[derive(Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum PatchMode {
    /// Replace `old_string` with `new_string` in the file `path`.
    Replace,
    /// Apply the unified diff in `patch`.
    Patch,
}

#[derive(Deserialize, JsonSchema)]
pub struct PatchArgs {
    /// "replace" (exact string replacement in one file) or "patch" (apply a unified diff).
    pub mode: PatchMode,
    /// The file to edit (mode "replace"; for mode "patch", the file for a diff without
    /// ---/+++ headers).
    pub path: Option<String>,
    /// Mode "replace": the exact text to replace, including whitespace and indentation. It
    /// must occur exactly once unless replace_all is true; include surrounding lines to make
    /// it unique.
    pub old_string: Option<String>,
    /// Mode "replace": the replacement text ("" deletes old_string).
    pub new_string: Option<String>,
    /// Mode "replace": replace every occurrence instead of exactly one (default false).
    pub replace_all: Option<bool>,
    /// Mode "patch": a unified diff (---/+++ file headers, @@ hunks with context lines) for
    /// one or more files. Every hunk must apply or nothing is changed.
    pub patch: Option<String>,
}

/// `patch`.
#[derive(Default)]
pub struct Patch;

impl Tool for Patch {
    const NAME: &'static str = "patch";
    const DESCRIPTION: &'static str = "Edit files. Mode \"replace\": replace old_string with \
        new_string in the file `path`; old_string must match the file exactly (whitespace \
        included) and occur once, unless replace_all is true. When it does not match, the \
        error shows the closest lines of the file. Mode \"patch\": apply a unified diff \
        (`--- a/file`, `+++ b/file`, `@@ -l,n +l,n @@` hunks with context) to one or more \
        files, creating (--- /dev/null) or deleting (+++ /dev/null) files; all hunks must \
        apply or nothing changes. Returns a short diff or summary of the change.";
    type Args = PatchArgs;

    fn flags() -> ToolFlags {
        ToolFlags::default().with_path_argument("path")
    }

    fn call(&self, args: PatchArgs, ctx: &CallContext) -> Result<Value, ToolError> {
        match args.mode {
            PatchMode::Replace => {
                let Some(path) = args.path.as_deref() else {
                    return Err(ToolError::invalid("mode \"replace\" needs `path`"));
                };
                let Some(old) = args.old_string.as_deref() else {
                    return Err(ToolError::invalid("mode \"replace\" needs `old_string`"));
                };
                let Some(new) = args.new_string.as_deref() else {
                    return Err(ToolError::invalid(
                        "mode \"replace\" needs `new_string` (\"\" to delete old_string)",
                    ));
                };
                let target = paths::resolve(path, cwd(ctx))?;
                replace_in_file(&target, old, new, args.replace_all.unwrap_or(false))
            }
            PatchMode::Patch => {
                let Some(patch) = args.patch.as_deref().filter(|p| !p.trim().is_empty()) else {
                    return Err(ToolError::invalid(
                        "mode \"patch\" needs `patch` (a unified diff)",
                    ));
                };
                diff::apply_to_files(patch, args.path.as_deref(), cwd(ctx))
            }
        }
    }
}

fn replace_in_file(target: &Target, old: &str, new: &str, all: bool) -> Result<Value, ToolError> {
    let meta = fs::metadata(&target.full).map_err(|e| paths::io_error("read", target, &e))?;
    files::ensure_regular("edit", target, &meta)?;
    let content = buffers::read_text("edit", target)?;
    let done = replace::replace(&content, old, new, all, &target.shown)?;
    let written = buffers::write_text(target, &done.text, Some(&meta))?;
    let mut out = json!({
        "path": target.shown,
        "replacements": done.count,
        "diff": done.diff,
    });
    if let Some(note) = written.note(&target.shown) {
        out["note"] = json!(note);
    }
    Ok(out)
}

// ------------------------------------------------------------- search_files

#[derive(Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SearchTarget {
    /// Search inside files (regex).
    Content,
    /// Search file names (glob or part of the name).
    Files,
}

#[derive(Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OutputModeArg {
    /// Matching lines as path:line:text.
    Content,
    /// Only the paths of files with a match.
    FilesWithMatches,
    /// The number of matching lines per file.
    Count,
}

#[derive(Deserialize, JsonSchema)]
pub struct SearchFilesArgs {
    /// target "content": a regular expression (Rust regex syntax; `(?i)` for case-insensitive).
    /// target "files": a glob such as "*.rs" or "src/**/test_*.py", or a part of the file name.
    pub pattern: String,
    /// "content" (default): search inside files; "files": search file names.
    pub target: Option<SearchTarget>,
    /// Directory (or file) to search, relative to the working directory (default ".").
    pub path: Option<String>,
    /// Only search files whose name matches this glob, e.g. "*.py" (a glob with "/" matches the
    /// path relative to `path`).
    pub file_glob: Option<String>,
    /// Maximum results to return (default 50).
    pub limit: Option<u64>,
    /// Results to skip, for paging (default 0).
    pub offset: Option<u64>,
    /// target "content": "content" (default; path:line:text), "files_with_matches" or "count".
    pub output_mode: Option<OutputModeArg>,
    /// target "content", output_mode "content": lines of context before and after each match
    /// (default 0).
    pub context: Option<u64>,
}

/// `search_files`.
#[derive(Default)]
pub struct SearchFiles;

impl Tool for SearchFiles {
    const NAME: &'static str = "search_files";
    const DESCRIPTION: &'static str = "Search the working directory. target \"content\" \
        (default): regex search inside files, returning `path:line:text` lines (with `context` \
        lines around each match), or only file paths (output_mode \"files_with_matches\"), or \
        counts per file (\"count\"). target \"files\": find files by glob (\"*.rs\", \
        \"src/**/*.py\") or by part of the name. Hidden files and directories (.git, …), \
        .gitignore'd files and binary files are skipped. Results are paged: `total` counts \
        all results; when `truncated` is true, call again with `offset` = `next_offset`.";
    type Args = SearchFilesArgs;

    fn flags() -> ToolFlags {
        ToolFlags::read_only().with_path_argument("path")
    }

    fn call(&self, args: SearchFilesArgs, ctx: &CallContext) -> Result<Value, ToolError> {
        if args.pattern.is_empty() {
            return Err(ToolError::invalid("pattern is empty"));
        }
        let limit = args.limit.unwrap_or(SEARCH_DEFAULT_LIMIT);
        if limit == 0 {
            return Err(ToolError::invalid("limit must be at least 1"));
        }
        let search = Search {
            pattern: &args.pattern,
            root: args.path.as_deref().unwrap_or("."),
            file_glob: args.file_glob.as_deref().filter(|g| !g.is_empty()),
            limit: limit.min(SEARCH_MAX_LIMIT) as usize,
            offset: args.offset.unwrap_or(0) as usize,
            mode: match args.output_mode.unwrap_or(OutputModeArg::Content) {
                OutputModeArg::Content => OutputMode::Content,
                OutputModeArg::FilesWithMatches => OutputMode::FilesWithMatches,
                OutputModeArg::Count => OutputMode::Count,
            },
            context: args.context.unwrap_or(0).min(SEARCH_MAX_CONTEXT) as usize,
            cwd: cwd(ctx),
        };
        match args.target.unwrap_or(SearchTarget::Content) {
            SearchTarget::Content => search::grep(&search),
            SearchTarget::Files => search::find_files(&search),
        }
    }
}

talaria_plugin_sdk::export_tools!(ReadFile, WriteFile, Patch, SearchFiles);
