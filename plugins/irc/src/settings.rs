//! The adapter's settings: the plugin's config section
//! (`gateway.platforms.irc`), every value a string.

/// The port when `port` is unset: 6667 plain, 6697 with TLS (the IANA ports).
const PLAIN_PORT: u16 = 6667;
const TLS_PORT: u16 = 6697;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    pub server: String,
    pub port: u16,
    pub tls: bool,
    pub nick: String,
    pub channels: Vec<String>,
    /// The server password (`PASS`), when the server wants one.
    pub password: Option<String>,
    pub realname: String,
}

impl Settings {
    /// Reads the settings through `get` (a config lookup; `None` when unset).
    pub fn load(get: impl Fn(&str) -> Option<String>) -> Result<Self, String> {
        let value = |key: &str| {
            get(key)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        let server = value("server").ok_or("irc: `server` is not set")?;
        if server.contains(char::is_whitespace) {
            return Err(format!("irc: `server` {server:?} contains spaces"));
        }
        let tls = match value("tls") {
            None => false,
            Some(raw) => {
                parse_bool(&raw).ok_or(format!("irc: `tls` must be true or false, not {raw:?}"))?
            }
        };
        let port = match value("port") {
            None if tls => TLS_PORT,
            None => PLAIN_PORT,
            Some(raw) => raw
                .parse::<u16>()
                .ok()
                .filter(|&port| port != 0)
                .ok_or(format!("irc: `port` {raw:?} is not a port number"))?,
        };
        let nick = value("nick").unwrap_or_else(|| "talaria".to_owned());
        if !valid_nick(&nick) {
            return Err(format!(
                "irc: `nick` {nick:?} is not a valid nick (letters, digits and []\\`_^{{|}}-, not starting with a digit or -)"
            ));
        }
        let channels = match value("channels") {
            None => Vec::new(),
            Some(raw) => parse_channels(&raw)?,
        };
        Ok(Self {
            server,
            port,
            tls,
            nick,
            channels,
            password: value("password"),
            realname: value("realname").unwrap_or_else(|| "Talaria".to_owned()),
        })
    }

    /// The `USER` name: the nick's ASCII letters and digits (servers refuse
    /// much else there), `talaria` when none are left.
    pub fn username(&self) -> String {
        let name: String = self
            .nick
            .chars()
            .filter(char::is_ascii_alphanumeric)
            .collect();
        if name.is_empty() {
            "talaria".to_owned()
        } else {
            name
        }
    }
}

fn parse_bool(raw: &str) -> Option<bool> {
    match raw.to_ascii_lowercase().as_str() {
        "true" | "yes" | "on" | "1" => Some(true),
        "false" | "no" | "off" | "0" => Some(false),
        _ => None,
    }
}

/// RFC 2812 nick characters (the length limit is the server's).
fn valid_nick(nick: &str) -> bool {
    let special = |c: char| "[]\\`_^{|}".contains(c);
    nick.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || special(c))
        && nick
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || special(c) || c == '-')
}

/// A comma-separated list or a JSON list of strings; a name without a
/// channel prefix gets `#`.
fn parse_channels(raw: &str) -> Result<Vec<String>, String> {
    let names: Vec<String> = if raw.starts_with('[') {
        serde_json::from_str(raw)
            .map_err(|e| format!("irc: `channels` is not a JSON list of strings: {e}"))?
    } else {
        raw.split(',').map(str::to_owned).collect()
    };
    let mut channels = Vec::new();
    for name in names {
        let name = name.trim();
        if name.is_empty() {
            continue;
        }
        if name.contains(|c: char| c == ',' || c == '\x07' || c.is_whitespace() || c.is_control()) {
            return Err(format!(
                "irc: channel {name:?} contains a space, comma or control character"
            ));
        }
        let channel = if crate::message::is_channel(name) {
            name.to_owned()
        } else {
            format!("#{name}")
        };
        if !channels
            .iter()
            .any(|known: &String| crate::message::same_name(known, &channel))
        {
            channels.push(channel);
        }
    }
    Ok(channels)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn load(pairs: &[(&str, &str)]) -> Result<Settings, String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        Settings::load(|key| map.get(key).cloned())
    }

    #[test]
    fn defaults_with_only_a_server() {
        let settings = load(&[("server", "irc.example.net")]).unwrap();
        assert_eq!(
            settings,
            Settings {
                server: "irc.example.net".into(),
                port: 6667,
                tls: false,
                nick: "talaria".into(),
                channels: vec![],
                password: None,
                realname: "Talaria".into(),
            }
        );
    }

    #[test]
    fn tls_changes_the_default_port_and_an_explicit_port_wins() {
        assert_eq!(
            load(&[("server", "s"), ("tls", "true")]).unwrap().port,
            6697
        );
        let explicit = load(&[("server", "s"), ("tls", "yes"), ("port", "7000")]).unwrap();
        assert_eq!((explicit.tls, explicit.port), (true, 7000));
    }

    #[test]
    fn channels_comma_separated_or_json_get_a_prefix_and_lose_duplicates() {
        let comma = load(&[("server", "s"), ("channels", " #a, b,,&c ,#A")]).unwrap();
        assert_eq!(comma.channels, ["#a", "#b", "&c"]);
        let json = load(&[("server", "s"), ("channels", r##"["#x", "y"]"##)]).unwrap();
        assert_eq!(json.channels, ["#x", "#y"]);
    }

    #[test]
    fn bad_values_are_errors_naming_the_key() {
        for (pairs, key) in [
            (vec![], "`server`"),
            (vec![("server", "s"), ("port", "70000")], "`port`"),
            (vec![("server", "s"), ("port", "0")], "`port`"),
            (vec![("server", "s"), ("tls", "maybe")], "`tls`"),
            (vec![("server", "s"), ("nick", "9lives")], "`nick`"),
            (vec![("server", "s"), ("nick", "a b")], "`nick`"),
            (vec![("server", "s"), ("channels", "[1]")], "`channels`"),
            (vec![("server", "s"), ("channels", "#a b")], "channel"),
        ] {
            let error = load(&pairs).unwrap_err();
            assert!(error.contains(key), "{pairs:?}: {error}");
        }
    }

    #[test]
    fn username_keeps_letters_and_digits() {
        let settings = load(&[("server", "s"), ("nick", "[bot]_9")]).unwrap();
        assert_eq!(settings.username(), "bot9");
        let odd = load(&[("server", "s"), ("nick", "[]")]).unwrap();
        assert_eq!(odd.username(), "talaria");
    }
}
