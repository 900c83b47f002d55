//! Fakes for the ports: a scripted platform behind a connector, and a runner
//! whose turns are a few "model calls" of 10 s each (paused time).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use talaria_approval::{ApprovalRequest, Finding};
use tokio::sync::{Notify, mpsc};
use tokio::time::Instant;

use crate::ports::{
    Chat, ChatCapabilities, ChatKind, CommandEffect, CommandReply, Connection, Connector, HostWork,
    InboundMessage, Outbound, SendOutcome, Sender, SenderIdentity, Turn, TurnOutcome, TurnResult,
    TurnRunner, WebhookRequest, WebhookResponse,
};
use crate::split::LengthUnit;

/// The platform side: what users write, what the bot sent, how sends go.
pub struct FakePlatform {
    inbound: Mutex<VecDeque<Result<InboundMessage, String>>>,
    arrived: Notify,
    outcomes: Mutex<VecDeque<SendOutcome>>,
    opens: Mutex<VecDeque<Result<(), String>>>,
    pub open_log: Mutex<Vec<(u32, Instant)>>,
    pub send_log: Mutex<Vec<(Outbound, Instant)>>,
    pub typing_log: Mutex<Vec<String>>,
    sent: mpsc::UnboundedSender<Outbound>,
    pub capabilities: Mutex<ChatCapabilities>,
    /// Attachments' bytes by id.
    pub files: Mutex<std::collections::HashMap<String, Vec<u8>>>,
}

impl FakePlatform {
    pub fn new() -> (Arc<Self>, mpsc::UnboundedReceiver<Outbound>) {
        let (sent, seen) = mpsc::unbounded_channel();
        let platform = Self {
            inbound: Mutex::default(),
            arrived: Notify::new(),
            outcomes: Mutex::default(),
            opens: Mutex::default(),
            open_log: Mutex::default(),
            send_log: Mutex::default(),
            typing_log: Mutex::default(),
            sent,
            capabilities: Mutex::new(ChatCapabilities {
                platform: "irc".into(),
                max_message_length: 400,
                length_unit: LengthUnit::Bytes,
                markdown: false,
                edit: false,
                typing: true,
                prompt_hint: "Plain text only.".into(),
            }),
            files: Mutex::default(),
        };
        (Arc::new(platform), seen)
    }

    /// A user writes.
    pub fn write(&self, message: InboundMessage) {
        self.inbound.lock().unwrap().push_back(Ok(message));
        self.arrived.notify_one();
    }

    /// Messages written that no poll has taken yet.
    pub fn unread(&self) -> usize {
        self.inbound.lock().unwrap().len()
    }

    /// The connection drops at its next poll.
    pub fn drop_connection(&self) {
        self.inbound
            .lock()
            .unwrap()
            .push_back(Err("socket closed".into()));
        self.arrived.notify_one();
    }

    /// The next sends answer these, in order (then `Sent`).
    pub fn script_sends(&self, outcomes: impl IntoIterator<Item = SendOutcome>) {
        self.outcomes.lock().unwrap().extend(outcomes);
    }

    /// The next opens answer these, in order (then success).
    pub fn script_opens(&self, opens: impl IntoIterator<Item = Result<(), String>>) {
        self.opens.lock().unwrap().extend(opens);
    }
}

pub struct FakeConnector(pub Arc<FakePlatform>);

pub struct FakeConnection {
    platform: Arc<FakePlatform>,
    work: HostWork,
}

#[async_trait]
impl Connector for FakeConnector {
    type Connection = FakeConnection;

    async fn open(&self, attempt: u32, work: HostWork) -> Result<FakeConnection, String> {
        self.0
            .open_log
            .lock()
            .unwrap()
            .push((attempt, Instant::now()));
        let scripted = self.0.opens.lock().unwrap().pop_front();
        scripted.unwrap_or(Ok(()))?;
        Ok(FakeConnection {
            platform: self.0.clone(),
            work,
        })
    }
}

#[async_trait]
impl Connection for FakeConnection {
    async fn capabilities(&mut self) -> ChatCapabilities {
        self.platform.capabilities.lock().unwrap().clone()
    }

    async fn next_events(&mut self, timeout_ms: u32) -> Result<Vec<InboundMessage>, String> {
        let deadline = tokio::time::sleep(Duration::from_millis(u64::from(timeout_ms)));
        tokio::pin!(deadline);
        loop {
            let next = self.platform.inbound.lock().unwrap().pop_front();
            if let Some(next) = next {
                return next.map(|message| vec![message]);
            }
            if self.work.is_raised() {
                return Ok(Vec::new());
            }
            tokio::select! {
                () = self.platform.arrived.notified() => {}
                () = self.work.raised() => return Ok(Vec::new()),
                () = &mut deadline => return Ok(Vec::new()),
            }
        }
    }

    async fn send(&mut self, message: Outbound) -> SendOutcome {
        let outcome = self.platform.outcomes.lock().unwrap().pop_front();
        self.platform
            .send_log
            .lock()
            .unwrap()
            .push((message.clone(), Instant::now()));
        let outcome = outcome.unwrap_or(SendOutcome::Sent(None));
        if matches!(outcome, SendOutcome::Sent(_)) {
            let _ = self.platform.sent.send(message);
        }
        outcome
    }

    async fn typing(&mut self, chat_id: &str, _thread: Option<&str>) {
        self.platform
            .typing_log
            .lock()
            .unwrap()
            .push(chat_id.to_owned());
    }

    async fn fetch_attachment(&mut self, id: &str, max_bytes: u64) -> Result<Vec<u8>, String> {
        let files = self.platform.files.lock().unwrap();
        let bytes = files.get(id).ok_or_else(|| format!("no file {id}"))?;
        if bytes.len() as u64 > max_bytes {
            return Err("too large".into());
        }
        Ok(bytes.clone())
    }

    async fn webhook(
        &mut self,
        request: WebhookRequest,
    ) -> Result<(WebhookResponse, Vec<InboundMessage>), String> {
        // The body is a user's DM text.
        let text = String::from_utf8_lossy(&request.body).into_owned();
        let response = WebhookResponse {
            status: 200,
            headers: Vec::new(),
            body: format!("{} {}", request.method, request.path).into_bytes(),
        };
        Ok((response, vec![dm("ann", &text)]))
    }

    async fn close(&mut self) {}
}

/// Length of one fake model call.
pub const MODEL_CALL: Duration = Duration::from_secs(10);

/// A runner whose turn depends on the text:
/// - `slow …`: 6 model calls, taking steering notes before each;
/// - `long`: answers 1,000 characters at once;
/// - `dangerous`: asks for approval and answers with the decision;
/// - anything else: one model call, answers `re: <text>`.
#[derive(Default)]
pub struct FakeRunner {
    /// `start <session> <text>`, `images <paths>`, `end <session> <text>`, `note <notes>`,
    /// `cancelled <text>`, `command <session> <line>`.
    pub log: Mutex<Vec<String>>,
    /// Replies for registry commands by line.
    pub commands: Mutex<Vec<(String, CommandReply)>>,
}

impl FakeRunner {
    pub fn log(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    fn record(&self, line: String) {
        self.log.lock().unwrap().push(line);
    }

    /// The sessions turns ran in, in order.
    pub fn sessions(&self) -> Vec<String> {
        self.log()
            .iter()
            .filter_map(|line| line.strip_prefix("start "))
            .map(|rest| rest.split(' ').next().unwrap_or_default().to_owned())
            .collect()
    }
}

#[async_trait]
impl TurnRunner for FakeRunner {
    async fn run_turn(&self, turn: Turn) -> TurnResult {
        let session_id = turn.session_id.clone();
        self.record(format!("start {session_id} {}", turn.text));
        if !turn.images.is_empty() {
            let names: Vec<String> = turn
                .images
                .iter()
                .map(|p| p.display().to_string())
                .collect();
            self.record(format!("images {}", names.join(" ")));
        }
        let calls = if turn.text.starts_with("slow") { 6 } else { 1 };
        let mut answer = format!("re: {}", turn.text);
        for _ in 0..calls {
            let notes = turn.steer.take();
            if !notes.is_empty() {
                self.record(format!("note {}", notes.join("|")));
                answer.push_str(&format!(" +{}", notes.join("|")));
            }
            tokio::select! {
                () = tokio::time::sleep(MODEL_CALL) => {}
                () = turn.cancel.cancelled() => {
                    self.record(format!("cancelled {}", turn.text));
                    return TurnResult { outcome: TurnOutcome::Interrupted, session_id };
                }
            }
        }
        if turn.text == "long" {
            answer = "word ".repeat(200);
        }
        if turn.text == "dangerous" {
            let request = ApprovalRequest {
                command: "rm -rf build".into(),
                finding: Finding {
                    id: "recursive-delete".into(),
                    description: "recursive delete".into(),
                },
                tool: "terminal".into(),
                session_id: session_id.clone(),
                protected: false,
            };
            let decision = turn.approver.ask(&request).await;
            answer = format!("decision: {decision:?}");
        }
        if turn.text == "question" {
            let choices = ["staging".to_owned(), "prod".to_owned()];
            let asked = turn
                .clarifier
                .as_ref()
                .expect("chats can be asked")
                .ask("Which target?", &choices, &turn.cancel)
                .await;
            if turn.cancel.is_cancelled() {
                self.record(format!("cancelled {} ({asked:?})", turn.text));
                return TurnResult {
                    outcome: TurnOutcome::Interrupted,
                    session_id,
                };
            }
            answer = format!("answer: {asked:?}");
        }
        self.record(format!("end {session_id} {}", turn.text));
        TurnResult {
            outcome: TurnOutcome::Answer(answer),
            session_id,
        }
    }

    async fn run_command(
        &self,
        session_id: &str,
        _principal: &talaria_kernel::Principal,
        line: &str,
    ) -> CommandReply {
        self.record(format!("command {session_id} {line}"));
        let scripted = self
            .commands
            .lock()
            .unwrap()
            .iter()
            .find(|(l, _)| l == line)
            .cloned();
        scripted.map_or_else(
            || CommandReply {
                text: format!("ran {line}"),
                effect: CommandEffect::None,
            },
            |(_, reply)| reply,
        )
    }
}

/// A message from `user` in `chat`.
pub fn message(chat: &str, kind: ChatKind, user: &str, text: &str) -> InboundMessage {
    InboundMessage {
        chat: Chat {
            id: chat.into(),
            thread: None,
            kind,
            title: None,
        },
        sender: Sender {
            id: user.into(),
            name: user.into(),
            is_bot: false,
            identity: SenderIdentity::default(),
        },
        text: text.into(),
        message_id: None,
        reply_to: None,
        addressed: kind == ChatKind::Dm,
        attachments: Vec::new(),
        edit_of: None,
        raw: "null".into(),
    }
}

/// A direct message from `user`.
pub fn dm(user: &str, text: &str) -> InboundMessage {
    message(user, ChatKind::Dm, user, text)
}
