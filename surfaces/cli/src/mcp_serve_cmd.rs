//! `talaria mcp serve [--http ADDR]`: the options, the key and the signals; the
//! server itself is talaria-mcp-serve.

use std::time::Duration;

use talaria_mcp_serve::{HttpOptions, ServeError, ServeOptions};
use talaria_profile::{ProfileHome, Settings};
use tokio_util::sync::CancellationToken;

use crate::args::McpServeArgs;
use crate::exit::{Status, usage_error};

/// Runs the server until stdin closes (stdio) or a signal arrives (HTTP).
pub async fn run(args: McpServeArgs, home: &ProfileHome) -> Status {
    let cwd = match std::env::current_dir() {
        Ok(cwd) => cwd,
        Err(error) => return usage_error(&format!("cannot read the working directory: {error}")),
    };
    let overrides = crate::run::overrides(&args.model);
    // Said once at start (on stderr): every run_prompt would fail the same way.
    let resolved = talaria_profile::load_profile(home)
        .map_err(|e| e.to_string())
        .and_then(|(env, config)| {
            Settings::resolve(&overrides, &env, config, home).map_err(|e| e.to_string())
        });
    if let Err(problem) = resolved {
        eprintln!(
            "talaria mcp serve: note: run_prompt cannot run yet: {}",
            talaria_redact::redact(&problem)
        );
    }
    let options = ServeOptions {
        home: home.clone(),
        overrides,
        cwd,
    };
    let outcome = match args.http {
        None => {
            eprintln!("talaria mcp serve: serving MCP on stdin/stdout");
            talaria_mcp_serve::serve_stdio(options).await
        }
        Some(addr) => {
            let key = match talaria_mcp_serve::key_from_env(&args.key_env) {
                Ok(key) => key,
                Err(error) => return usage_error(&error.to_string()),
            };
            // Named clients (`mcp_serve.keys`): each key its own principal.
            let client_keys = match client_keys(home) {
                Ok(keys) => keys,
                Err(error) => return usage_error(&error),
            };
            let as_usize = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
            let http = HttpOptions {
                allow_remote: args.allow_remote,
                allowed_hosts: args.allow_hosts,
                allowed_origins: args.allow_origins,
                max_sessions: as_usize(args.max_sessions),
                idle_timeout: Duration::from_secs(args.idle_timeout),
                max_body_bytes: as_usize(args.max_body),
                read_timeout: Duration::from_secs(args.read_timeout),
                client_keys,
                ..HttpOptions::new(addr, key)
            };
            let shutdown = CancellationToken::new();
            crate::shutdown::stop_on_signals(shutdown.clone(), "mcp serve");
            talaria_mcp_serve::serve_http(options, http, shutdown).await
        }
    };
    match outcome {
        Ok(()) => Status::Answered,
        Err(ServeError::Config(message)) => usage_error(&message),
        Err(error) => {
            eprintln!("error: {error}");
            Status::Failed
        }
    }
}

/// The named clients' keys of `mcp_serve.keys`, each with its principal.
fn client_keys(home: &ProfileHome) -> Result<Vec<(String, talaria_agent::Principal)>, String> {
    let (env, config) = talaria_profile::load_profile(home)
        .map_err(|e| talaria_redact::redact(&e.to_string()).into_owned())?;
    let named = talaria_profile::servers_config::named_keys(
        &config.mcp_serve.keys,
        "mcp_serve.keys",
        &env,
    )?;
    Ok(named
        .into_iter()
        .map(|(name, key)| (key, talaria_agent::Principal::mcp_client(&name)))
        .collect())
}
