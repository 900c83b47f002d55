//! Recovering from "the prompt is too long": the next request is always smaller, or the call
//! stops with an error that names the sizes.

use super::*;

/// The smallest output budget asked for; below it the prompt is shrunk instead.
const MIN_OUTPUT_BUDGET: u32 = 1_024;

/// The output cap of a request: the configured one, lowered by what the provider said fits.
pub(super) fn output_budget(configured: Option<u32>, cap: Option<u32>) -> Option<u32> {
    match (configured, cap) {
        (Some(configured), Some(cap)) => Some(configured.min(cap)),
        (configured, cap) => configured.or(cap),
    }
}

impl AgentLoop {
    /// After a context-overflow error: compresses so the next request is strictly smaller, or
    /// says why it cannot be (nothing left to cut, or the provider kept refusing).
    pub(super) async fn shrink_after_overflow(
        &mut self,
        conversation: &mut Conversation,
        provider_message: &str,
        events: &dyn EventSink,
    ) -> Result<(), LoopError> {
        let attempts = match self.config.max_overflow_compressions {
            0 => 3,
            n => n,
        };
        let prefix = conversation.prompt.prefix_tokens();
        let sizes = |conversation: &Conversation| {
            format!(
                "about {prefix} tokens of system prompt and tool schemas and {} tokens in {} \
                 messages",
                compress::messages_tokens(&conversation.messages),
                conversation.messages.len()
            )
        };
        if self.state.overflow_compressions >= attempts {
            return Err(LoopError::ContextTooLarge(format!(
                "the model still says the prompt is too long after {attempts} compressions \
                 (compression.max_attempts); it is now {}. The provider said: {provider_message}",
                sizes(conversation)
            )));
        }
        self.state.overflow_compressions += 1;
        let outcome = self.compact(conversation, None, true, events).await;
        if outcome.tokens_after >= outcome.tokens_before {
            return Err(LoopError::ContextTooLarge(format!(
                "the prompt cannot be made smaller: {}, with no tool output, tool arguments or \
                 earlier turn left to cut. The provider said: {provider_message}",
                sizes(conversation)
            )));
        }
        Ok(())
    }

    /// After "input + max_tokens exceed the context window": the retry asks for the output
    /// that still fits; when that is too little, the prompt is shrunk instead.
    pub(super) async fn lower_output_budget(
        &mut self,
        conversation: &mut Conversation,
        available: u32,
        provider_message: &str,
        events: &dyn EventSink,
    ) -> Result<(), LoopError> {
        let current = output_budget(self.config.max_tokens, self.state.max_tokens_cap);
        if available >= MIN_OUTPUT_BUDGET && current.is_none_or(|current| available < current) {
            self.state.max_tokens_cap = Some(available);
            events.emit(AgentEvent::Warning {
                message: format!(
                    "the prompt leaves room for {available} output tokens; asking for that many"
                ),
            });
            return Ok(());
        }
        self.shrink_after_overflow(conversation, provider_message, events)
            .await
    }
}
