//! Command shapes the regex lists cannot express (they would need back-references).

/// A function that starts itself in the background or a pipe: `f(){ f & f; }; f`,
/// `:(){ :& };:`, `function b { b | b & }`. Matched on a normalised line.
pub(crate) fn recursive_background_function(line: &str) -> bool {
    definitions(line)
        .any(|(name, body)| body.contains(['&', '|']) && !body.contains("&&") && calls(body, name))
}

/// `(name, body)` of each function definition: `name() { … }` and `function name { … }`.
fn definitions(line: &str) -> impl Iterator<Item = (&str, &str)> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(at) = line[from..].find('{').map(|i| from + i) {
        from = at + 1;
        let head = line[..at].trim_end();
        let name = match head.strip_suffix("()") {
            Some(before) => last_word(before.trim_end()),
            None => {
                let name = last_word(head);
                let keyword = last_word(head[..head.len() - name.len()].trim_end());
                if keyword == "function" { name } else { "" }
            }
        };
        if name.is_empty() {
            continue;
        }
        let body = body_at(&line[at + 1..]);
        found.push((name, body));
    }
    found.into_iter()
}

/// The last word of `text`, after whitespace or a command separator.
fn last_word(text: &str) -> &str {
    let start = text
        .rfind(|c: char| c.is_whitespace() || matches!(c, ';' | '&' | '|' | '(' | '`'))
        .map_or(0, |i| i + 1);
    &text[start..]
}

/// The text up to the `}` closing the body that starts at `text` (or all of it).
fn body_at(text: &str) -> &str {
    let mut depth = 1usize;
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return &text[..i];
                }
            }
            _ => {}
        }
    }
    text
}

/// Whether `name` is run as a command in `body`.
fn calls(body: &str, name: &str) -> bool {
    let is_break = |c: Option<char>| {
        c.is_none_or(|c| c.is_whitespace() || matches!(c, ';' | '&' | '|' | '(' | ')' | '{' | '}'))
    };
    body.match_indices(name).any(|(at, _)| {
        is_break(body[..at].chars().next_back()) && is_break(body[at + name.len()..].chars().next())
    })
}

#[cfg(test)]
mod tests {
    use super::recursive_background_function as bomb;

    #[test]
    fn self_spawning_functions_are_fork_bombs() {
        assert!(bomb(":(){ :& };:"));
        assert!(bomb("f(){ f & f; }; f"));
        assert!(bomb("bomb() { bomb | bomb & }; bomb"));
        assert!(bomb("function b { b & b; }; b"));
        assert!(!bomb("start(){ server & }; start"));
        assert!(!bomb("f(){ echo f; }; f"));
        assert!(!bomb("find . -exec rm {} +"));
        assert!(!bomb("awk {print $1}"));
    }
}
