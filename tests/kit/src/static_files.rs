//! A static file server on loopback: what a plugin index looks like when it
//! is served by any web server. Blocking, one thread per connection, GET only.

use std::io::{self, BufRead as _, BufReader, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// A blocking accept loop on 127.0.0.1 that hands each connection to a
/// handler on a thread of its own, until dropped.
#[derive(Debug)]
pub(crate) struct ThreadServer {
    addr: SocketAddr,
    stopped: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ThreadServer {
    /// Listens on an ephemeral port; `handle` serves one connection.
    pub(crate) fn spawn(
        name: &str,
        handle: impl Fn(TcpStream) + Send + Sync + 'static,
    ) -> io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", 0))?;
        let addr = listener.local_addr()?;
        let stopped = Arc::new(AtomicBool::new(false));
        let stop = Arc::clone(&stopped);
        let handle = Arc::new(handle);
        let thread = std::thread::Builder::new()
            .name(format!("{name}-{}", addr.port()))
            .spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    let handle = Arc::clone(&handle);
                    std::thread::spawn(move || handle(stream));
                }
            })?;
        Ok(Self {
            addr,
            stopped,
            thread: Some(thread),
        })
    }

    /// The address it listens on.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for ThreadServer {
    fn drop(&mut self) {
        self.stopped.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(self.addr);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Serves the files under a directory until dropped.
#[derive(Debug)]
pub struct StaticServer {
    server: ThreadServer,
    paths: Arc<Mutex<Vec<String>>>,
}

impl StaticServer {
    /// Starts serving `root` on 127.0.0.1 (an ephemeral port).
    pub fn spawn(root: impl Into<PathBuf>) -> io::Result<Self> {
        let root = root.into();
        let paths = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&paths);
        let server = ThreadServer::spawn("static-server", move |stream| {
            let _ = serve(stream, &root, &seen);
        })?;
        Ok(Self { server, paths })
    }

    /// `http://127.0.0.1:PORT/`.
    pub fn base_url(&self) -> String {
        format!("http://{}/", self.server.addr())
    }

    /// The paths requested so far, in order.
    pub fn requested(&self) -> Vec<String> {
        self.paths.lock().map(|p| p.clone()).unwrap_or_default()
    }
}

fn serve(stream: TcpStream, root: &Path, seen: &Mutex<Vec<String>>) -> io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 || header.trim().is_empty() {
            break;
        }
    }
    let mut parts = request_line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or("/"));
    let path = target.split('?').next().unwrap_or("/").to_owned();
    if let Ok(mut paths) = seen.lock() {
        paths.push(path.clone());
    }
    let relative = Path::new(path.trim_start_matches('/'));
    let inside = relative
        .components()
        .all(|c| matches!(c, Component::Normal(_)));
    let body = if method == "GET" && inside {
        std::fs::read(root.join(relative)).ok()
    } else {
        None
    };
    let mut stream = stream;
    match body {
        Some(body) => {
            write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nContent-Type: application/octet-stream\r\nConnection: close\r\n\r\n",
                body.len()
            )?;
            stream.write_all(&body)?;
        }
        None => stream.write_all(
            b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        )?,
    }
    stream.flush()
}
