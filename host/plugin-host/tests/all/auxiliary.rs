//! The `auxiliary` import against the `hostile` probe: a plugin granted
//! `auxiliary-model` gets the host model's answer (its token request capped),
//! one without the grant is denied and the model is never asked.

use std::path::Path;
use std::sync::{Arc, Mutex};

use crate::common::*;
use serde_json::json;
use talaria_plugin_host::{
    AuxiliaryModel, Grants, HostOptions, MAX_AUXILIARY_TOKENS, Manifest, PluginHost, PluginTools,
};

/// Answers every request, remembering what it was asked.
#[derive(Debug, Default)]
struct Oracle {
    asked: Mutex<Vec<(String, String, u32)>>,
}

#[async_trait::async_trait]
impl AuxiliaryModel for Oracle {
    async fn complete(
        &self,
        instructions: &str,
        prompt: &str,
        max_tokens: u32,
    ) -> Result<String, String> {
        self.asked
            .lock()
            .unwrap()
            .push((instructions.to_owned(), prompt.to_owned(), max_tokens));
        Ok(format!("answer to {prompt}"))
    }
}

async fn ask(granted: bool, oracle: &Arc<Oracle>) -> serde_json::Value {
    let root = tempfile::tempdir().unwrap();
    let dir = variant(&hostile_dir(), &root.path().join("plugin"), |m| {
        with_capability(m, "auxiliary-model = true")
    });
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("plugin-host-test-cache");
    let options = HostOptions::new(cache, root.path().join("data")).with_auxiliary(oracle.clone());
    let host = PluginHost::new(options).unwrap();
    let manifest = Manifest::load(&dir.join("plugin.toml")).unwrap();
    let grants = Grants {
        auxiliary_model: granted,
        ..Grants::all_requested(&manifest)
    };
    let plugin = host.load(&dir, &grants).await.unwrap();
    let tools = PluginTools::new(vec![plugin], root.path()).unwrap();
    let out = call(
        &tools,
        "s",
        "ask_model",
        json!({ "prompt": "what is 2+2?" }),
    )
    .await;
    assert!(!out.is_error, "{out:?}");
    serde_json::from_str(&out.content).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_granted_plugin_asks_the_auxiliary_model() {
    let oracle = Arc::new(Oracle::default());
    let answer = ask(true, &oracle).await;
    assert_eq!(
        answer,
        json!({ "ok": true, "answer": "answer to what is 2+2?" })
    );
    let asked = oracle.asked.lock().unwrap().clone();
    assert_eq!(
        asked,
        [(
            "Answer briefly.".to_owned(),
            "what is 2+2?".to_owned(),
            MAX_AUXILIARY_TOKENS
        )]
    );

    let oracle = Arc::new(Oracle::default());
    let denied = ask(false, &oracle).await;
    assert_eq!(denied["error"]["kind"], json!("denied"), "{denied}");
    assert!(
        denied["error"]["message"]
            .as_str()
            .unwrap()
            .contains("auxiliary-model"),
        "{denied}"
    );
    assert!(oracle.asked.lock().unwrap().is_empty());
}
