//! What screening one command costs: the lists on its text alone
//! (`classify_text`) against the lists plus the bash syntax tree (`classify`),
//! over every command of the corpus. Prints the mean per command.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use talaria_approval::Classifier;

/// The corpus commands (comments and blank lines skipped; escapes left as written).
fn corpus() -> Vec<String> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/corpus");
    ["safe", "dangerous", "hardline", "protected"]
        .iter()
        .flat_map(|name| {
            std::fs::read_to_string(format!("{dir}/{name}.txt"))
                .unwrap()
                .lines()
                .map(str::trim)
                .filter(|line| !line.is_empty() && !line.starts_with('#'))
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect()
}

fn per_command(commands: &[String], rounds: u32, classify: impl Fn(&str)) -> Duration {
    let started = Instant::now();
    for _ in 0..rounds {
        for command in commands {
            classify(command);
        }
    }
    started.elapsed() / (rounds * u32::try_from(commands.len()).unwrap())
}

fn main() {
    let classifier = Classifier::builtin().unwrap();
    classifier.compile_all().unwrap();
    let commands = corpus();
    let rounds = 20;
    // Warm up the lazily compiled patterns and the parser's caches.
    per_command(&commands, 1, |c| drop(classifier.classify(c)));
    let text = per_command(&commands, rounds, |c| drop(classifier.classify_text(c)));
    let full = per_command(&commands, rounds, |c| drop(classifier.classify(c)));
    println!(
        "{} commands, {rounds} rounds, mean per command:",
        commands.len()
    );
    println!("| screen | µs |\n|---|---|");
    println!(
        "| lists on the text (classify_text) | {:.1} |",
        text.as_secs_f64() * 1e6
    );
    println!(
        "| lists + bash syntax tree (classify) | {:.1} |",
        full.as_secs_f64() * 1e6
    );
}
