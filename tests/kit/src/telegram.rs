//! A fake Telegram Bot API server on loopback, written from the Bot API
//! documentation (<https://core.telegram.org/bots/api>), for testing chat
//! adapters without Telegram.
//!
//! The Bot API facts it relies on:
//! - methods are `GET` or `POST` to `/bot<token>/<method>` (method names are
//!   case-insensitive); parameters come in the query string, as
//!   `application/x-www-form-urlencoded`, or as a JSON body;
//! - every answer is JSON `{"ok": true, "result": …}` or `{"ok": false,
//!   "error_code": N, "description": "…", "parameters": {…}}` with HTTP
//!   status N; a wrong token is 401 `Unauthorized`, an unknown method 404
//!   `Not Found`;
//! - `getUpdates` returns the unconfirmed updates in `update_id` order (at
//!   most `limit`, 1 to 100, default 100); an `offset` confirms every update
//!   below it, which is then never returned again (a negative offset keeps
//!   only the last `-offset`); with `timeout` seconds and nothing to return
//!   it holds the request until an update arrives or the time is up, then
//!   answers an empty list (`allowed_updates` is accepted and ignored here);
//! - `sendMessage` (`chat_id`, `text`, `message_thread_id`,
//!   `reply_parameters.message_id` or the older `reply_to_message_id`)
//!   answers the sent Message; an empty text is 400 `Bad Request: message
//!   text is empty`, one over 4096 UTF-16 code units 400 `Bad Request:
//!   message is too long`, an unknown chat 400 `Bad Request: chat not found`,
//!   a user who blocked the bot 403 `Forbidden: bot was blocked by the user`;
//!   flood control is 429 `Too Many Requests: retry after N` with
//!   `parameters.retry_after` N;
//! - `editMessageText` (`chat_id`, `message_id`, `text`) answers the edited
//!   Message; the same text again is 400 `Bad Request: message is not
//!   modified: …`; `sendChatAction` (`chat_id`, `action`) answers `true`;
//!   `getChat` answers a ChatFullInfo, `getChatMemberCount` an integer;
//! - `getFile` (`file_id`) answers a File (`file_id`, `file_unique_id`,
//!   `file_size`, `file_path`), whose bytes are at
//!   `/file/bot<token>/<file_path>`;
//! - chat ids: a user's private chat has the user's id, groups are negative,
//!   supergroups and channels `-100…`; forum topics are `message_thread_id`
//!   with `is_topic_message: true`.

use std::collections::{HashMap, HashSet};
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use tokio::sync::{Notify, watch};

use crate::http::{Ending, Request, Response, Running};

/// Longest long-poll the fake holds, as Telegram caps `timeout` at 50 s.
const MAX_POLL_SECS: u64 = 50;
/// Where `getFile` says files are (`file_path` is this and the file id).
const FILE_DIR: &str = "documents/";

/// A Telegram user (or bot).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FakeUser {
    pub id: i64,
    pub first_name: String,
    pub username: Option<String>,
    pub is_bot: bool,
}

impl FakeUser {
    /// A human user.
    pub fn new(id: i64, first_name: &str) -> Self {
        Self {
            id,
            first_name: first_name.into(),
            username: None,
            is_bot: false,
        }
    }

    /// With a `@username` (given without the `@`).
    pub fn with_username(mut self, username: &str) -> Self {
        self.username = Some(username.into());
        self
    }

    fn to_json(&self) -> Value {
        let mut user = json!({"id": self.id, "is_bot": self.is_bot, "first_name": self.first_name});
        if let Some(username) = &self.username {
            user["username"] = json!(username);
        }
        user
    }
}

/// The type of a chat.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChatType {
    Private,
    Group,
    Supergroup,
    Channel,
}

/// A chat the bot is in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FakeChat {
    pub id: i64,
    pub kind: ChatType,
    /// Title of a group or channel; a private chat shows the user's name.
    pub title: String,
    /// A supergroup with topics.
    pub is_forum: bool,
}

impl FakeChat {
    /// The private chat with `user` (its id is the user's).
    pub fn private(user: &FakeUser) -> Self {
        Self {
            id: user.id,
            kind: ChatType::Private,
            title: user.first_name.clone(),
            is_forum: false,
        }
    }

    /// A basic group (`id` negative).
    pub fn group(id: i64, title: &str) -> Self {
        Self {
            id,
            kind: ChatType::Group,
            title: title.into(),
            is_forum: false,
        }
    }

    /// A supergroup (`id` like `-100…`).
    pub fn supergroup(id: i64, title: &str) -> Self {
        Self {
            kind: ChatType::Supergroup,
            ..Self::group(id, title)
        }
    }

    /// A supergroup with forum topics.
    pub fn forum(id: i64, title: &str) -> Self {
        Self {
            is_forum: true,
            ..Self::supergroup(id, title)
        }
    }

    /// A channel.
    pub fn channel(id: i64, title: &str) -> Self {
        Self {
            kind: ChatType::Channel,
            ..Self::group(id, title)
        }
    }

    fn to_json(&self) -> Value {
        match self.kind {
            ChatType::Private => {
                json!({"id": self.id, "type": "private", "first_name": self.title})
            }
            kind => {
                let kind = match kind {
                    ChatType::Group => "group",
                    ChatType::Supergroup => "supergroup",
                    _ => "channel",
                };
                let mut chat = json!({"id": self.id, "type": kind, "title": self.title});
                if self.is_forum {
                    chat["is_forum"] = json!(true);
                }
                chat
            }
        }
    }
}

/// A message a user sends to the bot's chats.
#[derive(Clone, Debug)]
pub struct UserMessage {
    chat: FakeChat,
    from: FakeUser,
    text: String,
    reply_to: Option<i64>,
    topic: Option<i64>,
    document: Option<String>,
}

impl UserMessage {
    /// `text` from `from` in `chat`.
    pub fn new(chat: &FakeChat, from: &FakeUser, text: &str) -> Self {
        Self {
            chat: chat.clone(),
            from: from.clone(),
            text: text.into(),
            reply_to: None,
            topic: None,
            document: None,
        }
    }

    /// Replying to the message `message_id` of the chat.
    pub fn reply_to(mut self, message_id: i64) -> Self {
        self.reply_to = Some(message_id);
        self
    }

    /// In the forum topic `thread` (`message_thread_id`).
    pub fn in_topic(mut self, thread: i64) -> Self {
        self.topic = Some(thread);
        self
    }

    /// With the file `file_id` (from [`TelegramFake::add_file`]) as a
    /// document; the text becomes its caption.
    pub fn with_document(mut self, file_id: &str) -> Self {
        self.document = Some(file_id.into());
        self
    }
}

/// Something the bot did, in the order it did it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BotAction {
    /// `sendMessage`.
    Message {
        chat_id: i64,
        message_id: i64,
        text: String,
        thread: Option<i64>,
        reply_to: Option<i64>,
    },
    /// `editMessageText`.
    Edit {
        chat_id: i64,
        message_id: i64,
        text: String,
    },
    /// `sendChatAction`.
    ChatAction {
        chat_id: i64,
        action: String,
        thread: Option<i64>,
    },
}

#[derive(Clone, Debug)]
struct StoredFile {
    name: String,
    mime: String,
    bytes: Vec<u8>,
}

struct State {
    /// Unconfirmed updates, in `update_id` order.
    updates: Vec<Value>,
    next_update_id: i64,
    next_message_id: i64,
    chats: HashMap<i64, FakeChat>,
    /// Who wrote in each chat (for `getChatMemberCount`).
    members: HashMap<i64, HashSet<i64>>,
    /// Every message by chat and id, the bot's too (for replies and edits).
    messages: HashMap<(i64, i64), Value>,
    files: HashMap<String, StoredFile>,
    sent: Vec<BotAction>,
    blocked: HashSet<i64>,
    /// `retry_after` seconds of the next `sendMessage`, answered 429.
    next_send_throttled: Option<u64>,
    /// Method names called with the right token, in order.
    calls: Vec<String>,
}

struct Shared {
    token: String,
    bot: FakeUser,
    state: Mutex<State>,
    /// Woken when an update is queued.
    arrived: Notify,
    /// `getUpdates` requests being held.
    holding: AtomicUsize,
    stop: watch::Receiver<bool>,
}

/// A running fake Bot API server on 127.0.0.1 for one bot. Dropping it
/// shuts it down.
pub struct TelegramFake {
    addr: SocketAddr,
    shared: Arc<Shared>,
    _running: Running,
}

impl std::fmt::Debug for TelegramFake {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TelegramFake")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl TelegramFake {
    /// Starts the server for the bot with `token` (`@talaria_test_bot`, id
    /// 7000001) on a background thread with its own runtime.
    pub fn spawn(token: &str) -> io::Result<Self> {
        let (shutdown, stop) = watch::channel(false);
        let shared = Arc::new(Shared {
            token: token.into(),
            bot: FakeUser {
                is_bot: true,
                ..FakeUser::new(7_000_001, "Talaria Test").with_username("talaria_test_bot")
            },
            state: Mutex::new(State {
                updates: Vec::new(),
                next_update_id: 100_000,
                next_message_id: 1,
                chats: HashMap::new(),
                members: HashMap::new(),
                messages: HashMap::new(),
                files: HashMap::new(),
                sent: Vec::new(),
                blocked: HashSet::new(),
                next_send_throttled: None,
                calls: Vec::new(),
            }),
            arrived: Notify::new(),
            holding: AtomicUsize::new(0),
            stop,
        });
        let (addr, running) =
            crate::http::spawn_api("telegram-fake", Arc::clone(&shared), shutdown)?;
        Ok(Self {
            addr,
            shared,
            _running: running,
        })
    }

    /// `http://127.0.0.1:PORT`: the adapter's `api_base`.
    pub fn api_base(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The bot `getMe` describes.
    pub fn bot(&self) -> &FakeUser {
        &self.shared.bot
    }

    /// Makes the chat known (sending to an unknown chat is 400 `chat not
    /// found`); pushing a message into it does this too.
    pub fn add_chat(&self, chat: &FakeChat) {
        self.shared.lock().chats.insert(chat.id, chat.clone());
    }

    /// Queues an update with `text` from `user` in `chat`; returns the
    /// message's id.
    pub fn push_user_message(&self, chat: &FakeChat, user: &FakeUser, text: &str) -> i64 {
        self.push(UserMessage::new(chat, user, text))
    }

    /// Queues an update with `message`; returns the message's id.
    pub fn push(&self, message: UserMessage) -> i64 {
        let mut state = self.shared.lock();
        let message_id = state.next_message_id;
        state.next_message_id += 1;
        let mut body = json!({
            "message_id": message_id,
            "from": message.from.to_json(),
            "chat": message.chat.to_json(),
            "date": unix_now(),
        });
        match message
            .document
            .as_ref()
            .and_then(|id| state.files.get(id).map(|f| (id, f)))
        {
            Some((id, file)) => {
                body["document"] = json!({"file_id": id, "file_unique_id": format!("u{id}"),
                    "file_name": file.name, "mime_type": file.mime, "file_size": file.bytes.len()});
                if !message.text.is_empty() {
                    body["caption"] = json!(message.text);
                }
            }
            None => body["text"] = json!(message.text),
        }
        if let Some(topic) = message.topic {
            body["message_thread_id"] = json!(topic);
            body["is_topic_message"] = json!(message.chat.is_forum);
        }
        if let Some(original) = message
            .reply_to
            .and_then(|id| state.messages.get(&(message.chat.id, id)))
        {
            body["reply_to_message"] = original.clone();
        }
        state.chats.insert(message.chat.id, message.chat.clone());
        state
            .members
            .entry(message.chat.id)
            .or_default()
            .insert(message.from.id);
        state
            .messages
            .insert((message.chat.id, message_id), body.clone());
        let kind = if message.chat.kind == ChatType::Channel {
            "channel_post"
        } else {
            "message"
        };
        state.queue(json!({ kind: body }));
        drop(state);
        self.shared.arrived.notify_waiters();
        message_id
    }

    /// Queues any update (e.g. `{"edited_message": {…}}`); the fake adds its
    /// `update_id`, which it returns.
    pub fn push_update(&self, update: Value) -> i64 {
        let id = self.shared.lock().queue(update);
        self.shared.arrived.notify_waiters();
        id
    }

    /// Stores a file for [`UserMessage::with_document`] and `getFile`;
    /// returns its `file_id`.
    pub fn add_file(&self, name: &str, mime: &str, bytes: &[u8]) -> String {
        let mut state = self.shared.lock();
        let id = format!("file-{}", state.files.len() + 1);
        let file = StoredFile {
            name: name.into(),
            mime: mime.into(),
            bytes: bytes.to_vec(),
        };
        state.files.insert(id.clone(), file);
        id
    }

    /// What the bot sent, edited and showed, in order.
    pub fn sent(&self) -> Vec<BotAction> {
        self.shared.lock().sent.clone()
    }

    /// The methods called with the right token, in order (`getUpdates`
    /// included).
    pub fn calls(&self) -> Vec<String> {
        self.shared.lock().calls.clone()
    }

    /// The ids of the updates not confirmed yet.
    pub fn pending_updates(&self) -> Vec<i64> {
        let state = self.shared.lock();
        state
            .updates
            .iter()
            .filter_map(|u| u["update_id"].as_i64())
            .collect()
    }

    /// How many `getUpdates` requests are being held right now.
    pub fn holding_polls(&self) -> usize {
        self.shared.holding.load(Ordering::SeqCst)
    }

    /// Answers the next `sendMessage` with 429 and `retry_after` seconds.
    pub fn throttle_next_send(&self, retry_after_secs: u64) {
        self.shared.lock().next_send_throttled = Some(retry_after_secs);
    }

    /// The user of this private chat (or the chat) blocked the bot: sends
    /// there are 403.
    pub fn block(&self, chat_id: i64) {
        self.shared.lock().blocked.insert(chat_id);
    }
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl State {
    fn queue(&mut self, mut update: Value) -> i64 {
        let id = self.next_update_id;
        self.next_update_id += 1;
        update["update_id"] = json!(id);
        self.updates.push(update);
        id
    }
}

fn reply(status: u16, body: &Value, content_type: &str) -> Response {
    Response {
        status,
        headers: vec![("Content-Type".into(), content_type.into())],
        body: body.to_string().into_bytes(),
        chunked: false,
        ending: Ending::Complete,
    }
}

fn ok(result: Value) -> Response {
    reply(
        200,
        &json!({"ok": true, "result": result}),
        "application/json",
    )
}

fn error(code: u16, description: &str) -> Response {
    let body = json!({"ok": false, "error_code": code, "description": description});
    reply(code, &body, "application/json")
}

/// Counts a held `getUpdates` for as long as it lives (also when the
/// client hangs up and the request's future is dropped).
struct Holding<'a>(&'a AtomicUsize);

impl<'a> Holding<'a> {
    fn new(count: &'a AtomicUsize) -> Self {
        count.fetch_add(1, Ordering::SeqCst);
        Self(count)
    }
}

impl Drop for Holding<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

#[path = "telegram_methods.rs"]
mod methods;
use methods::Params;

impl crate::http::FakeApi for Shared {
    fn stopped(&self) -> impl std::future::Future<Output = ()> + Send {
        Shared::stopped(self)
    }

    fn respond(&self, request: Request) -> impl std::future::Future<Output = Response> + Send {
        Shared::respond(self, request)
    }

    fn bad_request(&self, problem: &str) -> Response {
        error(400, &format!("Bad Request: {problem}"))
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    async fn stopped(&self) {
        let mut stop = self.stop.clone();
        let _ = stop.wait_for(|stopped| *stopped).await;
    }

    async fn respond(&self, request: Request) -> Response {
        if !matches!(request.method.as_str(), "GET" | "POST") {
            return error(405, "Method Not Allowed");
        }
        let path = request.path().to_owned();
        if let Some(rest) = path.strip_prefix("/file/bot") {
            return self.download(rest);
        }
        let Some((token, method)) = path
            .strip_prefix("/bot")
            .and_then(|rest| rest.split_once('/'))
        else {
            return error(404, "Not Found");
        };
        if token != self.token {
            return error(401, "Unauthorized");
        }
        let params = match Params::of(&request) {
            Ok(params) => params,
            Err(why) => return error(400, &format!("Bad Request: {why}")),
        };
        let method = method.to_ascii_lowercase();
        self.lock().calls.push(method.clone());
        match method.as_str() {
            "getme" => ok(self.bot.to_json()),
            "getupdates" => self.get_updates(&params).await,
            "sendmessage" => self.send_message(&params),
            "editmessagetext" => self.edit_message_text(&params),
            "sendchataction" => self.send_chat_action(&params),
            "getchat" => self.get_chat(&params),
            "getchatmembercount" => self.get_chat_member_count(&params),
            "getfile" => self.get_file(&params),
            _ => error(404, "Not Found"),
        }
    }

    /// `/file/bot<token>/<file_path>`: the bytes, or 404.
    fn download(&self, rest: &str) -> Response {
        let found = rest.split_once('/').and_then(|(token, file_path)| {
            let id = file_path.strip_prefix(FILE_DIR)?;
            (token == self.token)
                .then(|| self.lock().files.get(id).cloned())
                .flatten()
        });
        match found {
            Some(file) => Response {
                status: 200,
                headers: vec![("Content-Type".into(), file.mime)],
                body: file.bytes,
                chunked: false,
                ending: Ending::Complete,
            },
            None => error(404, "Not Found"),
        }
    }

    async fn get_updates(&self, params: &Params) -> Response {
        let limit = params.int("limit").unwrap_or(100).clamp(1, 100) as usize;
        let timeout = params
            .int("timeout")
            .unwrap_or(0)
            .clamp(0, MAX_POLL_SECS as i64) as u64;
        if let Some(offset) = params.int("offset") {
            let mut state = self.lock();
            if offset >= 0 {
                state
                    .updates
                    .retain(|u| u["update_id"].as_i64().is_some_and(|id| id >= offset));
            } else {
                let keep = offset.unsigned_abs() as usize;
                let drop_count = state.updates.len().saturating_sub(keep);
                state.updates.drain(..drop_count);
            }
        }
        let deadline = tokio::time::Instant::now() + Duration::from_secs(timeout);
        loop {
            let arrived = self.arrived.notified();
            tokio::pin!(arrived);
            // Registered before looking, so a push in between is not missed.
            arrived.as_mut().enable();
            let batch: Vec<Value> = self.lock().updates.iter().take(limit).cloned().collect();
            if !batch.is_empty() || tokio::time::Instant::now() >= deadline {
                return ok(Value::Array(batch));
            }
            let held = Holding::new(&self.holding);
            let woken = tokio::select! {
                () = &mut arrived => true,
                () = tokio::time::sleep_until(deadline) => false,
            };
            drop(held);
            if !woken {
                return ok(json!([]));
            }
        }
    }
}

#[cfg(test)]
#[path = "telegram_tests.rs"]
mod tests;
