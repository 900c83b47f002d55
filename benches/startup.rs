//! Start-up of the real binary: `talaria --version`, and the REPL from exec
//! to its first prompt in a pseudo-terminal with the first-party plugins
//! installed and their compiled components cached. Prints min/median/max.
//!
//! `cargo bench --bench startup` (needs `scripts/build-plugins` run once).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;
use std::time::{Duration, Instant};

use std::io::{Read, Write};

use rexpect::process::PtyProcess;

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

    // Read the pty directly: rexpect's expect polls every 100 ms, which
    // would measure its poll interval instead of Talaria.
    let prompt = "› ".as_bytes();
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
            let start = Instant::now();
            let mut process = PtyProcess::new(command).unwrap();
            let mut pty = process.get_file_handle().unwrap();
            let mut seen = Vec::new();
            let mut buffer = [0u8; 4096];
            while !seen.windows(prompt.len()).any(|w| w == prompt) {
                let n = pty.read(&mut buffer).unwrap();
                assert!(n > 0, "talaria closed its terminal before the prompt");
                seen.extend_from_slice(&buffer[..n]);
            }
            let elapsed = start.elapsed();
            pty.write_all(&[4]).unwrap(); // Ctrl-D
            process.exit().unwrap();
            elapsed
        })
        .collect();

    println!("| start-up ({RUNS} runs)               |  min ms  |  med ms  |  max ms  |");
    println!("|----------------------------------|----------|----------|----------|");
    row("talaria --version", version);
    row("REPL to first prompt (fs+terminal)", to_prompt);
}
