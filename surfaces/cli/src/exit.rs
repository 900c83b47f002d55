//! Exit codes and the messages that go with failures.

use std::process::ExitCode;

use talaria_kernel::{LoopError, ModelError};
use talaria_profile::{ModelSettings, ProfileHome};
use talaria_providers::ProviderKind;

/// How a `talaria` process ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// The agent answered.
    Answered,
    /// The run failed (provider error after retries, budget exhausted without answer).
    Failed,
    /// Bad usage or configuration.
    Usage,
    /// Interrupted by the user.
    Interrupted,
}

impl From<Status> for ExitCode {
    fn from(status: Status) -> Self {
        ExitCode::from(match status {
            Status::Answered => 0,
            Status::Failed => 1,
            Status::Usage => 2,
            Status::Interrupted => 130,
        })
    }
}

/// Reports a usage or configuration error on stderr (keys and passwords in it redacted).
pub fn usage_error(message: &str) -> Status {
    eprintln!("error: {}", talaria_redact::redact(message));
    Status::Usage
}

/// A one-paragraph explanation of a failed run, with what to do about it; a provider's error
/// that quotes a key shows it redacted.
pub fn explain(error: &LoopError, primary: &ModelSettings, home: &ProfileHome) -> String {
    talaria_redact::redact(&describe(error, primary, home)).into_owned()
}

fn describe(error: &LoopError, primary: &ModelSettings, home: &ProfileHome) -> String {
    let LoopError::Model {
        model,
        error: cause,
    } = error
    else {
        return error.to_string();
    };
    let key_env = match primary.provider {
        ProviderKind::OpenAi | ProviderKind::OpenAiResponses => "OPENAI_API_KEY",
        ProviderKind::Anthropic => "ANTHROPIC_API_KEY",
    };
    match cause {
        ModelError::Auth { message } => format!(
            "the endpoint {} rejected the API key for model '{model}': {message}\n\
             Set TALARIA_API_KEY (or {key_env}) in the environment or in {}, or model.api_key \
             in {}; `talaria setup` does this for you.",
            primary.base_url,
            home.env_file().display(),
            home.config_file().display(),
        ),
        ModelError::Connect { message } => format!(
            "cannot reach the model endpoint {}: {message}\nCheck --base-url, TALARIA_BASE_URL \
             or model.base_url in {}.",
            primary.base_url,
            home.config_file().display()
        ),
        ModelError::ContextOverflow { message } => {
            format!("the conversation no longer fits the context window of '{model}': {message}")
        }
        // Not retried: the same request would meet the same cap.
        ModelError::TooLarge { message } => format!("model '{model}': {message}"),
        ModelError::QuotaExhausted { message, .. } => format!(
            "the key for model '{model}' has no quota or credit left: {message}\n\
             Add credit with the provider, or give more keys (model.api_keys) or a fallback \
             model (model.fallback) in {}.",
            home.config_file().display()
        ),
        ModelError::ModelNotFound { message } => format!(
            "the endpoint {} does not serve a model named '{model}': {message}\n\
             Check --model or model.name in {}.",
            primary.base_url,
            home.config_file().display()
        ),
        ModelError::ContentFiltered { message } => format!(
            "the provider's content filter refused the request to '{model}': {message}\n\
             Rephrase the request, or use another model."
        ),
        ModelError::InvalidRequest { status, message } => format!(
            "the endpoint {} rejected the request to '{model}' ({status}): {message}\n\
             It was not retried; the warning above shows the request's shape.",
            primary.base_url
        ),
        other => format!("model '{model}' failed after retries: {other}"),
    }
}
