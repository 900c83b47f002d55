//! What a session's browser costs, with the real Chromium found on `PATH`
//! (`./scripts/system-deps --heavy` installs Debian's headless shell) and a
//! page served on loopback:
//!
//! - time to the first snapshot: cold (the browser started by the call:
//!   proxy, process, DevTools connection, tab, navigation, snapshot) and warm
//!   (the same session's browser: navigation and snapshot);
//! - the browser's memory: the peak resident set of each of its processes
//!   (`VmHWM`), summed over the process group, after a navigation and a
//!   snapshot of the page (an upper bound: pages shared between the processes count
//!   once per process), and their proportional set size then (shared pages split);
//! - how long after the session's browser is dropped its last process is
//!   gone, and how many are left 5 s after (must be 0).
//!
//! `cargo bench -p talaria-browser --bench browser`. Prints min/median/max tables.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use talaria_browser::{Browser, BrowserSettings, find_executable};
use talaria_testkit::{Page, WebSite};

const RUNS: usize = 7;

fn page() -> String {
    let rows: String = (0..200)
        .map(|i| format!("<tr><td>Item {i}</td><td><a href=\"/item/{i}\">details</a></td></tr>"))
        .collect();
    format!(
        "<!doctype html><title>Catalogue</title><h1>Catalogue</h1>\
         <form><input name=q aria-label=Search><button>Go</button></form><table>{rows}</table>"
    )
}

/// Kibibytes of `field` of `/proc/PID/{file}` (`status`: `VmHWM`, `VmRSS`; `smaps_rollup`:
/// `Pss`) of each live process in group `group`, summed, and how many processes there are.
fn group_kib(group: u32, file: &str, field: &str) -> (u64, usize) {
    let mut total = 0;
    let mut count = 0;
    for entry in std::fs::read_dir("/proc").unwrap().filter_map(Result::ok) {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // After the parenthesised name: the state, the parent, the process group.
        let after_name = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or("");
        let fields: Vec<&str> = after_name.split_whitespace().collect();
        let pgrp = fields.get(2).and_then(|g| g.parse::<u32>().ok());
        // A zombie has exited; it only waits for its parent to collect it.
        if pgrp != Some(group) || fields.first() == Some(&"Z") {
            continue;
        }
        count += 1;
        let status = std::fs::read_to_string(format!("/proc/{pid}/{file}")).unwrap_or_default();
        total += status
            .lines()
            .find_map(|line| line.strip_prefix(&format!("{field}:")))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .unwrap_or(0);
    }
    (total, count)
}

fn row(name: &str, mut samples: Vec<f64>, unit: &str) {
    samples.sort_by(f64::total_cmp);
    println!(
        "| {name:<52} | {:>9.1} | {:>9.1} | {:>9.1} | {unit:<4} |",
        samples[0],
        samples[samples.len() / 2],
        samples[samples.len() - 1]
    );
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let Some(executable) = find_executable(None) else {
        eprintln!("no Chromium on PATH: run ./scripts/system-deps --heavy first");
        std::process::exit(1);
    };
    let site = WebSite::spawn(BTreeMap::from([("/".to_owned(), Page::html(page()))])).unwrap();
    let url = format!("{}/", site.url());
    let profiles = tempfile::tempdir().unwrap();
    let (mut cold, mut warm, mut peak, mut processes) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut gone, mut left, mut pss) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..RUNS {
        let browser = Browser::new(BrowserSettings {
            executable: executable.clone(),
            profiles: profiles.path().to_path_buf(),
            allow_private: true,
            hidden: Vec::new(),
            navigation_timeout: Duration::from_secs(30),
        });
        let started = Instant::now();
        browser.navigate(&url).await.unwrap();
        let snapshot = browser.snapshot(false).await.unwrap();
        cold.push(started.elapsed().as_secs_f64() * 1000.0);
        assert!(snapshot.contains("Item 199"));
        for _ in 0..3 {
            let started = Instant::now();
            browser.navigate(&url).await.unwrap();
            browser.snapshot(false).await.unwrap();
            warm.push(started.elapsed().as_secs_f64() * 1000.0);
        }
        let group = browser.process_id().await.unwrap();
        let (kib, count) = group_kib(group, "status", "VmHWM");
        pss.push(group_kib(group, "smaps_rollup", "Pss").0 as f64 / 1024.0);
        peak.push(kib as f64 / 1024.0);
        processes.push(count as f64);
        let ended = Instant::now();
        drop(browser);
        while group_kib(group, "status", "VmRSS").1 > 0 && ended.elapsed() < Duration::from_secs(5)
        {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        gone.push(ended.elapsed().as_secs_f64() * 1000.0);
        left.push(group_kib(group, "status", "VmRSS").1 as f64);
    }
    println!("browser: {}", executable.display());
    println!(
        "| {:<52} | {:>9} | {:>9} | {:>9} | {:<4} |",
        "", "min", "median", "max", "unit"
    );
    println!(
        "|{:-<54}|{:->11}|{:->11}|{:->11}|{:-<6}|",
        "", "", "", "", ""
    );
    row(
        "first snapshot, cold (start + navigate + snapshot)",
        cold,
        "ms",
    );
    row("snapshot, warm (navigate + snapshot)", warm, "ms");
    row(
        "browser peak RSS per session (VmHWM, whole group)",
        peak,
        "MiB",
    );
    row(
        "browser memory after it (Pss: shared pages split)",
        pss,
        "MiB",
    );
    row("browser processes per session", processes, "");
    row("time until every browser process is gone", gone, "ms");
    row("browser processes left 5 s after the session", left, "");
}
