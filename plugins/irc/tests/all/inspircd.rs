//! Identification against a real network with services (InspIRCd and
//! Atheme's NickServ from the test kit, one network for the binary): the
//! account tag, `extended-join` with `account-notify`, and WHOIS 330 when a
//! server offers no capabilities. Each test uses nicks and accounts of its own.
// A native test only: the peers are host processes.
#![cfg(not(target_arch = "wasm32"))]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use talaria_testkit::inspircd::Inspircd;

use crate::harness::{Bot, User};

fn network() -> Option<&'static Inspircd> {
    if !Inspircd::installed() {
        assert!(
            std::env::var_os("TALARIA_REQUIRE_PEERS").is_none(),
            "inspircd or atheme-services is missing; TALARIA_REQUIRE_PEERS is set"
        );
        return None;
    }
    Some(Inspircd::shared().unwrap())
}

/// `nick`, signed in to a new account of the same name.
fn signed_in(port: u16, nick: &str) -> User {
    let mut user = User::register(port, nick);
    user.send(&format!(
        "PRIVMSG NickServ :REGISTER pw-{nick}-1 {nick}@talaria.invalid"
    ));
    user.read_until(" 900 ");
    user
}

#[test]
fn the_account_tag_identifies_a_signed_in_sender_and_not_an_impostor() {
    let Some(net) = network() else { return };
    let mut bot = Bot::connect(net.port, "tagbot", &[]);
    bot.run_until("the welcome", |bot| bot.session.is_registered());
    assert!(bot.session.caps().account_tag);
    let mut alice = signed_in(net.port, "tagalice");
    alice.send("PRIVMSG tagbot :it is me");
    bot.run_until("alice's message", |bot| bot.messages.len() == 1);
    drop(alice);
    // Someone else takes the nick once it is free: same nick, same user
    // name, same host, but not signed in.
    let mut impostor = User::register(net.port, "tagalice");
    impostor.send("PRIVMSG tagbot :it is me too");
    bot.run_until("the impostor's message", |bot| bot.messages.len() == 2);
    assert_eq!(
        bot.sender_ids(),
        ["$a:tagalice", "tagalice!tagalice@127.0.0.1"]
    );
    assert!(!bot.asked_whois("tagalice"), "the tag said it all");
}

#[test]
fn without_capabilities_whois_330_identifies_the_sender() {
    let Some(net) = network() else { return };
    // A bot that never asks for capabilities, as on a server without them.
    let mut bot = Bot::connect_with(
        net.port,
        "whoisbot",
        &[],
        |line| !line.starts_with("CAP "),
        |line| Some(line.to_owned()),
    );
    bot.run_until("the welcome", |bot| bot.session.is_registered());
    let mut bob = signed_in(net.port, "whoisbob");
    bob.send("PRIVMSG whoisbot :hello");
    bot.run_until("bob's message", |bot| bot.messages.len() == 1);
    assert!(bot.asked_whois("whoisbob"));
    let mut carol = User::register(net.port, "whoiscarol");
    carol.send("PRIVMSG whoisbot :hi");
    bot.run_until("carol's message", |bot| bot.messages.len() == 2);
    assert_eq!(
        bot.sender_ids(),
        ["$a:whoisbob", "whoiscarol!whoiscarol@127.0.0.1"]
    );
}

#[test]
fn extended_join_and_account_notify_follow_channel_members() {
    let Some(net) = network() else { return };
    // The server's account tag hidden from the session: it asks for the
    // other two capabilities only.
    let mut bot = Bot::connect_with(
        net.port,
        "joinbot",
        &["#accounts"],
        |_| true,
        |line| {
            Some(if line.contains(" CAP ") {
                line.replace("account-tag", "x-hidden")
            } else {
                line.to_owned()
            })
        },
    );
    bot.run_until("the join", |bot| bot.joined("#accounts"));
    let caps = bot.session.caps();
    assert!(!caps.account_tag && caps.extended_join && caps.account_notify);
    let mut dave = signed_in(net.port, "joindave");
    dave.send("JOIN #accounts");
    dave.read_until(" 366 ");
    dave.send("PRIVMSG #accounts :joinbot: signed in");
    bot.run_until("dave's message", |bot| bot.messages.len() == 1);
    dave.send("PRIVMSG NickServ :LOGOUT");
    dave.read_until("logged out");
    dave.send("PRIVMSG #accounts :joinbot: signed out");
    bot.run_until("dave's second message", |bot| bot.messages.len() == 2);
    assert_eq!(
        bot.sender_ids(),
        ["$a:joindave", "joindave!joindave@127.0.0.1"]
    );
    assert!(
        !bot.asked_whois("joindave"),
        "the join and the account change said it all"
    );
}
