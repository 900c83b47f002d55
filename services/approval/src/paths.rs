//! Lexical path handling shared by the normaliser and the protected-path screen: brace expansion
//! and resolving `.`, `..` and `//` without touching the filesystem (a shell would expand a brace
//! and the kernel would resolve `/usr/..` to `/`, so the classifier must see the same).

/// A word expands to at most this many words (`{a,b}{c,d}…` grows exponentially).
const MAX_BRACE_WORDS: usize = 64;
/// Nested braces deeper than this are left alone.
const MAX_BRACE_DEPTH: usize = 8;

/// Bash's brace expansion of one word: `/{usr,etc}` is `/usr` and `/etc`. `${…}` is a variable,
/// and braces without a top-level comma (`{}`, `{x}`) are kept as written.
pub(crate) fn expand_braces(word: &str) -> Vec<String> {
    let mut out = Vec::new();
    expand_into(word, &mut out, 0);
    if out.len() >= MAX_BRACE_WORDS {
        // Cut short: keep the word as written too.
        out.push(word.to_owned());
    }
    out
}

fn expand_into(word: &str, out: &mut Vec<String>, depth: usize) {
    if out.len() >= MAX_BRACE_WORDS {
        return;
    }
    let found = if depth < MAX_BRACE_DEPTH {
        find_brace(word)
    } else {
        None
    };
    let Some((open, close, commas)) = found else {
        out.push(word.to_owned());
        return;
    };
    let (prefix, suffix) = (&word[..open], &word[close + 1..]);
    let mut start = open + 1;
    for end in commas.into_iter().chain([close]) {
        expand_into(
            &format!("{prefix}{}{suffix}", &word[start..end]),
            out,
            depth + 1,
        );
        start = end + 1;
    }
}

/// The first `{…}` with a top-level comma: its brace positions and the commas' positions.
fn find_brace(word: &str) -> Option<(usize, usize, Vec<usize>)> {
    let bytes = word.as_bytes();
    for (open, &b) in bytes.iter().enumerate() {
        if b != b'{' || (open > 0 && bytes.get(open - 1) == Some(&b'$')) {
            continue;
        }
        let mut depth = 0usize;
        let mut commas = Vec::new();
        for (i, &c) in bytes.iter().enumerate().skip(open) {
            match c {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        if commas.is_empty() {
                            break;
                        }
                        return Some((open, i, commas));
                    }
                }
                b',' if depth == 1 => commas.push(i),
                _ => {}
            }
        }
    }
    None
}

/// Characters that end a path inside a word (shell operators and code punctuation).
fn ends_path(c: u8) -> bool {
    matches!(
        c,
        b';' | b'|' | b'&' | b'<' | b'>' | b'(' | b')' | b'`' | b',' | b'\'' | b'"'
    )
}

/// Characters after which a path may start inside a word (`of=/x`, `>/x`, `rmtree(/x`).
fn starts_path_after(c: u8) -> bool {
    matches!(
        c,
        b'=' | b'<' | b'>' | b'(' | b',' | b';' | b'|' | b'&' | b'`'
    )
}

/// Resolves every absolute or home-relative path in a normalised `word` lexically.
pub(crate) fn normalize_paths_in_word(word: &str) -> String {
    let bytes = word.as_bytes();
    let mut out = String::with_capacity(word.len());
    let mut i = 0;
    while i < bytes.len() {
        let at_start = i == 0 || bytes.get(i - 1).copied().is_some_and(starts_path_after);
        if at_start && anchor(&word[i..]).is_some() {
            let end = bytes[i..]
                .iter()
                .position(|&c| ends_path(c))
                .map_or(bytes.len(), |n| i + n);
            out.push_str(&resolve_lexically(&word[i..end]));
            i = end;
        } else {
            // Byte-wise copy up to the next ASCII byte keeps UTF-8 intact.
            let next = bytes[i + 1..]
                .iter()
                .position(u8::is_ascii)
                .map_or(bytes.len(), |n| i + 1 + n);
            out.push_str(&word[i..next]);
            i = next;
        }
    }
    out
}

/// The anchor a path starts with (`/`, `~`, `$home`, `${home}`) and the rest after it.
fn anchor(path: &str) -> Option<(&str, &str)> {
    if path.starts_with('/') {
        return Some(("/", path));
    }
    for name in ["${home}", "$home", "~"] {
        if let Some(rest) = path.strip_prefix(name)
            && (rest.is_empty() || rest.starts_with('/'))
        {
            return Some((name, rest));
        }
    }
    None
}

/// `/usr/..` → `/`, `//etc/./x/` → `/etc/x/`, `~/../x` → `/home/x`. Other words are returned as
/// they are. A trailing slash is kept.
pub(crate) fn resolve_lexically(path: &str) -> String {
    let Some((mut anchor, rest)) = anchor(path) else {
        return path.to_owned();
    };
    let mut stack: Vec<&str> = Vec::new();
    for segment in rest.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                if stack.pop().is_none() && anchor != "/" {
                    // Above a home directory is where homes live.
                    anchor = "/";
                    stack.push("home");
                }
            }
            _ => stack.push(segment),
        }
    }
    let trailing = rest.ends_with('/') && !stack.is_empty();
    let mut out = String::from(anchor);
    if !stack.is_empty() {
        if anchor != "/" {
            out.push('/');
        }
        out.push_str(&stack.join("/"));
    } else if anchor != "/" && rest.ends_with('/') {
        out.push('/');
    }
    if trailing {
        out.push('/');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn braces_expand_like_bash() {
        assert_eq!(expand_braces("/{usr,etc}"), ["/usr", "/etc"]);
        assert_eq!(expand_braces("a{b,c{d,e}}f"), ["abf", "acdf", "acef"]);
        assert_eq!(expand_braces("{}"), ["{}"]);
        assert_eq!(expand_braces("${home}"), ["${home}"]);
        assert_eq!(expand_braces("x{a}y{1,2}"), ["x{a}y1", "x{a}y2"]);
        let many = expand_braces(&"{a,b}".repeat(20));
        assert!(many.len() <= MAX_BRACE_WORDS + 1, "{}", many.len());
    }

    #[test]
    fn paths_resolve_lexically() {
        assert_eq!(resolve_lexically("/usr/.."), "/");
        assert_eq!(resolve_lexically("/tmp/../"), "/");
        assert_eq!(resolve_lexically("/usr/./"), "/usr/");
        assert_eq!(resolve_lexically("//"), "/");
        assert_eq!(resolve_lexically("/../../etc"), "/etc");
        assert_eq!(resolve_lexically("~/"), "~/");
        assert_eq!(resolve_lexically("~/a/../b"), "~/b");
        assert_eq!(resolve_lexically("~/../.."), "/");
        assert_eq!(resolve_lexically("$home/x/.."), "$home");
        assert_eq!(resolve_lexically("relative/../x"), "relative/../x");
        assert_eq!(normalize_paths_in_word("of=/dev/../dev/sda"), "of=/dev/sda");
        assert_eq!(normalize_paths_in_word("rmtree(/usr/..)"), "rmtree(/)");
        assert_eq!(normalize_paths_in_word("~user/.."), "~user/..");
        assert_eq!(normalize_paths_in_word("é/x/../é"), "é/x/../é");
    }
}
