//! What an active memory provider adds to each turn:
//!
//! - on the turn's path: the recall (`prefetch` through the session's
//!   worker, with redaction, the threat scan and the `<memory-context>`
//!   wrapping) and handing the finished turn over (`turn_finished`: a queue
//!   push);
//! - off the path: the provider's own `sync-turn` and `prefetch` calls on its
//!   long-lived instance.
//!
//! Two providers: `memory-recorder` in its quiet mode (a no-op component:
//! the host's cost alone) and, with `-- --heavy`, the first-party `facts`
//! provider over 10,000 facts (seeded through its `fact_store` tool first).
//!
//! `cargo bench -p talaria-agent --bench memory [-- --heavy]`. Prints
//! min/median/max tables (milliseconds).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use talaria_agent::external_memory::ActiveMemory;
use talaria_kernel::{CancellationToken, ExternalMemory, Message};
use talaria_plugin_host::{
    Grants, HostOptions, LoadedPlugin, Manifest, MemoryScope, MemorySessionKind, PluginHost,
    PluginMemoryProviders, PluginTools,
};

const TURNS: usize = 200;
const FACTS: usize = 10_000;

/// Builds the plugins this bench loads and returns the packages' root.
fn packages() -> PathBuf {
    let repo = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    let status = std::process::Command::new(repo.join("scripts/build-plugins"))
        .args([
            "-p",
            "talaria-plugin-memory-recorder",
            "-p",
            "talaria-plugin-facts",
        ])
        .current_dir(repo)
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "scripts/build-plugins failed");
    repo.join("target/plugins")
}

fn scope() -> MemoryScope {
    MemoryScope {
        session_id: "bench".into(),
        kind: MemorySessionKind::Primary,
        platform: "cli".into(),
        profile: "default".into(),
        user_id: None,
        parent_session: None,
        model: "m".into(),
    }
}

fn row(name: &str, mut samples: Vec<f64>) {
    samples.sort_by(f64::total_cmp);
    println!(
        "| {name:<56} | {:>8.3} | {:>8.3} | {:>8.3} |",
        samples[0],
        samples[samples.len() / 2],
        samples[samples.len() - 1]
    );
}

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1000.0
}

async fn load(host: &PluginHost, dir: &Path, config: &[(&str, &str)]) -> LoadedPlugin {
    let manifest = Manifest::load(&dir.join("plugin.toml")).unwrap();
    let settings: BTreeMap<String, String> = config
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    host.load_configured(dir, &Grants::all_requested(&manifest), &settings)
        .await
        .unwrap()
}

/// A turn of the bench: a question about item `i` and its answer.
fn turn(i: usize) -> [Message; 2] {
    [
        Message::user(format!(
            "what do we know about project orchid and item {i}?"
        )),
        Message::assistant(format!("Item {i} of project orchid ships next week.")),
    ]
}

/// Times `TURNS` turns of `plugin` as a provider: the worker's path and the
/// instance's own calls.
async fn measure(label: &str, plugin: &LoadedPlugin, root: &Path) {
    let providers = PluginMemoryProviders::new(vec![plugin.clone()], root).unwrap();
    let name = plugin.name();
    let mut recall = Vec::new();
    let mut hand_over = Vec::new();
    let session = providers.open(name, &scope()).await.unwrap();
    let active =
        ActiveMemory::start(session, MemorySessionKind::Primary, Duration::from_secs(5)).await;
    for i in 0..TURNS {
        let [user, reply] = turn(i);
        let start = Instant::now();
        let recalled = active.prefetch(&user.content).await;
        recall.push(ms(start));
        let start = Instant::now();
        active.turn_finished(&[user, reply]);
        hand_over.push(ms(start));
        std::hint::black_box(recalled);
        // Let the worker sync before the next turn, as a model call would.
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    active.end(&[]).await;

    let mut session = providers.open(name, &scope()).await.unwrap();
    let mut prefetch = Vec::new();
    let mut sync = Vec::new();
    for i in 0..TURNS {
        let messages = turn(i);
        let start = Instant::now();
        session.prefetch(&messages[0].content).await.unwrap();
        prefetch.push(ms(start));
        let start = Instant::now();
        session.sync_turn(&messages).await.unwrap();
        sync.push(ms(start));
    }
    session.shutdown().await.unwrap();
    row(&format!("{label}: recall on the turn's path"), recall);
    row(
        &format!("{label}: hand-over of the finished turn"),
        hand_over,
    );
    row(&format!("{label}: the instance's prefetch"), prefetch);
    row(&format!("{label}: the instance's sync-turn"), sync);
}

/// Adds `count` facts through the plugin's `fact_store` tool.
async fn seed_facts(plugin: &LoadedPlugin, root: &Path, count: usize) {
    let tools = PluginTools::new(vec![plugin.clone()], root).unwrap();
    let cancel = CancellationToken::new();
    let topics = ["orchid", "falcon", "granite", "harbour", "meadow", "quartz"];
    let start = Instant::now();
    for i in 0..count {
        let topic = topics[i % topics.len()];
        let content = format!("Item {i} of project {topic} is owned by team {}", i % 37);
        let arguments = serde_json::json!({"action": "add", "content": content}).to_string();
        tools
            .call("fact_store", &arguments, "seed", "seed", &cancel)
            .await
            .unwrap();
    }
    eprintln!(
        "seeded {count} facts in {:.1} s",
        start.elapsed().as_secs_f64()
    );
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let heavy = std::env::args().any(|a| a == "--heavy");
    let root = tempfile::tempdir().unwrap();
    let packages = packages();
    let host = PluginHost::new(HostOptions::new(
        root.path().join("cache"),
        root.path().join("data"),
    ))
    .unwrap();
    println!("{TURNS} turns each; milliseconds");
    println!(
        "| {:<46} | {:>8} | {:>8} | {:>8} |",
        "", "min", "median", "max"
    );
    println!("|{:-<58}|{:->10}|{:->10}|{:->10}|", "", "", "", "");
    let noop = load(
        &host,
        &packages.join("test/memory-recorder"),
        &[("quiet", "true")],
    )
    .await;
    measure("no-op provider", &noop, root.path()).await;
    if heavy {
        let facts = load(&host, &packages.join("dist/facts"), &[]).await;
        seed_facts(&facts, root.path(), FACTS).await;
        measure(&format!("facts over {FACTS} facts"), &facts, root.path()).await;
    } else {
        println!("(facts over {FACTS} facts: run with -- --heavy)");
    }
}
