//! Lazy tool schemas (`tools.schemas: lazy`): the first request carries a
//! one-line index and `tool_schema`; the model fetches a schema, then calls
//! the tool, and the tool list stays byte-identical across requests.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::{Home, assert_code, run, tool_results};
use talaria_testkit::{ScriptedServer, Step};

fn first_request_bytes(home: &Home) -> (usize, String) {
    let server = ScriptedServer::spawn(vec![Step::text("ok")]).unwrap();
    let work = home.workdir();
    let output = run(home.query_in(work.path(), &server, "hi", &[]));
    assert_code(&output, 0);
    let request = &server.requests()[0];
    (request.raw_body.len(), request.tools_raw())
}

#[test]
fn lazy_schemas_shrink_the_first_request_and_load_on_demand() {
    let full = Home::new();
    let lazy = Home::new();
    lazy.write_config("retry:\n  base_delay_ms: 20\ntools:\n  schemas: lazy\n");
    let (full_bytes, full_tools) = first_request_bytes(&full);
    let (lazy_bytes, lazy_tools) = first_request_bytes(&lazy);
    assert!(lazy_tools.contains("\"tool_schema\"") && !full_tools.contains("\"tool_schema\""));
    assert!(
        lazy_tools.len() * 2 < full_tools.len(),
        "lazy tool list {} B, full {} B",
        lazy_tools.len(),
        full_tools.len()
    );
    assert!(lazy_bytes < full_bytes);
    eprintln!("first request: full {full_bytes} B, lazy {lazy_bytes} B");

    let server = ScriptedServer::spawn(vec![
        Step::tool_call("tool_schema", r#"{"names": ["read_file"]}"#),
        Step::tool_call("read_file", r#"{"offset": 1}"#),
        Step::tool_call("read_file", r#"{"path": "notes.txt"}"#),
        Step::text("done"),
    ])
    .unwrap();
    let work = lazy.workdir();
    std::fs::write(work.path().join("notes.txt"), "lazy-content\n").unwrap();
    let output = run(lazy.query_in(work.path(), &server, "read notes.txt", &[]));
    assert_code(&output, 0);
    let schema = &tool_results(&server, 1)[0];
    assert!(
        schema.contains("\"read_file\"") && schema.contains("\"required\""),
        "{schema}"
    );
    let missing = &tool_results(&server, 2)[1];
    assert!(
        missing.contains("path") && missing.contains("tool_schema"),
        "{missing}"
    );
    assert!(tool_results(&server, 3)[2].contains("lazy-content"));
    let requests = server.requests();
    assert!(
        requests
            .iter()
            .all(|r| r.tools_raw() == requests[0].tools_raw()),
        "the tool list never changes within the session"
    );
}
