//! The fake's Bot API methods other than `getMe` and `getUpdates`, and the
//! parameters of a request.

use serde_json::{Map, Value, json};

use super::{BotAction, ChatType, FILE_DIR, Shared, State, error, ok, unix_now};
use crate::http::{Request, Response};

/// Telegram's limit on a message's text, in UTF-16 code units.
const MAX_TEXT_UTF16: usize = 4096;

/// A request's parameters: the query string, then a form or JSON body.
pub(super) struct Params(Map<String, Value>);

impl Params {
    pub(super) fn of(request: &Request) -> Result<Self, String> {
        let mut params = Map::new();
        if let Some((_, query)) = request.target.split_once('?') {
            form_pairs(query, &mut params);
        }
        let content_type = request
            .header("content-type")
            .unwrap_or_default()
            .to_ascii_lowercase();
        if content_type.starts_with("application/json") && !request.body.is_empty() {
            match serde_json::from_slice::<Value>(&request.body) {
                Ok(Value::Object(body)) => params.extend(body),
                _ => return Err("the JSON body is not an object".into()),
            }
        } else if content_type.starts_with("application/x-www-form-urlencoded") {
            form_pairs(&String::from_utf8_lossy(&request.body), &mut params);
        }
        Ok(Self(params))
    }

    /// An integer given as a number or as text.
    pub(super) fn int(&self, name: &str) -> Option<i64> {
        match self.0.get(name)? {
            Value::Number(n) => n.as_i64(),
            Value::String(s) => s.trim().parse().ok(),
            _ => None,
        }
    }

    fn text(&self, name: &str) -> Option<String> {
        match self.0.get(name)? {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        }
    }

    /// `reply_parameters.message_id`, else `reply_to_message_id`.
    fn reply_to(&self) -> Option<i64> {
        let nested = match self.0.get("reply_parameters") {
            Some(Value::Object(p)) => p.get("message_id").and_then(Value::as_i64),
            Some(Value::String(s)) => serde_json::from_str::<Value>(s)
                .ok()
                .and_then(|p| p["message_id"].as_i64()),
            _ => None,
        };
        nested.or_else(|| self.int("reply_to_message_id"))
    }
}

/// Adds `a=1&b=x%20y` to `params`; a value that parses as JSON (numbers,
/// `reply_parameters` objects, `allowed_updates` lists) is kept as JSON.
fn form_pairs(encoded: &str, params: &mut Map<String, Value>) {
    for pair in encoded.split('&').filter(|p| !p.is_empty()) {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        let value = percent_decode(value);
        let parsed = match serde_json::from_str::<Value>(&value) {
            Ok(v @ (Value::Number(_) | Value::Object(_) | Value::Array(_))) => v,
            _ => Value::String(value),
        };
        params.insert(percent_decode(name), parsed);
    }
}

fn percent_decode(text: &str) -> String {
    let hex = |byte: u8| char::from(byte).to_digit(16);
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = match bytes.get(i..i + 3) {
            Some([b'%', high, low]) => hex(*high).zip(hex(*low)),
            _ => None,
        };
        match (escaped, bytes[i]) {
            (Some((high, low)), _) => {
                // Two hex digits make one byte.
                out.push((high * 16 + low) as u8);
                i += 3;
            }
            (None, b'+') => {
                out.push(b' ');
                i += 1;
            }
            (None, other) => {
                out.push(other);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl State {
    /// The chat `chat_id` names, or the Bot API's error for it.
    fn chat_for(&self, params: &Params) -> Result<super::FakeChat, Response> {
        let Some(id) = params.int("chat_id") else {
            return Err(match params.text("chat_id") {
                Some(_) => error(400, "Bad Request: chat not found"),
                None => error(400, "Bad Request: chat_id is empty"),
            });
        };
        self.chats
            .get(&id)
            .cloned()
            .ok_or_else(|| error(400, "Bad Request: chat not found"))
    }
}

impl Shared {
    pub(super) fn send_message(&self, params: &Params) -> Response {
        let mut state = self.lock();
        let chat = match state.chat_for(params) {
            Ok(chat) => chat,
            Err(response) => return response,
        };
        if let Some(retry_after) = state.next_send_throttled.take() {
            let body = json!({
                "ok": false,
                "error_code": 429,
                "description": format!("Too Many Requests: retry after {retry_after}"),
                "parameters": {"retry_after": retry_after},
            });
            return super::reply(429, &body, "application/json");
        }
        if state.blocked.contains(&chat.id) {
            let description = match chat.kind {
                ChatType::Private => "Forbidden: bot was blocked by the user",
                _ => "Forbidden: bot was kicked from the group chat",
            };
            return error(403, description);
        }
        let text = params.text("text").unwrap_or_default();
        if text.trim().is_empty() {
            return error(400, "Bad Request: message text is empty");
        }
        if text.encode_utf16().count() > MAX_TEXT_UTF16 {
            return error(400, "Bad Request: message is too long");
        }
        let thread = params.int("message_thread_id");
        let reply_to = params.reply_to();
        let message_id = state.next_message_id;
        state.next_message_id += 1;
        let mut message = json!({
            "message_id": message_id,
            "from": self.bot.to_json(),
            "chat": chat.to_json(),
            "date": unix_now(),
            "text": text,
        });
        if let Some(thread) = thread {
            message["message_thread_id"] = json!(thread);
            message["is_topic_message"] = json!(chat.is_forum);
        }
        if let Some(original) = reply_to.and_then(|id| state.messages.get(&(chat.id, id))) {
            message["reply_to_message"] = original.clone();
        }
        state
            .messages
            .insert((chat.id, message_id), message.clone());
        state.sent.push(BotAction::Message {
            chat_id: chat.id,
            message_id,
            text,
            thread,
            reply_to,
        });
        ok(message)
    }

    pub(super) fn edit_message_text(&self, params: &Params) -> Response {
        let mut state = self.lock();
        let chat = match state.chat_for(params) {
            Ok(chat) => chat,
            Err(response) => return response,
        };
        let Some(message_id) = params.int("message_id") else {
            return error(400, "Bad Request: message identifier is not specified");
        };
        let text = params.text("text").unwrap_or_default();
        if text.trim().is_empty() {
            return error(400, "Bad Request: message text is empty");
        }
        let bot_id = self.bot.id;
        let Some(message) = state.messages.get_mut(&(chat.id, message_id)) else {
            return error(400, "Bad Request: message to edit not found");
        };
        if message["from"]["id"].as_i64() != Some(bot_id) {
            return error(400, "Bad Request: message can't be edited");
        }
        if message["text"].as_str() == Some(text.as_str()) {
            return error(
                400,
                "Bad Request: message is not modified: specified new message content and reply \
                 markup are exactly the same as a current content and reply markup of the message",
            );
        }
        message["text"] = json!(text);
        message["edit_date"] = json!(unix_now());
        let edited = message.clone();
        state.sent.push(BotAction::Edit {
            chat_id: chat.id,
            message_id,
            text,
        });
        ok(edited)
    }

    pub(super) fn send_chat_action(&self, params: &Params) -> Response {
        let mut state = self.lock();
        let chat = match state.chat_for(params) {
            Ok(chat) => chat,
            Err(response) => return response,
        };
        let Some(action) = params.text("action").filter(|a| !a.is_empty()) else {
            return error(400, "Bad Request: action is empty");
        };
        state.sent.push(BotAction::ChatAction {
            chat_id: chat.id,
            action,
            thread: params.int("message_thread_id"),
        });
        ok(json!(true))
    }

    pub(super) fn get_chat(&self, params: &Params) -> Response {
        match self.lock().chat_for(params) {
            Ok(chat) => {
                let mut info = chat.to_json();
                info["accent_color_id"] = json!(0);
                info["max_reaction_count"] = json!(11);
                ok(info)
            }
            Err(response) => response,
        }
    }

    pub(super) fn get_chat_member_count(&self, params: &Params) -> Response {
        let state = self.lock();
        match state.chat_for(params) {
            // The bot and everyone who wrote there.
            Ok(chat) => ok(json!(
                state
                    .members
                    .get(&chat.id)
                    .map_or(0, std::collections::HashSet::len)
                    + 1
            )),
            Err(response) => response,
        }
    }

    pub(super) fn get_file(&self, params: &Params) -> Response {
        let Some(id) = params.text("file_id").filter(|id| !id.is_empty()) else {
            return error(400, "Bad Request: file_id is empty");
        };
        match self.lock().files.get(&id) {
            Some(file) => ok(json!({
                "file_id": id,
                "file_unique_id": format!("u{id}"),
                "file_size": file.bytes.len(),
                "file_path": format!("{FILE_DIR}{id}"),
            })),
            None => error(400, "Bad Request: invalid file_id"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn form_values_are_decoded_and_json_kept() {
        let mut params = Map::new();
        form_pairs(
            "chat_id=-100&text=a%20b+c%2&allowed_updates=%5B%22message%22%5D",
            &mut params,
        );
        assert_eq!(params["chat_id"], json!(-100));
        assert_eq!(params["text"], json!("a b c%2"));
        assert_eq!(params["allowed_updates"], json!(["message"]));
    }
}
