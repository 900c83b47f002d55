//! talaria-cron's integration tests: one test binary, a module per area.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code

#[path = "all/croniter.rs"]
mod croniter;
