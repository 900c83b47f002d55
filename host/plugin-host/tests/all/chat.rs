//! Chat adapters (`chat-adapter-plugin`): `chat-probe` against a line
//! protocol server on 127.0.0.1 — plain TCP through `wasi:sockets`, TLS
//! through `chat-host.tls-connect` with a CA made for the test, `host-work`,
//! the grants, and traps.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

use crate::common::*;
use talaria_plugin_host::{
    CallError, ChatConnection, ChatError, ChatKind, HostOptions, IdStrength, KindState,
    LoadedPlugin, NEXT_EVENTS_MARGIN, Outbound, PluginChatAdapters, PluginHost, PluginKind,
    PluginSets, SendOutcome, WebhookRequest, check_allowed_users,
};
use talaria_testkit::pki::{TestPki, make_test_pki};

/// Long enough for anything that should happen to happen.
const PATIENCE: Duration = Duration::from_secs(20);

fn chat_probe_dir() -> PathBuf {
    plugin_dir("test/chat-probe")
}

/// `chat-probe` named `name`, asking for (and granted) `network`.
fn probe(root: &Path, name: &str, network: &str) -> PathBuf {
    variant(&chat_probe_dir(), &root.join(name), |m| {
        with_capability(
            m.replacen("name = \"chat-probe\"", &format!("name = \"{name}\""), 1),
            &format!("network = [\"{network}\"]"),
        )
    })
}

async fn load_probe(host: &PluginHost, root: &Path, network: &str) -> LoadedPlugin {
    load_all(host, &probe(root, "chat-probe", network)).await
}

/// The config section of a connection to `port`.
fn section(port: u16, tls: bool) -> BTreeMap<String, String> {
    [
        ("host".to_owned(), "127.0.0.1".to_owned()),
        ("port".to_owned(), port.to_string()),
        ("tls".to_owned(), tls.to_string()),
    ]
    .into()
}

/// The server's end of one connection.
struct Peer {
    lines: tokio::io::Lines<BufReader<Box<dyn AsyncRead + Unpin + Send>>>,
    writer: Box<dyn AsyncWrite + Unpin + Send>,
}

impl Peer {
    fn new<S: AsyncRead + AsyncWrite + Unpin + Send + 'static>(stream: S) -> Self {
        let (reader, writer) = tokio::io::split(stream);
        let reader: Box<dyn AsyncRead + Unpin + Send> = Box::new(reader);
        Self {
            lines: BufReader::new(reader).lines(),
            writer: Box::new(writer),
        }
    }

    async fn accept(listener: &TcpListener) -> Self {
        let (stream, _) = tokio::time::timeout(PATIENCE, listener.accept())
            .await
            .expect("the adapter connects")
            .unwrap();
        Self::new(stream)
    }

    async fn line(&mut self) -> String {
        tokio::time::timeout(PATIENCE, self.lines.next_line())
            .await
            .expect("a line from the adapter")
            .unwrap()
            .expect("the adapter keeps the connection open")
    }

    async fn say(&mut self, text: &str) {
        self.writer.write_all(text.as_bytes()).await.unwrap();
        self.writer.flush().await.unwrap();
    }
}

/// A probe loaded and connected (over plain TCP) to a server of the test's.
struct Opened {
    _root: tempfile::TempDir,
    listener: TcpListener,
    port: u16,
    plugin: LoadedPlugin,
    conn: ChatConnection,
    peer: Peer,
}

async fn open_probe() -> Opened {
    let root = tempfile::tempdir().unwrap();
    let host = cached_host(root.path());
    let (listener, port) = bind().await;
    let plugin = load_probe(&host, root.path(), &format!("127.0.0.1:{port}")).await;
    let conn = ChatConnection::open(&plugin, &section(port, false), 0)
        .await
        .unwrap();
    let peer = Peer::accept(&listener).await;
    Opened {
        _root: root,
        listener,
        port,
        plugin,
        conn,
        peer,
    }
}

async fn bind() -> (TcpListener, u16) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    (listener, port)
}

/// Events until `n` arrived (they may come in several reads).
async fn events(conn: &mut ChatConnection, n: usize) -> Vec<talaria_plugin_host::InboundMessage> {
    let mut all = Vec::new();
    let start = Instant::now();
    while all.len() < n && start.elapsed() < PATIENCE {
        all.extend(conn.next_events(Duration::from_secs(5)).await.unwrap());
    }
    assert_eq!(all.len(), n, "{all:?}");
    all
}

#[tokio::test(flavor = "multi_thread")]
async fn a_chat_adapter_reports_its_platform_at_load() {
    let root = tempfile::tempdir().unwrap();
    let host = cached_host(root.path());
    let first = load_probe(&host, root.path(), "127.0.0.1:1").await;
    assert_eq!(first.kinds(), &[PluginKind::Chat]);
    assert!(first.serves(PluginKind::Chat));
    assert_eq!(first.chat_platform(), Some("loopback"));
    assert_eq!(first.platform(), None, "not a stateless platform adapter");
    let statuses = first.kind_statuses();
    assert_eq!(statuses.len(), 1);
    assert_eq!(statuses[0].state, KindState::Loaded);

    // A second adapter of the same platform is dropped, and said so.
    let second = load_all(&host, &probe(root.path(), "chat-probe-2", "127.0.0.1:1")).await;
    let noop = load_all(&host, &noop_dir()).await;
    let adapters = PluginChatAdapters::new(&[noop.clone(), first.clone(), second.clone()]);
    assert_eq!(adapters.adapters().len(), 1);
    assert_eq!(adapters.find("loopback").unwrap().name(), "chat-probe");
    assert!(adapters.find("irc").is_none());
    assert_eq!(adapters.clashes().len(), 1);
    assert!(adapters.clashes()[0].contains("chat-probe-2"));
    assert!(second.log().contains("already serves loopback"));

    let sets = PluginSets::build(&[noop.clone(), first], root.path(), "gateway");
    assert!(sets.chats.is_some_and(|c| c.find("loopback").is_some()));
    assert!(
        PluginSets::build(&[noop], root.path(), "cli")
            .chats
            .is_none()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_connection_receives_sends_and_reconnects() {
    let Opened {
        _root,
        listener,
        port,
        plugin,
        mut conn,
        mut peer,
    } = open_probe().await;
    assert_eq!(peer.line().await, "HELLO 0");
    let caps = conn.capabilities().await.unwrap();
    assert_eq!(
        (caps.platform.as_str(), caps.max_message_length),
        ("loopback", 400)
    );

    peer.say("MSG @alice alice hello there\nMSG #room bob talaria: hi\nMSG #room carol chatter\n")
        .await;
    let got = events(&mut conn, 3).await;
    assert_eq!(got[0].chat.kind, ChatKind::Dm);
    assert_eq!(got[0].chat.id, "@alice");
    assert_eq!(got[0].sender.id, "alice");
    assert_eq!(got[0].text, "hello there");
    assert!(got[0].addressed, "a DM is always addressed");
    assert_eq!(got[0].raw, "\"MSG @alice alice hello there\"");
    assert_eq!(got[1].chat.kind, ChatKind::Group);
    assert!(got[1].addressed, "mentioned by nick");
    assert!(!got[2].addressed);
    assert_eq!(got[2].message_id.as_deref(), Some("in3"));

    let hello = Outbound {
        chat_id: "#room".into(),
        text: "hi all".into(),
        ..Outbound::default()
    };
    assert_eq!(
        conn.send(hello.clone()).await.unwrap(),
        SendOutcome::Sent(Some("out1".into()))
    );
    assert_eq!(peer.line().await, "SEND #room hi all");

    // The server asks to slow down: the next send is to be retried later.
    peer.say("SLOWDOWN 1500\n").await;
    let quiet = conn.next_events(Duration::from_millis(500)).await.unwrap();
    assert!(quiet.is_empty());
    assert_eq!(
        conn.send(hello.clone()).await.unwrap(),
        SendOutcome::Retryable(Duration::from_millis(1500))
    );
    assert_eq!(
        conn.send(hello.clone()).await.unwrap(),
        SendOutcome::Sent(Some("out2".into()))
    );
    assert_eq!(peer.line().await, "SEND #room hi all");
    let gone = Outbound {
        chat_id: "#gone".into(),
        ..hello.clone()
    };
    assert!(matches!(
        conn.send(gone).await.unwrap(),
        SendOutcome::DeadTarget(_)
    ));

    conn.typing("#room", None).await.unwrap();
    assert_eq!(peer.line().await, "TYPING #room");
    let info = conn.chat_info("@alice").await.unwrap();
    assert_eq!((info.chat.kind, info.members), (ChatKind::Dm, Some(2)));
    let refused = conn.chat_info("").await.unwrap_err();
    assert!(
        matches!(
            &refused,
            ChatError::Adapter {
                call: "chat-info",
                ..
            }
        ),
        "{refused}"
    );
    assert!(!refused.is_fatal() && conn.is_usable());
    assert_eq!(
        conn.fetch_attachment("a1", 100).await.unwrap(),
        b"attachment a1"
    );
    assert!(conn.fetch_attachment("a1", 3).await.is_err());
    // More than the limit is refused by the host even when the adapter sends it.
    let over = conn.fetch_attachment("big:50", 10).await.unwrap_err();
    assert!(over.to_string().contains("over the limit of 10"), "{over}");
    let (response, hooked) = conn
        .webhook(WebhookRequest {
            method: "POST".into(),
            path: "/hook".into(),
            headers: Vec::new(),
            body: b"MSG @dave dave via hook".to_vec(),
        })
        .await
        .unwrap();
    assert_eq!(response.status, 200);
    assert_eq!(response.body, b"POST /hook: 1 events");
    assert_eq!(hooked[0].text, "via hook");

    // The server goes away: next-events fails, and a new connection is opened.
    drop(peer);
    let lost = tokio::time::timeout(PATIENCE, conn.next_events(Duration::from_secs(10)))
        .await
        .unwrap()
        .unwrap_err();
    assert!(
        matches!(
            &lost,
            ChatError::Adapter {
                call: "next-events",
                ..
            }
        ),
        "{lost}"
    );
    assert!(lost.to_string().contains("closed"), "{lost}");
    drop(conn);
    let mut conn = ChatConnection::open(&plugin, &section(port, false), 1)
        .await
        .unwrap();
    let mut peer = Peer::accept(&listener).await;
    assert_eq!(peer.line().await, "HELLO 1");
    conn.close().await.unwrap();
    assert_eq!(peer.line().await, "BYE");
    assert!(matches!(
        conn.capabilities().await,
        Err(ChatError::Closed { .. })
    ));
}

#[tokio::test(flavor = "multi_thread")]
async fn host_work_ends_a_long_wait() {
    let Opened {
        _root,
        listener,
        port,
        plugin,
        mut conn,
        peer: _peer,
    } = open_probe().await;

    let long = Duration::from_secs(60);
    let work = conn.work();
    let raiser = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        work.raise();
    });
    let start = Instant::now();
    // On a task of its own, as a gateway runs it (the connection and its calls are Send).
    let (mut conn, got) = tokio::spawn(async move {
        let got = conn.next_events(long).await;
        (conn, got)
    })
    .await
    .unwrap();
    assert!(got.unwrap().is_empty());
    assert!(
        start.elapsed() < long / 2,
        "returned after {:?}",
        start.elapsed()
    );
    raiser.join().unwrap();
    assert!(
        !conn.work().is_raised(),
        "lowered once next-events returned"
    );

    // Raised before the call (work queued while no call was waiting): the
    // next call returns at once too.
    conn.work().raise();
    let start = Instant::now();
    conn.next_events(long).await.unwrap();
    assert!(start.elapsed() < long / 2);
    // Lowered: a short wait runs to its timeout.
    let start = Instant::now();
    conn.next_events(Duration::from_millis(300)).await.unwrap();
    assert!(start.elapsed() >= Duration::from_millis(250));

    // Each connection's section overlays the manifest's [config] in its own
    // instance only.
    let mut renamed = section(port, false);
    renamed.insert("platform".into(), "renamed".into());
    let mut other = ChatConnection::open(&plugin, &renamed, 0).await.unwrap();
    let _other_peer = Peer::accept(&listener).await;
    assert_eq!(other.capabilities().await.unwrap().platform, "renamed");
    assert_eq!(conn.capabilities().await.unwrap().platform, "loopback");
    assert_eq!(plugin.chat_platform(), Some("loopback"));
}

#[tokio::test(flavor = "multi_thread")]
async fn next_events_is_cut_off_after_its_timeout_and_margin() {
    let root = tempfile::tempdir().unwrap();
    let host = cached_host(root.path());
    let (listener, port) = bind().await;
    let plugin = load_probe(&host, root.path(), &format!("127.0.0.1:{port}")).await;
    let mut stalling = section(port, false);
    stalling.insert("stall".into(), "true".into());
    let mut conn = ChatConnection::open(&plugin, &stalling, 0).await.unwrap();
    let _peer = Peer::accept(&listener).await;

    // The adapter ignores its 100 ms: the host ends the call after 100 ms +
    // NEXT_EVENTS_MARGIN (not the plugin's 30 s limit), and the instance with it.
    let start = Instant::now();
    let error = conn
        .next_events(Duration::from_millis(100))
        .await
        .unwrap_err();
    let elapsed = start.elapsed();
    let limit = Duration::from_millis(100) + NEXT_EVENTS_MARGIN;
    assert!(elapsed >= limit && elapsed < limit * 3, "{elapsed:?}");
    match &error {
        ChatError::Call(CallError::Timeout {
            tool, timeout_ms, ..
        }) => {
            assert_eq!((tool.as_str(), *timeout_ms), ("next-events", 5100));
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
    assert!(matches!(
        conn.send(Outbound::default()).await,
        Err(ChatError::Dead { .. })
    ));
}

#[tokio::test(flavor = "multi_thread")]
async fn ungranted_ports_are_denied() {
    let root = tempfile::tempdir().unwrap();
    let host = cached_host(root.path());
    let (listener, port) = bind().await;
    let (_other, other_port) = bind().await;
    let plugin = load_probe(&host, root.path(), &format!("127.0.0.1:{other_port}")).await;

    let tcp = ChatConnection::open(&plugin, &section(port, false), 0)
        .await
        .unwrap_err();
    assert!(
        matches!(&tcp, ChatError::Adapter { call: "open", .. }),
        "{tcp}"
    );
    assert!(tcp.to_string().contains("access-denied"), "{tcp}");

    let tls = ChatConnection::open(&plugin, &section(port, true), 0)
        .await
        .unwrap_err();
    let expected = format!("tls-connect to 127.0.0.1:{port} denied");
    assert!(tls.to_string().contains(&expected), "{tls}");
    assert!(tls.to_string().contains("denied by the host"), "{tls}");
    assert!(plugin.log().contains(&expected));

    // Nothing reached the server.
    assert!(
        tokio::time::timeout(Duration::from_millis(200), listener.accept())
            .await
            .is_err()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_trap_kills_the_connection() {
    let Opened {
        _root,
        listener: _listener,
        port: _,
        plugin: _plugin,
        mut conn,
        peer: _peer,
    } = open_probe().await;

    let panic = Outbound {
        chat_id: "!panic".into(),
        text: "boom".into(),
        ..Outbound::default()
    };
    let trapped = conn.send(panic).await.unwrap_err();
    match &trapped {
        ChatError::Call(CallError::Trap { tool, message, .. }) => {
            assert_eq!(tool, "send");
            assert!(message.contains("asked to panic"), "{message}");
        }
        other => panic!("expected a trap, got {other:?}"),
    }
    assert!(trapped.is_fatal() && !conn.is_usable());
    let later = conn.capabilities().await.unwrap_err();
    assert!(matches!(&later, ChatError::Dead { reason, .. } if reason.contains("asked to panic")));
}

fn acceptor(pki: &TestPki) -> tokio_rustls::TlsAcceptor {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&pki.cert)
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let key = PrivateKeyDer::from_pem_file(&pki.key).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
    tokio_rustls::TlsAcceptor::from(Arc::new(config))
}

#[tokio::test(flavor = "multi_thread")]
async fn tls_connect_verifies_against_the_hosts_roots() {
    let root = tempfile::tempdir().unwrap();
    let pki = make_test_pki(root.path()).expect("the openssl CLI makes a test PKI");
    let (listener, port) = bind().await;
    let acceptor = acceptor(&pki);
    let network = format!("127.0.0.1:{port}");
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("plugin-host-test-cache");

    // With the test CA injected, the handshake verifies and lines flow both ways.
    let options = HostOptions::new(&cache, root.path().join("data")).with_tls_ca_file(&pki.ca);
    let host = PluginHost::new(options).unwrap();
    let plugin = load_probe(&host, root.path(), &network).await;
    let server = tokio::spawn({
        let acceptor = acceptor.clone();
        async move {
            let (stream, _) = listener.accept().await.unwrap();
            let tls = acceptor.accept(stream).await.unwrap();
            let mut peer = Peer::new(tls);
            assert_eq!(peer.line().await, "HELLO 0");
            peer.say("MSG @erin erin over tls\n").await;
            assert_eq!(peer.line().await, "SEND @erin secret");
            (peer, listener)
        }
    });
    let mut conn = tokio::time::timeout(
        PATIENCE,
        ChatConnection::open(&plugin, &section(port, true), 0),
    )
    .await
    .unwrap()
    .unwrap();
    let got = events(&mut conn, 1).await;
    assert_eq!(got[0].text, "over tls");
    let reply = Outbound {
        chat_id: "@erin".into(),
        text: "secret".into(),
        ..Outbound::default()
    };
    assert!(matches!(
        conn.send(reply).await.unwrap(),
        SendOutcome::Sent(_)
    ));
    let (peer, listener) = tokio::time::timeout(PATIENCE, server)
        .await
        .unwrap()
        .unwrap();
    drop(peer);

    // Without it, the server's certificate is not trusted.
    let host = PluginHost::new(HostOptions::new(&cache, root.path().join("data2"))).unwrap();
    let plugin = load_probe(&host, &root.path().join("untrusting"), &network).await;
    let server = tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        acceptor.accept(stream).await.is_err()
    });
    let refused = ChatConnection::open(&plugin, &section(port, true), 0)
        .await
        .unwrap_err();
    assert!(refused.to_string().contains("TLS handshake"), "{refused}");
    assert!(refused.to_string().contains("UnknownIssuer"), "{refused}");
    assert!(
        tokio::time::timeout(PATIENCE, server)
            .await
            .unwrap()
            .unwrap()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_adapter_says_how_it_identifies_each_sender() {
    let Opened {
        _root,
        plugin,
        mut conn,
        mut peer,
        ..
    } = open_probe().await;
    assert_eq!(peer.line().await, "HELLO 0");
    assert!(conn.states_identity());
    peer.say("MSG @ann ann hi\nMSG @m weak:mallory hi\nMSG @e nick:eve hi\n")
        .await;
    let got = events(&mut conn, 3).await;
    let said: Vec<(&str, IdStrength, &[String])> = got
        .iter()
        .map(|m| {
            let identity = &m.sender.identity;
            (
                identity.kind.as_str(),
                identity.strength,
                identity.also_known_as.as_slice(),
            )
        })
        .collect();
    assert_eq!(
        said,
        [
            ("user", IdStrength::Strong, &["ann@probe".to_owned()][..]),
            (
                "mask",
                IdStrength::Weak,
                &["weak:mallory@probe".to_owned()][..]
            ),
            (
                "nick",
                IdStrength::NameOnly,
                &["nick:eve@probe".to_owned()][..]
            ),
        ]
    );
    // Messages a pushed request carries are identified too.
    let (_, pushed) = conn
        .webhook(WebhookRequest {
            method: "POST".into(),
            path: "/".into(),
            headers: Vec::new(),
            body: b"MSG @w weak:walt pushed\n".to_vec(),
        })
        .await
        .unwrap();
    assert_eq!(pushed[0].sender.identity.strength, IdStrength::Weak);

    let entries = ["ann".to_owned(), "bad-entry".to_owned(), "$a:x".to_owned()];
    let refused = check_allowed_users(&plugin, &entries).await.unwrap();
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0].0, "bad-entry");
    assert!(
        refused[0].1.contains("no entry may start with bad"),
        "{refused:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_0_1_2_chat_adapter_connects_and_its_senders_are_unstated() {
    let root = tempfile::tempdir().unwrap();
    let host = cached_host(root.path());
    let plugin = load_all(&host, &plugin_dir("test/chat-legacy")).await;
    assert_eq!(*plugin.api_version(), semver::Version::new(0, 1, 2));
    assert_eq!(plugin.chat_platform(), Some("legacy"));
    let section = [("say".to_owned(), "from the past".to_owned())].into();
    let mut conn = ChatConnection::open(&plugin, &section, 0).await.unwrap();
    assert!(!conn.states_identity());
    let got = events(&mut conn, 1).await;
    assert_eq!(got[0].text, "from the past");
    assert_eq!(got[0].sender.id, "ann");
    assert_eq!(got[0].sender.identity.strength, IdStrength::Unstated);
    assert!(got[0].sender.identity.kind.is_empty());
    let sent = conn
        .send(Outbound {
            chat_id: "ann".into(),
            text: "hello".into(),
            ..Outbound::default()
        })
        .await
        .unwrap();
    assert_eq!(sent, SendOutcome::Sent(None));
    let refused = check_allowed_users(&plugin, &["anything".to_owned()])
        .await
        .unwrap();
    assert!(refused.is_empty(), "a 0.1.2 adapter checks nothing");
    conn.close().await.unwrap();
}
