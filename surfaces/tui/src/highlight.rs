//! A small line-by-line code highlighter: keywords, strings, comments and
//! numbers for Rust, Python, JavaScript/TypeScript, Go, C/C++, shell, JSON,
//! YAML and TOML. Not a parser: it aims to look right for typical snippets,
//! and carries block comments and multi-line strings from one line to the next.

use std::ops::Range;

use crate::style::{Painter, Palette, Role, Style};

/// What a highlighted piece of code is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind {
    /// Anything else (identifiers, operators, white space).
    Plain,
    /// A keyword (or a primitive type).
    Keyword,
    /// A string or character literal.
    String,
    /// A comment.
    Comment,
    /// A number or a literal such as `true`, `null`, `None`.
    Number,
    /// A key (JSON, YAML, TOML), a shell variable, a C preprocessor directive.
    Key,
}

impl TokenKind {
    /// The palette role that colours this kind.
    pub fn role(self) -> Role {
        match self {
            TokenKind::Plain => Role::Code,
            TokenKind::Keyword | TokenKind::Key => Role::Keyword,
            TokenKind::String => Role::String,
            TokenKind::Comment => Role::Comment,
            TokenKind::Number => Role::Number,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flavour {
    Generic,
    Rust,
    C,
    Shell,
    Json,
    Yaml,
    Toml,
}

#[derive(Debug, PartialEq, Eq)]
struct Quote {
    open: &'static str,
    close: &'static str,
    multiline: bool,
    escapes: bool,
}

const fn q(open: &'static str, multiline: bool, escapes: bool) -> Quote {
    Quote {
        open,
        close: open,
        multiline,
        escapes,
    }
}

#[derive(Debug)]
struct Lang {
    name: &'static str,
    aliases: &'static [&'static str],
    flavour: Flavour,
    keywords: &'static [&'static str],
    literals: &'static [&'static str],
    line_comments: &'static [&'static str],
    /// Line comments start only at the beginning or after white space (`#` in shell, YAML).
    comment_after_space: bool,
    block_comment: Option<(&'static str, &'static str)>,
    /// Longest openers first.
    quotes: &'static [Quote],
}

const C_KEYWORDS: &[&str] = &[
    "auto",
    "bool",
    "break",
    "case",
    "char",
    "const",
    "continue",
    "default",
    "do",
    "double",
    "else",
    "enum",
    "extern",
    "float",
    "for",
    "goto",
    "if",
    "inline",
    "int",
    "long",
    "register",
    "return",
    "short",
    "signed",
    "sizeof",
    "static",
    "struct",
    "switch",
    "typedef",
    "union",
    "unsigned",
    "void",
    "volatile",
    "while",
    "class",
    "namespace",
    "template",
    "typename",
    "public",
    "private",
    "protected",
    "virtual",
    "override",
    "new",
    "delete",
    "this",
    "using",
    "try",
    "catch",
    "throw",
    "constexpr",
    "noexcept",
    "operator",
    "friend",
    "static_cast",
    "dynamic_cast",
    "reinterpret_cast",
    "const_cast",
    "size_t",
    "std",
    "final",
    "mutable",
];

const JS_KEYWORDS: &[&str] = &[
    "break",
    "case",
    "catch",
    "class",
    "const",
    "continue",
    "debugger",
    "default",
    "delete",
    "do",
    "else",
    "export",
    "extends",
    "finally",
    "for",
    "function",
    "if",
    "import",
    "in",
    "instanceof",
    "let",
    "new",
    "return",
    "super",
    "switch",
    "this",
    "throw",
    "try",
    "typeof",
    "var",
    "void",
    "while",
    "with",
    "yield",
    "async",
    "await",
    "of",
    "static",
    "get",
    "set",
    "from",
    "as",
    "interface",
    "type",
    "enum",
    "implements",
    "private",
    "public",
    "protected",
    "readonly",
    "abstract",
    "declare",
    "namespace",
    "keyof",
    "string",
    "number",
    "boolean",
    "any",
    "unknown",
    "never",
];

const LANGS: &[Lang] = &[
    Lang {
        name: "rust",
        aliases: &["rs"],
        flavour: Flavour::Rust,
        keywords: &[
            "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum",
            "extern", "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod", "move",
            "mut", "pub", "ref", "return", "self", "Self", "static", "struct", "super", "trait",
            "type", "unsafe", "use", "where", "while", "yield", "bool", "char", "str", "u8", "u16",
            "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64", "i128", "isize", "f32",
            "f64",
        ],
        literals: &["true", "false"],
        line_comments: &["//"],
        comment_after_space: false,
        block_comment: Some(("/*", "*/")),
        quotes: &[q("\"", true, true)],
    },
    Lang {
        name: "python",
        aliases: &["py", "python3", "py3"],
        flavour: Flavour::Generic,
        keywords: &[
            "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del",
            "elif", "else", "except", "finally", "for", "from", "global", "if", "import", "in",
            "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
            "with", "yield", "match", "case", "self",
        ],
        literals: &["True", "False", "None"],
        line_comments: &["#"],
        comment_after_space: false,
        block_comment: None,
        quotes: &[
            q("\"\"\"", true, true),
            q("'''", true, true),
            q("\"", false, true),
            q("'", false, true),
        ],
    },
    Lang {
        name: "javascript",
        aliases: &["js", "jsx", "mjs", "cjs", "ts", "tsx", "typescript", "node"],
        flavour: Flavour::Generic,
        keywords: JS_KEYWORDS,
        literals: &["true", "false", "null", "undefined", "NaN", "Infinity"],
        line_comments: &["//"],
        comment_after_space: false,
        block_comment: Some(("/*", "*/")),
        quotes: &[
            q("`", true, true),
            q("\"", false, true),
            q("'", false, true),
        ],
    },
    Lang {
        name: "go",
        aliases: &["golang"],
        flavour: Flavour::Generic,
        keywords: &[
            "break",
            "case",
            "chan",
            "const",
            "continue",
            "default",
            "defer",
            "else",
            "fallthrough",
            "for",
            "func",
            "go",
            "goto",
            "if",
            "import",
            "interface",
            "map",
            "package",
            "range",
            "return",
            "select",
            "struct",
            "switch",
            "type",
            "var",
            "string",
            "int",
            "int64",
            "uint",
            "byte",
            "rune",
            "bool",
            "error",
            "float64",
        ],
        literals: &["true", "false", "nil", "iota"],
        line_comments: &["//"],
        comment_after_space: false,
        block_comment: Some(("/*", "*/")),
        quotes: &[
            q("`", true, false),
            q("\"", false, true),
            q("'", false, true),
        ],
    },
    Lang {
        name: "c",
        aliases: &["h", "cpp", "c++", "cc", "cxx", "hpp", "hh", "hxx", "objc"],
        flavour: Flavour::C,
        keywords: C_KEYWORDS,
        literals: &["true", "false", "NULL", "nullptr"],
        line_comments: &["//"],
        comment_after_space: false,
        block_comment: Some(("/*", "*/")),
        quotes: &[q("\"", false, true), q("'", false, true)],
    },
    Lang {
        name: "sh",
        aliases: &[
            "bash",
            "shell",
            "zsh",
            "console",
            "shell-session",
            "ksh",
            "dash",
        ],
        flavour: Flavour::Shell,
        keywords: &[
            "if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case",
            "esac", "function", "in", "return", "export", "local", "readonly", "unset", "shift",
            "exit", "break", "continue", "declare", "source", "alias", "set", "trap", "eval",
            "exec",
        ],
        literals: &["true", "false"],
        line_comments: &["#"],
        comment_after_space: true,
        block_comment: None,
        quotes: &[q("\"", true, true), q("'", true, false)],
    },
    Lang {
        name: "json",
        aliases: &["jsonc", "json5", "jsonl", "ndjson"],
        flavour: Flavour::Json,
        keywords: &[],
        literals: &["true", "false", "null"],
        line_comments: &["//"],
        comment_after_space: false,
        block_comment: Some(("/*", "*/")),
        quotes: &[q("\"", false, true)],
    },
    Lang {
        name: "yaml",
        aliases: &["yml"],
        flavour: Flavour::Yaml,
        keywords: &[],
        literals: &[
            "true", "false", "null", "yes", "no", "on", "off", "True", "False", "Null", "~",
        ],
        line_comments: &["#"],
        comment_after_space: true,
        block_comment: None,
        quotes: &[q("\"", false, true), q("'", false, false)],
    },
    Lang {
        name: "toml",
        aliases: &[],
        flavour: Flavour::Toml,
        keywords: &[],
        literals: &["true", "false", "inf", "nan"],
        line_comments: &["#"],
        comment_after_space: false,
        block_comment: None,
        quotes: &[
            q("\"\"\"", true, true),
            q("'''", true, false),
            q("\"", false, true),
            q("'", false, false),
        ],
    },
];

/// What the previous line left open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Carry {
    None,
    BlockComment,
    String(&'static Quote),
}

/// Highlights the lines of one code block in turn.
#[derive(Debug)]
pub struct Highlighter {
    lang: Option<&'static Lang>,
    carry: Carry,
}

impl Highlighter {
    /// A highlighter for `language` (a fence's info string word such as `rust`,
    /// `py`, `ts`, `bash`; case does not matter). Unknown languages highlight
    /// nothing: every line is one [`TokenKind::Plain`] token.
    pub fn new(language: &str) -> Highlighter {
        let wanted = language.trim().to_ascii_lowercase();
        let lang = LANGS
            .iter()
            .find(|l| l.name == wanted || l.aliases.contains(&wanted.as_str()));
        Highlighter {
            lang,
            carry: Carry::None,
        }
    }

    /// The canonical name of the language, if it is one this highlighter knows.
    pub fn language(&self) -> Option<&'static str> {
        self.lang.map(|l| l.name)
    }

    /// Splits one line (without its newline) into tokens, in order, covering
    /// the whole line; adjacent tokens of the same kind are merged.
    pub fn tokens<'l>(&mut self, line: &'l str) -> Vec<(TokenKind, &'l str)> {
        let ranges = match self.lang {
            Some(lang) => self.scan(lang, line),
            None => vec![(TokenKind::Plain, 0..line.len())],
        };
        let mut out: Vec<(TokenKind, Range<usize>)> = Vec::with_capacity(ranges.len());
        for (kind, range) in ranges {
            if range.is_empty() {
                continue;
            }
            match out.last_mut() {
                Some((k, r)) if *k == kind && r.end == range.start => r.end = range.end,
                _ => out.push((kind, range)),
            }
        }
        out.into_iter().map(|(k, r)| (k, &line[r])).collect()
    }

    /// One line in the palette's colours (reset at its end), or unchanged
    /// when `color` is false.
    pub fn paint(&mut self, line: &str, palette: &Palette, color: bool) -> String {
        let tokens = self.tokens(line);
        if !color {
            return line.to_string();
        }
        let mut painter = Painter::default();
        for (kind, text) in tokens {
            painter.text(Style::fg(palette.get(kind.role())), text);
        }
        painter.reset();
        painter.take()
    }

    fn scan(&mut self, lang: &'static Lang, line: &str) -> Vec<(TokenKind, Range<usize>)> {
        let mut out = Vec::new();
        let mut i = 0;
        // Finish what the previous line left open.
        match self.carry {
            Carry::None => {}
            Carry::BlockComment => {
                let close = lang.block_comment.map_or("*/", |(_, c)| c);
                match line.find(close) {
                    Some(at) => {
                        i = at + close.len();
                        out.push((TokenKind::Comment, 0..i));
                        self.carry = Carry::None;
                    }
                    None => return vec![(TokenKind::Comment, 0..line.len())],
                }
            }
            Carry::String(quote) => match find_close(line, 0, quote) {
                Some(end) => {
                    out.push((TokenKind::String, 0..end));
                    i = end;
                    self.carry = Carry::None;
                }
                None => return vec![(TokenKind::String, 0..line.len())],
            },
        }
        let line_start = line.len() - line.trim_start().len();
        if i == 0 {
            match lang.flavour {
                Flavour::Yaml => i = yaml_key(line, &mut out),
                Flavour::Toml => i = toml_key(line, &mut out),
                Flavour::C if line[line_start..].starts_with('#') => {
                    let end = ident_end(line, line_start + 1);
                    out.push((TokenKind::Key, line_start..end));
                    i = end;
                }
                _ => {}
            }
        }
        while i < line.len() {
            let rest = &line[i..];
            let prev = line[..i].chars().next_back();
            let Some(c) = rest.chars().next() else {
                break;
            };
            // Comments.
            let comment_ok = !lang.comment_after_space || prev.is_none_or(char::is_whitespace);
            if comment_ok && lang.line_comments.iter().any(|p| rest.starts_with(p)) {
                out.push((TokenKind::Comment, i..line.len()));
                break;
            }
            if let Some((open, close)) = lang.block_comment
                && rest.starts_with(open)
            {
                match rest[open.len()..].find(close) {
                    Some(at) => {
                        let end = i + open.len() + at + close.len();
                        out.push((TokenKind::Comment, i..end));
                        i = end;
                    }
                    None => {
                        out.push((TokenKind::Comment, i..line.len()));
                        self.carry = Carry::BlockComment;
                        break;
                    }
                }
                continue;
            }
            // Rust: a char literal ('a', '\n') or a lifetime ('a).
            if lang.flavour == Flavour::Rust && c == '\'' {
                let end = rust_char_end(rest).map_or_else(|| ident_end(line, i + 1), |n| i + n);
                let kind = if end > i + 1 && line[i..end].ends_with('\'') {
                    TokenKind::String
                } else {
                    TokenKind::Plain
                };
                out.push((kind, i..end.max(i + 1)));
                i = end.max(i + 1);
                continue;
            }
            // Strings.
            if let Some(quote) = lang.quotes.iter().find(|q| rest.starts_with(q.open)) {
                let body = i + quote.open.len();
                match find_close(line, body, quote) {
                    Some(end) => {
                        let kind = if lang.flavour == Flavour::Json
                            && line[end..].trim_start().starts_with(':')
                        {
                            TokenKind::Key
                        } else {
                            TokenKind::String
                        };
                        out.push((kind, i..end));
                        i = end;
                    }
                    None => {
                        out.push((TokenKind::String, i..line.len()));
                        if quote.multiline {
                            self.carry = Carry::String(quote);
                        }
                        break;
                    }
                }
                continue;
            }
            let after_ident = prev.is_some_and(is_ident_char);
            // Shell variables.
            if lang.flavour == Flavour::Shell && c == '$' {
                let end = shell_var_end(line, i);
                out.push((
                    if end > i + 1 {
                        TokenKind::Key
                    } else {
                        TokenKind::Plain
                    },
                    i..end,
                ));
                i = end;
                continue;
            }
            // Numbers.
            if c.is_ascii_digit() && !after_ident {
                let end = number_end(line, i);
                out.push((TokenKind::Number, i..end));
                i = end;
                continue;
            }
            // Words.
            if (c.is_alphabetic() || c == '_' || (c == '~' && lang.flavour == Flavour::Yaml))
                && !after_ident
            {
                let end = if c == '~' { i + 1 } else { ident_end(line, i) };
                let word = &line[i..end];
                let kind = if lang.keywords.contains(&word) {
                    TokenKind::Keyword
                } else if lang.literals.contains(&word) {
                    TokenKind::Number
                } else {
                    TokenKind::Plain
                };
                out.push((kind, i..end));
                i = end;
                continue;
            }
            let end = i + c.len_utf8();
            out.push((TokenKind::Plain, i..end));
            i = end;
        }
        out
    }
}

fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The end of the identifier starting at `start` (which may be empty).
fn ident_end(line: &str, start: usize) -> usize {
    line[start..]
        .char_indices()
        .find(|(_, c)| !is_ident_char(*c))
        .map_or(line.len(), |(at, _)| start + at)
}

/// The end of the number starting at `start`: digits, letters (hex, suffixes,
/// exponents), `_`, and a `.` followed by a digit.
fn number_end(line: &str, start: usize) -> usize {
    let bytes = line.as_bytes();
    let mut i = start;
    while i < bytes.len() {
        let b = bytes[i];
        if b.is_ascii_alphanumeric() || b == b'_' {
            i += 1;
        } else if b == b'.' && bytes.get(i + 1).is_some_and(u8::is_ascii_digit) {
            i += 2;
        } else {
            break;
        }
    }
    i
}

/// The end of a closing `quote` searched from `from`, past escapes.
fn find_close(line: &str, from: usize, quote: &Quote) -> Option<usize> {
    let mut i = from;
    let bytes = line.as_bytes();
    while i < line.len() {
        if quote.escapes && bytes[i] == b'\\' {
            i += 2;
            continue;
        }
        if line[i..].starts_with(quote.close) {
            return Some(i + quote.close.len());
        }
        i += line[i..].chars().next().map_or(1, char::len_utf8);
    }
    None
}

/// The length of a Rust char literal at the start of `rest` (`'a'`, `'\n'`,
/// `'\u{1F600}'`), if there is one.
fn rust_char_end(rest: &str) -> Option<usize> {
    let mut chars = rest.char_indices().skip(1);
    let (_, first) = chars.next()?;
    if first == '\\' {
        let close = rest[2..].find('\'')?;
        return (close <= 10).then_some(2 + close + 1);
    }
    let (at, second) = chars.next()?;
    (second == '\'').then_some(at + 1)
}

/// The end of a shell variable reference starting with `$` at `start`.
fn shell_var_end(line: &str, start: usize) -> usize {
    let rest = &line[start + 1..];
    if rest.starts_with('{') {
        return rest.find('}').map_or(line.len(), |at| start + 1 + at + 1);
    }
    match rest.chars().next() {
        Some(c) if c.is_ascii_digit() || "@*#?$!-".contains(c) => start + 2,
        Some(c) if c.is_alphabetic() || c == '_' => ident_end(line, start + 1),
        _ => start + 1,
    }
}

/// Marks a YAML line's key (after any `- `); returns where the value begins.
fn yaml_key(line: &str, out: &mut Vec<(TokenKind, Range<usize>)>) -> usize {
    let mut i = line.len() - line.trim_start().len();
    while line[i..].starts_with("- ") {
        i += 2;
        i += line[i..].len() - line[i..].trim_start().len();
    }
    let rest = &line[i..];
    if rest.starts_with('#') {
        return 0;
    }
    let key_end = if let Some(quote @ ('"' | '\'')) = rest.chars().next() {
        rest[1..].find(quote).map(|at| at + 2)
    } else {
        let bytes = rest.as_bytes();
        (0..bytes.len()).find(|&j| {
            bytes[j] == b':' && bytes.get(j + 1).is_none_or(|b| *b == b' ' || *b == b'\t')
        })
    };
    match key_end {
        Some(end) if rest[end..].starts_with(':') && end > 0 => {
            out.push((TokenKind::Plain, 0..i));
            out.push((TokenKind::Key, i..i + end));
            i + end
        }
        _ => 0,
    }
}

/// Marks a TOML line's table header or key; returns where the value begins.
fn toml_key(line: &str, out: &mut Vec<(TokenKind, Range<usize>)>) -> usize {
    let start = line.len() - line.trim_start().len();
    let rest = &line[start..];
    if rest.starts_with('[') {
        let end = rest.rfind(']').map_or(line.len(), |at| start + at + 1);
        out.push((TokenKind::Plain, 0..start));
        out.push((TokenKind::Key, start..end));
        return end;
    }
    let key_len = rest
        .find(|c: char| !(c.is_alphanumeric() || "_-.\"' ".contains(c)))
        .unwrap_or(rest.len());
    if key_len > 0 && rest[key_len..].starts_with('=') {
        let key = rest[..key_len].trim_end();
        out.push((TokenKind::Plain, 0..start));
        out.push((TokenKind::Key, start..start + key.len()));
        return start + key.len();
    }
    0
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use TokenKind::String as Str;
    use TokenKind::{Comment, Key, Keyword, Number, Plain};

    fn kinds(lang: &str, lines: &[&str]) -> Vec<Vec<(TokenKind, String)>> {
        let mut h = Highlighter::new(lang);
        lines
            .iter()
            .map(|l| {
                let tokens = h.tokens(l);
                let joined: String = tokens.iter().map(|(_, t)| *t).collect();
                assert_eq!(&joined, l, "tokens cover the line");
                tokens
                    .into_iter()
                    .filter(|(k, _)| *k != Plain)
                    .map(|(k, t)| (k, t.to_string()))
                    .collect()
            })
            .collect()
    }

    fn has(tokens: &[(TokenKind, String)], kind: TokenKind, text: &str) -> bool {
        tokens.iter().any(|(k, t)| *k == kind && t == text)
    }

    #[test]
    fn languages_and_aliases() {
        assert_eq!(Highlighter::new("RS").language(), Some("rust"));
        assert_eq!(Highlighter::new("tsx").language(), Some("javascript"));
        assert_eq!(Highlighter::new("c++").language(), Some("c"));
        assert_eq!(Highlighter::new("bash").language(), Some("sh"));
        assert_eq!(Highlighter::new("yml").language(), Some("yaml"));
        assert_eq!(Highlighter::new("brainfuck").language(), None);
        let mut h = Highlighter::new("");
        assert_eq!(h.tokens("fn main() {}"), vec![(Plain, "fn main() {}")]);
    }

    #[test]
    fn rust() {
        let t = kinds(
            "rust",
            &[
                "fn main() -> u8 { let s = \"hi \\\" there\"; // done",
                "let c = '\\n'; fn f<'a>(x: &'a str) { 0x1F + 3.5e2 }",
                "/* open",
                "still */ let x_1 = 1;",
            ],
        );
        assert!(has(&t[0], Keyword, "fn") && has(&t[0], Keyword, "u8"));
        assert!(has(&t[0], Str, "\"hi \\\" there\""));
        assert!(has(&t[0], Comment, "// done"));
        assert!(has(&t[1], Str, "'\\n'"));
        assert!(!t[1].iter().any(|(k, s)| *k == Str && s.contains("'a")));
        assert!(has(&t[1], Number, "0x1F") && has(&t[1], Number, "3.5e2"));
        assert_eq!(t[2], vec![(Comment, "/* open".to_string())]);
        assert!(has(&t[3], Comment, "still */"));
        assert!(has(&t[3], Number, "1") && !has(&t[3], Number, "x_1"));
    }

    #[test]
    fn python_triple_strings_span_lines() {
        let t = kinds(
            "python",
            &[
                "def f(x):  # c",
                "    s = \"\"\"doc",
                "more\"\"\" if x else None",
            ],
        );
        assert!(has(&t[0], Keyword, "def") && has(&t[0], Comment, "# c"));
        assert!(has(&t[1], Str, "\"\"\"doc"));
        assert!(has(&t[2], Str, "more\"\"\""));
        assert!(has(&t[2], Keyword, "if") && has(&t[2], Number, "None"));
    }

    #[test]
    fn javascript_go_c() {
        let t = kinds("ts", &["const x: string = `a ${b}`; // c"]);
        assert!(has(&t[0], Keyword, "const") && has(&t[0], Str, "`a ${b}`"));
        let t = kinds("go", &["func main() { s := `raw", "x` }"]);
        assert!(has(&t[0], Keyword, "func") && has(&t[1], Str, "x`"));
        let t = kinds("c", &["#include <stdio.h>", "int main(void) { return 0; }"]);
        assert!(has(&t[0], Key, "#include"));
        assert!(has(&t[1], Keyword, "int") && has(&t[1], Number, "0"));
    }

    #[test]
    fn shell() {
        let t = kinds(
            "sh",
            &["if [ -n \"$HOME\" ]; then echo ${PATH} $1 a#b; fi # end"],
        );
        assert!(has(&t[0], Keyword, "if") && has(&t[0], Keyword, "fi"));
        assert!(has(&t[0], Str, "\"$HOME\""));
        assert!(has(&t[0], Key, "${PATH}") && has(&t[0], Key, "$1"));
        assert!(has(&t[0], Comment, "# end"));
        assert!(!t[0].iter().any(|(_, s)| s == "#b"));
    }

    #[test]
    fn data_formats() {
        let t = kinds(
            "json",
            &["{\"a\": \"b\", \"n\": -1.5, \"t\": true, \"z\": null}"],
        );
        assert!(has(&t[0], Key, "\"a\"") && has(&t[0], Str, "\"b\""));
        assert!(has(&t[0], Number, "1.5") && has(&t[0], Number, "true"));
        assert!(has(&t[0], Number, "null"));
        let t = kinds(
            "yaml",
            &[
                "name: x  # c",
                "- key: 'v'",
                "  list: [1, true]",
                "url: http://a#b",
            ],
        );
        assert!(has(&t[0], Key, "name") && has(&t[0], Comment, "# c"));
        assert!(has(&t[1], Key, "key") && has(&t[1], Str, "'v'"));
        assert!(has(&t[2], Key, "list") && has(&t[2], Number, "1"));
        assert!(has(&t[2], Number, "true"));
        assert!(!t[3].iter().any(|(k, _)| *k == Comment));
        let t = kinds(
            "toml",
            &[
                "[workspace.deps]",
                "serde = { version = \"1\" } # c",
                "n = 3",
            ],
        );
        assert!(has(&t[0], Key, "[workspace.deps]"));
        assert!(has(&t[1], Key, "serde") && has(&t[1], Str, "\"1\""));
        assert!(has(&t[1], Comment, "# c") && has(&t[2], Number, "3"));
    }

    #[test]
    fn unicode_is_safe() {
        for lang in [
            "rust", "python", "sh", "yaml", "toml", "json", "c", "go", "js",
        ] {
            let mut h = Highlighter::new(lang);
            for line in [
                "let 名前 = \"日本語 🎉\"; // コメント",
                "é'x'ü \"unterminated 🎉",
                "'é",
                "$é ${é} '",
                "#",
                "\\",
                "'\\",
            ] {
                let joined: String = h.tokens(line).iter().map(|(_, t)| *t).collect();
                assert_eq!(joined, line, "{lang}");
            }
        }
    }

    #[test]
    fn paint_colours_tokens() {
        let palette = crate::skin::Skin::builtin_default().palette;
        let mut h = Highlighter::new("rust");
        assert_eq!(h.paint("fn x", &palette, false), "fn x");
        let painted = h.paint("fn x", &palette, true);
        assert!(painted.starts_with("\x1b[0;35mfn"), "{painted:?}");
        assert!(painted.ends_with("\x1b[0m"), "{painted:?}");
    }
}
