//! Key names `browser_press` accepts, as DevTools key events: the DOM `key`
//! and `code`, the Windows virtual key code Chromium's default actions look
//! at (Enter submits a form only with code 13), and the text a key types.

use serde_json::{Value, json};

/// (name, DOM key, DOM code, virtual key code, text typed).
const NAMED: &[(&str, &str, &str, i64, &str)] = &[
    ("enter", "Enter", "Enter", 13, "\r"),
    ("return", "Enter", "Enter", 13, "\r"),
    ("tab", "Tab", "Tab", 9, ""),
    ("escape", "Escape", "Escape", 27, ""),
    ("esc", "Escape", "Escape", 27, ""),
    ("backspace", "Backspace", "Backspace", 8, ""),
    ("delete", "Delete", "Delete", 46, ""),
    ("space", " ", "Space", 32, " "),
    ("arrowup", "ArrowUp", "ArrowUp", 38, ""),
    ("arrowdown", "ArrowDown", "ArrowDown", 40, ""),
    ("arrowleft", "ArrowLeft", "ArrowLeft", 37, ""),
    ("arrowright", "ArrowRight", "ArrowRight", 39, ""),
    ("up", "ArrowUp", "ArrowUp", 38, ""),
    ("down", "ArrowDown", "ArrowDown", 40, ""),
    ("left", "ArrowLeft", "ArrowLeft", 37, ""),
    ("right", "ArrowRight", "ArrowRight", 39, ""),
    ("pageup", "PageUp", "PageUp", 33, ""),
    ("pagedown", "PageDown", "PageDown", 34, ""),
    ("home", "Home", "Home", 36, ""),
    ("end", "End", "End", 35, ""),
];

/// The keyDown and keyUp parameters of `name`, or why it is not a key.
pub(crate) fn key_events(name: &str) -> Result<[Value; 2], String> {
    let lower = name.trim().to_ascii_lowercase();
    let (key, code, virtual_code, text) = match NAMED.iter().find(|entry| entry.0 == lower) {
        Some(&(_, key, code, virtual_code, text)) => (
            key.to_owned(),
            code.to_owned(),
            virtual_code,
            text.to_owned(),
        ),
        None => {
            let mut chars = name.chars();
            match (chars.next(), chars.next()) {
                (Some(c), None) if !c.is_control() => {
                    let upper = c.to_ascii_uppercase();
                    let code = if c.is_ascii_alphabetic() {
                        format!("Key{upper}")
                    } else if c.is_ascii_digit() {
                        format!("Digit{c}")
                    } else {
                        String::new()
                    };
                    (
                        c.to_string(),
                        code,
                        i64::from(u32::from(upper)),
                        c.to_string(),
                    )
                }
                _ => {
                    return Err(format!(
                        "unknown key '{name}': use a single character or one of Enter, Tab, \
                         Escape, Backspace, Delete, Space, ArrowUp, ArrowDown, ArrowLeft, \
                         ArrowRight, PageUp, PageDown, Home, End"
                    ));
                }
            }
        }
    };
    let mut down = json!({
        "type": if text.is_empty() { "rawKeyDown" } else { "keyDown" },
        "key": key,
        "code": code,
        "windowsVirtualKeyCode": virtual_code,
        "nativeVirtualKeyCode": virtual_code,
    });
    if !text.is_empty() {
        down["text"] = json!(text);
        down["unmodifiedText"] = json!(text);
    }
    let up = json!({
        "type": "keyUp",
        "key": key,
        "code": code,
        "windowsVirtualKeyCode": virtual_code,
        "nativeVirtualKeyCode": virtual_code,
    });
    Ok([down, up])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enter_types_a_carriage_return_with_its_key_code() {
        let [down, up] = key_events("Enter").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(down["type"], "keyDown");
        assert_eq!(down["text"], "\r");
        assert_eq!(down["windowsVirtualKeyCode"], 13);
        assert_eq!(up["type"], "keyUp");
    }

    #[test]
    fn names_ignore_case_and_characters_type_themselves() {
        let [down, _] = key_events("pagedown").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (down["key"].as_str(), down["type"].as_str()),
            (Some("PageDown"), Some("rawKeyDown"))
        );
        let [down, _] = key_events("a").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (down["code"].as_str(), down["text"].as_str()),
            (Some("KeyA"), Some("a"))
        );
    }

    #[test]
    fn an_unknown_name_is_refused_with_the_list() {
        let error = key_events("Hyper").err().unwrap_or_default();
        assert!(
            error.contains("unknown key 'Hyper'") && error.contains("PageDown"),
            "{error}"
        );
    }
}
