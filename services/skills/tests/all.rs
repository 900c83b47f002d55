//! Every integration test of this crate, in one binary (each test binary links
//! the whole dependency tree; one per crate keeps builds and CI short).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

mod common;

#[path = "all/corpus.rs"]
mod corpus;
#[path = "all/invalid.rs"]
mod invalid;
#[path = "all/manage.rs"]
mod manage;
#[path = "all/view_paths.rs"]
mod view_paths;
#[path = "all/visibility.rs"]
mod visibility;
