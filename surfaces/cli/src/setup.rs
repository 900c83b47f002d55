//! `talaria setup`: asks for provider, base URL, model and key, checks them
//! with one real request, then writes `config.yaml` and `.env` in the profile
//! home. Answers come from the terminal, or line by line from a pipe.

use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;
use std::time::Duration;

use talaria_agent::provider_for;
use talaria_kernel::{CacheBreakpoints, Message, ModelRequest, NullSink, ToolChoice};
use talaria_profile::load_profile;
use talaria_profile::{ModelSettings, ProfileHome};
use talaria_providers::ProviderKind;

use crate::args::SetupArgs;
use crate::exit::{Status, usage_error};

const KEY_VAR: &str = "TALARIA_API_KEY";

/// Reads one answer line; `None` at end of input.
fn read_answer() -> Option<String> {
    let mut line = String::new();
    match std::io::stdin().lock().read_line(&mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(line.trim().to_owned()),
    }
}

/// Asks a question on stderr; an empty answer takes the default.
fn ask(question: &str, default: Option<&str>) -> Option<String> {
    match default {
        Some(default) => eprint!("{question} [{default}]: "),
        None => eprint!("{question}: "),
    }
    let _ = std::io::stderr().flush();
    let answer = read_answer()?;
    if answer.is_empty() {
        default.map(str::to_owned)
    } else {
        Some(answer)
    }
}

/// A yes/no question; Enter takes the default, end of input means no.
/// Asks before deleting `what` (a description with its path). With `--yes`
/// (`assume_yes`) nothing is asked; without a terminal to ask on, the
/// deletion is refused with `Err` telling the user about `--yes`.
pub fn confirm_deletion(what: &str, assume_yes: bool) -> Result<bool, crate::exit::Status> {
    if assume_yes {
        return Ok(true);
    }
    if !std::io::stdin().is_terminal() {
        return Err(crate::exit::usage_error(&format!(
            "deleting {what} cannot be undone; pass --yes to confirm"
        )));
    }
    let yes = confirm(&format!("Delete {what}?"), false);
    if !yes {
        eprintln!("Nothing deleted.");
    }
    Ok(yes)
}

pub fn confirm(question: &str, default_yes: bool) -> bool {
    eprint!("{question} ({}): ", if default_yes { "Y/n" } else { "y/N" });
    let _ = std::io::stderr().flush();
    match read_answer() {
        Some(answer) if answer.is_empty() => default_yes,
        Some(answer) => matches!(answer.to_ascii_lowercase().as_str(), "y" | "yes"),
        None => false,
    }
}

fn ask_secret(question: &str) -> Option<String> {
    if std::io::stdin().is_terminal() {
        rpassword::prompt_password(format!("{question}: "))
            .ok()
            .map(|k| k.trim().to_owned())
    } else {
        ask(question, None)
    }
}

/// Runs the wizard.
pub async fn run_wizard(args: &SetupArgs, home: &ProfileHome) -> Status {
    let (env, mut config) = match load_profile(home) {
        Ok(loaded) => loaded,
        Err(error) => {
            return usage_error(&format!(
                "{error}\nFix or remove the file, then run setup again."
            ));
        }
    };
    let current = config.model.clone();

    let Some(provider_text) = args.model.provider.clone().or_else(|| {
        ask(
            &format!("Provider ({})", ProviderKind::names()),
            Some(current.provider.as_deref().unwrap_or("openai")),
        )
    }) else {
        return usage_error("setup needs a provider");
    };
    let provider: ProviderKind = match provider_text.parse() {
        Ok(provider) => provider,
        Err(_) => {
            return usage_error(&format!(
                "unknown provider '{provider_text}': expected {}",
                ProviderKind::names()
            ));
        }
    };
    let url_default = current
        .base_url
        .clone()
        .unwrap_or_else(|| provider.default_base_url().to_owned());
    let Some(base_url) = args
        .model
        .base_url
        .clone()
        .or_else(|| ask("Base URL", Some(&url_default)))
    else {
        return usage_error("setup needs a base URL");
    };
    if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
        return usage_error(&format!(
            "base URL '{base_url}' must start with http:// or https://"
        ));
    }
    let Some(model) = args
        .model
        .model
        .clone()
        .or_else(|| ask("Model", current.name.as_deref()))
        .filter(|m| !m.is_empty())
    else {
        return usage_error("setup needs a model name");
    };
    let existing_key = env.get(KEY_VAR);
    let prompt = if existing_key.is_some() {
        "API key (Enter keeps the current one)"
    } else {
        "API key (Enter for none, e.g. a local server)"
    };
    let typed = ask_secret(prompt).unwrap_or_default();
    let api_key = if typed.is_empty() {
        existing_key
    } else {
        Some(typed.clone())
    };

    let settings = ModelSettings {
        provider,
        model: model.clone(),
        base_url: base_url.clone(),
        api_key,
        stream: current.stream.unwrap_or(true),
        max_tokens: None,
        pricing: current.pricing.unwrap_or_default(),
        max_reply_bytes: current.max_reply_bytes,
        max_prompt_bytes: current.max_prompt_bytes,
        cache_control: current.cache_control.unwrap_or_default(),
    };
    if !args.no_check {
        eprintln!("Checking {model} at {base_url} …");
        match check(&settings, &config.network).await {
            Ok(reply) => eprintln!("✓ the endpoint answered: {}", reply.trim()),
            Err(error) => {
                eprintln!("✗ check failed: {error}");
                if !confirm("Save these settings anyway?", false) {
                    eprintln!("Nothing was saved.");
                    return Status::Failed;
                }
            }
        }
    }

    config.model.provider = Some(provider_text.to_ascii_lowercase());
    config.model.name = Some(model);
    config.model.base_url = Some(base_url);
    if !typed.is_empty() {
        // The key lives in .env; the config must not shadow it with a stale one.
        config.model.api_key = None;
    }
    if let Err(error) = save(home, &config, (!typed.is_empty()).then_some(typed.as_str())) {
        return usage_error(&error);
    }
    eprintln!(
        "Saved {}{}. Try: talaria -q \"hello\"",
        home.config_file().display(),
        if typed.is_empty() {
            String::new()
        } else {
            format!(" and {}", home.env_file().display())
        }
    );
    Status::Answered
}

/// One small real request; returns the model's reply text.
async fn check(
    settings: &ModelSettings,
    network: &talaria_profile::config::NetworkConfig,
) -> Result<String, String> {
    let provider = provider_for(settings, network).map_err(|e| e.to_string())?;
    let messages = [Message::user("Reply with the single word: OK")];
    let cache = CacheBreakpoints::default();
    let request = ModelRequest {
        model: &settings.model,
        system: "You are checking that this endpoint works.",
        messages: &messages,
        tools: &[],
        tool_choice: ToolChoice::Auto,
        cache: &cache,
        max_tokens: Some(64),
    };
    let cancel = talaria_kernel::CancellationToken::new();
    let call = provider.complete(request, &NullSink, &cancel);
    match tokio::time::timeout(Duration::from_secs(60), call).await {
        Ok(Ok(response)) => Ok(response.message.content),
        Ok(Err(error)) => Err(error.to_string()),
        Err(_) => Err("no answer within 60 s".into()),
    }
}

/// Writes config.yaml (keeping a backup of the previous one) and the key in .env.
fn save(
    home: &ProfileHome,
    config: &talaria_profile::ConfigFile,
    key: Option<&str>,
) -> Result<(), String> {
    let root = home.root();
    std::fs::create_dir_all(root).map_err(|e| format!("cannot create {}: {e}", root.display()))?;
    let yaml = config
        .to_yaml()
        .map_err(|e| format!("cannot write the config: {e}"))?;
    let config_path = home.config_file();
    if config_path.exists() {
        let backup = config_path.with_extension("yaml.bak");
        std::fs::copy(&config_path, &backup)
            .map_err(|e| format!("cannot back up {}: {e}", config_path.display()))?;
    }
    write_private(&config_path, &yaml)?;
    if let Some(key) = key {
        let env_path = home.env_file();
        let previous = std::fs::read_to_string(&env_path).unwrap_or_default();
        write_private(&env_path, &with_env_value(&previous, KEY_VAR, key))?;
    }
    Ok(())
}

/// `text` with `name`'s line replaced (or appended), other lines untouched.
fn with_env_value(text: &str, name: &str, value: &str) -> String {
    let quoted = format!("{name}='{}'", value.replace('\'', ""));
    let mut lines: Vec<String> = text
        .lines()
        .filter(|line| {
            let key = line
                .trim_start()
                .trim_start_matches("export ")
                .split('=')
                .next();
            key.map(str::trim) != Some(name)
        })
        .map(str::to_owned)
        .collect();
    lines.push(quoted);
    lines.join("\n") + "\n"
}

/// Writes via a temporary file and rename, readable by the owner only.
fn write_private(path: &Path, contents: &str) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let temp = path.with_extension("tmp");
    let error = |e: std::io::Error| format!("cannot write {}: {e}", path.display());
    std::fs::write(&temp, contents).map_err(error)?;
    std::fs::set_permissions(&temp, std::fs::Permissions::from_mode(0o600)).map_err(error)?;
    std::fs::rename(&temp, path).map_err(error)
}

#[cfg(test)]
mod tests {
    use super::with_env_value;

    #[test]
    fn env_values_are_replaced_in_place_of_old_ones() {
        let text = "A=1\nexport TALARIA_API_KEY=old\nB=2\n";
        assert_eq!(
            with_env_value(text, "TALARIA_API_KEY", "new"),
            "A=1\nB=2\nTALARIA_API_KEY='new'\n"
        );
        assert_eq!(with_env_value("", "K", "v"), "K='v'\n");
    }
}
