//! `talaria memory status|providers|use|off|facts`: the external memory
//! provider (`memory.provider` in config.yaml) beside the built-in
//! `MEMORY.md`/`USER.md`, and what the first-party `facts` provider holds.

use std::path::PathBuf;

use clap::Subcommand;
use serde_json::{Value, json};
use talaria_agent::{memory_admin, memory_promote};
use talaria_kernel::CancellationToken;
use talaria_profile::{ConfigFile, ProfileHome};

use crate::exit::{Status, usage_error};

/// The first-party local provider whose facts `talaria memory facts` shows.
const FACTS: &str = "facts";

/// `talaria memory …`.
#[derive(Debug, Subcommand)]
pub enum MemoryCommand {
    /// The built-in memory files and the external provider in use.
    Status,
    /// The memory provider plugins found for this profile.
    Providers,
    /// Make NAME the external memory provider (from the next session on).
    Use { name: String },
    /// Use no external memory provider (the built-in memory stays).
    Off,
    /// What the local `facts` provider holds.
    #[command(subcommand)]
    Facts(FactsCommand),
    /// The memories of chat users, groups and clients (kept apart from yours).
    Others,
    /// Show WHO's notes numbered, or add note NUMBER of them to your MEMORY.md.
    Promote {
        /// A name `talaria memory others` lists.
        who: String,
        /// The note to add (from 1); without it the notes are listed.
        number: Option<usize>,
    },
}

/// `talaria memory facts …`.
#[derive(Debug, Subcommand)]
pub enum FactsCommand {
    /// The facts, newest first.
    List {
        /// How many to show.
        #[arg(long, default_value_t = 50)]
        limit: u32,
        /// How many of the newest to skip.
        #[arg(long, default_value_t = 0)]
        offset: u32,
    },
    /// Remove a fact by its id (`f-12`).
    Forget { id: String },
    /// Every fact as JSON, on stdout or into FILE.
    Export {
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
}

/// Runs a `memory` subcommand.
pub async fn run(command: MemoryCommand, home: &ProfileHome) -> Status {
    let (env, config) = match talaria_profile::load_profile(home) {
        Ok(loaded) => loaded,
        Err(error) => return usage_error(&error.to_string()),
    };
    let cwd = std::env::current_dir().unwrap_or_else(|_| home.root().to_path_buf());
    let outcome = match command {
        MemoryCommand::Status => Ok(lines(memory_admin::status_lines(home, &config, &cwd))),
        MemoryCommand::Providers => Ok(lines(memory_admin::provider_lines(home, &config, &cwd))),
        MemoryCommand::Use { name } => {
            memory_admin::use_provider(home, &env, &cwd, &name).map(|line| lines(vec![line]))
        }
        MemoryCommand::Off => {
            memory_admin::no_provider(home, &env, &config).map(|line| lines(vec![line]))
        }
        MemoryCommand::Facts(command) => facts(home, &config, command).await,
        MemoryCommand::Others => memory_promote::others(home).map(|others| {
            if others.is_empty() {
                return "Nobody but you has memory in this profile.\n".to_owned();
            }
            let shown = others.iter().map(|other| {
                format!(
                    "{}  {} note(s), {} about them",
                    other.name, other.notes, other.profile
                )
            });
            lines(shown.collect())
        }),
        MemoryCommand::Promote { who, number: None } => {
            memory_promote::notes_of(home, &who).map(|notes| {
                let numbered = notes.iter().enumerate();
                lines(
                    numbered
                        .map(|(i, note)| format!("{}. {note}", i + 1))
                        .collect(),
                )
            })
        }
        MemoryCommand::Promote {
            who,
            number: Some(number),
        } => memory_promote::promote(home, &who, number)
            .map(|note| format!("Added to your MEMORY.md: {note}\n")),
    };
    match outcome {
        Ok(text) => {
            print!("{text}");
            Status::Answered
        }
        Err(message) => usage_error(&message),
    }
}

fn lines(lines: Vec<String>) -> String {
    lines.iter().map(|l| format!("{l}\n")).collect()
}

async fn facts(
    home: &ProfileHome,
    config: &ConfigFile,
    command: FactsCommand,
) -> Result<String, String> {
    let (arguments, out) = match command {
        FactsCommand::List { limit, offset } => (
            json!({"action": "list", "limit": limit, "offset": offset}),
            None,
        ),
        FactsCommand::Forget { id } => (json!({"action": "remove", "fact_id": id}), None),
        FactsCommand::Export { out } => (json!({"action": "export"}), out),
    };
    let action = arguments["action"].as_str().unwrap_or_default().to_owned();
    let answer = call_fact_store(home, config, arguments).await?;
    match action.as_str() {
        "list" => Ok(render_list(&answer)),
        "remove" => match answer["removed"].as_bool() {
            Some(true) => Ok(format!(
                "forgot {}\n",
                answer["fact_id"].as_str().unwrap_or("")
            )),
            _ => Err(format!(
                "no fact {} in the store",
                answer["fact_id"].as_str().unwrap_or("")
            )),
        },
        _ => {
            let text = serde_json::to_string_pretty(&answer).map_err(|e| e.to_string())? + "\n";
            match out {
                Some(path) => {
                    std::fs::write(&path, &text)
                        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
                    Ok(format!(
                        "{} facts written to {}\n",
                        answer["count"].as_u64().unwrap_or(0),
                        path.display()
                    ))
                }
                None => Ok(text),
            }
        }
    }
}

fn render_list(answer: &Value) -> String {
    let facts = answer["facts"].as_array().cloned().unwrap_or_default();
    let mut text = String::new();
    for fact in &facts {
        text.push_str(&format!(
            "{}  [{}] {}  (trust {:.2})\n",
            fact["id"].as_str().unwrap_or("?"),
            fact["category"].as_str().unwrap_or(""),
            fact["content"].as_str().unwrap_or(""),
            fact["trust"].as_f64().unwrap_or(0.0),
        ));
    }
    text.push_str(&format!(
        "{} of {} facts\n",
        facts.len(),
        answer["total"].as_u64().unwrap_or(0)
    ));
    text
}

/// Runs the `facts` plugin's `fact_store` tool once, as a session would.
async fn call_fact_store(
    home: &ProfileHome,
    config: &ConfigFile,
    arguments: Value,
) -> Result<Value, String> {
    let plugins = talaria_agent::plugins::load_for_command(home, config, "cli").await?;
    let tools = plugins
        .tools
        .filter(|tools| tools.specs().iter().any(|t| t.name == "fact_store"))
        .ok_or_else(|| {
            let why = plugins.notices.iter().find(|n| n.contains(FACTS));
            format!(
                "the {FACTS} memory provider is not installed{}",
                why.map(|w| format!(": {w}")).unwrap_or_default()
            )
        })?;
    let output = tools
        .call(
            "fact_store",
            &arguments.to_string(),
            "memory-cli",
            "",
            &CancellationToken::new(),
        )
        .await
        .map_err(|error| format!("{FACTS}: {error}"))?;
    serde_json::from_str(&output)
        .map_err(|e| format!("{FACTS} answered something that is not JSON: {e}"))
}
