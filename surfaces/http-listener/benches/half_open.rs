//! How long a valid request waits while half-open connections are held against the listener:
//! `cargo bench -p talaria-http-listener --bench half_open` prints a table of milliseconds from
//! connect to the whole answer of a `GET /health` from 127.0.0.1, with nobody else connected and
//! with 500 connections that sent part of their headers and stalled (from 50 source addresses,
//! 127.0.0.2 …, and from one), under the limits `talaria serve` and the webhook and MCP
//! listeners use. The first answer is shown apart: it is the one an attack delays.
#![allow(clippy::unwrap_used, clippy::print_stdout)]

use std::convert::Infallible;
use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use http_body_util::Full;
use hyper::body::Incoming;
use talaria_http_listener::{Limits, accept, bind};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio_util::sync::CancellationToken;

const HALF_OPEN: usize = 500;
const ROUNDS: usize = 20;
/// Past this a valid request counts as not answered.
const GIVE_UP: Duration = Duration::from_secs(180);

async fn health(
    _: http::Request<Incoming>,
) -> Result<http::Response<Full<&'static [u8]>>, Infallible> {
    Ok(http::Response::new(Full::new(&br#"{"status":"ok"}"#[..])))
}

/// Connects from `127.0.0.N` (Linux routes all of 127/8 to lo).
async fn connect_from(source: u8, addr: SocketAddr) -> std::io::Result<TcpStream> {
    let socket = TcpSocket::new_v4()?;
    socket.bind(SocketAddr::from((Ipv4Addr::new(127, 0, 0, source), 0)))?;
    socket.connect(addr).await
}

/// `count` connections from `sources` addresses, each with half its headers sent.
async fn hold_half_open(addr: SocketAddr, count: usize, sources: usize) -> Vec<TcpStream> {
    let mut held = Vec::with_capacity(count);
    for index in 0..count {
        let source = 2 + u8::try_from(index % sources).unwrap();
        let mut stream = connect_from(source, addr).await.unwrap();
        let _ = stream.write_all(b"GET /health HTTP/1.1\r\nHo").await;
        held.push(stream);
    }
    held
}

/// Milliseconds from connecting to the end of the answer.
async fn valid_request_ms(addr: SocketAddr) -> Option<f64> {
    let started = Instant::now();
    let exchange = async {
        let mut stream = connect_from(1, addr).await.ok()?;
        stream
            .write_all(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await
            .ok()?;
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await.ok()?;
        answer.ends_with(r#"{"status":"ok"}"#).then_some(())
    };
    tokio::time::timeout(GIVE_UP, exchange).await.ok()??;
    Some(started.elapsed().as_secs_f64() * 1e3)
}

fn shown(ms: Option<f64>) -> String {
    ms.map_or_else(|| format!("> {} s", GIVE_UP.as_secs()), |ms| format!("{ms:.1}"))
}

async fn measure(limits: Limits, half_open: usize, sources: usize) -> (Option<f64>, Vec<f64>) {
    let (listener, addr) = bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let shutdown = CancellationToken::new();
    let server = tokio::spawn(accept(listener, limits, shutdown.clone(), "bench", || {
        hyper::service::service_fn(health)
    }));
    let held = hold_half_open(addr, half_open, sources.max(1)).await;
    let first = valid_request_ms(addr).await;
    let mut rest = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        if let Some(ms) = valid_request_ms(addr).await {
            rest.push(ms);
        }
    }
    drop(held);
    shutdown.cancel();
    let _ = server.await;
    rest.sort_by(f64::total_cmp);
    (first, rest)
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let listeners = [
        (
            "serve (256 connections, 30 s)",
            Limits {
                max_connections: 256,
                read_timeout: Duration::from_secs(30),
            },
        ),
        (
            "webhook, MCP (64, 10 s)",
            Limits {
                max_connections: 64,
                read_timeout: Duration::from_secs(10),
            },
        ),
    ];
    println!(
        "A valid GET /health under half-open connections, ms from connect to the whole answer \
         ({ROUNDS} more after the first):"
    );
    println!("| listener | half-open | sources | first | median | max |");
    println!("|---|---|---|---|---|---|");
    for (name, limits) in listeners {
        for (half_open, sources) in [(0, 1), (HALF_OPEN, 50), (HALF_OPEN, 1)] {
            let (first, rest) = runtime.block_on(measure(limits, half_open, sources));
            let median = rest.get(rest.len() / 2).copied();
            let max = rest.last().copied();
            println!(
                "| {name} | {half_open} | {sources} | {} | {} | {} |",
                shown(first),
                shown(median),
                shown(max)
            );
        }
    }
}
