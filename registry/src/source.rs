//! Where an index's files come from: a local directory (a path or `file://`)
//! or static files over HTTP(S). Every read is bounded.

use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use futures_util::StreamExt as _;

use crate::error::RegistryError;

/// Largest index file (`index.json`, `plugins/<name>.json`) read.
pub const MAX_INDEX_FILE_BYTES: u64 = 8 * 1024 * 1024;

/// An index location.
#[derive(Debug, Clone)]
pub enum Location {
    /// A directory on this machine.
    Dir(PathBuf),
    /// A base URL (ending in `/`).
    Http {
        /// The base URL.
        base: String,
        /// The shared client.
        client: reqwest::Client,
    },
}

impl Location {
    /// Parses what the user configured: `http(s)://…`, `file://…` or a path.
    pub fn parse(text: &str) -> Result<Self, RegistryError> {
        if text.starts_with("http://") || text.starts_with("https://") {
            let mut base = text.to_owned();
            if !base.ends_with('/') {
                base.push('/');
            }
            return Ok(Self::Http {
                base,
                client: client()?,
            });
        }
        if let Some((scheme, _)) = text.split_once("://")
            && scheme != "file"
        {
            return Err(RegistryError::Settings(format!(
                "'{text}': an index is a directory, file://, http:// or https:// location"
            )));
        }
        let path = text.strip_prefix("file://").unwrap_or(text);
        Ok(Self::Dir(PathBuf::from(path)))
    }

    /// Reads `relative` (a path under the index root, or an absolute
    /// http(s) URL for package downloads), at most `limit` bytes.
    pub async fn fetch(&self, relative: &str, limit: u64) -> Result<Vec<u8>, RegistryError> {
        if relative.starts_with("http://") || relative.starts_with("https://") {
            return http_get(&client()?, relative, limit).await;
        }
        let relative = checked_relative(relative)?;
        match self {
            Self::Dir(root) => read_file(&root.join(relative), limit).await,
            Self::Http { base, client } => {
                let url = format!("{base}{}", relative.to_string_lossy());
                http_get(client, &url, limit).await
            }
        }
    }

    /// How to show the location.
    pub fn describe(&self, relative: &str) -> String {
        match self {
            Self::Dir(root) => root.join(relative).display().to_string(),
            Self::Http { base, .. } => format!("{base}{relative}"),
        }
    }
}

/// Index-relative locations may not climb out of the index.
fn checked_relative(relative: &str) -> Result<PathBuf, RegistryError> {
    let path = Path::new(relative);
    let plain = !relative.is_empty()
        && path
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if plain {
        Ok(path.to_path_buf())
    } else {
        Err(RegistryError::Format {
            origin: relative.to_owned(),
            message: "a location inside an index must be a relative path without '..'".into(),
        })
    }
}

async fn read_file(path: &Path, limit: u64) -> Result<Vec<u8>, RegistryError> {
    let shown = path.display().to_string();
    let meta = match tokio::fs::metadata(path).await {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(RegistryError::Missing { url: shown });
        }
        Err(source) => return Err(RegistryError::io(path)(source)),
    };
    if meta.len() > limit {
        return Err(RegistryError::TooLarge { url: shown, limit });
    }
    tokio::fs::read(path).await.map_err(RegistryError::io(path))
}

async fn http_get(
    client: &reqwest::Client,
    url: &str,
    limit: u64,
) -> Result<Vec<u8>, RegistryError> {
    let failed = |message: String| RegistryError::Fetch {
        url: url.to_owned(),
        message,
    };
    let response = client
        .get(url)
        .send()
        .await
        .map_err(|e| failed(describe(&e)))?;
    let status = response.status();
    if status == reqwest::StatusCode::NOT_FOUND || status == reqwest::StatusCode::GONE {
        return Err(RegistryError::Missing {
            url: url.to_owned(),
        });
    }
    if !status.is_success() {
        return Err(failed(format!("HTTP {status}")));
    }
    if response.content_length().is_some_and(|len| len > limit) {
        return Err(RegistryError::TooLarge {
            url: url.to_owned(),
            limit,
        });
    }
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| failed(describe(&e)))?;
        if (body.len() + chunk.len()) as u64 > limit {
            return Err(RegistryError::TooLarge {
                url: url.to_owned(),
                limit,
            });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The error and its causes on one line (reqwest's Display hides the cause).
fn describe(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

fn client() -> Result<reqwest::Client, RegistryError> {
    static CLIENT: std::sync::OnceLock<reqwest::Client> = std::sync::OnceLock::new();
    if let Some(client) = CLIENT.get() {
        return Ok(client.clone());
    }
    // Fails only when a process-wide provider is already installed, which is as good.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(15))
        .read_timeout(Duration::from_secs(60))
        .user_agent(concat!("talaria/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| RegistryError::Fetch {
            url: "(client)".into(),
            message: describe(&e),
        })?;
    Ok(CLIENT.get_or_init(|| client).clone())
}
