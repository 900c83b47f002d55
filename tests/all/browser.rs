//! The browser tools through the real binary. The light test drives a fake
//! DevTools endpoint (testkit) that a stand-in program announces where
//! Chromium would, and checks the session's browser process is gone when
//! the run ends. The heavy ones (`./scripts/test --heavy`, which installs
//! Debian's Chromium) browse pages served by the test with a real browser.

use std::collections::BTreeMap;
use std::path::Path;

use crate::common::*;
use serde_json::json;
use talaria_testkit::{FakeDevTools, FakePage, Image, Page, Script, ScriptedServer, Step, WebSite};

fn ax_node(
    id: u32,
    parent: Option<u32>,
    role: &str,
    name: &str,
    children: &[u32],
) -> serde_json::Value {
    let mut node = json!({
        "nodeId": id.to_string(),
        "ignored": false,
        "role": {"type": "role", "value": role},
        "name": {"type": "computedString", "value": name},
        "childIds": children.iter().map(u32::to_string).collect::<Vec<_>>(),
        "backendDOMNodeId": id + 40,
    });
    if let Some(parent) = parent {
        node["parentId"] = json!(parent.to_string());
    }
    node
}

/// A tool call of the scripted model, its arguments as JSON.
fn call(tool: &str, arguments: serde_json::Value) -> Step {
    Step::tool_call(tool, arguments.to_string())
}

/// One run whose model follows `steps`: the server (what it recorded) and
/// the run's output; the run must succeed.
fn browse(home: &Home, steps: Vec<Step>) -> (ScriptedServer, std::process::Output) {
    let server = ScriptedServer::spawn(Script::new(steps)).unwrap();
    let work = home.workdir();
    let output = run(home.query_in(work.path(), &server, "browse", &[]));
    assert_code(&output, 0);
    (server, output)
}

/// A child process killed when dropped still running.
struct KilledOnDrop(Option<std::process::Child>);

impl Drop for KilledOnDrop {
    fn drop(&mut self) {
        if let Some(child) = &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

#[test]
fn browser_tools_drive_the_session_browser_and_end_with_the_run() {
    // A long page: 2,100 rows after the text and the button.
    let rows: Vec<u32> = (4..2104).collect();
    let mut nodes = vec![
        ax_node(
            1,
            None,
            "RootWebArea",
            "Example Shop",
            &[[2, 3].as_slice(), &rows].concat(),
        ),
        ax_node(2, Some(1), "StaticText", "Fresh bread daily", &[]),
        ax_node(3, Some(1), "button", "Buy", &[]),
    ];
    nodes.extend(
        rows.iter()
            .map(|&id| ax_node(id, Some(1), "StaticText", &format!("Row {id}"), &[])),
    );
    let devtools = FakeDevTools::spawn(FakePage {
        title: "Example Shop".into(),
        ax_nodes: json!(nodes),
        hang_on: None,
    })
    .unwrap();
    let home = Home::new();
    // Installed outside the profile home, as a real browser is.
    let install = tempfile::tempdir().unwrap();
    let pid_file = install.path().join("browser.pid");
    std::fs::write(
        home.path().join(".env"),
        "OPENAI_API_KEY=sk-not-for-the-browser\n",
    )
    .unwrap();
    let program = devtools
        .fake_chromium(install.path(), &pid_file, &home.path().join(".env"))
        .unwrap();
    home.write_config(&format!("browser:\n  executable: {}\n", program.display()));
    let (server, output) = browse(
        &home,
        vec![
            call("browser_navigate", json!({"url": "https://shop.example/"})),
            call("browser_snapshot", json!({})),
            call("browser_click", json!({"ref": "e7"})),
            Step::text("done"),
        ],
    );
    let results = tool_results(&server, 3);
    assert_eq!(results.len(), 3, "{results:?}\n{}", stderr(&output));
    assert_contains(&results[0], "\"title\":\"Example Shop\"");
    assert_contains(&results[0], "\"url\":\"https://shop.example/\"");
    assert_contains(&results[1], "text: Fresh bread daily");
    assert_contains(&results[1], "button \"Buy\" [ref=e1]");
    // Over the result budget (2,000 lines): the rest waits in a file.
    assert_contains(&results[1], "is saved at ");
    let saved = results[1]
        .split("is saved at ")
        .nth(1)
        .unwrap()
        .split(" …]")
        .next()
        .unwrap();
    assert_contains(&std::fs::read_to_string(saved).unwrap(), "text: Row 2103");
    assert_contains(&results[2], "unknown ref 'e7'");

    let methods: Vec<String> = devtools.calls().into_iter().map(|c| c.method).collect();
    let navigate = devtools
        .calls()
        .into_iter()
        .find(|c| c.method == "Page.navigate")
        .unwrap();
    assert_eq!(navigate.params["url"], "https://shop.example/");
    let downloads = devtools
        .calls()
        .into_iter()
        .find(|c| c.method == "Browser.setDownloadBehavior")
        .unwrap_or_else(|| panic!("downloads were not refused: {methods:?}"));
    assert_eq!(downloads.params["behavior"], "deny");

    // Driven over a pipe, no DevTools port anything else could connect to; the profile home
    // out of the browser's sight.
    let args = std::fs::read_to_string(pid_file.with_extension("pid.args")).unwrap();
    assert!(
        args.lines().any(|a| a == "--remote-debugging-pipe"),
        "{args}"
    );
    assert!(!args.contains("--remote-debugging-port"), "{args}");
    let peek = std::fs::read_to_string(pid_file.with_extension("pid.peek")).unwrap();
    assert!(
        !peek.contains("sk-not-for-the-browser"),
        "the browser read the home: {peek}"
    );

    // The run is over: its browser and its private profile are gone.
    let pid: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    wait_until(
        "the browser to be killed",
        std::time::Duration::from_secs(5),
        || !alive(pid),
    );
    let profiles = home.path().join("tmp/browser");
    let left = std::fs::read_dir(&profiles)
        .map(Iterator::count)
        .unwrap_or(0);
    assert_eq!(left, 0, "profiles left in {}", profiles.display());
}

#[test]
fn a_browser_that_cannot_run_is_not_offered() {
    let home = Home::new();
    home.write_config("browser:\n  executable: /nonexistent/chromium\n");
    let (server, output) = browse(&home, vec![Step::text("done")]);
    let tools = server.requests()[0].tools_raw();
    assert!(!tools.contains("browser_navigate"), "{tools}");
    assert_contains(
        &stderr(&output),
        "browser.executable /nonexistent/chromium is not an executable file",
    );
}

const HOME_PAGE: &str = r#"<!doctype html><html><head><title>Shop</title></head><body>
<h1>Welcome to the shop</h1>
<p id="status">Nothing happened yet</p>
<button onclick="document.getElementById('status').textContent = 'Button was clicked'">Change it</button>
<form action="/ordered" method="get"><label>Name <input name="name"></label></form>
</body></html>"#;

fn shop() -> WebSite {
    WebSite::spawn(BTreeMap::from([
        ("/".to_owned(), Page::html(HOME_PAGE)),
        (
            "/ordered".to_owned(),
            Page::html("<title>Thanks</title><p>Your order is in.</p>"),
        ),
    ]))
    .unwrap()
}

/// Pids of processes whose command line mentions `needle`.
fn processes_mentioning(needle: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(needle))
        })
        .collect()
}

#[test]
#[ignore = "heavy: needs Chromium (./scripts/test --heavy installs it)"]
fn a_real_browser_reads_clicks_types_goes_back_and_looks() {
    let site = shop();
    let home = Home::new();
    home.write_config("security:\n  allow_private_urls: true\n");
    let (server, output) = browse(
        &home,
        vec![
            call(
                "browser_navigate",
                json!({"url": format!("{}/", site.url())}),
            ),
            call("browser_snapshot", json!({})),
            call("browser_click", json!({"ref": "e1"})),
            call("browser_type", json!({"ref": "e2", "text": "Ada"})),
            call("browser_press", json!({"key": "Enter"})),
            call("browser_back", json!({})),
            call("browser_snapshot", json!({})),
            call(
                "browser_vision",
                json!({"question": "What does the page say?"}),
            ),
            // The vision model's answer (the main model: no auxiliary one is set).
            Step::text("It welcomes you to the shop."),
            Step::text("done"),
        ],
    );
    let results = tool_results(&server, 9);
    assert_eq!(results.len(), 8, "{results:?}\n{}", stderr(&output));
    assert_contains(&results[0], "\"title\":\"Shop\"");
    assert_contains(&results[1], "Nothing happened yet");
    assert_contains(&results[1], "button \"Change it\" [ref=e1]");
    assert_contains(&results[2], "\"navigated\":false");
    assert_contains(&results[3], "\"typed\":\"Ada\"");
    assert_contains(&results[4], "\"navigated\":true");
    assert_contains(&results[4], "/ordered?name=Ada");
    assert!(
        site.visits()
            .iter()
            .any(|v| v.target == "/ordered?name=Ada")
    );
    assert_contains(&results[5], "\"title\":\"Shop\"");
    // Back on the first page, reloaded: the click's change is gone again.
    assert_contains(&results[6], "Welcome to the shop");
    assert_contains(&results[7], "It welcomes you to the shop.");
    // The screenshot reached the model as a PNG.
    let vision = &server.requests()[8];
    let images: Vec<Image> = vision
        .messages()
        .into_iter()
        .flat_map(|m| m.images)
        .collect();
    assert!(
        matches!(images.as_slice(), [Image::Inline { media_type, .. }] if media_type == "image/png"),
        "{images:?}"
    );
    // No browser outlives the run.
    let profiles = home.path().join("tmp/browser");
    wait_until(
        "the browser to end",
        std::time::Duration::from_secs(5),
        || processes_mentioning(&profiles.display().to_string()).is_empty(),
    );
}

#[test]
#[ignore = "heavy: needs Chromium (./scripts/test --heavy installs it)"]
fn a_real_browser_refuses_private_addresses_without_the_setting() {
    let site = shop();
    let home = Home::new();
    let (server, _) = browse(
        &home,
        vec![
            call(
                "browser_navigate",
                json!({"url": format!("{}/", site.url())}),
            ),
            call("browser_navigate", json!({"url": "file:///etc/hostname"})),
            Step::text("done"),
        ],
    );
    let results = tool_results(&server, 2);
    assert_contains(&results[0], "is loopback");
    assert_contains(&results[0], "security.allow_private_urls");
    assert_contains(&results[1], "only http and https");
    assert!(site.visits().is_empty(), "{:?}", site.visits());
}

#[test]
#[ignore = "heavy: needs Chromium (./scripts/test --heavy installs it)"]
fn no_browser_outlives_a_killed_agent() {
    let site = shop();
    let home = Home::new();
    home.write_config("security:\n  allow_private_urls: true\n");
    let server = ScriptedServer::spawn(Script::new([
        call(
            "browser_navigate",
            json!({"url": format!("{}/", site.url())}),
        ),
        Step::stall(std::time::Duration::from_secs(120)),
    ]))
    .unwrap();
    let work = home.workdir();
    let mut command = home.query_in(work.path(), &server, "browse", &[]);
    command
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let child = command.spawn().unwrap();
    let profiles = home.path().join("tmp/browser").display().to_string();
    wait_until(
        "the browser to open the page",
        std::time::Duration::from_secs(60),
        || server.requests().len() >= 2 && !processes_mentioning(&profiles).is_empty(),
    );
    let status = std::process::Command::new("kill")
        .args(["-KILL", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    wait(child);
    wait_until(
        "the browser to die with the agent",
        std::time::Duration::from_secs(10),
        || processes_mentioning(&profiles).is_empty(),
    );
}

#[test]
fn a_chat_keeps_its_browser_between_messages() {
    use talaria_testkit::telegram::{BotAction, FakeChat, FakeUser, TelegramFake};
    build_plugins();
    const TOKEN: &str = "7000001:test-token-of-the-fake";
    let devtools = FakeDevTools::spawn(FakePage {
        title: "Example Shop".into(),
        ax_nodes: json!([
            ax_node(1, None, "RootWebArea", "Example Shop", &[2]),
            ax_node(2, Some(1), "StaticText", "Fresh bread daily", &[]),
        ]),
        hang_on: None,
    })
    .unwrap();
    let telegram = TelegramFake::spawn(TOKEN).unwrap();
    let model = ScriptedServer::spawn(Script::new([
        call("browser_navigate", json!({"url": "https://shop.example/"})),
        Step::text("opened it"),
        call("browser_snapshot", json!({})),
        Step::text("it sells bread"),
    ]))
    .unwrap();
    let home = Home::new();
    let install = tempfile::tempdir().unwrap();
    let pid_file = install.path().join("browser.pid");
    let program = devtools
        .fake_chromium(install.path(), &pid_file, &home.path().join("config.yaml"))
        .unwrap();
    home.write_config(&format!(
        "browser:\n  executable: {}\n\
         gateway:\n  platforms:\n    telegram:\n      bot_token: ${{TG_TOKEN}}\n      \
         api_base: {}\n      poll_timeout_secs: 1\n      allowed_users: ['1001']\n",
        program.display(),
        telegram.api_base()
    ));
    // Killed if an assertion fails before the gateway is stopped.
    let mut gateway = KilledOnDrop(Some(crate::gateway::spawn_gateway(
        &home,
        &model,
        &[("TG_TOKEN", TOKEN)],
    )));
    let ann = FakeUser::new(1001, "Ann");
    let chat = FakeChat::private(&ann);
    let answers = || {
        telegram
            .sent()
            .into_iter()
            .filter(|action| matches!(action, BotAction::Message { chat_id: 1001, .. }))
            .count()
    };
    telegram.push_user_message(&chat, &ann, "open the shop");
    wait_until(
        "the first answer",
        std::time::Duration::from_secs(60),
        || answers() == 1,
    );
    telegram.push_user_message(&chat, &ann, "what is on it?");
    wait_until(
        "the second answer",
        std::time::Duration::from_secs(60),
        || answers() == 2,
    );

    // The second message's agent read the page the first one opened: one
    // browser, attached to once.
    let snapshot = tool_results(&model, 3).pop().unwrap();
    assert!(
        snapshot.contains("URL: https://shop.example/"),
        "{snapshot}\n{:?}",
        devtools
            .calls()
            .iter()
            .map(|c| &c.method)
            .collect::<Vec<_>>()
    );
    assert_contains(&snapshot, "text: Fresh bread daily");
    let attached = devtools
        .calls()
        .iter()
        .filter(|c| c.method == "Target.attachToTarget")
        .count();
    assert_eq!(attached, 1, "{:?}", devtools.calls());

    assert_code(&run(home.talaria(&["gateway", "stop"])), 0);
    let output = wait(gateway.0.take().unwrap());
    assert!(output.status.success(), "{}", stderr(&output));
    let pid: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    wait_until(
        "the browser to end with the gateway",
        std::time::Duration::from_secs(10),
        || !alive(pid),
    );
}

/// Item 2 of issue 46: with a real browser open, a command looks for its DevTools endpoint on
/// every listening loopback port (as an attacker found Chromium's in `/proc/net/tcp`) and
/// finds none: the browser is driven over a pipe. And the browser cannot read the profile
/// home: it is hidden from its processes.
#[test]
#[ignore = "heavy: needs Chromium (./scripts/test --heavy installs it)"]
fn a_command_cannot_reach_the_real_browsers_control_channel() {
    let site = shop();
    let home = Home::new();
    home.write_config("security:\n  allow_private_urls: true\nretry:\n  base_delay_ms: 20\n");
    let probe = r#"
import re, urllib.request
found = []
for table in ("/proc/net/tcp", "/proc/net/tcp6"):
    try:
        lines = open(table).read().splitlines()[1:]
    except OSError:
        continue
    for line in lines:
        fields = line.split()
        if fields[3] != "0A":  # LISTEN
            continue
        port = int(fields[1].split(":")[1], 16)
        try:
            body = urllib.request.urlopen(f"http://127.0.0.1:{port}/json/version", timeout=2).read()
        except Exception:
            continue
        if b"webSocketDebuggerUrl" in body:
            found.append(port)
print("devtools ports:", found)
"#;
    std::fs::write(home.path().join("probe.py"), probe).unwrap();
    let command = format!("python3 {}", home.path().join("probe.py").display());
    let (server, output) = browse(
        &home,
        vec![
            call(
                "browser_navigate",
                json!({"url": format!("{}/", site.url())}),
            ),
            call("terminal", json!({ "command": command })),
            Step::text("done"),
        ],
    );
    let results = tool_results(&server, 2);
    assert_eq!(results.len(), 2, "{results:?}\n{}", stderr(&output));
    assert_contains(&results[0], "\"title\":\"Shop\"");
    assert_contains(&results[1], "devtools ports: []");
}
