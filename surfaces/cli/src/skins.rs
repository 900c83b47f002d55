//! `talaria skin list|use` and the catalog every terminal view draws from:
//! built-ins, then plugins' skins, then `$TALARIA_HOME/skins/*.yaml`.

use talaria_agent::PluginSkin;
use talaria_profile::{EnvLayer, ProfileHome};
use talaria_tui::{SkinCatalog, SkinSource, SkinWarning};

use crate::args::SkinCommand;
use crate::exit::{Status, usage_error};

/// The built-in skins and the profile's own (`$TALARIA_HOME/skins`), with
/// what was wrong with any of them; plugins' skins join with [`plugin_sources`].
pub fn catalog(home: &ProfileHome) -> (SkinCatalog, Vec<SkinWarning>) {
    SkinCatalog::load(Some(&home.skins_dir()), Vec::new())
}

/// Plugins' skins as catalog sources.
pub fn plugin_sources(skins: &[PluginSkin]) -> Vec<SkinSource> {
    skins
        .iter()
        .map(|skin| SkinSource::new(format!("plugin {}", skin.plugin), &*skin.name, &*skin.yaml))
        .collect()
}

/// The whole catalog: built-ins, the plugins' skins, the profile's own.
async fn catalog_with_plugins(home: &ProfileHome) -> (SkinCatalog, Vec<SkinWarning>) {
    let (skins, mut warnings) = catalog(home);
    let config = talaria_profile::load_profile(home)
        .map(|(_, config)| config)
        .unwrap_or_default();
    match talaria_agent::plugins::load_for_command(home, &config, "cli").await {
        Ok(plugins) => {
            let (skins, more) = skins.with_plugin_skins(plugin_sources(&plugins.skins));
            warnings.extend(more);
            (skins, warnings)
        }
        Err(error) => {
            eprintln!("note: plugins' skins are left out: {error}");
            (skins, warnings)
        }
    }
}

/// Runs a `skin` subcommand over every skin, plugins' included.
pub async fn run(command: SkinCommand, home: &ProfileHome) -> Status {
    let (skins, warnings) = catalog_with_plugins(home).await;
    for warning in &warnings {
        eprintln!("note: {warning}");
    }
    match command {
        SkinCommand::List => {
            let current = talaria_profile::load_profile(home)
                .map(|(_, config)| config.display.skin)
                .unwrap_or_else(|_| "default".into());
            for info in skins.list() {
                let marker = if info.name == current { "*" } else { " " };
                let problem = info
                    .problem
                    .map(|p| format!("  (unusable: {p})"))
                    .unwrap_or_default();
                println!(
                    "{marker} {:<14} {:<36} {}{problem}",
                    info.name, info.description, info.origin
                );
            }
            Status::Answered
        }
        SkinCommand::Use { name } => {
            if let Err(error) = skins.resolve(&name) {
                return usage_error(&error.to_string());
            }
            let env = match EnvLayer::load(&home.env_file()) {
                Ok(env) => env,
                Err(error) => return usage_error(&error.to_string()),
            };
            match talaria_profile::config_edit::set(
                &home.config_file(),
                "display.skin",
                &name,
                &env,
            ) {
                Ok(()) => {
                    println!("skin: {name}");
                    Status::Answered
                }
                Err(error) => usage_error(&error.to_string()),
            }
        }
    }
}
