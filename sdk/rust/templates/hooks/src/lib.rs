//! A hooks plugin: before each `terminal` call, the command is checked
//! against the patterns of `[config] deny`; a match is refused and the model
//! reads why. Hooks run on every surface and for sub-agents too.
//!
//! Other events (`session_start`, `pre_llm`, `post_tool`…) are methods of
//! [`Hooks`] with default bodies: subscribe in `subscriptions` and override
//! the method.

use talaria_plugin_sdk::{HookEvent, Hooks, SessionInfo, Subscription, Value, Verdict, config};

/// The tool whose calls are checked.
const TERMINAL: &str = "terminal";

/// The patterns of a comma-separated setting, trimmed, empty ones dropped.
pub fn patterns(setting: &str) -> Vec<String> {
    setting
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The first pattern `command` contains (spaces collapsed first, so
/// `git  push  -f` is caught too).
pub fn matched<'a>(command: &str, patterns: &'a [String]) -> Option<&'a str> {
    let command = command.split_whitespace().collect::<Vec<_>>().join(" ");
    patterns
        .iter()
        .find(|p| command.contains(p.as_str()))
        .map(String::as_str)
}

pub struct Guard;

impl Hooks for Guard {
    fn subscriptions() -> Vec<Subscription> {
        vec![Subscription {
            event: HookEvent::PreTool,
            priority: 10,
        }]
    }

    fn pre_tool(_session: SessionInfo, tool: String, arguments: Value) -> Verdict {
        if tool != TERMINAL {
            return Verdict::Proceed;
        }
        let Some(command) = arguments["command"].as_str() else {
            return Verdict::Proceed;
        };
        let deny = config::get("deny").ok().flatten().unwrap_or_default();
        match matched(command, &patterns(&deny)) {
            Some(pattern) => Verdict::Veto(format!(
                "command-guard refuses commands containing `{pattern}` in this project"
            )),
            None => Verdict::Proceed,
        }
    }
}

talaria_plugin_sdk::export_hooks!(Guard);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_containing_a_pattern_is_caught_whatever_its_spacing() {
        let deny = patterns(" git push -f, ,curl | sh");
        assert_eq!(deny, ["git push -f", "curl | sh"]);
        assert_eq!(matched("git  push -f origin", &deny), Some("git push -f"));
        assert_eq!(matched("git push origin", &deny), None);
    }
}
