//! Approvals asked in the chat and answered there.

use talaria_profile::GroupSessions;

use crate::ports::ChatKind;

use super::fakes::{dm, message};
use super::{Harness, allowing};

async fn ask_and_answer(answer: &str) -> String {
    let mut h = Harness::start(allowing(&["ann"]));
    h.platform.write(dm("ann", "dangerous"));
    let question = h.next_text().await;
    assert!(question.contains("rm -rf build"), "{question}");
    assert!(question.contains("/approve session"), "{question}");
    h.platform.write(dm("ann", answer));
    h.next_text().await
}

#[tokio::test(start_paused = true)]
async fn approve_and_its_scopes_and_deny_answer_the_question() {
    assert_eq!(ask_and_answer("/approve").await, "decision: Once");
    assert_eq!(
        ask_and_answer("/approve session").await,
        "decision: Session"
    );
    assert_eq!(ask_and_answer("/approve always").await, "decision: Always");
    assert_eq!(ask_and_answer("/deny").await, "decision: Deny");
}

#[tokio::test(start_paused = true)]
async fn no_answer_in_time_is_a_refusal_and_a_late_approve_finds_nothing() {
    let mut h = Harness::start(allowing(&["ann"]));
    h.platform.write(dm("ann", "dangerous"));
    h.next_text().await;
    assert_eq!(h.next_text().await, "No answer in time: refused.");
    assert_eq!(h.next_text().await, "decision: Deny");
    h.platform.write(dm("ann", "/approve"));
    assert_eq!(h.next_text().await, "Nothing is waiting for approval here.");
    h.platform.write(dm("ann", "/approve forever"));
    assert!(h.next_text().await.starts_with("Use /approve"));
}

#[tokio::test(start_paused = true)]
async fn only_authorized_users_of_the_chat_answer() {
    let mut config = allowing(&["ann"]);
    config.group_sessions = GroupSessions::Shared;
    let mut h = Harness::start(config);
    let in_group = |user: &str, text: &str| {
        let mut m = message("#team", ChatKind::Group, user, text);
        m.addressed = true;
        m
    };
    h.platform.write(in_group("ann", "dangerous"));
    h.next_text().await;
    h.platform.write(in_group("eve", "/approve always"));
    // Answering elsewhere does not count either.
    h.platform.write(dm("ann", "/approve"));
    assert_eq!(h.next_text().await, "Nothing is waiting for approval here.");
    h.platform.write(in_group("ann", "/deny"));
    assert_eq!(h.next_text().await, "decision: Deny");
}

/// In a group session two allowed users share, only the one whose message asked may
/// answer; an admin of the platform may answer anyone's.
#[tokio::test(start_paused = true)]
async fn only_the_asker_or_an_admin_answers() {
    let mut config = allowing(&["ann", "bob", "cat"]);
    config.group_sessions = GroupSessions::Shared;
    config.admins = vec!["cat".into()];
    let mut h = Harness::start(config);
    let in_group = |user: &str, text: &str| {
        let mut m = message("#team", ChatKind::Group, user, text);
        m.addressed = true;
        m
    };
    h.platform.write(in_group("ann", "dangerous"));
    h.next_text().await;
    h.platform.write(in_group("bob", "/approve always"));
    assert!(
        h.next_text()
            .await
            .starts_with("That approval is not yours"),
        "bob answered ann's question"
    );
    h.platform.write(in_group("ann", "/approve session"));
    assert_eq!(h.next_text().await, "decision: Session");

    h.platform.write(in_group("bob", "dangerous"));
    h.next_text().await;
    h.platform.write(in_group("cat", "/deny"));
    assert_eq!(h.next_text().await, "decision: Deny");
}
