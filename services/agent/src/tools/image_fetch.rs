//! Fetching an image URL for `vision_analyze`. The URL is never handed to the provider:
//! a provider (or a self-hosted model server on the LAN) would fetch whatever the model
//! wrote, private addresses and metadata endpoints included. Talaria fetches it itself
//! under the web tools' egress rule — every address a name resolves to must be public
//! unless `security.allow_private_urls`, the connection goes to exactly the addresses
//! checked (the resolver below is the only one the client uses, and no proxy), and each
//! redirect is checked the same way — then sends the bytes, prepared like an attachment.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use talaria_plugin_manifest::address::{literal_address, non_public_reason};

/// The whole fetch, redirects included, must finish within this.
const FETCH_TIMEOUT: Duration = Duration::from_secs(30);
/// Redirects followed (each one checked).
const MAX_REDIRECTS: usize = 5;
/// Largest image read (what [`talaria_images`] reads from a file at all).
const MAX_BYTES: u64 = talaria_images::MAX_INPUT_BYTES;
/// What every private-address refusal ends with: what the user can do.
const PRIVATE_HINT: &str =
    "private addresses are refused (set security.allow_private_urls: true to allow them)";

/// Why an address may not be fetched; found again in the error chain reqwest returns.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Refused(String);

/// Resolves names for the fetcher, refusing any name with a non-public address.
#[derive(Debug)]
struct CheckingResolver {
    allow_private: bool,
}

impl reqwest::dns::Resolve for CheckingResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let allow_private = self.allow_private;
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let addrs: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if !allow_private
                && let Some((ip, why)) = addrs
                    .iter()
                    .find_map(|addr| non_public_reason(addr.ip()).map(|why| (addr.ip(), why)))
            {
                // One private address among public ones is enough to refuse.
                let refused = Refused(format!("{host} resolves to {ip}, {why}: {PRIVATE_HINT}"));
                return Err(Box::new(refused) as Box<dyn std::error::Error + Send + Sync>);
            }
            Ok(Box::new(addrs.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// Why a literal address in a URL may not be fetched (names go through the resolver).
fn literal_refusal(url: &reqwest::Url, allow_private: bool) -> Option<String> {
    if allow_private {
        return None;
    }
    let host = url.host_str()?;
    let ip: IpAddr = literal_address(host)?;
    non_public_reason(ip).map(|why| format!("{ip} is {why}: {PRIVATE_HINT}"))
}

/// Fetches image URLs under the egress rule; the client is built at the first fetch.
#[derive(Debug)]
pub(crate) struct ImageFetcher {
    allow_private: bool,
    client: tokio::sync::OnceCell<reqwest::Client>,
}

impl ImageFetcher {
    pub(crate) fn new(allow_private: bool) -> Self {
        Self {
            allow_private,
            client: tokio::sync::OnceCell::new(),
        }
    }

    async fn client(&self) -> Result<&reqwest::Client, String> {
        let allow_private = self.allow_private;
        self.client
            .get_or_try_init(|| async move {
                let redirects = reqwest::redirect::Policy::custom(move |attempt| {
                    if attempt.previous().len() > MAX_REDIRECTS {
                        attempt.error(Refused(format!("more than {MAX_REDIRECTS} redirects")))
                    } else if let Some(refusal) = literal_refusal(attempt.url(), allow_private) {
                        attempt.error(Refused(refusal))
                    } else if !matches!(attempt.url().scheme(), "http" | "https") {
                        let to = attempt.url().scheme().to_owned();
                        attempt.error(Refused(format!("a redirect to a {to}: URL")))
                    } else {
                        attempt.follow()
                    }
                });
                talaria_providers::http::client_builder()
                    .map_err(|e| e.to_string())?
                    .no_proxy()
                    .dns_resolver(Arc::new(CheckingResolver { allow_private }))
                    .redirect(redirects)
                    .timeout(FETCH_TIMEOUT)
                    .build()
                    .map_err(|e| format!("cannot make an HTTP client: {e}"))
            })
            .await
    }

    /// The bytes at `url` (http or https), or the message for the model.
    pub(crate) async fn fetch(&self, url: &str) -> Result<Vec<u8>, String> {
        let parsed = reqwest::Url::parse(url.trim()).map_err(|e| format!("{url}: {e}"))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(format!("{url} is not an http(s) URL"));
        }
        if let Some(refusal) = literal_refusal(&parsed, self.allow_private) {
            return Err(format!("vision_analyze was not run: {refusal}"));
        }
        let client = self.client().await?;
        let mut response = client
            .get(parsed)
            .send()
            .await
            .map_err(|e| format!("vision_analyze could not fetch {url}: {}", reason(&e)))?;
        let status = response.status();
        if !status.is_success() {
            return Err(format!(
                "vision_analyze could not fetch {url}: HTTP {status}"
            ));
        }
        if response.content_length().is_some_and(|len| len > MAX_BYTES) {
            return Err(too_large(url));
        }
        let mut bytes = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| format!("vision_analyze could not fetch {url}: {}", reason(&e)))?
        {
            if (bytes.len() + chunk.len()) as u64 > MAX_BYTES {
                return Err(too_large(url));
            }
            bytes.extend_from_slice(&chunk);
        }
        Ok(bytes)
    }
}

fn too_large(url: &str) -> String {
    format!(
        "vision_analyze was not run: {url} is larger than {} MiB",
        MAX_BYTES >> 20
    )
}

/// The refusal inside a reqwest error when there is one, else the error's own chain.
fn reason(error: &reqwest::Error) -> String {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    let mut chain = Vec::new();
    while let Some(current) = source {
        if let Some(refused) = current.downcast_ref::<Refused>() {
            return refused.0.clone();
        }
        chain.push(current.to_string());
        source = current.source();
    }
    chain.dedup();
    chain.join(": ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_private_addresses_are_refused_unless_allowed() {
        for url in [
            "http://127.0.0.1:8080/a.png",
            "http://[::1]/a.png",
            "http://169.254.169.254/latest/meta-data",
            "http://10.0.0.7/x.png",
            "http://2130706433/x.png",
        ] {
            let parsed = reqwest::Url::parse(url).unwrap();
            assert!(literal_refusal(&parsed, false).is_some(), "{url}");
            assert!(literal_refusal(&parsed, true).is_none(), "{url}");
        }
        let public = reqwest::Url::parse("https://93.184.215.14/a.png").unwrap();
        assert!(literal_refusal(&public, false).is_none());
    }

    #[tokio::test]
    async fn names_resolving_to_private_addresses_are_refused_before_connecting() {
        let fetcher = ImageFetcher::new(false);
        let error = fetcher.fetch("http://localhost:9/a.png").await.unwrap_err();
        assert!(error.contains("localhost resolves to"), "{error}");
        assert!(error.contains("allow_private_urls"), "{error}");
    }
}
