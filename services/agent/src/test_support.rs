//! What the crate's unit tests share.

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
        self.answer
    }
}
