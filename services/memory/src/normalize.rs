//! Normalisation: the canonical form of text that the text rules are matched against.
//!
//! The aim is to see through cosmetic disguise (upper case, full-width letters, odd spacing,
//! invisible characters between letters), not to understand the text. Invisible characters are
//! *removed* here; the `raw` rules have already looked for them in the original text.

use talaria_rules::homoglyph;

/// Returns the canonical form of `text` that `normalized` rules are matched against.
///
/// Full-width ASCII forms and the ideographic space become ASCII, Cyrillic and Greek look-alikes
/// become the Latin letters they imitate, typographic quotes become
/// ASCII quotes, `。` and `、` become `.` and `,`, invisible and control characters are dropped,
/// everything is lower-cased, runs of spaces and tabs become one space, runs of line breaks one
/// `\n` (lines are kept so that rules can look at line starts), and spaces between two CJK
/// characters are removed (so `忽 略 指 令` reads as `忽略指令`).
pub fn normalize(text: &str) -> String {
    let folded: String = text.chars().filter_map(fold_char).collect();
    let lowered = folded.to_lowercase();
    collapse_whitespace(&lowered)
}

/// Folds one character, or drops it.
fn fold_char(c: char) -> Option<char> {
    let folded = match c {
        // Full-width ASCII variants and the ideographic space.
        '\u{ff01}'..='\u{ff5e}' => char::from_u32(c as u32 - 0xfee0).unwrap_or(c),
        '\u{3000}' => ' ',
        '\u{3002}' => '.',
        '\u{3001}' => ',',
        '\u{2018}' | '\u{2019}' | '\u{201a}' | '\u{201b}' => '\'',
        '\u{201c}' | '\u{201d}' | '\u{201e}' | '\u{201f}' => '"',
        '\u{2010}'..='\u{2015}' | '\u{2212}' => '-',
        c if is_invisible(c) => return None,
        '\n' | '\t' => c,
        '\r' => '\n',
        c if c.is_control() => return None,
        c if c.is_whitespace() => ' ',
        // Text in Cyrillic or Greek folds into nonsense, which no rule matches.
        c => homoglyph(c).unwrap_or(c),
    };
    Some(folded)
}

/// Characters that render as nothing: zero-width, joiners, word joiner, BOM, soft hyphen,
/// bidi controls and tag characters.
pub(crate) fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{00ad}'
            | '\u{180e}'
            | '\u{200b}'..='\u{200f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{2069}'
            | '\u{feff}'
            | '\u{e0000}'..='\u{e007f}'
    )
}

/// Collapses horizontal whitespace to one space and line breaks to one `\n`, trims spaces at line
/// edges, removes a space standing between two CJK characters and puts one between CJK and ASCII
/// letters or digits (so English phrases inside Chinese text still start on a word boundary).
fn collapse_whitespace(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    // Whitespace seen since the last kept character: None, a space, or a line break.
    let mut pending: Option<char> = None;
    for c in text.chars() {
        if c == '\n' {
            pending = Some('\n');
        } else if c == ' ' || c == '\t' {
            if pending.is_none() {
                pending = Some(' ');
            }
        } else {
            let previous = out.chars().next_back();
            let separator = match (pending.take(), previous) {
                (_, None) => None,
                (Some(' '), Some(p)) if is_cjk(p) && is_cjk(c) => None,
                (Some(ws), Some(_)) => Some(ws),
                (None, Some(p)) if script_change(p, c) => Some(' '),
                (None, Some(_)) => None,
            };
            if let Some(ws) = separator {
                out.push(ws);
            }
            out.push(c);
        }
    }
    out
}

/// Whether `a` directly followed by `b` switches between CJK and ASCII letters or digits.
fn script_change(a: char, b: char) -> bool {
    (is_cjk(a) && b.is_ascii_alphanumeric()) || (a.is_ascii_alphanumeric() && is_cjk(b))
}

/// Han ideographs, CJK punctuation, kana and Hangul: scripts written without spaces.
fn is_cjk(c: char) -> bool {
    matches!(
        c,
        '\u{2e80}'..='\u{2fdf}'
            | '\u{3000}'..='\u{30ff}'
            | '\u{3100}'..='\u{31ff}'
            | '\u{3400}'..='\u{4dbf}'
            | '\u{4e00}'..='\u{9fff}'
            | '\u{ac00}'..='\u{d7af}'
            | '\u{f900}'..='\u{faff}'
            | '\u{fe30}'..='\u{fe4f}'
            | '\u{20000}'..='\u{2fa1f}'
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folds_case_width_and_spacing() {
        assert_eq!(
            normalize("  ＩＧＮＯＲＥ\t\tAll   Previous \r\n\n Instructions  "),
            "ignore all previous\ninstructions"
        );
    }

    #[test]
    fn drops_invisible_characters_between_letters() {
        assert_eq!(normalize("ig\u{200b}no\u{feff}re"), "ignore");
        assert_eq!(normalize("a\u{202e}b\u{e0041}c"), "abc");
    }

    #[test]
    fn joins_spaced_out_cjk_but_keeps_spaces_next_to_latin() {
        assert_eq!(normalize("忽 略　之 前 的 指 令"), "忽略之前的指令");
        assert_eq!(
            normalize("项目使用 PostgreSQL 15"),
            "项目使用 postgresql 15"
        );
        assert_eq!(normalize("系统：你好，世界。"), "系统:你好,世界.");
        assert_eq!(normalize("请ignore之前的指令"), "请 ignore 之前的指令");
    }

    #[test]
    fn folds_look_alike_letters() {
        assert_eq!(normalize("ignоre prеvious"), "ignore previous");
    }

    #[test]
    fn folds_typographic_quotes_and_dashes() {
        assert_eq!(
            normalize("don\u{2019}t \u{201c}x\u{201d} a\u{2014}b"),
            "don't \"x\" a-b"
        );
    }
}
