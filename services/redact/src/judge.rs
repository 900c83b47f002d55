//! Whether a value is a secret or something else: a placeholder, a reference, a keyword, a name
//! in code. The shapes here are shared by the format rules and the field rule.

/// Values that stand for a secret without being one.
const PLACEHOLDERS: &[&str] = &[
    "null",
    "none",
    "nil",
    "true",
    "false",
    "undefined",
    "changeme",
    "change_me",
    "changeit",
    "example",
    "placeholder",
    "redacted",
    "secret",
    "password",
    "passwd",
    "token",
    "apikey",
    "api_key",
    "api-key",
    "bearer",
    "basic",
    "digest",
];

/// Words that start an expression or are a value of their own in code: the value is code.
const KEYWORDS: &[&str] = &[
    "await",
    "new",
    "yield",
    "typeof",
    "async",
    "function",
    "lambda",
    "fn",
    "move",
    "match",
    "if",
    "not",
    "impl",
    "dyn",
    "mut",
    "ref",
    "static",
    "const",
    "let",
    "var",
    "return",
    "in",
    "is",
    "and",
    "or",
    "delete",
    "void",
    "instanceof",
    "self",
    "this",
    "cls",
    "super",
    "Self",
    "nullptr",
    "None",
    "True",
    "False",
];

/// Type names that read as ordinary lowercase words (`api_key: string;`, `token: bytes`).
const TYPE_WORDS: &[&str] = &[
    "str",
    "string",
    "bytes",
    "bytearray",
    "int",
    "integer",
    "bool",
    "boolean",
    "number",
    "object",
    "any",
    "unknown",
    "never",
    "void",
    "char",
    "float",
    "double",
    "long",
    "short",
    "byte",
    "rune",
    "dict",
    "list",
    "tuple",
    "usize",
    "isize",
    "bigint",
    "symbol",
    "text",
    "uuid",
    "secretstr",
];

/// What a name or a variable says it holds.
const SECRET_WORDS: &[&str] = &[
    "key",
    "keys",
    "token",
    "tokens",
    "secret",
    "secrets",
    "password",
    "passwd",
    "pwd",
    "pass",
    "passphrase",
    "apikey",
    "auth",
    "credential",
    "credentials",
    "creds",
    "cred",
];

/// A value that is not a secret: a reference, a placeholder, a number, an existing marker.
pub(crate) fn worth_redacting(value: &str) -> bool {
    let trimmed = value.trim();
    let lower = trimmed.to_ascii_lowercase();
    !(value.contains("[REDACTED")
        || lower.starts_with(['$', '<', '{', '%', '*'])
        || lower.starts_with("your")
        || lower.contains("-your")
        || lower.contains("_your")
        || lower.ends_with("_here")
        || lower.ends_with("-here")
        || lower.starts_with("xxxx")
        || lower.starts_with("process.env")
        || lower.starts_with("os.environ")
        || lower.starts_with("env.")
        || PLACEHOLDERS.contains(&lower.as_str())
        || one_repeated_char(trimmed)
        || ["example", "dummy", "fake", "sample"].iter().any(|word| {
            lower.starts_with(word)
                && !lower[word.len()..].starts_with(|c: char| c.is_ascii_alphanumeric())
        })
        || (lower.len() < 8 && lower.chars().all(|c| c.is_ascii_digit())))
}

/// `xxxxxxxx`, `********`, `00000000`.
pub(crate) fn one_repeated_char(value: &str) -> bool {
    let mut chars = value.chars();
    chars
        .next()
        .is_some_and(|first| value.len() > 1 && chars.all(|c| c == first))
}

/// `TOKEN`, `API_KEY`, `<token>`: the name of a value in usage text, not the value.
pub(crate) fn is_metavariable(value: &str) -> bool {
    value.starts_with('<')
        || (value.starts_with(|c: char| c.is_ascii_uppercase())
            && value
                .chars()
                .all(|c| c.is_ascii_uppercase() || c == '_' || c == '-'))
}

/// A credential rather than a word or a name: `Bearer authentication` and `Basic self.auth` are
/// prose and code; a real credential is random and nearly always has a digit.
pub(crate) fn looks_like_credential(value: &str) -> bool {
    if !worth_redacting(value) || is_metavariable(value) {
        return false;
    }
    let value = value.trim_end_matches('=');
    value.chars().any(|c| c.is_ascii_digit())
        || !value
            .split(['.', '_', '-', '/'])
            .filter(|part| !part.is_empty())
            .all(code_shaped)
}

/// Random-looking: a letter and a digit, and not the shape of a name in code.
pub(crate) fn looks_random(value: &str) -> bool {
    value.chars().any(|c| c.is_ascii_digit())
        && value.chars().any(|c| c.is_ascii_alphabetic())
        && !code_shaped(value)
}

pub(crate) fn is_keyword(word: &str) -> bool {
    KEYWORDS.contains(&word)
        || ["none", "null", "nil", "undefined", "true", "false", "nan"]
            .iter()
            .any(|k| word.eq_ignore_ascii_case(k))
}

/// `str`, `String`, `Option`, `SecretStr`, `Token`: a type in an annotation.
pub(crate) fn is_type_name(word: &str) -> bool {
    let lower = word.to_ascii_lowercase();
    if TYPE_WORDS.contains(&lower.as_str()) {
        return true;
    }
    // PascalCase words without digits: `Token`, `SecretString`, `AuthToken`.
    let mut parts = components(word);
    word.starts_with(|c: char| c.is_ascii_uppercase())
        && !word.contains('_')
        && parts.all(|part| {
            part.len() > 1
                && part.starts_with(|c: char| c.is_ascii_uppercase())
                && part.chars().skip(1).all(|c| c.is_ascii_lowercase())
        })
}

/// An identifier whose words include one that says secret: `api_key`, `authToken`,
/// `DEFAULT_PASSWORD`, `user_password` (a variable holding the value, named for it).
pub(crate) fn names_a_secret(ident: &str) -> bool {
    components(ident).any(|part| SECRET_WORDS.contains(&part.to_ascii_lowercase().as_str()))
        || SECRET_WORDS.contains(&ident.to_ascii_lowercase().as_str())
}

/// Whether two names are the same ignoring case and separators (`api_key`, `apiKey`, `API-KEY`).
pub(crate) fn same_name(a: &str, b: &str) -> bool {
    let normal = |s: &str| -> String {
        s.chars()
            .filter(char::is_ascii_alphanumeric)
            .map(|c| c.to_ascii_lowercase())
            .collect()
    };
    !a.is_empty() && normal(a) == normal(b)
}

/// The shape of a name in code rather than of random characters: words joined by underscores or
/// camel case (`getToken`, `DEFAULT_API_KEY`, `self_token2`, `utf8Token`), digits only at the
/// end of a word, words with vowels, at most one one-letter word. Random strings of a dozen
/// characters or more fail one of these nearly always.
pub(crate) fn code_shaped(ident: &str) -> bool {
    let bytes = ident.as_bytes();
    let starts_right = ident
        .trim_start_matches('_')
        .starts_with(|c: char| c.is_ascii_alphabetic());
    if !starts_right
        || !bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || *b == b'_')
    {
        return false;
    }
    // A lowercase letter right after a digit: `hunter2hunter2`, `lSR1nZz`.
    if bytes
        .windows(2)
        .any(|w| w[0].is_ascii_digit() && w[1].is_ascii_lowercase())
    {
        return false;
    }
    if bytes.iter().filter(|b| b.is_ascii_digit()).count() > 4 {
        return false;
    }
    let mut single_letters = 0;
    let mut count = 0;
    for part in components(ident) {
        count += 1;
        let letters = part.trim_end_matches(|c: char| c.is_ascii_digit());
        if letters.len() == 1 {
            single_letters += 1;
        }
        let has_vowel = letters
            .chars()
            .any(|c| matches!(c.to_ascii_lowercase(), 'a' | 'e' | 'i' | 'o' | 'u' | 'y'));
        if letters.len() >= 5 && !has_vowel {
            return false;
        }
    }
    count > 0 && single_letters <= 1
}

/// The words of an identifier: split at underscores and camel-case humps (`HTTPServer` is `HTTP`,
/// `Server`); digits stay with the word before them.
pub(crate) fn components(ident: &str) -> impl Iterator<Item = &str> {
    ident
        .split(['_', '-', '.'])
        .filter(|part| !part.is_empty())
        .flat_map(camel_parts)
}

fn camel_parts(word: &str) -> Vec<&str> {
    let bytes = word.as_bytes();
    let mut parts = Vec::new();
    let mut start = 0;
    for i in 1..bytes.len() {
        let (prev, cur) = (bytes[i - 1], bytes[i]);
        let next_lower = bytes.get(i + 1).is_some_and(u8::is_ascii_lowercase);
        let hump = cur.is_ascii_uppercase()
            && (prev.is_ascii_lowercase()
                || prev.is_ascii_digit()
                || (prev.is_ascii_uppercase() && next_lower));
        if hump {
            parts.push(&word[start..i]);
            start = i;
        }
    }
    parts.push(&word[start..]);
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_in_code_and_random_strings() {
        for ident in [
            "getToken",
            "DEFAULT_API_KEY",
            "self_token2",
            "utf8Token",
            "HOMEASSISTANT_TOKEN",
            "abcdefgh",
            "correcthorsebattery",
            "HTTPServer",
            "getX",
            "hunter2",
        ] {
            assert!(code_shaped(ident), "{ident}");
        }
        for random in [
            "hunter2hunter2",
            "Xk29fjsl2kd9s0dk2",
            "uTwBombGK9lQsoK",
            "bTTGzzql4ZQkebiXWXdM",
            "VXiPG0eApKMV",
            "mKBbBuDFCOG5",
            "zwUZsjZAwSQEFhJXNELBxz2J",
            "abc-def",
        ] {
            assert!(!code_shaped(random), "{random}");
        }
    }

    #[test]
    fn credentials_and_words() {
        assert!(looks_like_credential("dXNlcjpwYXNzd29yZA=="));
        assert!(looks_like_credential("abc.def.ghi1234567"));
        assert!(!looks_like_credential("authentication"));
        assert!(!looks_like_credential("self.token"));
        assert!(!looks_like_credential("TOKEN"));
    }

    #[test]
    fn secret_names_and_types() {
        assert!(names_a_secret("access_token"));
        assert!(names_a_secret("apiKey"));
        assert!(!names_a_secret("password123"));
        assert!(is_type_name("SecretString"));
        assert!(is_type_name("string"));
        assert!(!is_type_name("Xk29fjsl"));
        assert!(same_name("API_KEY", "apiKey"));
    }
}
