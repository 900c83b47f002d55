//! Keeps `<memory-context>…</memory-context>` blocks out of the text the user
//! sees. Retrieved memory is wrapped in those tags for the model; a model
//! that echoes it must not show it. The scrubber is fed stream chunks and may
//! hold back a few bytes that could be the start of a tag, so a tag split
//! across chunks is still caught.

/// The tag retrieved memory is wrapped in for the model (the memory crate
/// writes it; the scrubber hides it from the user). Spelled here only.
pub const MEMORY_CONTEXT_TAG: &str = "memory-context";
/// The opening tag of a memory block.
pub const MEMORY_CONTEXT_OPEN: &str = "<memory-context>";
/// The closing tag of a memory block.
pub const MEMORY_CONTEXT_CLOSE: &str = "</memory-context>";

const OPEN: &str = MEMORY_CONTEXT_OPEN;
const CLOSE: &str = MEMORY_CONTEXT_CLOSE;

/// A stateful filter over streamed text.
#[derive(Debug, Default, Clone)]
pub struct StreamScrubber {
    /// Inside a block: everything is dropped until the closing tag.
    hidden: bool,
    /// Text not yet decided on (a possible partial tag at the end).
    pending: String,
}

/// The length of the longest suffix of `text` that is a proper prefix of `tag`.
fn partial_tag_suffix(text: &str, tag: &str) -> usize {
    (1..tag.len())
        .rev()
        .find(|&n| {
            text.len() >= n
                && text.is_char_boundary(text.len() - n)
                && tag.starts_with(&text[text.len() - n..])
        })
        .unwrap_or(0)
}

impl StreamScrubber {
    /// A scrubber outside any block.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds one chunk; returns the text that can be shown now.
    pub fn push(&mut self, chunk: &str) -> String {
        self.pending.push_str(chunk);
        let mut visible = String::new();
        loop {
            let tag = if self.hidden { CLOSE } else { OPEN };
            match self.pending.find(tag) {
                Some(at) => {
                    if !self.hidden {
                        visible.push_str(&self.pending[..at]);
                    }
                    self.pending.drain(..at + tag.len());
                    self.hidden = !self.hidden;
                }
                None => {
                    let keep = partial_tag_suffix(&self.pending, tag);
                    let decided = self.pending.len() - keep;
                    if !self.hidden {
                        visible.push_str(&self.pending[..decided]);
                    }
                    self.pending.drain(..decided);
                    return visible;
                }
            }
        }
    }

    /// Ends the stream: held-back text that turned out not to be a tag is
    /// shown; an unclosed block stays hidden.
    pub fn finish(&mut self) -> String {
        let rest = std::mem::take(&mut self.pending);
        let hidden = std::mem::take(&mut self.hidden);
        if hidden { String::new() } else { rest }
    }
}

/// `text` with every memory-context block removed.
pub fn scrub(text: &str) -> String {
    let mut scrubber = StreamScrubber::new();
    let mut out = scrubber.push(text);
    out.push_str(&scrubber.finish());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn blocks_are_removed_and_the_rest_kept() {
        assert_eq!(scrub("a<memory-context>secret</memory-context>b"), "ab");
        assert_eq!(scrub("no tags < here >"), "no tags < here >");
        assert_eq!(scrub("x<memory-context>never closed"), "x");
        assert_eq!(scrub("<memory-"), "<memory-", "a lone partial tag is text");
        assert_eq!(
            scrub("1<memory-context>a</memory-context>2<memory-context>b</memory-context>3"),
            "123"
        );
    }

    #[test]
    fn split_tags_are_caught() {
        let mut s = StreamScrubber::new();
        let mut out = s.push("hello <mem");
        out.push_str(&s.push("ory-context>hid"));
        out.push_str(&s.push("den</memory-con"));
        out.push_str(&s.push("text> world"));
        out.push_str(&s.finish());
        assert_eq!(out, "hello  world");
    }

    fn pieces() -> impl Strategy<Value = Vec<&'static str>> {
        prop::collection::vec(
            prop::sample::select(vec![
                "<memory-context>",
                "</memory-context>",
                "<memory",
                "-context>",
                "</mem",
                "text ",
                "é漢",
                "<",
                ">",
                "memory",
            ]),
            0..24,
        )
    }

    proptest! {
        #[test]
        fn any_split_of_the_stream_shows_the_same_text(parts in pieces(), cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..8)) {
            let text: String = parts.concat();
            let whole = scrub(&text);
            // Cut the text at arbitrary char boundaries.
            let boundaries: Vec<usize> = text.char_indices().map(|(i, _)| i).chain([text.len()]).collect();
            let mut points: Vec<usize> = cuts.iter().map(|c| boundaries[c.index(boundaries.len())]).collect();
            points.sort_unstable();
            points.dedup();
            let mut scrubber = StreamScrubber::new();
            let mut streamed = String::new();
            let mut start = 0;
            for point in points {
                streamed.push_str(&scrubber.push(&text[start..point]));
                start = point;
            }
            streamed.push_str(&scrubber.push(&text[start..]));
            streamed.push_str(&scrubber.finish());
            prop_assert_eq!(streamed, whole);
        }

        #[test]
        fn text_without_tags_passes_unchanged(text in "[a-z <>/é-]{0,40}") {
            prop_assume!(!text.contains(OPEN));
            prop_assert_eq!(scrub(&text), text);
        }
    }
}
