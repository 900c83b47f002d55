//! What a session costs, through the real binary, against the targets of the cost issue:
//! CPU and peak RSS of a one-shot with one `terminal` or `read_file` call, of `--version`,
//! of each extra tool turn; and of the API server: CPU per request outside the model, the
//! latency 20 concurrent streaming clients see, and its RSS idle, at the peak of the burst,
//! after it, and after 1,000 distinct conversations. Prints a table (medians); asserts nothing
//! about speed.
//!
//! Each run's CPU and peak RSS are the kernel's accounting of that process alone. `cargo
//! bench --bench cost` measures the binary cargo built with the bench (every
//! first-party plugin of `scripts/build-plugins` installed next to it, compiled on the warm-up
//! run); `TALARIA_BENCH_BIN=PATH` measures another build, e.g. a release or distribution
//! binary (it finds its plugins next to itself the same way). `MALLOC_ARENA_MAX`, when set,
//! is passed on (to compare allocator settings).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use talaria_testkit::{Script, ScriptedServer, ServerOptions, Step, ToolCall};

const RUNS: usize = 7;
const SERVER_KEY: &str = "bench-server-key";
/// The first argument of this bench run as a measuring helper (see [`measured`]).
const MEASURE: &str = "--measure-one-run";

fn binary() -> PathBuf {
    std::env::var_os("TALARIA_BENCH_BIN").map_or_else(
        || PathBuf::from(env!("CARGO_BIN_EXE_talaria")),
        PathBuf::from,
    )
}

fn talaria(home: &Path, work: &Path) -> Command {
    let mut command = Command::new(binary());
    command
        .env_clear()
        .env("TALARIA_HOME", home)
        .env("HOME", home)
        .env("TALARIA_API_KEY", "sk-bench")
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .envs(std::env::var_os("MALLOC_ARENA_MAX").map(|v| ("MALLOC_ARENA_MAX", v)))
        .current_dir(work)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    command
}

/// CPU milliseconds and peak RSS (MiB) of one run of `command`: run by this bench itself
/// in its `--measure` mode, whose only child it is, so the kernel's accounting of the
/// children of that process (`getrusage`, microseconds and kilobytes) is the run's alone.
fn measured(command: Command) -> (f64, f64) {
    let mut helper = Command::new(std::env::current_exe().unwrap());
    helper
        .arg(MEASURE)
        .arg(command.get_program())
        .args(command.get_args())
        .env_clear()
        .envs(command.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .current_dir(command.get_current_dir().unwrap_or(Path::new(".")))
        .stdin(Stdio::null())
        .stderr(Stdio::null());
    let output = helper.output().unwrap();
    assert!(output.status.success(), "{command:?} failed");
    let text = String::from_utf8_lossy(&output.stdout);
    let figures: Vec<f64> = text
        .split_whitespace()
        .filter_map(|word| word.parse().ok())
        .collect();
    let [cpu_us, kib] = figures[..] else {
        panic!("unexpected report: {text}");
    };
    (cpu_us / 1000.0, kib / 1024.0)
}

/// The `--measure` mode: runs `program args…` once and prints its CPU microseconds and peak
/// RSS in KiB.
fn measure_one(program: &std::ffi::OsStr, args: &[std::ffi::OsString]) {
    use nix::sys::resource::{UsageWho, getrusage};
    let status = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "{program:?} {args:?}: {status}");
    let usage = getrusage(UsageWho::RUSAGE_CHILDREN).unwrap();
    let us = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 * 1e6 + t.tv_usec() as f64;
    println!(
        "{} {}",
        us(usage.user_time()) + us(usage.system_time()),
        usage.max_rss()
    );
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// A profile whose model is `model` (tools: the file and terminal toolsets, as the Hermes
/// comparison offers).
fn home_for(root: &Path, name: &str, model: &ScriptedServer) -> PathBuf {
    let home = root.join(name);
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        home.join("config.yaml"),
        format!(
            "model:\n  provider: openai\n  name: bench\n  base_url: {}\n  api_key: sk-bench\n\
             tools:\n  enabled: [file, terminal]\napi_server:\n  max_concurrent_runs: 64\n",
            model.base_url()
        ),
    )
    .unwrap();
    home
}

/// The scripted model, streaming each SSE event as one HTTP chunk, as hosted APIs flush (the
/// test suite's 11-byte chunks would add hundreds of reads per reply to every figure).
fn model_server(script: Script) -> ScriptedServer {
    let options = ServerOptions {
        chunk_size: 0,
        ..ServerOptions::default()
    };
    ScriptedServer::spawn_with(script, options).unwrap()
}

fn tool_turn(name: &str, arguments: serde_json::Value) -> Step {
    Step::tool_calls([ToolCall::new(name, arguments.to_string())])
}

/// Median CPU ms and peak RSS MiB of a one-shot whose model plays `turns` and then answers.
fn one_shot(root: &Path, name: &str, work: &Path, turns: &[Step]) -> (f64, f64) {
    let per_run = turns.len() + 1;
    let model = model_server(Script::new(
        (0..=RUNS).flat_map(|_| turns.iter().cloned().chain([Step::text("done")])),
    ));
    let home = home_for(root, name, &model);
    let runs: Vec<(f64, f64)> = (0..=RUNS)
        .map(|_| {
            let mut command = talaria(&home, work);
            command.args(["-q", "go", "--yolo"]);
            measured(command)
        })
        .collect();
    assert_eq!(model.requests().len(), per_run * (RUNS + 1));
    // The first run compiles and lists the plugins: what an installed Talaria did once.
    let warm = &runs[1..];
    (
        median(warm.iter().map(|r| r.0).collect()),
        median(warm.iter().map(|r| r.1).collect()),
    )
}

/// utime + stime of `pid` in milliseconds.
fn cpu_ms(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after_name = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = after_name.split(' ').collect();
    let ticks: f64 = fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap();
    // USER_HZ: 100 on every Linux this runs on.
    ticks * 10.0
}

fn status_mib(pid: u32, field: &str) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status
        .lines()
        .find(|l| l.starts_with(field))
        .unwrap_or_else(|| panic!("{field} not in /proc/{pid}/status"));
    let kib: f64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap();
    kib / 1024.0
}

struct Server {
    child: Child,
    port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(home: &Path, work: &Path) -> Server {
    let mut command = talaria(home, work);
    command
        .args(["serve", "--port", "0"])
        .env("TALARIA_API_SERVER_KEY", SERVER_KEY)
        .stderr(Stdio::piped());
    let mut child = command.spawn().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let mut seen = Vec::new();
    let mut byte = [0u8; 1];
    let port = loop {
        assert_eq!(stderr.read(&mut byte).unwrap(), 1, "serve exited: {seen:?}");
        seen.push(byte[0]);
        let text = String::from_utf8_lossy(&seen);
        if let Some(line) = text.lines().find_map(|l| {
            l.strip_prefix("talaria serve: listening on http://127.0.0.1:")
                .filter(|_| text.ends_with('\n'))
        }) {
            break line.trim().parse::<u16>().unwrap();
        }
    };
    // Keep draining stderr so the server never blocks on it.
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    Server { child, port }
}

/// One streamed chat (a new conversation: `n` makes it distinct): seconds until `[DONE]`, and
/// until the first chunk (the assistant's role) arrived.
fn streamed_chat(port: u16, n: usize) -> (f64, f64) {
    let body = format!(
        r#"{{"model":"talaria","stream":true,"messages":[{{"role":"user","content":"conversation {n}"}}]}}"#
    );
    let request = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \
         {SERVER_KEY}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: \
         close\r\n\r\n{body}",
        body.len()
    );
    let started = Instant::now();
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut reply = Vec::new();
    let mut first_chunk = None;
    let mut buffer = [0u8; 4096];
    loop {
        let read = stream.read(&mut buffer).unwrap();
        if read == 0 {
            break;
        }
        reply.extend_from_slice(&buffer[..read]);
        if first_chunk.is_none() && reply.windows(6).any(|w| w == b"\"role\"") {
            first_chunk = Some(started.elapsed().as_secs_f64());
        }
    }
    let reply = String::from_utf8_lossy(&reply);
    assert!(reply.contains("[DONE]"), "{reply}");
    (
        started.elapsed().as_secs_f64(),
        first_chunk.unwrap_or(f64::NAN),
    )
}

struct ServerFigures {
    cpu_per_request_ms: f64,
    sequential_p50_ms: f64,
    first_chunk_p50_ms: f64,
    idle_mib: f64,
    burst_p50_ms: f64,
    burst_peak_mib: f64,
    after_burst_mib: f64,
    after_100_mib: f64,
    after_1000_mib: f64,
}

fn api_server(root: &Path, work: &Path) -> ServerFigures {
    const BURST: usize = 20;
    const SEQUENTIAL: usize = 100;
    const MANY: usize = 1000;
    let total = 2 + SEQUENTIAL + BURST + MANY;
    let model = model_server(Script::new((0..total).map(|i| Step::text(format!("a{i}")))));
    let home = home_for(root, "serve", &model);
    // A warm profile, as an installed Talaria has: its plugins compiled and listed once.
    let mut warm = talaria(&home, work);
    warm.args(["-q", "warm up"]);
    assert!(warm.status().unwrap().success());
    let server = serve(&home, work);
    let pid = server.child.id();
    let _ = streamed_chat(server.port, 0);
    std::thread::sleep(Duration::from_millis(500));
    let idle_mib = status_mib(pid, "VmRSS");

    let before = cpu_ms(pid);
    let times: Vec<(f64, f64)> = (1..=SEQUENTIAL)
        .map(|n| streamed_chat(server.port, n))
        .collect();
    let cpu_per_request_ms = (cpu_ms(pid) - before) / SEQUENTIAL as f64;
    let sequential_p50_ms = median(times.iter().map(|t| t.0).collect()) * 1000.0;
    let first_chunk_p50_ms = median(times.iter().map(|t| t.1).collect()) * 1000.0;
    let after_100_mib = status_mib(pid, "VmRSS");

    let barrier = std::sync::Arc::new(std::sync::Barrier::new(BURST));
    let port = server.port;
    // Every client is started before any is joined (the barrier waits for all).
    #[allow(clippy::needless_collect)]
    let threads: Vec<_> = (0..BURST)
        .map(|i| {
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                barrier.wait();
                streamed_chat(port, 10_000 + i)
            })
        })
        .collect();
    let burst: Vec<f64> = threads.into_iter().map(|t| t.join().unwrap().0).collect();
    let burst_p50_ms = median(burst) * 1000.0;
    let burst_peak_mib = status_mib(pid, "VmHWM");
    std::thread::sleep(Duration::from_secs(2));
    let after_burst_mib = status_mib(pid, "VmRSS");

    for n in 0..MANY {
        let _ = streamed_chat(server.port, 20_000 + n);
    }
    std::thread::sleep(Duration::from_millis(500));
    let after_1000_mib = status_mib(pid, "VmRSS");
    ServerFigures {
        cpu_per_request_ms,
        sequential_p50_ms,
        first_chunk_p50_ms,
        idle_mib,
        burst_p50_ms,
        burst_peak_mib,
        after_burst_mib,
        after_100_mib,
        after_1000_mib,
    }
}

fn main() {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args.get(1).is_some_and(|arg| arg == MEASURE) {
        measure_one(&args[2], &args[3..]);
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let work = root.path().join("work");
    std::fs::create_dir_all(work.join("notes")).unwrap();
    for i in 1..=20 {
        std::fs::write(
            work.join(format!("notes/part-{i:02}.txt")),
            format!("marker {i}\n"),
        )
        .unwrap();
    }
    println!("binary: {}", binary().display());

    let version_home = root.path().join("version");
    std::fs::create_dir_all(&version_home).unwrap();
    let version: Vec<(f64, f64)> = (0..=RUNS)
        .map(|_| {
            let mut command = talaria(&version_home, &work);
            command.arg("--version");
            measured(command)
        })
        .collect();
    let version_cpu = median(version[1..].iter().map(|r| r.0).collect());

    let terminal = one_shot(
        root.path(),
        "terminal",
        &work,
        &[tool_turn(
            "terminal",
            serde_json::json!({"command": "echo hi"}),
        )],
    );
    let read = |i: usize| {
        tool_turn(
            "read_file",
            serde_json::json!({"path": format!("notes/part-{i:02}.txt")}),
        )
    };
    let read1 = one_shot(root.path(), "read1", &work, &[read(1)]);
    let reads: Vec<Step> = (1..=20).map(read).collect();
    let read20 = one_shot(root.path(), "read20", &work, &reads);
    let per_turn = (read20.0 - read1.0) / 19.0;

    let server = api_server(root.path(), &work);

    println!("\n| figure | measured | target |");
    println!("|---|---|---|");
    println!("| `--version` CPU | {version_cpu:.1} ms | ≤ 2 ms |");
    println!(
        "| one-shot, one `terminal` call: CPU / peak RSS | {:.1} ms / {:.1} MiB | ≤ 10 ms / ≤ 20 MB |",
        terminal.0, terminal.1
    );
    println!(
        "| one-shot, one `read_file` call: CPU / peak RSS | {:.1} ms / {:.1} MiB | ≤ 10 ms / ≤ 20 MB |",
        read1.0, read1.1
    );
    println!("| each extra tool turn (20 `read_file` turns) | {per_turn:.2} ms | ≤ 1 ms |");
    println!(
        "| API server: CPU per request after the first | {:.1} ms | ≤ 2 ms |",
        server.cpu_per_request_ms
    );
    println!(
        "| API server: p50 latency, one client / 20 concurrent streams | {:.1} / {:.1} ms | ≤ 5 ms added |",
        server.sequential_p50_ms, server.burst_p50_ms
    );
    println!(
        "| API server: p50 time to the first streamed chunk (one client) | {:.1} ms | before the model call |",
        server.first_chunk_p50_ms
    );
    println!(
        "| API server RSS: idle / peak of the burst / 2 s after | {:.1} / {:.1} / {:.1} MiB | ≤ 50 / ≤ 100 / within 20 % of idle |",
        server.idle_mib, server.burst_peak_mib, server.after_burst_mib
    );
    println!(
        "| API server RSS after 100 / 1,100 conversations | {:.1} / {:.1} MiB | flat |",
        server.after_100_mib, server.after_1000_mib
    );
}
