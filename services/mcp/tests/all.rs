//! Every integration test of this crate, in one binary (each test binary links the whole
//! dependency tree; one per crate keeps builds and CI short). The real peers come from
//! `scripts/install-mcp-peers`; without them the peer tests say so and pass, unless
//! `TALARIA_REQUIRE_PEERS` is set.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

mod common;

#[path = "all/conformance.rs"]
mod conformance;
#[path = "all/everything.rs"]
mod everything;
#[path = "all/hostile.rs"]
mod hostile;
#[path = "all/http.rs"]
mod http;
#[path = "all/source.rs"]
mod source;
#[path = "all/stdio_python.rs"]
mod stdio_python;
