//! Search latency over a million messages: builds (once, cached under
//! `target/bench-data/`) a database of generated conversations, then times
//! `SessionDb::search` for about a hundred queries and prints p50/p95/p99.
//!
//! `TALARIA_BENCH_MESSAGES=N` builds and measures a smaller database;
//! `TALARIA_BENCH_VERBOSE=1` also prints each query's median.

#[path = "support/corpus.rs"]
mod corpus;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use corpus::Corpus;
use talaria_store::{NewSession, SCHEMA_VERSION, SessionDb};

/// Bump when the generated corpus changes, so cached databases are rebuilt.
const CORPUS_VERSION: u32 = 1;
const DEFAULT_MESSAGES: usize = 1_000_000;
const MESSAGES_PER_SESSION: usize = 100;
const LIMIT: usize = 20;
const RUNS_PER_QUERY: usize = 5;

fn main() {
    if let Err(error) = run() {
        eprintln!("fts_search: {error}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let messages = std::env::var("TALARIA_BENCH_MESSAGES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(DEFAULT_MESSAGES);
    let path = data_dir()?.join(format!(
        "fts-{messages}-c{CORPUS_VERSION}-s{SCHEMA_VERSION}.sqlite"
    ));
    if !path.exists() {
        build(&path, messages)?;
    }
    let size = std::fs::metadata(&path)?.len();
    println!(
        "database: {} ({messages} messages, {:.0} MiB)",
        path.display(),
        size as f64 / 1048576.0
    );
    let db = SessionDb::open(&path)?;
    let queries = queries();
    let verbose = std::env::var_os("TALARIA_BENCH_VERBOSE").is_some();
    // Warm the page cache and statement cache once, as a running process would be.
    for (_, query) in &queries {
        db.search(query, LIMIT, &talaria_store::Principal::owner())?;
    }
    let mut by_kind: Vec<(&str, Vec<Duration>, usize)> = Vec::new();
    let mut all = Vec::new();
    for (kind, query) in &queries {
        let mut hits = 0;
        let mut times = Vec::new();
        for _ in 0..RUNS_PER_QUERY {
            let started = Instant::now();
            hits = db
                .search(query, LIMIT, &talaria_store::Principal::owner())?
                .len();
            times.push(started.elapsed());
        }
        if verbose {
            let mut sorted = times.clone();
            sorted.sort();
            println!(
                "{kind:<14} {query:<32} {:>8.2} ms {hits:>3} hits",
                sorted[sorted.len() / 2].as_secs_f64() * 1000.0
            );
        }
        all.extend(&times);
        match by_kind.iter_mut().find(|(k, _, _)| k == kind) {
            Some((_, durations, total_hits)) => {
                durations.extend(times);
                *total_hits += hits;
            }
            None => by_kind.push((kind, times, hits)),
        }
    }
    println!(
        "\n{:<22} {:>8} {:>10} {:>10} {:>10} {:>10}",
        "queries", "count", "p50", "p95", "p99", "avg hits"
    );
    for (kind, durations, hits) in &by_kind {
        let count = queries.iter().filter(|(k, _)| k == kind).count();
        print_row(kind, count, durations, *hits as f64 / count as f64);
    }
    print_row("all", queries.len(), &all, f64::NAN);
    println!("\n(limit {LIMIT}, {RUNS_PER_QUERY} timed runs per query after one warm-up run)");
    Ok(())
}

fn print_row(label: &str, count: usize, durations: &[Duration], hits: f64) {
    let mut sorted = durations.to_vec();
    sorted.sort();
    let pick = |p: f64| {
        let index = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
        sorted[index].as_secs_f64() * 1000.0
    };
    let hits = if hits.is_nan() {
        "".to_owned()
    } else {
        format!("{hits:.1}")
    };
    println!(
        "{label:<22} {count:>8} {:>7.2} ms {:>7.2} ms {:>7.2} ms {hits:>10}",
        pick(0.50),
        pick(0.95),
        pick(0.99)
    );
}

/// `<target>/bench-data`, found from this benchmark's own path
/// (`<target>/release/deps/fts_search-…`).
fn data_dir() -> Result<PathBuf, Box<dyn std::error::Error>> {
    let exe = std::env::current_exe()?;
    let target = exe
        .ancestors()
        .nth(3)
        .ok_or("cannot find the target directory from the benchmark's path")?;
    let dir = target.join("bench-data");
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// Builds the database at a temporary name and renames it when complete, so
/// an interrupted build is never mistaken for a cached one.
fn build(path: &Path, messages: usize) -> Result<(), Box<dyn std::error::Error>> {
    let partial = path.with_extension("building");
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", partial.display()));
    }
    eprintln!("building {} ({messages} messages)…", path.display());
    let started = Instant::now();
    let db = SessionDb::open(&partial)?;
    let mut corpus = Corpus::new(0x5e55_10b5);
    let sessions = messages.div_ceil(MESSAGES_PER_SESSION);
    let mut batch = Vec::with_capacity(MESSAGES_PER_SESSION);
    for session in 0..sessions {
        let id = format!(
            "{:08x}-bench-{session}",
            (session as u64).wrapping_mul(0x9e37_79b9) as u32
        );
        db.create_session(&NewSession {
            id: id.clone(),
            title: None,
            source: "bench".into(),
            model: "bench-model".into(),
            cwd: Some(format!("/home/user/project{}", session % 50)),
            parent_session_id: None,
            principal: talaria_store::Principal::owner(),
        })?;
        let count = MESSAGES_PER_SESSION.min(messages - session * MESSAGES_PER_SESSION);
        batch.clear();
        batch.extend((0..count).map(|index| corpus.message(session, index)));
        // One transaction per session: a hundred messages per commit.
        db.append_batch(&id, &batch)?;
        if session % 1000 == 999 {
            eprintln!(
                "  {} messages, {:.0?}",
                (session + 1) * MESSAGES_PER_SESSION,
                started.elapsed()
            );
        }
    }
    drop(db);
    std::fs::rename(&partial, path)?;
    eprintln!("built in {:.1?}", started.elapsed());
    Ok(())
}

/// About a hundred queries: words across the frequency range, two-word
/// queries (AND and quoted phrases), substrings of words, Chinese text.
fn queries() -> Vec<(&'static str, String)> {
    let mut corpus = Corpus::new(42);
    let words = corpus.words.clone();
    let mut queries = Vec::new();
    // Every 13th word: from the most frequent down to the rarest.
    for word in words.iter().step_by(13) {
        queries.push(("word", word.to_string()));
    }
    for _ in 0..15 {
        let (a, b) = (corpus.word(), corpus.word());
        queries.push(("two words", format!("{a} {b}")));
    }
    for _ in 0..15 {
        let (a, b) = (corpus.word(), corpus.word());
        queries.push(("quoted phrase", format!("\"{a} {b}\"")));
    }
    // The middle of longer words: not a token anywhere, so only trigrams find them.
    for word in words.iter().filter(|w| w.len() >= 8).step_by(3).take(25) {
        let cut = word.len() / 4;
        queries.push(("substring", word[cut..word.len() - cut].to_owned()));
    }
    for query in ["数据库迁移", "检查这个", "超时", "生产环境", "测试"] {
        queries.push(("chinese", query.to_owned()));
    }
    queries
}
