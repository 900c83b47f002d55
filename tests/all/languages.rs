//! Plugins in other languages, end to end: for JavaScript, Python and Zig,
//! `talaria plugin new x --lang L` writes the template embedded in the binary,
//! the real toolchain (installed by `scripts/plugin-toolchains` into
//! `target/toolchains`) builds it with `talaria plugin build`, and a one-shot
//! conversation has the model call the plugin's tool: once with good
//! arguments (the computed value must reach the model) and once hitting the
//! tool's error path. The JavaScript and Python templates also fetch a page
//! (`page_title`, through the host's `wasi:http`: `fetch`, and the Python
//! template's `http_client.py`): from a loopback site the user granted
//! (`talaria plugin grant x network:127.0.0.1:PORT`), whose title must reach
//! the model, and from another port, whose refusal must name the missing
//! grant. The Python template also fetches the page over https:// from a
//! loopback `openssl s_server` whose certificate a throwaway CA signed, which
//! the `talaria` process trusts through `SSL_CERT_FILE` (the host does TLS).
//! The conversation runs twice in one profile home: the first compiles the
//! component, the second loads the host's compiled cache.
//!
//! Built components are cached in `target/lang-plugins/<lang>/<hash>/`, keyed
//! by the rendered template and the toolchain pins, so a warm run does not
//! rebuild them (a Python component is ≈ 19 MB and takes a while).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code

use std::collections::BTreeSet;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::Read;
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use crate::common::{Home, assert_code, copy_dir, stderr, stdout};
use serde_json::Value;
use talaria_plugin_host::{Grants, HostOptions, PluginHost, PluginTools};
use talaria_testkit::pki::make_test_pki;
use talaria_testkit::{Page, Script, ScriptedServer, Step, ToolCall, WebSite};
use tokio_util::sync::CancellationToken;

/// Longest a plugin build may take (componentize-js runs SpiderMonkey's
/// pre-initialisation; slow on a busy 2-core machine).
const BUILD_LIMIT: Duration = Duration::from_secs(600);
/// Longest a conversation may take, including compiling an 18 MB component.
const RUN_LIMIT: Duration = Duration::from_secs(180);

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn toolchains() -> PathBuf {
    repo().join("target/toolchains")
}

/// Installs the pinned toolchains (a fast no-op when present). A failure
/// fails the test: these tests never skip.
pub(crate) fn ensure_toolchains() {
    static READY: OnceLock<Result<(), String>> = OnceLock::new();
    let ready = READY.get_or_init(|| {
        let output = Command::new(repo().join("scripts/plugin-toolchains"))
            .output()
            .map_err(|e| format!("cannot run scripts/plugin-toolchains: {e}"))?;
        if output.status.success() {
            Ok(())
        } else {
            Err(String::from_utf8_lossy(&output.stderr).into_owned())
        }
    });
    if let Err(message) = ready {
        panic!(
            "the plugin toolchains are missing: scripts/plugin-toolchains failed \
             (run it by hand to see why; it needs node >= 20, npm, python3 with venv \
             and the npm and PyPI registries):\n{message}"
        );
    }
}

/// Runs `command` to completion within `limit`, killing it otherwise.
fn run_within(mut command: Command, limit: Duration, what: &str) -> Output {
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = command.spawn().expect("the command starts");
    // Drain the pipes on threads so a chatty build cannot block on them.
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        out.read_to_end(&mut buf).map(|_| buf).unwrap_or_default()
    });
    let err_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        err.read_to_end(&mut buf).map(|_| buf).unwrap_or_default()
    });
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!(
                "{what} took longer than {limit:?}; stderr:\n{}",
                String::from_utf8_lossy(&err_reader.join().unwrap())
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: out_reader.join().unwrap(),
        stderr: err_reader.join().unwrap(),
    }
}

/// One language's example plugin and what its tool must answer.
struct Case {
    lang: &'static str,
    tool: &'static str,
    /// Arguments the tool accepts, and the exact result the model must see.
    good: (&'static str, &'static str),
    /// Arguments on the tool's error path, and what the model must read.
    bad: (&'static str, &'static str),
    /// The template's tool that fetches the `url` it is given, if it has one.
    fetch: Option<&'static str>,
    /// Whether the fetching tool is also sent to an https:// site.
    https: bool,
}

/// The title of the page the fetching tools are sent to.
const PAGE_TITLE: &str = "Plugins & the open web";
const PAGE_HTML: &str = "<!doctype html><html><head>\n<title>\n  Plugins &amp; the open web\n\
                         </title></head><body><p>A page for the plugin templates.</p></body></html>";

/// Where the fetching tool goes: a site the plugin was granted and one it
/// was not (each counts its visits), and a granted HTTPS one.
struct Sites {
    granted: WebSite,
    other: WebSite,
    secure: Option<SecureSite>,
}

impl Sites {
    fn spawn(https: bool) -> Self {
        let page = || std::collections::BTreeMap::from([("/".to_owned(), Page::html(PAGE_HTML))]);
        Self {
            granted: WebSite::spawn(page()).unwrap(),
            other: WebSite::spawn(page()).unwrap(),
            secure: https.then(SecureSite::spawn),
        }
    }
}

/// The page over HTTPS on loopback: `openssl s_server -WWW` with a
/// certificate for 127.0.0.1 signed by a throwaway CA, which the `talaria`
/// process trusts through `SSL_CERT_FILE` (the host's TLS client adds the
/// system's roots, and they honour it).
struct SecureSite {
    /// The CA, the server's key and certificate, and `www/page.html`.
    dir: tempfile::TempDir,
    server: std::process::Child,
    port: u16,
}

impl SecureSite {
    fn spawn() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let pki = make_test_pki(dir.path())
            .unwrap_or_else(|e| panic!("the openssl CLI makes the test CA: {e}"));
        let www = dir.path().join("www");
        std::fs::create_dir(&www).unwrap();
        std::fs::write(www.join("page.html"), PAGE_HTML).unwrap();
        let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .and_then(|listener| listener.local_addr())
            .unwrap()
            .port();
        let server = Command::new("openssl")
            .args(["s_server", "-quiet", "-WWW", "-accept"])
            .arg(format!("127.0.0.1:{port}"))
            .arg("-cert")
            .arg(&pki.cert)
            .arg("-key")
            .arg(&pki.key)
            .current_dir(&www)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("openssl s_server starts: {e}"));
        let site = Self { dir, server, port };
        crate::common::wait_until("openssl s_server listens", Duration::from_secs(10), || {
            TcpStream::connect((Ipv4Addr::LOCALHOST, port)).is_ok()
        });
        site
    }

    fn url(&self) -> String {
        format!("https://127.0.0.1:{}/page.html", self.port)
    }

    fn ca(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }
}

impl Drop for SecureSite {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}

/// Every file of the project, by relative path, for the cache key.
fn project_files(dir: &Path, prefix: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let path = entry.path();
        let relative = prefix.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            project_files(&path, &relative, out);
        } else {
            out.push((relative, std::fs::read(&path).unwrap()));
        }
    }
}

/// The cache key of a project: its sources and the toolchains' pins.
fn cache_key(project: &Path) -> String {
    let mut files = Vec::new();
    project_files(project, Path::new(""), &mut files);
    files.sort();
    let mut hasher = DefaultHasher::new();
    files.hash(&mut hasher);
    for part in ["npm", "py"] {
        std::fs::read_to_string(toolchains().join(part).join(".pins"))
            .unwrap_or_default()
            .hash(&mut hasher);
    }
    format!("{:016x}", hasher.finish())
}

/// Builds the project (or takes the component built from the same sources
/// before) into `project/dist/<name>`, caching it under `cache` (one
/// template's builds: the last is kept). Returns how long the build took, or
/// `None` when it came from the cache.
pub(crate) fn build(home: &Home, project: &Path, cache: &str, name: &str) -> Option<Duration> {
    let key = cache_key(project);
    let lang_cache = repo().join("target/lang-plugins").join(cache);
    let cached = lang_cache.join(&key);
    let package = project.join("dist").join(name);
    if cached.join("plugin.wasm").is_file() {
        copy_dir(&cached, &package);
        return None;
    }
    let mut command = home.talaria(&["plugin", "build"]);
    command
        .arg(project)
        .env("TALARIA_TOOLCHAINS", toolchains())
        // Zig's compiled standard library, shared by every build.
        .env("ZIG_GLOBAL_CACHE_DIR", toolchains().join("zig-cache"));
    let started = Instant::now();
    let output = run_within(
        command,
        BUILD_LIMIT,
        &format!("building the {cache} plugin"),
    );
    let took = started.elapsed();
    assert_code(&output, 0);
    let out = stdout(&output);
    assert!(
        out.contains(&format!("Built {name} 0.1.0 into {}", package.display())),
        "{out}\n{}",
        stderr(&output)
    );
    // Keep only this build: older keys are stale sources.
    let _ = std::fs::remove_dir_all(&lang_cache);
    let staging = lang_cache.with_extension(format!("tmp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    copy_dir(&package, &staging.join(&key));
    std::fs::create_dir_all(&lang_cache).unwrap();
    std::fs::rename(staging.join(&key), &cached).unwrap();
    let _ = std::fs::remove_dir_all(&staging);
    Some(took)
}

/// The compiled components in the home's cache.
/// The compiled components in `home`'s cache.
fn compiled(home: &Home) -> BTreeSet<String> {
    std::fs::read_dir(home.path().join("cache/plugins"))
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|name| name.ends_with(".cwasm"))
                .collect()
        })
        .unwrap_or_default()
}

/// What one conversation showed.
struct Conversation {
    wall: Duration,
    /// The tool batch (both calls, a fresh instance each) as the loop timed it.
    tools_ms: u64,
}

/// A one-shot conversation in which the model calls the tool twice (good and
/// bad arguments), and the fetching tool, if any, on both `sites`; checks the
/// results the model saw.
fn converse(home: &Home, case: &Case, sites: Option<&Sites>) -> Conversation {
    let work = home.workdir();
    let mut calls = vec![
        ToolCall::new(case.tool, case.good.0),
        ToolCall::new(case.tool, case.bad.0),
    ];
    let fetches = case.fetch.zip(sites);
    let secure = fetches.and_then(|(_, sites)| sites.secure.as_ref());
    if let Some((fetch, sites)) = fetches {
        let mut urls = vec![
            format!("{}/", sites.granted.url()),
            format!("{}/", sites.other.url()),
        ];
        urls.extend(secure.map(SecureSite::url));
        for url in urls {
            calls.push(ToolCall::new(
                fetch,
                serde_json::json!({ "url": url }).to_string(),
            ));
        }
    }
    let expected = calls.len();
    let server =
        ScriptedServer::spawn(Script::new([Step::tool_calls(calls), Step::text("done")])).unwrap();
    let mut command = home.query_in(work.path(), &server, "use the plugin", &["--json"]);
    if let Some(secure) = secure {
        command.env("SSL_CERT_FILE", secure.ca());
    }
    let started = Instant::now();
    let output = run_within(
        command,
        RUN_LIMIT,
        &format!("the {} conversation", case.lang),
    );
    let wall = started.elapsed();
    assert_code(&output, 0);
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "{}", stderr(&output));
    assert!(
        requests[0]
            .tools_raw()
            .contains(&format!("\"{}\"", case.tool)),
        "the plugin's tool is offered to the model: {}\nstderr:\n{}",
        requests[0].tools_raw(),
        stderr(&output)
    );
    let results = crate::common::tool_results(&server, 1);
    assert_eq!(results.len(), expected, "{results:?}");
    assert_eq!(results[0], case.good.1, "{} computed value", case.lang);
    assert!(
        results[1].contains(case.bad.1),
        "{} error path: {:?} should contain {:?}",
        case.lang,
        results[1],
        case.bad.1
    );
    if let Some((fetch, sites)) = fetches {
        // JSON from JavaScript or Python: no assumption about its spacing.
        let page: Value = serde_json::from_str(&results[2])
            .unwrap_or_else(|e| panic!("{} {fetch}: {e}: {:?}", case.lang, results[2]));
        assert_eq!(page["title"], PAGE_TITLE, "{} {fetch}: {page}", case.lang);
        assert_eq!(page["status"], 200, "{} {fetch}: {page}", case.lang);
        let port = sites.other.port();
        for needed in [
            // Refused by the host's HTTP client, before any connection.
            format!("refused HTTP request to http://127.0.0.1:{port}/"),
            format!("no network grant of plugin x covers 127.0.0.1:{port}"),
            format!("talaria plugin grant x network:127.0.0.1:{port}"),
        ] {
            assert!(
                results[3].contains(&needed),
                "{} {fetch} without a grant: {:?} should contain {needed:?}",
                case.lang,
                results[3]
            );
        }
        assert!(
            sites.other.visits().is_empty(),
            "{} reached a port it was not granted",
            case.lang
        );
        if secure.is_some() {
            let page: Value = serde_json::from_str(&results[4])
                .unwrap_or_else(|e| panic!("{} {fetch} https: {e}: {:?}", case.lang, results[4]));
            assert_eq!(
                page["title"], PAGE_TITLE,
                "{} {fetch} https: {page}",
                case.lang
            );
            assert_eq!(page["status"], 200, "{} {fetch} https: {page}", case.lang);
        }
    }
    let events: Vec<Value> = stdout(&output)
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect();
    let finished: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "tool_finished")
        .collect();
    assert_eq!(finished.len(), expected, "{events:?}");
    // Good, bad, then (when fetching) granted, refused, and granted over HTTPS.
    for (event, is_error) in finished.iter().zip([false, true, false, true, false]) {
        assert_eq!(event["is_error"], is_error, "{event:?}");
    }
    let tools_ms = finished
        .iter()
        .filter_map(|e| e["duration_ms"].as_u64())
        .max()
        .unwrap_or_default();
    Conversation { wall, tools_ms }
}

/// In-process timings of the installed plugin with the plugin host, set up
/// as the CLI sets it up (same engine, same compile cache).
struct Bench {
    /// Loading the component from the compile cache, with list-tools.
    load: Duration,
    /// Median of instantiating from the `InstancePre`.
    instantiate: Duration,
    /// Median of a tool call as the CLI makes it: fresh instance + call.
    call: Duration,
}

/// Calls timed per measurement.
const BENCH_SAMPLES: usize = 30;

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn bench(home: &Home, case: &Case) -> Bench {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let host = PluginHost::new(HostOptions::new(
            home.path().join("cache/plugins"),
            home.path().join("plugin-data"),
        ))
        .unwrap();
        let started = Instant::now();
        let plugin = host
            .load(&home.path().join("plugins/x"), &Grants::none())
            .await
            .unwrap();
        let load = started.elapsed();
        assert!(
            plugin.from_cache(),
            "the component the CLI compiled is loaded from the cache"
        );
        let mut samples = Vec::with_capacity(BENCH_SAMPLES);
        for _ in 0..BENCH_SAMPLES {
            let started = Instant::now();
            let instance = plugin.instantiate(None).await.unwrap();
            samples.push(started.elapsed());
            drop(instance);
        }
        let instantiate = median(samples);
        let work = home.workdir();
        let tools = PluginTools::new(vec![plugin], work.path()).unwrap();
        let cancel = CancellationToken::new();
        let mut samples = Vec::with_capacity(BENCH_SAMPLES);
        for _ in 0..BENCH_SAMPLES {
            let started = Instant::now();
            let output = tools
                .call(case.tool, case.good.0, "bench", "bench", &cancel)
                .await
                .unwrap();
            samples.push(started.elapsed());
            assert_eq!(output, case.good.1);
        }
        Bench {
            load,
            instantiate,
            call: median(samples),
        }
    })
}

/// One language at a time: compiling a big component takes both cores, and
/// the timings printed should not include another test's compilation.
/// Held while a template is built and run: one heavy build at a time.
pub(crate) static SERIAL: Mutex<()> = Mutex::new(());

fn check_language(case: &Case) {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    ensure_toolchains();
    let home = Home::new();
    let projects = home.workdir();
    let project = projects.path().join("x");
    let mut new = home.talaria(&["plugin", "new", "x", "--lang", case.lang, "--dir"]);
    new.arg(&project);
    let output = crate::common::run(new);
    assert_code(&output, 0);
    assert!(
        project.join("build.sh").is_file() && project.join("plugin.toml").is_file(),
        "the {} template was written",
        case.lang
    );

    // Built in a profile of its own (`plugin build` compiles into the
    // builder's cache), so installing it here has the compiling to do.
    let builder = Home::new();
    let build_time = build(&builder, &project, case.lang, "x");
    let package = project.join("dist/x");
    let size = std::fs::metadata(package.join("plugin.wasm"))
        .unwrap()
        .len();
    let before = compiled(&home);
    let started = Instant::now();
    let installed = home.install_package(&package, "none");
    let install_time = started.elapsed();
    assert!(
        stdout(&installed).contains("compiled in "),
        "{}",
        stdout(&installed)
    );
    let after_install = compiled(&home);
    assert_eq!(
        after_install.difference(&before).count(),
        1,
        "the install compiled the component into the cache: {after_install:?}"
    );
    let list = stdout(&crate::common::run(home.talaria(&["plugins", "list"])));
    assert!(list.contains("x 0.1.0 [tools]"), "{list}");
    // The fetching tool's site is granted as a user would: narrower than
    // the template's request (`*:*`).
    let sites = case.fetch.map(|_| Sites::spawn(case.https));
    if let Some(sites) = &sites {
        let mut ports = vec![sites.granted.port()];
        ports.extend(sites.secure.as_ref().map(|site| site.port));
        for port in ports {
            let grant = format!("network:127.0.0.1:{port}");
            let output = crate::common::run(home.talaria(&["plugin", "grant", "x", &grant]));
            assert_code(&output, 0);
        }
    }

    let first = converse(&home, case, sites.as_ref());
    let after_first = compiled(&home);
    assert_eq!(
        after_first, after_install,
        "the first run loaded what the install compiled"
    );
    let second = converse(&home, case, sites.as_ref());
    assert_eq!(
        compiled(&home),
        after_first,
        "the second run loaded the cached component"
    );

    let bench = bench(&home, case);

    eprintln!(
        "[{lang}] build: {build} | component: {size:.2} MiB | \
         install (compiles): {install} ms | \
         conversation 1: {w1} ms wall, tool batch {t1} ms | \
         conversation 2 (compile cache): {w2} ms wall, tool batch {t2} ms | \
         in-process: load from cache {load:.1} ms, instantiate {inst:.0} µs, \
         instantiate + call {call:.0} µs (medians of {BENCH_SAMPLES})",
        lang = case.lang,
        build = build_time.map_or("cached".to_owned(), |d| format!("{} ms", d.as_millis())),
        size = size as f64 / (1024.0 * 1024.0),
        install = install_time.as_millis(),
        w1 = first.wall.as_millis(),
        t1 = first.tools_ms,
        w2 = second.wall.as_millis(),
        t2 = second.tools_ms,
        load = bench.load.as_secs_f64() * 1e3,
        inst = bench.instantiate.as_secs_f64() * 1e6,
        call = bench.call.as_secs_f64() * 1e6,
    );
}

#[test]
fn a_javascript_plugin_from_the_template_serves_the_model() {
    check_language(&Case {
        lang: "js",
        tool: "word_count",
        good: (
            r#"{"text":"The cat saw the other cat, twice!"}"#,
            r#"{"words":7,"unique":5}"#,
        ),
        bad: (
            r#"{"text":42}"#,
            "invalid arguments: text is required and must be a string",
        ),
        fetch: Some("page_title"),
        https: false,
    });
}

#[test]
fn a_python_plugin_from_the_template_serves_the_model() {
    check_language(&Case {
        lang: "python",
        tool: "slugify",
        good: (
            r#"{"text":"Héllo, Wörld! Ça va?","separator":"_"}"#,
            r#"{"slug": "hello_world_ca_va"}"#,
        ),
        bad: (
            r#"{"text":"x","separator":"/"}"#,
            "invalid arguments: separator must be one of '-', '_', '.'",
        ),
        fetch: Some("page_title"),
        https: true,
    });
}

#[test]
fn a_zig_plugin_from_the_template_serves_the_model() {
    check_language(&Case {
        lang: "zig",
        tool: "checksum",
        // CRC-32 (ISO-HDLC) of "hello world" is 0x0d4a1185.
        good: (
            r#"{"text":"hello world"}"#,
            r#"{"algorithm":"crc32","checksum":"0d4a1185","bytes":11}"#,
        ),
        bad: (
            r#"{"text":"hi","algorithm":"md5"}"#,
            "invalid arguments: unknown algorithm md5; use one of crc32, adler32, fnv1a32",
        ),
        // The Zig template has no HTTP client.
        fetch: None,
        https: false,
    });
}
