//! Drives the protocol core over a std `TcpStream`, as the component's glue
//! does, against a real server from the test kit.
// A native test only: the peers are host processes.
#![cfg(not(target_arch = "wasm32"))]
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use talaria_plugin_irc::session::{Event, Session};
use talaria_plugin_irc::settings::Settings;
use talaria_plugin_sdk::chat_types::InboundMessage;

pub const PATIENCE: Duration = Duration::from_secs(15);

fn connect(port: u16) -> BufReader<TcpStream> {
    let stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    BufReader::new(stream)
}

pub fn write_line(stream: &mut BufReader<TcpStream>, line: &str) {
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

/// What the server says, as the session is shown it.
pub type Rewrite = fn(&str) -> Option<String>;

/// The adapter's side: a [`Session`] and its connection.
pub struct Bot {
    pub session: Session,
    pub stream: BufReader<TcpStream>,
    pub messages: Vec<InboundMessage>,
    /// Every line the bot wrote.
    pub written: Vec<String>,
    rewrite: Rewrite,
}

impl Bot {
    pub fn connect(port: u16, nick: &str, channels: &[&str]) -> Self {
        Self::connect_with(port, nick, channels, |_| true, |line| Some(line.to_owned()))
    }

    /// [`Bot::connect`] sending only the registration lines `register`
    /// keeps, and showing the session the server's lines through `rewrite`
    /// (a server without some capability, as far as the session can tell).
    pub fn connect_with(
        port: u16,
        nick: &str,
        channels: &[&str],
        register: fn(&str) -> bool,
        rewrite: Rewrite,
    ) -> Self {
        let settings = Settings {
            server: "127.0.0.1".into(),
            port,
            tls: false,
            nick: nick.into(),
            channels: channels.iter().map(|c| (*c).to_owned()).collect(),
            password: None,
            realname: "Talaria test bot".into(),
        };
        let mut bot = Self {
            session: Session::new(settings),
            stream: connect(port),
            messages: Vec::new(),
            written: Vec::new(),
            rewrite,
        };
        for line in bot.session.registration() {
            if register(&line) {
                bot.write(&line);
            }
        }
        bot
    }

    pub fn write(&mut self, line: &str) {
        write_line(&mut self.stream, line);
        self.written.push(line.to_owned());
    }

    /// Handles lines as the component does until `done` holds.
    pub fn run_until(&mut self, what: &str, done: impl Fn(&Self) -> bool) {
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
            let Some(raw) = (self.rewrite)(&raw) else {
                continue;
            };
            for event in self.session.handle(&raw) {
                match event {
                    Event::Send(line) => self.write(&line),
                    Event::Message(message) => self.messages.push(*message),
                    Event::Fatal(why) => panic!("fatal: {why}"),
                    Event::Registered | Event::Warn(_) => {}
                }
            }
        }
    }

    pub fn joined(&self, channel: &str) -> bool {
        self.session.joined().contains(&channel)
    }

    /// The sender ids of the messages received, in order.
    pub fn sender_ids(&self) -> Vec<&str> {
        self.messages.iter().map(|m| m.sender.id.as_str()).collect()
    }

    /// Whether the bot asked the server who `nick` is.
    pub fn asked_whois(&self, nick: &str) -> bool {
        self.written.iter().any(|l| *l == format!("WHOIS {nick}"))
    }
}

/// A plain user: registers and reads until a line contains `needle`.
pub struct User {
    stream: BufReader<TcpStream>,
}

impl User {
    pub fn register(port: u16, nick: &str) -> Self {
        Self::register_as(port, nick, nick)
    }

    /// A user whose `USER` name is `user`.
    pub fn register_as(port: u16, nick: &str, user: &str) -> Self {
        let mut client = Self {
            stream: connect(port),
        };
        client.send(&format!("NICK {nick}"));
        client.send(&format!("USER {user} 0 * :Test user"));
        client.read_until(" 001 ");
        client
    }

    pub fn send(&mut self, line: &str) {
        write_line(&mut self.stream, line);
    }

    pub fn read_until(&mut self, needle: &str) -> String {
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
