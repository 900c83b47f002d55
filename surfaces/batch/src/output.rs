//! The output directory: `trajectories.jsonl`, one complete line per
//! finished item, and `stats.json`, the summary of every line there.
//!
//! A line is written with one `write` of the whole line on a file opened
//! for appending, and synced; a process killed mid-write can leave at most
//! a cut last line, which the next open (`--resume`) cuts off, so the file
//! only ever holds complete lines. `stats.json` is replaced whole.

use std::collections::HashSet;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::trajectory::{Tokens, Trajectory};

/// The trajectories' file name in the output directory.
pub const TRAJECTORIES: &str = "trajectories.jsonl";
/// The summary's file name.
pub const STATS: &str = "stats.json";

/// Something wrong with the output directory.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    #[error("cannot {what} {}: {source}", path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{} already holds trajectories: pass --resume to go on with them, or choose another --out",
        .0.display()
    )]
    NotEmpty(PathBuf),
    #[error("{}, line {line}: {message}; fix or move the file, nothing was changed", path.display())]
    Corrupt {
        path: PathBuf,
        line: usize,
        message: String,
    },
}

fn io<'a>(what: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> OutputError + 'a {
    move |source| OutputError::Io {
        what,
        path: path.to_owned(),
        source,
    }
}

/// The summary of a batch, from every line written so far.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    /// Items in the prompts file.
    pub items: usize,
    /// Lines whose model gave its answer.
    pub done: usize,
    /// Lines that ended otherwise (error, timeout, budget).
    pub failed: usize,
    /// Items with no line yet (not run, stopped or past the cost cap).
    pub remaining: usize,
    pub tokens: Tokens,
    pub cost_usd: f64,
    /// Time of this run, and the items it finished per second.
    pub seconds: f64,
    pub items_per_second: f64,
    /// Why this run stopped before the end, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
}

/// The output directory of one batch.
#[derive(Debug)]
pub struct Output {
    dir: PathBuf,
    file: File,
    /// Ids with a line, and their totals.
    written: HashSet<String>,
    totals: Stats,
}

impl Output {
    /// Opens `dir` (created if missing). Lines there are kept only with
    /// `resume`; a cut last line is removed.
    pub fn open(dir: &Path, resume: bool) -> Result<Self, OutputError> {
        fs::create_dir_all(dir).map_err(io("create", dir))?;
        let path = dir.join(TRAJECTORIES);
        let text = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(source) => return Err(io("read", &path)(source)),
        };
        if !text.is_empty() && !resume {
            return Err(OutputError::NotEmpty(path));
        }
        // Only whole lines count: anything after the last newline was cut.
        let whole = text
            .iter()
            .rposition(|b| *b == b'\n')
            .map_or(0, |at| at + 1);
        let mut output = Self {
            dir: dir.to_owned(),
            file: OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .map_err(io("open", &path))?,
            written: HashSet::new(),
            totals: Stats::default(),
        };
        for (index, line) in String::from_utf8_lossy(&text[..whole]).lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let trajectory: Trajectory =
                serde_json::from_str(line).map_err(|e| OutputError::Corrupt {
                    path: path.clone(),
                    line: index + 1,
                    message: e.to_string(),
                })?;
            output.count(&trajectory);
        }
        if whole < text.len() {
            output
                .file
                .set_len(whole as u64)
                .map_err(io("repair", &path))?;
        }
        Ok(output)
    }

    /// Whether item `id` has its line.
    pub fn has(&self, id: &str) -> bool {
        self.written.contains(id)
    }

    /// Appends the item's line.
    pub fn write(&mut self, trajectory: &Trajectory) -> Result<(), OutputError> {
        let path = self.dir.join(TRAJECTORIES);
        let mut line = serde_json::to_vec(trajectory).map_err(|e| OutputError::Io {
            what: "encode a line for",
            path: path.clone(),
            source: std::io::Error::other(e),
        })?;
        line.push(b'\n');
        self.file.write_all(&line).map_err(io("write", &path))?;
        self.file.sync_data().map_err(io("sync", &path))?;
        self.count(trajectory);
        Ok(())
    }

    fn count(&mut self, trajectory: &Trajectory) {
        self.written.insert(trajectory.id.clone());
        let totals = &mut self.totals;
        if trajectory.completed {
            totals.done += 1;
        } else {
            totals.failed += 1;
        }
        totals.tokens.input += trajectory.tokens.input;
        totals.tokens.output += trajectory.tokens.output;
        totals.tokens.cache_read += trajectory.tokens.cache_read;
        totals.tokens.cache_write += trajectory.tokens.cache_write;
        totals.cost_usd += trajectory.cost_usd;
    }

    /// The cost of every line so far.
    pub fn cost_usd(&self) -> f64 {
        self.totals.cost_usd
    }

    /// The summary of the lines, for a batch of `items` whose run took
    /// `seconds` and finished `finished` items.
    pub fn stats(&self, items: usize, seconds: f64, finished: usize) -> Stats {
        let written = self.totals.done + self.totals.failed;
        Stats {
            items,
            remaining: items.saturating_sub(written),
            seconds,
            items_per_second: if seconds > 0.0 {
                finished as f64 / seconds
            } else {
                0.0
            },
            ..self.totals.clone()
        }
    }

    /// Replaces `stats.json`.
    pub fn write_stats(&self, stats: &Stats) -> Result<(), OutputError> {
        let path = self.dir.join(STATS);
        let mut text = serde_json::to_vec_pretty(stats).map_err(|e| OutputError::Io {
            what: "encode",
            path: path.clone(),
            source: std::io::Error::other(e),
        })?;
        text.push(b'\n');
        let mut temp = tempfile::NamedTempFile::new_in(&self.dir).map_err(io("write", &path))?;
        temp.write_all(&text).map_err(io("write", &path))?;
        temp.persist(&path)
            .map_err(|e| io("write", &path)(e.error))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::trajectory::ExitReason;

    fn line(id: &str, completed: bool) -> Trajectory {
        Trajectory {
            id: id.into(),
            completed,
            exit: if completed {
                ExitReason::Final
            } else {
                ExitReason::Error
            },
            error: None,
            answer: "a".into(),
            conversations: Vec::new(),
            tools: "[]".into(),
            model: "m".into(),
            tokens: Tokens {
                input: 10,
                output: 5,
                ..Tokens::default()
            },
            cost_usd: 0.25,
            api_calls: 1,
            tool_calls: 0,
            duration_ms: 3,
            session_id: "s".into(),
            source: "talaria".into(),
        }
    }

    #[test]
    fn a_cut_last_line_is_removed_on_resume_and_totals_count_whole_lines() {
        let dir = tempfile::tempdir().unwrap();
        let mut output = Output::open(dir.path(), false).unwrap();
        output.write(&line("1", true)).unwrap();
        output.write(&line("2", false)).unwrap();
        drop(output);
        let path = dir.path().join(TRAJECTORIES);
        let whole = fs::read(&path).unwrap();
        let mut cut = whole.clone();
        cut.extend_from_slice(br#"{"id": "3", "compl"#);
        fs::write(&path, &cut).unwrap();

        let refused = Output::open(dir.path(), false).unwrap_err();
        assert!(refused.to_string().contains("pass --resume"), "{refused}");
        let mut output = Output::open(dir.path(), true).unwrap();
        assert!(output.has("1") && output.has("2") && !output.has("3"));
        assert_eq!(fs::read(&path).unwrap(), whole, "the cut line is gone");
        output.write(&line("3", true)).unwrap();
        let stats = output.stats(5, 2.0, 1);
        assert_eq!((stats.done, stats.failed, stats.remaining), (2, 1, 2));
        assert_eq!(stats.tokens.input, 30);
        assert!((stats.cost_usd - 0.75).abs() < 1e-9);
        assert!((stats.items_per_second - 0.5).abs() < 1e-9);
        output.write_stats(&stats).unwrap();
        let read: Stats =
            serde_json::from_str(&fs::read_to_string(dir.path().join(STATS)).unwrap()).unwrap();
        assert_eq!(read, stats);
        for text in fs::read_to_string(&path).unwrap().lines() {
            serde_json::from_str::<Trajectory>(text).unwrap();
        }
    }

    #[test]
    fn a_broken_whole_line_is_refused_and_the_file_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(TRAJECTORIES);
        fs::write(&path, "{\"id\": 1}\n").unwrap();
        let error = Output::open(dir.path(), true).unwrap_err();
        assert!(error.to_string().contains("line 1"), "{error}");
        assert_eq!(fs::read_to_string(&path).unwrap(), "{\"id\": 1}\n");
    }
}
