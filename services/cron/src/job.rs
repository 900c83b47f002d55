//! A scheduled job as `cron/jobs.json` stores it: Hermes's layout, field for
//! field, so `talaria import hermes` copies jobs over as they are. Fields this
//! version does not know are kept (`extra`) and written back unchanged.

use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::Schedule;

/// How many times a job runs: `times` (None: until removed), and how many
/// runs it has had.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Repeat {
    pub times: Option<u32>,
    #[serde(default)]
    pub completed: u32,
}

/// The chat a job was created from, where `origin` delivery goes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Origin {
    pub platform: String,
    pub chat_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat_name: Option<String>,
}

/// Where a job is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JobState {
    /// Waiting for `next_run_at`.
    Scheduled,
    /// Paused by the user: not run until resumed.
    Paused,
    /// Being run now (see `run_claim`).
    Running,
    /// Ran its last time (a one-shot, or `repeat.times` reached).
    Completed,
}

/// Who is running a job: a scheduler claims it under the store's lock before
/// running it, so a second scheduler never runs it again meanwhile.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunClaim {
    /// The claiming process.
    pub pid: u32,
    pub at: Timestamp,
    /// The fire time being run.
    pub scheduled_for: Timestamp,
}

/// One job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Job {
    /// 12 hex digits; also the directory of its output.
    pub id: String,
    pub name: String,
    pub prompt: String,
    #[serde(default)]
    pub skills: Vec<String>,
    /// Hermes's older single skill (the first of `skills`).
    #[serde(default)]
    pub skill: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub provider: Option<String>,
    #[serde(default)]
    pub base_url: Option<String>,
    pub schedule: Schedule,
    #[serde(default)]
    pub schedule_display: String,
    #[serde(default)]
    pub repeat: Repeat,
    #[serde(default = "yes")]
    pub enabled: bool,
    pub state: JobState,
    #[serde(default)]
    pub paused_at: Option<Timestamp>,
    #[serde(default)]
    pub paused_reason: Option<String>,
    pub created_at: Timestamp,
    #[serde(default)]
    pub next_run_at: Option<Timestamp>,
    #[serde(default)]
    pub last_run_at: Option<Timestamp>,
    /// `ok`, `error`, `missed` or `skipped` (still running at its next time).
    #[serde(default)]
    pub last_status: Option<String>,
    #[serde(default)]
    pub last_error: Option<String>,
    /// `origin`, `local`, `PLATFORM[:chat[:thread]]`, comma-combined.
    #[serde(default = "origin")]
    pub deliver: String,
    #[serde(default)]
    pub origin: Option<Origin>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_claim: Option<RunClaim>,
    /// Whatever else the file holds for this job (another version's fields).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn yes() -> bool {
    true
}

fn origin() -> String {
    "origin".to_owned()
}

impl Job {
    /// Whether the job is waiting to run (not paused, not finished, not
    /// running).
    pub fn is_scheduled(&self) -> bool {
        self.enabled && self.state == JobState::Scheduled
    }

    /// Whether `repeat.times` is used up.
    pub fn repeats_exhausted(&self) -> bool {
        self.repeat
            .times
            .is_some_and(|times| self.repeat.completed >= times)
    }
}
