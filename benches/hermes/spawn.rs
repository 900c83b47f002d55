//! `bench-spawn RESULT.json PROGRAM [ARGS...]`: runs PROGRAM (stdin, stdout and
//! stderr inherited), reaps it with wait4(2) and writes its wall time, CPU
//! time (user + system of it and every descendant it waited for), peak RSS and
//! exit status to RESULT.json. Exits 0 unless it could not run PROGRAM.
//!
//! Why not measure from the Python harness directly: a child's `ru_maxrss`
//! starts from the high-water RSS of the process it was forked from (Linux
//! carries the old address space's peak across fork and exec), so every agent
//! spawned by a Python process would be charged Python's own peak. Spawned
//! from this small program, the agent is charged about a megabyte at most.
//!
//! Standard library only: `rustc --edition 2021 -O bench/spawn.rs -o DIR/bench-spawn`.

use std::io::Write;
use std::process::Command;
use std::time::Instant;

#[repr(C)]
struct Timeval {
    tv_sec: i64,
    tv_usec: i64,
}

/// `struct rusage` of 64-bit Linux: two timevals, then 14 longs starting with `ru_maxrss`.
#[repr(C)]
struct Rusage {
    ru_utime: Timeval,
    ru_stime: Timeval,
    rest: [i64; 14],
}

extern "C" {
    fn wait4(pid: i32, status: *mut i32, options: i32, rusage: *mut Rusage) -> i32;
}

fn seconds(t: &Timeval) -> f64 {
    t.tv_sec as f64 + t.tv_usec as f64 / 1e6
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 2 {
        eprintln!("usage: bench-spawn RESULT.json PROGRAM [ARGS...]");
        std::process::exit(2);
    }
    let start = Instant::now();
    let child = match Command::new(&args[1]).args(&args[2..]).spawn() {
        Ok(child) => child,
        Err(e) => {
            eprintln!("bench-spawn: cannot run {}: {e}", args[1]);
            std::process::exit(127);
        }
    };
    let pid = child.id() as i32;
    let mut status = 0i32;
    let mut usage = Rusage {
        ru_utime: Timeval { tv_sec: 0, tv_usec: 0 },
        ru_stime: Timeval { tv_sec: 0, tv_usec: 0 },
        rest: [0; 14],
    };
    loop {
        // SAFETY: plain out-pointers to live, correctly laid out values.
        let reaped = unsafe { wait4(pid, &mut status, 0, &mut usage) };
        if reaped == pid {
            break;
        }
        let error = std::io::Error::last_os_error();
        if error.kind() != std::io::ErrorKind::Interrupted {
            eprintln!("bench-spawn: wait4: {error}");
            std::process::exit(127);
        }
    }
    let wall = start.elapsed().as_secs_f64();
    // Reaped above: the handle must not wait again.
    std::mem::forget(child);
    let code = if status & 0x7f == 0 {
        (status >> 8) & 0xff
    } else {
        -(status & 0x7f)
    };
    let json = format!(
        "{{\"wall\": {wall}, \"utime\": {}, \"stime\": {}, \"maxrss_kib\": {}, \"code\": {code}}}\n",
        seconds(&usage.ru_utime),
        seconds(&usage.ru_stime),
        usage.rest[0],
    );
    let written = std::fs::File::create(&args[0]).and_then(|mut f| f.write_all(json.as_bytes()));
    if let Err(e) = written {
        eprintln!("bench-spawn: cannot write {}: {e}", args[0]);
        std::process::exit(127);
    }
}
