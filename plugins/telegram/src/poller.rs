//! The `getUpdates` side: which offset to send, and the inbound messages in
//! an answer.
//!
//! Telegram keeps an update until a `getUpdates` is sent with an `offset`
//! above its `update_id`, which confirms it and every earlier one. The offset
//! is raised only when an answer is taken, and the next request (the next
//! `next-events` call, after the messages were returned to the host) carries
//! it; `close` sends it once more so a restart does not see them again.

use serde_json::{Value, json};
use talaria_plugin_sdk::chat_types::InboundMessage;

use crate::inbound::{ALLOWED_UPDATES, BotIdentity, map_update};

/// The offset state of one connection.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Poller {
    /// `last update_id + 1` once an answer had updates.
    offset: Option<i64>,
    /// The offset Telegram was last sent (what it has confirmed).
    sent_offset: Option<i64>,
}

impl Poller {
    /// The parameters of the next `getUpdates`, waiting up to `timeout_secs`.
    pub fn request(&mut self, timeout_secs: u32) -> Value {
        self.sent_offset = self.offset;
        let mut body = json!({
            "timeout": timeout_secs,
            "allowed_updates": ALLOWED_UPDATES,
        });
        if let Some(offset) = self.offset {
            body["offset"] = json!(offset);
        }
        body
    }

    /// A request that only confirms what was taken, when something was taken
    /// since the last request: `close` sends it.
    pub fn acknowledgement(&mut self) -> Option<Value> {
        if self.offset == self.sent_offset {
            return None;
        }
        let mut body = self.request(0);
        // Nothing is wanted back: the answer's updates stay unconfirmed.
        body["limit"] = json!(1);
        Some(body)
    }

    /// Takes a `getUpdates` result (an array of updates): raises the offset
    /// past them and returns the messages the host wants. Updates below the
    /// offset (answered twice by a server that ignores `offset`) are dropped.
    pub fn take(
        &mut self,
        result: &Value,
        bot: &BotIdentity,
    ) -> Result<Vec<InboundMessage>, String> {
        let updates = result
            .as_array()
            .ok_or("getUpdates answered something other than a list of updates")?;
        let mut messages = Vec::new();
        for update in updates {
            let Some(id) = update["update_id"].as_i64() else {
                continue;
            };
            if self.offset.is_some_and(|offset| id < offset) {
                continue;
            }
            self.offset = Some(self.offset.map_or(id + 1, |offset| offset.max(id + 1)));
            messages.extend(map_update(update, bot));
        }
        Ok(messages)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn bot() -> BotIdentity {
        BotIdentity {
            id: 1,
            username: "bot".into(),
        }
    }

    fn text_update(id: i64, text: &str) -> Value {
        json!({"update_id": id, "message": {
            "message_id": id, "chat": {"id": 7, "type": "private"},
            "from": {"id": 7, "is_bot": false, "first_name": "U"}, "text": text,
        }})
    }

    #[test]
    fn the_first_request_has_no_offset_and_asks_for_messages_and_their_edits_only() {
        let body = Poller::default().request(25);
        assert_eq!(body["timeout"], 25);
        assert_eq!(
            body["allowed_updates"],
            json!([
                "message",
                "channel_post",
                "edited_message",
                "edited_channel_post"
            ])
        );
        assert!(body.get("offset").is_none());
    }

    #[test]
    fn taken_updates_are_confirmed_by_the_next_request() {
        let mut poller = Poller::default();
        let answer = json!([text_update(10, "a"), text_update(11, "b")]);
        let texts: Vec<_> = poller
            .take(&answer, &bot())
            .unwrap()
            .into_iter()
            .map(|m| m.text)
            .collect();
        assert_eq!(texts, ["a", "b"]);
        assert_eq!(poller.request(25)["offset"], 12);
    }

    #[test]
    fn skipped_updates_still_move_the_offset() {
        let mut poller = Poller::default();
        let edit = json!({"update_id": 20, "edited_message": {}});
        assert!(poller.take(&json!([edit]), &bot()).unwrap().is_empty());
        assert_eq!(poller.request(0)["offset"], 21);
    }

    #[test]
    fn updates_below_the_offset_are_not_delivered_twice() {
        let mut poller = Poller::default();
        poller
            .take(&json!([text_update(5, "once")]), &bot())
            .unwrap();
        let again = poller
            .take(
                &json!([text_update(5, "once"), text_update(6, "new")]),
                &bot(),
            )
            .unwrap();
        assert_eq!(again.len(), 1);
        assert_eq!(again[0].text, "new");
        assert_eq!(poller.request(0)["offset"], 7);
    }

    #[test]
    fn an_acknowledgement_is_sent_only_for_unconfirmed_updates() {
        let mut poller = Poller::default();
        assert_eq!(poller.acknowledgement(), None);
        poller.take(&json!([text_update(3, "x")]), &bot()).unwrap();
        let ack = poller.acknowledgement().unwrap();
        assert_eq!(
            (ack["offset"].clone(), ack["timeout"].clone()),
            (json!(4), json!(0))
        );
        assert_eq!(poller.acknowledgement(), None);
        poller.take(&json!([text_update(4, "y")]), &bot()).unwrap();
        poller.request(25);
        assert_eq!(poller.acknowledgement(), None);
    }

    #[test]
    fn an_answer_that_is_not_a_list_is_an_error() {
        assert!(Poller::default().take(&json!({"x": 1}), &bot()).is_err());
    }
}
