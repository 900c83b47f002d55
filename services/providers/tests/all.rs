//! Every integration test of this crate, in one binary (each test binary links
//! the whole dependency tree; one per crate keeps builds and CI short).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

mod common;

#[path = "all/anthropic.rs"]
mod anthropic;
#[path = "all/error_classes.rs"]
mod error_classes;
#[path = "all/limits.rs"]
mod limits;
#[path = "all/openai.rs"]
mod openai;
#[path = "all/responses.rs"]
mod responses;
#[path = "all/transport.rs"]
mod transport;
