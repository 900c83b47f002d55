//! The protocol core against a real IRC server (ngIRCd from the test kit).
//! The component's glue only moves lines between the socket and
//! [`Session`], so driving `Session` over a std `TcpStream` checks the
//! adapter's behaviour against what a server really sends and accepts.
// A native test only: the peer is a host process.
#![cfg(not(target_arch = "wasm32"))]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use talaria_plugin_irc::outgoing::{MAX_LINE, privmsg_lines, text_limit};
use talaria_plugin_irc::session::{Event, Session};
use talaria_plugin_irc::settings::Settings;
use talaria_plugin_sdk::chat_types::{ChatKind, InboundMessage};
use talaria_testkit::ngircd::{Ngircd, NgircdOptions};

const PATIENCE: Duration = Duration::from_secs(15);

fn connect(server: &Ngircd) -> BufReader<TcpStream> {
    let stream = TcpStream::connect(server.address()).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    BufReader::new(stream)
}

fn write_line(stream: &mut BufReader<TcpStream>, line: &str) {
    stream
        .get_mut()
        .write_all(format!("{line}\r\n").as_bytes())
        .unwrap();
}

/// The next line, `None` when none came within the read timeout.
fn read_line(stream: &mut BufReader<TcpStream>) -> Option<String> {
    let mut line = String::new();
    match stream.read_line(&mut line) {
        Ok(0) => panic!("the server closed the connection"),
        Ok(_) => Some(line.trim_end_matches(['\r', '\n']).to_owned()),
        Err(_) => None,
    }
}

/// The adapter's side: a [`Session`] and its connection.
struct Bot {
    session: Session,
    stream: BufReader<TcpStream>,
    messages: Vec<InboundMessage>,
}

impl Bot {
    fn connect(server: &Ngircd, nick: &str, channels: &[&str]) -> Self {
        let settings = Settings {
            server: "127.0.0.1".into(),
            port: server.port,
            tls: false,
            nick: nick.into(),
            channels: channels.iter().map(|c| (*c).to_owned()).collect(),
            password: None,
            realname: "Talaria test bot".into(),
        };
        let mut bot = Self {
            session: Session::new(settings),
            stream: connect(server),
            messages: Vec::new(),
        };
        for line in bot.session.registration() {
            write_line(&mut bot.stream, &line);
        }
        bot
    }

    /// Handles lines as the component does until `done` holds.
    fn run_until(&mut self, what: &str, done: impl Fn(&Self) -> bool) {
        let deadline = Instant::now() + PATIENCE;
        let mut seen = Vec::new();
        while !done(self) {
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; read {seen:#?}"
            );
            let Some(raw) = read_line(&mut self.stream) else {
                continue;
            };
            seen.push(raw.clone());
            for event in self.session.handle(&raw) {
                match event {
                    Event::Send(line) => write_line(&mut self.stream, &line),
                    Event::Message(message) => self.messages.push(*message),
                    Event::Fatal(why) => panic!("fatal: {why}"),
                    Event::Registered | Event::Warn(_) => {}
                }
            }
        }
    }

    fn joined(&self, channel: &str) -> bool {
        self.session.joined().contains(&channel)
    }
}

/// A plain user: registers and reads until a line contains `needle`.
struct User {
    stream: BufReader<TcpStream>,
}

impl User {
    fn register(server: &Ngircd, nick: &str) -> Self {
        let mut user = Self {
            stream: connect(server),
        };
        user.send(&format!("NICK {nick}"));
        user.send(&format!("USER {nick} 0 * :Test user"));
        user.read_until(" 001 ");
        user
    }

    fn send(&mut self, line: &str) {
        write_line(&mut self.stream, line);
    }

    fn read_until(&mut self, needle: &str) -> String {
        let deadline = Instant::now() + PATIENCE;
        loop {
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {needle:?}"
            );
            if let Some(line) = read_line(&mut self.stream)
                && line.contains(needle)
            {
                return line;
            }
        }
    }
}

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
    let _holder = User::register(&server, "talaria");
    let mut bot = Bot::connect(&server, "talaria", &["#one", "#two"]);
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
    let mut bot = Bot::connect(&server, "talaria", &["#talk"]);
    bot.run_until("the join", |bot| bot.joined("#talk"));
    let mut alice = User::register(&server, "alice");
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
    assert_eq!(
        seen,
        [
            ("#talk", ChatKind::Channel, true, "what is 2+2?"),
            ("#talk", ChatKind::Channel, false, "just chatting"),
            ("#talk", ChatKind::Channel, false, "* alice waves"),
            ("alice", ChatKind::Dm, true, "hello in private"),
        ]
    );
    assert!(bot.messages.iter().all(|m| m.sender.id == "alice"));
}

#[test]
fn a_kick_is_followed_by_a_rejoin() {
    let Some((_dir, server)) = start() else {
        return;
    };
    // The first to join a channel is its operator, so alice may kick.
    let mut alice = User::register(&server, "alice");
    alice.send("JOIN #ops");
    alice.read_until(" 366 ");
    let mut bot = Bot::connect(&server, "talaria", &["#ops"]);
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
    let mut bot = Bot::connect(&server, "talaria", &["#long"]);
    bot.run_until("the join", |bot| bot.joined("#long"));
    let mut alice = User::register(&server, "alice");
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
