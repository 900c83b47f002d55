//! A message for a session that is busy: interrupt, queue, steer; and one
//! session reached from two chats.

use std::time::Duration;

use talaria_profile::{BusyMode, GroupSessions};

use crate::ports::{ChatKind, CommandEffect, CommandReply};

use super::fakes::{dm, message};
use super::{Harness, with_mode};

async fn pause(secs: u64) {
    tokio::time::sleep(Duration::from_secs(secs)).await;
}

#[tokio::test(start_paused = true)]
async fn interrupt_stops_the_running_turn_and_answers_the_new_message() {
    let mut h = Harness::start(with_mode(&["ann"], BusyMode::Interrupt));
    h.platform.write(dm("ann", "slow task"));
    pause(15).await;
    h.platform.write(dm("ann", "never mind"));
    assert_eq!(h.next_text().await, "re: never mind");
    h.quiet_for(300).await;
    let log = h.runner.log();
    let session = &h.runner.sessions()[0];
    assert_eq!(
        log,
        [
            format!("start {session} slow task"),
            "cancelled slow task".to_owned(),
            format!("start {session} never mind"),
            format!("end {session} never mind"),
        ]
    );
    assert_eq!(
        h.shared.turns.active_sessions(),
        0,
        "nothing kept after the turns"
    );
}

#[tokio::test(start_paused = true)]
async fn queue_answers_after_the_running_turn_in_order() {
    let mut h = Harness::start(with_mode(&["ann"], BusyMode::Queue));
    h.platform.write(dm("ann", "slow task"));
    pause(15).await;
    h.platform.write(dm("ann", "second"));
    pause(1).await;
    h.platform.write(dm("ann", "third"));
    assert_eq!(h.next_text().await, "re: slow task");
    assert_eq!(h.next_text().await, "re: second");
    assert_eq!(h.next_text().await, "re: third");
    let starts: Vec<String> = h
        .runner
        .log()
        .into_iter()
        .filter(|l| l.starts_with("start") || l.starts_with("end"))
        .map(|l| l.split(' ').next().unwrap().to_owned())
        .collect();
    assert_eq!(starts, ["start", "end", "start", "end", "start", "end"]);
    assert_eq!(h.shared.turns.active_sessions(), 0);
}

#[tokio::test(start_paused = true)]
async fn steer_hands_the_message_to_the_running_turn_and_answers_late_notes_after() {
    let mut h = Harness::start(with_mode(&["ann"], BusyMode::Steer));
    h.platform.write(dm("ann", "slow task"));
    pause(15).await;
    h.platform.write(dm("ann", "use tabs"));
    // The last model call starts at 50 s; a note after it is not taken.
    pause(40).await;
    h.platform.write(dm("ann", "and commit"));
    assert_eq!(h.next_text().await, "re: slow task +use tabs");
    assert_eq!(h.next_text().await, "re: and commit");
    let log = h.runner.log();
    let session = &h.runner.sessions()[0];
    assert_eq!(
        log,
        [
            format!("start {session} slow task"),
            "note use tabs".to_owned(),
            format!("end {session} slow task"),
            format!("start {session} and commit"),
            format!("end {session} and commit"),
        ]
    );
    assert_eq!(h.shared.turns.active_sessions(), 0);
}

#[tokio::test(start_paused = true)]
async fn two_chats_on_one_session_never_run_turns_at_once() {
    let mut config = with_mode(&["ann"], BusyMode::Queue);
    config.group_sessions = GroupSessions::Shared;
    let mut h = Harness::start(config);
    h.platform.write(dm("ann", "hi"));
    assert_eq!(h.next_text().await, "re: hi");
    let session = h.runner.sessions()[0].clone();
    // The group continues ann's private session (an alias of it).
    h.runner.commands.lock().unwrap().push((
        format!("/resume {session}"),
        CommandReply {
            text: "resumed".into(),
            effect: CommandEffect::Resume(session.clone()),
        },
    ));
    let group = |text: &str| {
        let mut m = message("#team", ChatKind::Group, "ann", text);
        m.addressed = true;
        m
    };
    h.platform.write(group(&format!("/resume {session}")));
    assert_eq!(h.next_text().await, "resumed");

    h.platform.write(dm("ann", "slow private"));
    pause(5).await;
    h.platform.write(group("slow group"));
    let first = h.next_sent().await;
    let second = h.next_sent().await;
    assert_eq!(
        (first.chat_id.as_str(), first.text.as_str()),
        ("ann", "re: slow private")
    );
    assert_eq!(
        (second.chat_id.as_str(), second.text.as_str()),
        ("#team", "re: slow group")
    );
    let turns: Vec<String> = h
        .runner
        .log()
        .into_iter()
        .filter(|l| l.contains("slow"))
        .collect();
    assert_eq!(
        turns,
        [
            format!("start {session} slow private"),
            format!("end {session} slow private"),
            format!("start {session} slow group"),
            format!("end {session} slow group"),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn turns_beyond_the_concurrency_limit_wait_for_a_running_one_to_end() {
    // The harness allows two turns at once.
    let mut h = Harness::start(with_mode(&["ann", "bob", "cat"], BusyMode::Queue));
    for user in ["ann", "bob", "cat"] {
        h.platform.write(dm(user, &format!("slow from {user}")));
        pause(1).await;
    }
    pause(10).await;
    let started = |h: &Harness| {
        h.runner
            .log()
            .iter()
            .filter(|line| line.starts_with("start "))
            .count()
    };
    assert_eq!(started(&h), 2, "{:?}", h.runner.log());
    // A slow turn takes 60 s; then the third starts and all are answered.
    let mut answers = Vec::new();
    for _ in 0..3 {
        answers.push(h.next_text().await);
    }
    answers.sort();
    assert_eq!(
        answers,
        [
            "re: slow from ann",
            "re: slow from bob",
            "re: slow from cat"
        ]
    );
    assert_eq!(started(&h), 3);
    let log = h.runner.log();
    let first_end = log.iter().position(|l| l.starts_with("end ")).unwrap();
    let cat_start = log
        .iter()
        .position(|l| l.starts_with("start ") && l.ends_with("slow from cat"))
        .unwrap();
    assert!(cat_start > first_end, "{log:?}");
}

#[tokio::test(start_paused = true)]
async fn an_edit_corrects_the_running_turn_and_is_let_be_after_it() {
    let mut h = Harness::start(with_mode(&["ann"], BusyMode::Interrupt));
    let mut first = dm("ann", "slow task");
    first.message_id = Some("m1".into());
    h.platform.write(first);
    pause(15).await;
    let mut edit = dm("ann", "slow task, in French");
    edit.edit_of = Some("m1".into());
    h.platform.write(edit.clone());
    let answer = h.next_text().await;
    assert_eq!(
        answer,
        "re: slow task +(The user edited their message; it now reads:) slow task, in French"
    );
    // An edit after the answer starts nothing.
    h.platform.write(edit);
    h.quiet_for(600).await;
    assert_eq!(h.runner.sessions().len(), 1, "{:?}", h.runner.log());
}
