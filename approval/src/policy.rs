//! The approval policy: classification plus yolo, sandbox, remembered approvals and asking.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use crate::always::AlwaysStore;
use crate::approver::{ApprovalRequest, Approver, Decision};
use crate::classifier::{Classifier, Finding, Risk};
use crate::error::ApprovalError;

/// How long the user has to answer before the request is denied.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// Why a command was allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Approval {
    /// No rule matched.
    Safe,
    /// Dangerous, allowed because the session runs in yolo mode.
    Yolo,
    /// Dangerous, allowed because the backend is sandboxed.
    Sandboxed,
    /// The user allowed this one call.
    Once,
    /// The user allowed this finding for the session (now or earlier).
    Session,
    /// The user allowed this finding always (now or earlier).
    Always {
        /// Set when the approval could not be saved: it holds for this process only.
        save_error: Option<String>,
    },
}

/// Why a command was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeniedKind {
    /// A hardline rule matched; nothing can allow it.
    Hardline,
    /// The user said no (or the surface cannot ask anybody).
    User,
    /// The user did not answer in time.
    Timeout,
}

/// A refused command, with a message meant for the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Denied {
    /// Why it was refused.
    pub kind: DeniedKind,
    /// The rule that matched.
    pub finding: Finding,
    /// E.g. "denied by the user: recursive delete".
    pub message: String,
}

/// Decides whether a command may run, asking the user through an [`Approver`] when needed.
#[derive(Debug)]
pub struct ApprovalPolicy {
    classifier: &'static Classifier,
    /// Switchable during a session (`/yolo`); nothing cached depends on it.
    yolo: AtomicBool,
    timeout: Duration,
    /// Session id → finding ids approved for that session.
    sessions: Mutex<HashMap<String, HashSet<String>>>,
    always: Mutex<AlwaysStore>,
}

impl ApprovalPolicy {
    /// A policy using the built-in patterns whose "always" approvals live in `always_file` (a
    /// TOML file in the profile; missing means none yet). A corrupt file is an error naming it.
    pub fn load(always_file: impl Into<PathBuf>) -> Result<Self, ApprovalError> {
        Ok(Self {
            classifier: Classifier::builtin()?,
            yolo: AtomicBool::new(false),
            timeout: DEFAULT_TIMEOUT,
            sessions: Mutex::new(HashMap::new()),
            always: Mutex::new(AlwaysStore::load(always_file.into())?),
        })
    }

    /// In yolo mode dangerous commands run without asking; hardline ones are still refused.
    pub fn with_yolo(self, yolo: bool) -> Self {
        self.set_yolo(yolo);
        self
    }

    /// Turns yolo mode on or off from now on.
    pub fn set_yolo(&self, yolo: bool) {
        self.yolo.store(yolo, Ordering::Relaxed);
    }

    /// Whether yolo mode is on.
    pub fn yolo(&self) -> bool {
        self.yolo.load(Ordering::Relaxed)
    }

    /// How long to wait for an answer before denying (default [`DEFAULT_TIMEOUT`]).
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The classifier the policy uses.
    pub fn classifier(&self) -> &Classifier {
        self.classifier
    }

    /// Forgets the session-scoped approvals of `session_id`.
    pub fn end_session(&self, session_id: &str) {
        lock(&self.sessions).remove(session_id);
    }

    /// Decides whether `tool` may run `command` in `session_id`. A `sandboxed` backend skips
    /// asking; hardline commands are refused regardless.
    pub async fn check(
        &self,
        session_id: &str,
        tool: &str,
        command: &str,
        sandboxed: bool,
        approver: &dyn Approver,
    ) -> Result<Approval, Denied> {
        let finding = match self.classifier.classify(command) {
            Risk::Safe => return Ok(Approval::Safe),
            Risk::Hardline(finding) => {
                let message = format!("blocked: {} (hardline: never allowed)", finding.description);
                return Err(denied(DeniedKind::Hardline, finding, message));
            }
            Risk::Dangerous(finding) => finding,
        };
        if self.yolo() {
            return Ok(Approval::Yolo);
        }
        if sandboxed {
            return Ok(Approval::Sandboxed);
        }
        if lock(&self.always).contains(&finding.id) {
            return Ok(Approval::Always { save_error: None });
        }
        if lock(&self.sessions)
            .get(session_id)
            .is_some_and(|ids| ids.contains(&finding.id))
        {
            return Ok(Approval::Session);
        }

        let request = ApprovalRequest {
            command: command.to_owned(),
            finding,
            tool: tool.to_owned(),
            session_id: session_id.to_owned(),
        };
        let answer = tokio::time::timeout(self.timeout, approver.ask(&request)).await;
        let finding = request.finding;
        match answer {
            Err(_elapsed) => {
                let message = format!(
                    "approval timed out after {}: {}",
                    format_duration(self.timeout),
                    finding.description
                );
                Err(denied(DeniedKind::Timeout, finding, message))
            }
            Ok(Decision::Deny) => {
                let message = format!("denied by the user: {}", finding.description);
                Err(denied(DeniedKind::User, finding, message))
            }
            Ok(Decision::Once) => Ok(Approval::Once),
            Ok(Decision::Session) => {
                lock(&self.sessions)
                    .entry(session_id.to_owned())
                    .or_default()
                    .insert(finding.id);
                Ok(Approval::Session)
            }
            Ok(Decision::Always) => {
                let saved = lock(&self.always).insert(&finding.id);
                Ok(Approval::Always {
                    save_error: saved.err().map(|e| e.to_string()),
                })
            }
        }
    }
}

fn denied(kind: DeniedKind, finding: Finding, message: String) -> Denied {
    Denied {
        kind,
        finding,
        message,
    }
}

/// A poisoned lock only means another caller panicked mid-update of a set; the set is still usable.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// "60s" for whole seconds, Debug formatting ("1.5s", "250ms") otherwise.
fn format_duration(duration: Duration) -> String {
    if duration.subsec_nanos() == 0 {
        format!("{}s", duration.as_secs())
    } else {
        format!("{duration:?}")
    }
}
