#![allow(clippy::unwrap_used)]
use std::collections::VecDeque;

use serde_json::{Value, json};

use super::*;

/// A scripted port: each wait on a request gives the next scripted wake;
/// the clock moves only when a wait runs out its time.
#[derive(Default)]
struct ScriptedIo {
    clock: u64,
    host_work: bool,
    wakes: VecDeque<Wake>,
    answers: VecDeque<Result<Value, String>>,
    /// The bodies of the requests started, with the time they started.
    started: Vec<(u64, Value)>,
    pauses: usize,
}

impl PollIo for ScriptedIo {
    type Pending = usize;

    fn now(&mut self) -> u64 {
        self.clock
    }

    fn host_work_ready(&mut self) -> bool {
        self.host_work
    }

    fn start(&mut self, body: &Value) -> Result<usize, String> {
        self.started.push((self.clock, body.clone()));
        Ok(self.started.len() - 1)
    }

    fn wait(&mut self, pending: Option<&usize>, until: u64) -> Wake {
        let wake = match pending {
            Some(_) => self.wakes.pop_front().unwrap_or(Wake::Deadline),
            None => {
                self.pauses += 1;
                Wake::Deadline
            }
        };
        if wake == Wake::Deadline {
            self.clock = self.clock.max(until);
        }
        wake
    }

    fn finish(&mut self, _pending: usize) -> Result<Value, String> {
        self.answers.pop_front().unwrap()
    }
}

fn bot() -> BotIdentity {
    BotIdentity {
        id: 1,
        username: "bot".into(),
    }
}

fn updates(first_id: i64, texts: &[&str]) -> Value {
    Value::Array(
        texts
            .iter()
            .zip(first_id..)
            .map(|(text, id)| {
                json!({"update_id": id, "message": {
                    "message_id": id, "chat": {"id": 7, "type": "private"},
                    "from": {"id": 7, "is_bot": false, "first_name": "U"}, "text": text,
                }})
            })
            .collect(),
    )
}

fn texts(messages: &[InboundMessage]) -> Vec<&str> {
    messages.iter().map(|m| m.text.as_str()).collect()
}

#[test]
fn an_answer_with_messages_is_returned_at_once() {
    let mut io = ScriptedIo {
        wakes: [Wake::Answered].into(),
        answers: [Ok(updates(10, &["a", "b"]))].into(),
        ..ScriptedIo::default()
    };
    let mut events = EventLoop::new(25);
    let messages = events.next_events(&mut io, &bot(), 60_000).unwrap();
    assert_eq!(texts(&messages), ["a", "b"]);
    assert_eq!(io.started.len(), 1);
    assert_eq!(io.started[0].1["timeout"], 25);
    assert!(io.started[0].1.get("offset").is_none());
}

#[test]
fn host_work_first_keeps_the_request_for_the_next_call() {
    let mut io = ScriptedIo {
        wakes: [Wake::HostWork, Wake::Answered].into(),
        answers: [Ok(updates(10, &["late"]))].into(),
        ..ScriptedIo::default()
    };
    let mut events = EventLoop::new(25);
    assert!(
        events
            .next_events(&mut io, &bot(), 60_000)
            .unwrap()
            .is_empty()
    );
    assert_eq!(io.started.len(), 1);
    // The next call waits on the same request and gets its answer.
    let messages = events.next_events(&mut io, &bot(), 60_000).unwrap();
    assert_eq!(texts(&messages), ["late"]);
    assert_eq!(io.started.len(), 1, "no second request was sent");
    // The call after that confirms them with its new request.
    assert!(
        events
            .next_events(&mut io, &bot(), 1_000)
            .unwrap()
            .is_empty()
    );
    assert_eq!(io.started.len(), 2);
    assert_eq!(io.started[1].1["offset"], 11);
}

#[test]
fn running_out_of_time_returns_nothing_and_keeps_the_request() {
    let mut io = ScriptedIo {
        wakes: [Wake::Deadline, Wake::Answered].into(),
        answers: [Ok(updates(3, &["x"]))].into(),
        ..ScriptedIo::default()
    };
    let mut events = EventLoop::new(25);
    assert!(
        events
            .next_events(&mut io, &bot(), 1_000)
            .unwrap()
            .is_empty()
    );
    assert_eq!(io.clock, 1_000_000_000);
    assert_eq!(
        texts(&events.next_events(&mut io, &bot(), 1_000).unwrap()),
        ["x"]
    );
    assert_eq!(io.started.len(), 1);
}

#[test]
fn an_empty_answer_pauses_before_the_next_poll() {
    let mut io = ScriptedIo {
        wakes: [Wake::Answered, Wake::Answered].into(),
        answers: [Ok(json!([])), Ok(updates(1, &["now"]))].into(),
        ..ScriptedIo::default()
    };
    let mut events = EventLoop::new(25);
    let messages = events.next_events(&mut io, &bot(), 60_000).unwrap();
    assert_eq!(texts(&messages), ["now"]);
    assert_eq!(io.pauses, 1);
    let (first, second) = (io.started[0].0, io.started[1].0);
    assert_eq!(second - first, MIN_POLL_INTERVAL_NS);
}

#[test]
fn the_next_poll_after_messages_or_a_held_poll_starts_at_once() {
    let mut io = ScriptedIo {
        wakes: [
            Wake::Answered,
            Wake::Deadline,
            Wake::Answered,
            Wake::Answered,
        ]
        .into(),
        answers: [
            Ok(updates(1, &["a"])),
            Ok(json!([])),
            Ok(updates(2, &["b"])),
        ]
        .into(),
        ..ScriptedIo::default()
    };
    let mut events = EventLoop::new(25);
    assert_eq!(
        texts(&events.next_events(&mut io, &bot(), 60_000).unwrap()),
        ["a"]
    );
    // The next poll is held by the server until the call's time is up, then answers empty.
    assert!(
        events
            .next_events(&mut io, &bot(), 30_000)
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        texts(&events.next_events(&mut io, &bot(), 60_000).unwrap()),
        ["b"]
    );
    assert_eq!(io.pauses, 0, "a poll waited for a pause");
    let starts: Vec<u64> = io.started.iter().map(|(at, _)| *at).collect();
    assert_eq!(starts, [0, 0, 30_000_000_000]);
}

#[test]
fn host_work_during_the_pause_returns_at_once() {
    let mut io = ScriptedIo {
        wakes: [Wake::Answered].into(),
        answers: [Ok(json!([]))].into(),
        ..ScriptedIo::default()
    };
    let mut events = EventLoop::new(25);
    // The empty answer takes the whole call; the pause comes next time.
    assert!(events.next_events(&mut io, &bot(), 0).unwrap().is_empty());
    io.host_work = true;
    assert!(
        events
            .next_events(&mut io, &bot(), 60_000)
            .unwrap()
            .is_empty()
    );
    assert_eq!((io.started.len(), io.pauses), (1, 0));
}

#[test]
fn a_failed_poll_loses_the_connection() {
    let mut io = ScriptedIo {
        wakes: [Wake::Answered].into(),
        answers: [Err("getUpdates: Telegram answered 409: Conflict".into())].into(),
        ..ScriptedIo::default()
    };
    let error = EventLoop::new(25)
        .next_events(&mut io, &bot(), 60_000)
        .unwrap_err();
    assert!(error.contains("409"), "{error}");
}

#[test]
fn close_drops_the_request_and_confirms_what_was_returned() {
    let mut io = ScriptedIo {
        wakes: [Wake::Answered].into(),
        answers: [Ok(updates(40, &["m"]))].into(),
        ..ScriptedIo::default()
    };
    let mut events = EventLoop::new(25);
    events.next_events(&mut io, &bot(), 60_000).unwrap();
    let acknowledgement = events.close().unwrap();
    assert_eq!(acknowledgement["offset"], 41);
    assert_eq!(events.close(), None);

    // A request in flight with nothing taken: nothing to confirm.
    let mut idle = EventLoop::new(25);
    let mut io = ScriptedIo {
        wakes: [Wake::HostWork].into(),
        ..ScriptedIo::default()
    };
    idle.next_events(&mut io, &bot(), 60_000).unwrap();
    assert_eq!(idle.close(), None);
}
