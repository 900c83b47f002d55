//! Normalisation: the canonical form of a command that the patterns are matched against.
//!
//! The goal is to see through cosmetic obfuscation, not to emulate a shell. Stripping quotes would
//! make `echo "a; rm -rf /"` look dangerous; the syntax screen (`screen.rs`) masks such data
//! arguments before the lists see the line.

use talaria_rules::homoglyph;

const ESC: char = '\u{1b}';
const BEL: char = '\u{7}';

/// Returns the canonical form of `command` that patterns are matched against.
///
/// In order: terminal control sequences (ANSI CSI, OSC, DCS …) and other control characters are
/// removed; full-width forms, Cyrillic and Greek look-alikes of Latin letters and Unicode dashes are
/// folded to ASCII; zero-width characters are dropped; quotes and backslash escapes are removed (a
/// backslash-newline joins lines); unquoted newlines become `;`; the result is lower-cased with
/// whitespace collapsed to single spaces and trimmed. Finally brace expansions are expanded
/// (`/{usr,etc}` → `/usr /etc`) and absolute and home paths are resolved lexically
/// (`/usr/..` → `/`, `//etc/./` → `/etc/`), so path tricks do not hide a system directory.
pub fn normalize(command: &str) -> String {
    let visible = strip_control_sequences(command);
    let folded: String = visible.chars().filter_map(fold_char).collect();
    let unquoted = remove_quoting(&folded);
    // `bash<<<'rm -rf /'`: the here-string operator is its own word, so the payload is visible.
    let spaced = unquoted.to_lowercase().replace("<<<", " <<< ");
    let collapsed = collapse_whitespace(&spaced);
    let words: Vec<String> = collapsed
        .split(' ')
        .flat_map(crate::paths::expand_braces)
        .map(|word| crate::paths::normalize_paths_in_word(&word))
        .collect();
    words.join(" ")
}

/// Removes terminal escape sequences and control characters, keeping tab, CR and LF.
///
/// The payload of string sequences (OSC, DCS, APC …) is kept, only the introducer and terminator go:
/// a terminal hides the payload but a shell would still run it, so hiding it from the classifier
/// too would let `ESC ] 0 ; rm -rf ~ ; BEL` through.
fn strip_control_sequences(input: &str) -> String {
    let chars: Vec<char> = input.chars().collect();
    let mut out = String::with_capacity(input.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            ESC => i = skip_escape(&chars, i + 1, &mut out),
            // 8-bit CSI.
            '\u{9b}' => i = skip_csi(&chars, i + 1),
            // 8-bit string introducers (DCS, SOS, OSC, PM, APC) and the string terminator.
            '\u{90}' | '\u{98}' | '\u{9d}' | '\u{9e}' | '\u{9f}' | '\u{9c}' => {
                out.push(' ');
                i += 1;
            }
            '\t' | '\n' | '\r' => {
                out.push(c);
                i += 1;
            }
            // BEL ends an OSC; treat it as a word break like the sequence it closes.
            BEL => {
                out.push(' ');
                i += 1;
            }
            _ if c.is_control() => i += 1,
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// Handles the characters after an ESC starting at `i`; returns the index to continue from.
fn skip_escape(chars: &[char], i: usize, out: &mut String) -> usize {
    match chars.get(i) {
        None => i,
        Some('[') => skip_csi(chars, i + 1),
        // OSC, DCS, SOS, PM, APC: drop the introducer, keep the payload (see above).
        Some(']' | 'P' | 'X' | '^' | '_') => {
            out.push(' ');
            i + 1
        }
        // ST (`ESC \`) closes a string sequence.
        Some('\\') => {
            out.push(' ');
            i + 1
        }
        // Character-set designations take one more character: ESC ( B.
        Some('(' | ')' | '*' | '+' | '-' | '.' | '/' | '#' | '%') => (i + 2).min(chars.len()),
        Some(_) => i + 1,
    }
}

/// Skips a CSI sequence body (parameters, intermediates, final byte) starting at `i`.
fn skip_csi(chars: &[char], mut i: usize) -> usize {
    while let Some(&c) = chars.get(i) {
        i += 1;
        if ('\u{40}'..='\u{7e}').contains(&c) {
            break;
        }
        if !('\u{20}'..='\u{3f}').contains(&c) {
            // Malformed: stop before the unexpected character so it is not lost.
            return i - 1;
        }
    }
    i
}

/// Folds one character to its ASCII look-alike; `None` drops it.
fn fold_char(c: char) -> Option<char> {
    let folded = match c {
        // Full-width ASCII variants and the ideographic space.
        '\u{ff01}'..='\u{ff5e}' => char::from_u32(c as u32 - 0xfee0).unwrap_or(c),
        '\u{3000}' => ' ',
        // Zero-width and invisible formatting characters.
        '\u{200b}'..='\u{200d}' | '\u{2060}' | '\u{feff}' | '\u{00ad}' | '\u{180e}' => return None,
        // Dashes and the minus sign.
        '\u{2010}'..='\u{2015}' | '\u{2212}' | '\u{fe63}' => '-',
        // Typographic quotes behave like quotes for our purposes (they are removed later).
        '\u{2018}' | '\u{2019}' | '\u{201a}' | '\u{201b}' => '\'',
        '\u{201c}' | '\u{201d}' | '\u{201e}' | '\u{201f}' => '"',
        c if c.is_whitespace() && !matches!(c, '\n' | '\r' | '\t') => ' ',
        c => homoglyph(c).unwrap_or(c),
    };
    Some(folded)
}

/// Removes quotes and backslash escapes; unquoted newlines become `;`.
fn remove_quoting(input: &str) -> String {
    let mut out = String::with_capacity(input.len());
    let mut chars = input.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                // Line continuation.
                Some('\n') | None => {}
                Some('\'' | '"') => {}
                Some(escaped) => out.push(escaped),
            },
            '\'' | '"' => {}
            // `$'…'` ANSI-C quoting: decode its escapes so `$'\x72m'` reads as `rm`.
            '$' if chars.peek() == Some(&'\'') => {
                chars.next();
                decode_ansi_c(&mut chars, &mut out);
            }
            // `$"…"` locale quoting: the `$` is part of the quote.
            '$' if chars.peek() == Some(&'"') => {}
            '\n' => out.push_str(" ; "),
            _ => out.push(c),
        }
    }
    out
}

/// Decodes the body of a `$'…'` string up to its closing quote (bash's escapes). Decoded control
/// characters become spaces; decoded look-alikes are folded like the rest of the command.
fn decode_ansi_c(chars: &mut std::iter::Peekable<std::str::Chars<'_>>, out: &mut String) {
    while let Some(c) = chars.next() {
        let decoded = match c {
            '\'' => return,
            '\\' => match chars.next() {
                None => return,
                Some('x') => read_code(chars, 16, 2, None),
                Some('u') => read_code(chars, 16, 4, None),
                Some('U') => read_code(chars, 16, 8, None),
                Some(d @ '0'..='7') => read_code(chars, 8, 3, Some(d)),
                Some('a' | 'b' | 'e' | 'f' | 'n' | 'r' | 't' | 'v') => Some(' '),
                // \c<x> is a control character: drop it and the letter.
                Some('c') => {
                    chars.next();
                    None
                }
                Some(other) => Some(other),
            },
            c => Some(c),
        };
        match decoded.and_then(fold_char) {
            // Quotes are dropped everywhere, decoded ones included.
            Some('\'' | '"') | None => {}
            Some(c) if c.is_control() => out.push(' '),
            Some(c) => out.push(c),
        }
    }
}

/// Reads up to `max` digits in `radix` (counting `first`) and returns the character they encode.
fn read_code(
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
    radix: u32,
    max: usize,
    first: Option<char>,
) -> Option<char> {
    let mut code = 0u32;
    let mut len = 0;
    if let Some(digit) = first.and_then(|c| c.to_digit(radix)) {
        code = digit;
        len = 1;
    }
    while len < max {
        let Some(digit) = chars.peek().and_then(|c| c.to_digit(radix)) else {
            break;
        };
        code = code.checked_mul(radix)?.checked_add(digit)?;
        chars.next();
        len += 1;
    }
    if len == 0 { None } else { char::from_u32(code) }
}

/// Collapses runs of whitespace to one space and trims the ends.
fn collapse_whitespace(input: &str) -> String {
    input.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::normalize;

    #[test]
    fn folds_cosmetic_obfuscation() {
        assert_eq!(normalize("RM  -Rf\t/"), "rm -rf /");
        assert_eq!(normalize(r"r\m -rf x"), "rm -rf x");
        assert_eq!(normalize(r#""rm" -rf x"#), "rm -rf x");
        assert_eq!(normalize("r''m -rf x"), "rm -rf x");
        assert_eq!(normalize("ｒｍ　-rf x"), "rm -rf x");
        assert_eq!(normalize("rм -rf x"), "rm -rf x");
        assert_eq!(normalize("\u{1b}[31mrm\u{1b}[0m -rf x"), "rm -rf x");
        assert_eq!(normalize("r\u{200b}m -rf x"), "rm -rf x");
        assert_eq!(normalize("rm \\\n -rf x"), "rm -rf x");
        assert_eq!(normalize("ls\nrm -rf x"), "ls ; rm -rf x");
        assert_eq!(normalize(r"$'\x72\155' -rf x"), "rm -rf x");
        assert_eq!(normalize(r"$'r\u043c\'' -rf x"), "rm -rf x");
    }

    #[test]
    fn resolves_paths_and_braces() {
        assert_eq!(normalize("rm -rf /usr/.."), "rm -rf /");
        assert_eq!(normalize("rm -rf /tmp/../etc/"), "rm -rf /etc/");
        assert_eq!(normalize("rm -rf ///usr//./lib"), "rm -rf /usr/lib");
        assert_eq!(normalize("dd of=/dev/../dev/sda"), "dd of=/dev/sda");
        assert_eq!(normalize("rm -rf ~/.."), "rm -rf /home");
        assert_eq!(normalize("rm -rf /{usr,etc}"), "rm -rf /usr /etc");
        assert_eq!(normalize("bash<<<'ls'"), "bash <<< ls");
        assert_eq!(normalize("ls ${HOME}/x/../y"), "ls ${home}/y");
        assert_eq!(normalize("find . -exec rm {} +"), "find . -exec rm {} +");
        assert_eq!(
            normalize("curl https://a.b/c/../d"),
            "curl https://a.b/c/../d"
        );
    }

    #[test]
    fn keeps_osc_payload_visible() {
        assert_eq!(
            normalize("echo \u{1b}]0;rm -rf ~;\u{7}"),
            "echo 0;rm -rf ~;"
        );
    }
}
