//! Every integration test of this crate, in one binary (each test binary links
//! the whole dependency tree; one per crate keeps builds and CI short).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

mod support;

#[path = "all/concurrent_writers.rs"]
mod concurrent_writers;
#[path = "all/crash.rs"]
mod crash;
#[path = "all/migrations.rs"]
mod migrations;
#[path = "all/port.rs"]
mod port;
#[path = "all/principals.rs"]
mod principals;
#[path = "all/resume.rs"]
mod resume;
#[path = "all/roundtrip.rs"]
mod roundtrip;
#[path = "all/search.rs"]
mod search;
