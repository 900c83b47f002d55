//! `talaria gateway` from outside: the lock a running gateway holds, the
//! systemd user unit written and removed (never enabled), and the webhook
//! listener; helpers for the platforms' tests (gateway_irc, gateway_telegram).

use talaria_gateway::GatewayLock;

use crate::common::*;

/// `command` with its user configuration under `config`.
fn xdg(mut command: std::process::Command, config: &std::path::Path) -> std::process::Command {
    command.env("XDG_CONFIG_HOME", config);
    command
}

#[test]
fn status_and_stop_follow_the_profiles_gateway_lock() {
    let home = Home::new();
    let status = run(home.talaria(&["gateway", "status"]));
    assert_code(&status, 1);
    assert_contains(&stdout(&status), "no gateway is running for this profile");
    let stop = run(home.talaria(&["gateway", "stop"]));
    assert_code(&stop, 0);
    assert_contains(&stdout(&stop), "no gateway is running");

    // The lock a running gateway holds; this test process stands for it.
    let lock = GatewayLock::acquire(&home.path().join("gateway")).unwrap();
    let status = run(home.talaria(&["gateway", "status"]));
    assert_code(&status, 0);
    assert_contains(
        &stdout(&status),
        &format!("the gateway is running (pid {})", std::process::id()),
    );
    drop(lock);
    assert_code(&run(home.talaria(&["gateway", "status"])), 1);
}

#[test]
fn install_writes_a_unit_it_does_not_enable_and_uninstall_removes_it() {
    let home = Home::new();
    let config = home.path().join("xdg");
    let unit = config.join("systemd/user/talaria-gateway.service");
    let installed = run(xdg(home.talaria(&["gateway", "install"]), &config));
    assert_code(&installed, 0);
    assert_contains(
        &stdout(&installed),
        "systemctl --user enable --now talaria-gateway.service",
    );
    let text = std::fs::read_to_string(&unit).unwrap();
    assert_contains(
        &text,
        &format!(
            "ExecStart=\"{}\" gateway run",
            env!("CARGO_BIN_EXE_talaria")
        ),
    );
    assert_contains(
        &text,
        &format!("Environment=\"TALARIA_HOME={}\"", home.path().display()),
    );

    let removed = run(xdg(home.talaria(&["gateway", "uninstall"]), &config));
    assert_code(&removed, 0);
    assert!(!unit.exists());

    // A unit somebody else wrote under that name is left alone.
    std::fs::write(&unit, "[Unit]\nDescription=mine\n").unwrap();
    let refused = run(xdg(home.talaria(&["gateway", "install"]), &config));
    assert_code(&refused, 2);
    assert_contains(
        &stderr(&refused),
        "was not written by `talaria gateway install`",
    );
    assert_eq!(
        std::fs::read_to_string(&unit).unwrap(),
        "[Unit]\nDescription=mine\n"
    );
}

#[test]
fn a_named_profile_gets_its_own_unit() {
    let home = Home::new();
    assert_code(&run(home.talaria(&["profile", "create", "work"])), 0);
    let config = home.path().join("xdg");
    let installed = run(xdg(
        home.talaria(&["--profile", "work", "gateway", "install"]),
        &config,
    ));
    assert_code(&installed, 0);
    let text =
        std::fs::read_to_string(config.join("systemd/user/talaria-gateway-work.service")).unwrap();
    assert_contains(&text, "--profile \"work\" gateway run");
}

/// `talaria gateway run` in `home` against `model`, with `env` set and its
/// log on a pipe (read when it ends).
pub(crate) fn spawn_gateway(
    home: &Home,
    model: &talaria_testkit::ScriptedServer,
    env: &[(&str, &str)],
) -> std::process::Child {
    gateway_command(home, model, env).spawn().unwrap()
}

/// The command [`spawn_gateway`] runs.
pub(crate) fn gateway_command(
    home: &Home,
    model: &talaria_testkit::ScriptedServer,
    env: &[(&str, &str)],
) -> std::process::Command {
    let mut args = vec!["gateway", "run"];
    let models = crate::cli::openai_args(model);
    args.extend(models.iter().map(String::as_str));
    let mut command = home.talaria(&args);
    command
        .env("TALARIA_API_KEY", "sk-test")
        .envs(env.iter().copied())
        .stderr(std::process::Stdio::piped());
    command
}

/// A port nothing listens on now.
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind(("127.0.0.1", 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A GitHub-style delivery to `/hooks/<route>`, signed with `secret`
/// (unsigned when `None`): status and body.
pub(crate) fn post_hook(
    port: u16,
    route: &str,
    event: &str,
    delivery: &str,
    secret: Option<&[u8]>,
    body: &[u8],
) -> (u16, String) {
    let signature = secret.map(|secret| talaria_gateway::webhook::sign(secret, body));
    let mut headers = vec![("X-GitHub-Event", event), ("X-GitHub-Delivery", delivery)];
    if let Some(signature) = &signature {
        headers.push(("X-Hub-Signature-256", signature));
    }
    let (status, _, reply) = http_request(port, "POST", &format!("/hooks/{route}"), &headers, body);
    (status, reply)
}

#[test]
fn a_signed_webhook_prompts_the_agent_with_read_only_tools_and_the_rest_is_refused() {
    use talaria_testkit::{Script, ScriptedServer, Step};

    let model =
        ScriptedServer::spawn(Script::new([Step::text("one comment, nothing urgent")])).unwrap();
    let port = free_port();
    let home = Home::new();
    home.write_config(&format!(
        "gateway:\n  webhook:\n    port: {port}\n    routes:\n      github:\n        \
         secret: ${{GH_HOOK_SECRET}}\n        events: [issue_comment]\n"
    ));
    let gateway = spawn_gateway(&home, &model, &[("GH_HOOK_SECRET", "hook-secret")]);
    wait_until(
        "the webhook listener",
        std::time::Duration::from_secs(60),
        || std::net::TcpStream::connect(("127.0.0.1", port)).is_ok(),
    );

    let comment = serde_json::json!({
        "action": "created",
        "issue": {"number": 7, "title": "Crash on start"},
        "comment": {"body": "The build is red on main", "user": {"login": "ann"}},
    })
    .to_string();
    let secret = Some(&b"hook-secret"[..]);
    let body = comment.as_bytes();

    // Who may not post, and what is not taken, never reaches the model.
    let (status, reply) = post_hook(port, "github", "issue_comment", "d0", None, body);
    assert_eq!(status, 401, "{reply}");
    assert_contains(&reply, "x-hub-signature-256");
    let wrong = Some(&b"not-the-secret"[..]);
    assert_eq!(
        post_hook(port, "github", "issue_comment", "d0", wrong, body).0,
        401
    );
    assert_eq!(
        post_hook(port, "gitlab", "issue_comment", "d0", secret, body).0,
        404
    );
    let (status, reply) = post_hook(port, "github", "push", "d1", secret, b"{}");
    assert_eq!(status, 202, "{reply}");
    assert_contains(&reply, "does not take push events");
    let big = vec![b'x'; 2 * 1024 * 1024];
    assert_eq!(
        post_hook(port, "github", "issue_comment", "d2", secret, &big).0,
        413
    );
    let (status, _, _) = http_request(port, "GET", "/hooks/github", &[], b"");
    assert_eq!(status, 405);

    // A signed comment becomes a turn; its redelivery does not.
    let (status, reply) = post_hook(port, "github", "issue_comment", "d3", secret, body);
    assert_eq!(status, 202, "{reply}");
    let (status, reply) = post_hook(port, "github", "issue_comment", "d3", secret, body);
    assert_eq!(status, 200, "{reply}");
    assert_contains(&reply, "duplicate");
    wait_until(
        "the webhook's turn",
        std::time::Duration::from_secs(60),
        || !model.requests().is_empty(),
    );
    let request = &model.requests()[0];
    let prompt = request
        .messages()
        .last()
        .map(|m| m.text.clone())
        .unwrap_or_default();
    assert_contains(&prompt, "<webhook-payload>");
    assert_contains(&prompt, "The build is red on main");
    assert_contains(&request.system_prompt_raw(), "A webhook delivered an event");
    let tools = request.tools_raw();
    // `clarify` too, though the webhook profile lists it: nobody can answer. And
    // `vision_analyze`: a URL the payload planted would carry the session's secrets out.
    for side_effect in [
        "\"terminal\"",
        "\"write_file\"",
        "\"patch\"",
        "\"send_message\"",
        "\"clarify\"",
        "\"vision_analyze\"",
    ] {
        assert!(
            !tools.contains(side_effect),
            "{side_effect} offered: {tools}"
        );
    }

    wait_until("the turn's end", std::time::Duration::from_secs(60), || {
        let listed = stdout(&run(home.talaria(&["sessions", "list"])));
        listed
            .lines()
            .any(|line| line.contains("webhook:github") && line.contains(" 2 msgs"))
    });
    assert_code(&run(home.talaria(&["gateway", "stop"])), 0);
    let output = wait(gateway);
    assert!(output.status.success(), "{}", stderr(&output));
    let log = stderr(&output);
    assert_contains(&log, "webhook: listening on http://127.0.0.1:");
    assert_contains(&log, "webhook github (issue_comment): answered in session");
    assert_eq!(model.requests().len(), 1, "only the signed comment ran");
}

/// The server end of a line chat, as the test's own `TcpListener` sees it.
struct LinePeer {
    reader: std::io::BufReader<std::net::TcpStream>,
    writer: std::net::TcpStream,
}

impl LinePeer {
    /// Waits up to 180 s for the adapter to connect (a Python component is
    /// compiled first: ≈ 20 s of CPU, far longer on a loaded machine).
    fn accept(listener: &std::net::TcpListener) -> Self {
        listener.set_nonblocking(true).unwrap();
        let started = std::time::Instant::now();
        let stream = loop {
            match listener.accept() {
                Ok((stream, _)) => break stream,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    assert!(
                        started.elapsed() < std::time::Duration::from_secs(180),
                        "the adapter never connected"
                    );
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
                Err(e) => panic!("accept: {e}"),
            }
        };
        stream.set_nonblocking(false).unwrap();
        stream
            .set_read_timeout(Some(std::time::Duration::from_millis(500)))
            .unwrap();
        Self {
            reader: std::io::BufReader::new(stream.try_clone().unwrap()),
            writer: stream,
        }
    }

    fn send(&mut self, line: &str) {
        use std::io::Write;
        self.writer
            .write_all(format!("{line}\n").as_bytes())
            .unwrap();
    }

    /// The next line the adapter writes, within 60 s.
    fn next_line(&mut self) -> String {
        use std::io::BufRead;
        let started = std::time::Instant::now();
        let mut line = String::new();
        while started.elapsed() < std::time::Duration::from_secs(60) {
            match self.reader.read_line(&mut line) {
                Ok(0) => panic!("the adapter closed the connection (read {line:?})"),
                Ok(_) if line.ends_with('\n') => return line.trim_end().to_owned(),
                // A timeout keeps what was read of the line so far.
                Ok(_) | Err(_) => {}
            }
        }
        panic!("no line from the adapter within 60 s (read {line:?})");
    }
}

/// `talaria plugin new NAME --kind adapter` is a working chat adapter: built
/// with `talaria plugin build`, installed with the one grant it asks for and
/// pointed at a server this test owns, it carries a user's line to the model
/// and the model's answer back, and signs off when the gateway stops.
#[test]
fn an_adapter_from_the_template_carries_a_chat_to_the_model_and_back() {
    let home = Home::new();
    let projects = home.workdir();
    let mut new = home.talaria(&["plugin", "new", "line-test", "--kind", "adapter"]);
    new.current_dir(projects.path());
    let created = run(new);
    assert_code(&created, 0);
    assert_contains(&stdout(&created), "Created rust chat adapter line-test");
    let project = projects.path().join("line-test");

    // The server, on a port of its own; the author names it in the grant.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    grant_port(&project.join("plugin.toml"), port);
    let mut build = home.talaria(&["plugin", "build", "line-test"]);
    build.current_dir(projects.path());
    rust_toolchain_env(&mut build);
    assert_code(&run(build), 0);
    chat_through_the_template_adapter(&home, &project, "line-test", listener);
}

/// The same with `--lang python`: the project's own tests pass natively, and
/// its component (componentize-py, over `wasi:sockets` called directly)
/// carries the chat like the Rust one.
#[test]
fn a_python_adapter_from_the_template_carries_a_chat_to_the_model_and_back() {
    adapter_in_another_language("python", &["python3", "-m", "unittest"], "Ran 8 tests");
}

/// `plugin new line-LANG --kind adapter --lang LANG`: the project's own
/// tests (`unit`) pass, printing `passed`; its build (cached across runs, the
/// components are big) carries a chat like the Rust adapter.
fn adapter_in_another_language(lang: &str, unit: &[&str], passed: &str) {
    let _serial = crate::languages::SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    crate::languages::ensure_toolchains();
    let home = Home::new();
    let projects = home.workdir();
    let name = format!("line-{lang}");
    let mut new = home.talaria(&["plugin", "new", &name, "--kind", "adapter", "--lang", lang]);
    new.current_dir(projects.path());
    let created = run(new);
    assert_code(&created, 0);
    assert_contains(
        &stdout(&created),
        &format!("Created {lang} chat adapter {name}"),
    );
    let project = projects.path().join(&name);

    let mut tests = std::process::Command::new(unit[0]);
    tests
        .args(&unit[1..])
        .current_dir(&project)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let tests = run(tests);
    assert_code(&tests, 0);
    assert_contains(&format!("{}{}", stdout(&tests), stderr(&tests)), passed);

    // Built as written (so a warm run takes the cached component), then the
    // package's grant names this test's server.
    crate::languages::build(&home, &project, &format!("{lang}-adapter"), &name);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    grant_port(&project.join("dist").join(&name).join("plugin.toml"), port);
    chat_through_the_template_adapter(&home, &project, &name, listener);
}

/// Moves the manifest's network grant from the template's default server
/// to `127.0.0.1:port`.
fn grant_port(manifest: &std::path::Path, port: u16) {
    let text = std::fs::read_to_string(manifest).unwrap();
    assert_contains(&text, "network = [\"127.0.0.1:7777\"]");
    std::fs::write(
        manifest,
        text.replace("127.0.0.1:7777", &format!("127.0.0.1:{port}")),
    )
    .unwrap();
}

/// Installs the built template adapter `name` with its one grant, runs the
/// gateway against the line chat server on `listener`, and checks that a
/// user's line reaches the model and its answer comes back, line by line.
fn chat_through_the_template_adapter(
    home: &Home,
    project: &std::path::Path,
    name: &str,
    listener: std::net::TcpListener,
) {
    use talaria_testkit::{Script, ScriptedServer, Step};

    let port = listener.local_addr().unwrap().port();
    let package = project.join("dist").join(name);
    let grant = format!("network:127.0.0.1:{port}");
    let installed = run(home.talaria(&[
        "plugin",
        "install",
        package.to_str().unwrap(),
        "--grant",
        &grant,
    ]));
    assert_code(&installed, 0);
    let list = stdout(&run(home.talaria(&["plugin", "list"])));
    assert_contains(&list, &format!("{name} 0.1.0 [chat] (user)"));
    assert_contains(&list, &format!("granted:   {grant}"));

    let model = ScriptedServer::spawn(Script::new([Step::text(
        "pong from talaria\nand a second line",
    )]))
    .unwrap();
    home.write_config(&format!(
        "retry:\n  base_delay_ms: 20\n  max_delay_ms: 100\n\
         gateway:\n  platforms:\n    {name}:\n      host: 127.0.0.1\n      port: {port}\n      \
         nick: talaria\n      allowed_users: [ann]\n"
    ));
    let gateway = spawn_gateway(home, &model, &[]);

    let mut server = LinePeer::accept(&listener);
    assert_eq!(server.next_line(), "HELLO talaria");
    server.send("ann: ping");
    assert_eq!(server.next_line(), "@ann pong from talaria");
    assert_eq!(server.next_line(), "@ann and a second line");
    let requests = model.requests();
    assert_eq!(requests.len(), 1);
    let user = requests[0]
        .messages()
        .into_iter()
        .rfind(|m| m.role == talaria_testkit::Role::User)
        .unwrap();
    assert_contains(&user.text, "ping");
    // The adapter's capabilities reached the prompt.
    assert_contains(&requests[0].system_prompt_raw(), "plain text only");

    assert_code(&run(home.talaria(&["gateway", "stop"])), 0);
    assert_eq!(server.next_line(), "BYE");
    let output = wait(gateway);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_contains(
        &stderr(&output),
        &format!("talaria gateway: {name}: started"),
    );
}

/// A platform whose server pushes: `/platforms/<name>` on the webhook port
/// reaches its adapter (the chat-probe test plugin: the body's lines are the
/// messages), whose answer goes back to the caller, while the messages it
/// carried are answered like any other.
#[test]
fn a_request_pushed_to_a_platform_reaches_its_adapter_and_is_answered() {
    use talaria_testkit::{Script, ScriptedServer, Step};

    let home = Home::new();
    install_test_plugin(&home, "chat-probe");
    let server = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
    let port = server.local_addr().unwrap().port();
    // The probe asks for no network: this copy asks for the test's server.
    let manifest = home.path().join("plugins/chat-probe/plugin.toml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(
        &manifest,
        text.replace(
            "\n[config]",
            &format!("\n[capabilities]\nnetwork = [\"127.0.0.1:{port}\"]\n\n[config]"),
        ),
    )
    .unwrap();
    let grant = format!("network:127.0.0.1:{port}");
    assert_code(
        &run(home.talaria(&["plugins", "grant", "chat-probe", &grant])),
        0,
    );
    let model = ScriptedServer::spawn(Script::new([Step::text("pushed and answered")])).unwrap();
    let hook_port = free_port();
    home.write_config(&format!(
        "gateway:\n  platforms:\n    loopback:\n      port: {port}\n      allowed_users: [ann]\n  \
         webhook:\n    port: {hook_port}\n    platforms: [loopback]\n"
    ));
    let gateway = spawn_gateway(&home, &model, &[]);
    let mut peer = LinePeer::accept(&server);
    assert_eq!(peer.next_line(), "HELLO 0");

    let (status, _, body) = http_request(
        hook_port,
        "POST",
        "/platforms/loopback/events",
        &[],
        b"MSG @ann ann hello over a push",
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(body, "POST /events: 1 events");
    let sent = std::iter::repeat_with(|| peer.next_line())
        .find(|line| !line.starts_with("TYPING "))
        .unwrap();
    assert_eq!(sent, "SEND @ann pushed and answered");
    let (status, _, _) = http_request(hook_port, "POST", "/platforms/other", &[], b"");
    assert_eq!(status, 404);

    assert_code(&run(home.talaria(&["gateway", "stop"])), 0);
    let output = wait(gateway);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_contains(&stderr(&output), "/platforms/loopback");
}
