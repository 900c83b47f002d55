//! One provider endpoint: its URL, headers (auth included) and client, and the
//! POST that runs one exchange through a wire format's decoder.

use reqwest::Url;
use reqwest::header::{CONTENT_TYPE, HeaderMap};
use talaria_kernel::{CancellationToken, ModelError, ModelResponse};

use crate::config::{ConfigError, ProviderConfig, endpoint_url, header_map};
use crate::errors;
use crate::http::{Decoder, Exchange};

/// A validated endpoint, ready to send requests.
#[derive(Debug, Clone)]
pub(crate) struct Endpoint {
    client: reqwest::Client,
    url: Url,
    headers: HeaderMap,
    pub config: ProviderConfig,
}

impl Endpoint {
    /// `POST {base_url}{path}` authenticated with `Authorization: Bearer <api_key>` (both
    /// OpenAI wires), when a key is configured.
    pub fn with_bearer(
        config: ProviderConfig,
        client: reqwest::Client,
        path: &str,
    ) -> Result<Self, ConfigError> {
        let auth: Vec<_> = config
            .api_key
            .iter()
            .map(|key| ("authorization", format!("Bearer {key}"), true))
            .collect();
        Self::new(config, client, path, &auth)
    }

    /// `POST {base_url}{path}` with `fixed` headers (name, value, sensitive)
    /// followed by the configured extra headers.
    pub fn new(
        config: ProviderConfig,
        client: reqwest::Client,
        path: &str,
        fixed: &[(&str, String, bool)],
    ) -> Result<Self, ConfigError> {
        let url = endpoint_url(&config.base_url, path)?;
        let headers = header_map(
            fixed
                .iter()
                .map(|(name, value, sensitive)| (*name, value.as_str(), *sensitive))
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

    /// Sends `body` and decodes the response, streamed or whole.
    pub async fn post(
        &self,
        provider: &str,
        body: &(impl serde::Serialize + ?Sized),
        decoder: impl Decoder,
        cancel: &CancellationToken,
    ) -> Result<ModelResponse, ModelError> {
        let exchange = Exchange {
            provider,
            idle: self.config.idle_timeout,
            cancel,
            max_reply: self.config.max_reply_bytes,
        };
        let body = serde_json::to_vec(body)
            .map_err(|e| errors::malformed(format!("cannot encode the request: {e}")))?;
        let limit = self.config.max_prompt_bytes;
        if body.len() > limit {
            return Err(ModelError::TooLarge {
                message: format!(
                    "the request to {provider} is {} bytes, over model.max_prompt_bytes ({limit} \
                     bytes); not sent. Compress the conversation (/compress), start a new \
                     session, or raise model.max_prompt_bytes",
                    body.len()
                ),
            });
        }
        let request = self
            .client
            .post(self.url.clone())
            .headers(self.headers.clone())
            .header(CONTENT_TYPE, "application/json")
            .body(body);
        exchange.run(request, self.config.stream, decoder).await
    }
}
