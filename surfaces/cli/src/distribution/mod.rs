//! `talaria dist build`: slim custom distributions. A `dist.toml` names the
//! cargo features of the binary and the plugins to ship; the build makes one
//! self-contained directory (binary, plugins, their compiled forms, a
//! lockfile) that runs with no registry access.

mod build;
mod manifest;
mod precompile;
mod signing;

use talaria_profile::ProfileHome;

use crate::args::DistCommand;
use crate::exit::Status;

/// Runs a `dist` subcommand.
pub async fn run(command: DistCommand, home: &ProfileHome) -> Status {
    let result = match command {
        DistCommand::Build {
            manifest,
            out,
            source,
        } => build::build(home, &manifest, &out, source).await,
        DistCommand::Precompile { dir } => precompile::precompile(&dir).await,
    };
    match result {
        Ok(()) => Status::Answered,
        Err(message) => {
            eprintln!("error: {message}");
            Status::Failed
        }
    }
}
