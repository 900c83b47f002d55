//! Page bytes to text in the page's own encoding: a byte-order mark, else
//! the `charset` of the Content-Type header, else (HTML) a `<meta charset>`
//! or `<meta http-equiv="Content-Type">` near the top, else UTF-8 when the
//! bytes are valid UTF-8 and windows-1252 (what browsers assume) when not.

use encoding_rs::{Encoding, UTF_8, WINDOWS_1252};
use scraper::Html;

use crate::dom;

/// How much of a page's start is searched for a `<meta>` charset (the HTML
/// standard asks for it within the first 1024 bytes; some pages are late).
const META_SNIFF_BYTES: usize = 4096;

/// The `charset` parameter of a Content-Type value.
pub fn charset_param(content_type: &str) -> Option<&str> {
    content_type.split(';').skip(1).find_map(|param| {
        let (name, value) = param.split_once('=')?;
        name.trim()
            .eq_ignore_ascii_case("charset")
            .then(|| value.trim().trim_matches(['"', '\'']))
    })
}

/// The charset a page's `<meta>` declares, read by parsing its start as
/// windows-1252 (every byte maps to a character, and ASCII stays ASCII).
pub fn meta_charset(bytes: &[u8]) -> Option<&'static Encoding> {
    let head = &bytes[..bytes.len().min(META_SNIFF_BYTES)];
    let (text, _, _) = WINDOWS_1252.decode(head);
    let doc = Html::parse_document(&text);
    for meta in dom::all(doc.root_element(), "meta") {
        if let Some(label) = meta.value().attr("charset") {
            return Encoding::for_label(label.trim().as_bytes());
        }
        let equiv = meta.value().attr("http-equiv").unwrap_or_default();
        if equiv.eq_ignore_ascii_case("content-type") {
            let content = meta.value().attr("content").unwrap_or_default();
            if let Some(label) = charset_param(content) {
                return Encoding::for_label(label.as_bytes());
            }
        }
    }
    None
}

/// Decodes `bytes`. `is_html` allows the `<meta>` sniffing. Returns the
/// text and the encoding's name.
pub fn decode(bytes: &[u8], content_type: Option<&str>, is_html: bool) -> (String, &'static str) {
    let declared = content_type
        .and_then(charset_param)
        .and_then(|label| Encoding::for_label(label.as_bytes()));
    let encoding = Encoding::for_bom(bytes)
        .map(|(encoding, _)| encoding)
        .or(declared)
        .or_else(|| if is_html { meta_charset(bytes) } else { None })
        .unwrap_or_else(|| {
            if std::str::from_utf8(bytes).is_ok() || !looks_legacy(bytes) {
                UTF_8
            } else {
                WINDOWS_1252
            }
        });
    // A page cannot declare UTF-16 in its own (ASCII) markup: HTML treats
    // that as UTF-8.
    let encoding = encoding.output_encoding();
    let (text, used, _) = encoding.decode(bytes);
    (text.into_owned(), used.name())
}

/// Invalid UTF-8 that is not just a cut at the end: legacy 8-bit text.
fn looks_legacy(bytes: &[u8]) -> bool {
    match std::str::from_utf8(bytes) {
        Ok(_) => false,
        // A body truncated at the cap may end inside a character.
        Err(e) => e.error_len().is_some(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_charset_wins_over_guessing() {
        let bytes = b"caf\xe9";
        let (text, name) = decode(bytes, Some("text/plain; charset=ISO-8859-1"), false);
        assert_eq!(text, "café");
        assert_eq!(name, "windows-1252");
        let (text, _) = decode("café".as_bytes(), Some("text/plain"), false);
        assert_eq!(text, "café");
        assert_eq!(charset_param("text/html; Charset=\"utf-8\""), Some("utf-8"));
    }

    #[test]
    fn meta_tags_name_the_charset_of_html() {
        let page = b"<html><head><meta http-equiv=\"Content-Type\" content=\"text/html; \
                     charset=koi8-r\"></head><body>\xf0\xd2\xc9\xd7\xc5\xd4</body></html>";
        let (text, name) = decode(page, Some("text/html"), true);
        assert_eq!(name, "KOI8-R");
        assert!(text.contains("Привет"), "{text}");
        let page = b"<meta charset=\"shift_jis\"><p>\x93\xfa\x96\x7b</p>";
        let (text, _) = decode(page, None, true);
        assert!(text.contains("日本"), "{text}");
    }

    #[test]
    fn undeclared_bytes_are_utf8_or_windows_1252() {
        let (text, _) = decode(b"na\xefve", None, true);
        assert_eq!(text, "naïve");
        // A UTF-8 body cut inside its last character stays UTF-8.
        let (text, name) = decode(&"élan".as_bytes()[..1], None, false);
        assert_eq!(name, "UTF-8");
        assert_eq!(text, "\u{fffd}");
        let (text, _) = decode(
            b"\xef\xbb\xbfbom",
            Some("text/plain; charset=latin1"),
            false,
        );
        assert_eq!(text, "bom");
    }
}
