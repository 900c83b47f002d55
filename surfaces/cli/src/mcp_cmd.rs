//! `talaria mcp list|test`: the MCP servers of the profile, as the client sees them.

use std::time::{Duration, Instant};

use talaria_mcp::{McpServer, ServerSpec, cache};
use talaria_profile::{McpServerConfig, ProfileHome};

use crate::args::McpCommand;
use crate::exit::{Status, usage_error};

/// Runs a `talaria mcp` subcommand.
pub async fn run(command: McpCommand, home: &ProfileHome) -> Status {
    let config = match talaria_profile::load_profile(home) {
        Ok((_, config)) => config,
        Err(error) => return usage_error(&error.to_string()),
    };
    let servers = &config.mcp_servers;
    match command {
        McpCommand::List => {
            if servers.is_empty() {
                eprintln!(
                    "No MCP servers configured (mcp_servers in {}).",
                    home.config_file().display()
                );
            }
            for (name, server) in servers {
                println!(
                    "{:<20} {:<9} {:<48} {}",
                    name,
                    if server.enabled {
                        "enabled"
                    } else {
                        "disabled"
                    },
                    reached_by(server),
                    cached(home, name, server)
                );
            }
            Status::Answered
        }
        McpCommand::Test { name } => {
            let Some(server) = servers.get(&name) else {
                let known: Vec<&str> = servers.keys().map(String::as_str).collect();
                return usage_error(&format!(
                    "no MCP server named '{name}' (configured: {})",
                    if known.is_empty() {
                        "none".to_owned()
                    } else {
                        known.join(", ")
                    }
                ));
            };
            test(home, &name, server.clone()).await
        }
        McpCommand::Serve(args) => crate::mcp_serve_cmd::run(args, home).await,
    }
}

/// How the server is reached: its command line or its URL.
fn reached_by(server: &McpServerConfig) -> String {
    match (&server.command, &server.url) {
        (Some(command), _) => {
            let line = std::iter::once(command.as_str())
                .chain(server.args.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" ");
            format!("stdio: {line}")
        }
        (None, Some(url)) => format!("http: {url}"),
        (None, None) => "(no command or url)".to_owned(),
    }
}

/// What the tools cache holds for the server's current configuration.
fn cached(home: &ProfileHome, name: &str, server: &McpServerConfig) -> String {
    let spec = match ServerSpec::new(name, server.clone()) {
        Ok(spec) => spec,
        Err(error) => return format!("invalid: {error}"),
    };
    match cache::load(&home.mcp_cache_dir(), &spec) {
        Ok(Some(offer)) => format!("{} tools cached", offer.tools.len()),
        Ok(None) => "not cached yet (talaria mcp test)".to_owned(),
        Err(error) => format!("cache unreadable: {error}"),
    }
}

/// Connects, lists, prints the timings, refreshes the cache.
async fn test(home: &ProfileHome, name: &str, server: McpServerConfig) -> Status {
    let spec = match ServerSpec::new(name, server) {
        Ok(spec) => spec,
        Err(error) => return usage_error(&error.to_string()),
    };
    let server = McpServer::new(spec);
    let started = Instant::now();
    let info = match server.connect().await {
        Ok(info) => info,
        Err(error) => {
            eprintln!("error: {error}");
            return Status::Failed;
        }
    };
    let connected = started.elapsed();
    println!(
        "connected to {} in {} (protocol {})",
        match (&info.name, &info.version) {
            (Some(n), Some(v)) => format!("{n} {v}"),
            (Some(n), None) => n.clone(),
            _ => name.to_owned(),
        },
        millis(connected),
        info.protocol_version
    );
    let listing = Instant::now();
    let result = server.refresh_cache(&home.mcp_cache_dir()).await;
    let listed = listing.elapsed();
    server.shutdown().await;
    match result {
        Ok((offer, path)) => {
            println!("{} tools listed in {}:", offer.tools.len(), millis(listed));
            for tool in &offer.tools {
                println!("  {}", tool.name);
            }
            println!("cached at {}", path.display());
            Status::Answered
        }
        Err(error) => {
            eprintln!("error: {error}");
            Status::Failed
        }
    }
}

fn millis(elapsed: Duration) -> String {
    format!("{} ms", elapsed.as_millis())
}
