//! Model commands: model, provider, usage.

use crate::context::{Context, Effect, Reply};
use crate::invocation::Invocation;

use super::staged;

pub(super) async fn model(ctx: &mut Context<'_>, invocation: Invocation) -> Reply {
    let Some(name) = invocation.arg(0) else {
        let model = ctx.agent.model();
        let mut text = format!(
            "model: {} ({} at {})",
            model.model,
            model.provider.as_str(),
            model.base_url
        );
        if let Some(next) = &ctx.pending.model {
            text.push_str(&format!("\nnext session: {next}"));
        }
        if invocation.has("--now") && ctx.pending.model.is_some() {
            return Reply::effect(Effect::Reload, text);
        }
        return Reply::text(text);
    };
    ctx.pending.model = Some(name.to_owned());
    staged(&invocation, &format!("model {name}"))
}

pub(super) async fn provider(ctx: &mut Context<'_>, invocation: Invocation) -> Reply {
    let Some(name) = invocation.arg(0) else {
        let model = ctx.agent.model();
        let mut text = format!(
            "provider: {} at {}",
            model.provider.as_str(),
            model.base_url
        );
        if let Some(next) = &ctx.pending.provider {
            text.push_str(&format!("\nnext session: {next}"));
        }
        return Reply::text(text);
    };
    if let Err(error) = name.parse::<talaria_providers::ProviderKind>() {
        return Reply::error(format!("/provider: {error}"));
    }
    ctx.pending.provider = Some(name.to_owned());
    staged(&invocation, &format!("provider {name}"))
}

pub(super) async fn usage(ctx: &mut Context<'_>, _: Invocation) -> Reply {
    let usage = ctx.agent.usage();
    let tokens = &usage.tokens;
    let cost = if usage.cost_usd > 0.0 {
        format!("${:.4}", usage.cost_usd)
    } else {
        "$0 (no prices configured for this model: model.pricing in config.yaml)".into()
    };
    Reply::text(format!(
        "session {}\n  tokens in    {:>10}\n  tokens out   {:>10}\n  cache read   {:>10}\n  cache write  {:>10}\n  cost         {cost}\n  messages     {:>10}   compressions {}",
        ctx.agent.session_id(),
        group(tokens.input_tokens),
        group(tokens.output_tokens),
        group(tokens.cache_read_tokens),
        group(tokens.cache_write_tokens),
        usage.messages,
        usage.compressions
    ))
}

/// 1234567 → "1,234,567".
fn group(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn numbers_are_grouped_by_thousands() {
        assert_eq!(super::group(0), "0");
        assert_eq!(super::group(999), "999");
        assert_eq!(super::group(1_234_567), "1,234,567");
    }
}
