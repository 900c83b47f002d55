//! Servers that misbehave: never answer, print garbage or a 10 MB line, exit at once, cannot
//! start, or keep failing (parking). Plain `sh` programs: no peers needed.

use std::time::{Duration, Instant};

use talaria_mcp::{McpError, McpServer, ReconnectPolicy};
use talaria_profile::McpServerConfig;

use crate::common::{self, process_gone, run};

fn sh(script: &str, connect_timeout: f64) -> McpServerConfig {
    let mut config = common::stdio("sh", &["-c", script]);
    config.connect_timeout = Some(connect_timeout);
    config
}

#[test]
fn a_server_that_never_answers_times_out_naming_itself_and_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let script = format!(
        "echo $$ > {}; echo 'booting, please wait' >&2; exec sleep 600",
        pid_file.display()
    );
    let server = McpServer::new(common::spec("silent", sh(&script, 1.0)));
    run(async {
        let started = Instant::now();
        let error = server.connect().await.unwrap_err();
        let elapsed = started.elapsed();
        assert!(
            matches!(error, McpError::ConnectTimeout { .. }),
            "{error:?}"
        );
        assert!(
            elapsed >= Duration::from_secs(1) && elapsed < Duration::from_secs(3),
            "{elapsed:?}"
        );
        let text = error.to_string();
        assert!(
            text.starts_with("MCP server silent: no answer to initialize within 1 s"),
            "{text}"
        );
        assert!(text.contains("booting, please wait"), "{text}");
        let pid: u32 = std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let gone = common::eventually(Duration::from_secs(3), || process_gone(pid)).await;
        assert!(gone, "the silent server {pid} was left running");
    });
}

#[test]
fn garbage_and_a_ten_megabyte_line_end_in_the_connect_timeout() {
    let garbage = "while :; do echo '{garbage'; echo 'not json at all'; sleep 0.05; done";
    let huge = "head -c 10485760 /dev/zero | tr '\\0' x; echo; exec sleep 600";
    run(async {
        for (name, script) in [("garbage", garbage), ("huge", huge)] {
            let server = McpServer::new(common::spec(name, sh(script, 1.5)));
            let error = server.connect().await.unwrap_err();
            assert!(
                matches!(error, McpError::ConnectTimeout { .. }),
                "{name}: {error:?}"
            );
            assert!(
                error
                    .to_string()
                    .starts_with(&format!("MCP server {name}: "))
            );
        }
    });
}

#[test]
fn a_server_that_exits_at_once_reports_its_stderr_without_credentials() {
    let mut config = sh(
        "echo \"fatal: cannot log in with $GITHUB_TOKEN or sk-proj-abcdefghijklmnopqrstuvwxyz0123\" >&2; exit 3",
        30.0,
    );
    config
        .env
        .insert("GITHUB_TOKEN".into(), "configured-secret-42".into());
    let server = McpServer::new(common::spec("quitter", config));
    run(async {
        let started = Instant::now();
        let error = server.connect().await.unwrap_err();
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        assert!(matches!(error, McpError::Initialize { .. }), "{error:?}");
        let text = error.to_string();
        assert!(
            text.starts_with("MCP server quitter: initialize failed"),
            "{text}"
        );
        assert!(text.contains("fatal: cannot log in with"), "{text}");
        assert!(!text.contains("configured-secret-42"), "{text}");
        assert!(!text.contains("abcdefghijklmnopqrstuvwxyz"), "{text}");
    });
}

#[test]
fn a_missing_program_is_a_clear_error() {
    run(async {
        let missing = McpServer::new(common::spec(
            "ghost",
            common::stdio("/nonexistent/mcp-server", &[]),
        ));
        let error = missing.connect().await.unwrap_err();
        assert!(matches!(error, McpError::Spawn { .. }), "{error:?}");
        assert!(
            error
                .to_string()
                .starts_with("MCP server ghost: cannot start \"/nonexistent/mcp-server\"")
        );
    });
}

#[test]
fn repeated_failures_back_off_then_park_the_server() {
    let policy = ReconnectPolicy {
        backoff_base: Duration::from_millis(400),
        backoff_max: Duration::from_secs(1),
        park_after: 2,
        park_for: Duration::from_millis(800),
    };
    let spec = common::spec("flaky", sh("exit 3", 5.0)).with_policy(policy);
    let server = McpServer::new(spec);
    run(async {
        let first = server.connect().await.unwrap_err();
        assert!(matches!(first, McpError::Initialize { .. }), "{first:?}");
        let waiting = server.connect().await.unwrap_err();
        assert!(matches!(waiting, McpError::Backoff { .. }), "{waiting:?}");
        assert!(
            waiting
                .to_string()
                .starts_with("MCP server flaky is unavailable")
        );
        tokio::time::sleep(Duration::from_millis(450)).await;
        let second = server.connect().await.unwrap_err();
        assert!(matches!(second, McpError::Initialize { .. }), "{second:?}");
        let started = Instant::now();
        let parked = server.connect().await.unwrap_err();
        assert!(
            started.elapsed() < Duration::from_millis(200),
            "a parked server answers at once"
        );
        let text = parked.to_string();
        assert!(
            text.starts_with("MCP server flaky is parked after 2 failed connection attempts"),
            "{text}"
        );
        tokio::time::sleep(Duration::from_millis(850)).await;
        let probe = server.connect().await.unwrap_err();
        assert!(
            matches!(probe, McpError::Initialize { .. }),
            "re-probed: {probe:?}"
        );
        assert_eq!(server.connections(), 0);
    });
}
