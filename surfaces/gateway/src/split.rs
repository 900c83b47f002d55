//! Cutting a long answer into messages a platform accepts. Cuts fall between
//! lines (a line longer than a message is cut at a space, else anywhere on a
//! character boundary), and a code block cut in two is closed at the end of
//! one message and opened again, with its language, at the start of the next,
//! so each message renders on its own.

pub use talaria_plugin_host::LengthUnit;

/// The length of `text` counted in `unit`.
fn length(unit: LengthUnit, text: &str) -> usize {
    match unit {
        LengthUnit::Chars => text.chars().count(),
        LengthUnit::Bytes => text.len(),
        LengthUnit::Utf16 => text.encode_utf16().count(),
    }
}

/// The length of `c` counted in `unit`.
fn char_length(unit: LengthUnit, c: char) -> usize {
    match unit {
        LengthUnit::Chars => 1,
        LengthUnit::Bytes => c.len_utf8(),
        LengthUnit::Utf16 => c.len_utf16(),
    }
}

/// Smallest limit honoured: room for a fence and some text.
const MIN_LIMIT: usize = 32;

/// `text` as messages of at most `limit` (at least 32) by `measure`; one
/// message when it fits. Empty text gives no message.
pub fn split_message(text: &str, limit: usize, measure: LengthUnit) -> Vec<String> {
    let limit = limit.max(MIN_LIMIT);
    if text.is_empty() {
        return Vec::new();
    }
    if length(measure, text) <= limit {
        return vec![text.to_owned()];
    }
    let mut out = Splitter {
        measure,
        limit,
        messages: Vec::new(),
        current: String::new(),
        fence: None,
        closes_block: false,
    };
    for line in text.split_inclusive('\n') {
        out.push_line(line);
    }
    out.finish()
}

struct Splitter {
    measure: LengthUnit,
    limit: usize,
    messages: Vec<String>,
    current: String,
    /// The opening line of the code block `current` is inside, if any.
    fence: Option<String>,
    /// The line being placed closes that block (no room is kept to close it).
    closes_block: bool,
}

impl Splitter {
    /// What closing an open block at a cut adds.
    fn closing(&self) -> usize {
        if self.fence.is_some() && !self.closes_block {
            length(self.measure, "\n```")
        } else {
            0
        }
    }

    /// Room for text in the current message, keeping space to close a block.
    fn room(&self) -> usize {
        self.limit
            .saturating_sub(length(self.measure, &self.current))
            .saturating_sub(self.closing())
    }

    fn push_line(&mut self, line: &str) {
        // A code block's opening line too long to repeat after a cut (a quarter
        // of a message) keeps only its marker: no real language tag is that long.
        let bare = format!("{}\n", fence_marker(line));
        let line = if self.fence.is_none()
            && opens_fence(line)
            && length(self.measure, line.trim_end()) * 4 > self.limit
        {
            bare.as_str()
        } else {
            line
        };
        self.closes_block = self
            .fence
            .as_deref()
            .is_some_and(|open| opens_fence(line) && fence_marker(open) == fence_marker(line));
        let mut rest = line;
        while !rest.is_empty() {
            if length(self.measure, rest) <= self.room() {
                self.current.push_str(rest);
                break;
            }
            if self.current_has_text() {
                // The whole line fits in a fresh message: cut before it.
                let fresh = self
                    .limit
                    .saturating_sub(self.reopen_len() + self.closing());
                if length(self.measure, rest) <= fresh {
                    self.cut();
                    continue;
                }
            }
            // Longer than any message: take what fits, at a space if one is near.
            let mut take = self.prefix_that_fits(rest);
            if take == 0 && self.current_has_text() {
                self.cut();
                continue;
            }
            if take == 0 {
                // Not even one character fits a fresh message: take one anyway
                // rather than loop (only a limit near the minimum gets here).
                take = rest.chars().next().map_or(rest.len(), char::len_utf8);
            }
            self.current.push_str(&rest[..take]);
            rest = &rest[take..];
            self.cut();
        }
        self.track_fence(line);
    }

    /// Whether the current message holds more than a reopened fence line.
    fn current_has_text(&self) -> bool {
        let reopened = self.fence.as_ref().map_or(0, |f| f.len() + 1);
        self.current.len() > reopened
    }

    fn reopen_len(&self) -> usize {
        self.fence
            .as_ref()
            .map_or(0, |f| length(self.measure, f) + length(self.measure, "\n"))
    }

    /// Bytes of `text` that fit in the room left, ending after a space when
    /// there is one in the second half, else at a character boundary.
    fn prefix_that_fits(&self, text: &str) -> usize {
        let room = self.room();
        let mut used = 0;
        let mut end = 0;
        let mut last_space = None;
        for (at, c) in text.char_indices() {
            let size = char_length(self.measure, c);
            if used + size > room {
                break;
            }
            used += size;
            end = at + c.len_utf8();
            if c == ' ' {
                last_space = Some(end);
            }
        }
        match last_space {
            Some(space) if space * 2 > end => space,
            _ => end,
        }
    }

    /// Ends the current message (closing an open code block) and starts the
    /// next (opening it again).
    fn cut(&mut self) {
        let mut message = std::mem::take(&mut self.current);
        if let Some(fence) = &self.fence {
            if !message.ends_with('\n') {
                message.push('\n');
            }
            message.push_str(fence_marker(fence));
            self.current = format!("{fence}\n");
        }
        let trimmed = message.trim_end_matches('\n');
        if !trimmed.trim().is_empty() {
            self.messages.push(trimmed.to_owned());
        }
    }

    /// Notes a code block opening or closing on `line`.
    fn track_fence(&mut self, line: &str) {
        if !opens_fence(line) {
            return;
        }
        let marker = fence_marker(line);
        match &self.fence {
            Some(open) if fence_marker(open) == marker => self.fence = None,
            Some(_) => {}
            None => self.fence = Some(line.trim_end().to_owned()),
        }
    }

    fn finish(mut self) -> Vec<String> {
        let last = self.current.trim_end_matches('\n');
        if !last.trim().is_empty() {
            self.messages.push(last.to_owned());
        }
        self.messages
    }
}

/// Whether `line` opens or closes a code block.
fn opens_fence(line: &str) -> bool {
    let trimmed = line.trim_start();
    trimmed.starts_with("```") || trimmed.starts_with("~~~")
}

/// The marker that closes the block `opening` starts.
fn fence_marker(opening: &str) -> &'static str {
    if opening.trim_start().starts_with("~~~") {
        "~~~"
    } else {
        "```"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(messages: &[String], limit: usize, measure: LengthUnit) {
        for message in messages {
            assert!(
                length(measure, message) <= limit,
                "{} > {limit}: {message:?}",
                length(measure, message)
            );
            let fences = message
                .lines()
                .filter(|l| l.trim_start().starts_with("```"))
                .count();
            assert_eq!(fences % 2, 0, "an unclosed block: {message:?}");
        }
    }

    #[test]
    fn short_text_is_one_message_and_empty_text_none() {
        assert_eq!(split_message("hi", 100, LengthUnit::Chars), ["hi"]);
        assert!(split_message("", 100, LengthUnit::Chars).is_empty());
    }

    #[test]
    fn cuts_fall_between_lines_and_keep_every_line() {
        let text: String = (0..30).map(|i| format!("line number {i}\n")).collect();
        let messages = split_message(&text, 100, LengthUnit::Chars);
        assert!(messages.len() > 1);
        check(&messages, 100, LengthUnit::Chars);
        assert_eq!(messages.join("\n") + "\n", text, "nothing lost or added");
    }

    #[test]
    fn a_code_block_cut_in_two_is_closed_and_reopened_with_its_language() {
        let code: String = (0..20).map(|i| format!("let x{i} = {i};\n")).collect();
        let text = format!("Here:\n```rust\n{code}```\nDone.\n");
        let messages = split_message(&text, 120, LengthUnit::Chars);
        check(&messages, 120, LengthUnit::Chars);
        assert!(messages.len() >= 3, "{messages:#?}");
        assert!(messages[1].starts_with("```rust\n"), "{messages:#?}");
        assert!(messages[0].ends_with("```"), "{messages:#?}");
        let lines = messages
            .iter()
            .flat_map(|m| m.lines())
            .filter(|l| l.starts_with("let "))
            .count();
        assert_eq!(lines, 20, "every code line kept once");
        assert!(messages.last().unwrap().ends_with("Done."));
    }

    #[test]
    fn a_long_line_is_cut_at_spaces_and_a_long_word_anywhere() {
        let words = "word ".repeat(100);
        let messages = split_message(&words, 64, LengthUnit::Chars);
        check(&messages, 64, LengthUnit::Chars);
        assert!(
            messages
                .iter()
                .all(|m| !m.contains("wor\n") && m.starts_with("word"))
        );
        let word = "x".repeat(200);
        let messages = split_message(&word, 64, LengthUnit::Chars);
        check(&messages, 64, LengthUnit::Chars);
        assert_eq!(messages.concat(), word);
    }

    #[test]
    fn a_closing_fence_that_just_fits_stays_in_its_message() {
        // 5 code lines of 10 characters: the closing fence fills the message exactly.
        let text = format!("```\n{}```\nafter\n", "123456789\n".repeat(5));
        let limit = text.chars().count() - "after\n".len();
        let messages = split_message(&text, limit.max(MIN_LIMIT), LengthUnit::Chars);
        assert_eq!(messages.len(), 2, "{messages:#?}");
        assert!(messages[0].ends_with("123456789\n```"), "{messages:#?}");
        assert_eq!(messages[1], "after");
    }

    #[test]
    fn a_long_fence_line_at_a_small_limit_still_ends() {
        let text = format!("```{}\n{}\n```\n", "x".repeat(100), "code ".repeat(40));
        let messages = split_message(&text, 32, LengthUnit::Chars);
        check(&messages, 32, LengthUnit::Chars);
        assert!(messages.len() > 3);
        assert_eq!(messages[1].lines().next(), Some("```"), "{messages:#?}");
    }

    #[test]
    fn limits_are_counted_as_the_platform_counts() {
        let text = "é🙂".repeat(40);
        for measure in [LengthUnit::Chars, LengthUnit::Bytes, LengthUnit::Utf16] {
            let messages = split_message(&text, 50, measure);
            check(&messages, 50, measure);
            assert_eq!(messages.concat(), text, "{measure:?}");
        }
    }
}
