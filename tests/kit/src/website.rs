//! A small website on loopback for the web tools' tests: fixed pages (a
//! search engine's recorded answer, an article, a redirect) by path, every
//! request recorded with its headers and body. Blocking, one thread per
//! connection, HTTP/1.1 with `Connection: close`.

use std::collections::BTreeMap;
use std::io::{self, BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};

use crate::static_files::ThreadServer;

/// One page: what a path answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// The status code.
    pub status: u16,
    /// Extra headers (`content-type` included).
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl Page {
    /// A 200 page with this content type.
    pub fn new(content_type: &str, body: impl Into<Vec<u8>>) -> Self {
        Self {
            status: 200,
            headers: vec![("content-type".into(), content_type.into())],
            body: body.into(),
        }
    }

    /// An HTML page (UTF-8).
    pub fn html(body: impl Into<Vec<u8>>) -> Self {
        Self::new("text/html; charset=utf-8", body)
    }

    /// A JSON answer.
    pub fn json(value: &serde_json::Value) -> Self {
        Self::new("application/json", value.to_string())
    }

    /// A redirect to `location` (302).
    pub fn redirect(location: &str) -> Self {
        Self {
            status: 302,
            headers: vec![("location".into(), location.into())],
            body: Vec::new(),
        }
    }

    /// The same page with another status code.
    pub fn with_status(mut self, status: u16) -> Self {
        self.status = status;
        self
    }
}

/// A request the site received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Visit {
    /// `GET`, `POST`…
    pub method: String,
    /// The path with its query.
    pub target: String,
    /// Header names (lower case) and values.
    pub headers: BTreeMap<String, String>,
    /// The body.
    pub body: Vec<u8>,
}

impl Visit {
    /// The path without the query.
    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or_default()
    }
}

/// Serves its pages until dropped; unknown paths answer 404.
#[derive(Debug)]
pub struct WebSite {
    server: ThreadServer,
    visits: Arc<Mutex<Vec<Visit>>>,
}

impl WebSite {
    /// Starts serving `pages` (by path, without the query) on 127.0.0.1.
    pub fn spawn(pages: BTreeMap<String, Page>) -> io::Result<Self> {
        let visits = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&visits);
        let server = ThreadServer::spawn("website", move |stream| {
            let _ = serve(stream, &pages, &seen);
        })?;
        Ok(Self { server, visits })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.server.addr())
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.server.addr().port()
    }

    /// The requests so far, in order.
    pub fn visits(&self) -> Vec<Visit> {
        self.visits.lock().map(|v| v.clone()).unwrap_or_default()
    }
}

fn serve(
    stream: TcpStream,
    pages: &BTreeMap<String, Page>,
    seen: &Mutex<Vec<Visit>>,
) -> io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    let mut headers = BTreeMap::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 || line.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_owned());
        }
    }
    let length: usize = headers
        .get("content-length")
        .and_then(|l| l.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length.min(1 << 20)];
    reader.read_exact(&mut body)?;
    let mut parts = request_line.split_whitespace();
    let visit = Visit {
        method: parts.next().unwrap_or_default().to_owned(),
        target: parts.next().unwrap_or("/").to_owned(),
        headers,
        body,
    };
    let page = pages.get(visit.path()).cloned();
    if let Ok(mut visits) = seen.lock() {
        visits.push(visit);
    }
    let page = page.unwrap_or_else(|| Page::new("text/plain", "not found").with_status(404));
    let mut stream = stream;
    write!(stream, "HTTP/1.1 {} X\r\n", page.status)?;
    for (name, value) in &page.headers {
        write!(stream, "{name}: {value}\r\n")?;
    }
    write!(
        stream,
        "content-length: {}\r\nconnection: close\r\n\r\n",
        page.body.len()
    )?;
    stream.write_all(&page.body)?;
    stream.flush()
}
