//! Keeps tool results within budget. A result over the per-result limit, or
//! the largest results of a turn over the per-turn limit, become a head and
//! tail preview; the full output is saved to a file whose path the preview
//! names, so nothing the tool produced is lost.

use std::path::{Path, PathBuf};

use talaria_kernel::ToolResult;

/// Size limits for tool results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResultBudget {
    /// Most bytes of one result.
    pub max_bytes: usize,
    /// Most lines of one result.
    pub max_lines: usize,
    /// Most bytes of all results of one turn together.
    pub turn_bytes: usize,
}

impl Default for ResultBudget {
    fn default() -> Self {
        Self {
            max_bytes: 50_000,
            max_lines: 2_000,
            turn_bytes: 200_000,
        }
    }
}

/// How much of a spilled result stays in the conversation.
#[derive(Debug, Clone, Copy)]
struct Preview {
    head_bytes: usize,
    head_lines: usize,
    tail_bytes: usize,
    tail_lines: usize,
}

impl ResultBudget {
    fn preview(&self) -> Preview {
        Preview {
            head_bytes: self.max_bytes / 5,
            head_lines: (self.max_lines / 10).max(1),
            tail_bytes: self.max_bytes / 10,
            tail_lines: (self.max_lines / 20).max(1),
        }
    }

    fn over(&self, content: &str) -> bool {
        content.len() > self.max_bytes || content.lines().count() > self.max_lines
    }

    /// Applies the per-result and then the per-turn limit to one turn's
    /// results; spilled outputs go to `spill_dir/<call id>.txt`.
    pub fn apply(&self, results: &mut [ToolResult], spill_dir: &Path) {
        let preview = self.preview();
        let mut spilled = vec![false; results.len()];
        for (result, done) in results.iter_mut().zip(spilled.iter_mut()) {
            if self.over(&result.content) {
                spill(result, spill_dir, preview);
                *done = true;
            }
        }
        // Over the turn's budget: shrink the largest remaining results first,
        // to a small preview each.
        let small = Preview {
            head_bytes: preview.head_bytes / 4,
            head_lines: (preview.head_lines / 4).max(1),
            tail_bytes: preview.tail_bytes / 4,
            tail_lines: (preview.tail_lines / 4).max(1),
        };
        loop {
            let total: usize = results.iter().map(|r| r.content.len()).sum();
            if total <= self.turn_bytes {
                break;
            }
            let largest = results
                .iter()
                .enumerate()
                .filter(|(i, _)| !spilled[*i])
                .max_by_key(|(_, r)| r.content.len())
                .map(|(i, _)| i);
            let Some(index) = largest else { break };
            spilled[index] = true;
            spill(&mut results[index], spill_dir, small);
        }
    }
}

/// Replaces `result`'s content by a preview and saves the full text.
fn spill(result: &mut ToolResult, dir: &Path, preview: Preview) {
    let full = std::mem::take(&mut result.content);
    let path = dir.join(format!("{}.txt", file_name(&result.call_id)));
    let saved = save_private(dir, &path, &full);
    let lines = full.lines().count();
    let head = head(&full, preview.head_bytes, preview.head_lines);
    let tail = tail(&full[head.len()..], preview.tail_bytes, preview.tail_lines);
    let omitted = &full[head.len()..full.len() - tail.len()];
    let note = match saved {
        Ok(()) => format!(
            "[… {} bytes / {} lines omitted; the full output ({} bytes, {lines} lines) is saved at {} …]",
            omitted.len(),
            omitted.lines().count(),
            full.len(),
            path.display()
        ),
        Err(error) => format!(
            "[… {} bytes / {} lines omitted; the full output could not be saved ({}: {error}) …]",
            omitted.len(),
            omitted.lines().count(),
            path.display()
        ),
    };
    result.content = format!("{head}\n{note}\n{tail}");
}

/// Writes a spilled output readable by its owner only (0600 in a 0700
/// directory, whatever the umask): tool output is as private as the transcript.
fn save_private(dir: &Path, path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    }
    builder.create(dir)?;
    options.open(path)?.write_all(text.as_bytes())
}

/// A file name made only of safe characters.
fn file_name(call_id: &str) -> String {
    let name: String = call_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(100)
        .collect();
    if name.is_empty() { "call".into() } else { name }
}

/// The longest prefix of at most `bytes` bytes and `lines` lines, cut at a
/// line end when there is one.
fn head(text: &str, bytes: usize, lines: usize) -> &str {
    let mut end = floor_char_boundary(text, bytes.min(text.len()));
    if let Some((at, _)) = text[..end].match_indices('\n').nth(lines.saturating_sub(1)) {
        end = at;
    } else if end < text.len()
        && let Some(at) = text[..end].rfind('\n')
    {
        end = at;
    }
    &text[..end]
}

/// The longest suffix of at most `bytes` bytes and `lines` lines, starting at
/// a line start when there is one.
fn tail(text: &str, bytes: usize, lines: usize) -> &str {
    let mut start = ceil_char_boundary(text, text.len().saturating_sub(bytes));
    let trimmed = text.trim_end_matches('\n');
    if let Some((at, _)) = trimmed[start.min(trimmed.len())..]
        .rmatch_indices('\n')
        .nth(lines.saturating_sub(1))
    {
        start += at + 1;
    } else if start > 0
        && let Some(at) = text[start..].find('\n')
    {
        start += at + 1;
    }
    &text[start.min(text.len())..]
}

fn floor_char_boundary(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn ceil_char_boundary(text: &str, mut at: usize) -> usize {
    while at < text.len() && !text.is_char_boundary(at) {
        at += 1;
    }
    at
}

/// Where a session's spilled outputs go.
pub(crate) fn spill_dir(root: &Path, session_id: &str) -> PathBuf {
    root.join(file_name(session_id)).join("tool-output")
}

#[cfg(test)]
mod tests {
    use super::*;
    use talaria_kernel::ToolCall;

    fn result(id: &str, content: String) -> ToolResult {
        let call = ToolCall {
            id: id.into(),
            name: "t".into(),
            arguments: "{}".into(),
        };
        ToolResult::ok(&call, content)
    }

    fn numbered(lines: usize) -> String {
        (1..=lines).map(|i| format!("line {i}\n")).collect()
    }

    #[test]
    fn small_results_are_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let mut results = [result("a", "short".into())];
        ResultBudget::default().apply(&mut results, dir.path());
        assert_eq!(results[0].content, "short");
        assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());
    }

    #[test]
    fn long_results_keep_head_and_tail_and_spill_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let full = numbered(5_000);
        let mut results = [result("call/1", full.clone())];
        ResultBudget::default().apply(&mut results, dir.path());
        let text = &results[0].content;
        assert!(text.starts_with("line 1\nline 2\n"), "{}", &text[..40]);
        assert!(text.trim_end().ends_with("line 5000"), "the tail is kept");
        assert!(text.lines().count() <= 2_000 / 10 + 2_000 / 20 + 1);
        let saved = dir.path().join("call_1.txt");
        assert!(text.contains(&saved.display().to_string()), "{text}");
        assert_eq!(
            std::fs::read_to_string(saved).unwrap(),
            full,
            "nothing lost"
        );
    }

    #[test]
    fn one_huge_line_is_cut_by_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let line = "é".repeat(60_000);
        let mut results = [result("x", line.clone())];
        ResultBudget::default().apply(&mut results, dir.path());
        assert!(results[0].content.len() < 20_000);
        assert_eq!(
            std::fs::read_to_string(dir.path().join("x.txt")).unwrap(),
            line
        );
    }

    #[test]
    fn a_turn_over_its_budget_shrinks_the_largest_results() {
        let dir = tempfile::tempdir().unwrap();
        let budget = ResultBudget {
            max_bytes: 50_000,
            max_lines: 2_000,
            turn_bytes: 100_000,
        };
        let big = "x".repeat(45_000) + "\n";
        let mut results = [
            result("a", big.clone()),
            result("b", big.clone()),
            result("c", big.clone()),
            result("d", "small".into()),
        ];
        budget.apply(&mut results, dir.path());
        let total: usize = results.iter().map(|r| r.content.len()).sum();
        assert!(total <= 100_000, "{total}");
        assert_eq!(results[3].content, "small");
        let kept = results.iter().filter(|r| r.content == big).count();
        assert_eq!(kept, 2, "only as many as needed are shrunk");
    }
}
