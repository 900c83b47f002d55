//! The loop's own cost per turn: a fake model that answers instantly with one
//! tool call, a fake tool, an in-memory store. Prints CPU time per turn, the
//! figure compared with Hermes Agent (~130 ms of CPU per extra turn).
// A benchmark measures wall time itself (kernel/clippy.toml is for the kernel's code).
#![allow(clippy::disallowed_methods)]

#[path = "../tests/support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use cpu_time::ProcessTime;
use support::*;
use talaria_kernel::*;

fn main() {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("cannot start runtime: {error}");
            std::process::exit(1);
        }
    };
    println!(
        "{:<34} {:>8} {:>14} {:>14}",
        "scenario", "turns", "cpu/turn", "wall/turn"
    );
    for turns in [20u32, 200, 2000] {
        let (cpu, wall) = runtime.block_on(measure(turns));
        println!(
            "{:<34} {:>8} {:>11.1} µs {:>11.1} µs",
            "tool call + result (fake model)",
            turns,
            per_turn(cpu, turns),
            per_turn(wall, turns)
        );
    }
}

fn per_turn(total: Duration, turns: u32) -> f64 {
    total.as_secs_f64() * 1e6 / f64::from(turns)
}

/// One run of `turns` model calls that each request one `echo` call, then a final answer.
async fn measure(turns: u32) -> (Duration, Duration) {
    let mut replies: Vec<Reply> = (0..turns)
        .map(|_| calls(&[("echo", r#"{"text":"hello"}"#)]))
        .collect();
    replies.push(text("done"));
    let model = ScriptedModel::unrecorded(replies);
    let mut rig = rig(&[model], Budget::with_iterations(turns + 1));
    let cpu = ProcessTime::now();
    let wall = Instant::now();
    let exit = rig.run("benchmark").await;
    let (cpu, wall) = (cpu.elapsed(), wall.elapsed());
    assert!(matches!(exit, Ok(Exit::Final(_))), "{exit:?}");
    (cpu, wall)
}
