//! Scheduled jobs of a profile (`talaria cron`, the `cronjob` tool, the
//! scheduler in `talaria gateway run` and `talaria cron tick`): when a job
//! runs ([`Schedule`]), how it is stored ([`Job`], [`JobStore`]: Hermes's
//! `cron/jobs.json`), and what a tick does with it ([`due`]). Running the
//! agent and delivering its answer belong to the surfaces.

mod create;
pub mod due;
mod job;
mod schedule;
mod store;
mod tick;

pub use create::{NewJob, Target, create, find, parse_deliver};
pub use job::{Job, JobState, Origin, Repeat, RunClaim};
pub use schedule::{Schedule, ScheduleError};
pub use store::{JobStore, StoreError, TickLock, new_id};
pub use tick::{Claimed, TickReport, process_alive};
