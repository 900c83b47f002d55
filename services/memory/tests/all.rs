//! Every integration test of this crate, in one binary (each test binary links
//! the whole dependency tree; one per crate keeps builds and CI short).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

#[path = "all/context_files.rs"]
mod context_files;
#[path = "all/corpus.rs"]
mod corpus;
#[path = "all/store.rs"]
mod store;
#[path = "all/tool.rs"]
mod tool;
