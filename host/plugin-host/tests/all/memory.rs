//! Memory sessions: one long-lived instance per session, the 0.1.2 lifecycle
//! when the component has it, and a trap that ends the instance.

use std::collections::BTreeMap;
use std::path::Path;

use crate::common::*;
use talaria_kernel::Message;
use talaria_plugin_host::{
    Grants, MemoryError, MemoryScope, MemorySessionKind, PluginHost, PluginMemoryProviders,
};

fn scope(kind: MemorySessionKind) -> MemoryScope {
    MemoryScope {
        session_id: "s1".into(),
        kind,
        platform: "telegram".into(),
        profile: "work".into(),
        user_id: Some("u42".into()),
        parent_session: None,
        model: "m".into(),
    }
}

async fn providers(
    host: &PluginHost,
    root: &Path,
    config: &[(&str, &str)],
) -> PluginMemoryProviders {
    let settings: BTreeMap<String, String> = config
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    let recorder = host
        .load_configured(&memory_recorder_dir(), &Grants::none(), &settings)
        .await
        .unwrap();
    let probe = host
        .load(&memory_probe_dir(), &Grants::none())
        .await
        .unwrap();
    PluginMemoryProviders::new(vec![recorder, probe], root).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_keeps_one_instance_and_gets_the_lifecycle() {
    let root = tempfile::tempdir().unwrap();
    let host = cached_host(root.path());
    let set = providers(&host, root.path(), &[("write_in_secondary", "true")]).await;
    let mut session = set
        .open("memory-recorder", &scope(MemorySessionKind::Cron))
        .await
        .unwrap();
    assert!(session.has_lifecycle());
    assert!(session.options().write_in_secondary);
    assert_eq!(
        session.system_prompt_block().await.unwrap().as_deref(),
        Some("The memory-recorder provider is on for this session.")
    );
    assert_eq!(session.prefetch("first").await.unwrap(), "");
    let turn = [
        Message::user("I like green tea"),
        Message::assistant("Noted."),
    ];
    session.sync_turn(&turn).await.unwrap();
    // Recalled from the instance's own memory: the same instance served both calls.
    assert_eq!(
        session.prefetch("second").await.unwrap(),
        "Earlier in this session: I like green tea"
    );
    assert_eq!(
        session.on_pre_compress(&turn).await.unwrap().as_deref(),
        Some("memory-recorder asks to keep: RECORDER-KEEP")
    );
    session
        .on_memory_write("add", "user", "likes tea")
        .await
        .unwrap();
    session.on_session_end(&turn).await.unwrap();
    session.shutdown().await.unwrap();
    assert!(!session.is_usable());
    let log = set.plugins().next().unwrap().log();
    let lines: Vec<String> = log.lines().into_iter().map(|l| l.message).collect();
    for call in [
        "initialize session=s1 kind=cron platform=telegram profile=work user=u42 parent=-",
        "sync-turn 2 messages",
        "on-memory-write add user",
        "on-session-end 2",
        "shutdown",
    ] {
        assert!(log.contains(call), "{call}: {lines:#?}");
    }
    assert!(matches!(
        session.prefetch("after").await,
        Err(MemoryError::Gone { .. })
    ));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_0_1_1_provider_is_served_without_the_lifecycle() {
    let root = tempfile::tempdir().unwrap();
    let host = cached_host(root.path());
    let set = providers(&host, root.path(), &[]).await;
    let mut session = set
        .open("memory-probe", &scope(MemorySessionKind::Primary))
        .await
        .unwrap();
    assert!(!session.has_lifecycle());
    assert_eq!(session.system_prompt_block().await.unwrap(), None);
    assert_eq!(
        session.prefetch("tea?").await.unwrap(),
        "memory-probe recalls \"tea?\" (session s1)"
    );
    session.sync_turn(&[Message::user("hi")]).await.unwrap();
    assert_eq!(session.on_pre_compress(&[]).await.unwrap(), None);
    let error = set
        .open("nobody", &scope(MemorySessionKind::Primary))
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "no memory provider named nobody is loaded (loaded: memory-recorder, memory-probe)"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_trap_ends_the_instance_and_an_error_does_not() {
    let root = tempfile::tempdir().unwrap();
    let host = cached_host(root.path());
    let set = providers(
        &host,
        root.path(),
        &[("fail_on", "sync-turn"), ("trap_on", "prefetch")],
    )
    .await;
    let mut session = set
        .open("memory-recorder", &scope(MemorySessionKind::Primary))
        .await
        .unwrap();
    let failed = session.sync_turn(&[Message::user("x")]).await.unwrap_err();
    assert!(!failed.is_fatal(), "{failed}");
    assert!(
        failed.to_string().contains("told to fail in sync-turn"),
        "{failed}"
    );
    let trapped = session.prefetch("boom").await.unwrap_err();
    assert!(trapped.is_fatal());
    assert!(
        trapped.to_string().contains("told to trap in prefetch"),
        "{trapped}"
    );
    assert!(matches!(
        session.sync_turn(&[]).await,
        Err(MemoryError::Gone { .. })
    ));

    let refused = providers(&host, root.path(), &[("fail_on", "initialize")]).await;
    let error = refused
        .open("memory-recorder", &scope(MemorySessionKind::Primary))
        .await
        .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("initialize: memory-recorder was told to fail"),
        "{error}"
    );
}
