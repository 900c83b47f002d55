//! General, display and config commands: help, quit, skin, reasoning, config.

use talaria_profile::EnvLayer;
use talaria_profile::config_edit::{effective, get, set, to_text};

use crate::context::{Context, Effect, Reply};
use crate::invocation::Invocation;

pub(super) async fn help(ctx: &mut Context<'_>, invocation: Invocation) -> Reply {
    match invocation.arg(0) {
        None => Reply::text(ctx.registry.help()),
        Some(name) => match ctx.registry.help_for(name) {
            Some(text) => Reply::text(text),
            None => Reply::error(format!("no command /{}", name.trim_start_matches('/'))),
        },
    }
}

pub(super) async fn quit(_: &mut Context<'_>, _: Invocation) -> Reply {
    Reply::effect(Effect::Quit, "")
}

pub(super) async fn skin(_: &mut Context<'_>, invocation: Invocation) -> Reply {
    // `/skin list` lists, like `/skin` and `talaria skin list`.
    let name = invocation.arg(0).filter(|name| *name != "list");
    Reply::effect(Effect::Skin(name.map(str::to_owned)), "")
}

/// Names the image for the surface to attach to the next message (it prepares it: the
/// registry does no file work). Quotes a terminal adds around a dropped path are removed.
pub(super) async fn image(ctx: &mut Context<'_>, invocation: Invocation) -> Reply {
    let Some(text) = invocation.arg(0).filter(|t| !t.trim().is_empty()) else {
        return Reply::error("usage: /image <path>");
    };
    let text = text.trim();
    let unquoted = ["'", "\""]
        .iter()
        .find_map(|q| text.strip_prefix(q).and_then(|t| t.strip_suffix(q)))
        .unwrap_or(text);
    Reply::effect(Effect::Attach(ctx.cwd.join(unquoted)), "")
}

pub(super) async fn reasoning(_: &mut Context<'_>, invocation: Invocation) -> Reply {
    Reply::effect(
        Effect::Reasoning(invocation.arg(0).map(|mode| mode == "show")),
        "",
    )
}

fn yaml(value: &serde_yaml_ng::Value) -> String {
    if value.is_null() {
        "(not set)".into()
    } else {
        to_text(value)
    }
}

pub(super) async fn config(ctx: &mut Context<'_>, invocation: Invocation) -> Reply {
    let home = ctx.home;
    let load = || {
        let env = EnvLayer::load(&home.env_file()).map_err(|e| e.to_string())?;
        let config = talaria_profile::ConfigFile::load(&home.config_file(), &env)
            .map_err(|e| e.to_string())?;
        Ok::<_, String>((env, config))
    };
    let (env, config) = match load() {
        Ok(loaded) => loaded,
        Err(error) => return Reply::error(error),
    };
    match (
        invocation.arg(0).unwrap_or("show"),
        invocation.arg(1),
        invocation.arg(2),
    ) {
        ("path", _, _) => Reply::text(home.config_file().display().to_string()),
        ("show", _, _) => match effective(&config) {
            Ok(value) => Reply::text(yaml(&value)),
            Err(error) => Reply::error(error.to_string()),
        },
        ("get", Some(key), _) => match get(&config, key) {
            Ok(value) => Reply::text(format!("{key} = {}", yaml(&value))),
            Err(error) => Reply::error(error.to_string()),
        },
        ("set", Some(key), Some(value)) => match set(&home.config_file(), key, value, &env) {
            Ok(()) => Reply::text(format!(
                "{key} = {value} (saved; applies from the next session)"
            )),
            Err(error) => Reply::error(error.to_string()),
        },
        _ => Reply::error("usage: /config [show | path | get <key> | set <key> <value>]"),
    }
}
