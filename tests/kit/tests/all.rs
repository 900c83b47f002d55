//! Every integration test of this crate, in one binary (each test binary links
//! the whole dependency tree; one per crate keeps builds and CI short).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

mod common;

#[path = "all/anthropic.rs"]
mod anthropic;
#[path = "all/assertions.rs"]
mod assertions;
#[path = "all/ngircd.rs"]
mod ngircd;
#[path = "all/openai.rs"]
mod openai;
#[path = "all/responses.rs"]
mod responses;
#[path = "all/server.rs"]
mod server;
