//! Model providers for Talaria: [`OpenAiChat`] (OpenAI Chat Completions and
//! compatible servers), [`OpenAiResponses`] (the OpenAI Responses API) and
//! [`AnthropicMessages`] (Anthropic Messages API).
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
mod images;
mod openai;
mod responses;
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
pub use responses::OpenAiResponses;

/// Prefix of conversation-internal system notes, which every provider sends as
/// user text because many servers reject mid-conversation system messages.
pub const SYSTEM_NOTE_PREFIX: &str = "[System note] ";

/// The wire formats Talaria speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProviderKind {
    /// OpenAI Chat Completions (OpenAI, OpenRouter, vLLM, llama.cpp, Ollama, ...).
    OpenAi,
    /// OpenAI Responses (`POST /responses`), for models served only there.
    OpenAiResponses,
    /// Anthropic Messages.
    Anthropic,
}

impl ProviderKind {
    /// Every kind, in the order they are listed to users.
    pub const ALL: [ProviderKind; 3] = [
        ProviderKind::OpenAi,
        ProviderKind::OpenAiResponses,
        ProviderKind::Anthropic,
    ];

    /// The names of every kind, for messages: `openai, openai-responses or anthropic`.
    pub fn names() -> String {
        let names: Vec<&str> = Self::ALL.iter().map(|kind| kind.as_str()).collect();
        match names.split_last() {
            Some((last, [])) => (*last).to_owned(),
            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
            None => String::new(),
        }
    }

    /// The public API root of this kind's reference service.
    pub fn default_base_url(self) -> &'static str {
        match self {
            ProviderKind::OpenAi | ProviderKind::OpenAiResponses => "https://api.openai.com/v1",
            ProviderKind::Anthropic => "https://api.anthropic.com",
        }
    }

    /// The lowercase name (`"openai"`, `"openai-responses"`, `"anthropic"`).
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "openai",
            ProviderKind::OpenAiResponses => "openai-responses",
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
        let name = s.trim().to_ascii_lowercase();
        Self::ALL
            .into_iter()
            .find(|kind| kind.as_str() == name)
            .ok_or_else(|| ConfigError::UnknownProvider(s.to_owned()))
    }
}

/// Builds a provider of `kind` over the shared HTTP client.
pub fn build(
    kind: ProviderKind,
    config: ProviderConfig,
) -> Result<Arc<dyn ModelProvider>, ConfigError> {
    Ok(match kind {
        ProviderKind::OpenAi => Arc::new(OpenAiChat::new(config)?),
        ProviderKind::OpenAiResponses => Arc::new(OpenAiResponses::new(config)?),
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
        assert_eq!(
            "OpenAI-Responses".parse::<ProviderKind>().unwrap(),
            ProviderKind::OpenAiResponses
        );
        for kind in ProviderKind::ALL {
            assert_eq!(kind.as_str().parse::<ProviderKind>().unwrap(), kind);
        }
        assert_eq!(
            ProviderKind::names(),
            "openai, openai-responses or anthropic"
        );
        assert_eq!(
            ProviderKind::OpenAiResponses.default_base_url(),
            "https://api.openai.com/v1"
        );
    }

    #[test]
    fn build_validates_config() {
        let provider = build(
            ProviderKind::Anthropic,
            ProviderConfig::new("http://127.0.0.1:1"),
        )
        .unwrap();
        assert_eq!(provider.name(), "anthropic");
        let provider = build(
            ProviderKind::OpenAiResponses,
            ProviderConfig::new("http://127.0.0.1:1/v1"),
        )
        .unwrap();
        assert_eq!(provider.name(), "openai-responses");
        let err = build(ProviderKind::OpenAi, ProviderConfig::new("not a url"))
            .err()
            .unwrap();
        assert!(err.to_string().contains("\"not a url\""), "{err}");
    }
}
