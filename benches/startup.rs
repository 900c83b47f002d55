//! Start-up of the real binary: `talaria --version`, and the REPL from exec
//! to its first prompt in a pseudo-terminal with the first-party plugins
//! installed and their compiled components cached. Prints min/median/max.
//!
//! `cargo bench --bench startup` (needs `scripts/build-plugins` run once).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;
use std::time::{Duration, Instant};

use rexpect::reader::Options;
use rexpect::session::spawn_with_options;

const RUNS: usize = 30;

fn talaria(home: &std::path::Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_talaria"));
    command
        .env_clear()
        .env("TALARIA_HOME", home)
        .env("HOME", home)
        .env("TALARIA_API_KEY", "sk-bench")
        .env("TERM", "xterm-256color")
        .env("PATH", std::env::var_os("PATH").unwrap_or_default());
    command
}

fn row(name: &str, mut samples: Vec<Duration>) {
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "| {name:<32} | {:>8.2} | {:>8.2} | {:>8.2} |",
        ms(samples[0]),
        ms(samples[samples.len() / 2]),
        ms(samples[samples.len() - 1])
    );
}

fn main() {
    let home = tempfile::tempdir().unwrap();
    // Warm the plugin compile cache once (what an installed Talaria has).
    let warm = talaria(home.path())
        .args(["plugins", "info", "terminal"])
        .output()
        .unwrap();
    assert!(
        warm.status.success(),
        "{}",
        String::from_utf8_lossy(&warm.stderr)
    );
    talaria(home.path())
        .args(["plugins", "info", "fs"])
        .output()
        .unwrap();

    let version: Vec<Duration> = (0..RUNS)
        .map(|_| {
            let start = Instant::now();
            let out = talaria(home.path()).arg("--version").output().unwrap();
            assert!(out.status.success());
            start.elapsed()
        })
        .collect();

    // The prompt symbol as rexpect reads it (one char per byte).
    let prompt: String = "› ".bytes().map(char::from).collect();
    let to_prompt: Vec<Duration> = (0..RUNS)
        .map(|_| {
            let mut command = talaria(home.path());
            command.args([
                "--provider",
                "openai",
                "--model",
                "bench",
                "--base-url",
                "http://127.0.0.1:9/v1",
            ]);
            let options = Options::new().timeout_ms(Some(30_000));
            let start = Instant::now();
            let mut session = spawn_with_options(command, options).unwrap();
            session.exp_string(&prompt).unwrap();
            let elapsed = start.elapsed();
            session.send_control('d').unwrap();
            session.exp_eof().unwrap();
            elapsed
        })
        .collect();

    println!("| start-up ({RUNS} runs)               |  min ms  |  med ms  |  max ms  |");
    println!("|----------------------------------|----------|----------|----------|");
    row("talaria --version", version);
    row("REPL to first prompt (fs+terminal)", to_prompt);
}
