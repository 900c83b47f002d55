//! `clarify` questions asked in the chat and answered by the next message of
//! the user whose turn asked.

use std::time::Duration;

use talaria_profile::{BusyMode, GroupSessions};

use crate::ports::{ChatKind, InboundMessage};

use super::fakes::{dm, message};
use super::{Harness, allowing, with_mode};

const QUESTION: &str = "Question: Which target?\n1. staging\n2. prod\n\
                        Reply with a number or your own answer — within 5 min.";

#[tokio::test(start_paused = true)]
async fn a_number_picks_a_choice_and_other_words_are_the_answer() {
    let mut h = Harness::start(allowing(&["ann"]));
    h.platform.write(dm("ann", "question"));
    assert_eq!(h.next_text().await, QUESTION);
    h.platform.write(dm("ann", "2"));
    assert_eq!(h.next_text().await, r#"answer: Ok(Answered("prod"))"#);

    h.platform.write(dm("ann", "question"));
    assert_eq!(h.next_text().await, QUESTION);
    h.platform.write(dm("ann", "dev, please"));
    assert_eq!(
        h.next_text().await,
        r#"answer: Ok(Answered("dev, please"))"#
    );
    // The answers started no turns of their own.
    let starts = h
        .runner
        .log()
        .iter()
        .filter(|l| l.starts_with("start"))
        .count();
    assert_eq!(starts, 2, "{:?}", h.runner.log());
}

#[tokio::test(start_paused = true)]
async fn no_answer_in_time_lets_the_turn_go_on_and_a_late_reply_is_a_new_message() {
    let mut h = Harness::start(allowing(&["ann"]));
    h.platform.write(dm("ann", "question"));
    assert_eq!(h.next_text().await, QUESTION);
    assert_eq!(
        h.next_text().await,
        "No answer in time: going on without it."
    );
    assert_eq!(h.next_text().await, "answer: Ok(TimedOut(300s))");
    h.platform.write(dm("ann", "2"));
    assert_eq!(h.next_text().await, "re: 2");
}

/// Ann and Bob share one session in #team, with `mode` for a busy turn.
fn shared_group(mode: BusyMode) -> Harness {
    let mut config = with_mode(&["ann", "bob"], mode);
    config.group_sessions = GroupSessions::Shared;
    Harness::start(config)
}

/// `user`'s `text` in #team, addressed to the bot.
fn in_group(user: &str, text: &str) -> InboundMessage {
    let mut m = message("#team", ChatKind::Group, user, text);
    m.addressed = true;
    m
}

#[tokio::test(start_paused = true)]
async fn only_the_user_asked_answers_and_commands_stay_commands() {
    let mut h = shared_group(BusyMode::Queue);
    h.platform.write(in_group("ann", "question"));
    assert_eq!(h.next_text().await, QUESTION);
    // Ann's words in another chat are not an answer either.
    h.platform.write(dm("ann", "1"));
    assert_eq!(h.next_text().await, "re: 1");
    h.platform.write(in_group("ann", "/approve"));
    assert_eq!(h.next_text().await, "Nothing is waiting for approval here.");
    // Bob's message waits for the turn (busy mode queue), it does not answer.
    h.platform.write(in_group("bob", "2"));
    tokio::time::sleep(Duration::from_secs(5)).await;
    h.platform.write(in_group("ann", "1"));
    assert_eq!(h.next_text().await, r#"answer: Ok(Answered("staging"))"#);
    assert_eq!(h.next_text().await, "re: 2");
}

#[tokio::test(start_paused = true)]
async fn an_interrupted_turn_withdraws_its_question() {
    let mut h = shared_group(BusyMode::Interrupt);
    h.platform.write(in_group("ann", "question"));
    assert_eq!(h.next_text().await, QUESTION);
    // Bob interrupts the turn: the question goes with it.
    h.platform.write(in_group("bob", "stop that"));
    assert_eq!(h.next_text().await, "re: stop that");
    h.platform.write(in_group("ann", "2"));
    assert_eq!(h.next_text().await, "re: 2");
    assert!(
        h.runner
            .log()
            .contains(&"cancelled question (Ok(Cancelled))".to_owned()),
        "{:?}",
        h.runner.log()
    );
}
