//! `talaria config show|get|set|path`.

use talaria_profile::config_edit::{effective, get, is_secret_key, mask_secret, set, to_text};
use talaria_profile::{EnvLayer, ProfileHome};

use crate::args::ConfigCommand;
use crate::exit::{Status, usage_error};
use talaria_profile::load_profile;

/// Runs one config command.
pub fn run(command: ConfigCommand, home: &ProfileHome) -> Status {
    match command {
        ConfigCommand::Path => {
            println!("{}", home.config_file().display());
            Status::Answered
        }
        ConfigCommand::Show | ConfigCommand::Get { .. } => {
            let (_, config) = match load_profile(home) {
                Ok(loaded) => loaded,
                Err(error) => return usage_error(&error.to_string()),
            };
            let value = match &command {
                ConfigCommand::Get { key } => get(&config, key),
                _ => effective(&config),
            };
            match value {
                Ok(serde_yaml_ng::Value::Null) => {
                    eprintln!("(not set)");
                    Status::Answered
                }
                Ok(value) => {
                    println!("{}", to_text(&value));
                    Status::Answered
                }
                Err(error) => usage_error(&error.to_string()),
            }
        }
        ConfigCommand::Set { key, value } => {
            let env = match EnvLayer::load(&home.env_file()) {
                Ok(env) => env,
                Err(error) => return usage_error(&error.to_string()),
            };
            match set(&home.config_file(), &key, &value, &env) {
                Ok(()) => {
                    // Never echo a key: terminals scroll back and get shared.
                    let shown = if is_secret_key(&key) {
                        mask_secret(&value)
                    } else {
                        value
                    };
                    println!("{key} = {shown} (applies to the next session)");
                    Status::Answered
                }
                Err(error) => usage_error(&error.to_string()),
            }
        }
    }
}
