//! `talaria profile create|use|list|delete`.

use talaria_profile::Profiles;

use crate::args::ProfileCommand;
use crate::exit::{Status, usage_error};

/// Runs one profile command. `current` is the profile the command line
/// selected (`-p`), used as the source of `create --clone`.
pub fn run(command: ProfileCommand, profiles: &Profiles, current: Option<&str>) -> Status {
    match command {
        ProfileCommand::Create { name, clone } => {
            let source = if clone {
                match profiles.home(current) {
                    Ok(home) => Some(home),
                    Err(error) => return usage_error(&error.to_string()),
                }
            } else {
                None
            };
            match profiles.create(&name, source.as_ref()) {
                Ok(home) => {
                    println!(
                        "Created profile '{name}' in {}{}. Use it with `talaria -p {name}` or make it the default with `talaria profile use {name}`.",
                        home.root().display(),
                        if clone { " (setup cloned)" } else { "" }
                    );
                    Status::Answered
                }
                Err(error) => usage_error(&error.to_string()),
            }
        }
        ProfileCommand::Use { name } => match profiles.set_active(&name) {
            Ok(()) => {
                println!("Commands now use profile '{name}' unless -p says otherwise.");
                Status::Answered
            }
            Err(error) => usage_error(&error.to_string()),
        },
        ProfileCommand::List => {
            for profile in profiles.list() {
                println!(
                    "{} {:<16} {}",
                    if profile.active { "*" } else { " " },
                    profile.name,
                    profile.home.display()
                );
            }
            Status::Answered
        }
        ProfileCommand::Delete { name, yes } => {
            let home = match profiles.home(Some(&name)) {
                Ok(home) => home,
                Err(error) => return usage_error(&error.to_string()),
            };
            let what = format!(
                "profile '{name}' and everything in {} (sessions, memory, skills)",
                home.root().display()
            );
            match crate::setup::confirm_deletion(&what, yes) {
                Ok(true) => {}
                Ok(false) => return Status::Answered,
                Err(status) => return status,
            }
            let was_active = profiles.active() == name;
            match profiles.delete(&name) {
                Ok(dir) => {
                    println!("Deleted profile '{name}' ({}).", dir.display());
                    if was_active {
                        println!("The default profile is active again.");
                    }
                    Status::Answered
                }
                Err(error) => usage_error(&error.to_string()),
            }
        }
    }
}
