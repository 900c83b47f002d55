//! Ways to load a compiled component so that only verified bytes run, measured on the largest
//! first-party plugins (`web`, `fs`), each compiled once by this bench and written with a keyed
//! BLAKE3 MAC as the compile cache writes it:
//!
//! - **copy** (what the cache does): read the file into one heap buffer, check the MAC over
//!   it, `Component::deserialize` from it (wasmtime copies the bytes into its own mapping).
//! - **memfd**: copy the file into a memfd inside the kernel, seal it against every change,
//!   map it and check the MAC over the mapping, then `Component::deserialize_file` the memfd
//!   (wasmtime maps it; no user-space copy, and the seals keep the checked bytes the ones run).
//! - **unchecked file** (a floor, unsound as a cache: pages of a private mapping not yet
//!   copied show later writes to the file): `Component::deserialize_file` of the file itself.
//!
//! And the MAC alone over bytes already in memory. Prints the median and p95 time per load;
//! the heap + mapping cost is left to
//! `benches/cost.rs` (whole-process peak RSS). `cargo bench -p talaria-plugin-host --bench
//! verify_load` (builds the plugins with `scripts/build-plugins` first).

#![allow(unsafe_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::Read as _;
use std::os::fd::{AsRawFd as _, FromRawFd as _};
use std::path::Path;
use std::time::{Duration, Instant};

use wasmtime::component::Component;
use wasmtime::{Config, Engine};

const RUNS: usize = 30;
const KEY: [u8; 32] = [7; 32];

fn engine() -> Engine {
    let mut config = Config::new();
    config.wasm_component_model(true).epoch_interruption(true);
    Engine::new(&config).unwrap()
}

fn mac(body: &[u8]) -> blake3::Hash {
    blake3::keyed_hash(&KEY, body)
}

/// Reads `path` (body + 32-byte MAC) into memory, verifies, deserialises from the buffer.
fn copy(engine: &Engine, path: &Path) -> Component {
    let mut sealed = Vec::new();
    std::fs::File::open(path)
        .unwrap()
        .read_to_end(&mut sealed)
        .unwrap();
    let (body, tag) = sealed.split_at(sealed.len() - 32);
    assert_eq!(mac(body).as_bytes(), tag);
    // SAFETY: bytes this bench compiled with this engine, verified just now, in memory.
    unsafe { Component::deserialize(engine, body) }.unwrap()
}

/// Copies the body of `path` into a sealed memfd inside the kernel, verifies the MAC (the
/// file's last 32 bytes) over a mapping of the memfd, deserialises the memfd.
fn memfd(engine: &Engine, path: &Path) -> Component {
    let file = std::fs::File::open(path).unwrap();
    let len = usize::try_from(file.metadata().unwrap().len()).unwrap() - 32;
    let mut tag = [0u8; 32];
    std::os::unix::fs::FileExt::read_exact_at(&file, &mut tag, len as u64).unwrap();
    let body = sealed_body(&file, len);
    // SAFETY: a read-only shared mapping of a sealed memfd of `len` bytes, unmapped below.
    let map = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            body.as_raw_fd(),
            0,
        )
    };
    assert_ne!(map, libc::MAP_FAILED);
    // SAFETY: the mapping is `len` readable bytes that cannot change (sealed).
    let verified = mac(unsafe { std::slice::from_raw_parts(map.cast::<u8>(), len) }) == tag;
    // SAFETY: the mapping made above.
    unsafe { libc::munmap(map, len) };
    assert!(verified);
    // SAFETY: a sealed memfd holding exactly the bytes just verified.
    unsafe { Component::deserialize_file(engine, format!("/proc/self/fd/{}", body.as_raw_fd())) }
        .unwrap()
}

/// A sealed memfd with the first `len` bytes of `file` (the body without its MAC).
fn sealed_body(file: &std::fs::File, len: usize) -> std::fs::File {
    // SAFETY: a valid C string and flags; the result is checked.
    let fd = unsafe {
        libc::memfd_create(
            c"talaria-cwasm".as_ptr(),
            libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING,
        )
    };
    assert!(fd >= 0);
    // SAFETY: a fresh descriptor this function owns.
    let body = unsafe { std::fs::File::from_raw_fd(fd) };
    // std copies between files inside the kernel (copy_file_range, else sendfile).
    let mut body_writer = &body;
    let copied = std::io::copy(&mut file.take(len as u64), &mut body_writer).unwrap();
    assert_eq!(copied, len as u64);
    let seals = libc::F_SEAL_WRITE | libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_SEAL;
    // SAFETY: fcntl on a descriptor we own.
    assert_eq!(unsafe { libc::fcntl(fd, libc::F_ADD_SEALS, seals) }, 0);
    body
}

/// The floor: wasmtime maps the file itself, nothing verified.
fn unchecked(engine: &Engine, path: &Path) -> Component {
    // SAFETY: a bench-only floor over a file this bench wrote; see the module comment.
    unsafe { Component::deserialize_file(engine, path) }.unwrap()
}

fn time(mut f: impl FnMut()) -> (Duration, Duration) {
    f();
    let mut samples: Vec<Duration> = (0..RUNS)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    samples.sort();
    (samples[RUNS / 2], samples[RUNS * 95 / 100])
}

fn main() {
    let repo = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    let status = std::process::Command::new(repo.join("scripts/build-plugins"))
        .current_dir(repo)
        .status()
        .unwrap();
    assert!(status.success());
    let engine = engine();
    let dir = tempfile::tempdir().unwrap();
    println!(
        "| plugin | compiled size | copy (today) | sealed memfd | unchecked file (floor) | the MAC alone |"
    );
    println!("|---|---|---|---|---|---|");
    for plugin in ["web", "fs"] {
        let wasm =
            std::fs::read(repo.join(format!("target/plugins/dist/{plugin}/plugin.wasm"))).unwrap();
        let mut body = engine.precompile_component(&wasm).unwrap();
        let plain = dir.path().join(format!("{plugin}.cwasm"));
        std::fs::write(&plain, &body).unwrap();
        let tag = mac(&body);
        body.extend_from_slice(tag.as_bytes());
        let sealed = dir.path().join(format!("{plugin}.sealed"));
        std::fs::write(&sealed, &body).unwrap();
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        let (copy_p50, copy_p95) = time(|| drop(copy(&engine, &sealed)));
        let (memfd_p50, memfd_p95) = time(|| drop(memfd(&engine, &sealed)));
        let (floor_p50, floor_p95) = time(|| drop(unchecked(&engine, &plain)));
        let in_memory = std::fs::read(&plain).unwrap();
        let (mac_p50, _) = time(|| {
            std::hint::black_box(mac(&in_memory));
        });
        println!(
            "| {plugin} | {:.1} MB | {:.2} ms (p95 {:.2}) | {:.2} ms (p95 {:.2}) | {:.2} ms (p95 {:.2}) | {:.2} ms |",
            body.len() as f64 / 1e6,
            ms(copy_p50),
            ms(copy_p95),
            ms(memfd_p50),
            ms(memfd_p95),
            ms(floor_p50),
            ms(floor_p95),
            ms(mac_p50)
        );
    }
}
