//! A stdio server written with the Python `mcp` SDK: what environment it gets, that its
//! process group dies with the client, and that a 10 MB non-protocol line does not break the
//! session.

use std::collections::BTreeMap;
use std::process::Command;
use std::time::{Duration, Instant};

use talaria_mcp::{McpServer, PASSED_ENV};

use crate::common::{self, eventually, process_gone, run};

const PROBE: &str = "TALARIA_MCP_ENV_PROBE";

fn text(result: &rmcp::model::CallToolResult) -> String {
    talaria_mcp::flatten_result(result)
}

#[test]
fn the_environment_is_minimal_and_holds_no_provider_keys() {
    let Some(peers) = common::peers() else { return };
    if std::env::var_os(PROBE).is_none() {
        // Run this test again in a process that has provider keys in its environment.
        let status = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "stdio_python::the_environment_is_minimal_and_holds_no_provider_keys",
                "--nocapture",
            ])
            .env(PROBE, "1")
            .env("OPENAI_API_KEY", "sk-proj-probeprobeprobeprobeprobe")
            .env("ANTHROPIC_API_KEY", "sk-ant-api03-probeprobeprobeprobe")
            .env("TALARIA_API_KEY", "probe-talaria-key")
            .env("AWS_SECRET_ACCESS_KEY", "probe-aws")
            .env("XDG_RUNTIME_DIR", "/tmp/xdg-probe")
            .env("UNRELATED_PARENT_VAR", "from-the-parent")
            .status()
            .unwrap();
        assert!(status.success(), "the probe run failed");
        return;
    }
    assert!(std::env::var_os("OPENAI_API_KEY").is_some());
    let mut config = common::python_stdio(&peers, &[]);
    config
        .env
        .insert("CONFIGURED_TOKEN".into(), "given-explicitly".into());
    let server = McpServer::new(common::spec("envprobe", config));
    run(async {
        let result = server.call_tool("environment", None).await.unwrap();
        let env: BTreeMap<String, String> = serde_json::from_str(&text(&result)).unwrap();
        eprintln!(
            "a stdio server's environment: {:?}",
            env.keys().collect::<Vec<_>>()
        );
        for key in [
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "TALARIA_API_KEY",
            "AWS_SECRET_ACCESS_KEY",
            "UNRELATED_PARENT_VAR",
            PROBE,
        ] {
            assert!(!env.contains_key(key), "{key} reached the server");
        }
        assert_eq!(env["CONFIGURED_TOKEN"], "given-explicitly");
        assert_eq!(env["XDG_RUNTIME_DIR"], "/tmp/xdg-probe");
        assert!(env.contains_key("PATH"));
        for key in env.keys() {
            // Python sets LC_CTYPE itself when the locale is C (PEP 538).
            let allowed = PASSED_ENV.contains(&key.as_str())
                || key.starts_with("XDG_")
                || key == "CONFIGURED_TOKEN"
                || key == "LC_CTYPE";
            assert!(allowed, "{key} reached the server");
        }
        server.shutdown().await;
    });
}

#[test]
fn the_process_group_dies_when_the_client_is_dropped_or_shut_down() {
    let Some(peers) = common::peers() else { return };
    run(async {
        for shut_down in [false, true] {
            let server = McpServer::new(common::spec("group", common::python_stdio(&peers, &[])));
            let ids = server.call_tool("process_ids", None).await.unwrap();
            let ids: serde_json::Value = serde_json::from_str(&text(&ids)).unwrap();
            let pid = u32::try_from(ids["pid"].as_u64().unwrap()).unwrap();
            assert_eq!(
                ids["pgid"], ids["pid"],
                "the server leads its own process group"
            );
            assert_eq!(server.process_id().await, Some(pid));
            let grandchild = server.call_tool("start_grandchild", None).await.unwrap();
            let grandchild: u32 = text(&grandchild).trim().parse().unwrap();
            assert!(!process_gone(grandchild));
            let started = Instant::now();
            if shut_down {
                server.shutdown().await;
            } else {
                drop(server);
            }
            let gone = eventually(Duration::from_secs(5), || {
                process_gone(pid) && process_gone(grandchild)
            })
            .await;
            assert!(
                gone,
                "server {pid} or its child {grandchild} outlived the client"
            );
            eprintln!(
                "process group killed ({}) in {:?}",
                if shut_down { "shutdown" } else { "drop" },
                started.elapsed()
            );
        }
    });
}

#[test]
fn a_ten_megabyte_line_is_dropped_and_the_session_works() {
    let Some(peers) = common::peers() else { return };
    let config = common::python_stdio(&peers, &["--huge-line", "10485760"]);
    let server = McpServer::new(common::spec("huge", config));
    run(async {
        let offer = server.list_tools().await.unwrap();
        let mut names: Vec<&str> = offer.tools.iter().map(|t| t.name.as_str()).collect();
        names.sort_unstable();
        assert_eq!(
            names,
            [
                "add_tool",
                "environment",
                "process_ids",
                "read_file",
                "start_grandchild",
                "write_file"
            ]
        );
        server.shutdown().await;
    });
}

#[test]
fn a_server_in_bwrap_writes_only_its_directory_and_reads_no_hidden_file() {
    let Some(peers) = common::peers() else { return };
    let work = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let secret = work.path().join("secret.env");
    std::fs::write(&secret, "TOKEN=hidden-from-the-server").unwrap();
    let mut config = common::python_stdio(&peers, &[]);
    config.sandbox = Some(talaria_profile::McpSandbox::Bwrap);
    config.cwd = Some(work.path().display().to_string());
    let spec = common::spec("boxed", config)
        .with_confinement(talaria_exec::Confinement::new().hidden(&secret));
    let server = McpServer::new(spec);
    let call = |path: &std::path::Path, text: Option<&str>| {
        let mut arguments = serde_json::Map::new();
        arguments.insert("path".into(), path.display().to_string().into());
        let tool = match text {
            Some(text) => {
                arguments.insert("text".into(), text.into());
                "write_file"
            }
            None => "read_file",
        };
        (tool, arguments)
    };
    run(async {
        let (tool, arguments) = call(&work.path().join("inside.txt"), Some("ok"));
        let result = server.call_tool(tool, Some(arguments)).await.unwrap();
        assert_eq!(text(&result), "written");
        assert_eq!(
            std::fs::read_to_string(work.path().join("inside.txt")).unwrap(),
            "ok"
        );

        let escaped = outside.path().join("escaped.txt");
        let (tool, arguments) = call(&escaped, Some("out"));
        let result = server.call_tool(tool, Some(arguments)).await.unwrap();
        assert!(text(&result).starts_with("error:"), "{}", text(&result));
        assert!(
            !escaped.exists(),
            "the sandboxed server wrote outside its directory"
        );

        let (tool, arguments) = call(&secret, None);
        let result = server.call_tool(tool, Some(arguments)).await.unwrap();
        assert!(
            !text(&result).contains("hidden-from-the-server"),
            "{}",
            text(&result)
        );
        server.shutdown().await;
    });
}

/// A server whose script lives under /tmp (a clone there, say) starts in bwrap: its private
/// /tmp holds the script at the same path.
#[test]
fn a_server_in_bwrap_finds_its_script_under_tmp() {
    let Some(peers) = common::peers() else { return };
    let scripts = tempfile::Builder::new().tempdir_in("/tmp").unwrap();
    let script = scripts.path().join("stdio_server.py");
    std::fs::copy(common::fixture("stdio_server.py"), &script).unwrap();
    let work = tempfile::tempdir().unwrap();
    let mut config = common::stdio(
        &peers.python.display().to_string(),
        &[script.to_str().unwrap()],
    );
    config.sandbox = Some(talaria_profile::McpSandbox::Bwrap);
    config.cwd = Some(work.path().display().to_string());
    let server = McpServer::new(common::spec("tmp-script", config));
    run(async {
        let offer = server.list_tools().await.unwrap();
        assert!(!offer.tools.is_empty());
        server.shutdown().await;
    });
}
