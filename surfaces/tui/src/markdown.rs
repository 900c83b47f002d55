//! Streaming Markdown: renders a model's reply for the terminal as it arrives.
//!
//! Each line's block kind (heading, bullet, numbered item, quote, fence, rule,
//! paragraph) is decided as soon as its first characters tell, then the rest of
//! the line streams through with inline styles (`**bold**`, `*italic*`,
//! `` `code` ``, `~~strike~~`, links). Only what is still ambiguous waits for
//! the next delta: a trailing run of `*`, `_`, `~` or `` ` ``, a trailing `\`,
//! a line start such as `-` or `` `` `` that could open a rule or a fence, a
//! link until its `)`; code blocks are emitted a line at a time, highlighted.
//!
//! The output depends on the text alone, never on where it was split into
//! deltas. Without colour the output is the input, byte for byte.

use crate::highlight::Highlighter;
use crate::skin::Skin;
use crate::style::{Colour, Painter, Palette, Role, Style};

/// How long a link (`[text](url)`) may be before `[` is taken literally.
const MAX_LINK: usize = 400;
/// How wide a horizontal rule is drawn.
const RULE_WIDTH: usize = 40;
/// Bullet glyphs by nesting level (indentation / 2).
const BULLETS: [&str; 3] = ["•", "◦", "▪"];

/// Renders Markdown incrementally: feed deltas with [`push`](Self::push), write
/// what it returns, and call [`finish`](Self::finish) at the end of the reply.
#[derive(Debug)]
pub struct MarkdownStream {
    color: bool,
    palette: Palette,
    pending: Vec<char>,
    painter: Painter,
    state: State,
    inline: Inline,
    /// The current line's block style (headings).
    base: Style,
}

#[derive(Debug)]
enum State {
    /// At the start of a line (or after a quote marker): its kind is not known yet.
    LineStart { quoted: bool },
    /// Streaming the inline text of a line.
    Inline,
    /// Inside a fenced code block.
    Code(Box<CodeBlock>),
}

#[derive(Debug)]
struct CodeBlock {
    fence: char,
    len: usize,
    highlighter: Highlighter,
}

/// Inline styles open on the current line.
#[derive(Debug, Default)]
struct Inline {
    bold: bool,
    italic: bool,
    strike: bool,
    /// The length of the backtick run that opened the current code span.
    code: Option<usize>,
    /// The last character of the line so far (for emphasis flanking rules).
    prev: Option<char>,
}

/// The result of looking ahead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Peek {
    Char(char),
    /// The text has ended (at [`MarkdownStream::finish`]).
    End,
    /// Not known until the next delta.
    More,
}

fn peek(chars: &[char], at: usize, eof: bool) -> Peek {
    match chars.get(at) {
        Some(c) => Peek::Char(*c),
        None if eof => Peek::End,
        None => Peek::More,
    }
}

/// A line's block kind, with the number of characters its markers take.
#[derive(Debug, PartialEq, Eq)]
enum Block {
    Paragraph,
    Heading {
        level: usize,
        marker: usize,
    },
    Bullet {
        marker: usize,
    },
    Ordered {
        number: String,
        marker: usize,
    },
    Quote {
        marker: usize,
    },
    Rule {
        len: usize,
    },
    Fence {
        fence: char,
        len: usize,
        line: usize,
    },
}

/// Decides the kind of the line starting at `rest[indent..]`, or `None` when
/// the next delta is needed. Pure: depends on the characters and `eof` only.
fn classify(rest: &[char], indent: usize, eof: bool, quoted: bool) -> Option<Block> {
    let r = &rest[indent..];
    let Some(&c) = r.first() else {
        return eof.then_some(Block::Paragraph);
    };
    let run = r.iter().take_while(|x| **x == c).count();
    // A run reaching the end of what is known may still grow.
    if run == r.len() && !eof && matches!(c, '#' | '`' | '~' | '0'..='9') {
        return None;
    }
    match c {
        '#' => match peek(r, run, eof) {
            Peek::Char(' ' | '\n') | Peek::End if run <= 6 => Some(Block::Heading {
                level: run,
                marker: run + usize::from(r.get(run) == Some(&' ')),
            }),
            _ => Some(Block::Paragraph),
        },
        '>' => match peek(r, 1, eof) {
            Peek::More => None,
            next => Some(Block::Quote {
                marker: 1 + usize::from(next == Peek::Char(' ')),
            }),
        },
        '-' | '*' | '+' | '_' => {
            // A rule is a whole line of one marker (and spaces): wait while it may be one.
            let mut other = false;
            let mut len = r.len();
            for (j, x) in r.iter().enumerate() {
                if *x == '\n' {
                    len = j;
                    break;
                }
                if *x != c && *x != ' ' {
                    other = true;
                    len = j;
                    break;
                }
            }
            let line_known = other || len < r.len() || eof;
            if !line_known {
                return None;
            }
            let markers = r[..len].iter().filter(|x| **x == c).count();
            if !other && markers >= 3 && c != '+' {
                Some(Block::Rule { len })
            } else if c != '_' && r.get(1) == Some(&' ') {
                Some(Block::Bullet { marker: 2 })
            } else {
                Some(Block::Paragraph)
            }
        }
        '0'..='9' => {
            let digits = r.iter().take_while(|x| x.is_ascii_digit()).count();
            if digits > 9 {
                return Some(Block::Paragraph);
            }
            match (peek(r, digits, eof), peek(r, digits + 1, eof)) {
                (Peek::Char('.' | ')'), Peek::Char(' ')) => Some(Block::Ordered {
                    number: r[..=digits].iter().collect(),
                    marker: digits + 2,
                }),
                (Peek::Char('.' | ')'), Peek::More) | (Peek::More, _) => None,
                _ => Some(Block::Paragraph),
            }
        }
        '`' | '~' if run >= 3 && !quoted => {
            let line = match r.iter().position(|x| *x == '\n') {
                Some(n) => n,
                None if eof => r.len(),
                None => return None,
            };
            if c == '`' && r[run..line].contains(&'`') {
                return Some(Block::Paragraph);
            }
            Some(Block::Fence {
                fence: c,
                len: run,
                line,
            })
        }
        _ => Some(Block::Paragraph),
    }
}

/// A link found at a `[`.
#[derive(Debug, PartialEq, Eq)]
enum LinkScan {
    More,
    No,
    Link {
        text: String,
        url: String,
        len: usize,
    },
}

/// Looks for `[text](url)` at the start of `rest` (which starts with `[`).
fn scan_link(rest: &[char], eof: bool) -> LinkScan {
    let unknown = |i: usize| {
        if eof || i >= MAX_LINK {
            LinkScan::No
        } else {
            LinkScan::More
        }
    };
    let mut i = 1;
    loop {
        match rest.get(i) {
            None => return unknown(i),
            Some(']') => break,
            Some('\n' | '[') => return LinkScan::No,
            Some(_) => i += 1,
        }
        if i >= MAX_LINK {
            return LinkScan::No;
        }
    }
    let text_end = i;
    match rest.get(i + 1) {
        None => return unknown(i + 1),
        Some('(') => {}
        Some(_) => return LinkScan::No,
    }
    i += 2;
    let url_start = i;
    let mut depth = 0usize;
    loop {
        match rest.get(i) {
            None => return unknown(i),
            Some(')') if depth == 0 => break,
            Some('(') => depth += 1,
            Some(')') => depth -= 1,
            Some(c) if c.is_whitespace() => return LinkScan::No,
            Some(_) => {}
        }
        i += 1;
        if i >= MAX_LINK {
            return LinkScan::No;
        }
    }
    LinkScan::Link {
        text: rest[1..text_end].iter().collect(),
        url: rest[url_start..i].iter().collect(),
        len: i + 1,
    }
}

/// Characters that may start inline markup.
fn is_special(c: char) -> bool {
    matches!(c, '\n' | '\\' | '`' | '*' | '_' | '~' | '[')
}

impl MarkdownStream {
    /// A stream in `skin`'s colours; with `color` false the output is the input.
    pub fn new(skin: &Skin, color: bool) -> MarkdownStream {
        MarkdownStream::with_palette(skin.palette.clone(), color)
    }

    /// A stream in `palette`'s colours; with `color` false the output is the input.
    pub fn with_palette(palette: Palette, color: bool) -> MarkdownStream {
        MarkdownStream {
            color,
            palette,
            pending: Vec::new(),
            painter: Painter::default(),
            state: State::LineStart { quoted: false },
            inline: Inline::default(),
            base: Style::PLAIN,
        }
    }

    /// Takes the next piece of the reply; returns what to write now.
    pub fn push(&mut self, delta: &str) -> String {
        if !self.color {
            return delta.to_string();
        }
        self.pending.extend(delta.chars());
        self.run(false);
        self.painter.take()
    }

    /// Ends the reply: returns whatever was held back, with all attributes
    /// reset. The stream can then render another reply.
    pub fn finish(&mut self) -> String {
        if !self.color {
            return String::new();
        }
        self.run(true);
        self.painter.reset();
        self.pending.clear();
        self.state = State::LineStart { quoted: false };
        self.inline = Inline::default();
        self.base = Style::PLAIN;
        self.painter.take()
    }

    /// Renders a whole text at once.
    pub fn render(skin: &Skin, color: bool, text: &str) -> String {
        let mut stream = MarkdownStream::new(skin, color);
        let mut out = stream.push(text);
        out.push_str(&stream.finish());
        out
    }

    fn run(&mut self, eof: bool) {
        let pending = std::mem::take(&mut self.pending);
        let mut pos = 0;
        while pos < pending.len() {
            match self.step(&pending[pos..], eof) {
                Some(n) => pos += n,
                None => break,
            }
        }
        self.pending = pending;
        self.pending.drain(..pos);
    }

    /// Consumes some of `rest` (or changes state), or returns `None` when the
    /// next delta is needed. Never `None` when `eof`.
    fn step(&mut self, rest: &[char], eof: bool) -> Option<usize> {
        match &mut self.state {
            State::LineStart { quoted } => {
                let quoted = *quoted;
                self.line_start(rest, eof, quoted)
            }
            State::Inline => self.inline_step(rest, eof),
            State::Code(block) => {
                let (len, newline) = match rest.iter().position(|c| *c == '\n') {
                    Some(n) => (n, true),
                    None if eof => (rest.len(), false),
                    None => return None,
                };
                let line: String = rest[..len].iter().collect();
                let dim = Style::fg(self.palette.get(Role::Dim));
                if is_closing_fence(&line, block.fence, block.len) {
                    self.painter.text(dim, &line);
                    self.state = State::LineStart { quoted: false };
                } else {
                    for (kind, text) in block.highlighter.tokens(&line) {
                        let style = Style::fg(self.palette.get(kind.role()));
                        self.painter.text(style, text);
                    }
                }
                if newline {
                    self.painter.newline();
                }
                Some(len + usize::from(newline))
            }
        }
    }

    fn line_start(&mut self, rest: &[char], eof: bool, quoted: bool) -> Option<usize> {
        let indent = rest
            .iter()
            .take_while(|c| **c == ' ' || **c == '\t')
            .count();
        let block = classify(rest, indent, eof, quoted)?;
        let indent_text: String = rest[..indent].iter().collect();
        self.painter.text(Style::PLAIN, &indent_text);
        let dim = Style::fg(self.palette.get(Role::Dim));
        let bullet = Style::fg(self.palette.get(Role::Bullet));
        self.state = State::Inline;
        let marker = match block {
            Block::Paragraph => 0,
            Block::Heading { level, marker } => {
                self.base = Style {
                    bold: true,
                    underline: level == 1,
                    ..Style::fg(self.palette.get(Role::Heading))
                };
                marker
            }
            Block::Bullet { marker } => {
                let level = indent / 2 % BULLETS.len();
                self.painter.text(bullet, BULLETS[level]);
                self.painter.text(Style::PLAIN, " ");
                marker
            }
            Block::Ordered { number, marker } => {
                self.painter.text(bullet, &number);
                self.painter.text(Style::PLAIN, " ");
                marker
            }
            Block::Quote { marker } => {
                self.painter.text(dim, "│ ");
                self.state = State::LineStart { quoted: true };
                marker
            }
            Block::Rule { len } => {
                self.painter.text(dim, &"─".repeat(RULE_WIDTH));
                len
            }
            Block::Fence { fence, len, line } => {
                let text: String = rest[indent..indent + line].iter().collect();
                self.painter.text(dim, &text);
                let info: String = rest[indent + len..indent + line].iter().collect();
                let language = info.split_whitespace().next().unwrap_or("");
                self.state = State::Code(Box::new(CodeBlock {
                    fence,
                    len,
                    highlighter: Highlighter::new(language),
                }));
                let newline = rest.get(indent + line) == Some(&'\n');
                if newline {
                    self.painter.newline();
                }
                return Some(indent + line + usize::from(newline));
            }
        };
        Some(indent + marker)
    }

    /// The style of inline text now.
    fn style(&self) -> Style {
        let mut s = self.base;
        let i = &self.inline;
        if i.bold || i.italic {
            let emphasis = self.palette.get(Role::Emphasis);
            if s.fg == Colour::Default {
                s.fg = emphasis;
            }
            s.bold |= i.bold;
            s.italic |= i.italic;
        }
        s.strike |= i.strike;
        if i.code.is_some() {
            s.fg = self.palette.get(Role::Code);
        }
        s
    }

    fn emit(&mut self, chars: &[char]) {
        if let Some(last) = chars.last() {
            let text: String = chars.iter().collect();
            self.painter.text(self.style(), &text);
            self.inline.prev = Some(*last);
        }
    }

    fn inline_step(&mut self, rest: &[char], eof: bool) -> Option<usize> {
        let c = rest[0];
        if c == '\n' {
            self.painter.newline();
            self.inline = Inline::default();
            self.base = Style::PLAIN;
            self.state = State::LineStart { quoted: false };
            return Some(1);
        }
        let run = rest.iter().take_while(|x| **x == c).count();
        if let Some(open) = self.inline.code {
            if c == '`' {
                if run == rest.len() && !eof {
                    return None;
                }
                if run == open {
                    self.inline.code = None;
                    self.inline.prev = Some('`');
                } else {
                    self.emit(&rest[..run]);
                }
                return Some(run);
            }
            let len = rest
                .iter()
                .position(|x| *x == '`' || *x == '\n')
                .unwrap_or(rest.len());
            self.emit(&rest[..len]);
            return Some(len);
        }
        match c {
            '\\' => match peek(rest, 1, eof) {
                Peek::More => None,
                Peek::Char(d) if d.is_ascii_punctuation() => {
                    self.emit(&rest[1..2]);
                    Some(2)
                }
                _ => {
                    self.emit(&rest[..1]);
                    Some(1)
                }
            },
            '`' => {
                if run == rest.len() && !eof {
                    return None;
                }
                self.inline.code = Some(run);
                self.inline.prev = Some('`');
                Some(run)
            }
            '*' | '_' | '~' => {
                if run == rest.len() && !eof {
                    return None;
                }
                if !self.emphasis(c, run, rest.get(run).copied()) {
                    self.emit(&rest[..run]);
                }
                self.inline.prev = Some(c);
                Some(run)
            }
            '[' => match scan_link(rest, eof) {
                LinkScan::More => None,
                LinkScan::No => {
                    self.emit(&rest[..1]);
                    Some(1)
                }
                LinkScan::Link { text, url, len } => {
                    self.link(&text, &url);
                    self.inline.prev = Some(')');
                    Some(len)
                }
            },
            _ => {
                let len = rest
                    .iter()
                    .position(|x| is_special(*x))
                    .unwrap_or(rest.len());
                self.emit(&rest[..len]);
                Some(len)
            }
        }
    }

    /// Applies an emphasis delimiter run; false when it is literal text.
    fn emphasis(&mut self, c: char, run: usize, next: Option<char>) -> bool {
        let prev = self.inline.prev;
        let mut can_open = next.is_some_and(|n| !n.is_whitespace());
        let mut can_close = prev.is_some_and(|p| !p.is_whitespace());
        if c == '_' {
            can_open &= !prev.is_some_and(char::is_alphanumeric);
            can_close &= !next.is_some_and(char::is_alphanumeric);
        }
        let i = &mut self.inline;
        let toggle = |on: &mut bool| {
            if (*on && can_close) || (!*on && can_open) {
                *on = !*on;
                true
            } else {
                false
            }
        };
        match (c, run) {
            ('~', 2) => toggle(&mut i.strike),
            ('~', _) => false,
            (_, 1) => toggle(&mut i.italic),
            (_, 2) => toggle(&mut i.bold),
            (_, 3) if i.bold && i.italic && can_close => {
                i.bold = false;
                i.italic = false;
                true
            }
            (_, 3) if !i.bold && !i.italic && can_open => {
                i.bold = true;
                i.italic = true;
                true
            }
            _ => false,
        }
    }

    fn link(&mut self, text: &str, url: &str) {
        let text: String = text.chars().filter(|c| *c != '`').collect();
        let shown = if text.is_empty() { url } else { text.as_str() };
        let style = Style {
            underline: true,
            fg: self.palette.get(Role::Link),
            ..self.style()
        };
        self.painter.text(style, shown);
        if !url.is_empty() && url != shown {
            let dim = Style::fg(self.palette.get(Role::Dim));
            self.painter.text(dim, &format!(" ({url})"));
        }
    }
}

/// Whether `line` closes a code block opened by `len` × `fence`.
fn is_closing_fence(line: &str, fence: char, len: usize) -> bool {
    let t = line.trim_start();
    let run = t.chars().take_while(|c| *c == fence).count();
    run >= len && t[run * fence.len_utf8()..].trim().is_empty()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const SAMPLE: &str = "\
# Heading **one**

Some *italic*, **bold**, `code`, ~~gone~~ and a [link](https://example.com/a_(b)).
snake_case_name stays, 2 * 3 * 4 too, \\*escaped\\* and C:\\path.

- bullet with `code`
  * nested **bold**
1. first
10) tenth
> quoted *text*
> > nested
---
***
___

```rust
fn main() { println!(\"hi\"); } // done
```
~~~
plain ~~~ block
~~~
日本語のテキスト 🎉 **太字** and emoji 👩‍👩‍👧 _斜体_.
Trailing *open";

    fn strip_sgr(s: &str) -> String {
        let mut out = String::new();
        let mut chars = s.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '\x1b' {
                for d in chars.by_ref() {
                    if d == 'm' {
                        break;
                    }
                }
            } else {
                out.push(c);
            }
        }
        out
    }

    fn render(text: &str) -> String {
        MarkdownStream::render(&Skin::builtin_default(), true, text)
    }

    fn render_split(text: &str, cuts: &[usize]) -> String {
        let mut md = MarkdownStream::new(&Skin::builtin_default(), true);
        let chars: Vec<char> = text.chars().collect();
        let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (chars.len() + 1)).collect();
        cuts.sort_unstable();
        let mut out = String::new();
        let mut last = 0;
        for cut in cuts.into_iter().chain([chars.len()]) {
            let piece: String = chars[last..cut].iter().collect();
            out.push_str(&md.push(&piece));
            last = cut;
        }
        out.push_str(&md.finish());
        out
    }

    #[test]
    fn no_colour_is_identity() {
        let mut md = MarkdownStream::new(&Skin::builtin_default(), false);
        let mut out = String::new();
        for piece in SAMPLE.split_inclusive(['*', '`', '\n']) {
            out.push_str(&md.push(piece));
        }
        out.push_str(&md.finish());
        assert_eq!(out, SAMPLE);
    }

    #[test]
    fn every_split_of_the_sample_matches_one_push() {
        let whole = render(SAMPLE);
        let n = SAMPLE.chars().count();
        for cut in 0..=n {
            assert_eq!(render_split(SAMPLE, &[cut]), whole, "cut at {cut}");
        }
        let each: Vec<usize> = (0..=n).collect();
        assert_eq!(render_split(SAMPLE, &each), whole, "one char at a time");
    }

    #[test]
    fn constructs_render() {
        let out = render(SAMPLE);
        let plain = strip_sgr(&out);
        let lines: Vec<&str> = plain.lines().collect();
        assert_eq!(lines[0], "Heading one");
        assert!(out.starts_with("\x1b[0;1;4;96mHeading "), "{out:?}");
        assert_eq!(
            lines[2],
            "Some italic, bold, code, gone and a link (https://example.com/a_(b))."
        );
        assert_eq!(
            lines[3],
            "snake_case_name stays, 2 * 3 * 4 too, *escaped* and C:\\path."
        );
        assert_eq!(lines[5], "• bullet with code");
        assert_eq!(lines[6], "  ◦ nested bold");
        assert_eq!(lines[7], "1. first");
        assert_eq!(lines[8], "10) tenth");
        assert_eq!(lines[9], "│ quoted text");
        assert_eq!(lines[10], "│ │ nested");
        for rule in &lines[11..14] {
            assert_eq!(*rule, "─".repeat(RULE_WIDTH));
        }
        assert_eq!(lines[15], "```rust");
        assert_eq!(lines[16], "fn main() { println!(\"hi\"); } // done");
        assert_eq!(lines[17], "```");
        assert_eq!(lines[19], "plain ~~~ block");
        assert_eq!(lines[21], "日本語のテキスト 🎉 太字 and emoji 👩‍👩‍👧 斜体.");
        assert_eq!(lines[22], "Trailing open");
        // Styles.
        assert!(out.contains("\x1b[0;3mitalic"), "{out:?}");
        assert!(out.contains("\x1b[0;1mbold"), "{out:?}");
        assert!(out.contains("\x1b[0;33mcode"), "{out:?}");
        assert!(out.contains("\x1b[0;9mgone"), "{out:?}");
        assert!(
            out.contains("\x1b[0;4;34mlink\x1b[0;90m (https://"),
            "{out:?}"
        );
        assert!(out.contains("\x1b[0;36m•"), "{out:?}");
        assert!(out.contains("\x1b[0;90m│ "), "{out:?}");
        assert!(out.contains("\x1b[0;35mfn"), "keyword highlighted: {out:?}");
        assert!(
            out.contains("\x1b[0;32m\"hi\""),
            "string highlighted: {out:?}"
        );
        assert!(
            out.contains("\x1b[0;90m// done"),
            "comment highlighted: {out:?}"
        );
        assert!(
            out.contains("\x1b[0;33mplain ~~~ block"),
            "unknown language: {out:?}"
        );
        assert!(out.ends_with("\x1b[0m"), "{out:?}");
    }

    #[test]
    fn plain_text_streams_before_the_line_ends() {
        let mut md = MarkdownStream::new(&Skin::builtin_default(), true);
        assert_eq!(md.push("Hello wor"), "Hello wor");
        assert_eq!(md.push("ld, this is"), "ld, this is");
        // Only an ambiguous trailing marker waits.
        assert_eq!(md.push(" so *"), " so ");
        assert_eq!(md.push("very"), "\x1b[0;3mvery");
        assert_eq!(md.push("* "), "\x1b[0m ");
        let bullet = md.push("\n- item");
        assert!(strip_sgr(&bullet).ends_with("• item"), "{bullet:?}");
        let heading = md.push("\n## Tit");
        assert!(strip_sgr(&heading).ends_with("Tit"), "{heading:?}");
        // Code waits for whole lines.
        let fence = md.push("\n```py\nprint(1");
        assert!(strip_sgr(&fence).ends_with("```py\n"), "{fence:?}");
        assert!(strip_sgr(&md.push(")\n")).ends_with("print(1)\n"));
        assert!(strip_sgr(&md.finish()).is_empty());
    }

    #[test]
    fn stream_is_reusable_after_finish() {
        let mut md = MarkdownStream::new(&Skin::builtin_default(), true);
        md.push("```\nunterminated *x*");
        md.finish();
        assert_eq!(strip_sgr(&(md.push("*a*") + &md.finish())), "a");
    }

    #[test]
    fn model_escape_sequences_are_neutralised() {
        let out = render("evil \x1b]0;title\x07 text\n");
        assert!(!out.contains('\x07'));
        assert!(!out.contains("\x1b]"));
    }

    #[test]
    fn mono_skin_uses_attributes_only() {
        let mono = crate::skin::SkinCatalog::builtin().resolve("mono").unwrap();
        let out = MarkdownStream::render(&mono, true, "# T\n`c` **b**\n");
        assert_eq!(out, "\x1b[0;1;4mT\x1b[0m\nc \x1b[0;1mb\x1b[0m\n");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        #[test]
        fn random_splits_of_the_sample(cuts in prop::collection::vec(0usize..2000, 0..12)) {
            prop_assert_eq!(render_split(SAMPLE, &cuts), render(SAMPLE));
        }

        #[test]
        fn random_text_random_splits(
            text in "([a-z]{1,3}|[ *_`~#>\\\\\\[\\]()!.:|-]|\n|1\\. |```|~~~|é|日本|🎉){0,60}",
            cuts in prop::collection::vec(0usize..400, 0..8),
        ) {
            let whole = render(&text);
            prop_assert_eq!(render_split(&text, &cuts), whole.clone());
            // Attributes are always reset at the end.
            if let Some(last) = whole.rfind('\x1b') {
                prop_assert!(whole[last..].starts_with("\x1b[0m"), "{:?}", whole);
            }
            // No colour: identity.
            let mut md = MarkdownStream::new(&Skin::builtin_default(), false);
            let mut out = md.push(&text);
            out.push_str(&md.finish());
            prop_assert_eq!(out, text);
        }
    }
}
