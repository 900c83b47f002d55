//! Senders as their adapter identifies them: a direct conversation, its
//! approvals and `clarify` questions follow the identity, not the chat's
//! name (an IRC DM is named after a nick someone else can take), and a
//! name anyone may take is matched by no allowlist.

use crate::ports::{IdStrength, InboundMessage, SenderIdentity};

use super::fakes::dm;
use super::{Harness, allowing};

/// A direct message in chat `chat` from the sender identified as `id`.
fn from(chat: &str, id: &str, strength: IdStrength, text: &str) -> InboundMessage {
    let mut message = dm(chat, text);
    message.sender.id = id.into();
    message.sender.identity = SenderIdentity {
        kind: "mask".into(),
        strength,
        also_known_as: Vec::new(),
    };
    message
}

const ALICE: &str = "alice!alice@home.example";
/// Allowed under her own user name, writing under alice's nick.
const MALLORY: &str = "alice!mallory@elsewhere.example";

fn allowing_both() -> Harness {
    Harness::start(allowing(&["alice!alice@*", "*!mallory@*"]))
}

#[tokio::test(start_paused = true)]
async fn in_private_only_the_identity_that_asked_answers_an_approval() {
    let mut h = allowing_both();
    h.platform
        .write(from("alice", ALICE, IdStrength::Weak, "dangerous"));
    assert!(h.next_text().await.contains("rm -rf build"));
    h.platform
        .write(from("alice", MALLORY, IdStrength::Weak, "/approve always"));
    assert_eq!(h.next_text().await, "Nothing is waiting for approval here.");
    h.platform
        .write(from("alice", ALICE, IdStrength::Weak, "/deny"));
    assert_eq!(h.next_text().await, "decision: Deny");
}

#[tokio::test(start_paused = true)]
async fn the_same_nick_from_another_identity_is_another_conversation() {
    let mut h = allowing_both();
    h.platform
        .write(from("alice", ALICE, IdStrength::Weak, "my secret is 42"));
    assert_eq!(h.next_text().await, "re: my secret is 42");
    h.platform.write(from(
        "alice",
        MALLORY,
        IdStrength::Weak,
        "what is my secret?",
    ));
    assert_eq!(h.next_text().await, "re: what is my secret?");
    // Alice back under another nick, signed in to the same identity.
    h.platform
        .write(from("alice_", ALICE, IdStrength::Weak, "still me"));
    assert_eq!(h.next_text().await, "re: still me");
    let sessions = h.runner.sessions();
    let [alice, mallory, alice_again] = sessions.as_slice() else {
        panic!("{sessions:?}");
    };
    assert_ne!(alice, mallory, "mallory does not continue alice's session");
    assert_eq!(alice, alice_again, "alice keeps hers under another nick");
}

#[tokio::test(start_paused = true)]
async fn a_clarify_question_is_answered_by_the_identity_it_asked_only() {
    let mut h = allowing_both();
    h.platform
        .write(from("alice", ALICE, IdStrength::Weak, "question"));
    assert!(h.next_text().await.contains("Which target?"));
    h.platform
        .write(from("alice", MALLORY, IdStrength::Weak, "prod"));
    assert_eq!(
        h.next_text().await,
        "re: prod",
        "her own turn, not an answer"
    );
    h.platform
        .write(from("alice", ALICE, IdStrength::Weak, "staging"));
    assert_eq!(h.next_text().await, r#"answer: Ok(Answered("staging"))"#);
}

#[tokio::test(start_paused = true)]
async fn a_name_anyone_may_take_is_neither_allowed_nor_paired() {
    let mut h = Harness::start(allowing(&["ann"]));
    h.platform
        .write(from("ann", "ann", IdStrength::NameOnly, "hi"));
    let told = h.next_text().await;
    assert!(told.contains("cannot tell who you are"), "{told}");
    h.platform
        .write(from("ann", "ann", IdStrength::NameOnly, "hello?"));
    h.quiet_for(600).await;
    assert!(h.runner.log().is_empty(), "{:?}", h.runner.log());
    assert!(h.shared.pairing.pending(super::T0).unwrap().is_empty());
}
