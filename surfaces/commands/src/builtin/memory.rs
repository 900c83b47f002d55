//! `/memory`: the built-in memory and the external provider, and choosing
//! the provider of the next sessions.

use talaria_agent::memory_admin;

use crate::context::{Context, Reply};
use crate::invocation::Invocation;
use crate::spec::Surfaces;

pub(super) async fn memory(ctx: &mut Context<'_>, invocation: Invocation) -> Reply {
    let (env, config) = match talaria_profile::load_profile(ctx.home) {
        Ok(loaded) => loaded,
        Err(error) => return Reply::text(format!("config.yaml: {error}")),
    };
    let changes = matches!(invocation.arg(0), Some("use" | "off"));
    // Chat users talk to the profile; only its owner changes its settings.
    if changes && ctx.surface == Surfaces::GATEWAY {
        return Reply::text(
            "the memory provider is chosen in the terminal: talaria memory use NAME",
        );
    }
    match (invocation.arg(0), invocation.arg(1)) {
        (Some("use"), Some(name)) => {
            text(memory_admin::use_provider(ctx.home, &env, ctx.cwd, name))
        }
        (Some("use"), None) => {
            Reply::text(memory_admin::provider_lines(ctx.home, &config, ctx.cwd).join("\n"))
        }
        (Some("off"), _) => text(memory_admin::no_provider(ctx.home, &env, &config)),
        _ => {
            let mut lines = memory_admin::status_lines(ctx.home, &config, ctx.cwd);
            let session = match ctx.agent.external_memory() {
                Some(provider) if provider.is_active() => format!("{} (active)", provider.name()),
                Some(provider) => format!("{} (disabled after failures)", provider.name()),
                None => "none".into(),
            };
            lines.push(format!("This session's provider: {session}"));
            Reply::text(lines.join("\n"))
        }
    }
}

fn text(outcome: Result<String, String>) -> Reply {
    Reply::text(outcome.unwrap_or_else(|error| format!("error: {error}")))
}
