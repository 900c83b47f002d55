//! `talaria serve`: the OpenAI-compatible API server's options (flags over
//! `api_server` in config.yaml), its key and the signals; the server itself is
//! talaria-api-server.

use std::net::SocketAddr;
use std::time::Duration;

use talaria_agent::Principal;
use talaria_api_server::{KEY_ENV, ServeError, ServeOptions};
use talaria_profile::config::BackendKind;
use talaria_profile::{ProfileHome, Settings};
use tokio_util::sync::CancellationToken;

use crate::args::ServeArgs;
use crate::exit::{Status, usage_error};

/// Runs the server until SIGINT or SIGTERM.
pub async fn run(args: ServeArgs, home: &ProfileHome) -> Status {
    let cwd = match std::env::current_dir() {
        Ok(cwd) => cwd,
        Err(error) => return usage_error(&format!("cannot read the working directory: {error}")),
    };
    let (env, config) = match talaria_profile::load_profile(home) {
        Ok(loaded) => loaded,
        Err(error) => return usage_error(&talaria_redact::redact(&error.to_string())),
    };
    let overrides = crate::run::overrides(&args.model);
    let api = config.api_server.clone();
    let backend = config.terminal.backend;
    // Said once at start (on stderr): every request would fail the same way.
    if let Err(problem) = Settings::resolve(&overrides, &env, config, home) {
        eprintln!(
            "talaria serve: note: requests cannot run yet: {}",
            talaria_redact::redact(&problem.to_string())
        );
    }
    // The owner's key: the environment (or the profile's .env) wins over config.yaml.
    let owner_key = match env.get(KEY_ENV) {
        Some(key) if !key.trim().is_empty() => Some(key.trim().to_owned()),
        _ => api
            .key
            .as_deref()
            .map(str::trim)
            .filter(|k| !k.is_empty())
            .map(str::to_owned),
    };
    // Each named client's key is its own principal: its sessions are its own.
    let clients =
        match talaria_profile::servers_config::named_keys(&api.keys, "api_server.keys", &env) {
            Ok(clients) => clients,
            Err(error) => return usage_error(&error),
        };
    let keys: Vec<(String, Principal)> = owner_key
        .map(|key| (key, Principal::owner()))
        .into_iter()
        .chain(
            clients
                .into_iter()
                .map(|(name, key)| (key, Principal::api_client(&name))),
        )
        .collect();
    if keys.is_empty() {
        return usage_error(&format!(
            "talaria serve needs an API key: set {KEY_ENV} (or api_server.key in config.yaml, \
             or clients' keys in api_server.keys) to a secret of at least {} characters; \
             clients send it as 'Authorization: Bearer <key>'",
            talaria_api_server::MIN_KEY_CHARS
        ));
    }
    let host = match args.host {
        Some(host) => host,
        None => match api.host.trim().parse() {
            Ok(host) => host,
            Err(_) => {
                return usage_error(&format!(
                    "api_server.host: '{}' is not an IP address",
                    api.host
                ));
            }
        },
    };
    let addr = SocketAddr::new(host, args.port.unwrap_or(api.port));
    if !host.is_loopback() && backend == BackendKind::Local {
        eprintln!(
            "talaria serve: warning: listening on {host}, beyond this machine, with the local \
             terminal backend: whoever holds the key runs commands here as you (approvals \
             are denied, but commands that need none still run). Prefer terminal.backend: \
             bwrap or ssh, and put TLS in front of the server."
        );
    }
    let as_usize = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
    let options = ServeOptions {
        home: home.clone(),
        overrides,
        cwd,
        addr,
        keys,
        max_body_bytes: as_usize(api.max_body_bytes),
        max_concurrent_runs: as_usize(u64::from(api.max_concurrent_runs)),
        cors_origins: api.cors_origins,
        read_timeout: Duration::from_secs(args.read_timeout),
        max_connections: 256,
    };
    let shutdown = CancellationToken::new();
    crate::shutdown::stop_on_signals(shutdown.clone(), "serve");
    match talaria_api_server::serve(options, shutdown).await {
        Ok(()) => Status::Answered,
        Err(ServeError::Config(message)) => usage_error(&message),
        Err(error) => {
            eprintln!("error: {error}");
            Status::Failed
        }
    }
}
