//! IRC lines (RFC 1459/2812 with IRCv3 message tags): parsing, nick
//! case folding and mIRC formatting codes.

/// The source of a line: `nick!user@host` for a user, a server name otherwise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prefix {
    /// The nick (or the server's name).
    pub nick: String,
    pub user: Option<String>,
    pub host: Option<String>,
}

/// One parsed line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// IRCv3 tags, values unescaped (`""` for a tag without value).
    pub tags: Vec<(String, String)>,
    pub prefix: Option<Prefix>,
    /// Upper-cased command or three-digit numeric.
    pub command: String,
    /// Middle parameters, then the trailing one (without its `:`).
    pub params: Vec<String>,
}

impl Line {
    /// Parameter `index`, `""` when absent.
    pub fn param(&self, index: usize) -> &str {
        self.params.get(index).map_or("", String::as_str)
    }

    /// The value of tag `name`.
    pub fn tag(&self, name: &str) -> Option<&str> {
        self.tags
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }

    /// The sender's nick, when the line has a prefix.
    pub fn source_nick(&self) -> Option<&str> {
        self.prefix.as_ref().map(|p| p.nick.as_str())
    }
}

/// Parses a line without its CRLF; `None` for an empty or command-less line.
pub fn parse(line: &str) -> Option<Line> {
    let mut rest = line.trim_end_matches(['\r', '\n']);
    let mut tags = Vec::new();
    if let Some(tagged) = rest.strip_prefix('@') {
        let (raw_tags, after) = tagged.split_once(' ')?;
        tags = raw_tags
            .split(';')
            .filter(|tag| !tag.is_empty())
            .map(|tag| match tag.split_once('=') {
                Some((key, value)) => (key.to_owned(), unescape_tag_value(value)),
                None => (tag.to_owned(), String::new()),
            })
            .collect();
        rest = after;
    }
    rest = rest.trim_start_matches(' ');
    let mut prefix = None;
    if let Some(prefixed) = rest.strip_prefix(':') {
        let (raw_prefix, after) = prefixed.split_once(' ')?;
        prefix = Some(parse_prefix(raw_prefix));
        rest = after.trim_start_matches(' ');
    }
    let (command, mut rest) = rest.split_once(' ').unwrap_or((rest, ""));
    if command.is_empty() {
        return None;
    }
    let mut params = Vec::new();
    loop {
        rest = rest.trim_start_matches(' ');
        if rest.is_empty() {
            break;
        }
        if let Some(trailing) = rest.strip_prefix(':') {
            params.push(trailing.to_owned());
            break;
        }
        let (param, after) = rest.split_once(' ').unwrap_or((rest, ""));
        params.push(param.to_owned());
        rest = after;
    }
    Some(Line {
        tags,
        prefix,
        command: command.to_ascii_uppercase(),
        params,
    })
}

fn parse_prefix(raw: &str) -> Prefix {
    let (nick_user, host) = match raw.split_once('@') {
        Some((left, host)) => (left, Some(host.to_owned())),
        None => (raw, None),
    };
    let (nick, user) = match nick_user.split_once('!') {
        Some((nick, user)) => (nick, Some(user.to_owned())),
        None => (nick_user, None),
    };
    Prefix {
        nick: nick.to_owned(),
        user,
        host,
    }
}

/// IRCv3 tag value escapes: `\:` `;`, `\s` space, `\\`, `\r`, `\n`; any other
/// escaped character stands for itself and a lone trailing `\` is dropped.
fn unescape_tag_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some(':') => out.push(';'),
            Some('s') => out.push(' '),
            Some('r') => out.push('\r'),
            Some('n') => out.push('\n'),
            Some(other) => out.push(other),
            None => {}
        }
    }
    out
}

/// Folds a nick or channel name for comparison under the `rfc1459`
/// casemapping, where `[]\~` are the upper case of `{}|^`.
pub fn fold(name: &str) -> String {
    name.chars()
        .map(|c| match c {
            '[' => '{',
            ']' => '}',
            '\\' => '|',
            '~' => '^',
            other => other.to_ascii_lowercase(),
        })
        .collect()
}

/// Whether two names are equal under the `rfc1459` casemapping.
pub fn same_name(a: &str, b: &str) -> bool {
    a.len() == b.len() && fold(a) == fold(b)
}

/// Whether `target` names a channel (RFC 2812 channel prefixes).
pub fn is_channel(target: &str) -> bool {
    target.starts_with(['#', '&', '+', '!'])
}

/// Removes mIRC formatting: bold, italics, underline, strike-through,
/// monospace, reverse, reset, and colours with their `fg[,bg]` digits.
pub fn strip_formatting(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\x02' | '\x1d' | '\x1f' | '\x1e' | '\x11' | '\x16' | '\x0f' => {}
            '\x03' => {
                skip_digits(&mut chars);
                let mut lookahead = chars.clone();
                if lookahead.next() == Some(',')
                    && lookahead.peek().is_some_and(char::is_ascii_digit)
                {
                    chars.next();
                    skip_digits(&mut chars);
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// Skips up to two digits (a colour number).
fn skip_digits(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    for _ in 0..2 {
        if chars.peek().is_some_and(char::is_ascii_digit) {
            chars.next();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_line_with_tags_prefix_params_and_trailing() {
        let line = parse(
            "@time=2024-01-01T00:00:00Z;msgid=a\\sb\\:c;+draft/flag :alice!~al@host.example PRIVMSG #chan :hello there :)",
        )
        .unwrap();
        assert_eq!(
            line.tags,
            [
                ("time".to_owned(), "2024-01-01T00:00:00Z".to_owned()),
                ("msgid".to_owned(), "a b;c".to_owned()),
                ("+draft/flag".to_owned(), String::new()),
            ]
        );
        assert_eq!(
            line.prefix,
            Some(Prefix {
                nick: "alice".into(),
                user: Some("~al".into()),
                host: Some("host.example".into())
            })
        );
        assert_eq!(line.command, "PRIVMSG");
        assert_eq!(line.params, ["#chan", "hello there :)"]);
        assert_eq!(line.tag("msgid"), Some("a b;c"));
    }

    #[test]
    fn lines_without_prefix_or_trailing_and_with_extra_spaces() {
        let ping = parse("PING :irc.example.net\r\n").unwrap();
        assert_eq!((ping.prefix, ping.command.as_str()), (None, "PING"));
        assert_eq!(ping.params, ["irc.example.net"]);

        let welcome = parse(":irc.example 001  bot   :Welcome to IRC").unwrap();
        assert_eq!(welcome.source_nick(), Some("irc.example"));
        assert_eq!(welcome.prefix.unwrap().user, None);
        assert_eq!(welcome.params, ["bot", "Welcome to IRC"]);

        let join = parse(":bot!u@h join #a").unwrap();
        assert_eq!(join.command, "JOIN");
        assert_eq!(join.params, ["#a"]);

        let empty_trailing = parse(":a!b@c PRIVMSG #x :").unwrap();
        assert_eq!(empty_trailing.params, ["#x", ""]);
        assert_eq!(empty_trailing.param(5), "");
    }

    #[test]
    fn malformed_lines_are_none_not_panics() {
        for bad in ["", "   ", "@tags-only", ":prefix-only", "@a=b :p", "\r\n"] {
            assert_eq!(parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn tag_escapes_and_a_trailing_backslash() {
        assert_eq!(unescape_tag_value(r"a\\b\rc\nd\xe\"), "a\\b\rc\ndxe");
    }

    #[test]
    fn rfc1459_casemapping() {
        assert!(same_name("Talaria[1]", "talaria{1}"));
        assert!(same_name("A\\B~", "a|b^"));
        assert!(!same_name("bot", "bot_"));
    }

    #[test]
    fn channel_targets() {
        assert!(is_channel("#rust") && is_channel("&local") && is_channel("+modeless"));
        assert!(!is_channel("alice"));
    }

    #[test]
    fn formatting_codes_are_stripped() {
        assert_eq!(
            strip_formatting("\x02bold\x02 \x0304,12red\x03 \x031,2x \x03,x \x1ditalic\x0f"),
            "bold red x ,x italic"
        );
        assert_eq!(strip_formatting("\x0399 keep"), " keep");
    }
}
