//! The MCP conformance suite's client scenarios against Talaria's client
//! (`examples/conformance_client.rs`): every scenario passes except those listed, with their
//! reasons, in `tests/conformance/client-baseline.yml` (elicitation and OAuth, out of scope).

use std::path::Path;
use std::process::Command;

use crate::common;

#[test]
fn the_client_scenarios_pass_but_the_expected_failures() {
    let Some((node, suite)) = common::conformance() else {
        return;
    };
    // Examples sit beside the test binaries' `deps` directory, built by `cargo test`.
    let exe = std::env::current_exe().unwrap();
    let probe = exe
        .parent()
        .and_then(Path::parent)
        .unwrap()
        .join("examples/conformance_client");
    assert!(probe.is_file(), "{} is not built", probe.display());
    let baseline =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/client-baseline.yml");
    let results = tempfile::tempdir().unwrap();
    let output = Command::new(&node)
        .arg(&suite)
        .args(["client", "--suite", "all", "--command"])
        .arg(&probe)
        .arg("--expected-failures")
        .arg(&baseline)
        .arg("-o")
        .arg(results.path())
        .current_dir(results.path())
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&output.stdout);
    eprintln!("{report}");
    assert!(
        output.status.success(),
        "unexpected failures or a stale baseline:\n{report}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    for scenario in ["initialize", "tools_call", "sse-retry"] {
        assert!(
            report
                .lines()
                .any(|l| l.contains(&format!("✓ {scenario}: ")) && l.contains(" 0 failed")),
            "{scenario} did not pass:\n{report}"
        );
    }
}
