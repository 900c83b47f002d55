//! Every integration test of this crate, in one binary (each test binary links
//! the whole dependency tree; one per crate keeps builds and CI short).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

mod common;

#[path = "all/bwrap.rs"]
mod bwrap;
#[path = "all/gate.rs"]
mod gate;
#[path = "all/interrupt.rs"]
mod interrupt;
#[path = "all/local.rs"]
mod local;
#[path = "all/processes.rs"]
mod processes;
#[path = "all/ssh.rs"]
mod ssh;
