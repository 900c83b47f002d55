//! Colours, roles and the SGR (Select Graphic Rendition) sequences that paint them.

use std::fmt;
use std::str::FromStr;

/// The colour names a skin may use, in the order error messages list them.
const NAMES: [&str; 8] = [
    "black", "red", "green", "yellow", "blue", "magenta", "cyan", "white",
];

/// What a bad colour name is told, after the name itself.
pub(crate) const COLOUR_EXPECTED: &str = "expected black, red, green, yellow, blue, magenta, \
     cyan, white, bright-<name>, grey, default or #rrggbb";

/// A foreground colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum Colour {
    /// The terminal's own foreground colour: no colour sequence at all.
    #[default]
    Default,
    /// One of the 16 ANSI colours: 0–7 normal (black … white), 8–15 bright.
    Ansi(u8),
    /// A 24-bit colour.
    Rgb(u8, u8, u8),
}

/// A colour name that is none of the accepted ones.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown colour '{0}' ({COLOUR_EXPECTED})")]
pub struct ParseColourError(pub String);

impl FromStr for Colour {
    type Err = ParseColourError;

    /// Accepts `black red green yellow blue magenta cyan white`, the same with a
    /// `bright-` (or `bright_`) prefix, `grey`/`gray` (bright black), `default` and
    /// `#rrggbb`; case does not matter.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || ParseColourError(s.to_string());
        let name = s.trim().to_ascii_lowercase();
        if let Some(hex) = name.strip_prefix('#') {
            if hex.len() != 6 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(bad());
            }
            let byte = |i: usize| u8::from_str_radix(&hex[i..i + 2], 16).map_err(|_| bad());
            return Ok(Colour::Rgb(byte(0)?, byte(2)?, byte(4)?));
        }
        match name.as_str() {
            "default" => return Ok(Colour::Default),
            "grey" | "gray" => return Ok(Colour::Ansi(8)),
            _ => {}
        }
        let (base, bright) = match name
            .strip_prefix("bright-")
            .or_else(|| name.strip_prefix("bright_"))
        {
            Some(rest) => (rest, true),
            None => (name.as_str(), false),
        };
        let index = NAMES.iter().position(|n| *n == base).ok_or_else(bad)?;
        // `index` < 8, so it fits.
        let index = u8::try_from(index).map_err(|_| bad())?;
        Ok(Colour::Ansi(if bright { index + 8 } else { index }))
    }
}

impl fmt::Display for Colour {
    /// The canonical name: `default`, `cyan`, `bright-red`, `#1a2b3c`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Colour::Default => f.write_str("default"),
            Colour::Ansi(n) => {
                let name = NAMES.get(usize::from(n % 8)).copied().unwrap_or("white");
                if n >= 8 {
                    write!(f, "bright-{name}")
                } else {
                    f.write_str(name)
                }
            }
            Colour::Rgb(r, g, b) => write!(f, "#{r:02x}{g:02x}{b:02x}"),
        }
    }
}

impl Colour {
    /// Appends this colour's foreground SGR parameters (with a leading `;`), if any.
    fn push_fg(self, out: &mut String) {
        use fmt::Write as _;
        // Writing to a String cannot fail.
        let _ = match self {
            Colour::Default => Ok(()),
            Colour::Ansi(n) if n < 8 => write!(out, ";{}", 30 + u16::from(n)),
            Colour::Ansi(n) => write!(out, ";{}", 90 + u16::from(n.min(15) - 8)),
            Colour::Rgb(r, g, b) => write!(out, ";38;2;{r};{g};{b}"),
        };
    }
}

macro_rules! roles {
    ($( $(#[$doc:meta])* $variant:ident = $name:literal, )*) => {
        /// What a piece of text is, for choosing its colour from a skin's palette.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Role {
            $( $(#[$doc])* $variant, )*
        }

        impl Role {
            /// Every role, in the order of the palette (and of the README).
            pub const ALL: [Role; roles!(@count $($variant)*)] = [$(Role::$variant),*];

            /// The role's key under `colors:` in a skin file.
            pub fn name(self) -> &'static str {
                match self {
                    $( Role::$variant => $name, )*
                }
            }
        }
    };
    (@count $($x:ident)*) => { 0 $(+ roles!(@one $x))* };
    (@one $x:ident) => { 1 };
}

roles! {
    /// Banner, spinner face, highlights.
    Accent = "accent",
    /// Ordinary text.
    Text = "text",
    /// Secondary text: fences, quote bars, durations, hints.
    Dim = "dim",
    /// Markdown headings.
    Heading = "heading",
    /// Inline code and code blocks of unknown languages.
    Code = "code",
    /// `**bold**` and `*italic*` text.
    Emphasis = "emphasis",
    /// Link text.
    Link = "link",
    /// List bullets and numbers.
    Bullet = "bullet",
    /// Tool names in the activity feed.
    Tool = "tool",
    /// Success marks.
    Success = "success",
    /// Errors.
    Error = "error",
    /// Warnings.
    Warning = "warning",
    /// The input prompt symbol.
    Prompt = "prompt",
    /// The model's reasoning (thinking) text.
    Reasoning = "reasoning",
    /// Code highlighting: keywords (and keys in JSON, YAML and TOML).
    Keyword = "keyword",
    /// Code highlighting: string literals.
    String = "string",
    /// Code highlighting: comments.
    Comment = "comment",
    /// Code highlighting: numbers and literals such as `true` and `null`.
    Number = "number",
}

impl Role {
    /// The role with this `colors:` key, if any.
    pub fn from_name(name: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|r| r.name() == name)
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// The colour of every [`Role`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Palette {
    colours: [Colour; Role::ALL.len()],
}

impl Palette {
    /// The colour of `role`.
    pub fn get(&self, role: Role) -> Colour {
        self.colours[role.index()]
    }

    /// Sets the colour of `role`.
    pub fn set(&mut self, role: Role, colour: Colour) {
        self.colours[role.index()] = colour;
    }

    /// `text` in `role`'s colour when `color` is true (each line wrapped in its own
    /// SGR sequence and reset), `text` unchanged otherwise or when the colour is
    /// [`Colour::Default`].
    pub fn paint(&self, role: Role, text: &str, color: bool) -> String {
        let style = Style {
            fg: self.get(role),
            ..Style::PLAIN
        };
        if !color || style == Style::PLAIN {
            return text.to_string();
        }
        paint_lines(&style, text)
    }
}

/// Wraps each non-empty line of `text` in `style`'s SGR sequence and a reset.
pub(crate) fn paint_lines(style: &Style, text: &str) -> String {
    let open = style.sgr();
    let mut out = String::with_capacity(text.len() + 16);
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        if !line.is_empty() {
            out.push_str(&open);
            out.push_str(line);
            out.push_str(RESET);
        }
    }
    out
}

/// Resets every attribute.
pub(crate) const RESET: &str = "\x1b[0m";

/// A complete set of text attributes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Style {
    pub fg: Colour,
    pub bold: bool,
    pub faint: bool,
    pub italic: bool,
    pub underline: bool,
    pub strike: bool,
}

impl Style {
    /// No attributes.
    pub const PLAIN: Style = Style {
        fg: Colour::Default,
        bold: false,
        faint: false,
        italic: false,
        underline: false,
        strike: false,
    };

    /// A style with only a foreground colour.
    pub fn fg(fg: Colour) -> Style {
        Style { fg, ..Style::PLAIN }
    }

    /// The sequence that sets exactly this style (from any previous one).
    pub fn sgr(&self) -> String {
        let mut s = String::from("\x1b[0");
        for (on, code) in [
            (self.bold, ";1"),
            (self.faint, ";2"),
            (self.italic, ";3"),
            (self.underline, ";4"),
            (self.strike, ";9"),
        ] {
            if on {
                s.push_str(code);
            }
        }
        self.fg.push_fg(&mut s);
        s.push('m');
        s
    }
}

/// Writes text with styles, emitting a sequence only when the style changes and
/// only just before visible text: the output depends on the text and styles
/// alone, never on how the calls were split.
#[derive(Debug, Default)]
pub(crate) struct Painter {
    out: String,
    current: Style,
}

impl Painter {
    /// Appends `text` in `style`. Control characters other than tab, newline and
    /// carriage return become U+FFFD so model output cannot drive the terminal.
    pub fn text(&mut self, style: Style, text: &str) {
        if text.is_empty() {
            return;
        }
        if style != self.current {
            if style == Style::PLAIN {
                self.out.push_str(RESET);
            } else {
                self.out.push_str(&style.sgr());
            }
            self.current = style;
        }
        push_sanitized(&mut self.out, text);
    }

    /// Resets the attributes if any are set.
    pub fn reset(&mut self) {
        if self.current != Style::PLAIN {
            self.out.push_str(RESET);
            self.current = Style::PLAIN;
        }
    }

    /// Resets, then ends the line.
    pub fn newline(&mut self) {
        self.reset();
        self.out.push('\n');
    }

    /// Everything written since the last call.
    pub fn take(&mut self) -> String {
        std::mem::take(&mut self.out)
    }
}

/// Appends `text` with control characters (other than `\t`, `\n`, `\r`) replaced.
pub(crate) fn push_sanitized(out: &mut String, text: &str) {
    if !text.chars().any(is_unsafe_control) {
        out.push_str(text);
        return;
    }
    out.extend(
        text.chars()
            .map(|c| if is_unsafe_control(c) { '\u{FFFD}' } else { c }),
    );
}

fn is_unsafe_control(c: char) -> bool {
    c.is_control() && !matches!(c, '\t' | '\n' | '\r')
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn colour_names_parse() {
        assert_eq!("cyan".parse::<Colour>().unwrap(), Colour::Ansi(6));
        assert_eq!("Bright-Red".parse::<Colour>().unwrap(), Colour::Ansi(9));
        assert_eq!("bright_white".parse::<Colour>().unwrap(), Colour::Ansi(15));
        assert_eq!("grey".parse::<Colour>().unwrap(), Colour::Ansi(8));
        assert_eq!("gray".parse::<Colour>().unwrap(), Colour::Ansi(8));
        assert_eq!("default".parse::<Colour>().unwrap(), Colour::Default);
        assert_eq!(
            "#1A2b3c".parse::<Colour>().unwrap(),
            Colour::Rgb(0x1a, 0x2b, 0x3c)
        );
        for bad in ["blurple", "#12345", "#12345g", "bright-", "", "bright-grey"] {
            let err = bad.parse::<Colour>().unwrap_err().to_string();
            assert!(err.contains("unknown colour"), "{err}");
            assert!(err.contains("#rrggbb"), "{err}");
        }
    }

    #[test]
    fn colour_display_round_trips() {
        for c in [
            Colour::Default,
            Colour::Ansi(3),
            Colour::Ansi(12),
            Colour::Rgb(1, 2, 255),
        ] {
            assert_eq!(c.to_string().parse::<Colour>().unwrap(), c);
        }
    }

    #[test]
    fn roles_have_unique_names() {
        for role in Role::ALL {
            assert_eq!(Role::from_name(role.name()), Some(role));
        }
        assert_eq!(Role::from_name("nope"), None);
    }

    #[test]
    fn sgr_sequences() {
        assert_eq!(Style::fg(Colour::Ansi(1)).sgr(), "\x1b[0;31m");
        assert_eq!(Style::fg(Colour::Ansi(9)).sgr(), "\x1b[0;91m");
        let s = Style {
            bold: true,
            underline: true,
            ..Style::fg(Colour::Rgb(1, 2, 3))
        };
        assert_eq!(s.sgr(), "\x1b[0;1;4;38;2;1;2;3m");
    }

    #[test]
    fn paint_wraps_each_line_and_skips_default() {
        let mut p = Palette::default();
        assert_eq!(p.paint(Role::Accent, "hi", true), "hi");
        p.set(Role::Accent, Colour::Ansi(6));
        assert_eq!(p.paint(Role::Accent, "hi", false), "hi");
        assert_eq!(
            p.paint(Role::Accent, "a\n\nb", true),
            "\x1b[0;36ma\x1b[0m\n\n\x1b[0;36mb\x1b[0m"
        );
    }

    #[test]
    fn painter_is_lazy_and_sanitizes() {
        let mut p = Painter::default();
        p.text(Style::fg(Colour::Ansi(1)), "");
        p.text(Style::PLAIN, "a\x1b[2Jb");
        p.text(Style::fg(Colour::Ansi(1)), "c");
        p.text(Style::fg(Colour::Ansi(1)), "d");
        p.newline();
        assert_eq!(p.take(), "a\u{FFFD}[2Jb\x1b[0;31mcd\x1b[0m\n");
    }
}
