//! The Anthropic Messages provider.

mod request;
mod response;

use async_trait::async_trait;
use reqwest::Url;
use reqwest::header::HeaderMap;
use talaria_kernel::{
    CancellationToken, ModelError, ModelProvider, ModelRequest, ModelResponse, StreamSink,
};

use crate::config::{ConfigError, ProviderConfig, endpoint_url, header_map};
use crate::http::{self, Exchange};

/// The `anthropic-version` header value sent with every request.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Output cap used when neither the request nor the config sets one (the
/// Messages API requires `max_tokens`).
pub const DEFAULT_MAX_TOKENS: u32 = 8192;

/// A Messages endpoint: `POST {base_url}/v1/messages` (no doubled `/v1`).
#[derive(Debug, Clone)]
pub struct AnthropicMessages {
    client: reqwest::Client,
    url: Url,
    headers: HeaderMap,
    config: ProviderConfig,
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
        let url = endpoint_url(&config.base_url, "/v1/messages")?;
        let auth = config.api_key.as_ref().map(|key| {
            if config.bearer_auth {
                ("authorization", format!("Bearer {key}"))
            } else {
                ("x-api-key", key.clone())
            }
        });
        let headers = header_map(
            std::iter::once(("anthropic-version", ANTHROPIC_VERSION, false))
                .chain(
                    auth.iter()
                        .map(|(name, value)| (*name, value.as_str(), true)),
                )
                .chain(
                    config
                        .headers
                        .iter()
                        .map(|(name, value)| (name.as_str(), value.as_str(), false)),
                ),
        )?;
        Ok(Self {
            client,
            url,
            headers,
            config,
        })
    }

    /// The configuration this provider was built from.
    pub fn config(&self) -> &ProviderConfig {
        &self.config
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
        let max_tokens = self.config.default_max_tokens.unwrap_or(DEFAULT_MAX_TOKENS);
        let body = request::render(&request, self.config.stream, max_tokens);
        let exchange = Exchange {
            provider: self.name(),
            idle: self.config.idle_timeout,
            cancel,
        };
        let post = self
            .client
            .post(self.url.clone())
            .headers(self.headers.clone())
            .json(&body);
        exchange
            .run(
                post,
                self.config.stream,
                response::MessagesDecoder::new(sink),
            )
            .await
    }
}
