//! `talaria acp`: the options and a start-up note; the server itself is talaria-acp.

use talaria_acp::AcpOptions;
use talaria_profile::{ProfileHome, Settings};

use crate::args::AcpArgs;
use crate::exit::Status;

/// Serves the editor until it closes stdin.
pub async fn run(args: AcpArgs, home: &ProfileHome) -> Status {
    let overrides = crate::run::overrides(&args.model);
    // Said once at start (on stderr, which editors keep as the agent's log):
    // every session would fail the same way.
    let resolved = talaria_profile::load_profile(home)
        .map_err(|e| e.to_string())
        .and_then(|(env, config)| {
            Settings::resolve(&overrides, &env, config, home).map_err(|e| e.to_string())
        });
    if let Err(problem) = resolved {
        eprintln!(
            "talaria acp: note: sessions cannot start yet: {}",
            talaria_redact::redact(&problem)
        );
    }
    eprintln!("talaria acp: serving the Agent Client Protocol on stdin/stdout");
    match talaria_acp::serve_stdio(AcpOptions::new(home.clone(), overrides)).await {
        Ok(()) => Status::Answered,
        Err(error) => {
            eprintln!("error: {error}");
            Status::Failed
        }
    }
}
