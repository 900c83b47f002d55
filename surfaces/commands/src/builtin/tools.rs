//! Tool commands: tools, toolsets, skills, plugins, yolo.

use std::collections::BTreeMap;

use talaria_agent::plugins::{TrustStore, discover};

use super::session::preview;
use crate::context::{Context, Reply};
use crate::invocation::Invocation;

use super::staged;

pub(super) async fn tools(ctx: &mut Context<'_>, _: Invocation) -> Reply {
    let mut by_toolset: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for tool in ctx.agent.tools() {
        by_toolset.entry(tool.toolset).or_default().push(format!(
            "    {:<18} {}",
            tool.name,
            preview(&tool.summary, 70)
        ));
    }
    if by_toolset.is_empty() {
        return Reply::text("no tools in this session");
    }
    let mut out = Vec::new();
    for (toolset, lines) in by_toolset {
        out.push(format!("  {toolset}"));
        out.extend(lines);
    }
    Reply::text(out.join("\n"))
}

pub(super) async fn toolsets(ctx: &mut Context<'_>, invocation: Invocation) -> Reply {
    match (invocation.arg(0), invocation.arg(1)) {
        (None, _) => {
            let mut counts: BTreeMap<String, usize> = BTreeMap::new();
            for tool in ctx.agent.tools() {
                *counts.entry(tool.toolset).or_default() += 1;
            }
            let mut lines: Vec<String> = counts
                .into_iter()
                .map(|(toolset, n)| {
                    let off = ctx.pending.disable_toolsets.contains(&toolset);
                    let note = if off {
                        "  (off from the next session)"
                    } else {
                        ""
                    };
                    format!(
                        "  {toolset:<14} {n} tool{}{note}",
                        if n == 1 { "" } else { "s" }
                    )
                })
                .collect();
            for toolset in &ctx.pending.enable_toolsets {
                lines.push(format!("  {toolset:<14} (on from the next session)"));
            }
            Reply::text(lines.join("\n"))
        }
        (Some(_), None) => Reply::error("usage: /toolsets enable|disable <toolset> [--now]"),
        (Some(action), Some(toolset)) => {
            let on = action == "enable";
            ctx.pending.set_toolset(toolset, on);
            staged(
                &invocation,
                &format!("toolset {toolset} {}", if on { "on" } else { "off" }),
            )
        }
    }
}

pub(super) async fn skills(ctx: &mut Context<'_>, _: Invocation) -> Reply {
    let skills = ctx.agent.skills();
    if skills.is_empty() {
        return Reply::text(format!(
            "no skills yet; the agent writes them as it learns, or put SKILL.md folders in {}",
            ctx.home.skills_dir().display()
        ));
    }
    let lines: Vec<String> = skills
        .iter()
        .map(|s| format!("  /{:<24} {}", s.name, preview(&s.description, 70)))
        .collect();
    Reply::text(lines.join("\n"))
}

pub(super) async fn plugins(ctx: &mut Context<'_>, _: Invocation) -> Reply {
    let discovery = discover(ctx.home, ctx.cwd, &TrustStore::load(ctx.home));
    let mut lines: Vec<String> = discovery
        .plugins
        .iter()
        .map(|p| {
            let provides: Vec<&str> = p.manifest.provides.iter().map(|k| k.as_str()).collect();
            format!(
                "  {:<18} {:<9} {:<12} {}",
                p.manifest.name,
                p.manifest.version.to_string(),
                p.source.to_string(),
                provides.join(", ")
            )
        })
        .collect();
    if lines.is_empty() {
        lines.push("  no plugins found".into());
    }
    lines.extend(discovery.notices.iter().map(|n| format!("  note: {n}")));
    lines.push("`talaria plugin info NAME` shows one in full".into());
    Reply::text(lines.join("\n"))
}

pub(super) async fn yolo(ctx: &mut Context<'_>, invocation: Invocation) -> Reply {
    let on = match invocation.arg(0) {
        Some(mode) => mode == "on",
        None => !ctx.agent.yolo(),
    };
    ctx.agent.set_yolo(on);
    Reply::text(if on {
        "yolo on: dangerous commands run without asking (hardline ones stay blocked)"
    } else {
        "yolo off: dangerous commands ask first"
    })
}
