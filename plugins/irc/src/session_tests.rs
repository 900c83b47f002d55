use super::*;

fn settings(channels: &[&str], password: Option<&str>) -> Settings {
    Settings {
        server: "irc.test".into(),
        port: 6667,
        tls: false,
        nick: "bot".into(),
        channels: channels.iter().map(|c| (*c).to_owned()).collect(),
        password: password.map(str::to_owned),
        realname: "Talaria Bot".into(),
    }
}

/// A session welcomed by a server that tags messages with accounts, so
/// messages need no `WHOIS` (see identity_tests.rs for the rest).
fn registered(channels: &[&str]) -> Session {
    let mut session = Session::new(settings(channels, None));
    session.handle(":irc.test CAP * LS :account-tag");
    session.handle(":irc.test CAP * ACK :account-tag");
    session.handle(":irc.test 001 bot :Welcome");
    for channel in channels {
        session.handle(&format!(":bot!bot@host JOIN {channel}"));
    }
    session
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

fn message(session: &mut Session, raw: &str) -> Option<InboundMessage> {
    session.handle(raw).into_iter().find_map(|e| match e {
        Event::Message(m) => Some(*m),
        _ => None,
    })
}

#[test]
fn registration_sends_cap_ls_pass_nick_user_in_order() {
    let session = Session::new(settings(&[], Some("s3cret")));
    assert_eq!(
        session.registration(),
        [
            "CAP LS 302",
            "PASS :s3cret",
            "NICK bot",
            "USER bot 0 * :Talaria Bot"
        ]
    );
    let without = Session::new(settings(&[], None));
    assert_eq!(
        without.registration(),
        ["CAP LS 302", "NICK bot", "USER bot 0 * :Talaria Bot"]
    );
}

#[test]
fn nick_in_use_retries_with_underscores_then_gives_up() {
    let mut session = Session::new(settings(&[], None));
    let first = session.handle(":irc.test 433 * bot :Nickname is already in use");
    assert_eq!(sends(&first), ["NICK bot_"]);
    let second = session.handle(":irc.test 433 * bot_ :Nickname is already in use");
    assert_eq!(sends(&second), ["NICK bot__"]);
    assert_eq!(session.nick(), "bot__");
    for _ in 0..7 {
        session.handle(":irc.test 433 * x :in use");
    }
    assert_eq!(session.nick(), format!("bot{}", "_".repeat(9)));
    let last = session.handle(":irc.test 433 * x :in use");
    assert!(matches!(&last[..], [Event::Fatal(why)] if why.contains("in use")));
}

#[test]
fn nick_in_use_after_registration_is_ignored() {
    let mut session = registered(&[]);
    assert!(session.handle(":irc.test 433 bot other :in use").is_empty());
    assert_eq!(session.nick(), "bot");
}

#[test]
fn ping_is_answered_with_pong_before_and_after_registration() {
    let mut session = Session::new(settings(&[], None));
    assert_eq!(sends(&session.handle("PING :12345")), ["PONG :12345"]);
    session.handle(":irc.test 001 bot :Welcome");
    assert_eq!(
        sends(&session.handle(":irc.test PING irc.test")),
        ["PONG :irc.test"]
    );
}

#[test]
fn welcome_registers_takes_the_servers_nick_and_joins_the_channels() {
    let mut session = Session::new(settings(&["#a", "&b"], None));
    assert!(!session.is_registered());
    let events = session.handle(":irc.test 001 bot_ :Welcome to the network");
    assert!(matches!(events[0], Event::Registered));
    assert_eq!(sends(&events), ["JOIN #a", "JOIN &b"]);
    assert!(session.is_registered());
    assert_eq!(session.nick(), "bot_");
    session.handle(":bot_!u@h JOIN #a");
    session.handle(":someone!u@h JOIN &b");
    assert_eq!(session.joined(), ["#a"]);
}

#[test]
fn a_kick_rejoins_and_a_kick_of_someone_else_does_not() {
    let mut session = registered(&["#a"]);
    assert!(session.handle(":op!u@h KICK #a alice :bye").is_empty());
    let events = session.handle(":op!u@h KICK #A BOT :go away");
    assert_eq!(sends(&events), ["JOIN #A"]);
    assert!(matches!(&events[0], Event::Warn(w) if w.contains("go away")));
    assert!(session.joined().is_empty());
}

#[test]
fn fatal_replies_end_the_session() {
    let mut session = Session::new(settings(&[], Some("wrong")));
    assert!(matches!(
        &session.handle(":irc.test 464 * :Password incorrect")[..],
        [Event::Fatal(why)] if why.contains("Password incorrect")
    ));
    assert!(matches!(
        &session.handle("ERROR :Closing Link: (Ping timeout)")[..],
        [Event::Fatal(why)] if why.contains("Ping timeout")
    ));
    assert!(matches!(
        &Session::new(settings(&[], None)).handle(":irc.test 432 * bot :Erroneous Nickname")[..],
        [Event::Fatal(_)]
    ));
}

#[test]
fn a_channel_message_addressed_by_nick_colon_or_comma_is_stripped() {
    let mut session = registered(&["#a"]);
    let m = message(
        &mut session,
        ":alice!~al@example.org PRIVMSG #a :BoT:  what time is it?",
    )
    .unwrap();
    assert!(m.addressed);
    assert_eq!(m.text, "what time is it?");
    assert_eq!(m.chat.id, "#a");
    assert_eq!(m.chat.kind, ChatKind::Channel);
    assert_eq!(m.chat.title.as_deref(), Some("#a"));
    assert_eq!(
        (
            m.sender.id.as_str(),
            m.sender.name.as_str(),
            m.sender.is_bot
        ),
        ("alice!~al@example.org", "alice", false)
    );

    let comma = message(&mut session, ":alice!u@h PRIVMSG #a :bot, hi").unwrap();
    assert!(comma.addressed);
    assert_eq!(comma.text, "hi");
}

#[test]
fn a_channel_message_not_starting_with_the_address_is_unaddressed_and_unchanged() {
    let mut session = registered(&["#a"]);
    for text in ["hello bot: you there?", "bot hi", "bots: all of you", "bo"] {
        let m = message(&mut session, &format!(":alice!u@h PRIVMSG #a :{text}")).unwrap();
        assert!(!m.addressed, "{text}");
        assert_eq!(m.text, text);
    }
}

#[test]
fn casemapping_applies_to_the_address() {
    let mut session = Session::new(Settings {
        nick: "[bot]".into(),
        ..settings(&["#a"], None)
    });
    session.handle(":irc.test CAP * ACK :account-tag");
    session.handle(":irc.test 001 [bot] :Welcome");
    let m = message(&mut session, ":alice!u@h PRIVMSG #a :{BOT}: hi").unwrap();
    assert!(m.addressed);
    assert_eq!(m.text, "hi");
}

#[test]
fn a_direct_message_is_a_dm_chat_named_after_the_sender_and_always_addressed() {
    let mut session = registered(&[]);
    let m = message(&mut session, ":alice!u@h PRIVMSG bot :hello").unwrap();
    assert!(m.addressed);
    assert_eq!(m.text, "hello");
    assert_eq!((m.chat.id.as_str(), m.chat.kind), ("alice", ChatKind::Dm));
    assert_eq!(m.chat.title, None);
    let raw: serde_json::Value = serde_json::from_str(&m.raw).unwrap();
    assert_eq!(raw["host"], "h");
    assert_eq!(raw["line"], ":alice!u@h PRIVMSG bot :hello");
}

#[test]
fn ctcp_action_becomes_star_text_and_other_ctcp_is_ignored() {
    let mut session = registered(&["#a"]);
    let action = message(&mut session, ":alice!u@h PRIVMSG #a :\x01ACTION waves\x01").unwrap();
    assert_eq!(action.text, "* alice waves");
    assert!(!action.addressed);
    let dm_action = message(&mut session, ":alice!u@h PRIVMSG bot :\x01ACTION waves").unwrap();
    assert_eq!(dm_action.text, "* alice waves");
    for ctcp in ["\x01VERSION\x01", "\x01PING 123\x01", "\x01ACTIONS\x01"] {
        assert!(message(&mut session, &format!(":alice!u@h PRIVMSG bot :{ctcp}")).is_none());
    }
}

#[test]
fn notices_own_echoes_and_server_messages_are_not_messages() {
    let mut session = registered(&["#a"]);
    assert!(session.handle(":alice!u@h NOTICE bot :psst").is_empty());
    assert!(session.handle(":bot!u@h PRIVMSG #a :echo").is_empty());
    assert!(session.handle("PRIVMSG #a :no prefix").is_empty());
    assert!(session.handle(":alice!u@h PRIVMSG #a").is_empty());
}

#[test]
fn formatting_is_stripped_and_tags_fill_message_id_and_bot_flag() {
    let mut session = registered(&["#a"]);
    let m = message(
        &mut session,
        "@msgid=abc;bot :helper!u@h PRIVMSG #a :\x02bot\x02: \x0304run\x03 it",
    )
    .unwrap();
    assert!(m.addressed);
    assert_eq!(m.text, "run it");
    assert_eq!(m.message_id.as_deref(), Some("abc"));
    assert!(m.sender.is_bot);
}

#[test]
fn chat_details_come_from_topic_and_names_replies() {
    let mut session = registered(&["#a"]);
    session.handle(":irc.test 332 bot #a :The topic");
    session.handle(":irc.test 353 bot = #a :bot @op alice");
    session.handle(":irc.test 353 bot = #a :bob");
    session.handle(":irc.test 366 bot #a :End of NAMES list");
    let details = session.chat_details("#A");
    assert_eq!(details.topic.as_deref(), Some("The topic"));
    assert_eq!(details.members, Some(4));
    assert_eq!(details.chat.kind, ChatKind::Channel);
    session.handle(":op!u@h TOPIC #a :New topic");
    assert_eq!(
        session.chat_details("#a").topic.as_deref(),
        Some("New topic")
    );
    let dm = session.chat_details("alice");
    assert_eq!((dm.chat.kind, dm.members), (ChatKind::Dm, None));
}

#[test]
fn capabilities_are_plain_text_in_bytes_within_the_line_limit() {
    let session = registered(&["#a"]);
    let caps = session.capabilities();
    assert_eq!(caps.platform, "irc");
    assert_eq!(caps.length_unit, LengthUnit::Bytes);
    assert!(!caps.markdown && !caps.edit && !caps.typing);
    // 512 - (":bot!" + 18 + "@" + 63 + " PRIVMSG " + 50 + " :" + CRLF) = 512 - 150
    assert_eq!(caps.max_message_length, 362);
    assert!(caps.prompt_hint.contains("plain text"));
}

#[test]
fn a_server_forced_nick_change_is_followed() {
    let mut session = registered(&["#a"]);
    session.handle(":bot!u@h NICK :newbot");
    assert_eq!(session.nick(), "newbot");
    let m = message(&mut session, ":alice!u@h PRIVMSG #a :newbot: hi").unwrap();
    assert!(m.addressed);
}
