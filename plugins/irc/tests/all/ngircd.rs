//! The protocol core against a real IRC server (ngIRCd from the test kit).
//! The component's glue only moves lines between the socket and
//! [`Session`], so driving `Session` over a std `TcpStream` checks the
//! adapter's behaviour against what a server really sends and accepts.
// A native test only: the peer is a host process.
#![cfg(not(target_arch = "wasm32"))]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use talaria_plugin_irc::outgoing::{MAX_LINE, privmsg_lines, text_limit};
use talaria_plugin_sdk::chat_types::ChatKind;
use talaria_testkit::ngircd::{Ngircd, NgircdOptions};

use crate::harness::{Bot, User, write_line};

fn start() -> Option<(tempfile::TempDir, Ngircd)> {
    if !Ngircd::installed(false) {
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let server = Ngircd::start(dir.path(), &NgircdOptions::default()).unwrap();
    Some((dir, server))
}

#[test]
fn registers_with_a_retried_nick_and_joins_after_the_welcome() {
    let Some((_dir, server)) = start() else {
        return;
    };
    let _holder = User::register(server.port, "talaria");
    let mut bot = Bot::connect(server.port, "talaria", &["#one", "#two"]);
    bot.run_until("both joins", |bot| {
        bot.session.is_registered() && bot.joined("#one") && bot.joined("#two")
    });
    assert_eq!(bot.session.nick(), "talaria_");
}

#[test]
fn channel_and_direct_messages_arrive_parsed_and_addressed() {
    let Some((_dir, server)) = start() else {
        return;
    };
    let mut bot = Bot::connect(server.port, "talaria", &["#talk"]);
    bot.run_until("the join", |bot| bot.joined("#talk"));
    let mut alice = User::register(server.port, "alice");
    alice.send("JOIN #talk");
    alice.read_until(" 366 ");
    alice.send("PRIVMSG #talk :Talaria: what is 2+2?");
    alice.send("PRIVMSG #talk :just chatting");
    alice.send("PRIVMSG #talk :\x01ACTION waves\x01");
    alice.send("PRIVMSG #talk :\x01VERSION\x01");
    alice.send("NOTICE talaria :ignored");
    alice.send("PRIVMSG talaria :hello in private");
    bot.run_until("four messages", |bot| bot.messages.len() >= 4);

    let seen: Vec<(&str, ChatKind, bool, &str)> = bot
        .messages
        .iter()
        .map(|m| {
            (
                m.chat.id.as_str(),
                m.chat.kind,
                m.addressed,
                m.text.as_str(),
            )
        })
        .collect();
    // ngIRCd offers no account capabilities: what addresses the bot waits
    // for the WHOIS of its sender, the rest goes on at once.
    assert_eq!(
        seen,
        [
            ("#talk", ChatKind::Channel, false, "just chatting"),
            ("#talk", ChatKind::Channel, false, "* alice waves"),
            ("#talk", ChatKind::Channel, true, "what is 2+2?"),
            ("alice", ChatKind::Dm, true, "hello in private"),
        ]
    );
    let caps = bot.session.caps();
    assert!(!caps.account_tag && !caps.extended_join);
    // No services: alice is her whole mask, never her nick alone.
    let ids: Vec<&str> = bot.messages.iter().map(|m| m.sender.id.as_str()).collect();
    assert!(
        ids.iter().all(|id| *id == "alice!~alice@127.0.0.1"),
        "{ids:?}"
    );
    assert!(bot.messages.iter().all(|m| m.sender.name == "alice"));
}

#[test]
fn a_kick_is_followed_by_a_rejoin() {
    let Some((_dir, server)) = start() else {
        return;
    };
    // The first to join a channel is its operator, so alice may kick.
    let mut alice = User::register(server.port, "alice");
    alice.send("JOIN #ops");
    alice.read_until(" 366 ");
    let mut bot = Bot::connect(server.port, "talaria", &["#ops"]);
    bot.run_until("the join", |bot| bot.joined("#ops"));
    alice.send("KICK #ops talaria :out");
    bot.run_until("the kick", |bot| !bot.joined("#ops"));
    bot.run_until("the rejoin", |bot| bot.joined("#ops"));
    alice.read_until(" KICK #ops talaria ");
    let rejoin = alice.read_until(" JOIN ");
    assert!(rejoin.starts_with(":talaria!"), "{rejoin}");
}

#[test]
fn split_multibyte_text_is_relayed_whole_within_512_bytes() {
    let Some((_dir, server)) = start() else {
        return;
    };
    let mut bot = Bot::connect(server.port, "talaria", &["#long"]);
    bot.run_until("the join", |bot| bot.joined("#long"));
    let mut alice = User::register(server.port, "alice");
    alice.send("JOIN #long");
    alice.read_until(" 366 ");

    let text = "Grüße aus Zürich, 🦀 und 日本語 ".repeat(30);
    let limit = text_limit(bot.session.nick(), "#long".len());
    let lines = privmsg_lines("#long", &text, limit);
    assert!(lines.len() > 2);
    for line in &lines {
        write_line(&mut bot.stream, line);
    }
    let mut received = Vec::new();
    for _ in &lines {
        let relayed = alice.read_until("PRIVMSG #long :");
        assert!(relayed.len() + 2 <= MAX_LINE, "{} bytes", relayed.len() + 2);
        received.push(relayed.split_once(" :").unwrap().1.to_owned());
    }
    let words = |s: &str| s.split_whitespace().map(str::to_owned).collect::<Vec<_>>();
    assert_eq!(words(&received.join(" ")), words(&text));
}
