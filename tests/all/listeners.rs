//! The servers' listeners under clients that connect, send part of their headers and stall:
//! `talaria serve` and the gateway's webhook listener answer a valid request while 500 such
//! clients (from 50 loopback addresses, 127.0.0.2 …, then 100 more from one) hold connections,
//! and close those over the caps on connections not being served.

use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::time::Duration;

use talaria_http_listener::Limits;
use talaria_testkit::{Script, ScriptedServer};

use crate::common::*;

/// How long a valid request may wait: less than any header timeout (10 s), so an answer cannot
/// come from stalled clients being timed out.
const ANSWER_BOUND: Duration = Duration::from_secs(8);

/// Raises the soft limit on open descriptors to the hard one: a siege holds 600 sockets here
/// and as many in the server. Raising it cannot break the tests beside it.
fn enough_descriptors() {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
    if soft < hard {
        setrlimit(Resource::RLIMIT_NOFILE, hard, hard).unwrap();
    }
}

/// A connection from `127.0.0.N` (Linux routes all of 127/8 to lo).
fn connect_from(source: u8, port: u16) -> TcpStream {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .unwrap();
    let stream = runtime.block_on(async {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket
            .bind(SocketAddr::from((Ipv4Addr::new(127, 0, 0, source), 0)))
            .unwrap();
        socket
            .connect(SocketAddr::from((Ipv4Addr::LOCALHOST, port)))
            .await
            .unwrap()
    });
    let stream = stream.into_std().unwrap();
    // tokio left it non-blocking.
    stream.set_nonblocking(false).unwrap();
    stream
}

/// Clients stalled in their headers.
struct Stalled(Vec<TcpStream>);

impl Stalled {
    /// `count` clients taking `sources` in turn.
    fn connect(port: u16, count: usize, sources: &[u8]) -> Self {
        let streams = (0..count)
            .map(|index| {
                let mut stream = connect_from(sources[index % sources.len()], port);
                stream.write_all(b"GET /health HTTP/1.1\r\nHo").unwrap();
                stream.set_nonblocking(true).unwrap();
                stream
            })
            .collect();
        Self(streams)
    }

    /// Drops those the server closed; how many are left.
    fn still_open(&mut self) -> usize {
        self.0.retain_mut(|stream| {
            let mut buf = [0u8; 64];
            matches!(stream.read(&mut buf), Err(error) if error.kind() == ErrorKind::WouldBlock)
        });
        self.0.len()
    }
}

/// The status of `request` sent from 127.0.0.1, if it is answered within [`ANSWER_BOUND`].
fn status_of(port: u16, request: &[u8]) -> Option<u16> {
    let mut stream = connect_from(1, port);
    stream.set_read_timeout(Some(ANSWER_BOUND)).unwrap();
    stream.write_all(request).unwrap();
    let mut reply = Vec::new();
    let _ = stream.read_to_end(&mut reply);
    let reply = String::from_utf8_lossy(&reply);
    reply.split(' ').nth(1)?.parse().ok()
}

/// Stalls 500 clients from 50 sources against `port`, then 100 from one: `valid` is answered
/// `status` each time, and the stalled clients over the caps are closed.
fn holds_under_stalled_clients(port: u16, valid: &[u8], status: u16) {
    enough_descriptors();
    let sources: Vec<u8> = (2..52).collect();
    let mut many = Stalled::connect(port, 500, &sources);
    assert_eq!(
        status_of(port, valid),
        Some(status),
        "a valid request waits behind 500 stalled clients"
    );
    wait_until(
        "the total cap closes the stalled clients over it",
        Duration::from_secs(30),
        || many.still_open() <= Limits::DEFAULT_MAX_UNSERVED,
    );

    let mut one = Stalled::connect(port, 100, &[250]);
    wait_until(
        "the per-source cap closes one source's clients over it",
        Duration::from_secs(30),
        || one.still_open() <= Limits::DEFAULT_MAX_UNSERVED_PER_SOURCE,
    );
    assert_eq!(
        status_of(port, valid),
        Some(status),
        "a valid request waits behind one source's stalled clients"
    );
    drop((many, one));
}

#[test]
fn serve_answers_while_500_stalled_clients_hold_connections() {
    let home = Home::new();
    let model = ScriptedServer::spawn(Script::new([])).unwrap();
    let served =
        crate::api_server::spawn_served(crate::api_server::serve_command(&home, &model, &[]));
    holds_under_stalled_clients(
        served.port,
        b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        200,
    );
    assert!(model.requests().is_empty());
}

#[test]
fn the_webhook_listener_answers_while_500_stalled_clients_hold_connections() {
    let model = ScriptedServer::spawn(Script::new([])).unwrap();
    let port = crate::gateway::free_port();
    let home = Home::new();
    home.write_config(&format!(
        "gateway:\n  webhook:\n    port: {port}\n    routes:\n      github:\n        \
         secret: hook-secret\n"
    ));
    let mut gateway = crate::gateway::spawn_gateway(&home, &model, &[]);
    wait_until("the webhook listener", Duration::from_secs(60), || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    // GitHub's ping, signed: answered without a turn.
    let body = br#"{"zen": "Keep it logically awesome."}"#;
    let signature = talaria_gateway::webhook::sign(b"hook-secret", body);
    let mut ping = format!(
        "POST /hooks/github HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\
         X-GitHub-Event: ping\r\nX-Hub-Signature-256: {signature}\r\n\
         Content-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    ping.extend_from_slice(body);
    holds_under_stalled_clients(port, &ping, 200);
    assert!(model.requests().is_empty());
    let _ = gateway.kill();
    let _ = gateway.wait();
}
