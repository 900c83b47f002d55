//! Scheduled jobs of a profile (`talaria cron`, the `cronjob` tool, the
//! scheduler in `talaria gateway run` and `talaria cron tick`): when a job
//! runs ([`Schedule`]), how it is stored ([`Job`], [`JobStore`]: Hermes's
//! `cron/jobs.json`), and what a tick does with it ([`due`]). Running the
//! agent and delivering its answer belong to the surfaces.

mod create;
pub mod due;
mod import;
mod job;
mod manage;
mod schedule;
mod store;
mod tick;

pub use create::{NewJob, Target, create, find, parse_deliver};
pub use import::JobsImport;
pub use job::{Job, JobState, Origin, Repeat, RunClaim};
pub use manage::{JobChanges, pause, resume, run_soon, update};
pub use schedule::{Schedule, ScheduleError};
pub use store::{JobStore, StoreError, TickLock, new_id};
pub use tick::{Claimed, TickReport, process_alive};

/// Now, in whole seconds (cut, never rounded up into the future: a job made
/// due "now" must be due at once): `cron/jobs.json` stays readable by
/// Hermes's Python, whose `fromisoformat` takes at most microseconds.
pub fn now() -> jiff::Timestamp {
    let now = jiff::Timestamp::now();
    let whole = jiff::TimestampRound::new()
        .smallest(jiff::Unit::Second)
        .mode(jiff::RoundMode::Trunc);
    now.round(whole).unwrap_or(now)
}

/// `at` as RFC 3339 with the offset of `tz` (`2026-03-02T09:00:00-05:00`).
pub fn rfc3339(at: jiff::Timestamp, tz: &jiff::tz::TimeZone) -> String {
    at.to_zoned(tz.clone()).strftime("%FT%T%:z").to_string()
}
