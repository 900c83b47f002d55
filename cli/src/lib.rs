//! The `talaria` command line: a thin surface that builds an agent, runs a
//! conversation and renders its events.

mod approver;
mod args;
mod exit;
mod plugin_dev;
mod plugins;
mod render;
mod run;
mod setup;

use std::process::ExitCode;

use clap::Parser;
use talaria_agent::ProfileHome;

pub use args::Cli;
pub use exit::Status;

/// Parses arguments, runs the command and returns the process exit code.
pub fn main() -> ExitCode {
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
    let home = match ProfileHome::from_env() {
        Ok(home) => home,
        Err(error) => {
            eprintln!("error: {error}");
            return Status::Usage.into();
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the async runtime: {error}");
            return Status::Failed.into();
        }
    };
    let status = runtime.block_on(async move {
        match cli.command {
            Some(args::Command::Setup(setup_args)) => setup::run_wizard(&setup_args, &home).await,
            Some(args::Command::Chat(run_args)) => run::run(run_args, home).await,
            Some(args::Command::Plugins(command)) => plugins::run(command, &home).await,
            Some(args::Command::Plugin(args::PluginCommand::New { name, dir })) => {
                plugin_dev::new(&name, dir)
            }
            Some(args::Command::Plugin(args::PluginCommand::Build { dir })) => {
                plugin_dev::build(&dir.unwrap_or_else(|| std::path::PathBuf::from(".")))
            }
            None => run::run(cli.run, home).await,
        }
    });
    // Don't wait for a blocked stdin reader (chat) when exiting.
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    status.into()
}
