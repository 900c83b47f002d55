//! The approver port: how the policy asks a user, whatever surface they are on.

use async_trait::async_trait;

use crate::classifier::Finding;

/// The user's answer to an approval request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Allow this one call.
    Once,
    /// Allow this one call: a rater (`approvals.mode: smart`) judged it low risk. Never for a
    /// protected command.
    Rated(Rating),
    /// Allow this finding for the rest of the session.
    Session,
    /// Allow this finding from now on, in every session of this profile.
    Always,
    /// Refuse.
    Deny,
    /// Nobody can answer (no terminal, `approvals.mode: deny`): refused, and said so.
    Unavailable,
}

/// How risky a rater judged a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RatedRisk {
    /// Runs without asking.
    Low,
    /// Asked about.
    Medium,
    /// Asked about.
    High,
}

impl RatedRisk {
    /// `low`, `medium`, `high`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
        }
    }
}

/// A rater's verdict on a command, as logged and shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rating {
    /// The risk.
    pub risk: RatedRisk,
    /// Its one-line reason.
    pub reason: String,
    /// The model that rated it.
    pub model: String,
}

/// What the user is asked to approve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalRequest {
    /// The command as the model wrote it.
    pub command: String,
    /// Why it needs approval.
    pub finding: Finding,
    /// The tool that wants to run it.
    pub tool: String,
    /// The session it runs in.
    pub session_id: String,
    /// It changes the profile's controls or reads a secret: only a person may approve it.
    pub protected: bool,
}

/// A surface's way of asking its user to approve a dangerous command.
#[async_trait]
pub trait Approver: Send + Sync {
    /// Asks the user and returns their decision. The policy applies its own timeout.
    async fn ask(&self, request: &ApprovalRequest) -> Decision;

    /// Whether anyone could answer at all: tools that cannot work without an
    /// answer are left out of the model's list when nobody can.
    fn can_answer(&self) -> bool {
        true
    }

    /// Tells the user something about approvals without asking (a smart approval's rating);
    /// surfaces that cannot show it drop it.
    fn notify(&self, _message: &str) {}
}

/// Denies everything: for surfaces where nobody can answer (cron jobs, public webhooks,
/// `approvals.mode: deny`). Its answer is [`Decision::Unavailable`], so refusals do not claim a
/// user said no.
#[derive(Debug, Clone, Copy, Default)]
pub struct DenyAll;

#[async_trait]
impl Approver for DenyAll {
    async fn ask(&self, _request: &ApprovalRequest) -> Decision {
        Decision::Unavailable
    }

    fn can_answer(&self) -> bool {
        false
    }
}
