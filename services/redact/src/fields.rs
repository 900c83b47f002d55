//! Values of fields whose name says key, token, secret or password: `.env` and properties lines,
//! JSON, YAML, TOML, INI, headers, URL queries, and assignments in code.
//!
//! The name alone does not make the value a secret: in code it is usually an expression
//! (`token = await getToken()`, `api_key = config.get('api_key')`, `password: Option<String>`),
//! and in prose a word (`token: refused HTTP request`). So a field is found by its name and
//! separator, and its value is then read and judged (README, "Judgement calls"):
//! - quoted: data, a secret unless a placeholder, a template or the name of something
//!   (`"GITHUB_TOKEN"`, `"access_token"`);
//! - bare and not the shape of code (`Xk29fjsl2kd9s0dk2`, `hunter2-x`, `a/b+c=`): a secret;
//! - a call, index, generic, macro, `$`/`&`/`*`/`@` reference, keyword or dotted path: code, except
//!   a dotted value on a `.env`-style line;
//! - a bare identifier: a secret on a `.env`-style line (`SECRET=abcdefgh`), in a URL query and as
//!   the whole value of a YAML line (`password: letmein`); elsewhere (`token = getToken`,
//!   `f(api_key=key)`, `token: expired signature`) code or prose.

use std::cell::OnceCell;
use std::ops::Range;
use std::sync::OnceLock;

use regex::Regex;

use crate::judge::{self, code_shaped, is_keyword, names_a_secret, same_name};

/// A secret-named field and its separator; the value is read from the match's end. The parts
/// are taken apart by `Parts::of` rather than by capture groups, which cost as much again as the
/// search.
const FIELD: &str = r#"(?i)[A-Za-z0-9_.-]*(?:api[_.-]?key|apikey|access[_.-]?key|secret[_.-]?(?:access[_.-]?)?key|private[_.-]?key|client[_.-]?secret|signing[_.-]?key|encryption[_.-]?key|master[_.-]?key|secret|token|password|passwd|pwd|passphrase)["'`]?\]?[ \t]*(?::=|=>|=|:)[ \t]*"#;

/// What may stand between a line's start and a name for the line to be a settings line: indent,
/// a JSON string opening (a tool result's `{"content":"`), a line number (`    12\t`, `12|`), a
/// grep location (`src/a.py:12:`), a diff or list marker, `export` and its kin, an opening quote.
const LINE_PREFIX: &str = r#"^[ \t]*(?:[{\[,][ \t]*)?(?:"\w+"[ \t]*:[ \t]*")?[ \t]*(?:\d+(?:\t|\|)[ \t]*|[^\s:]+[:-]\d+[:-][ \t]*)?(?:[+-][ \t]*)?(?:-[ \t]+)?(?:(?:export|set|declare|local|readonly|ENV|ARG)[ \t]+)?["'`]?$"#;

/// Calls whose one string argument is the value itself (`String::from("…")`, `Some("…")`).
const WRAPPERS: &[&str] = &[
    "from",
    "new",
    "Some",
    "str",
    "bytes",
    "SecretStr",
    "SecretString",
    "Secret",
    "Password",
];

/// Roots of dotted values that are code even on a `.env`-style line.
const CODE_ROOTS: &[&str] = &[
    "self", "this", "cls", "config", "settings", "args", "options", "opts", "params", "process",
    "os", "env", "ctx", "context", "request", "req", "app", "secrets", "vars", "inputs",
];

/// A `[section]` header line: the text is an INI file.
const INI_SECTION: &str = r#"(?m)(?:^|\t|\|)[ \t]*\[[A-Za-z][\w .:'"-]*\][ \t]*(?:$|"[,}])"#;

struct Patterns {
    field: Regex,
    line_prefix: Regex,
    ini_section: Regex,
}

fn patterns() -> Option<&'static Patterns> {
    static COMPILED: OnceLock<Option<Patterns>> = OnceLock::new();
    COMPILED
        .get_or_init(|| {
            // Constants checked by the tests; if one failed the field rule would be skipped
            // rather than take the agent down.
            Some(Patterns {
                field: Regex::new(FIELD).ok()?,
                line_prefix: Regex::new(LINE_PREFIX).ok()?,
                ini_section: Regex::new(INI_SECTION).ok()?,
            })
        })
        .as_ref()
}

/// One text being searched, and what is known of it as a whole.
struct Scan<'t> {
    text: &'t str,
    patterns: &'static Patterns,
    /// Whether the text has an INI `[section]` line; looked up when first needed.
    ini: OnceCell<bool>,
}

impl Scan<'_> {
    fn ini(&self) -> bool {
        *self
            .ini
            .get_or_init(|| self.patterns.ini_section.is_match(self.text))
    }
}

/// Where a field stands, as far as judging its value goes.
#[derive(Clone, Copy)]
struct Context<'t> {
    scan: &'t Scan<'t>,
    text: &'t str,
    name: &'t str,
    sep: &'t str,
    /// Whitespace around the separator (`token = x`, `token: x`) rather than `TOKEN=x`.
    spaced: bool,
    /// The name starts its line (after a line number, a marker, `export` …).
    line_start: bool,
    /// The character before the name.
    before_name: Option<char>,
    /// The name is quoted (`"password": …`), as in JSON, rather than a word in a sentence.
    quoted_name: bool,
}

/// Every secret field value in `text`, as byte ranges.
pub(crate) fn find(text: &str, found: &mut Vec<Range<usize>>) {
    let Some(patterns) = patterns() else {
        return;
    };
    let scan = Scan {
        text,
        patterns,
        ini: OnceCell::new(),
    };
    let mut at = 0;
    while let Some(whole) = patterns.field.find_at(text, at) {
        // On to the next field right after this one's separator: a value that is no secret
        // must not hide the field after it (`api_key=changeme&token=…`).
        at = whole.end().max(at + 1);
        let Some(context) = Context::of(&scan, whole.start(), whole.as_str()) else {
            continue;
        };
        if let Some(secret) = context.secret_value(whole.end(), true) {
            at = at.max(secret.end);
            found.push(secret);
        }
    }
}

impl<'t> Context<'t> {
    /// The field matched at `start` (`found`: name, closing quote, separator, spaces).
    fn of(scan: &'t Scan<'t>, start: usize, found: &'t str) -> Option<Self> {
        let text = scan.text;
        // Taken apart from the end: spaces, the separator, spaces, `]`, a closing quote.
        let blanks: &[char] = &[' ', '\t'];
        let through_sep = found.trim_end_matches(blanks);
        let sep_len = if through_sep.ends_with(":=") || through_sep.ends_with("=>") {
            2
        } else {
            1
        };
        let sep = through_sep.get(through_sep.len().checked_sub(sep_len)?..)?;
        let before_sep = &through_sep[..through_sep.len() - sep_len];
        let closed = before_sep.trim_end_matches(blanks);
        let spaced = through_sep.len() != found.len() || closed.len() != before_sep.len();
        let closed = closed.strip_suffix(']').unwrap_or(closed);
        let name_str = closed.strip_suffix(['"', '\'', '`']).unwrap_or(closed);
        let quoted_name = name_str.len() != closed.len();
        let before = &text[..start];
        // `Error::Token => …`, `Variant => b"…"`: a path segment, a match arm. `=>` maps a key
        // when the key is quoted, a symbol or a lower-case word (`'password' => …`,
        // `:password => …`, Perl's `password => …`); a capitalised one is an enum variant.
        let variant = sep == "=>"
            && !quoted_name
            && !before.ends_with(':')
            && name_str.starts_with(|c: char| c.is_ascii_uppercase());
        if before.ends_with("::") || variant {
            return None;
        }
        let bare_name = name_str.trim_start_matches(['-', '.']);
        // `PWD` is a directory.
        if bare_name.eq_ignore_ascii_case("pwd") || bare_name.eq_ignore_ascii_case("oldpwd") {
            return None;
        }
        let line_begin = before.rfind(['\n', '\r']).map_or(0, |i| i + 1);
        let line_start = scan.patterns.line_prefix.is_match(&before[line_begin..]);
        Some(Context {
            scan,
            text,
            name: name_str,
            sep,
            spaced,
            line_start,
            before_name: before.chars().next_back(),
            quoted_name,
        })
    }

    /// The secret that starts at `start`, if the value there is one. `first` is false when
    /// reading the value after a type annotation (`password: &str = "…"`).
    fn secret_value(&self, start: usize, first: bool) -> Option<Range<usize>> {
        let rest = self.text.get(start..)?;
        let next = rest.chars().next()?;
        // `Token::Seq`, `token == x`: a path and a comparison, not a field.
        if (self.sep == ":" && next == ':') || (self.sep == "=" && next == '=') {
            return None;
        }
        if let Some((quoted, template)) = quoted_at(self.text, start) {
            let value = &self.text[quoted.clone()];
            if template && value.contains('{') {
                return None;
            }
            // `unexpected token: "error"`: a word quoted in a sentence, not a field's value.
            let prose = self.sep == ":"
                && !self.quoted_name
                && !self.line_start
                && value.bytes().all(|b| b.is_ascii_alphabetic());
            return (!prose && self.quoted_is_secret(value)).then_some(quoted);
        }
        // A number given to a typed constant (`KEY_ID: u32 = 3225445912`) is code.
        if !first
            && rest
                .bytes()
                .take_while(|b| !b.is_ascii_whitespace() && *b != b';')
                .all(|b| b.is_ascii_digit() || b == b'_')
        {
            return None;
        }
        match self.judge_bare(start) {
            Bare::Secret(range) => Some(range),
            Bare::Nothing => None,
            Bare::Code => {
                if first && self.sep == ":" {
                    self.value_after_annotation(start)
                } else {
                    None
                }
            }
        }
    }

    /// `password: &str = "…"`, `api_key: Optional[str] = None`: the value after the type.
    fn value_after_annotation(&self, start: usize) -> Option<Range<usize>> {
        let line = &self.text[start..];
        let line = &line[..line.find(['\n', '\r']).unwrap_or(line.len())];
        let equals = line.find('=')?;
        let annotation = &line[..equals];
        let after = &line[equals + 1..];
        let type_like = annotation
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || " \t_:<>[]&'*,.|?".contains(c));
        if !type_like || after.starts_with(['=', '>']) || annotation.ends_with(['!', '<', '>', ':'])
        {
            return None;
        }
        let value =
            start + equals + 1 + (after.len() - after.trim_start_matches([' ', '\t']).len());
        let context = Context {
            sep: "=",
            spaced: true,
            line_start: false,
            ..*self
        };
        context.secret_value(value, false)
    }

    fn quoted_is_secret(&self, value: &str) -> bool {
        let last = self.name.rsplit('.').next().unwrap_or(self.name);
        value.chars().count() >= 4
            && judge::worth_redacting(value)
            && !same_name(value, self.name)
            && !same_name(value, last)
            && !is_template(value)
            && !is_env_name(value)
            && !names_something(value)
            && !is_url(value)
    }

    fn judge_bare(&self, start: usize) -> Bare {
        let text = self.text;
        let rest = &text[start..];
        let Some(first) = rest.chars().next() else {
            return Bare::Nothing;
        };
        // References, pointers, tuples, lists, templates, symbols, regex or string escapes,
        // comments; decorators and instance variables (`@token`); YAML tags (`!vault |`).
        let after_first = &rest[first.len_utf8()..];
        let name_after_first = || {
            let path = path_at(after_first);
            path.end > 0
                && bare_len(after_first) == path.end
                && after_first[..path.end].split('.').all(code_shaped)
        };
        if "$&*([{<%:\\".contains(first)
            || (first == '#' && after_first.starts_with([' ', '\t', '\n']))
            || (first == '@' && name_after_first())
            || (first == '!'
                && (after_first.starts_with('!')
                    || (name_after_first()
                        && !after_first.starts_with(|c: char| c.is_ascii_digit())
                        && !value_has_digit(after_first))))
        {
            return Bare::Code;
        }
        let token_end = start + bare_len(rest);
        let value = &text[start..token_end];
        if value.chars().count() < 4 {
            // `token: str`, `password: Any = …`: a short name may be a type to read past.
            return if path_at(rest).end > 0 {
                Bare::Code
            } else {
                Bare::Nothing
            };
        }
        if !judge::worth_redacting(value) {
            return Bare::Nothing;
        }
        // A file path or a URL names where a secret is, it is not one.
        if ["./", "../", "~/"].iter().any(|p| value.starts_with(p))
            || is_url(value)
            || is_file_path(value)
        {
            return Bare::Code;
        }
        let path = path_at(rest);
        if path.end == 0 {
            // A hex constant (`TOKEN = 0x6B`) or grammar notation (`token = 1*tchar`) is code;
            // anything else starting with a digit or a symbol is data.
            let grammar = value
                .trim_start_matches(|c: char| c.is_ascii_digit())
                .starts_with('*');
            let hex = value.starts_with("0x") && value[2..].bytes().all(|b| b.is_ascii_hexdigit());
            return if grammar || hex {
                Bare::Code
            } else {
                Bare::Secret(start..token_end)
            };
        }
        let path_end = start + path.end;
        let after = &text[path_end..];
        let first_segment = &rest[..path.first_end];
        if is_keyword(first_segment) {
            return Bare::Code;
        }
        if after.starts_with('(')
            && let Some(literal) = self.wrapped_literal(&rest[..path.end], path_end)
        {
            return literal;
        }
        if after.starts_with(['(', '[', '{'])
            || after.starts_with("::<")
            || (after.starts_with('!')
                && after[1..]
                    .trim_start_matches(' ')
                    .starts_with(['(', '[', '{']))
            || (after.starts_with('<')
                && after[1..].starts_with(|c: char| c.is_ascii_alphabetic() || "'&[(_".contains(c)))
        {
            return Bare::Code;
        }
        // A name followed by closing punctuation (`|token: Token|`, `token: expired.`) is a name.
        let trailing = &text[path_end..token_end];
        if !trailing.bytes().all(|b| b"|>?!:.".contains(&b)) {
            // More than a name: `hunter2-x`, `abc/def+g=`, `m#*K…`.
            return Bare::Secret(start..token_end);
        }
        let place = self.place(token_end);
        let secret = if path.segments > 1 {
            self.dotted_is_secret(&rest[..path.end], first_segment, &place)
        } else {
            self.word_is_secret(value, &place)
        };
        if secret {
            Bare::Secret(start..token_end)
        } else {
            Bare::Code
        }
    }

    /// Where a bare value ending at `end` stands on its line.
    fn place(&self, end: usize) -> Place {
        let text = self.text;
        let line_rest = &text[end..];
        let line_rest = &line_rest[..line_rest.find(['\n', '\r']).unwrap_or(line_rest.len())];
        let line_begin = text[..end].rfind(['\n', '\r']).map_or(0, |i| i + 1);
        let whole_line = self.line_start && is_blank_or_comment(line_rest);
        let caps_name = self
            .name
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
        let tight = self.sep == "=" && !self.spaced;
        let next_parameter = line_rest.starts_with('&') && next_is_parameter(&line_rest[1..]);
        Place {
            whole_line,
            caps_name,
            env_style: tight && (caps_name || whole_line),
            url_query: tight
                && (matches!(self.before_name, Some('?' | '&' | ';')) || next_parameter),
            // `level=info password=x user=bob`, `curl -d password=x`: not `f(a, password=x)`.
            logfmt: tight
                && self.before_name.is_none_or(char::is_whitespace)
                && !text[line_begin..end].contains('(')
                && !line_rest.starts_with([',', ')']),
        }
    }

    /// A dotted value: code (`config.token`, `settings.API_KEY`), except as the whole value of a
    /// `.env` or YAML line where it is data unless it starts at a code root (`TOKEN=ab.cd`).
    fn dotted_is_secret(&self, path: &str, root: &str, place: &Place) -> bool {
        let segments: Vec<&str> = path
            .split(['.', ':', '?', '-', '>'])
            .filter(|s| !s.is_empty())
            .collect();
        if !segments.iter().all(|s| code_shaped(s)) {
            return true;
        }
        let code_like = CODE_ROOTS.contains(&root)
            || segments
                .iter()
                .any(|s| judge::is_type_name(s) || names_a_secret(s));
        if place.env_style {
            return !CODE_ROOTS.contains(&root);
        }
        place.whole_line && self.sep == ":" && !code_like
    }

    /// A single word: code or prose unless the place says data (README, "Judgement calls").
    fn word_is_secret(&self, word: &str, place: &Place) -> bool {
        let last = self.name.rsplit('.').next().unwrap_or(self.name);
        if same_name(word, self.name) || same_name(word, last) {
            return false;
        }
        if !code_shaped(word) {
            return true;
        }
        // A variable named for what it holds (`api_key`, `authToken`, `default_password`).
        let variable = names_a_secret(word) || judge::components(word).count() > 1;
        if place.env_style {
            return place.caps_name || !variable;
        }
        if place.url_query {
            return true;
        }
        if variable || judge::is_type_name(word) {
            return false;
        }
        if self.sep == "=" && !self.spaced {
            return place.logfmt;
        }
        if !place.whole_line {
            return false;
        }
        match self.sep {
            // YAML: `password: letmein`.
            ":" => true,
            // INI or a constant: `password = hunter2`, `API_KEY = abcdef` or any `[section]` file;
            // `token = value` in code is a name.
            "=" => word.bytes().any(|b| b.is_ascii_digit()) || place.caps_name || self.scan.ini(),
            _ => false,
        }
    }

    /// `String::from("…")`, `Some("…")`: the literal is the value.
    fn wrapped_literal(&self, callee: &str, open: usize) -> Option<Bare> {
        let function = callee.rsplit(['.', ':']).next().unwrap_or(callee);
        if !WRAPPERS.contains(&function) {
            return None;
        }
        let (quoted, _) = quoted_at(self.text, open + 1)?;
        if !self.text[quoted.end..].get(1..)?.starts_with(')') {
            return None;
        }
        let value = &self.text[quoted.clone()];
        Some(if self.quoted_is_secret(value) {
            Bare::Secret(quoted)
        } else {
            Bare::Nothing
        })
    }
}

enum Bare {
    Secret(Range<usize>),
    Code,
    Nothing,
}

/// Where a bare value stands on its line.
struct Place {
    /// The name starts the line and the value ends it.
    whole_line: bool,
    /// An environment variable's name: `API_KEY`.
    caps_name: bool,
    /// `KEY=value`: a `.env` line, or an upper-case name anywhere (`docker run -e KEY=value`).
    env_style: bool,
    /// A URL query or connection string: `?token=…`, `…&token=…`, `;Password=…`.
    url_query: bool,
    /// `key=value` pairs of a log line or a command line.
    logfmt: bool,
}

/// The inside of a string literal starting at `start` (after an optional `b`/`f`/`r`/`u`
/// prefix), if it closes on the same line, and whether it is a template (an f-string or a
/// backquoted string) whose braces are code.
fn quoted_at(text: &str, start: usize) -> Option<(Range<usize>, bool)> {
    let rest = text.get(start..)?;
    let prefix = rest
        .bytes()
        .take(2)
        .take_while(|b| b"bfruBFRU".contains(b))
        .count();
    let quote = rest[prefix..].chars().next()?;
    if !matches!(quote, '"' | '\'' | '`') {
        return None;
    }
    let template = quote == '`' || rest[..prefix].contains(['f', 'F']);
    let open = start + prefix + 1;
    let body = &text[open..];
    let mut escaped = false;
    for (i, c) in body.char_indices() {
        match c {
            '\n' | '\r' => return None,
            '\\' => escaped = !escaped,
            c if c == quote && !escaped => return Some((open..open + i, template)),
            _ => escaped = false,
        }
    }
    None
}

/// Whether the bare value at the start of `rest` has a digit.
fn value_has_digit(rest: &str) -> bool {
    rest[..bare_len(rest)].bytes().any(|b| b.is_ascii_digit())
}

/// How far a bare value runs: to whitespace, a quote, a closing bracket, `,` or `;`, or the `&` of
/// the next URL query parameter.
fn bare_len(rest: &str) -> usize {
    for (i, c) in rest.char_indices() {
        let ends = c.is_whitespace()
            || matches!(c, '"' | '\'' | '`' | ',' | ';' | ')' | '}' | ']')
            || (c == '&' && next_is_parameter(&rest[i + 1..]));
        if ends {
            return i;
        }
    }
    rest.len()
}

/// `name=` after a `&`.
fn next_is_parameter(rest: &str) -> bool {
    let name_len = rest
        .bytes()
        .take_while(|b| b.is_ascii_alphanumeric() || b"_.-[]".contains(b))
        .count();
    name_len > 0 && rest[name_len..].starts_with('=')
}

struct Path {
    /// Where the path ends (0: the value does not start with a name).
    end: usize,
    /// Where its first segment ends.
    first_end: usize,
    segments: usize,
}

/// A name or a dotted path at the start of `rest`: `config.token`, `std::env::var`,
/// `self._token`, `a?.b`, `$this->token`.
fn path_at(rest: &str) -> Path {
    let bytes = rest.as_bytes();
    let ident = |from: usize| -> usize {
        if !bytes
            .get(from)
            .is_some_and(|b| b.is_ascii_alphabetic() || *b == b'_')
        {
            return from;
        }
        from + bytes[from..]
            .iter()
            .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_')
            .count()
    };
    let first_end = ident(0);
    let mut path = Path {
        end: first_end,
        first_end,
        segments: usize::from(first_end > 0),
    };
    if first_end == 0 {
        return path;
    }
    loop {
        let tail = &rest[path.end..];
        let joiner = [".", "::", "?.", "->"]
            .iter()
            .find(|j| tail.starts_with(**j))
            .map_or(0, |j| j.len());
        if joiner == 0 {
            return path;
        }
        let next = ident(path.end + joiner);
        if next == path.end + joiner {
            return path;
        }
        path.end = next;
        path.segments += 1;
    }
}

/// Nothing more on the line but a comment, or the end of the JSON string the line is in (the
/// last line of a tool result's content).
fn is_blank_or_comment(rest: &str) -> bool {
    let rest = rest.trim_start_matches([' ', '\t']);
    rest.is_empty()
        || rest.starts_with('#')
        || rest.starts_with("//")
        || (rest.starts_with('"') && rest[1..].trim_start().starts_with([',', '}', ']']))
}

/// A format string or template rather than a value: `{token}`, `${TOKEN}`, `{{ secret }}`, `%s`.
fn is_template(value: &str) -> bool {
    value.contains("${")
        || value.contains("{{")
        || value.contains("{}")
        || value.contains("%s")
        || value.contains("%(")
        || value.split('{').skip(1).any(|after| {
            let name_len = after
                .bytes()
                .take_while(|b| b.is_ascii_alphanumeric() || b"_.:".contains(b))
                .count();
            name_len > 0 && after[name_len..].starts_with('}')
        })
}

/// A URL: a secret in it is a password (`user:pass@`, the URL rule) or a query parameter (this
/// rule, on `?token=…`), not the whole URL.
fn is_url(value: &str) -> bool {
    let scheme = value
        .bytes()
        .take_while(|b| b.is_ascii_alphanumeric() || b"+.-".contains(b))
        .count();
    scheme > 0 && value[scheme..].starts_with("://")
}

/// `/run/secrets/db_password`, `/etc/app/token.txt`: words between slashes.
fn is_file_path(value: &str) -> bool {
    value.starts_with('/')
        && value.matches('/').count() >= 2
        && value
            .split('/')
            .filter(|part| !part.is_empty())
            .all(|part| {
                part.split(['.', '-'])
                    .all(|word| word.is_empty() || code_shaped(word))
            })
}

/// An environment variable's name: `GITHUB_TOKEN`, `OPENAI_API_KEY`.
fn is_env_name(value: &str) -> bool {
    value.contains('_')
        && value.starts_with(|c: char| c.is_ascii_uppercase())
        && value
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
}

/// The name of a field, variable or header rather than its value: `access_token`,
/// `user_password`, `settings.API_KEY`, `X-Api-Key`.
fn names_something(value: &str) -> bool {
    // Hyphens only in a header's name (`X-Api-Key`): `super-secret` is a value.
    let header = value
        .split('-')
        .all(|part| part.starts_with(|c: char| c.is_ascii_uppercase()));
    (header || !value.contains('-'))
        && value.split(['.', '-']).all(code_shaped)
        && names_a_secret(value)
}

#[cfg(test)]
pub(crate) fn compiles() -> bool {
    patterns().is_some()
}
