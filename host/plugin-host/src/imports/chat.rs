//! `chat-host`, linked only for components exporting `chat-adapter`: the
//! `host-work` pollable of a connection and `tls-connect`, host TLS checked
//! against the plugin's network grants like its sockets.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::net::TcpStream;
use tokio::sync::{Notify, OnceCell};
use wasmtime::component::Resource;
use wasmtime_wasi::p2::pipe::{AsyncReadStream, AsyncWriteStream};
use wasmtime_wasi::p2::{DynInputStream, DynOutputStream, DynPollable, Pollable, subscribe};

use crate::bindings::HostError;
use crate::bindings::chat_world::talaria::plugin::{chat_host, chat_types};
use crate::log::{LogLevel, LogSource};
use crate::state::{PluginShared, PluginState};

/// How long connecting and the TLS handshake may take (each), at most.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);

/// Bytes a TLS output stream accepts before the guest must wait for them to
/// be written.
const WRITE_BUDGET: usize = 64 << 10;

/// The "host has work" signal of one chat connection (one account).
///
/// Cloneable and cheap; [`raise`](Self::raise) from any thread or task. While
/// raised, the guest's `chat-host.host-work` pollables are ready, so a
/// `next-events` waiting on them returns early. The host lowers it when a
/// `next-events` call returns ([`crate::ChatConnection::next_events`]):
/// whoever raises it should queue its work first, and the caller of
/// `next_events` should look at its queue after each return. A raise after
/// that return keeps it raised, so the next `next-events` returns at once
/// and no wake-up is lost.
#[derive(Clone, Default)]
pub struct HostWork {
    inner: Arc<WorkInner>,
}

#[derive(Default)]
struct WorkInner {
    raised: AtomicBool,
    notify: Notify,
}

impl std::fmt::Debug for HostWork {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostWork")
            .field("raised", &self.is_raised())
            .finish()
    }
}

impl HostWork {
    /// A lowered signal.
    pub fn new() -> Self {
        Self::default()
    }

    /// Says the host has work for the connection: wakes a waiting `next-events`.
    pub fn raise(&self) {
        self.inner.raised.store(true, Ordering::SeqCst);
        self.inner.notify.notify_waiters();
    }

    /// Whether it is raised.
    pub fn is_raised(&self) -> bool {
        self.inner.raised.load(Ordering::SeqCst)
    }

    /// Lowers it (the host does when `next-events` returns; a driver that
    /// took the work may too).
    pub fn lower(&self) {
        self.inner.raised.store(false, Ordering::SeqCst);
    }

    /// Resolves once it is raised (at once when it is).
    pub async fn raised(&self) {
        loop {
            let notified = self.inner.notify.notified();
            tokio::pin!(notified);
            // Registered before the check, so a raise in between is not missed.
            notified.as_mut().enable();
            if self.is_raised() {
                return;
            }
            notified.await;
        }
    }
}

/// One `host-work` pollable handed to the guest.
struct WorkPollable(HostWork);

#[async_trait::async_trait]
impl Pollable for WorkPollable {
    async fn ready(&mut self) {
        self.0.raised().await;
    }
}

/// The TLS client of a host: its trust roots, built on first use.
pub(crate) struct TlsClient {
    ca_file: Option<PathBuf>,
    config: OnceCell<Result<Arc<rustls::ClientConfig>, String>>,
}

impl TlsClient {
    pub(crate) fn new(ca_file: Option<PathBuf>) -> Self {
        Self {
            ca_file,
            config: OnceCell::new(),
        }
    }

    pub(crate) async fn config(&self) -> Result<Arc<rustls::ClientConfig>, String> {
        self.config
            .get_or_init(|| async {
                let ca_file = self.ca_file.clone();
                // Reading the system's certificates is blocking file I/O.
                tokio::task::spawn_blocking(move || client_config(ca_file))
                    .await
                    .map_err(|e| format!("loading the trust roots: {e}"))?
            })
            .await
            .clone()
    }
}

/// The webpki roots, the system's (which honour `SSL_CERT_FILE` and
/// `SSL_CERT_DIR`), and the CAs of `ca_file`.
fn client_config(ca_file: Option<PathBuf>) -> Result<Arc<rustls::ClientConfig>, String> {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
    if let Some(path) = ca_file {
        let shown = path.display();
        let pem = std::fs::read(&path).map_err(|e| format!("reading {shown}: {e}"))?;
        let mut added = 0;
        for cert in CertificateDer::pem_slice_iter(&pem) {
            let cert = cert.map_err(|e| format!("{shown}: {e}"))?;
            roots
                .add(cert)
                .map_err(|e| format!("{shown}: a certificate is not usable as a CA: {e}"))?;
            added += 1;
        }
        if added == 0 {
            return Err(format!("{shown} holds no PEM certificate"));
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS configuration: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// What a store of a chat connection holds for `chat-host`.
pub(crate) struct ChatHostState {
    pub(crate) work: HostWork,
    pub(crate) tls: Arc<TlsClient>,
}

impl chat_types::Host for PluginState {}

impl chat_host::Host for PluginState {
    async fn host_work(&mut self) -> wasmtime::Result<Resource<DynPollable>> {
        let Some(chat) = &self.chat else {
            wasmtime::bail!("chat-host.host-work was called outside a chat connection");
        };
        let work = self.table.push(WorkPollable(chat.work.clone()))?;
        subscribe(&mut self.table, work)
    }

    async fn tls_connect(
        &mut self,
        host: String,
        port: u16,
    ) -> wasmtime::Result<Result<(Resource<DynInputStream>, Resource<DynOutputStream>), HostError>>
    {
        let Some(chat) = &self.chat else {
            return Ok(Err(HostError::Denied(
                "tls-connect works only inside a chat connection".into(),
            )));
        };
        let tls = chat.tls.clone();
        let (plugin, deadline) = (self.host.plugin.clone(), self.host.deadline);
        let stream = match connect(&plugin, &tls, &host, port, deadline).await {
            Ok(stream) => stream,
            Err(error) => return Ok(Err(error)),
        };
        let (reader, writer) = tokio::io::split(stream);
        let input: DynInputStream = Box::new(AsyncReadStream::new(reader));
        let output: DynOutputStream = Box::new(AsyncWriteStream::new(WRITE_BUDGET, writer));
        let input = self.table.push(input)?;
        let output = self.table.push(output)?;
        Ok(Ok((input, output)))
    }
}

/// A verified TLS stream to `host`:`port`, if the grants allow it.
async fn connect(
    plugin: &PluginShared,
    tls: &TlsClient,
    host: &str,
    port: u16,
    deadline: Instant,
) -> Result<tokio_rustls::client::TlsStream<TcpStream>, HostError> {
    let target = format!("{host}:{port}");
    let denied = || {
        let message = format!("tls-connect to {target} denied: not in the network grants");
        plugin.log.push(LogLevel::Warn, LogSource::Host, &message);
        HostError::Denied(message)
    };
    let failed = |what: &str, e: &dyn std::fmt::Display| {
        HostError::Failed(format!("tls-connect to {target}: {what}: {e}"))
    };
    if plugin.net.is_empty() {
        return Err(denied());
    }
    let name = ServerName::try_from(host.to_owned()).map_err(|e| failed("invalid name", &e))?;
    let limit = CONNECT_TIMEOUT.min(deadline.saturating_duration_since(Instant::now()));
    let addrs: Vec<SocketAddr> = tokio::time::timeout(limit, tokio::net::lookup_host((host, port)))
        .await
        .map_err(|e| failed("resolving", &e))?
        .map_err(|e| failed("resolving", &e))?
        .collect();
    // Every address is checked as a socket connecting to it would be.
    let mut allowed = Vec::new();
    for addr in addrs {
        if plugin.net.allows(addr).await {
            allowed.push(addr);
        }
    }
    if allowed.is_empty() {
        return Err(denied());
    }
    let tcp = tokio::time::timeout(limit, TcpStream::connect(&allowed[..]))
        .await
        .map_err(|e| failed("connecting", &e))?
        .map_err(|e| failed("connecting", &e))?;
    let config = tls.config().await.map_err(|e| failed("trust roots", &e))?;
    let connector = tokio_rustls::TlsConnector::from(config);
    tokio::time::timeout(limit, connector.connect(name, tcp))
        .await
        .map_err(|e| failed("TLS handshake", &e))?
        .map_err(|e| failed("TLS handshake", &e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_raise_wakes_a_waiter_and_stays_until_lowered() {
        let work = HostWork::new();
        let waiter = tokio::spawn({
            let work = work.clone();
            async move { work.raised().await }
        });
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        work.raise();
        tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .unwrap()
            .unwrap();
        // Still raised: the next wait returns at once.
        tokio::time::timeout(Duration::from_secs(1), work.raised())
            .await
            .unwrap();
        work.lower();
        assert!(!work.is_raised());
        assert!(
            tokio::time::timeout(Duration::from_millis(50), work.raised())
                .await
                .is_err()
        );
    }
}
