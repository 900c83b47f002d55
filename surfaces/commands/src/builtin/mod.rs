//! The built-in commands: one row each. Adding a command is one row here
//! (and its handler); dispatch, `/help`, completion and the JSON listing
//! follow from the row.

mod general;
#[cfg(feature = "mcp")]
mod mcp;
mod memory;
mod model;
mod session;

pub use session::preview;
mod tools;

use crate::context::{Effect, Reply};
use crate::invocation::Invocation;
use crate::spec::{ArgKind, ArgSpec, Builtin, Surfaces};

/// The answer to a change that reshapes the session (model, provider,
/// toolsets): it waits for the next session, so the prompt cache stays
/// valid, unless `--now` asks to apply it at once.
fn staged(invocation: &Invocation, what: &str) -> Reply {
    if invocation.has("--now") {
        Reply::effect(
            Effect::Reload,
            format!(
                "{what} applies now (the conversation continues; the prompt cache starts over)"
            ),
        )
    } else {
        Reply::text(format!(
            "{what} applies from the next session (/new), so this session's prompt cache stays valid; add --now to apply it now"
        ))
    }
}

/// Wraps an `async fn(&mut Context, Invocation) -> Reply` as a table handler.
macro_rules! handler {
    ($f:path) => {
        |ctx, invocation| Box::pin($f(ctx, invocation))
    };
}

const NOW: &[&str] = &["--now"];
const TERMINAL: Surfaces = Surfaces::CLI;
const EVERYWHERE: Surfaces = Surfaces::ALL;

/// COMMAND_REGISTRY's built-in rows.
#[rustfmt::skip]
pub static BUILTINS: &[Builtin] = &[
    // Session
    Builtin { name: "new", aliases: &["reset"], args: &[], flags: &[], description: "Start a fresh session (pending /model and /toolsets changes apply)", category: "Session", surfaces: EVERYWHERE, run: handler!(session::new) },
    Builtin { name: "clear", aliases: &[], args: &[], flags: &[], description: "Clear the screen and start a fresh session", category: "Session", surfaces: TERMINAL, run: handler!(session::clear) },
    Builtin { name: "image", aliases: &[], args: &[ArgSpec::required("path", ArgKind::Text)], flags: &[], description: "Attach an image (PNG, JPEG, GIF or WebP) to your next message", category: "Session", surfaces: TERMINAL, run: handler!(general::image) },
    Builtin { name: "retry", aliases: &[], args: &[], flags: &[], description: "Send the last message again (its answer is discarded)", category: "Session", surfaces: EVERYWHERE, run: handler!(session::retry) },
    Builtin { name: "undo", aliases: &[], args: &[], flags: &[], description: "Remove the last message and everything after it", category: "Session", surfaces: EVERYWHERE, run: handler!(session::undo) },
    Builtin { name: "title", aliases: &[], args: &[ArgSpec::optional("title", ArgKind::Text)], flags: &[], description: "Show or set the session's title", category: "Session", surfaces: EVERYWHERE, run: handler!(session::title) },
    Builtin { name: "compact", aliases: &["compress"], args: &[ArgSpec::optional("focus", ArgKind::Text)], flags: &[], description: "Summarise older messages now, optionally keeping a focus", category: "Session", surfaces: EVERYWHERE, run: handler!(session::compact) },
    Builtin { name: "resume", aliases: &[], args: &[ArgSpec::optional("session", ArgKind::Session)], flags: &[], description: "Continue a stored session (without an id: list recent ones)", category: "Session", surfaces: EVERYWHERE, run: handler!(session::resume) },
    Builtin { name: "sessions", aliases: &["history"], args: &[ArgSpec::optional("count", ArgKind::Choice(&["10", "20", "50"]))], flags: &[], description: "Recent sessions, most recently active first", category: "Session", surfaces: EVERYWHERE, run: handler!(session::sessions) },
    // Model
    Builtin { name: "model", aliases: &[], args: &[ArgSpec::optional("name", ArgKind::Model)], flags: NOW, description: "Show the model, or choose one for the next session (--now: switch now)", category: "Model", surfaces: EVERYWHERE, run: handler!(model::model) },
    Builtin { name: "provider", aliases: &[], args: &[ArgSpec::optional("provider", ArgKind::Provider)], flags: NOW, description: "Show the provider, or choose one for the next session (--now: switch now)", category: "Model", surfaces: EVERYWHERE, run: handler!(model::provider) },
    Builtin { name: "usage", aliases: &["cost"], args: &[], flags: &[], description: "Tokens in and out, cache reads and writes, and cost of the session", category: "Model", surfaces: EVERYWHERE, run: handler!(model::usage) },
    // Tools
    Builtin { name: "tools", aliases: &[], args: &[], flags: &[], description: "The tools the model can call, by toolset", category: "Tools", surfaces: EVERYWHERE, run: handler!(tools::tools) },
    Builtin { name: "toolsets", aliases: &[], args: &[ArgSpec::optional("action", ArgKind::Choice(&["enable", "disable"])), ArgSpec::optional("toolset", ArgKind::Toolset)], flags: NOW, description: "List toolsets, or turn one on or off for the next session (--now: now)", category: "Tools", surfaces: EVERYWHERE, run: handler!(tools::toolsets) },
    Builtin { name: "skills", aliases: &[], args: &[], flags: &[], description: "The skills available; run one with /<skill> request", category: "Tools", surfaces: EVERYWHERE, run: handler!(tools::skills) },
    Builtin { name: "plugins", aliases: &[], args: &[], flags: &[], description: "The plugins found, what they provide and where they come from", category: "Tools", surfaces: EVERYWHERE, run: handler!(tools::plugins) },
    #[cfg(feature = "mcp")]
    Builtin { name: "mcp", aliases: &[], args: &[], flags: &[], description: "The session's MCP servers: how they are reached, their tools, whether they are connected", category: "Tools", surfaces: EVERYWHERE, run: handler!(mcp::mcp) },
    #[cfg(feature = "mcp")]
    Builtin { name: "reload-mcp", aliases: &[], args: &[], flags: &[], description: "List the MCP servers' tools again and continue with them now (the prompt cache starts over)", category: "Tools", surfaces: EVERYWHERE, run: handler!(mcp::reload_mcp) },
    Builtin { name: "memory", aliases: &[], args: &[ArgSpec::optional("action", ArgKind::Choice(&["status", "use", "off"])), ArgSpec::optional("provider", ArgKind::Text)], flags: &[], description: "Memory: the built-in files and the external provider (use NAME or off: from the next session)", category: "Tools", surfaces: EVERYWHERE, run: handler!(memory::memory) },
    Builtin { name: "yolo", aliases: &[], args: &[ArgSpec::optional("mode", ArgKind::Choice(&["on", "off"]))], flags: &[], description: "Run dangerous commands without asking (hardline ones stay blocked)", category: "Tools", surfaces: TERMINAL, run: handler!(tools::yolo) },
    // Display
    Builtin { name: "skin", aliases: &["theme"], args: &[ArgSpec::optional("name", ArgKind::Skin)], flags: &[], description: "List skins or switch to one", category: "Display", surfaces: TERMINAL, run: handler!(general::skin) },
    Builtin { name: "reasoning", aliases: &["think"], args: &[ArgSpec::optional("mode", ArgKind::Choice(&["show", "hide"]))], flags: &[], description: "Show or hide the model's reasoning", category: "Display", surfaces: TERMINAL, run: handler!(general::reasoning) },
    // Config
    Builtin { name: "config", aliases: &[], args: &[ArgSpec::optional("action", ArgKind::Choice(&["show", "get", "set", "path"])), ArgSpec::optional("key", ArgKind::ConfigKey), ArgSpec::optional("value", ArgKind::Text)], flags: &[], description: "Show, read or change config.yaml (changes apply next session)", category: "Config", surfaces: TERMINAL, run: handler!(general::config) },
    // General
    Builtin { name: "help", aliases: &["?"], args: &[ArgSpec::optional("command", ArgKind::Command)], flags: &[], description: "The commands, or one command in full", category: "General", surfaces: EVERYWHERE, run: handler!(general::help) },
    Builtin { name: "quit", aliases: &["exit", "q"], args: &[], flags: &[], description: "End the session and exit", category: "General", surfaces: TERMINAL, run: handler!(general::quit) },
];
