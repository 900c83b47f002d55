//! Model providers for Talaria: [`OpenAiChat`] (OpenAI Chat Completions and
//! compatible servers) and [`AnthropicMessages`] (Anthropic Messages API).
//!
//! Each `complete` call sends exactly one request, streams events to the
//! sink, honours cancellation and an idle timeout, and classifies failures
//! into [`ModelError`](talaria_kernel::ModelError)s; retries, backoff and
//! fallback are the kernel loop's business.

mod anthropic;
mod assemble;
mod config;
mod endpoint;
mod errors;
pub mod http;
mod openai;
pub mod retry_after;
pub mod sse;
mod tls;

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use talaria_kernel::ModelProvider;

pub use anthropic::{ANTHROPIC_VERSION, AnthropicMessages, DEFAULT_MAX_TOKENS};
pub use config::{ConfigError, ProviderConfig};
pub use openai::OpenAiChat;

/// Prefix of conversation-internal system notes, which both providers send as
/// user text because many servers reject mid-conversation system messages.
pub const SYSTEM_NOTE_PREFIX: &str = "[System note] ";

/// The wire formats Talaria speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProviderKind {
    /// OpenAI Chat Completions (OpenAI, OpenRouter, vLLM, llama.cpp, Ollama, ...).
    OpenAi,
    /// Anthropic Messages.
    Anthropic,
}

impl ProviderKind {
    /// The public API root of this kind's reference service.
    pub fn default_base_url(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "https://api.openai.com/v1",
            ProviderKind::Anthropic => "https://api.anthropic.com",
        }
    }

    /// The lowercase name (`"openai"`, `"anthropic"`).
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "openai",
            ProviderKind::Anthropic => "anthropic",
        }
    }
}

impl fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ProviderKind {
    type Err = ConfigError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "openai" => Ok(ProviderKind::OpenAi),
            "anthropic" => Ok(ProviderKind::Anthropic),
            _ => Err(ConfigError::UnknownProvider(s.to_owned())),
        }
    }
}

/// Builds a provider of `kind` over the shared HTTP client.
pub fn build(
    kind: ProviderKind,
    config: ProviderConfig,
) -> Result<Arc<dyn ModelProvider>, ConfigError> {
    Ok(match kind {
        ProviderKind::OpenAi => Arc::new(OpenAiChat::new(config)?),
        ProviderKind::Anthropic => Arc::new(AnthropicMessages::new(config)?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_parse_and_display() {
        assert_eq!(
            "openai".parse::<ProviderKind>().unwrap(),
            ProviderKind::OpenAi
        );
        assert_eq!(
            " Anthropic ".parse::<ProviderKind>().unwrap(),
            ProviderKind::Anthropic
        );
        assert!(
            matches!("gemini".parse::<ProviderKind>(), Err(ConfigError::UnknownProvider(name)) if name == "gemini")
        );
        assert_eq!(ProviderKind::Anthropic.to_string(), "anthropic");
    }

    #[test]
    fn build_validates_config() {
        let provider = build(
            ProviderKind::Anthropic,
            ProviderConfig::new("http://127.0.0.1:1"),
        )
        .unwrap();
        assert_eq!(provider.name(), "anthropic");
        let err = build(ProviderKind::OpenAi, ProviderConfig::new("not a url"))
            .err()
            .unwrap();
        assert!(err.to_string().contains("\"not a url\""), "{err}");
    }
}
