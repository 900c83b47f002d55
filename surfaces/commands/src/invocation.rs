//! Splitting a typed command line into the command, its arguments and flags,
//! checked against the command's argument spec.

use crate::spec::{ArgKind, Command};

/// A parsed command line.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Invocation {
    /// The command's canonical name (aliases resolved).
    pub name: String,
    /// Positional arguments; a trailing free-text argument is one element.
    pub args: Vec<String>,
    /// The text after the command name, as typed (trimmed).
    pub raw: String,
    /// Flags given, e.g. `--now`.
    pub flags: Vec<String>,
}

impl Invocation {
    /// The `index`-th argument, if given.
    pub fn arg(&self, index: usize) -> Option<&str> {
        self.args.get(index).map(String::as_str)
    }

    /// Whether `flag` was given.
    pub fn has(&self, flag: &str) -> bool {
        self.flags.iter().any(|f| f == flag)
    }
}

/// The command name and the rest of a line starting with `/`; `None` if the
/// line is not a command. `//text` is not a command either (it sends `/text`).
pub fn split_command(line: &str) -> Option<(&str, &str)> {
    let body = line.trim_start().strip_prefix('/')?;
    if body.starts_with('/') {
        return None;
    }
    let (name, rest) = body.split_once(char::is_whitespace).unwrap_or((body, ""));
    Some((name, rest.trim()))
}

/// Parses the arguments of `command` from `rest`; the error is a message for
/// the user that includes the usage line.
pub fn parse_args(command: &Command, rest: &str) -> Result<Invocation, String> {
    let usage = || format!("usage: {}", command.synopsis());
    let mut invocation = Invocation {
        name: command.name.clone(),
        raw: rest.to_owned(),
        ..Invocation::default()
    };
    // Plugin and skill commands take their text as it is.
    if command.args.is_empty() && command.flags.is_empty() {
        if !rest.is_empty() {
            invocation.args.push(rest.to_owned());
        }
        return Ok(invocation);
    }
    let mut words = rest.split_whitespace().peekable();
    let mut specs = command.args.iter();
    while let Some(word) = words.next() {
        if word.starts_with("--") {
            if command.flags.contains(&word) {
                invocation.flags.push(word.to_owned());
                continue;
            }
            return Err(format!(
                "unknown option {word} for /{}; {}",
                command.name,
                usage()
            ));
        }
        let Some(spec) = specs.next() else {
            return Err(format!(
                "too many arguments for /{}; {}",
                command.name,
                usage()
            ));
        };
        if spec.kind == ArgKind::Text {
            // The rest of the line, flags at its end still recognised.
            let mut text: Vec<&str> = std::iter::once(word).chain(words.by_ref()).collect();
            while let Some(last) = text.last().copied() {
                if command.flags.contains(&last) {
                    invocation.flags.push(last.to_owned());
                    text.pop();
                } else {
                    break;
                }
            }
            invocation.args.push(text.join(" "));
            break;
        }
        if let ArgKind::Choice(choices) = spec.kind
            && !choices.contains(&word)
        {
            return Err(format!(
                "/{}: '{word}' is not one of {}; {}",
                command.name,
                choices.join(", "),
                usage()
            ));
        }
        invocation.args.push(word.to_owned());
    }
    if let Some(missing) = specs.find(|spec| spec.required) {
        return Err(format!(
            "/{} needs <{}>; {}",
            command.name,
            missing.name,
            usage()
        ));
    }
    Ok(invocation)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::spec::{ArgSpec, Handler, Surfaces};

    fn command(args: Vec<ArgSpec>, flags: Vec<&'static str>) -> Command {
        Command {
            name: "model".into(),
            aliases: vec![],
            args,
            flags,
            description: String::new(),
            category: String::new(),
            usage: "[name] [--now]".into(),
            surfaces: Surfaces::ALL,
            handler: Handler::Skill,
        }
    }

    #[test]
    fn splits_commands_and_leaves_other_lines_alone() {
        assert_eq!(
            split_command("/model gpt-5 --now"),
            Some(("model", "gpt-5 --now"))
        );
        assert_eq!(split_command("  /help"), Some(("help", "")));
        assert_eq!(split_command("hello /model"), None);
        assert_eq!(split_command("//etc/passwd is a path"), None);
    }

    #[test]
    fn flags_are_recognised_anywhere_and_unknown_ones_are_errors() {
        let model = command(
            vec![ArgSpec::optional("name", ArgKind::Model)],
            vec!["--now"],
        );
        let parsed = parse_args(&model, "--now gpt-5").unwrap();
        assert_eq!(parsed.args, ["gpt-5"]);
        assert!(parsed.has("--now"));
        let error = parse_args(&model, "gpt-5 --later").unwrap_err();
        assert!(error.contains("unknown option --later"), "{error}");
        assert!(error.contains("usage: /model [name] [--now]"), "{error}");
        let error = parse_args(&model, "a b").unwrap_err();
        assert!(error.contains("too many arguments"), "{error}");
    }

    #[test]
    fn choices_and_required_arguments_are_checked() {
        let toolsets = command(
            vec![
                ArgSpec::required("action", ArgKind::Choice(&["enable", "disable"])),
                ArgSpec::required("toolset", ArgKind::Toolset),
            ],
            vec![],
        );
        assert!(
            parse_args(&toolsets, "flip web")
                .unwrap_err()
                .contains("not one of enable, disable")
        );
        assert!(
            parse_args(&toolsets, "enable")
                .unwrap_err()
                .contains("needs <toolset>")
        );
        assert_eq!(
            parse_args(&toolsets, "enable web").unwrap().args,
            ["enable", "web"]
        );
    }

    #[test]
    fn free_text_keeps_the_rest_of_the_line() {
        let title = command(
            vec![ArgSpec::optional("text", ArgKind::Text)],
            vec!["--now"],
        );
        let parsed = parse_args(&title, "fix the  build --now").unwrap();
        assert_eq!(parsed.args, ["fix the build"]);
        assert!(parsed.has("--now"));
        let plain = command(vec![], vec![]);
        assert_eq!(parse_args(&plain, "a --b c").unwrap().args, ["a --b c"]);
    }
}
