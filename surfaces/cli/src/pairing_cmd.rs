//! `talaria pairing list|approve|revoke`: the owner's side of pairing
//! strangers on chat platforms with the gateway.

use talaria_pairing::{PairingError, PairingStore};
use talaria_profile::ProfileHome;

use crate::args::PairingCommand;
use crate::exit::{Status, usage_error};

/// Runs a `pairing` subcommand.
pub fn run(command: PairingCommand, home: &ProfileHome) -> Status {
    let store = PairingStore::new(home.pairing_dir());
    let now = talaria_pairing::now();
    let outcome = match command {
        PairingCommand::List => list(&store, now),
        PairingCommand::Approve { platform, code } => {
            store.approve(&platform, &code, now).map(|paired| {
                let name = if paired.user_name.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", paired.user_name)
                };
                println!("paired {}{name} on {platform}", paired.user_id);
            })
        }
        PairingCommand::Revoke { platform, user_id } => {
            store.revoke(&platform, &user_id).map(|removed| {
                if removed {
                    println!("unpaired {user_id} on {platform}");
                } else {
                    println!("{user_id} was not paired on {platform}");
                }
            })
        }
    };
    match outcome {
        Ok(()) => Status::Answered,
        Err(error @ (PairingError::UnknownCode { .. } | PairingError::LockedOut { .. })) => {
            eprintln!("error: {error}");
            Status::Failed
        }
        Err(error) => usage_error(&error.to_string()),
    }
}

fn list(store: &PairingStore, now: u64) -> Result<(), PairingError> {
    let pending = store.pending(now)?;
    let approved = store.approved()?;
    if pending.is_empty() && approved.is_empty() {
        println!("no pairing requests and no paired users");
        return Ok(());
    }
    if !pending.is_empty() {
        println!("waiting for approval (talaria pairing approve PLATFORM CODE):");
        for request in &pending {
            println!(
                "  {:<10} {:<24} {:<20} {} min ago",
                request.platform,
                request.user_id,
                request.user_name,
                request.age_secs / 60
            );
        }
    }
    if !approved.is_empty() {
        println!("paired:");
        for user in &approved {
            println!(
                "  {:<10} {:<24} {}",
                user.platform, user.user_id, user.user_name
            );
        }
    }
    Ok(())
}
