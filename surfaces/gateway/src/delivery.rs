//! Sending an answer: cut under the platform's limit in its unit, each part
//! sent in order; "try again in N ms" is honoured, other failures are retried
//! with backoff, a dead chat is given up on at once.

use std::time::Duration;

use crate::driver::Outbox;
use crate::ports::ChatAddress;
use crate::ports::{ChatCapabilities, Outbound, SendOutcome};
use crate::split::split_message;

/// Sends per part when the platform keeps saying "try again later".
pub const RETRYABLE_TRIES: u32 = 5;
/// The longest "try again later" wait honoured for one try.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(300);
/// Sends per part when the platform fails otherwise.
pub const FAILED_TRIES: u32 = 3;
/// The wait after the first failure (doubling).
pub const FAILED_BACKOFF: Duration = Duration::from_secs(2);

/// Where an answer goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Destination {
    pub chat_id: String,
    pub thread: Option<String>,
    /// The message being answered, where the platform threads replies.
    pub reply_to: Option<String>,
}

/// An answer that did not (fully) arrive.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeliveryError {
    /// The chat is gone or closed to the bot.
    #[error("the chat cannot be written to: {0}")]
    DeadTarget(String),
    /// Still failing after the retries.
    #[error("not delivered after {tries} tries: {last}")]
    GaveUp {
        /// Sends tried for the part that failed.
        tries: u32,
        /// The last failure.
        last: String,
    },
}

/// Sends `text` to `to`, split for `capabilities`; returns the platform's ids
/// of the parts sent.
pub async fn deliver(
    outbox: &Outbox,
    capabilities: &ChatCapabilities,
    to: &Destination,
    text: &str,
) -> Result<Vec<Option<String>>, DeliveryError> {
    let limit = usize::try_from(capabilities.max_message_length).unwrap_or(usize::MAX);
    let mut sent = Vec::new();
    for (index, part) in split_message(text, limit, capabilities.length_unit)
        .into_iter()
        .enumerate()
    {
        let message = Outbound {
            chat_id: to.chat_id.clone(),
            thread: to.thread.clone(),
            text: part,
            // Only the first part answers the message; the rest follow it.
            reply_to: if index == 0 {
                to.reply_to.clone()
            } else {
                None
            },
            edit: None,
        };
        sent.push(send_one(outbox, message).await?);
    }
    Ok(sent)
}

/// Sends `text` to `to` through `outbox` once its account is connected
/// (waiting at most `wait`).
pub async fn post(
    outbox: &Outbox,
    to: &ChatAddress,
    text: &str,
    wait: Duration,
) -> Result<(), String> {
    let capabilities = tokio::time::timeout(wait, outbox.connected())
        .await
        .map_err(|_| {
            format!(
                "{} did not connect within {} s",
                to.platform,
                wait.as_secs()
            )
        })?
        .ok_or_else(|| format!("{} is shut down", to.platform))?;
    let destination = Destination {
        chat_id: to.chat_id.clone(),
        thread: to.thread.clone(),
        reply_to: None,
    };
    deliver(outbox, &capabilities, &destination, text)
        .await
        .map(drop)
        .map_err(|e| e.to_string())
}

/// Sends one part with the retry rules.
pub async fn send_one(outbox: &Outbox, message: Outbound) -> Result<Option<String>, DeliveryError> {
    let mut busy_tries = 0;
    let mut failed_tries = 0;
    let mut backoff = FAILED_BACKOFF;
    loop {
        match outbox.send(message.clone()).await {
            SendOutcome::Sent(id) => return Ok(id),
            SendOutcome::DeadTarget(reason) => return Err(DeliveryError::DeadTarget(reason)),
            SendOutcome::Retryable(after) => {
                busy_tries += 1;
                if busy_tries >= RETRYABLE_TRIES {
                    return Err(DeliveryError::GaveUp {
                        tries: busy_tries + failed_tries,
                        last: format!("still rate limited (retry after {} ms)", after.as_millis()),
                    });
                }
                tokio::time::sleep(after.min(MAX_RETRY_AFTER)).await;
            }
            SendOutcome::Failed(reason) => {
                failed_tries += 1;
                if failed_tries >= FAILED_TRIES {
                    return Err(DeliveryError::GaveUp {
                        tries: busy_tries + failed_tries,
                        last: reason,
                    });
                }
                tokio::time::sleep(backoff).await;
                backoff *= 2;
            }
        }
    }
}
