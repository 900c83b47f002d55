//! The `auxiliary` import: one request to the session's auxiliary model,
//! behind a small trait so the plugin host does not depend on the model
//! clients.

use crate::bindings::HostError;
use crate::bindings::talaria::plugin::auxiliary;
use crate::state::HostCtx;

/// Most tokens a plugin may ask the auxiliary model for in one call.
pub const MAX_AUXILIARY_TOKENS: u32 = 4096;

/// The auxiliary model, for plugins granted `auxiliary-model`.
#[async_trait::async_trait]
pub trait AuxiliaryModel: Send + Sync + std::fmt::Debug {
    /// The answer to `prompt` (sent as a user message) under `instructions`;
    /// `Err` is shown to the plugin.
    async fn complete(
        &self,
        instructions: &str,
        prompt: &str,
        max_tokens: u32,
    ) -> Result<String, String>;
}

impl auxiliary::Host for HostCtx {
    async fn complete(
        &mut self,
        instructions: String,
        prompt: String,
        max_tokens: u32,
    ) -> Result<String, HostError> {
        if !self.plugin.caps.auxiliary_model {
            return Err(HostError::Denied(self.plugin.denied("auxiliary-model")));
        }
        let Some(model) = self.plugin.auxiliary.clone() else {
            return Err(HostError::Failed("no model in this host".into()));
        };
        let tokens = max_tokens.clamp(1, MAX_AUXILIARY_TOKENS);
        // The call's deadline bounds the model's answer too.
        let left = self
            .deadline
            .saturating_duration_since(std::time::Instant::now());
        match tokio::time::timeout(left, model.complete(&instructions, &prompt, tokens)).await {
            Ok(answer) => answer.map_err(HostError::Failed),
            Err(_) => Err(HostError::Failed(
                "the auxiliary model did not answer before the call's deadline".into(),
            )),
        }
    }
}
