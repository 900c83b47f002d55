use std::convert::Infallible;
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicUsize, Ordering};

use http_body_util::Full;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

use super::*;

async fn hello(
    _: http::Request<Incoming>,
) -> Result<http::Response<Full<&'static [u8]>>, Infallible> {
    Ok(http::Response::new(Full::new(&b"hello"[..])))
}

/// Connects from `127.0.0.N` (Linux routes all of 127/8 to lo).
async fn connect_from(source: u8, addr: SocketAddr) -> std::io::Result<TcpStream> {
    let socket = TcpSocket::new_v4()?;
    socket.bind(SocketAddr::from((Ipv4Addr::new(127, 0, 0, source), 0)))?;
    socket.connect(addr).await
}

/// A whole `GET /` from `127.0.0.N`, the connection closed after it.
async fn answer_from(source: u8, addr: SocketAddr) -> String {
    let mut stream = connect_from(source, addr).await.unwrap();
    stream
        .write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).await.unwrap();
    text
}

async fn answer(addr: SocketAddr) -> String {
    answer_from(1, addr).await
}

async fn listen(limits: Limits) -> (SocketAddr, CancellationToken, tokio::task::JoinHandle<()>) {
    let (listener, addr) = bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let shutdown = CancellationToken::new();
    let server = tokio::spawn(accept(listener, limits, shutdown.clone(), "test", || {
        hyper::service::service_fn(hello)
    }));
    (addr, shutdown, server)
}

async fn stop(shutdown: CancellationToken, server: tokio::task::JoinHandle<()>) {
    shutdown.cancel();
    tokio::time::timeout(Duration::from_secs(5), server)
        .await
        .unwrap()
        .unwrap();
}

/// Waits up to a minute for `done`.
async fn until(what: &str, done: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(std::time::Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[test]
fn the_bearer_token_is_read_in_any_case_of_the_scheme() {
    let mut headers = http::HeaderMap::new();
    assert_eq!(bearer_token(&headers), None);
    for (value, token) in [
        ("Bearer abc", Some("abc")),
        ("bearer  abc ", Some("abc")),
        ("Basic abc", None),
        ("Bearer", None),
    ] {
        headers.insert(http::header::AUTHORIZATION, value.parse().unwrap());
        assert_eq!(bearer_token(&headers), token, "{value}");
    }
}

#[test]
fn servers_get_a_short_header_timeout_and_the_default_caps() {
    let limits = Limits::new(64, Duration::from_secs(30));
    assert_eq!(limits.read_timeout, Limits::MAX_HEADER_TIMEOUT);
    assert_eq!(
        Limits::new(64, Duration::from_secs(2)).read_timeout,
        Duration::from_secs(2)
    );
    assert_eq!(limits.max_unserved, Limits::DEFAULT_MAX_UNSERVED);
    assert_eq!(
        limits.max_unserved_per_source,
        Limits::DEFAULT_MAX_UNSERVED_PER_SOURCE
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_client_is_cut_off_at_its_header_timeout_and_the_listener_stops() {
    let (addr, shutdown, server) = listen(Limits {
        max_connections: 1,
        read_timeout: Duration::from_millis(300),
        max_unserved: 8,
        max_unserved_per_source: 8,
    })
    .await;
    assert!(answer(addr).await.ends_with("hello"));

    // A client stalled in its headers is cut off, without an answer.
    let mut stalled = TcpStream::connect(addr).await.unwrap();
    stalled.write_all(b"GET / HTTP/1.1\r\nHo").await.unwrap();
    assert!(answer(addr).await.ends_with("hello"));
    let mut rest = Vec::new();
    let _ = stalled.read_to_end(&mut rest).await;
    assert!(rest.is_empty(), "{rest:?}");

    stop(shutdown, server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kept_alive_connection_is_served_again() {
    let (addr, shutdown, server) = listen(Limits {
        max_connections: 1,
        read_timeout: Duration::from_secs(30),
        max_unserved: 8,
        max_unserved_per_source: 1,
    })
    .await;
    let mut stream = connect_from(2, addr).await.unwrap();
    let mut answers = String::new();
    for close in ["", "Connection: close\r\n"] {
        let request = format!("GET / HTTP/1.1\r\nHost: x\r\n{close}\r\n");
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut buf = [0u8; 1024];
        while !answers.ends_with("hello") {
            let n = stream.read(&mut buf).await.unwrap();
            assert!(n > 0, "closed after {answers:?}");
            answers.push_str(std::str::from_utf8(&buf[..n]).unwrap());
        }
        answers.push('\n');
    }
    assert_eq!(answers.matches("HTTP/1.1 200").count(), 2, "{answers}");
    stop(shutdown, server).await;
}

/// Raises the soft limit on open descriptors to the hard one: the siege holds
/// about a thousand sockets. Raising it cannot break the tests beside it.
fn enough_descriptors() {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
    if soft < hard {
        setrlimit(Resource::RLIMIT_NOFILE, hard, hard).unwrap();
    }
}

/// Clients that connect, send part of their headers and stall, each until
/// the server closes its connection or the siege ends; counted per source.
struct Siege {
    open: Arc<Vec<AtomicUsize>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Siege {
    /// `count` clients from `sources` (one byte each, `127.0.0.N`), taken in turn.
    async fn start(addr: SocketAddr, count: usize, sources: &[u8]) -> Self {
        let open: Arc<Vec<AtomicUsize>> = Arc::new((0..256).map(|_| AtomicUsize::new(0)).collect());
        let connected = Arc::new(AtomicUsize::new(0));
        let mut tasks = Vec::with_capacity(count);
        for index in 0..count {
            let source = sources[index % sources.len()];
            let (open, connected) = (open.clone(), connected.clone());
            tasks.push(tokio::spawn(async move {
                let mut stream = connect_from(source, addr).await.unwrap();
                open[usize::from(source)].fetch_add(1, Ordering::SeqCst);
                connected.fetch_add(1, Ordering::SeqCst);
                let _ = stream.write_all(b"GET / HTTP/1.1\r\nHo").await;
                let mut rest = Vec::new();
                let _ = stream.read_to_end(&mut rest).await;
                open[usize::from(source)].fetch_sub(1, Ordering::SeqCst);
            }));
        }
        until("the stalled clients connect", || {
            connected.load(Ordering::SeqCst) == count
        })
        .await;
        Self { open, tasks }
    }

    fn open(&self) -> usize {
        self.open.iter().map(|n| n.load(Ordering::SeqCst)).sum()
    }

    fn most_from_one_source(&self) -> usize {
        self.open
            .iter()
            .map(|n| n.load(Ordering::SeqCst))
            .max()
            .unwrap_or(0)
    }

    fn end(self) {
        for task in self.tasks {
            task.abort();
        }
    }
}

/// The answer to a valid request, which must come long before any stalled
/// client's header timeout (600 s) could have made room for it.
async fn answered(addr: SocketAddr) -> String {
    tokio::time::timeout(Duration::from_secs(60), answer(addr))
        .await
        .unwrap_or_else(|_| panic!("the valid request waits behind the stalled clients"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_valid_request_is_answered_while_500_stalled_clients_are_held_to_the_caps() {
    enough_descriptors();
    // Header timeouts far beyond the test: only the caps can make room.
    let limits = Limits {
        max_connections: 4,
        read_timeout: Duration::from_secs(600),
        max_unserved: 64,
        max_unserved_per_source: 8,
    };

    // From 100 sources, 5 each: the total is what holds.
    let (addr, shutdown, server) = listen(limits).await;
    let sources: Vec<u8> = (2..102).collect();
    let siege = Siege::start(addr, 500, &sources).await;
    assert!(answered(addr).await.ends_with("hello"));
    until("the total cap sheds the oldest stalled clients", || {
        siege.open() <= limits.max_unserved
    })
    .await;
    assert!(
        siege.open() >= limits.max_unserved / 2,
        "only what was over the cap is shed: {} open",
        siege.open()
    );
    assert!(siege.most_from_one_source() <= limits.max_unserved_per_source);
    siege.end();
    stop(shutdown, server).await;

    // From one source: it keeps its share, the rest are closed at once.
    let (addr, shutdown, server) = listen(limits).await;
    let siege = Siege::start(addr, 500, &[200]).await;
    assert!(answered(addr).await.ends_with("hello"));
    until(
        "the per-source cap closes the newest stalled clients",
        || siege.open() == limits.max_unserved_per_source,
    )
    .await;
    // Another source is still admitted beside it.
    let second = Siege::start(addr, 3, &[201]).await;
    until("another source keeps its connections", || {
        second.open() == 3
    })
    .await;
    assert_eq!(siege.open(), limits.max_unserved_per_source);
    siege.end();
    second.end();
    stop(shutdown, server).await;
}
