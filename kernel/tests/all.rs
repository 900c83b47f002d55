//! Every integration test of this crate, in one binary (each test binary links
//! the whole dependency tree; one per crate keeps builds and CI short).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

mod support;

#[path = "all/agent_loop.rs"]
mod agent_loop;
#[path = "all/compression.rs"]
mod compression;
#[path = "all/error_recovery.rs"]
mod error_recovery;
#[path = "all/external_memory.rs"]
mod external_memory;
#[path = "all/hooks.rs"]
mod hooks;
