//! `talaria mcp list|test|add|remove`: the MCP servers of the profile, as the client sees them.

use std::time::{Duration, Instant};

use std::collections::BTreeMap;
use talaria_mcp::{McpServer, ServerSpec, cache};

use talaria_profile::config_edit;
use talaria_profile::{EnvLayer, McpSandbox, McpServerConfig, ProfileHome};

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
                    server.describe(),
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
        McpCommand::Add {
            name,
            url,
            headers,
            env,
            approval,
            bwrap,
            command,
        } => {
            if servers.contains_key(&name) {
                return usage_error(&format!(
                    "an MCP server named '{name}' is configured already; remove it first \
                     (talaria mcp remove {name})"
                ));
            }
            let entry = match entry(url, &headers, &env, approval.as_deref(), bwrap, command) {
                Ok(entry) => entry,
                Err(message) => return usage_error(&message),
            };
            if let Err(message) = entry.validate(&name) {
                return usage_error(&message);
            }
            let yaml = match serde_yaml_ng::to_string(&entry) {
                Ok(yaml) => yaml,
                Err(error) => return usage_error(&error.to_string()),
            };
            match edit(home, |path, env| {
                config_edit::set(path, &format!("mcp_servers.{name}"), &yaml, env)
            }) {
                Ok(()) => {
                    println!(
                        "added MCP server {name} ({}); it is offered from the next session \
                         (talaria mcp test {name} connects and lists its tools now)",
                        entry.describe()
                    );
                    Status::Answered
                }
                Err(message) => usage_error(&message),
            }
        }
        McpCommand::Remove { name } => {
            if !servers.contains_key(&name) {
                return usage_error(&format!("no MCP server named '{name}' in config.yaml"));
            }
            match edit(home, |path, env| {
                config_edit::remove(path, &format!("mcp_servers.{name}"), env)
            }) {
                Ok(()) => {
                    println!("removed MCP server {name} (from the next session)");
                    Status::Answered
                }
                Err(message) => usage_error(&message),
            }
        }
        #[cfg(feature = "mcp-serve")]
        McpCommand::Serve(args) => crate::mcp_serve_cmd::run(args, home).await,
    }
}

/// Applies `change` to the profile's config.yaml with its `.env` layer loaded.
fn edit(
    home: &ProfileHome,
    change: impl FnOnce(&std::path::Path, &EnvLayer) -> Result<(), config_edit::ConfigEditError>,
) -> Result<(), String> {
    let env = EnvLayer::load(&home.env_file()).map_err(|e| e.to_string())?;
    change(&home.config_file(), &env).map_err(|e| e.to_string())
}

/// The `mcp_servers` entry `talaria mcp add` writes.
fn entry(
    url: Option<String>,
    headers: &[String],
    env: &[String],
    approval: Option<&str>,
    bwrap: bool,
    command: Vec<String>,
) -> Result<McpServerConfig, String> {
    let mut entry = McpServerConfig::default();
    match (url, command.split_first()) {
        (Some(url), None) => entry.url = Some(url),
        (None, Some((program, args))) => {
            entry.command = Some(program.clone());
            entry.args = args.to_vec();
        }
        (None, None) => {
            return Err("give the server's command after `--`, or --url for an HTTP server".into());
        }
        (Some(_), Some(_)) => return Err("give either --url or a command, not both".into()),
    }
    entry.headers = pairs(headers, "--header", &['=', ':'])?;
    entry.env = pairs(env, "--env", &['='])?;
    if let Some(mode) = approval {
        entry.approval = serde_yaml_ng::from_str(mode)
            .map_err(|_| format!("--approval {mode}: expected writes, every-call or trusted"))?;
    }
    if bwrap {
        entry.sandbox = Some(McpSandbox::Bwrap);
    }
    Ok(entry)
}

/// `NAME=VALUE` arguments of `flag` as a map; the name ends at the first of `separators`
/// (headers also take `NAME: VALUE`).
fn pairs(
    values: &[String],
    flag: &str,
    separators: &[char],
) -> Result<BTreeMap<String, String>, String> {
    values
        .iter()
        .map(|pair| match pair.split_once(separators) {
            Some((name, value)) if !name.trim().is_empty() => {
                Ok((name.trim().to_owned(), value.trim_start().to_owned()))
            }
            _ => Err(format!("{flag} {pair:?}: expected NAME=VALUE")),
        })
        .collect()
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
