//! Outgoing messages: `PRIVMSG` lines within IRC's 512-byte limit, and a
//! flood-control queue that paces them the way servers expect.

use std::collections::VecDeque;

/// RFC 1459: a line, CRLF included, is at most 512 bytes.
pub const MAX_LINE: usize = 512;

/// What the server may put before our text when it relays it,
/// `:nick!user@host PRIVMSG target :`: the user part is budgeted at 18 bytes
/// (an ident `~` and a long USERLEN) and the host at 63 (HOSTLEN), since the
/// server decides both (cloaks, reverse DNS).
const USER_BUDGET: usize = 18;
const HOST_BUDGET: usize = 63;

/// The channel name length budgeted when the target is not known yet
/// (RFC 2812's 50; the capabilities hold for every chat).
pub const CHANNEL_BUDGET: usize = 50;

/// The bytes of text one `PRIVMSG` from `nick` to `target` may carry so
/// that the relayed line stays within [`MAX_LINE`].
pub fn text_limit(nick: &str, target_len: usize) -> usize {
    let relay_overhead = 1
        + nick.len()
        + 1
        + USER_BUDGET
        + 1
        + HOST_BUDGET
        + " PRIVMSG ".len()
        + target_len
        + " :".len()
        + "\r\n".len();
    MAX_LINE.saturating_sub(relay_overhead)
}

/// Whether `target` can be written into a `PRIVMSG` line.
pub fn valid_target(target: &str) -> bool {
    !target.is_empty()
        && !target.starts_with(':')
        && !target.contains(|c: char| c == ' ' || c == ',' || c.is_control())
}

/// The `PRIVMSG` lines (without CRLF) that send `text` to `target`: one per
/// non-empty line of text, each cut into pieces of at most `limit` bytes on
/// character boundaries (at a space when one is in the second half). NUL,
/// CR and CTCP delimiters are removed: the text is plain.
pub fn privmsg_lines(target: &str, text: &str, limit: usize) -> Vec<String> {
    let limit = limit.max(4); // room for any one UTF-8 character
    let mut lines = Vec::new();
    for line in text.split('\n') {
        let clean: String = line
            .chars()
            .filter(|c| !matches!(c, '\0' | '\r' | '\x01'))
            .collect();
        let mut rest = clean.trim_end();
        while !rest.is_empty() {
            let (piece, after) = cut(rest, limit);
            lines.push(format!("PRIVMSG {target} :{piece}"));
            rest = after.trim_start();
        }
    }
    lines
}

/// The first at most `limit` bytes of `text` and the rest.
fn cut(text: &str, limit: usize) -> (&str, &str) {
    if text.len() <= limit {
        return (text, "");
    }
    let mut end = limit;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    if let Some(space) = text[..end].rfind(' ').filter(|&at| at >= end / 2) {
        end = space;
    }
    text.split_at(end)
}

/// Flood control: a burst of `burst` lines, then one line per `interval_ms`
/// (the RFC 1459 message timer: each line pushes a virtual clock on by one
/// interval, and a line may go while that clock is less than a burst ahead).
#[derive(Debug, Clone)]
pub struct FloodControl {
    burst: u64,
    interval_ms: u64,
    clock_ms: u64,
}

impl FloodControl {
    pub fn new(burst: u32, interval_ms: u64) -> Self {
        Self {
            burst: u64::from(burst.max(1)),
            interval_ms,
            clock_ms: 0,
        }
    }

    /// Milliseconds until a line may go (0: now).
    pub fn wait_ms(&self, now_ms: u64) -> u64 {
        let after_send = self.clock_ms.max(now_ms) + self.interval_ms;
        after_send.saturating_sub(now_ms + self.burst * self.interval_ms)
    }

    /// Counts a line sent at `now_ms`.
    pub fn record(&mut self, now_ms: u64) {
        self.clock_ms = self.clock_ms.max(now_ms) + self.interval_ms;
    }
}

/// What [`OutQueue::admit`] decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    Queued,
    /// The backlog is full: try again after this many milliseconds.
    RetryAfter(u64),
}

/// Lines waiting for flood control. A message is admitted whole or not at
/// all, so a retry never repeats lines that went out.
#[derive(Debug)]
pub struct OutQueue {
    lines: VecDeque<String>,
    flood: FloodControl,
    max_backlog: usize,
}

impl OutQueue {
    pub fn new(flood: FloodControl, max_backlog: usize) -> Self {
        Self {
            lines: VecDeque::new(),
            flood,
            max_backlog,
        }
    }

    /// Queues `lines` unless that makes the backlog longer than allowed; a
    /// message longer than the whole backlog is taken when the queue is empty.
    pub fn admit(&mut self, lines: Vec<String>, now_ms: u64) -> Admission {
        let total = self.lines.len() + lines.len();
        if !self.lines.is_empty() && total > self.max_backlog {
            let excess = (total - self.max_backlog) as u64;
            let wait = self.flood.wait_ms(now_ms) + (excess - 1) * self.flood.interval_ms;
            return Admission::RetryAfter(wait.max(1));
        }
        self.lines.extend(lines);
        Admission::Queued
    }

    /// The lines that may go now, counted as sent.
    pub fn take_ready(&mut self, now_ms: u64) -> Vec<String> {
        let mut ready = Vec::new();
        while !self.lines.is_empty() && self.flood.wait_ms(now_ms) == 0 {
            if let Some(line) = self.lines.pop_front() {
                self.flood.record(now_ms);
                ready.push(line);
            }
        }
        ready
    }

    /// Milliseconds until the next queued line may go; `None` when empty.
    pub fn next_in(&self, now_ms: u64) -> Option<u64> {
        (!self.lines.is_empty()).then(|| self.flood.wait_ms(now_ms))
    }

    pub fn len(&self) -> usize {
        self.lines.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_limit_keeps_the_relayed_line_within_512_bytes() {
        let nick = "talaria";
        let target = "#a-rather-long-channel-name";
        let limit = text_limit(nick, target.len());
        let relayed = format!(
            ":{nick}!{}@{} PRIVMSG {target} :{}\r\n",
            "u".repeat(USER_BUDGET),
            "h".repeat(HOST_BUDGET),
            "x".repeat(limit)
        );
        assert_eq!(relayed.len(), MAX_LINE);
        assert_eq!(text_limit(&"n".repeat(600), 5), 0);
    }

    #[test]
    fn one_privmsg_per_line_and_empty_lines_are_skipped() {
        assert_eq!(
            privmsg_lines("#c", "first\r\n\n  \nsecond  \n", 100),
            ["PRIVMSG #c :first", "PRIVMSG #c :second"]
        );
        assert!(privmsg_lines("#c", "\n\n", 100).is_empty());
    }

    #[test]
    fn control_characters_that_would_change_the_meaning_are_removed() {
        assert_eq!(
            privmsg_lines("bob", "\x01ACTION x\x01\0", 100),
            ["PRIVMSG bob :ACTION x"]
        );
    }

    #[test]
    fn long_multibyte_lines_are_cut_on_char_boundaries_within_the_limit() {
        let text = "é".repeat(300); // 600 bytes, 2 per char
        let lines = privmsg_lines("#c", &text, 101);
        let pieces: Vec<&str> = lines
            .iter()
            .map(|l| l.strip_prefix("PRIVMSG #c :").unwrap())
            .collect();
        assert!(pieces.iter().all(|p| p.len() <= 101 && !p.is_empty()));
        assert_eq!(pieces[0].len(), 100);
        assert_eq!(pieces.concat(), text);

        let emoji = "🦀".repeat(50); // 4 bytes each
        let pieces = privmsg_lines("#c", &emoji, 10);
        assert!(pieces.iter().all(|l| l.ends_with(":🦀🦀")));
    }

    #[test]
    fn long_lines_prefer_a_space_in_the_second_half() {
        let lines = privmsg_lines("#c", "aaaa bbbb cccc dddd", 12);
        assert_eq!(lines, ["PRIVMSG #c :aaaa bbbb", "PRIVMSG #c :cccc dddd"]);
        // No space late enough: a hard cut.
        assert_eq!(
            privmsg_lines("#c", "a bcdefghijklmn", 8),
            ["PRIVMSG #c :a bcdefg", "PRIVMSG #c :hijklmn"]
        );
    }

    #[test]
    fn targets_that_would_break_the_line_are_invalid() {
        assert!(valid_target("#chan") && valid_target("alice"));
        for bad in ["", ":x", "a b", "#a,#b", "a\r\nQUIT", "a\0"] {
            assert!(!valid_target(bad), "{bad:?}");
        }
    }

    #[test]
    fn flood_control_allows_a_burst_of_five_then_one_per_500_ms() {
        let mut flood = FloodControl::new(5, 500);
        for _ in 0..5 {
            assert_eq!(flood.wait_ms(0), 0);
            flood.record(0);
        }
        assert_eq!(flood.wait_ms(0), 500);
        assert_eq!(flood.wait_ms(200), 300);
        assert_eq!(flood.wait_ms(500), 0);
        flood.record(500);
        assert_eq!(flood.wait_ms(500), 500);
        // After a quiet spell the full burst is back.
        for _ in 0..5 {
            assert_eq!(flood.wait_ms(10_000), 0);
            flood.record(10_000);
        }
        assert_eq!(flood.wait_ms(10_000), 500);
    }

    #[test]
    fn the_queue_paces_lines_and_reports_when_the_next_may_go() {
        let mut queue = OutQueue::new(FloodControl::new(5, 500), 20);
        let lines: Vec<String> = (0..8).map(|i| format!("PRIVMSG #c :{i}")).collect();
        assert_eq!(queue.admit(lines, 0), Admission::Queued);
        assert_eq!(queue.take_ready(0).len(), 5);
        assert_eq!(queue.next_in(0), Some(500));
        assert!(queue.take_ready(499).is_empty());
        assert_eq!(queue.take_ready(500), ["PRIVMSG #c :5"]);
        assert_eq!(queue.take_ready(1500).len(), 2);
        assert_eq!(queue.next_in(1500), None);
        assert!(queue.is_empty());
    }

    #[test]
    fn a_full_backlog_asks_for_a_retry_without_taking_any_line() {
        let mut queue = OutQueue::new(FloodControl::new(5, 500), 10);
        let batch = |n: usize| {
            (0..n)
                .map(|i| format!("PRIVMSG #c :{i}"))
                .collect::<Vec<_>>()
        };
        // A message larger than the backlog is taken when nothing waits.
        assert_eq!(queue.admit(batch(12), 0), Admission::Queued);
        assert_eq!(queue.take_ready(0).len(), 5);
        assert_eq!(queue.len(), 7);
        // 7 waiting + 5 new = 2 over: the first of them drains in 500 ms, the second 500 ms later.
        assert_eq!(queue.admit(batch(5), 0), Admission::RetryAfter(1000));
        assert_eq!(queue.len(), 7);
        assert_eq!(queue.admit(batch(3), 0), Admission::Queued);
        assert_eq!(queue.len(), 10);
    }
}
