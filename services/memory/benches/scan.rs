//! What the threat scanner costs: loading `threats.toml`, the first scans (which compile the
//! regexes the texts need), compiling every regex, and the warm scan of each corpus entry as a
//! memory entry and as a document, plus one 20,000-character context file (the cap).
//!
//! `cargo bench -p talaria-memory --bench scan`. Prints a table (medians of several runs).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use talaria_memory::scan::{Scanner, Scope};

const THREATS: &str = include_str!("../threats.toml");

/// Runs of each cold measurement; the median is shown.
const RUNS: usize = 7;

/// Warm rounds over the whole corpus (and over the large document); the median is shown.
const ROUNDS: u32 = 20;

/// Every corpus entry (comments, blank lines and section headers skipped; escapes as written).
fn corpus() -> Vec<String> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/corpus");
    ["threats", "benign", "documents"]
        .iter()
        .flat_map(|name| {
            std::fs::read_to_string(format!("{dir}/{name}.txt"))
                .unwrap()
                .lines()
                .map(str::trim)
                .filter(|line| !line.is_empty() && !line.starts_with('#') && !is_header(line))
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// A section header of threats.txt (`[promptware]`, `[memory:credential]`).
fn is_header(line: &str) -> bool {
    line.starts_with('[') && line.ends_with(']') && !line.contains(' ')
}

/// A harmless context file at the 20,000-character cap, built from the benign notes.
fn large_document() -> String {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/corpus");
    let benign = std::fs::read_to_string(format!("{dir}/benign.txt")).unwrap();
    let lines: Vec<&str> = benign
        .lines()
        .filter(|line| !line.trim().is_empty() && !line.starts_with('#'))
        .collect();
    let mut text = String::new();
    for line in lines.iter().cycle() {
        if text.chars().count() >= 20_000 {
            break;
        }
        text.push_str(line);
        text.push('\n');
    }
    text
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn cold(measure: impl Fn() -> Duration) -> Duration {
    median((0..RUNS).map(|_| measure()).collect())
}

fn main() {
    let entries = corpus();
    let document = large_document();

    let load = cold(|| {
        let started = Instant::now();
        drop(Scanner::from_toml(THREATS).unwrap());
        started.elapsed()
    });
    let first_pass = cold(|| {
        let scanner = Scanner::from_toml(THREATS).unwrap();
        let started = Instant::now();
        for entry in &entries {
            drop(scanner.scan_all(entry));
        }
        started.elapsed()
    });
    let compile_all = cold(|| {
        let scanner = Scanner::from_toml(THREATS).unwrap();
        let started = Instant::now();
        scanner.compile_all().unwrap();
        started.elapsed()
    });

    let scanner = Scanner::from_toml(THREATS).unwrap();
    scanner.compile_all().unwrap();
    // Medians of per-round means: other processes on the machine skew a plain mean.
    let entry_count = u32::try_from(entries.len()).unwrap();
    let warm = |scope: Scope| {
        median(
            (0..ROUNDS)
                .map(|_| {
                    let started = Instant::now();
                    for entry in &entries {
                        drop(scanner.scan_all_in(entry, scope));
                    }
                    started.elapsed() / entry_count
                })
                .collect(),
        )
    };
    let memory = warm(Scope::Memory);
    let as_document = warm(Scope::Document);
    let large = median(
        (0..ROUNDS)
            .map(|_| {
                let started = Instant::now();
                drop(scanner.scan_all_in(&document, Scope::Document));
                started.elapsed()
            })
            .collect(),
    );

    let rules = scanner.rules().count();
    println!(
        "{rules} rules, {} corpus entries, {} chars in the large document",
        entries.len(),
        document.chars().count()
    );
    println!("| measure | time |\n|---|---|");
    println!("| load threats.toml (from_toml) | {:.0} µs |", micros(load));
    println!(
        "| first scan of every entry (compiles what it needs) | {:.1} ms |",
        millis(first_pass)
    );
    println!("| compile every regex | {:.1} ms |", millis(compile_all));
    println!("| warm scan per entry, memory | {:.1} µs |", micros(memory));
    println!(
        "| warm scan per entry, document | {:.1} µs |",
        micros(as_document)
    );
    println!(
        "| warm scan, 20,000-char context file | {:.0} µs |",
        micros(large)
    );
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
