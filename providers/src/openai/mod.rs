//! The OpenAI Chat Completions provider (also OpenRouter, vLLM, llama.cpp
//! server, Ollama and other compatible servers).

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

/// A Chat Completions endpoint: `POST {base_url}/chat/completions`.
#[derive(Debug, Clone)]
pub struct OpenAiChat {
    client: reqwest::Client,
    url: Url,
    headers: HeaderMap,
    config: ProviderConfig,
}

impl OpenAiChat {
    /// A provider using the process-wide HTTP client.
    pub fn new(config: ProviderConfig) -> Result<Self, ConfigError> {
        Self::with_client(config, http::shared_client()?)
    }

    /// A provider using the given HTTP client.
    pub fn with_client(
        config: ProviderConfig,
        client: reqwest::Client,
    ) -> Result<Self, ConfigError> {
        let url = endpoint_url(&config.base_url, "/chat/completions")?;
        let auth = config.api_key.as_ref().map(|key| format!("Bearer {key}"));
        let headers = header_map(
            auth.iter()
                .map(|value| ("authorization", value.as_str(), true))
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
impl ModelProvider for OpenAiChat {
    fn name(&self) -> &str {
        "openai"
    }

    async fn complete(
        &self,
        request: ModelRequest<'_>,
        sink: &dyn StreamSink,
        cancel: &CancellationToken,
    ) -> Result<ModelResponse, ModelError> {
        let body = request::render(&request, self.config.stream, self.config.default_max_tokens);
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
            .run(post, self.config.stream, response::ChatDecoder::new(sink))
            .await
    }
}
