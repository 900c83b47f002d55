//! `talaria import hermes`.

use std::collections::BTreeSet;

use talaria_profile::hermes_import::{ImportReport, import_hermes};
use talaria_profile::{EnvLayer, ProfileHome};

use crate::args::ImportCommand;
use crate::exit::{Status, usage_error};

/// Runs one import.
pub async fn run(command: ImportCommand, home: &ProfileHome) -> Status {
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
        Ok(mut report) => {
            let jobs_error = import_jobs(&from, home, overwrite, &mut report);
            println!(
                "Imported from {} into {}:",
                from.display(),
                home.root().display()
            );
            for item in &report.imported {
                println!("  + {item}");
            }
            for item in &report.kept {
                if item.ends_with("; not imported") {
                    println!("  = {item}");
                } else {
                    println!("  = {item} (exists; kept — use --overwrite to replace)");
                }
            }
            if !report.unmapped.is_empty() {
                println!("Not mapped (no Talaria equivalent yet):");
                for key in &report.unmapped {
                    println!("  - {key}");
                }
            }
            if !report.gateway_platforms.is_empty() {
                report_missing_adapters(home, &report.gateway_platforms).await;
            }
            match jobs_error {
                Some(error) => usage_error(&format!("scheduled jobs not imported: {error}")),
                None => Status::Answered,
            }
        }
        Err(error) => usage_error(&error.to_string()),
    }
}

/// Imports Hermes's scheduled jobs into `report`; why they could not be, if so. Hermes's jobs
/// file has talaria-cron's layout. A broken one stops only the jobs, after the rest is reported.
#[cfg(feature = "gateway")]
fn import_jobs(
    from: &std::path::Path,
    home: &ProfileHome,
    overwrite: bool,
    report: &mut ImportReport,
) -> Option<String> {
    match talaria_cron::JobStore::new(home.cron_dir()).import_from(&from.join("cron"), overwrite) {
        Ok(jobs) => {
            report.imported.extend(jobs.imported);
            let skipped = jobs
                .kept
                .into_iter()
                .map(|why| format!("{why}; not imported"));
            report.kept.extend(skipped);
            None
        }
        Err(error) => Some(error.to_string()),
    }
}

/// A build without the gateway has nothing to run scheduled jobs: they are not mapped.
#[cfg(not(feature = "gateway"))]
fn import_jobs(
    from: &std::path::Path,
    _home: &ProfileHome,
    _overwrite: bool,
    report: &mut ImportReport,
) -> Option<String> {
    if from.join("cron").exists() {
        report
            .unmapped
            .push("cron (this Talaria was built without the gateway, which runs jobs)".to_owned());
    }
    None
}

/// Names the imported platforms no installed chat adapter plugin serves.
async fn report_missing_adapters(home: &ProfileHome, platforms: &[String]) {
    let served = match chat_platforms(home).await {
        Ok(served) => served,
        Err(error) => {
            println!("Cannot tell which chat adapter plugins are installed: {error}");
            return;
        }
    };
    let missing: Vec<&String> = platforms
        .iter()
        .filter(|platform| !served.contains(*platform))
        .collect();
    if !missing.is_empty() {
        println!(
            "No chat adapter plugin is installed for these platforms yet; their settings \
             are ready for one (until then `talaria gateway run` skips them):"
        );
        for platform in missing {
            println!("  ! gateway.platforms.{platform}");
        }
    }
}

/// The platforms the chat adapter plugins found for this profile serve (as
/// `talaria gateway run` would load them).
async fn chat_platforms(home: &ProfileHome) -> Result<BTreeSet<String>, String> {
    let approvals = home.root().join("gateway").join("approvals.always");
    let exec = talaria_plugin_host::ExecServices::deny_all(&approvals)?;
    let cwd = std::env::current_dir().unwrap_or_else(|_| home.root().to_path_buf());
    let plugins = talaria_agent::plugins::load_plugins(
        home,
        &talaria_profile::ConfigFile::default(),
        &cwd,
        "gateway",
        exec,
        talaria_agent::plugins::PluginServices::default(),
    )
    .await;
    Ok(plugins
        .chats
        .map(|chats| chats.adapters().into_iter().map(|a| a.platform).collect())
        .unwrap_or_default())
}
