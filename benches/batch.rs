//! Batch throughput through the real binary: `talaria batch run` against a
//! scripted model that answers at once (200 prompts: the time is Talaria's —
//! building each item's agent, its session in SQLite, the trajectory line)
//! and one that takes 200 ms per answer (40 prompts: workers overlap the
//! model's latency), with 1, 4 and 8 workers; 3 runs each.
//!
//! Each run's profile is warmed by one one-shot first. `cargo bench --bench batch` (or with
//! `TALARIA_BENCH_BIN=PATH`, another build). Prints items per second (min/median/max).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use talaria_testkit::{Script, ScriptedServer, ServerOptions, Step};

const RUNS: usize = 3;

fn talaria(home: &Path) -> Command {
    // `TALARIA_BENCH_BIN`: another build to measure (it finds its plugins next to itself).
    let binary = std::env::var_os("TALARIA_BENCH_BIN")
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_talaria").into());
    let mut command = Command::new(binary);
    command
        .env_clear()
        .env("TALARIA_HOME", home)
        .env("HOME", home)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default());
    command
}

/// Items per second of one run of `items` prompts with `workers`, the
/// model answering after `delay_ms`.
fn one_run(items: usize, workers: usize, delay_ms: u64) -> f64 {
    let home = tempfile::tempdir().unwrap();
    // One answer more: a one-shot first warms the profile (its plugins compiled and listed,
    // as an installed Talaria has them), so the batch measures items, not the first compile.
    let options = ServerOptions {
        chunk_size: 0,
        ..ServerOptions::default()
    };
    let model = ScriptedServer::spawn_with(
        Script::new(
            std::iter::once(Step::text("warm"))
                .chain((0..items).map(|i| Step::text(format!("answer {i}")).delayed(delay_ms))),
        ),
        options,
    )
    .unwrap();
    std::fs::write(
        home.path().join("config.yaml"),
        format!(
            "model:\n  provider: openai\n  name: bench\n  base_url: {}\n  api_key: sk-bench\n",
            model.openai_base_url()
        ),
    )
    .unwrap();
    let prompts = home.path().join("prompts.jsonl");
    let lines: Vec<String> = (0..items)
        .map(|i| serde_json::json!({"id": i, "prompt": format!("question {i}")}).to_string())
        .collect();
    std::fs::write(&prompts, lines.join("\n")).unwrap();
    let out = home.path().join("out");
    let warmed = talaria(home.path())
        .args(["-q", "warm up"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(warmed.success());
    let started = Instant::now();
    let status = talaria(home.path())
        .args(["batch", "run"])
        .arg(&prompts)
        .arg("--out")
        .arg(&out)
        .args(["--workers", &workers.to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    let seconds = started.elapsed().as_secs_f64();
    assert!(status.success());
    let written = std::fs::read_to_string(out.join("trajectories.jsonl"))
        .unwrap()
        .lines()
        .count();
    assert_eq!(written, items);
    items as f64 / seconds
}

fn main() {
    for (items, delay_ms) in [(200, 0), (40, 200)] {
        println!(
            "\n| {items} prompts, model answers in {delay_ms} ms | min items/s | med items/s | max items/s |"
        );
        println!("|---|---|---|---|");
        for workers in [1, 4, 8] {
            let mut rates: Vec<f64> = (0..RUNS)
                .map(|_| one_run(items, workers, delay_ms))
                .collect();
            rates.sort_by(f64::total_cmp);
            println!(
                "| {workers} worker(s) | {:.1} | {:.1} | {:.1} |",
                rates[0],
                rates[RUNS / 2],
                rates[RUNS - 1]
            );
        }
    }
}
