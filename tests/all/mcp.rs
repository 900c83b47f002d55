//! `talaria mcp list|test` against the real reference server (server-everything over stdio,
//! installed by scripts/install-mcp-peers).

use std::path::{Path, PathBuf};

use crate::common::*;

/// server-everything's entry point, or `None` (with the reason printed) when the peers are
/// not installed and `TALARIA_REQUIRE_PEERS` is unset.
fn everything() -> Option<PathBuf> {
    let entry = Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "target/peers/mcp/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
    );
    if entry.is_file() {
        return Some(entry);
    }
    let reason = format!(
        "server-everything is not installed at {} (run scripts/install-mcp-peers)",
        entry.display()
    );
    assert!(
        std::env::var_os("TALARIA_REQUIRE_PEERS").is_none(),
        "{reason}; TALARIA_REQUIRE_PEERS is set"
    );
    eprintln!("skipped: {reason}");
    None
}

#[test]
fn mcp_test_connects_lists_and_caches_and_list_shows_the_cache() {
    let Some(entry) = everything() else {
        return;
    };
    let home = Home::new();
    home.write_config(&format!(
        "mcp_servers:\n  everything:\n    command: node\n    args: [\"{}\", stdio]\n  \
         remote:\n    url: http://127.0.0.1:9/mcp\n    enabled: false\n",
        entry.display()
    ));
    let listed = run(home.talaria(&["mcp", "list"]));
    assert_code(&listed, 0);
    let out = stdout(&listed);
    assert!(
        out.lines().any(|l| l.starts_with("everything")
            && l.contains("enabled")
            && l.contains("stdio: node")
            && l.ends_with("not cached yet (talaria mcp test)")),
        "{out}"
    );
    assert!(
        out.lines().any(|l| l.starts_with("remote")
            && l.contains("disabled")
            && l.contains("http://127.0.0.1:9/mcp")),
        "{out}"
    );

    let tested = run(home.talaria(&["mcp", "test", "everything"]));
    assert_code(&tested, 0);
    let out = stdout(&tested);
    assert!(out.contains("(protocol 2025-11-25)"), "{out}");
    assert!(out.contains("13 tools listed in"), "{out}");
    assert!(out.lines().any(|l| l.trim() == "echo"), "{out}");

    let listed = stdout(&run(home.talaria(&["mcp", "list"])));
    assert!(
        listed
            .lines()
            .any(|l| l.starts_with("everything") && l.ends_with("13 tools cached")),
        "{listed}"
    );
}

#[test]
fn mcp_test_names_what_is_wrong() {
    let home = Home::new();
    home.write_config(
        "mcp_servers:\n  broken:\n    command: /nonexistent/mcp-server\n    connect_timeout: 5\n",
    );
    let unknown = run(home.talaria(&["mcp", "test", "nope"]));
    assert_code(&unknown, 2);
    assert!(
        stderr(&unknown).contains("no MCP server named 'nope' (configured: broken)"),
        "{}",
        stderr(&unknown)
    );
    let broken = run(home.talaria(&["mcp", "test", "broken"]));
    assert_code(&broken, 1);
    let err = stderr(&broken);
    assert!(err.contains("MCP server broken"), "{err}");
}
