//! Test plugin `commands-probe`: the slash commands `echo-args` (alias `ea`)
//! and `fail-command`, and the skin `probe-dark` from the skin world. Its
//! package also ships the data skin `skins/probe-light.yaml`. Setting the
//! manifest's `[config] crash` to a command name makes that command panic.

use talaria_plugin_sdk::{CommandSpec, Commands, SessionInfo, Skin, Skins, config};

pub struct Probe;

impl Commands for Probe {
    fn commands() -> Vec<CommandSpec> {
        vec![
            CommandSpec::new("echo-args", "Echoes its arguments and the session id")
                .with_alias("ea")
                .with_args_hint("<text>")
                .with_category("Testing"),
            CommandSpec::new("fail-command", "Always fails").with_category("Testing"),
        ]
    }

    fn run(name: String, args: String, session: SessionInfo) -> Result<String, String> {
        if config::get("crash").ok().flatten().as_deref() == Some(name.as_str()) {
            panic!("{name} crashes as configured");
        }
        match name.as_str() {
            "echo-args" => Ok(format!(
                "echo-args: {args} (session {})",
                session.session_id
            )),
            "fail-command" => Err("this command always fails".into()),
            other => Err(format!("commands-probe has no command {other}")),
        }
    }
}

impl Skins for Probe {
    fn skins() -> Vec<Skin> {
        vec![Skin::new(
            "probe-dark",
            "agent_name: Probe\nprompt_symbol: \"probe> \"\n",
        )]
    }
}

talaria_plugin_sdk::export_commands!(Probe);
talaria_plugin_sdk::export_skins!(Probe);
