//! Outgoing HTTP of plugins beyond the grants: the private-address rule on
//! the resolved address (a name resolving to loopback through an injected
//! resolver, numeric spellings, IPv6 loopback, the metadata address), the
//! `security.allow_private_urls` setting, and secrets the host writes into
//! requests for the hosts the manifest lists — against the `hostile` probe.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};

use crate::common::*;
use serde_json::json;
use talaria_plugin_host::{
    Grants, HostOptions, Manifest, PluginHost, PluginTools, Resolver, SecretSource,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Resolves every name to loopback: what a hostile DNS answer looks like
/// (offline, only `localhost` resolves for real).
#[derive(Debug)]
struct ToLoopback;

#[async_trait::async_trait]
impl Resolver for ToLoopback {
    async fn resolve(&self, _host: &str) -> std::io::Result<Vec<IpAddr>> {
        Ok(vec![IpAddr::from([127, 0, 0, 1])])
    }
}

#[derive(Debug)]
struct Vault;

impl SecretSource for Vault {
    fn secret(&self, name: &str) -> Option<String> {
        (name == "SEARCH_KEY").then(|| "key-7f3a".to_owned())
    }
}

/// A loopback HTTP server that answers with the request head it received;
/// returns its port and the heads.
async fn echo_server() -> (u16, Arc<Mutex<Vec<String>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let heads = Arc::new(Mutex::new(Vec::new()));
    let seen = heads.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let seen = seen.clone();
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut buf = [0u8; 1024];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                let head = String::from_utf8_lossy(&request).into_owned();
                seen.lock().unwrap().push(head);
                let body = "echoed";
                let response = format!(
                    "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(response.as_bytes()).await;
            });
        }
    });
    (port, heads)
}

struct Probe {
    _root: tempfile::TempDir,
    tools: PluginTools,
}

/// The hostile probe with `capabilities` added, loaded by a host built
/// with `options` applied.
async fn probe_with(
    capabilities: &[&str],
    options: impl FnOnce(HostOptions) -> HostOptions,
) -> Probe {
    let root = tempfile::tempdir().unwrap();
    let dir = variant(&hostile_dir(), &root.path().join("plugin"), |mut m| {
        for line in capabilities {
            m = with_capability(m, line);
        }
        m
    });
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("plugin-host-test-cache");
    let host = PluginHost::new(options(HostOptions::new(cache, root.path().join("data")))).unwrap();
    let manifest = Manifest::load(&dir.join("plugin.toml")).unwrap();
    let plugin = host
        .load(&dir, &Grants::all_requested(&manifest))
        .await
        .unwrap();
    let tools = PluginTools::new(vec![plugin], root.path()).unwrap();
    Probe { _root: root, tools }
}

impl Probe {
    async fn get(&self, url: &str, headers: BTreeMap<&str, &str>) -> serde_json::Value {
        let out = call(
            &self.tools,
            "s",
            "http_get",
            json!({ "url": url, "headers": headers }),
        )
        .await;
        assert!(!out.is_error, "{out:?}");
        serde_json::from_str(&out.content).unwrap()
    }
}

fn refusal(outcome: &serde_json::Value) -> String {
    assert_eq!(outcome["ok"], json!(false), "{outcome}");
    assert_eq!(outcome["error"]["kind"], json!("denied"), "{outcome}");
    outcome["error"]["message"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn private_addresses_are_refused_unless_named_or_allowed() {
    let (port, heads) = echo_server().await;
    let wildcard = probe_with(&["network = [\"*:*\"]"], |o| {
        o.with_resolver(Arc::new(ToLoopback))
    })
    .await;
    let none = BTreeMap::new();
    for url in [
        format!("http://127.0.0.1:{port}/"),
        format!("http://search.example:{port}/"),
        format!("http://2130706433:{port}/"),
        format!("http://0177.0.0.1:{port}/"),
        format!("http://[::1]:{port}/"),
        "http://169.254.169.254/latest/meta-data/".to_owned(),
    ] {
        let message = refusal(&wildcard.get(&url, none.clone()).await);
        assert!(message.contains("address;"), "{url}: {message}");
        assert!(
            message.contains("security.allow_private_urls"),
            "{url}: {message}"
        );
    }
    let message = refusal(
        &wildcard
            .get(&format!("http://search.example:{port}/"), none.clone())
            .await,
    );
    assert!(
        message.contains("search.example resolves to 127.0.0.1, a loopback address"),
        "{message}"
    );
    assert!(
        heads.lock().unwrap().is_empty(),
        "no refused request reached the server"
    );

    // A grant naming the host (as a configured self-hosted backend's does) reaches it.
    let named = format!("network = [\"*:*\", \"127.0.0.1:{port}\"]");
    let explicit = probe_with(&[&named], |o| o).await;
    let answer = explicit
        .get(&format!("http://127.0.0.1:{port}/named"), none.clone())
        .await;
    assert_eq!(answer["status"], json!(200), "{answer}");

    // security.allow_private_urls opens private addresses to every grant.
    let allowed = probe_with(&["network = [\"*:*\"]"], |o| {
        o.with_resolver(Arc::new(ToLoopback))
            .allowing_private_urls(true)
    })
    .await;
    let answer = allowed
        .get(&format!("http://search.example:{port}/allowed"), none)
        .await;
    assert_eq!(answer["status"], json!(200), "{answer}");
    let heads = heads.lock().unwrap();
    assert_eq!(heads.len(), 2, "{heads:?}");
    // The connection went to the checked address; the name stayed the Host.
    assert!(
        heads[1]
            .to_ascii_lowercase()
            .contains(&format!("host: search.example:{port}")),
        "{heads:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn secrets_are_written_in_for_their_hosts_only() {
    let (port, heads) = echo_server().await;
    let network = format!("network = [\"127.0.0.1:{port}\", \"localhost:{port}\"]");
    let secrets =
        format!("secrets = [{{ name = \"SEARCH_KEY\", hosts = [\"127.0.0.1:{port}\"] }}]");
    let probe = probe_with(&[&network, &secrets], |o| o.with_secrets(Arc::new(Vault))).await;
    let with_key = BTreeMap::from([("x-api-key", "{{secret:SEARCH_KEY}}")]);

    let answer = probe
        .get(&format!("http://127.0.0.1:{port}/search"), with_key.clone())
        .await;
    assert_eq!(answer["status"], json!(200), "{answer}");
    {
        let heads = heads.lock().unwrap();
        assert!(heads[0].contains("x-api-key: key-7f3a"), "{heads:?}");
    }

    // The same key toward another host the plugin may reach: refused, nothing sent.
    let message = refusal(
        &probe
            .get(&format!("http://localhost:{port}/steal"), with_key)
            .await,
    );
    assert!(
        message.contains("may not be sent to localhost"),
        "{message}"
    );
    let unset = BTreeMap::from([("authorization", "Bearer {{secret:OTHER_KEY}}")]);
    let message = refusal(
        &probe
            .get(&format!("http://127.0.0.1:{port}/x"), unset)
            .await,
    );
    assert!(
        message.contains("asks for no secret OTHER_KEY"),
        "{message}"
    );
    assert_eq!(
        heads.lock().unwrap().len(),
        1,
        "refused requests never left"
    );

    // Not granted: the placeholder is refused rather than sent as it is.
    let root = tempfile::tempdir().unwrap();
    let dir = variant(&hostile_dir(), &root.path().join("plugin"), |m| {
        with_capability(with_capability(m, &network), &secrets)
    });
    let host = cached_host(root.path());
    let manifest = Manifest::load(&dir.join("plugin.toml")).unwrap();
    let grants = Grants {
        secrets: Default::default(),
        ..Grants::all_requested(&manifest)
    };
    let plugin = host.load(&dir, &grants).await.unwrap();
    let tools = PluginTools::new(vec![plugin], root.path()).unwrap();
    let out = call(
        &tools,
        "s",
        "http_get",
        json!({ "url": format!("http://127.0.0.1:{port}/"), "headers": { "x-api-key": "{{secret:SEARCH_KEY}}" } }),
    )
    .await;
    let outcome: serde_json::Value = serde_json::from_str(&out.content).unwrap();
    assert!(
        refusal(&outcome).contains("SEARCH_KEY was not granted"),
        "{outcome}"
    );
    assert_eq!(heads.lock().unwrap().len(), 1);
}
