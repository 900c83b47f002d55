//! What redaction costs on a tool result: `cargo bench -p talaria-redact --bench redact` prints a
//! table of microseconds per 50 KB result, with no secret in it, with one in every line, and for
//! source code that names keys and tokens (tests/corpus/code.txt) as it is and as read_file
//! returns it (JSON, numbered lines), which the redactor reads through its escapes.
#![allow(clippy::unwrap_used, clippy::print_stdout)]

use std::hint::black_box;
use std::time::Instant;

/// About the default per-result limit (`tools.result_max_bytes`).
const RESULT_BYTES: usize = 50_000;
const ROUNDS: u32 = 200;

fn result_of(line: impl Fn(usize) -> String) -> String {
    let mut text = String::new();
    let mut index = 0;
    while text.len() < RESULT_BYTES {
        text.push_str(&line(index));
        text.push('\n');
        index += 1;
    }
    text
}

fn micros_per_result(text: &str) -> f64 {
    let start = Instant::now();
    for _ in 0..ROUNDS {
        black_box(talaria_redact::redact(black_box(text)));
    }
    start.elapsed().as_secs_f64() * 1e6 / f64::from(ROUNDS)
}

/// 50 KB of code.txt's lines.
fn source_code() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/corpus/code.txt");
    let corpus = std::fs::read_to_string(path).unwrap();
    let lines: Vec<&str> = corpus.lines().filter(|l| !l.starts_with("# ")).collect();
    result_of(|i| lines[i % lines.len()].to_owned())
}

/// `text` as the fs plugin's read_file returns it to the dispatcher.
fn read_file_result(text: &str) -> String {
    let mut content = String::new();
    for (index, line) in text.lines().enumerate() {
        if index > 0 {
            content.push_str("\\n");
        }
        content.push_str(&format!("{:>6}\\t", index + 1));
        for c in line.chars() {
            match c {
                '"' => content.push_str("\\\""),
                '\\' => content.push_str("\\\\"),
                '\t' => content.push_str("\\t"),
                c => content.push(c),
            }
        }
    }
    format!(
        r#"{{"content":"{content}","total_lines":{}}}"#,
        text.lines().count()
    )
}

fn main() {
    let code = source_code();
    let cases = [
        (
            "build log, no secret",
            result_of(|i| format!("   Compiling crate-{i} v0.1.{i} (/work/src/crate-{i})")),
        ),
        (
            "JSON lines, no secret",
            result_of(|i| {
                format!(
                    r#"{{"id": {i}, "sha": "3f9a2c1d8e7b6a5f4c3d2e1f0a9b8c7d6e5f4a3b", "ok": true}}"#
                )
            }),
        ),
        (
            ".env, a key on every line",
            result_of(|i| format!("SERVICE_{i}_API_KEY=sk-proj-abcdefghijklmnopqrstuvwx{i:08}")),
        ),
        ("source code naming keys, no secret", code.clone()),
        ("the same as a read_file result", read_file_result(&code)),
    ];
    println!(
        "{} KB results, {ROUNDS} rounds, mean per result:",
        RESULT_BYTES / 1000
    );
    println!("| text | µs |");
    println!("|---|---|");
    for (name, text) in &cases {
        println!("| {name} | {:.0} |", micros_per_result(text));
    }
}
