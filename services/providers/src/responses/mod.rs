//! The OpenAI Responses provider, for models served only through `POST /responses`.
//!
//! Nothing is stored on the provider's side (`store: false`): the reasoning items a model
//! returns come back with their encrypted content and travel on the assistant message
//! ([`ProviderState`](talaria_kernel::ProviderState) tagged [`WIRE`]) to be sent back verbatim
//! on the next request.

mod request;
mod response;

use async_trait::async_trait;
use talaria_kernel::{
    CancellationToken, ModelError, ModelProvider, ModelRequest, ModelResponse, StreamSink,
};

use crate::config::{ConfigError, ProviderConfig};
use crate::endpoint::Endpoint;
use crate::http;

/// The tag of the provider state this wire format keeps on assistant messages.
pub(crate) const WIRE: &str = "openai-responses";

/// The provider state's one key: the response's `output` items in their order, reasoning items
/// verbatim and the others as placeholders (`{"type": "message"}`, `{"type": "function_call",
/// "call_id": ..}`) saying where the message's text and each call stood, since every reasoning
/// item must be sent back just before the item that followed it.
pub(crate) const OUTPUT: &str = "output";

/// A Responses endpoint: `POST {base_url}/responses`.
#[derive(Debug, Clone)]
pub struct OpenAiResponses {
    endpoint: Endpoint,
}

impl OpenAiResponses {
    /// A provider using the process-wide HTTP client.
    pub fn new(config: ProviderConfig) -> Result<Self, ConfigError> {
        Self::with_client(config, http::shared_client()?)
    }

    /// A provider using the given HTTP client.
    pub fn with_client(
        config: ProviderConfig,
        client: reqwest::Client,
    ) -> Result<Self, ConfigError> {
        let endpoint = Endpoint::with_bearer(config, client, "/responses")?;
        Ok(Self { endpoint })
    }

    /// The configuration this provider was built from.
    pub fn config(&self) -> &ProviderConfig {
        &self.endpoint.config
    }
}

#[async_trait]
impl ModelProvider for OpenAiResponses {
    fn name(&self) -> &str {
        WIRE
    }

    async fn complete(
        &self,
        request: ModelRequest<'_>,
        sink: &dyn StreamSink,
        cancel: &CancellationToken,
    ) -> Result<ModelResponse, ModelError> {
        let config = self.config();
        let body = request::render(&request, config.stream, config.default_max_tokens)?;
        let decoder = response::ResponsesDecoder::new(sink);
        self.endpoint
            .post(self.name(), &body, decoder, cancel)
            .await
    }
}
