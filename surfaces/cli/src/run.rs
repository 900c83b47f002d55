//! `talaria [-q PROMPT]` and `talaria chat`: build the agent, run, render, exit.

use std::io::{IsTerminal, Read, Write};
use std::sync::Arc;

use talaria_agent::{Agent, AgentOptions, Surface};
use talaria_kernel::{CancellationToken, Exit, ImageRef};
use talaria_profile::{Overrides, ProfileHome, Settings, SettingsError, load_profile};

use crate::args::{ModelArgs, RunArgs};
use crate::exit::{Status, explain, usage_error};
use crate::render::Renderer;
use crate::repl::view::View;
use crate::repl::{ArgSnapshot, CompletionSource, LineReader, Repl};
use crate::setup;
use talaria_commands::{BUILTINS, Registry, Surfaces};
use talaria_tui::SkinCatalog;

pub fn overrides(model: &ModelArgs) -> Overrides {
    Overrides {
        provider: model.provider.clone(),
        model: model.model.clone(),
        base_url: model.base_url.clone(),
    }
}

fn interactive() -> bool {
    std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

/// Resolves settings; on a terminal with nothing configured, offers setup first.
async fn settings(args: &RunArgs, home: &ProfileHome) -> Result<Settings, Status> {
    let resolve = || -> Result<Settings, (String, bool)> {
        let (env, config) = load_profile(home).map_err(|e| (e.to_string(), false))?;
        Settings::resolve(&overrides(&args.model), &env, config, home)
            .map_err(|e| (e.to_string(), matches!(e, SettingsError::Missing(_))))
    };
    match resolve() {
        Ok(settings) => Ok(settings),
        Err((message, missing)) => {
            if missing && args.query.is_none() && interactive() {
                eprintln!("No model is configured yet.");
                if setup::confirm("Set one up now?", true) {
                    let status = setup::run_wizard(&Default::default(), home).await;
                    if status != Status::Answered {
                        return Err(status);
                    }
                    return resolve().map_err(|(message, _)| usage_error(&message));
                }
            }
            let hint = if missing {
                "\nRun `talaria setup` to configure a model."
            } else {
                ""
            };
            Err(usage_error(&format!("{message}{hint}")))
        }
    }
}

/// Cancels `token` on Ctrl-C; a second Ctrl-C ends the process at once.
fn cancel_on_ctrl_c(token: CancellationToken) {
    // Registered before the task runs, so an early Ctrl-C is never the default kill.
    let Ok(mut interrupts) =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
    else {
        return;
    };
    tokio::spawn(async move {
        if interrupts.recv().await.is_some() {
            token.cancel();
            if interrupts.recv().await.is_some() {
                std::process::exit(130);
            }
        }
    });
}

/// Runs the default command.
pub async fn run(args: RunArgs, home: ProfileHome) -> Status {
    let mut settings = match settings(&args, &home).await {
        Ok(settings) => settings,
        Err(status) => return status,
    };
    let surface = if args.query.is_some() {
        Surface::OneShot
    } else {
        Surface::Terminal
    };
    let cwd = match std::env::current_dir() {
        Ok(cwd) => cwd,
        Err(error) => return usage_error(&format!("cannot read the working directory: {error}")),
    };
    settings.yolo = args.yolo;
    let resume = match session_to_resume(&args, &home, &cwd) {
        Ok(resume) => resume,
        Err(status) => return status,
    };
    let interactive_chat = args.query.is_none() && std::io::stdin().is_terminal();
    // The REPL's view exists before the agent: its approver pauses the spinner.
    // (Its skin may come from a plugin: it is set again once plugins are loaded.)
    let screen = interactive_chat.then(|| {
        let display = &settings.config.display;
        let (skins, _) = crate::skins::catalog(&home);
        let view = View::new(
            skins.resolve_or_default(&display.skin).0,
            display.show_reasoning,
        );
        (view, skins)
    });
    let approver: Arc<dyn talaria_approval::Approver> = match &screen {
        Some((view, _)) => view.approver(),
        None => Arc::new(crate::approver::TerminalApprover::default()),
    };
    // Only the REPL can ask `clarify` questions: in a one-shot run stdin is
    // not the user, and nobody may be watching.
    let clarifier = screen
        .as_ref()
        .map(|(view, _)| view.clarifier() as Arc<dyn talaria_agent::Clarifier>);
    let options = AgentOptions {
        surface,
        cwd: cwd.clone(),
        approver,
        resume: resume.clone(),
        editor: None,
        messenger: None,
        clarifier,
        browsers: None,
        chat_user: None,
        principal: talaria_agent::Principal::owner(),
    };
    if let Some((view, skins)) = screen {
        return chat(view, skins, settings, home, cwd, args, options).await;
    }
    // Prepared before the agent is built: a file that cannot be sent is a usage error, at once.
    let images = match attach_images(&args.images, &home) {
        Ok(images) => images,
        Err(status) => return status,
    };
    let mut agent = match Agent::build(&settings, &home, options).await {
        Ok(agent) => agent,
        Err(error) => return usage_error(&error.to_string()),
    };
    for notice in agent.notices() {
        eprintln!("note: {notice}");
    }
    if let Some(id) = &resume {
        eprintln!("Resuming session {id}");
        if let Some(recap) = agent.recap() {
            for line in recap.lines() {
                eprintln!("  {line}");
            }
        }
    }
    // Not a terminal: the prompt is -q or all of stdin.
    let prompt = match &args.query {
        Some(prompt) => prompt.clone(),
        None => {
            let mut prompt = String::new();
            if let Err(error) = std::io::stdin().read_to_string(&mut prompt) {
                return usage_error(&format!("cannot read the prompt from stdin: {error}"));
            }
            if prompt.trim().is_empty() {
                return usage_error("no prompt: pass -q PROMPT or pipe one on stdin");
            }
            prompt.trim().to_owned()
        }
    };
    let status = one_shot(&mut agent, &prompt, images, &args, &settings, &home).await;
    agent.end_session().await;
    status
}

/// The REPL. The prompt is shown while the agent is built (plugins, store,
/// knowledge), so typing starts at once; a line typed meanwhile waits for it.
async fn chat(
    view: Arc<View>,
    skins: SkinCatalog,
    settings: Settings,
    home: ProfileHome,
    cwd: std::path::PathBuf,
    args: RunArgs,
    options: AgentOptions,
) -> Status {
    let images = match attach_images(&args.images, &home) {
        Ok(images) => images,
        Err(status) => return status,
    };
    let resume = options.resume.clone();
    let completion = Arc::new(std::sync::Mutex::new(CompletionSource {
        registry: Arc::new(Registry::new(BUILTINS, Surfaces::CLI)),
        values: ArgSnapshot::default(),
    }));
    let mut reader = match LineReader::new(home.history_file(), completion.clone()) {
        Ok(reader) => reader,
        Err(error) => return usage_error(&format!("cannot start the line editor: {error}")),
    };
    // A saved skin that only a plugin defines is known once plugins are
    // loaded: then the banner and the first prompt wait for the agent, so
    // they are drawn in it. Otherwise typing starts at once.
    let skin_from_plugin = skins.resolve(&settings.config.display.skin).is_err();
    // The catalog with the plugins' skins, when it was needed early.
    let mut merged = None;
    // The build borrows the settings and the home until it has finished.
    let (built, first_read) = {
        let build = Agent::build(&settings, &home, options);
        tokio::pin!(build);
        let early = if skin_from_plugin {
            let built = (&mut build).await;
            if let Ok(agent) = &built {
                let (with_plugins, warnings) = skins
                    .clone()
                    .with_plugin_skins(crate::skins::plugin_sources(agent.plugin_skins()));
                if let Ok(skin) = with_plugins.resolve(&settings.config.display.skin) {
                    view.set_skin(skin);
                }
                merged = Some((with_plugins, warnings));
            }
            Some(built)
        } else {
            None
        };
        view.banner(&settings.primary.model);
        let (plain, styled) = view.prompt();
        let first_read = tokio::task::spawn_blocking(move || {
            let read = reader.read(&plain, &styled);
            (reader, read)
        });
        let built = match early {
            Some(built) => built,
            None => build.await,
        };
        (built, first_read)
    };
    let Ok((reader, first)) = first_read.await else {
        return usage_error("the line editor stopped unexpectedly");
    };
    let agent = match built {
        Ok(agent) => agent,
        Err(error) => return usage_error(&error.to_string()),
    };
    for notice in agent.notices() {
        view.notice(&format!("note: {notice}"));
    }
    if let Some(id) = &resume {
        view.notice(&format!("Resuming session {id}"));
        if let Some(recap) = agent.recap() {
            view.notice(&recap);
        }
    }
    let (skins, warnings) = merged.unwrap_or_else(|| {
        skins.with_plugin_skins(crate::skins::plugin_sources(agent.plugin_skins()))
    });
    for warning in warnings {
        view.notice(&format!("note: {warning}"));
    }
    let (skin, problem) = skins.resolve_or_default(&settings.config.display.skin);
    if let Some(problem) = problem {
        view.error(&format!("{problem}; using the default skin"));
    }
    view.set_skin(skin);
    let mut repl = Repl::new(agent, settings, home, cwd, args, skins, view, completion);
    repl.attach(images);
    repl.run(reader, Some(first)).await
}

/// The stored session `--continue` or `--resume` names, if any.
fn session_to_resume(
    args: &RunArgs,
    home: &ProfileHome,
    cwd: &std::path::Path,
) -> Result<Option<String>, Status> {
    if !args.continue_latest && args.resume.is_none() {
        return Ok(None);
    }
    let db = crate::sessions_cmd::open(home)?;
    if let Some(prefix) = &args.resume {
        return db
            .resolve_id(prefix, &talaria_agent::Principal::owner())
            .map(Some)
            .map_err(|e| usage_error(&e.to_string()));
    }
    match db.latest(
        &cwd.display().to_string(),
        &talaria_agent::Principal::owner(),
    ) {
        Ok(Some(latest)) => Ok(Some(latest.id)),
        Ok(None) => Err(usage_error(&format!(
            "no earlier session in {} to continue (see `talaria session list`)",
            cwd.display()
        ))),
        Err(error) => Err(usage_error(&error.to_string())),
    }
}

/// `--image` files, prepared into the profile's image store (a note when one was scaled).
fn attach_images(
    paths: &[std::path::PathBuf],
    home: &ProfileHome,
) -> Result<Vec<ImageRef>, Status> {
    let store = talaria_agent::image_store(home);
    paths
        .iter()
        .map(|path| match store.attach_file(path) {
            Ok(attached) => {
                if let Some(note) = attached.note {
                    eprintln!("note: {note}");
                }
                Ok(attached.image)
            }
            Err(error) => Err(usage_error(&error.to_string())),
        })
        .collect()
}

async fn one_shot(
    agent: &mut Agent,
    prompt: &str,
    images: Vec<ImageRef>,
    args: &RunArgs,
    settings: &Settings,
    home: &ProfileHome,
) -> Status {
    let renderer = if args.json {
        Renderer::Json
    } else {
        Renderer::Human
    };
    let cancel = CancellationToken::new();
    cancel_on_ctrl_c(cancel.clone());
    let outcome = agent
        .run_with_images(prompt, images, &renderer, &cancel)
        .await;
    let print_answer = |text: &str| {
        if !args.json {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{}", text.trim_end_matches('\n'));
        }
    };
    match outcome {
        Ok(Exit::Final(text)) => {
            print_answer(&text);
            Status::Answered
        }
        Ok(Exit::BudgetExhausted { exhausted, summary }) => {
            print_answer(&summary);
            eprintln!("error: the {exhausted} ran out before the task was finished");
            Status::Failed
        }
        Ok(Exit::Interrupted) => {
            if args.json {
                Renderer::json_line(&serde_json::json!({"type": "interrupted"}));
            }
            eprintln!("interrupted");
            Status::Interrupted
        }
        Err(error) => {
            let message = explain(&error, &settings.primary, home);
            if args.json {
                Renderer::json_line(&serde_json::json!({"type": "error", "message": message}));
            }
            eprintln!("error: {message}");
            Status::Failed
        }
    }
}
