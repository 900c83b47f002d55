//! The Anthropic Messages provider.

mod request;
mod response;

use async_trait::async_trait;
use talaria_kernel::{
    CancellationToken, ModelError, ModelProvider, ModelRequest, ModelResponse, StreamSink,
};

use crate::config::{ConfigError, ProviderConfig};
use crate::endpoint::Endpoint;
use crate::http;

/// The `anthropic-version` header value sent with every request.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Output cap used when neither the request nor the config sets one (the
/// Messages API requires `max_tokens`).
pub const DEFAULT_MAX_TOKENS: u32 = 8192;

/// A Messages endpoint: `POST {base_url}/v1/messages` (no doubled `/v1`).
#[derive(Debug, Clone)]
pub struct AnthropicMessages {
    endpoint: Endpoint,
}

impl AnthropicMessages {
    /// A provider using the process-wide HTTP client.
    pub fn new(config: ProviderConfig) -> Result<Self, ConfigError> {
        Self::with_client(config, http::shared_client()?)
    }

    /// A provider using the given HTTP client.
    pub fn with_client(
        config: ProviderConfig,
        client: reqwest::Client,
    ) -> Result<Self, ConfigError> {
        let mut fixed = vec![("anthropic-version", ANTHROPIC_VERSION.to_owned(), false)];
        if let Some(key) = &config.api_key {
            fixed.push(if config.bearer_auth {
                ("authorization", format!("Bearer {key}"), true)
            } else {
                ("x-api-key", key.clone(), true)
            });
        }
        let endpoint = Endpoint::new(config, client, "/v1/messages", &fixed)?;
        Ok(Self { endpoint })
    }

    /// The configuration this provider was built from.
    pub fn config(&self) -> &ProviderConfig {
        &self.endpoint.config
    }
}

#[async_trait]
impl ModelProvider for AnthropicMessages {
    fn name(&self) -> &str {
        "anthropic"
    }

    async fn complete(
        &self,
        request: ModelRequest<'_>,
        sink: &dyn StreamSink,
        cancel: &CancellationToken,
    ) -> Result<ModelResponse, ModelError> {
        let config = self.config();
        let max_tokens = config.default_max_tokens.unwrap_or(DEFAULT_MAX_TOKENS);
        let body = request::render(&request, config.stream, max_tokens)?;
        let decoder = response::MessagesDecoder::new(sink);
        self.endpoint
            .post(self.name(), &body, decoder, cancel)
            .await
    }
}
