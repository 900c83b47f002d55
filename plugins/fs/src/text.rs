//! Streaming, bounded reading of text files: binary detection, line windows
//! with line numbers, and whole-file reads for editing.

use std::io::{self, BufRead, Read};

/// Bytes looked at to decide whether a file is binary.
pub const SNIFF_BYTES: usize = 8 * 1024;
/// Longest line shown by `read_file`, in bytes; the rest is cut with a note.
pub const MAX_LINE_BYTES: usize = 2000;
/// Most content `read_file` returns in one call, in bytes.
pub const MAX_OUTPUT_BYTES: usize = 100 * 1024;
/// How far `read_file` reads past its window to count the file's lines.
pub const MAX_COUNT_BYTES: u64 = 512 * 1024 * 1024;
/// Largest file `patch` loads to edit.
pub const MAX_EDIT_BYTES: u64 = 16 * 1024 * 1024;

/// Whether `head` (the start of a file) looks binary: it has a NUL byte in
/// its first [`SNIFF_BYTES`].
pub fn looks_binary(head: &[u8]) -> bool {
    head[..head.len().min(SNIFF_BYTES)].contains(&0)
}

/// Reads the next line (without its `\n` or `\r\n`) into `buf`, keeping at
/// most `cap` bytes of it. Returns the line's full length in bytes, or `None`
/// at the end of the input. Memory stays bounded whatever the line length.
pub fn next_line<R: BufRead>(
    r: &mut R,
    buf: &mut Vec<u8>,
    cap: usize,
) -> io::Result<Option<usize>> {
    buf.clear();
    let mut len = 0usize;
    let mut any = false;
    loop {
        let chunk = match r.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            break;
        }
        any = true;
        let (part, done) = match memchr::memchr(b'\n', chunk) {
            Some(i) => (&chunk[..i], Some(i + 1)),
            None => (chunk, None),
        };
        let room = cap.saturating_sub(buf.len());
        buf.extend_from_slice(&part[..part.len().min(room)]);
        len += part.len();
        let used = done.unwrap_or(part.len());
        r.consume(used);
        if done.is_some() {
            break;
        }
    }
    if !any {
        return Ok(None);
    }
    if buf.last() == Some(&b'\r') && len <= cap {
        buf.pop();
        len -= 1;
    }
    Ok(Some(len))
}

/// Counts the remaining lines of `r`, reading at most `max_bytes`. `None`
/// when it gave up.
pub fn count_lines<R: Read>(r: &mut R, max_bytes: u64) -> io::Result<Option<usize>> {
    let mut buf = vec![0u8; 64 * 1024];
    let mut lines = 0usize;
    let mut read = 0u64;
    let mut last = b'\n';
    loop {
        let n = match r.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        read += n as u64;
        lines += memchr::memchr_iter(b'\n', &buf[..n]).count();
        last = buf[n - 1];
        if read > max_bytes {
            return Ok(None);
        }
    }
    if last != b'\n' {
        lines += 1;
    }
    Ok(Some(lines))
}

/// Consumes up to `count` lines of `r`; returns how many there were.
pub fn skip_lines<R: BufRead>(r: &mut R, count: usize) -> io::Result<usize> {
    let mut skipped = 0;
    let mut partial = false;
    while skipped < count {
        let chunk = match r.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            // A last line without a newline still counts.
            return Ok(skipped + usize::from(partial));
        }
        let mut used = chunk.len();
        for i in memchr::memchr_iter(b'\n', chunk) {
            skipped += 1;
            if skipped == count {
                used = i + 1;
                break;
            }
        }
        // Inside a line unless what was consumed ends with its newline.
        partial = chunk[used - 1] != b'\n';
        r.consume(used);
    }
    Ok(skipped)
}

/// A numbered window of a text file.
#[derive(Debug, PartialEq, Eq)]
pub struct Window {
    /// Lines formatted like `cat -n`: `{n:>6}\t{text}`, joined with `\n`.
    pub content: String,
    /// First line shown (1-based).
    pub first: usize,
    /// Lines shown.
    pub shown: usize,
    /// Lines in the file; `None` when the file was too large to count.
    pub total_lines: Option<usize>,
    /// Lines in the file counted so far (all of them unless `total_lines` is
    /// `None`).
    pub counted: usize,
    /// Lines cut at [`MAX_LINE_BYTES`].
    pub long_lines: usize,
    /// More lines follow the window.
    pub more: bool,
}

/// Formats one numbered line.
pub fn number_line(n: usize, text: &str) -> String {
    format!("{n:>6}\t{text}")
}

/// Reads lines `first..first + limit` (1-based) of `r`, within the output
/// budget, then counts the rest. The caller has checked for binary content.
pub fn read_window<R: BufRead>(
    r: &mut R,
    first: usize,
    limit: usize,
    max_output: usize,
) -> io::Result<Window> {
    let first = first.max(1);
    let mut content = String::new();
    let mut buf = Vec::new();
    let mut n = 0usize;
    let mut shown = 0usize;
    let mut long_lines = 0usize;
    let mut more = false;
    if first > 1 {
        n = skip_lines(r, first - 1)?;
    }
    loop {
        let in_window = n + 1 >= first && shown < limit;
        let cap = if in_window { MAX_LINE_BYTES } else { 0 };
        let Some(len) = next_line(r, &mut buf, cap)? else {
            break;
        };
        n += 1;
        if !in_window {
            if n >= first {
                more = true;
                break;
            }
            continue;
        }
        let mut text = String::from_utf8_lossy(&buf).into_owned();
        if len > buf.len() {
            long_lines += 1;
            text.push_str(&format!(" … [line cut: {len} bytes in all]"));
        }
        let line = number_line(n, &text);
        if shown > 0 && content.len() + line.len() + 1 > max_output {
            // This line does not fit: it is counted, shown next time.
            more = true;
            break;
        }
        if shown > 0 {
            content.push('\n');
        }
        content.push_str(&line);
        shown += 1;
    }
    let total_lines = if more {
        // `n` counts the line that stopped the window; count the rest.
        count_lines(r, MAX_COUNT_BYTES)?.map(|rest| n + rest)
    } else {
        Some(n)
    };
    Ok(Window {
        content,
        first,
        shown,
        counted: total_lines.unwrap_or(n),
        total_lines,
        long_lines,
        more,
    })
}

/// Why a file cannot be edited as text.
#[derive(Debug, PartialEq, Eq)]
pub enum NotText {
    TooLarge(u64),
    Binary,
    NotUtf8,
}

impl std::fmt::Display for NotText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::TooLarge(n) => write!(
                f,
                "it is too large to edit ({n} bytes; the limit is {MAX_EDIT_BYTES})"
            ),
            Self::Binary => f.write_str("it looks binary (it has NUL bytes)"),
            Self::NotUtf8 => f.write_str("it is not valid UTF-8 text"),
        }
    }
}

/// Checks bytes read for editing.
pub fn as_text(bytes: Vec<u8>) -> Result<String, NotText> {
    if bytes.len() as u64 > MAX_EDIT_BYTES {
        return Err(NotText::TooLarge(bytes.len() as u64));
    }
    if looks_binary(&bytes) {
        return Err(NotText::Binary);
    }
    String::from_utf8(bytes).map_err(|_| NotText::NotUtf8)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(text: &str, first: usize, limit: usize) -> Window {
        read_window(&mut text.as_bytes(), first, limit, MAX_OUTPUT_BYTES).unwrap()
    }

    #[test]
    fn binary_detection_looks_at_the_head_only() {
        assert!(!looks_binary(b"plain text\n"));
        assert!(looks_binary(b"ab\0cd"));
        let mut late = vec![b'a'; SNIFF_BYTES];
        late.push(0);
        assert!(!looks_binary(&late));
    }

    #[test]
    fn next_line_caps_long_lines_and_strips_crlf() {
        let mut input: &[u8] = b"short\r\nlooooooong\nlast";
        let mut buf = Vec::new();
        assert_eq!(next_line(&mut input, &mut buf, 100).unwrap(), Some(5));
        assert_eq!(buf, b"short");
        assert_eq!(next_line(&mut input, &mut buf, 4).unwrap(), Some(10));
        assert_eq!(buf, b"looo");
        assert_eq!(next_line(&mut input, &mut buf, 100).unwrap(), Some(4));
        assert_eq!(buf, b"last");
        assert_eq!(next_line(&mut input, &mut buf, 100).unwrap(), None);
        let mut empty: &[u8] = b"";
        assert_eq!(next_line(&mut empty, &mut buf, 100).unwrap(), None);
        let mut blank: &[u8] = b"\n\n";
        assert_eq!(next_line(&mut blank, &mut buf, 100).unwrap(), Some(0));
        assert_eq!(next_line(&mut blank, &mut buf, 100).unwrap(), Some(0));
        assert_eq!(next_line(&mut blank, &mut buf, 100).unwrap(), None);
    }

    #[test]
    fn count_lines_counts_a_final_unterminated_line() {
        assert_eq!(count_lines(&mut &b""[..], 100).unwrap(), Some(0));
        assert_eq!(count_lines(&mut &b"a\nb\n"[..], 100).unwrap(), Some(2));
        assert_eq!(count_lines(&mut &b"a\nb"[..], 100).unwrap(), Some(2));
        assert_eq!(count_lines(&mut &b"a\nb"[..], 1).unwrap(), None);
    }

    #[test]
    fn window_numbers_lines_like_cat_n() {
        let w = window("alpha\nbeta\ngamma\n", 1, 500);
        assert_eq!(w.content, "     1\talpha\n     2\tbeta\n     3\tgamma");
        assert_eq!(
            (w.first, w.shown, w.total_lines, w.more),
            (1, 3, Some(3), false)
        );
    }

    #[test]
    fn window_with_offset_and_limit_counts_the_rest() {
        let text: String = (1..=10).map(|i| format!("line {i}\n")).collect();
        let w = window(&text, 4, 3);
        assert_eq!(w.content, "     4\tline 4\n     5\tline 5\n     6\tline 6");
        assert_eq!(
            (w.first, w.shown, w.total_lines, w.more),
            (4, 3, Some(10), true)
        );
        let w = window(&text, 9, 5);
        assert_eq!((w.shown, w.total_lines, w.more), (2, Some(10), false));
        let w = window(&text, 11, 5);
        assert_eq!((w.shown, w.total_lines, w.more), (0, Some(10), false));
        let w = window("a\nb", 2, 5);
        assert_eq!((w.content.as_str(), w.total_lines), ("     2\tb", Some(2)));
        let w = window("a\nb", 3, 5);
        assert_eq!((w.shown, w.total_lines), (0, Some(2)));
        let w = window("a\nb\n", 3, 5);
        assert_eq!((w.shown, w.total_lines), (0, Some(2)));
    }

    #[test]
    fn window_cuts_long_lines_and_stops_at_the_output_budget() {
        let long = "x".repeat(MAX_LINE_BYTES + 10);
        let w = window(&format!("{long}\nshort\n"), 1, 10);
        assert_eq!(w.long_lines, 1);
        assert!(
            w.content
                .starts_with(&format!("     1\t{}", "x".repeat(MAX_LINE_BYTES)))
        );
        assert!(
            w.content
                .contains(&format!("[line cut: {} bytes in all]", MAX_LINE_BYTES + 10))
        );
        assert!(w.content.ends_with("     2\tshort"));

        let text: String = (1..=100).map(|i| format!("{i:0>50}\n")).collect();
        let w = read_window(&mut text.as_bytes(), 1, 500, 600).unwrap();
        assert_eq!(w.shown, 10, "each numbered line is 57 bytes + newline");
        assert!(w.more);
        assert_eq!(w.total_lines, Some(100));
    }

    #[test]
    fn text_for_editing() {
        assert_eq!(as_text(b"ok\n".to_vec()), Ok("ok\n".to_string()));
        assert_eq!(as_text(b"a\0".to_vec()), Err(NotText::Binary));
        assert_eq!(as_text(vec![0xff, 0xfe, b'a']), Err(NotText::NotUtf8));
    }
}
