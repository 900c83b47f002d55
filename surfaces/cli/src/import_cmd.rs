//! `talaria import hermes`.

use talaria_profile::hermes_import::import_hermes;
use talaria_profile::{EnvLayer, ProfileHome};

use crate::args::ImportCommand;
use crate::exit::{Status, usage_error};

/// Runs one import.
pub fn run(command: ImportCommand, home: &ProfileHome) -> Status {
    let ImportCommand::Hermes { from, overwrite } = command;
    let Some(from) = from
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".hermes")))
    else {
        return usage_error("no Hermes home given: pass --from DIR");
    };
    let env = match EnvLayer::load(&home.env_file()) {
        Ok(env) => env,
        Err(error) => return usage_error(&error.to_string()),
    };
    match import_hermes(&from, home, overwrite, &env) {
        Ok(report) => {
            println!(
                "Imported from {} into {}:",
                from.display(),
                home.root().display()
            );
            for item in &report.imported {
                println!("  + {item}");
            }
            for item in &report.kept {
                println!("  = {item} (exists; kept — use --overwrite to replace)");
            }
            if !report.unmapped.is_empty() {
                println!("Not mapped (no Talaria equivalent yet):");
                for key in &report.unmapped {
                    println!("  - {key}");
                }
            }
            Status::Answered
        }
        Err(error) => usage_error(&error.to_string()),
    }
}
