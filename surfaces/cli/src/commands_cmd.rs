//! `talaria command [--json]`: the slash-command registry, for people and
//! for gateway menus and ACP command lists.

use talaria_agent::{Agent, AgentOptions, Surface};
use talaria_commands::{BUILTINS, Registry, Surfaces};
use talaria_profile::{ProfileHome, Settings};

use crate::args::SlashCommandArgs;
use crate::exit::{Status, usage_error};

/// Lists the commands of `surface`: with a configured model, the session's
/// plugin commands and skills too; otherwise the built-ins (with a note).
pub async fn run(args: SlashCommandArgs, home: &ProfileHome) -> Status {
    let surface = match args.surface.as_str() {
        "cli" => Surfaces::CLI,
        "gateway" => Surfaces::GATEWAY,
        "acp" => Surfaces::ACP,
        other => return usage_error(&format!("unknown surface '{other}' (cli, gateway or acp)")),
    };
    let registry = match session_registry(home, surface).await {
        Ok(registry) => registry,
        Err(reason) => {
            eprintln!("note: {reason}; listing the built-in commands only");
            Registry::new(BUILTINS, surface)
        }
    };
    if args.json {
        match serde_json::to_string_pretty(&registry.to_json()) {
            Ok(text) => println!("{text}"),
            Err(error) => return usage_error(&error.to_string()),
        }
    } else {
        println!("{}", registry.help());
    }
    Status::Answered
}

async fn session_registry(home: &ProfileHome, surface: Surfaces) -> Result<Registry, String> {
    let agent = terminal_session(home).await?;
    Ok(Registry::for_session(&agent, surface))
}

/// The agent a terminal session would start with (nothing is sent to the model), for
/// listing what that session offers.
pub(crate) async fn terminal_session(home: &ProfileHome) -> Result<Agent, String> {
    let (env, config) = talaria_profile::load_profile(home).map_err(|e| e.to_string())?;
    let settings =
        Settings::resolve(&Default::default(), &env, config, home).map_err(|e| e.to_string())?;
    let cwd = std::env::current_dir().map_err(|e| e.to_string())?;
    let options = AgentOptions {
        surface: Surface::Terminal,
        cwd,
        approver: std::sync::Arc::new(talaria_approval::DenyAll),
        resume: None,
        editor: None,
        messenger: None,
        clarifier: None,
        browsers: None,
        chat_user: None,
        principal: talaria_agent::Principal::owner(),
    };
    Agent::build(&settings, home, options)
        .await
        .map_err(|e| e.to_string())
}
