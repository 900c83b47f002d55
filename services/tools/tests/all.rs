//! Every integration test of this crate, in one binary (each test binary links
//! the whole dependency tree; one per crate keeps builds and CI short).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

#[path = "all/dispatcher.rs"]
mod dispatcher;
#[path = "all/scheduler_props.rs"]
mod scheduler_props;
