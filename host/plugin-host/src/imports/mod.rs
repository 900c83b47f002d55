//! The `talaria:plugin` host imports, one module each (plus the WASI
//! network and HTTP checks). Every one is linked for every plugin; a call the
//! plugin was not granted returns `host-error::denied`, never a trap.

use crate::bindings::talaria::plugin::{host_types, types};
use crate::state::HostCtx;

pub(crate) mod auxiliary;
pub(crate) mod chat;
pub(crate) mod config;
pub(crate) mod editor;
pub(crate) mod egress;
pub(crate) mod exec;
pub(crate) mod http;
pub(crate) mod kv;
pub(crate) mod log;
pub(crate) mod name_lookup;
pub(crate) mod net;
pub(crate) mod session_search;

impl types::Host for HostCtx {}

impl host_types::Host for HostCtx {}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::bindings::HostError;
    use crate::bindings::talaria::plugin::kv::Host as _;
    use crate::bindings::talaria::plugin::{config, kv, log};
    use crate::bindings::talaria::plugin::{log::Host as _, session_search::Host as _};
    use crate::state::HostCtx;
    use talaria_plugin_manifest::Capabilities;

    fn ctx(caps: Capabilities, data: &Path) -> HostCtx {
        HostCtx::for_tests(caps, data)
    }

    /// An error as text (`HostError` has no `PartialEq`).
    fn error<T>(result: Result<T, HostError>) -> String {
        match result {
            Ok(_) => "ok".into(),
            Err(HostError::Denied(m)) => format!("denied: {m}"),
            Err(HostError::NotFound(m)) => format!("not found: {m}"),
            Err(HostError::Failed(m)) => format!("failed: {m}"),
        }
    }

    #[tokio::test]
    async fn ungranted_imports_are_denied() {
        let dir = tempfile::tempdir().unwrap();
        let mut host = ctx(Capabilities::default(), dir.path());
        assert_eq!(
            error(kv::Host::get(&mut host, "k".into()).await),
            "denied: p was not granted kv"
        );
        assert_eq!(
            error(host.set("k".into(), vec![1]).await),
            "denied: p was not granted kv"
        );
        assert_eq!(
            error(host.search("q".into(), 5).await),
            "denied: p was not granted session-search"
        );
        assert_eq!(
            error(config::Host::get(&mut host, "HOME".into()).await),
            "denied: p was not granted env HOME"
        );
        assert_eq!(
            config::Host::get(&mut host, "greeting".into()).await.ok(),
            Some(Some("hi".into()))
        );
        assert_eq!(
            config::Host::get(&mut host, "PATH".into()).await.ok(),
            Some(None)
        );
        host.log(log::Level::Warn, "careful".into()).await;
        assert!(host.plugin.log.contains("careful"));
    }

    #[tokio::test]
    async fn granted_imports_work() {
        let dir = tempfile::tempdir().unwrap();
        let caps = Capabilities {
            kv: true,
            session_search: true,
            env: vec!["CARGO_PKG_NAME".into()],
            ..Capabilities::default()
        };
        let mut host = ctx(caps, dir.path());
        assert_eq!(
            config::Host::get(&mut host, "CARGO_PKG_NAME".into())
                .await
                .ok(),
            Some(Some(env!("CARGO_PKG_NAME").into()))
        );
        assert_eq!(error(host.set("a".into(), b"1".to_vec()).await), "ok");
        assert_eq!(
            kv::Host::get(&mut host, "a".into()).await.ok(),
            Some(Some(b"1".to_vec()))
        );
        assert_eq!(
            host.list_keys(String::new()).await.ok(),
            Some(vec!["a".to_string()])
        );
        assert_eq!(error(host.delete("a".into()).await), "ok");
        assert_eq!(kv::Host::get(&mut host, "a".into()).await.ok(), Some(None));
        assert_eq!(
            error(host.search("q".into(), 5).await),
            "failed: no session store in this host"
        );

        // With the agent's store behind it, hits come back as the plugin sees them.
        #[derive(Debug)]
        struct Fake;
        impl crate::imports::session_search::SessionSearch for Fake {
            fn search(&self, query: &str, limit: u32) -> Result<Vec<crate::SessionHit>, String> {
                Ok(vec![crate::SessionHit {
                    session_id: "s1".into(),
                    role: "user".into(),
                    snippet: format!("{query} x{limit}"),
                    timestamp: 7,
                }])
            }
        }
        let mut shared = (*host.plugin).clone_for_tests();
        shared.sessions = Some(std::sync::Arc::new(Fake));
        host.plugin = std::sync::Arc::new(shared);
        let hits = host.search("zebra".into(), 500).await.ok().unwrap();
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].snippet, "zebra x100", "the limit is capped");
    }
}
