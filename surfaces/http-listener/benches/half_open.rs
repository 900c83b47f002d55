//! How long a valid request waits while half-open connections are held against the listener:
//! `cargo bench -p talaria-http-listener --bench half_open` prints a table of milliseconds from
//! connect to the whole answer of a `GET /health` from 127.0.0.1, with nobody else connected and
//! while 500 clients (from 50 source addresses, 127.0.0.2 …, or from one) connect, send part of
//! their headers and stall, under the limits `talaria serve` and the webhook and MCP listeners
//! use. The first answer is shown apart: it is the one an attack delays. "open" is how many of
//! the 500 were connected, and not closed by the server, 0.2 s after it came.
#![allow(clippy::unwrap_used, clippy::print_stdout)]

use std::convert::Infallible;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use http_body_util::Full;
use hyper::body::Incoming;
use talaria_http_listener::{Limits, accept, bind};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio_util::sync::CancellationToken;

const HALF_OPEN: usize = 500;
const ROUNDS: usize = 20;
/// How long the stalled clients get to connect before the valid request is sent: a listener
/// that has stopped accepting leaves the rest retrying their SYNs, which press on it all the same.
const CONNECT_PATIENCE: Duration = Duration::from_secs(2);
/// How long after the first answer the stalled clients still open are counted.
const SETTLE: Duration = Duration::from_millis(200);
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

/// Stalled clients, each holding its connection until `release` or until the server closes it.
struct Siege {
    release: CancellationToken,
    open: Arc<AtomicUsize>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Siege {
    async fn start(addr: SocketAddr, count: usize, sources: usize) -> Self {
        let release = CancellationToken::new();
        let open = Arc::new(AtomicUsize::new(0));
        let connected = Arc::new(AtomicUsize::new(0));
        let mut tasks = Vec::with_capacity(count);
        for index in 0..count {
            let source = 2 + u8::try_from(index % sources.max(1)).unwrap();
            let (release, open, connected) = (release.clone(), open.clone(), connected.clone());
            tasks.push(tokio::spawn(async move {
                let Ok(mut stream) = connect_from(source, addr).await else {
                    return;
                };
                open.fetch_add(1, Ordering::SeqCst);
                connected.fetch_add(1, Ordering::SeqCst);
                let _ = stream.write_all(b"GET /health HTTP/1.1\r\nHo").await;
                let mut rest = Vec::new();
                tokio::select! {
                    () = release.cancelled() => {}
                    _ = stream.read_to_end(&mut rest) => {}
                }
                open.fetch_sub(1, Ordering::SeqCst);
            }));
        }
        let started = Instant::now();
        while connected.load(Ordering::SeqCst) < count && started.elapsed() < CONNECT_PATIENCE {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Self {
            release,
            open,
            tasks,
        }
    }

    async fn end(self) {
        self.release.cancel();
        for task in self.tasks {
            task.abort();
            let _ = task.await;
        }
    }
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
    ms.map_or_else(
        || format!("> {} s", GIVE_UP.as_secs()),
        |ms| format!("{ms:.1}"),
    )
}

struct Measured {
    first: Option<f64>,
    open_at_first: usize,
    rest: Vec<f64>,
}

async fn measure(limits: Limits, half_open: usize, sources: usize) -> Measured {
    let (listener, addr) = bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let shutdown = CancellationToken::new();
    let server = tokio::spawn(accept(listener, limits, shutdown.clone(), "bench", || {
        hyper::service::service_fn(health)
    }));
    let siege = Siege::start(addr, half_open, sources).await;
    let first = valid_request_ms(addr).await;
    // The clients see the server's closes a moment later.
    tokio::time::sleep(SETTLE).await;
    let open_at_first = siege.open.load(Ordering::SeqCst);
    let mut rest = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        if let Some(ms) = valid_request_ms(addr).await {
            rest.push(ms);
        }
    }
    siege.end().await;
    shutdown.cancel();
    let _ = server.await;
    rest.sort_by(f64::total_cmp);
    Measured {
        first,
        open_at_first,
        rest,
    }
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    // As the servers build theirs: `talaria serve` asks for 30 s, which the
    // header timeout's cap makes 10 s.
    let listeners = [
        (
            "serve (256 connections, 30 s)",
            Limits::new(256, Duration::from_secs(30)),
        ),
        (
            "webhook, MCP (64, 10 s)",
            Limits::new(64, Duration::from_secs(10)),
        ),
    ];
    println!(
        "A valid GET /health under stalled clients, ms from connect to the whole answer \
         ({ROUNDS} more after the first):"
    );
    println!("| listener | stalled | sources | open | first | median | max |");
    println!("|---|---|---|---|---|---|---|");
    for (name, limits) in listeners {
        for (half_open, sources) in [(0, 1), (HALF_OPEN, 50), (HALF_OPEN, 1)] {
            let measured = runtime.block_on(measure(limits, half_open, sources));
            let median = measured.rest.get(measured.rest.len() / 2).copied();
            println!(
                "| {name} | {half_open} | {sources} | {} | {} | {} | {} |",
                measured.open_at_first,
                shown(measured.first),
                shown(median),
                shown(measured.rest.last().copied())
            );
        }
    }
}
