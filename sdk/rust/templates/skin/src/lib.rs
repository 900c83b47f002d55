//! A skin plugin: the skin `tinted-prompt` (named as the plugin), the default look with its accent and
//! prompt colour taken from `[config] accent`. Choose it with `/skin tinted-prompt`
//! or `talaria skin use tinted-prompt`.
//!
//! A fixed skin needs no code: a package may ship `skins/NAME.yaml` next to
//! its `plugin.toml`. A component is for skins computed from settings.

use talaria_plugin_sdk::{Skin, Skins, config};

/// The skin's name, as `/skin` lists it.
pub const NAME: &str = "tinted-prompt";

/// Whether `colour` is `#rrggbb`.
pub fn valid_colour(colour: &str) -> bool {
    colour.len() == 7
        && colour.starts_with('#')
        && colour[1..].chars().all(|c| c.is_ascii_hexdigit())
}

/// The skin's YAML (the format of `$TALARIA_HOME/skins/*.yaml`). Anything it
/// leaves out comes from the default skin. A colour that is not `#rrggbb`
/// gives way to the default accent.
pub fn skin_yaml(accent: &str, prompt_symbol: &str) -> String {
    let accent = if valid_colour(accent) {
        accent
    } else {
        "#7aa2f7"
    };
    // A double-quoted YAML string: quotes and backslashes escaped, control
    // characters dropped, so the symbol cannot end the line.
    let symbol = quoted(prompt_symbol);
    format!(
        "description: The default look, tinted {accent}\n\
         prompt_symbol: {symbol}\n\
         colors:\n  accent: \"{accent}\"\n  prompt: \"{accent}\"\n  heading: \"{accent}\"\n"
    )
}

fn quoted(text: &str) -> String {
    let mut quoted = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => quoted.push_str("\\\""),
            '\\' => quoted.push_str("\\\\"),
            c if c.is_control() => {}
            c => quoted.push(c),
        }
    }
    quoted.push('"');
    quoted
}

fn setting(name: &str, default: &str) -> String {
    config::get(name)
        .ok()
        .flatten()
        .unwrap_or_else(|| default.to_owned())
}

pub struct Tinted;

impl Skins for Tinted {
    fn skins() -> Vec<Skin> {
        let yaml = skin_yaml(
            &setting("accent", "#7aa2f7"),
            &setting("prompt_symbol", "❯ "),
        );
        vec![Skin::new(NAME, yaml)]
    }
}

talaria_plugin_sdk::export_skins!(Tinted);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_accent_colours_the_prompt_and_a_bad_one_falls_back() {
        let yaml = skin_yaml("#ff8800", "> ");
        assert!(yaml.contains("prompt: \"#ff8800\""), "{yaml}");
        assert!(yaml.contains("prompt_symbol: \"> \""), "{yaml}");
        let fallback = skin_yaml("orange", "> ");
        assert!(fallback.contains("accent: \"#7aa2f7\""), "{fallback}");
    }

    #[test]
    fn a_prompt_symbol_cannot_break_the_yaml() {
        let yaml = skin_yaml("#ff8800", "say \"hi\"\n\\ ");
        assert!(yaml.contains(r#"prompt_symbol: "say \"hi\"\\ ""#), "{yaml}");
        assert_eq!(yaml.lines().count(), 6, "{yaml}");
    }
}
