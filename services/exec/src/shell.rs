//! POSIX shell quoting.

/// Quotes `word` so a POSIX shell reads it back as exactly one word with the
/// same bytes: plain words (letters, digits and `@%+=:,./_-`) stay as they
/// are, the empty word becomes `''`, anything else is single-quoted with each
/// `'` written as `'\''`.
pub fn shell_quote(word: &str) -> String {
    if !word.is_empty() && word.bytes().all(is_plain) {
        return word.to_owned();
    }
    let mut quoted = String::with_capacity(word.len() + 2);
    quoted.push('\'');
    for c in word.chars() {
        if c == '\'' {
            // Close the quote, add an escaped quote, reopen.
            quoted.push_str("'\\''");
        } else {
            quoted.push(c);
        }
    }
    quoted.push('\'');
    quoted
}

/// Bytes no POSIX shell gives a meaning to inside a word.
fn is_plain(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"@%+=:,./_-".contains(&byte)
}

#[cfg(test)]
mod tests {
    use super::shell_quote;

    #[test]
    fn plain_words_stay_unquoted() {
        for word in ["echo", "-la", "a/b.c", "--opt=x,y", "user@host:22", "50%"] {
            assert_eq!(shell_quote(word), word);
        }
    }

    #[test]
    fn empty_word_is_two_quotes() {
        assert_eq!(shell_quote(""), "''");
    }

    #[test]
    fn specials_are_single_quoted() {
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("$HOME"), "'$HOME'");
        assert_eq!(shell_quote("a;rm -rf /"), "'a;rm -rf /'");
        assert_eq!(shell_quote("*"), "'*'");
        assert_eq!(shell_quote("~"), "'~'");
        assert_eq!(shell_quote("line\nbreak"), "'line\nbreak'");
        assert_eq!(shell_quote("héllo"), "'héllo'");
    }

    #[test]
    fn single_quotes_are_escaped() {
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
        assert_eq!(shell_quote("'"), "''\\'''");
    }

    #[test]
    fn a_shell_reads_back_the_same_word() {
        let words = [
            "plain",
            "",
            "two words",
            "it's",
            "'''",
            "$(id) `id` \\ \" ! # & | ; < > ( ) { } [ ] ? * ~",
            "tab\tand\nnewline",
            "ünïcödé",
            "-n",
        ];
        let script: Vec<String> = words.iter().map(|w| shell_quote(w)).collect();
        let output = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!(
                "for w in {}; do printf '%s\\0' \"$w\"; done",
                script.join(" ")
            ))
            .output()
            .unwrap();
        assert!(output.status.success());
        let mut read_back: Vec<&[u8]> = output.stdout.split(|b| *b == 0).collect();
        assert_eq!(read_back.pop(), Some(&b""[..]));
        let expected: Vec<&[u8]> = words.iter().map(|w| w.as_bytes()).collect();
        assert_eq!(read_back, expected);
    }
}
