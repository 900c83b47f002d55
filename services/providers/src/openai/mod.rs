//! The OpenAI Chat Completions provider (also OpenRouter, vLLM, llama.cpp
//! server, Ollama and other compatible servers).

mod request;
mod response;

use async_trait::async_trait;
use talaria_kernel::{
    CancellationToken, ModelError, ModelProvider, ModelRequest, ModelResponse, StreamSink,
};

use crate::config::{ConfigError, ProviderConfig};
use crate::endpoint::Endpoint;
use crate::http;

/// A Chat Completions endpoint: `POST {base_url}/chat/completions`.
#[derive(Debug, Clone)]
pub struct OpenAiChat {
    endpoint: Endpoint,
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
        let endpoint = Endpoint::with_bearer(config, client, "/chat/completions")?;
        Ok(Self { endpoint })
    }

    /// The configuration this provider was built from.
    pub fn config(&self) -> &ProviderConfig {
        &self.endpoint.config
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
        let config = self.config();
        let body = request::render(
            &request,
            config.stream,
            config.default_max_tokens,
            config.cache_control,
        )?;
        let decoder = response::ChatDecoder::new(sink);
        self.endpoint
            .post(self.name(), &body, decoder, cancel)
            .await
    }
}
