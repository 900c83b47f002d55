//! What the gateway needs from the outside, as traits: a platform connection
//! (the chat adapter plugin's `connection` resource in `wit/plugin/chat.wit`,
//! whose records are the plugin host's types) and a runner of agent turns. The core
//! is generic over them, so it is tested with fakes.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use talaria_approval::Approver;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

// The chat types are the plugin host's: the records of `chat.wit` as plain
// Rust, shared by the real connection and the fakes of the tests.
pub use talaria_plugin_host::{
    Attachment, Chat, ChatCapabilities, ChatKind, HostWork, IdStrength, InboundMessage, LengthUnit,
    Outbound, SendOutcome, Sender, SenderIdentity, WebhookRequest, WebhookResponse,
};
pub use talaria_profile::ChatAddress;

/// What to assume of a platform whose adapter has not said (not connected
/// yet, or its `capabilities` failed): plain text in messages small enough
/// for any platform.
pub fn fallback_capabilities(platform: &str) -> ChatCapabilities {
    ChatCapabilities {
        platform: platform.to_owned(),
        max_message_length: 400,
        length_unit: LengthUnit::Bytes,
        markdown: false,
        edit: false,
        typing: false,
        prompt_hint: String::new(),
    }
}

/// An open platform account. Called from one task only, one call at a time.
#[async_trait]
pub trait Connection: Send {
    /// What the platform can do.
    async fn capabilities(&mut self) -> ChatCapabilities;
    /// The messages that arrived, waiting at most `timeout_ms` for the first
    /// and returning early (maybe with none) when the [`HostWork`] handed to
    /// [`Connector::open`] is signalled. An error means the connection is lost.
    async fn next_events(&mut self, timeout_ms: u32) -> Result<Vec<InboundMessage>, String>;
    /// Sends one message (already under the length limit).
    async fn send(&mut self, message: Outbound) -> SendOutcome;
    /// Shows that the bot is writing.
    async fn typing(&mut self, chat_id: &str, thread: Option<&str>);
    /// The bytes of an inbound attachment, at most `max_bytes`.
    async fn fetch_attachment(&mut self, id: &str, max_bytes: u64) -> Result<Vec<u8>, String>;
    /// A request the platform's server pushed: the answer for it, and the
    /// messages it carried.
    async fn webhook(
        &mut self,
        request: WebhookRequest,
    ) -> Result<(WebhookResponse, Vec<InboundMessage>), String>;
    /// Signs off.
    async fn close(&mut self);
}

/// Opens connections to one account.
#[async_trait]
pub trait Connector: Send + Sync + 'static {
    /// The connection type.
    type Connection: Connection + 'static;
    /// Connects; `attempt` counts the failures since the last success (0 first).
    async fn open(&self, attempt: u32, work: HostWork) -> Result<Self::Connection, String>;
}

/// User notes for a running turn (busy mode `steer`): the runner takes them
/// before its next model call; what it leaves is answered after the turn.
#[derive(Debug, Clone, Default)]
pub struct SteerNotes {
    notes: Arc<Mutex<VecDeque<String>>>,
    notify: Arc<Notify>,
}

impl SteerNotes {
    /// Adds a note.
    pub fn push(&self, text: String) {
        if let Ok(mut notes) = self.notes.lock() {
            notes.push_back(text);
        }
        self.notify.notify_waiters();
    }

    /// Takes every note waiting.
    pub fn take(&self) -> Vec<String> {
        self.notes
            .lock()
            .map(|mut notes| notes.drain(..).collect())
            .unwrap_or_default()
    }

    /// Resolves once a note is waiting.
    pub async fn arrived(&self) {
        loop {
            let notified = self.notify.notified();
            if self.notes.lock().is_ok_and(|notes| !notes.is_empty()) {
                return;
            }
            notified.await;
        }
    }
}

/// One turn for the runner.
pub struct Turn {
    /// The stored session it continues (created if it does not exist yet).
    pub session_id: String,
    /// The user's message.
    pub text: String,
    /// Files saved from the message whose bytes are images: the runner attaches them to it
    /// (they are also named in `text`, by path).
    pub images: Vec<std::path::PathBuf>,
    /// Cancelled when the user interrupts (busy mode `interrupt`).
    pub cancel: CancellationToken,
    /// Messages that arrive while it runs (busy mode `steer`).
    pub steer: SteerNotes,
    /// Asks the chat when a command needs approval.
    pub approver: Arc<dyn Approver>,
    /// Asks the user who started the turn `clarify` questions, in the chat
    /// (`None`: nobody to ask, and the tool is not offered).
    pub clarifier: Option<Arc<crate::clarify::ChatClarifier>>,
    /// The platform the turn comes from, for the prompt's platform hints.
    pub platform: ChatCapabilities,
    /// The account's platform (`gateway.platforms.<name>`) and the chat the
    /// message came from: `send_message`'s current chat.
    pub chat: ChatAddress,
    /// The platform's id of the person whose message started the turn.
    pub user_id: Option<String>,
    /// Whom the session belongs to (the sender, or the group).
    pub principal: talaria_kernel::Principal,
}

impl std::fmt::Debug for Turn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Turn")
            .field("session_id", &self.session_id)
            .field("text", &self.text)
            .finish_non_exhaustive()
    }
}

/// How a turn ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnOutcome {
    /// The answer to send.
    Answer(String),
    /// Stopped by the cancel token; nothing to send.
    Interrupted,
    /// It failed; this is what the user is told.
    Failed(String),
}

/// A finished turn: its outcome and the session that holds the conversation
/// now (compression may have continued it in a new one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnResult {
    pub outcome: TurnOutcome,
    pub session_id: String,
}

/// What a slash command asks the gateway to do after its reply.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum CommandEffect {
    #[default]
    None,
    /// Start a fresh session for the chat.
    NewSession,
    /// Continue this stored session in the chat.
    Resume(String),
    /// Send this text as the user's message.
    Send(String),
}

/// A slash command's answer.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CommandReply {
    pub text: String,
    pub effect: CommandEffect,
}

/// Runs agent turns and registry commands against stored sessions. Nothing is
/// kept between calls: each builds what it needs from the profile.
#[async_trait]
pub trait TurnRunner: Send + Sync + 'static {
    /// Runs one user turn.
    async fn run_turn(&self, turn: Turn) -> TurnResult;
    /// Runs a slash command from the command registry in `session_id`, for `principal`
    /// (what it may list or resume).
    async fn run_command(
        &self,
        session_id: &str,
        principal: &talaria_kernel::Principal,
        line: &str,
    ) -> CommandReply;
}
