//! Heavy: the gateway's cost per chat, through the Telegram adapter against
//! the testkit's Bot API fake and a scripted model that answers at once (so
//! every millisecond measured is the gateway's): the time from a message
//! reaching the platform to its model request, messages per second through
//! one adapter, and the process's memory over two waves of 1,000 chats that
//! each talk once (it must not grow per chat). Prints a table; asserts only
//! behaviour, not speed (these machines are noisy).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use talaria_testkit::telegram::{BotAction, FakeChat, FakeUser, TelegramFake};
use talaria_testkit::{Script, ScriptedServer, Step};

use crate::common::*;
use crate::gateway::gateway_command;

const TOKEN: &str = "7000001:load-test-token";
const LATENCY_PROBES: usize = 20;
const WAVE: usize = 1000;

fn answers_sent(fake: &TelegramFake) -> usize {
    fake.sent()
        .iter()
        .filter(|action| matches!(action, BotAction::Message { .. }))
        .count()
}

/// Sends one message from each of `count` new chats (ids from `first`) and
/// waits for every answer: the seconds it took.
fn wave(fake: &TelegramFake, first: i64, count: usize) -> f64 {
    let before = answers_sent(fake);
    let started = Instant::now();
    for id in first..first + count as i64 {
        let user = FakeUser::new(id, "Load");
        fake.push_user_message(&FakeChat::private(&user), &user, &format!("hello {id}"));
    }
    wait_until(
        "every answer of the wave",
        Duration::from_secs(1800),
        || answers_sent(fake) >= before + count,
    );
    started.elapsed().as_secs_f64()
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

#[test]
#[ignore = "heavy: a load measurement printing a table"]
fn gateway_load_1000_chats_twice() {
    build_plugins();
    let fake = TelegramFake::spawn(TOKEN).unwrap();
    let total = LATENCY_PROBES + 3 * WAVE;
    let model = ScriptedServer::spawn(Script::new((0..total).map(|_| Step::text("ok")))).unwrap();
    let home = Home::new();
    home.write_config(&format!(
        "retry:\n  base_delay_ms: 20\n  max_delay_ms: 100\n\
         gateway:\n  platforms:\n    telegram:\n      bot_token: {TOKEN}\n      \
         api_base: {}\n      poll_timeout_secs: 1\n      allow_all: true\n",
        fake.api_base()
    ));
    // The log goes to a file: read while it runs, and kept when a wave stalls.
    let log_file = home.path().join("gateway.log");
    // TALARIA_LOAD_MALLOC_ARENA_MAX (when set) caps glibc's malloc arenas in
    // the gateway: growth that stops under a cap is fragmentation, not a leak.
    let arenas = std::env::var("TALARIA_LOAD_MALLOC_ARENA_MAX").unwrap_or_default();
    let env: Vec<(&str, &str)> = if arenas.is_empty() {
        Vec::new()
    } else {
        vec![("MALLOC_ARENA_MAX", arenas.as_str())]
    };
    let gateway = gateway_command(&home, &model, &env)
        .stderr(std::fs::File::create(&log_file).unwrap())
        .spawn()
        .unwrap();
    let _stop = KillOnDrop(gateway.id());
    let pid = gateway.id();
    wait_until("the first poll", Duration::from_secs(60), || {
        fake.calls().iter().any(|call| call == "getupdates")
    });
    std::thread::sleep(Duration::from_secs(2));
    let idle = status_kib("VmRSS", pid);

    // The process's resident memory, sampled every 20 ms.
    let peak = Arc::new(AtomicU64::new(0));
    let sampling = Arc::new(AtomicBool::new(true));
    let sampler = {
        let (peak, sampling) = (peak.clone(), sampling.clone());
        std::thread::spawn(move || {
            while sampling.load(Ordering::Relaxed) {
                peak.fetch_max(status_kib("VmRSS", pid), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };

    // One message at a time: platform → model request, polled every 1 ms.
    let mut latencies = Vec::new();
    for id in 0..LATENCY_PROBES as i64 {
        let user = FakeUser::new(500_000 + id, "Probe");
        let requests = model.requests().len();
        let answered = answers_sent(&fake);
        let sent = Instant::now();
        fake.push_user_message(&FakeChat::private(&user), &user, "ping");
        while model.requests().len() == requests {
            std::thread::sleep(Duration::from_millis(1));
            assert!(sent.elapsed() < Duration::from_secs(60), "no model request");
        }
        latencies.push(sent.elapsed().as_secs_f64() * 1000.0);
        wait_until("the probe's answer", Duration::from_secs(60), || {
            answers_sent(&fake) > answered
        });
    }
    latencies.sort_by(f64::total_cmp);

    let first = wave(&fake, 1_000_000, WAVE);
    std::thread::sleep(Duration::from_secs(5));
    let after_first = status_kib("VmRSS", pid);
    let second = wave(&fake, 2_000_000, WAVE);
    std::thread::sleep(Duration::from_secs(5));
    let after_second = status_kib("VmRSS", pid);
    let third = wave(&fake, 3_000_000, WAVE);
    std::thread::sleep(Duration::from_secs(5));
    let after_third = status_kib("VmRSS", pid);
    sampling.store(false, Ordering::Relaxed);
    sampler.join().unwrap();

    println!("\n| measure | value |\n|---|---|");
    println!(
        "| platform → model request, {LATENCY_PROBES} messages one at a time | p50 {:.0} ms, max {:.0} ms |",
        latencies[latencies.len() / 2],
        latencies[latencies.len() - 1]
    );
    println!(
        "| wave 1: {WAVE} new chats at once | {first:.1} s, {:.1} msgs/s |",
        WAVE as f64 / first
    );
    println!(
        "| wave 2: {WAVE} more new chats | {second:.1} s, {:.1} msgs/s |",
        WAVE as f64 / second
    );
    println!("| RSS idle (connected) | {:.1} MiB |", mib(idle));
    println!(
        "| RSS peak during the waves (20 ms samples) | {:.1} MiB |",
        mib(peak.load(Ordering::Relaxed))
    );
    println!("| RSS 5 s after wave 1 | {:.1} MiB |", mib(after_first));
    println!(
        "| wave 3: {WAVE} more new chats | {third:.1} s, {:.1} msgs/s |",
        WAVE as f64 / third
    );
    println!("| RSS 5 s after wave 2 | {:.1} MiB |", mib(after_second));
    println!("| RSS 5 s after wave 3 | {:.1} MiB |", mib(after_third));
    for (label, before, after) in [
        ("wave 1 → wave 2", after_first, after_second),
        ("wave 2 → wave 3", after_second, after_third),
    ] {
        println!(
            "| growth per chat, {label} | {:.2} KiB |",
            (after as f64 - before as f64) / WAVE as f64
        );
    }

    assert_code(&run(home.talaria(&["gateway", "stop"])), 0);
    let output = wait(gateway);
    let log = std::fs::read_to_string(&log_file).unwrap_or_default();
    assert!(output.status.success(), "{log}");
    let requests = model.requests();
    let mut asked = std::collections::BTreeMap::<String, usize>::new();
    for request in &requests {
        let text = request.messages().last().map(|m| m.text.clone());
        *asked.entry(text.unwrap_or_default()).or_default() += 1;
    }
    let twice: Vec<_> = asked
        .iter()
        .filter(|(text, n)| **n > 1 && *text != "ping")
        .take(5)
        .collect();
    assert_eq!(
        (requests.len(), asked.len()),
        (total, total - LATENCY_PROBES + 1),
        "every message reached the model once (asked more than once: {twice:?}); the log \
         ends:\n{}",
        log.lines().rev().take(30).collect::<Vec<_>>().join("\n")
    );
}
