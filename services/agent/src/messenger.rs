//! The port `send_message` delivers through: the gateway's chat connections.
//! A surface that has one (the gateway, later cron) hands it to the agent;
//! without one the tool is not offered. The messenger decides the targets:
//! the home channels the user configured and the chat the session runs in,
//! never one the model names.

use std::fmt;

use async_trait::async_trait;

/// A chat a message can go to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageTarget {
    /// The platform, as in `gateway.platforms.<name>`.
    pub platform: String,
    /// The platform's id of the chat.
    pub chat_id: String,
    /// A thread or topic in it.
    pub thread: Option<String>,
    /// A name to show, when known (a channel's title).
    pub label: Option<String>,
    /// Whether this is the chat the session runs in.
    pub current: bool,
}

impl MessageTarget {
    /// The target as the model writes it: `platform:chat_id[:thread_id]`.
    pub fn address(&self) -> String {
        self.to_string()
    }
}

impl fmt::Display for MessageTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.platform, self.chat_id)?;
        if let Some(thread) = &self.thread {
            write!(f, ":{thread}")?;
        }
        Ok(())
    }
}

/// Delivers messages for `send_message`.
#[async_trait]
pub trait Messenger: Send + Sync {
    /// Every chat the agent may write to.
    fn targets(&self) -> Vec<MessageTarget>;

    /// Sends `text` to `target` (one of [`targets`](Self::targets)), split
    /// as the platform needs. `Ok` carries the platform's message id when it
    /// has one; `Err` is a message for the model.
    async fn send(&self, target: &MessageTarget, text: &str) -> Result<Option<String>, String>;
}
