//! Helpers shared by the integration tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::{Duration, Instant};

use talaria_exec::ExecRequest;

/// Only keeps a broken test from hanging; nothing is asserted about speed.
pub const HANG_GUARD: Duration = Duration::from_secs(60);

/// `sh -c script` in `cwd`.
pub fn sh(script: &str, cwd: &Path) -> ExecRequest {
    ExecRequest::new("sh", vec!["-c".into(), script.into()], cwd)
}

/// Polls `check` until it holds; panics naming `what` after [`HANG_GUARD`].
pub async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + HANG_GUARD;
    while !check() {
        assert!(Instant::now() < deadline, "gave up waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Live (not zombie) processes whose process group is `pgid`, from /proc.
pub fn live_in_group(pgid: i32) -> usize {
    let mut count = 0;
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // "pid (comm) state ppid pgrp …"; comm may contain spaces and parentheses.
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let (Some(state), Some(pgrp)) = (fields.first(), fields.get(2)) else {
            continue;
        };
        if *pgrp == pgid.to_string() && !matches!(*state, "Z" | "X") {
            count += 1;
        }
    }
    count
}

/// Live processes whose arguments, joined by spaces, are exactly `command`.
pub fn live_with_cmdline(command: &str) -> usize {
    let mut count = 0;
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        let cmdline = cmdline.trim_end();
        let zombie = std::fs::read_to_string(entry.path().join("stat"))
            .ok()
            .and_then(|s| {
                s.rsplit_once(')')
                    .map(|(_, r)| r.trim_start().starts_with('Z'))
            })
            .unwrap_or(true);
        if cmdline == command && !zombie {
            count += 1;
        }
    }
    count
}

/// Waits for `file` to hold a process id (the command wrote `$$` to it).
pub async fn read_pid_file(file: &Path) -> i32 {
    let mut pid = None;
    eventually("the command to write its pid", || {
        pid = std::fs::read_to_string(file)
            .ok()
            .and_then(|s| s.trim().parse().ok());
        pid.is_some()
    })
    .await;
    pid.unwrap()
}

/// A number unlikely to appear in another process's command line.
pub fn unique_number() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    u64::from(std::process::id()) * 1_000_000_000 + u64::from(nanos)
}
