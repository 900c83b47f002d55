//! Homoglyph folding: Cyrillic and Greek letters that look like Latin ones,
//! so a rule written for `ignore` also matches `ignоre` spelled with a
//! Cyrillic `о`. Both rule sets' users fold text with it before matching (the
//! approval classifier and the memory threat scanner).

/// The Latin letter a Cyrillic or Greek character is commonly mistaken for
/// (`ignоre` with a Cyrillic `о`).
pub fn homoglyph(c: char) -> Option<char> {
    let latin = match c {
        // Cyrillic.
        'а' | 'А' => 'a',
        'в' | 'В' | 'ь' | 'Ь' => 'b',
        'с' | 'С' => 'c',
        'ԁ' => 'd',
        'е' | 'Е' | 'ё' | 'Ё' => 'e',
        'һ' | 'Һ' | 'н' | 'Н' => 'h',
        'і' | 'І' | 'ї' | 'Ї' | 'ӏ' | 'Ӏ' => 'i',
        'ј' | 'Ј' => 'j',
        'к' | 'К' => 'k',
        'м' | 'М' => 'm',
        'о' | 'О' => 'o',
        'р' | 'Р' => 'p',
        'ԛ' | 'Ԛ' => 'q',
        'ѕ' | 'Ѕ' => 's',
        'т' | 'Т' => 't',
        'у' | 'У' | 'ү' | 'Ү' => 'y',
        'х' | 'Х' => 'x',
        'ԝ' | 'Ԝ' => 'w',
        // Greek.
        'α' | 'Α' => 'a',
        'β' | 'Β' => 'b',
        'ϲ' | 'Ϲ' => 'c',
        'ε' | 'Ε' => 'e',
        'Ζ' => 'z',
        'Η' => 'h',
        'η' => 'n',
        'ι' | 'Ι' | 'ί' => 'i',
        'ϳ' | 'Ϳ' => 'j',
        'κ' | 'Κ' => 'k',
        'Μ' => 'm',
        'ν' | 'Ν' => 'v',
        'ο' | 'Ο' | 'ό' => 'o',
        'ρ' | 'Ρ' => 'p',
        'τ' | 'Τ' => 't',
        'υ' | 'ύ' => 'u',
        'Υ' | 'γ' => 'y',
        'χ' | 'Χ' => 'x',
        'ω' => 'w',
        'µ' | 'μ' => 'u',
        _ => return None,
    };
    Some(latin)
}
