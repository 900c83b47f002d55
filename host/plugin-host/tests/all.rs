//! Every integration test of this crate, in one binary (each test binary links
//! the whole dependency tree; one per crate keeps builds and CI short).
#![allow(clippy::unwrap_used, clippy::expect_used)]
// test helpers outside #[test] fns
// Every test compiles components; a runtime-only build is tested through a distribution
// (tests/all/dist.rs of the talaria package).
#![cfg(feature = "compiler")]

mod common;

#[path = "all/auxiliary.rs"]
mod auxiliary;
#[path = "all/chat.rs"]
mod chat;
#[path = "all/commands.rs"]
mod commands;
#[path = "all/egress.rs"]
mod egress;
#[cfg(feature = "extism")]
#[path = "all/extism.rs"]
mod extism;
#[path = "all/fs_plugin.rs"]
mod fs_plugin;
#[path = "all/hooks.rs"]
mod hooks;
#[path = "all/kinds.rs"]
mod kinds;
#[path = "all/loading.rs"]
mod loading;
#[path = "all/manifest.rs"]
mod manifest;
#[path = "all/memory.rs"]
mod memory;
#[cfg(feature = "native")]
#[path = "all/native.rs"]
mod native;
#[path = "all/sandbox.rs"]
mod sandbox;
