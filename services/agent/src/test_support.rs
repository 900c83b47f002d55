//! What the crate's unit tests share.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use talaria_approval::{ApprovalRequest, Approver, Decision};

/// Answers every question with `answer` and keeps the questions.
pub(crate) struct Recording {
    pub answer: Decision,
    pub asked: Mutex<Vec<ApprovalRequest>>,
}

impl Recording {
    pub fn new(answer: Decision) -> Arc<Self> {
        Arc::new(Self {
            answer,
            asked: Mutex::new(Vec::new()),
        })
    }
}

#[async_trait]
impl Approver for Recording {
    async fn ask(&self, request: &ApprovalRequest) -> Decision {
        self.asked.lock().unwrap().push(request.clone());
        self.answer.clone()
    }
}

/// The packaged test plugin `name` (`commands-probe`, `memory-probe`…),
/// built from its crate `crate_name` with `scripts/build-plugins` unless
/// `TALARIA_PLUGINS_PREBUILT` names a packaged tree.
pub(crate) fn test_plugin(name: &str, crate_name: &str) -> PathBuf {
    let root = if let Some(dir) = std::env::var_os("TALARIA_PLUGINS_PREBUILT") {
        PathBuf::from(dir)
    } else {
        let repo = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
        let status = std::process::Command::new(repo.join("scripts/build-plugins"))
            .args(["-p", crate_name])
            .current_dir(repo)
            .stdout(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "scripts/build-plugins failed");
        repo.join("target/plugins")
    };
    root.join("test").join(name)
}
