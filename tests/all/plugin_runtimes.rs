//! End to end: plugins that are not components. An Extism module's tool serves
//! the model under the user's grants; a native library loads only from the
//! user's plugin directory and only once trusted by name.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use talaria_testkit::{Script, ScriptedServer, Step, ToolCall};

#[cfg(feature = "extism")]
#[test]
fn an_extism_plugin_serves_the_model_within_its_grants() {
    let home = Home::new();
    install_probe("extism-probe", &home.path().join("plugins/extism-probe"));
    let list = run(home.talaria(&["plugins", "list"]));
    assert_code(&list, 0);
    let out = stdout(&list);
    assert!(out.contains("extism-probe 0.1.0 [tools] (user)"), "{out}");
    assert!(out.contains("runtime:   extism"), "{out}");
    assert!(out.contains("granted:   none"), "{out}");

    // Not granted the network it requests: a request from inside fails.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!(
        "http://127.0.0.1:{}/",
        listener.local_addr().unwrap().port()
    );
    let server = ScriptedServer::spawn(Script::new([
        Step::tool_calls([
            ToolCall::new("probe_echo", r#"{"text":"hi"}"#),
            ToolCall::new("probe_fetch", format!(r#"{{"url":"{url}"}}"#)),
        ]),
        Step::text("done"),
    ]))
    .unwrap();
    let work = home.workdir();
    let output = run(home.query_in(work.path(), &server, "probe", &[]));
    assert_code(&output, 0);
    assert!(stdout(&output).contains("done"), "{}", stdout(&output));
    let requests = server.requests();
    assert!(requests[0].tools_raw().contains("\"probe_echo\""));
    let results = tool_results(&server, 1);
    let echo: serde_json::Value = serde_json::from_str(&results[0]).unwrap();
    assert_eq!(echo["echo"], "hi");
    assert_eq!(echo["greeting"], "hello from the manifest");
    assert_eq!(echo["cwd"], serde_json::Value::Null, "$CWD is not granted");
    assert!(results[1].contains("is not allowed"), "{}", results[1]);
    listener.set_nonblocking(true).unwrap();
    assert!(listener.accept().is_err(), "no connection was made");
}

#[cfg(feature = "native")]
#[test]
fn a_native_plugin_loads_only_from_the_user_directory_once_trusted() {
    let home = Home::new();
    install_probe("native-probe", &home.path().join("plugins/native-probe"));
    let work = home.workdir();
    let server = ScriptedServer::spawn(Script::new([
        Step::text("untrusted"),
        Step::text("still untrusted"),
        Step::tool_call("native_echo", r#"{"text":"from C"}"#),
        Step::text("trusted"),
    ]))
    .unwrap();

    let list = stdout(&run(home.talaria(&["plugins", "list"])));
    assert!(list.contains("native-probe 0.1.0 [tools] (user)"), "{list}");
    assert!(list.contains("UNSANDBOXED native code"), "{list}");
    assert!(list.contains("requests:  trust-native"), "{list}");

    let output = run(home.query_in(work.path(), &server, "hi", &[]));
    assert_code(&output, 0);
    assert!(
        stderr(&output).contains("`talaria plugin grant native-probe trust-native`"),
        "{}",
        stderr(&output)
    );
    // `all` never trusts native code.
    assert_code(
        &run(home.talaria(&["plugins", "grant", "native-probe", "all"])),
        0,
    );
    assert_code(&run(home.query_in(work.path(), &server, "hi", &[])), 0);

    let granted = run(home.talaria(&["plugins", "grant", "native-probe", "trust-native"]));
    assert_code(&granted, 0);
    assert!(
        stdout(&granted).contains("runs unsandboxed"),
        "{}",
        stdout(&granted)
    );
    let output = run(home.query_in(work.path(), &server, "hi", &[]));
    assert_code(&output, 0);
    let requests = server.requests();
    assert!(!requests[0].tools_raw().contains("native_echo"));
    assert!(!requests[1].tools_raw().contains("native_echo"));
    assert!(requests[2].tools_raw().contains("\"native_echo\""));
    let result: serde_json::Value = serde_json::from_str(&tool_results(&server, 3)[0]).unwrap();
    assert_eq!(result["echo"], "from C");
    assert_ne!(result["pid"], std::process::id(), "it ran inside talaria");
}

#[cfg(feature = "native")]
#[test]
fn a_native_plugin_in_a_trusted_project_never_loads() {
    let home = Home::new();
    let work = home.workdir();
    let package = work.path().join(".talaria/plugins/native-probe");
    install_probe("native-probe", &package);
    let mut trust = home.talaria(&["plugins", "trust"]);
    trust.current_dir(work.path());
    assert_code(&run(trust), 0);
    let mut grant = home.talaria(&["plugins", "grant", "native-probe", "trust-native"]);
    grant.current_dir(work.path());
    assert_code(&run(grant), 0);

    let server = ScriptedServer::spawn(Script::new([Step::text("no native")])).unwrap();
    let output = run(home.query_in(work.path(), &server, "hi", &[]));
    assert_code(&output, 0);
    assert!(
        stderr(&output).contains(
            "plugin native-probe not loaded: native plugins load only from your own plugin directory"
        ),
        "{}",
        stderr(&output)
    );
    assert!(!server.requests()[0].tools_raw().contains("native_echo"));
    let mut info = home.talaria(&["plugins", "info", "native-probe"]);
    info.current_dir(work.path());
    let info = run(info);
    assert_code(&info, 1);
    assert!(
        stdout(&info).contains("does not load: plugin native-probe not loaded"),
        "{}",
        stdout(&info)
    );
}

/// The `granted:` line of `name`'s entry in `plugins list` output.
fn granted_line(list: &str, entry: &str) -> String {
    let start = list
        .find(entry)
        .unwrap_or_else(|| panic!("{entry:?} not in:\n{list}"));
    list[start..]
        .lines()
        .find_map(|line| line.trim().strip_prefix("granted:"))
        .map(|granted| granted.trim().to_owned())
        .unwrap_or_default()
}

#[test]
fn a_trusted_project_plugin_does_not_inherit_grants_by_name() {
    build_plugins();
    let home = Home::new();
    let work = home.workdir();
    let elsewhere = home.workdir();
    let outside = |args: &[&str]| {
        let mut command = home.talaria(args);
        command.current_dir(elsewhere.path());
        run(command)
    };
    // The user grants the distribution's `terminal` exec: a decision recorded for it.
    assert_code(&outside(&["plugins", "grant", "terminal", "exec"]), 0);
    // A trusted project ships its own plugin named `terminal`, asking for exec too.
    let dist_terminal =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/plugins/dist/terminal");
    copy_dir(
        &dist_terminal,
        &work.path().join(".talaria/plugins/terminal"),
    );
    let mut trust = home.talaria(&["plugins", "trust"]);
    trust.current_dir(work.path());
    assert_code(&run(trust), 0);

    let mut list = home.talaria(&["plugins", "list"]);
    list.current_dir(work.path());
    let list = stdout(&run(list));
    assert_eq!(
        granted_line(&list, "terminal 0.1.0 [tools] (project)"),
        "none",
        "{list}"
    );

    // In a session its commands do not run: it was granted nothing.
    let server = ScriptedServer::spawn(Script::new([
        Step::tool_call("terminal", r#"{"command":"echo $((6*7))"}"#),
        Step::text("done"),
    ]))
    .unwrap();
    let output = run(home.query_in(work.path(), &server, "run it", &["--yolo"]));
    assert_code(&output, 0);
    let results = tool_results(&server, 1);
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(
        !results[0].contains("42"),
        "the command ran: {}",
        results[0]
    );

    // Granting the project's plugin leaves the distribution's decision alone, and back.
    let mut grant = home.talaria(&["plugins", "revoke", "terminal", "exec"]);
    grant.current_dir(work.path());
    assert_code(&run(grant), 0);
    let list = stdout(&outside(&["plugins", "list"]));
    assert_eq!(
        granted_line(&list, "terminal 0.1.0 [tools] (distribution)"),
        "exec",
        "{list}"
    );
}

#[test]
fn a_fifo_plugin_file_is_reported_and_start_up_goes_on() {
    let home = Home::new();
    let package = home.path().join("plugins/piped");
    std::fs::create_dir_all(&package).unwrap();
    std::fs::write(
        package.join("plugin.toml"),
        "name = \"piped\"\nversion = \"0.1.0\"\napi = \"0.1.1\"\ndescription = \"d\"\n\
         provides = [\"tools\"]\nwasm = \"plugin.wasm\"\n",
    )
    .unwrap();
    let status = std::process::Command::new("mkfifo")
        .arg(package.join("plugin.wasm"))
        .status()
        .unwrap();
    assert!(status.success());
    let server = ScriptedServer::spawn(Script::new([Step::text("started")])).unwrap();
    let work = home.workdir();
    // `run` kills a run that hangs and fails the test.
    let output = run(home.query_in(work.path(), &server, "hi", &[]));
    assert_code(&output, 0);
    assert!(stdout(&output).contains("started"), "{}", stdout(&output));
    let err = stderr(&output);
    assert!(
        err.contains("plugin piped not loaded")
            && err.contains("plugin.wasm: not a regular file but a FIFO"),
        "{err}"
    );
}
