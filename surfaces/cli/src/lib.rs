//! The `talaria` command line: a thin surface that builds an agent, runs a
//! conversation and renders its events.

#[cfg(feature = "acp")]
mod acp_cmd;
mod approver;
mod args;
#[cfg(feature = "batch")]
mod batch_cmd;
mod clarifier;
mod commands_cmd;
mod config_cmd;
#[cfg(feature = "gateway")]
mod cron_cmd;
#[cfg(feature = "compiler")]
mod distribution;
mod doctor_cmd;
// A runtime-only build (no compiler) has none of the tools for building plugins and
// distributions: their commands say so.
#[cfg(not(feature = "compiler"))]
#[path = "distribution_absent.rs"]
mod distribution;
mod exit;
#[cfg(feature = "gateway")]
mod gateway_cmd;
mod import_cmd;
#[cfg(feature = "mcp")]
mod mcp_cmd;
#[cfg(feature = "mcp-serve")]
mod mcp_serve_cmd;
mod memory_cmd;
#[cfg(feature = "gateway")]
mod pairing_cmd;
mod plugin_compile;
#[cfg(feature = "compiler")]
mod plugin_dev;
#[cfg(not(feature = "compiler"))]
#[path = "plugin_dev_absent.rs"]
mod plugin_dev;
mod plugin_registry;
#[cfg(feature = "compiler")]
mod plugin_sdk;
#[cfg(feature = "compiler")]
mod plugin_templates;
mod plugins;
mod profile_cmd;
mod render;
mod repl;
mod run;
#[cfg(feature = "api")]
mod serve_cmd;
mod sessions_cmd;
mod setup;
#[cfg(any(
    feature = "api",
    feature = "batch",
    feature = "gateway",
    feature = "mcp-serve"
))]
mod shutdown;
mod skills_cmd;
mod skins;
mod tty;

/// The source checkout this binary was built from (this crate sits at
/// `surfaces/cli`): the Rust SDK and pinned toolchains for plugin builds, the
/// default source of `talaria dist build`.
#[cfg(feature = "compiler")]
const CHECKOUT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

use std::process::ExitCode;

use clap::Parser;
use talaria_profile::Profiles;

pub use args::Cli;
pub use exit::Status;

/// The async runtime for `cli`. The REPL reads lines on a worker thread (`block_in_place`) while
/// the agent works, which needs the multi-threaded runtime. Everything else (a one-shot prompt, a
/// subcommand) does one thing at a time, and a single thread saves handing every wake-up between
/// threads: 20 one-shot turns took 37 % less CPU time on one thread than on the default pool.
fn runtime_builder(cli: &Cli) -> tokio::runtime::Builder {
    let chat = match &cli.command {
        None => Some(&cli.run),
        Some(args::Command::Chat(run_args)) => Some(run_args),
        Some(_) => None,
    };
    let repl = chat.is_some_and(|run_args| {
        run_args.query.is_none() && std::io::IsTerminal::is_terminal(&std::io::stdin())
    });
    if repl {
        tokio::runtime::Builder::new_multi_thread()
    } else {
        tokio::runtime::Builder::new_current_thread()
    }
}

/// Whether the command runs the agent (and so commands on this machine).
fn runs_the_agent(cli: &Cli) -> bool {
    match &cli.command {
        None | Some(args::Command::Chat(_)) => true,
        #[cfg(feature = "gateway")]
        Some(args::Command::Gateway(_)) => true,
        #[cfg(feature = "acp")]
        Some(args::Command::Acp(_)) => true,
        #[cfg(feature = "api")]
        Some(args::Command::Serve(_)) => true,
        #[cfg(feature = "batch")]
        Some(args::Command::Batch(_)) => true,
        #[cfg(feature = "mcp")]
        Some(args::Command::Mcp(_)) => true,
        #[cfg(feature = "gateway")]
        Some(args::Command::Cron(_)) => true,
        _ => false,
    }
}

/// Parses arguments, runs the command and returns the process exit code.
pub fn main() -> ExitCode {
    let mut raw = std::env::args_os();
    match raw.nth(1) {
        Some(arg) if arg == talaria_exec::SUPERVISE_ARG => {
            return talaria_exec::supervise_main(raw.collect());
        }
        Some(arg) if arg == talaria_approval::PARSE_CHECK_ARG => {
            return talaria_approval::parse_check_main();
        }
        _ => {}
    }
    // Before anything reads a key: what is left of this process's memory is not
    // readable by the commands it runs.
    if let Err(error) = talaria_exec::protect_agent_process() {
        eprintln!("warning: {error}");
    }
    // Local commands start through `talaria __supervise`, so they die with us; where panics
    // abort, the approval layer has `talaria __approval-parse-check` parse a line first.
    if let Ok(exe) = std::env::current_exe() {
        talaria_exec::enable_supervisor(exe.clone());
        talaria_approval::enable_parse_check(exe);
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            let _ = error.print();
            return if error.use_stderr() {
                Status::Usage.into()
            } else {
                Status::Answered.into()
            };
        }
    };
    if runs_the_agent(&cli) {
        // Still one thread: the keys leave the environment block, which lasts as long as the
        // process (this starts the program again once, with them handed over in memory).
        // Commands that run no agent skip it: `--version` or `config get` pay nothing.
        if let Err(error) = talaria_environ::seal() {
            eprintln!("warning: {error}");
        }
        if nix::unistd::geteuid().is_root() {
            eprintln!(
                "warning: Talaria runs as root: the commands it runs have root's rights on this \
                 machine (the profile's controls and the agent's keys stay out of their reach \
                 where the kernel allows; `talaria doctor` shows what is in force)"
            );
        }
    }
    // The profile home is decided here, before anything reads a path.
    let profiles = match Profiles::from_env() {
        Ok(profiles) => profiles,
        Err(error) => {
            eprintln!("error: {error}");
            return Status::Usage.into();
        }
    };
    if let Some(args::Command::Profile(command)) = cli.command {
        return profile_cmd::run(command, &profiles, cli.profile.as_deref()).into();
    }
    let home = match profiles.home(cli.profile.as_deref()) {
        Ok(home) => home,
        Err(error) => {
            eprintln!("error: {error}");
            return Status::Usage.into();
        }
    };
    // Created private, or made private again (keys, transcripts, logs).
    if let Some(notice) = talaria_profile::home_modes::repair(home.root()).notice(home.root()) {
        eprintln!("{notice}");
    }
    let runtime = match runtime_builder(&cli).enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the async runtime: {error}");
            return Status::Failed.into();
        }
    };
    let status = runtime.block_on(async move {
        let status = match cli.command {
            Some(args::Command::Setup(setup_args)) => setup::run_wizard(&setup_args, &home).await,
            Some(args::Command::Chat(run_args)) => run::run(run_args, home).await,
            Some(args::Command::Plugin(args::PluginCommand::Installed(command))) => {
                plugins::run(command, &home).await
            }
            Some(args::Command::Plugin(args::PluginCommand::New {
                name,
                dir,
                lang,
                kind,
            })) => plugin_dev::new(&name, dir, lang.as_deref(), kind.as_deref()),
            Some(args::Command::Plugin(args::PluginCommand::Build { dir })) => {
                let dir = dir.unwrap_or_else(|| std::path::PathBuf::from("."));
                plugin_dev::build_and_compile(&dir, &home).await
            }
            Some(args::Command::Plugin(args::PluginCommand::Sdk { dir })) => {
                plugin_dev::sdk(&dir.unwrap_or_else(|| std::path::PathBuf::from(".")))
            }
            Some(args::Command::Plugin(args::PluginCommand::Registry(command))) => {
                plugin_registry::run(command, &home).await
            }
            Some(args::Command::Config(command)) => config_cmd::run(command, &home),
            Some(args::Command::Doctor { json }) => doctor_cmd::run(&home, json),
            Some(args::Command::Session(command)) => sessions_cmd::run(command, &home),
            Some(args::Command::Import(command)) => import_cmd::run(command, &home).await,
            Some(args::Command::SlashCommands(command)) => commands_cmd::run(command, &home).await,
            Some(args::Command::Skin(command)) => skins::run(command, &home).await,
            #[cfg(feature = "gateway")]
            Some(args::Command::Pairing(command)) => pairing_cmd::run(command, &home),
            #[cfg(feature = "gateway")]
            Some(args::Command::Cron(command)) => cron_cmd::run(command, &home).await,
            Some(args::Command::Memory(command)) => memory_cmd::run(command, &home).await,
            #[cfg(feature = "batch")]
            Some(args::Command::Batch(command)) => batch_cmd::run(command, &home).await,
            #[cfg(feature = "gateway")]
            Some(args::Command::Gateway(command)) => {
                let name = cli.profile.clone().unwrap_or_else(|| profiles.active());
                let profile = gateway_cmd::GatewayProfile {
                    home: &home,
                    name: (name != talaria_profile::DEFAULT_PROFILE).then_some(name.as_str()),
                    root: profiles.root(),
                };
                gateway_cmd::run(command, &profile).await
            }
            Some(args::Command::Skill(command)) => skills_cmd::run(command, &home).await,
            // Before the config is read: a broken profile still serves (runs report it).
            #[cfg(feature = "mcp-serve")]
            Some(args::Command::Mcp(args::McpCommand::Serve(serve_args))) => {
                mcp_serve_cmd::run(serve_args, &home).await
            }
            #[cfg(feature = "mcp")]
            Some(args::Command::Mcp(command)) => mcp_cmd::run(command, &home).await,
            // Before the config is read too: sessions report a broken profile to the editor.
            #[cfg(feature = "acp")]
            Some(args::Command::Acp(acp_args)) => acp_cmd::run(acp_args, &home).await,
            Some(args::Command::Dist(command)) => distribution::run(command, &home).await,
            #[cfg(feature = "api")]
            Some(args::Command::Serve(serve_args)) => serve_cmd::run(serve_args, &home).await,
            // Handled before the runtime starts.
            Some(args::Command::Profile(_)) => Status::Answered,
            None => run::run(cli.run, home).await,
        };
        // The MCP servers the process's sessions shared end with it (stdio ones would
        // otherwise outlive it in their own process groups).
        #[cfg(feature = "mcp")]
        talaria_mcp::shutdown_shared().await;
        talaria_store::SessionDb::release_shared();
        status
    });
    // Don't wait for a blocked stdin reader (chat) when exiting.
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    status.into()
}
