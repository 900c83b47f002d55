//! Identification through the session, as the server's lines drive it.

use talaria_plugin_sdk::chat_types::{Chat, ChatKind, Sender};

use super::*;
use crate::session::{Event, Session};
use crate::settings::Settings;

/// A session that has not registered yet.
fn fresh() -> Session {
    Session::new(Settings {
        server: "irc.test".into(),
        port: 6667,
        tls: false,
        nick: "bot".into(),
        channels: vec!["#a".into()],
        password: None,
        realname: "Talaria".into(),
    })
}

/// A session in #a on a server that acknowledged `caps`.
fn session_with(caps: &[&str]) -> Session {
    let mut session = fresh();
    if !caps.is_empty() {
        session.handle(&format!(":irc.test CAP * LS :{}", caps.join(" ")));
        session.handle(&format!(":irc.test CAP * ACK :{}", caps.join(" ")));
    }
    session.handle(":irc.test 001 bot :Welcome");
    session.handle(":bot!bot@h JOIN #a");
    session
}

fn messages(events: &[Event]) -> Vec<&InboundMessage> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Message(m) => Some(m.as_ref()),
            _ => None,
        })
        .collect()
}

fn sends(events: &[Event]) -> Vec<&str> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Send(line) => Some(line.as_str()),
            _ => None,
        })
        .collect()
}

/// The sender ids of the messages among `events`.
fn ids(events: &[Event]) -> Vec<String> {
    messages(events)
        .iter()
        .map(|m| m.sender.id.clone())
        .collect()
}

#[test]
fn cap_negotiation_asks_for_what_the_server_offers_and_ends() {
    let mut session = fresh();
    let ls = session.handle(":irc.test CAP * LS * :multi-prefix account-notify sasl=PLAIN");
    assert!(sends(&ls).is_empty(), "more LS lines follow");
    let last = session.handle(":irc.test CAP * LS :extended-join account-tag");
    assert_eq!(
        sends(&last),
        ["CAP REQ :account-tag extended-join account-notify"]
    );
    let ack = session.handle(":irc.test CAP * ACK :account-tag extended-join account-notify");
    assert_eq!(sends(&ack), ["CAP END"]);
    let caps = session.caps();
    assert!(caps.account_tag && caps.extended_join && caps.account_notify);

    let mut plain = fresh();
    assert_eq!(
        sends(&plain.handle(":irc.test CAP * LS :multi-prefix")),
        ["CAP END"],
        "nothing wanted: registration goes on at once"
    );
    let mut refused = fresh();
    refused.handle(":irc.test CAP * LS :account-tag");
    assert_eq!(
        sends(&refused.handle(":irc.test CAP * NAK :account-tag")),
        ["CAP END"]
    );
    assert!(!refused.caps().account_tag);
}

#[test]
fn the_account_tag_names_the_account_and_its_absence_leaves_the_mask() {
    let mut session = session_with(&["account-tag"]);
    let signed_in = session.handle("@account=Alice :alice!al@h.example PRIVMSG bot :hi");
    assert_eq!(ids(&signed_in), ["$a:alice"]);
    let raw: serde_json::Value = serde_json::from_str(&messages(&signed_in)[0].raw).unwrap();
    assert_eq!(raw["account"], "Alice");
    let anonymous = session.handle(":Alice!Mal@H.Example PRIVMSG bot :hi");
    assert_eq!(ids(&anonymous), ["alice!Mal@h.example"]);
    // A client-only tag (`+`) is not the server's word.
    let forged = session.handle("@+account=alice :alice!mal@h PRIVMSG bot :hi");
    assert_eq!(ids(&forged), ["alice!mal@h"]);
}

#[test]
fn without_account_capabilities_a_whois_of_the_same_connection_identifies() {
    let mut session = session_with(&[]);
    let asked = session.handle(":alice!al@h PRIVMSG bot :first");
    assert_eq!(sends(&asked), ["WHOIS alice"]);
    assert!(messages(&asked).is_empty(), "held for the WHOIS");
    let again = session.handle(":alice!al@h PRIVMSG bot :second");
    assert!(sends(&again).is_empty(), "one WHOIS at a time");
    // Someone else's message goes on meanwhile (unaddressed: no WHOIS).
    let chatter = session.handle(":bob!b@h PRIVMSG #a :lunch?");
    assert_eq!(ids(&chatter), ["bob!b@h"]);
    session.handle(":irc.test 311 bot alice al h * :Alice");
    session.handle(":irc.test 330 bot alice alice-acct :is logged in as");
    let released = session.handle(":irc.test 318 bot alice :End of /WHOIS list.");
    assert_eq!(ids(&released), ["$a:alice-acct", "$a:alice-acct"]);
    let texts: Vec<&str> = messages(&released)
        .iter()
        .map(|m| m.text.as_str())
        .collect();
    assert_eq!(texts, ["first", "second"]);
}

#[test]
fn a_whois_of_another_connection_leaves_the_message_its_mask() {
    let mut session = session_with(&[]);
    // The nick changed hands before the server answered.
    session.handle(":alice!mallory@other PRIVMSG bot :approve it");
    session.handle(":irc.test 311 bot alice al h * :Alice");
    session.handle(":irc.test 330 bot alice alice :is logged in as");
    let released = session.handle(":irc.test 318 bot alice :End of /WHOIS list.");
    assert_eq!(ids(&released), ["alice!mallory@other"]);
    // Gone before the WHOIS: no account, no warning about the 401.
    session.handle(":bob!b@h PRIVMSG bot :bye");
    assert!(
        session
            .handle(":irc.test 401 bot bob :No such nick")
            .is_empty()
    );
    let gone = session.handle(":irc.test 318 bot bob :End of /WHOIS list.");
    assert_eq!(ids(&gone), ["bob!b@h"]);
}

#[test]
fn a_whois_never_answered_lets_the_message_go_after_a_while() {
    let mut session = session_with(&[]);
    session.tick(1_000);
    session.handle(":alice!al@h PRIVMSG bot :hello?");
    assert_eq!(session.next_tick_in(1_000), Some(WHOIS_PATIENCE_MS));
    assert!(session.tick(1_000 + WHOIS_PATIENCE_MS - 1).is_empty());
    let late = session.tick(1_000 + WHOIS_PATIENCE_MS);
    assert_eq!(ids(&late), ["alice!al@h"]);
    assert_eq!(session.next_tick_in(20_000), None);
    // The next message asks again.
    let asked = session.handle(":alice!al@h PRIVMSG bot :hello?");
    assert_eq!(sends(&asked), ["WHOIS alice"]);
}

#[test]
fn channel_members_are_followed_through_extended_join_and_account_notify() {
    let mut session = session_with(&["extended-join", "account-notify"]);
    session.handle(":alice!al@h JOIN #a alice :Alice");
    session.handle(":bob!b@h JOIN #a * :Bob");
    let alice = session.handle(":alice!al@h PRIVMSG #a :bot: hi");
    assert!(sends(&alice).is_empty(), "known without a WHOIS");
    assert_eq!(ids(&alice), ["$a:alice"]);
    assert_eq!(
        ids(&session.handle(":bob!b@h PRIVMSG bot :hi")),
        ["bob!b@h"]
    );
    session.handle(":bob!b@h ACCOUNT bob");
    assert_eq!(ids(&session.handle(":bob!b@h PRIVMSG bot :hi")), ["$a:bob"]);
    session.handle(":alice!al@h NICK alice2");
    assert_eq!(
        ids(&session.handle(":alice2!al@h PRIVMSG bot :renamed")),
        ["$a:alice"]
    );
    // Whoever takes a nick that quit is asked about.
    session.handle(":bob!b@h QUIT :bye");
    let taken = session.handle(":bob!m@elsewhere PRIVMSG bot :it's me");
    assert_eq!(sends(&taken), ["WHOIS bob"]);
    // A member whose user or host differs from the one followed is asked about too.
    let odd = session.handle(":alice2!other@h PRIVMSG bot :hm");
    assert!(ids(&odd).is_empty());
    // Leaving a channel forgets everyone.
    session.handle(":bot!bot@h PART #a");
    assert!(ids(&session.handle(":alice2!al@h PRIVMSG bot :x")).is_empty());
}

#[test]
fn the_server_dropping_account_tag_falls_back_to_whois() {
    let mut session = session_with(&["account-tag"]);
    session.handle(":irc.test CAP bot DEL :account-tag");
    assert_eq!(
        sends(&session.handle(":alice!al@h PRIVMSG bot :hi")),
        ["WHOIS alice"]
    );
}

fn inbound(id: &str, raw: serde_json::Value) -> InboundMessage {
    InboundMessage {
        chat: Chat {
            id: "alice".into(),
            thread: None,
            kind: ChatKind::Dm,
            title: None,
        },
        sender: Sender {
            id: id.into(),
            name: "alice".into(),
            is_bot: false,
        },
        text: String::new(),
        message_id: None,
        reply_to: None,
        addressed: true,
        attachments: Vec::new(),
        edit_of: None,
        raw: raw.to_string(),
    }
}

#[test]
fn identities_say_how_strong_each_id_is() {
    let raw = serde_json::json!({"nick": "Alice", "user": "al", "host": "H.example"});
    let account = identify(&inbound("$a:alice", raw.clone()));
    assert_eq!(account.kind, "account");
    assert!(matches!(account.strength, IdStrength::Strong));
    assert_eq!(account.also_known_as, ["alice!al@h.example"]);
    let mask = identify(&inbound("alice!al@h.example", raw));
    assert_eq!(mask.kind, "mask");
    assert!(matches!(mask.strength, IdStrength::Weak));
    assert!(mask.also_known_as.is_empty());
    let nick = identify(&inbound("alice", serde_json::Value::Null));
    assert!(matches!(nick.strength, IdStrength::NameOnly));
}

#[test]
fn allowed_users_are_masks_or_accounts_never_bare_nicks() {
    for good in [
        "alice!alice@*",
        "*!*@alice.users.example",
        "$a:alice",
        "$a:*",
    ] {
        assert_eq!(check_allowed_user(good), Ok(()), "{good}");
    }
    let bare = check_allowed_user("ann").unwrap_err();
    assert!(bare.contains("bare nick"), "{bare}");
    assert!(
        bare.contains("nick!user@host") && bare.contains("$a:ACCOUNT"),
        "{bare}"
    );
    for bad in [
        "ann!ann", "ann@host", "!u@h", "a!@h", "a!u@", "$a:", "a b!c@d",
    ] {
        let why = check_allowed_user(bad).unwrap_err();
        assert!(why.contains("nick!user@host"), "{bad}: {why}");
    }
}
