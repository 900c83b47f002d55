//! Plugin call overhead: cold compile, load from the compile cache, an
//! Extism module's load (cold, and with its tool list remembered), warm
//! instantiation from the `InstancePre`, and per-call cost of the `noop`
//! plugin (fresh instance per call, as `PluginTools` does, and a kept instance).
//!
//! `cargo bench -p talaria-plugin-host --bench plugin_calls` (set
//! `TALARIA_WASM_POOLING=0` to measure on-demand allocation instead of the
//! pooling allocator). The guest plugins are built with
//! `scripts/build-plugins` unless `TALARIA_PLUGINS_PREBUILT` names a directory
//! holding `dist/fs` and `test/noop`. Targets: instantiate ≤ 50 µs, call ≤ 10 µs.

use std::error::Error;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use talaria_plugin_host::{Grants, HostOptions, PluginHost, PluginTools, uses_pooling};
use tokio_util::sync::CancellationToken;

type Result<T> = std::result::Result<T, Box<dyn Error>>;

fn plugins_root() -> Result<PathBuf> {
    if let Some(dir) = std::env::var_os("TALARIA_PLUGINS_PREBUILT") {
        return Ok(PathBuf::from(dir));
    }
    // This crate sits at host/plugin-host.
    let repo = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).to_path_buf();
    let status = std::process::Command::new(repo.join("scripts/build-plugins"))
        .current_dir(&repo)
        .status()?;
    if !status.success() {
        return Err(format!("scripts/build-plugins failed: {status}").into());
    }
    Ok(repo.join("target/plugins"))
}

struct Stats {
    median: Duration,
    p95: Duration,
    mean: Duration,
    n: usize,
}

fn stats(mut samples: Vec<Duration>) -> Stats {
    samples.sort();
    let n = samples.len().max(1);
    let total: Duration = samples.iter().sum();
    Stats {
        median: samples.get(n / 2).copied().unwrap_or_default(),
        p95: samples.get(n * 95 / 100).copied().unwrap_or_default(),
        mean: total / u32::try_from(n).unwrap_or(u32::MAX),
        n: samples.len(),
    }
}

fn fmt(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us >= 10_000.0 {
        format!("{:.1} ms", us / 1000.0)
    } else {
        format!("{us:.1} µs")
    }
}

fn row(name: &str, s: &Stats, target: &str) {
    println!(
        "| {name:<44} | {:>6} | {:>10} | {:>10} | {:>10} | {target:<8} |",
        s.n,
        fmt(s.median),
        fmt(s.p95),
        fmt(s.mean)
    );
}

fn main() -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(run())
}

async fn run() -> Result<()> {
    let root = plugins_root()?;
    let fs_dir = root.join("dist/fs");
    let noop_dir = root.join("test/noop");
    let scratch = tempfile::tempdir()?;
    let grants = |dir: &Path| -> Result<Grants> {
        let manifest = talaria_plugin_host::Manifest::load(&dir.join("plugin.toml"))?;
        Ok(Grants::all_requested(&manifest))
    };

    // Cold compile: a fresh cache directory each time.
    let mut rows = Vec::new();
    for (name, dir) in [("fs", &fs_dir), ("noop", &noop_dir)] {
        let mut samples = Vec::new();
        for i in 0..3 {
            let host = PluginHost::new(HostOptions::new(
                scratch.path().join(format!("cold-{name}-{i}")),
                scratch.path().join("data"),
            ))?;
            let start = Instant::now();
            let plugin = host.load(dir, &grants(dir)?).await?;
            samples.push(start.elapsed());
            assert!(!plugin.from_cache());
        }
        rows.push((
            format!("load {name}: cold (compile + list-tools)"),
            stats(samples),
            "",
        ));
    }

    // Warm: from the cache.
    let host = PluginHost::new(HostOptions::new(
        scratch.path().join("warm"),
        scratch.path().join("data"),
    ))?;
    for (name, dir) in [("fs", &fs_dir), ("noop", &noop_dir)] {
        host.load(dir, &grants(dir)?).await?;
        let mut samples = Vec::new();
        for _ in 0..20 {
            let start = Instant::now();
            let plugin = host.load(dir, &grants(dir)?).await?;
            samples.push(start.elapsed());
            assert!(plugin.from_cache());
        }
        rows.push((
            format!("load {name}: from cache (+ list-tools)"),
            stats(samples),
            "",
        ));
    }

    // Extism modules are compiled in every process (their compiled form has
    // no verified disk cache), on first use: a load compiles only when the
    // module's tool list is not remembered yet.
    let extism_dir = root.join("test/extism-probe");
    if extism_dir.join("plugin.wasm").is_file() {
        for (label, cache) in [
            ("load extism-probe: cold (compile + describe)", None),
            (
                "load extism-probe: tool list remembered",
                Some("extism-warm"),
            ),
        ] {
            let mut samples = Vec::new();
            for i in 0..6 {
                let dir = cache.map_or_else(|| format!("extism-{i}"), str::to_owned);
                let host = PluginHost::new(HostOptions::new(
                    scratch.path().join(dir),
                    scratch.path().join("data"),
                ))?;
                let start = Instant::now();
                host.load(&extism_dir, &grants(&extism_dir)?).await?;
                // The first remembered-list sample is the one that remembers it.
                if cache.is_none() || i > 0 {
                    samples.push(start.elapsed());
                }
            }
            rows.push((label.into(), stats(samples), ""));
        }
    } else {
        eprintln!("no extism-probe rows: run scripts/build-probes first");
    }

    let noop = host.load(&noop_dir, &Grants::none()).await?;
    let fs = host.load(&fs_dir, &grants(&fs_dir)?).await?;
    let cwd = scratch.path().join("cwd");
    std::fs::create_dir_all(&cwd)?;

    // Warm instantiation from the InstancePre (store + WASI context + instance).
    for (name, plugin, dir) in [("noop", &noop, None), ("fs", &fs, Some(cwd.as_path()))] {
        for _ in 0..200 {
            drop(plugin.instantiate(dir).await?);
        }
        let mut samples = Vec::with_capacity(5000);
        for _ in 0..5000 {
            let start = Instant::now();
            let instance = plugin.instantiate(dir).await?;
            samples.push(start.elapsed());
            drop(instance);
        }
        rows.push((
            format!("instantiate {name} (warm, InstancePre)"),
            stats(samples),
            "≤ 50 µs",
        ));
    }

    // A call as PluginTools makes it: fresh instance + call-tool + JSON check.
    let tools = PluginTools::new(vec![noop.clone()], &cwd)?;
    let cancel = CancellationToken::new();
    for _ in 0..200 {
        tools.call("noop", "{}", "c", "bench", &cancel).await?;
    }
    let mut samples = Vec::with_capacity(5000);
    for _ in 0..5000 {
        let start = Instant::now();
        tools.call("noop", "{}", "c", "bench", &cancel).await?;
        samples.push(start.elapsed());
    }
    rows.push((
        "noop: instantiate + call (PluginTools)".into(),
        stats(samples),
        "",
    ));

    // Call only, on a kept instance.
    let mut instance = noop.instantiate(None).await?;
    for _ in 0..1000 {
        instance.call("noop", "{}").await?;
    }
    let mut samples = Vec::with_capacity(20000);
    for _ in 0..20000 {
        let start = Instant::now();
        instance.call("noop", "{}").await?;
        samples.push(start.elapsed());
    }
    rows.push((
        "noop: call only (kept instance)".into(),
        stats(samples),
        "≤ 10 µs",
    ));

    println!();
    println!(
        "plugin host, {} allocator, {} threads",
        if uses_pooling() {
            "pooling"
        } else {
            "on-demand"
        },
        std::thread::available_parallelism().map_or(0, std::num::NonZero::get)
    );
    println!(
        "| {:<44} | {:>6} | {:>10} | {:>10} | {:>10} | {:<8} |",
        "what", "n", "median", "p95", "mean", "target"
    );
    println!(
        "|{}|{}|{}|{}|{}|{}|",
        "-".repeat(46),
        "-".repeat(8),
        "-".repeat(12),
        "-".repeat(12),
        "-".repeat(12),
        "-".repeat(10)
    );
    for (name, s, target) in &rows {
        row(name, s, target);
    }
    Ok(())
}
