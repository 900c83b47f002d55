//! The ngIRCd peer works: a raw client registers over plain TCP and over
//! TLS (verified against the test CA), messages are relayed between two
//! clients, and a restart keeps the port.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use talaria_testkit::ngircd::{Ngircd, NgircdOptions, SERVER_NAME};

/// A line-at-a-time IRC client over any byte stream.
struct RawClient<S: Read + Write> {
    stream: BufReader<S>,
}

impl<S: Read + Write> RawClient<S> {
    fn send(&mut self, line: &str) {
        let stream = self.stream.get_mut();
        stream.write_all(format!("{line}\r\n").as_bytes()).unwrap();
        stream.flush().unwrap();
    }

    /// Reads lines (answering PINGs) until one contains `needle`; panics
    /// with what was read when the connection ends or times out first.
    fn read_until(&mut self, needle: &str) -> String {
        let mut seen = Vec::new();
        loop {
            let mut line = String::new();
            match self.stream.read_line(&mut line) {
                Ok(0) | Err(_) => panic!("no line with {needle:?}; read {seen:#?}"),
                Ok(_) => {}
            }
            let line = line.trim_end().to_owned();
            if let Some(token) = line.strip_prefix("PING ") {
                self.send(&format!("PONG {token}"));
            }
            if line.contains(needle) {
                return line;
            }
            seen.push(line);
        }
    }

    fn register(&mut self, nick: &str) -> String {
        self.send(&format!("NICK {nick}"));
        self.send(&format!("USER {nick} 0 * :Test client"));
        self.read_until(" 001 ")
    }

    /// Whether the server closed the connection: reads to its end, false
    /// when the read times out first.
    fn closed(&mut self) -> bool {
        let mut line = Vec::new();
        loop {
            line.clear();
            match self.stream.read_until(b'\n', &mut line) {
                Ok(0) => return true,
                Ok(_) => {}
                Err(e) => return e.kind() == std::io::ErrorKind::ConnectionReset,
            }
        }
    }
}

fn plain_client(server: &Ngircd) -> RawClient<TcpStream> {
    let stream = TcpStream::connect(server.address()).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    RawClient {
        stream: BufReader::new(stream),
    }
}

#[test]
fn ngircd_registers_a_plain_client_and_relays_channel_messages() {
    if !Ngircd::installed(false) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let server = Ngircd::start(dir.path(), &NgircdOptions::default()).unwrap();

    let mut alice = plain_client(&server);
    let welcome = alice.register("alice");
    assert!(
        welcome.starts_with(&format!(":{SERVER_NAME} 001 alice ")),
        "{welcome}"
    );
    let mut bob = plain_client(&server);
    bob.register("bob");

    alice.send("JOIN #talaria");
    alice.read_until(" 366 ");
    bob.send("JOIN #talaria");
    bob.read_until(" 366 ");
    alice.read_until("JOIN");
    bob.send("PRIVMSG #talaria :alice: hello there");
    let relayed = alice.read_until("PRIVMSG");
    assert!(
        relayed.starts_with(":bob!~bob@")
            && relayed.ends_with(" PRIVMSG #talaria :alice: hello there"),
        "{relayed}"
    );

    // A taken nick is refused with 433 (the adapter's retry depends on it).
    let mut other = plain_client(&server);
    other.send("NICK alice");
    let in_use = other.read_until(" 433 ");
    assert!(in_use.contains(" alice "), "{in_use}");
}

#[test]
fn ngircd_registers_a_client_over_tls_verified_against_the_test_ca() {
    if !Ngircd::installed(true) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let options = NgircdOptions {
        tls: true,
        ..NgircdOptions::default()
    };
    let server = Ngircd::start(dir.path(), &options).unwrap();

    let mut roots = rustls::RootCertStore::empty();
    let ca = CertificateDer::from_pem_file(server.ca_pem.as_ref().unwrap()).unwrap();
    roots.add(ca).unwrap();
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    for (name, nick) in [("localhost", "byname"), ("127.0.0.1", "byaddress")] {
        let connection = rustls::ClientConnection::new(
            Arc::new(config.clone()),
            ServerName::try_from(name).unwrap(),
        )
        .unwrap();
        let tcp = TcpStream::connect(("127.0.0.1", server.tls_port.unwrap())).unwrap();
        tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut client = RawClient {
            stream: BufReader::new(rustls::StreamOwned::new(connection, tcp)),
        };
        let welcome = client.register(nick);
        assert!(
            welcome.contains(&format!(" 001 {nick} ")),
            "{name}: {welcome}"
        );
        client.send("QUIT :bye");
    }
}

#[test]
fn ngircd_checks_the_server_password() {
    if !Ngircd::installed(false) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let options = NgircdOptions {
        password: Some("letmein".into()),
        ..NgircdOptions::default()
    };
    let server = Ngircd::start(dir.path(), &options).unwrap();
    let mut good = plain_client(&server);
    good.send("PASS :letmein");
    good.register("good");
    let mut bad = plain_client(&server);
    bad.send("PASS :wrong");
    bad.send("NICK bad");
    bad.send("USER bad 0 * :Bad");
    let refused = bad.read_until("ERROR");
    assert!(refused.contains("ERROR"), "{refused}");
}

#[test]
fn ngircd_restarts_on_the_same_port_and_clients_see_the_drop() {
    if !Ngircd::installed(false) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut server = Ngircd::start(dir.path(), &NgircdOptions::default()).unwrap();
    let port = server.port;
    let mut before = plain_client(&server);
    before.register("before");

    server.restart().unwrap();
    assert_eq!(server.port, port);
    assert!(before.closed());
    let mut after = plain_client(&server);
    after.register("after");
}
