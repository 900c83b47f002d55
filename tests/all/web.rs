//! The web tools through the real binary: the first-party `web` plugin
//! against a local website serving recorded search-engine answers and real
//! HTML documents (plugins/web/tests/fixtures). The backends' URLs point at
//! that site through the `web:` settings, which also grants them; everything
//! else on loopback is a private address the host refuses unless
//! `security.allow_private_urls` is set — including each redirect hop.

use std::collections::BTreeMap;
use std::path::Path;

use crate::common::*;
use serde_json::json;
use talaria_testkit::{Page, Script, ScriptedServer, Step, WebSite};

fn fixture(name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("plugins/web/tests/fixtures")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// One run: the model calls `tool` with `args`, then answers "done".
/// Returns the tool result the model saw and the run's stderr.
fn run_tool(home: &Home, tool: &str, args: serde_json::Value) -> (String, String) {
    build_plugins();
    let server = ScriptedServer::spawn(Script::new([
        Step::tool_call(tool, args.to_string()),
        Step::text("done"),
    ]))
    .unwrap();
    let work = home.workdir();
    let output = run(home.query_in(work.path(), &server, "use the web", &[]));
    assert_code(&output, 0);
    let results = tool_results(&server, 1);
    assert_eq!(results.len(), 1, "{results:?}\n{}", stderr(&output));
    (results[0].clone(), stderr(&output))
}

fn site(pages: &[(&str, Page)]) -> WebSite {
    WebSite::spawn(
        pages
            .iter()
            .map(|(path, page)| ((*path).to_owned(), page.clone()))
            .collect::<BTreeMap<_, _>>(),
    )
    .unwrap()
}

#[test]
fn web_search_reads_duckduckgo_and_reports_its_bot_check() {
    let engine = site(&[
        ("/html/", Page::html(fixture("ddg-results.html"))),
        ("/blocked/", Page::html(fixture("ddg-botcheck.html"))),
    ]);
    let home = Home::new();
    home.write_config(&format!(
        "web:\n  backend: duckduckgo\n  duckduckgo_url: {}/html/\n",
        engine.url()
    ));
    let (result, _) = run_tool(
        &home,
        "web_search",
        json!({ "query": "rust wasm component" }),
    );
    assert_contains(&result, "Rust - The WebAssembly Component Model");
    // The uddg redirect is decoded to the real address; the ad is skipped.
    assert_contains(
        &result,
        "https://component-model.bytecodealliance.org/language-support/rust.html",
    );
    assert!(!result.contains("Learn Rust Online"), "{result}");
    let visit = &engine.visits()[0];
    assert_eq!(visit.path(), "/html/");
    let sent = String::from_utf8_lossy(&visit.body).into_owned();
    assert!(sent.contains("q=rust+wasm+component"), "{visit:?}");

    home.write_config(&format!(
        "web:\n  backend: duckduckgo\n  duckduckgo_url: {}/blocked/\n",
        engine.url()
    ));
    let (result, _) = run_tool(&home, "web_search", json!({ "query": "rust" }));
    assert_contains(&result, "bot check");
    assert_contains(&result, "This is not \"no results\"");
    assert!(
        !result.contains("1. "),
        "nothing parsed as a result: {result}"
    );
}

#[test]
fn web_search_asks_searxng_and_keyed_backends_with_the_key_injected() {
    let engine = site(&[
        (
            "/search",
            Page::json(&serde_json::from_slice(&fixture("searxng.json")).unwrap()),
        ),
        (
            "/res/v1/web/search",
            Page::json(&serde_json::from_slice(&fixture("brave.json")).unwrap()),
        ),
    ]);
    let home = Home::new();
    home.write_config(&format!("web:\n  searxng_url: {}\n", engine.url()));
    let (result, _) = run_tool(
        &home,
        "web_search",
        json!({ "query": "wasi http", "limit": 3 }),
    );
    assert!(result.contains("1. "), "{result}");
    let visit = &engine.visits()[0];
    assert!(visit.target.starts_with("/search?"), "{visit:?}");
    assert!(visit.target.contains("format=json"), "{visit:?}");

    // With a key in .env and no backend named, the keyed backend is chosen;
    // the host writes the key in, the model never sees it.
    std::fs::write(home.path().join(".env"), "BRAVE_API_KEY=brave-key-5150\n").unwrap();
    home.write_config(&format!("web:\n  brave_url: {}\n", engine.url()));
    let (result, stderr) = run_tool(
        &home,
        "web_search",
        json!({ "query": "rust wasm component" }),
    );
    assert_contains(&result, "Rust - The WebAssembly Component Model");
    let visit = engine.visits().pop().unwrap();
    assert_eq!(visit.path(), "/res/v1/web/search");
    assert_eq!(
        visit
            .headers
            .get("x-subscription-token")
            .map(String::as_str),
        Some("brave-key-5150")
    );
    assert!(!result.contains("brave-key-5150") && !stderr.contains("brave-key-5150"));
}

#[test]
fn web_extract_turns_pages_into_markdown_and_refuses_private_addresses() {
    let pages = site(&[
        ("/article", Page::html(fixture("article.html"))),
        ("/secret", Page::html("<p>INTERNAL_ONLY</p>")),
    ]);
    let port = pages.port();
    // An allowed host (the configured search engine is named, so granted)
    // whose redirect points at the loopback page: the second hop is refused.
    let granted = site(&[(
        "/go",
        Page::redirect(&format!("http://127.0.0.1:{port}/secret")),
    )]);
    let home = Home::new();
    home.write_config(&format!("web:\n  searxng_url: {}\n", granted.url()));
    let urls = [
        format!("http://127.0.0.1:{port}/article"),
        format!("http://localhost:{port}/secret"),
        format!("http://[::1]:{port}/secret"),
        format!("http://2130706433:{port}/secret"),
        format!("http://0177.0.0.1:{port}/secret"),
    ];
    let (result, _) = run_tool(&home, "web_extract", json!({ "urls": urls }));
    assert_eq!(
        result.matches("security.allow_private_urls").count(),
        5,
        "{result}"
    );
    let (result, _) = run_tool(
        &home,
        "web_extract",
        json!({ "urls": ["http://169.254.169.254/latest/meta-data/", format!("{}/go", granted.url())] }),
    );
    assert_eq!(
        result.matches("security.allow_private_urls").count(),
        2,
        "{result}"
    );
    assert_eq!(granted.visits().len(), 1, "the first hop went out");
    assert!(
        pages.visits().is_empty(),
        "no refused request arrived: {:?}",
        pages.visits()
    );
    assert!(!result.contains("INTERNAL_ONLY"), "{result}");

    home.write_config("security:\n  allow_private_urls: true\n");
    let (result, _) = run_tool(
        &home,
        "web_extract",
        json!({ "urls": [format!("http://127.0.0.1:{port}/article")], "char_limit": 100000 }),
    );
    assert_contains(&result, "# Why the heap grows: a tour of allocators");
    assert_contains(&result, "- Size classes keep similar objects together.");
    assert!(
        !result.contains("NAV_MARKER") && !result.contains("FOOTER_MARKER"),
        "{result}"
    );
    assert_eq!(pages.visits().len(), 1);
}

#[test]
fn long_pages_are_summarised_by_the_auxiliary_model_when_asked() {
    build_plugins();
    let pages = site(&[("/article", Page::html(fixture("article.html")))]);
    let home = Home::new();
    home.write_config("security:\n  allow_private_urls: true\nweb:\n  summarize_over_chars: 200\n");
    // No auxiliary model is configured: the main model does the side job,
    // between the tool call and the final answer.
    let server = ScriptedServer::spawn(Script::new([
        Step::tool_call(
            "web_extract",
            json!({ "urls": [format!("{}/article", pages.url())] }).to_string(),
        ),
        Step::text("SUMMARY: allocators keep freed pages."),
        Step::text("done"),
    ]))
    .unwrap();
    let work = home.workdir();
    let output = run(home.query_in(work.path(), &server, "read it", &[]));
    assert_code(&output, 0);
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let side = &requests[1];
    assert!(
        side.tools_raw().is_empty(),
        "a side request offers no tools"
    );
    assert_contains(&side.system_prompt_raw(), "You condense a web page");
    let asked: String = side.messages().iter().map(|m| m.text.clone()).collect();
    assert_contains(&asked, "Every long-running service eventually asks");
    let result = tool_results(&server, 2).join("\n");
    assert_contains(&result, "SUMMARY: allocators keep freed pages.");
    assert_contains(&result, "summarised by the auxiliary model");
    assert!(!result.contains("Every long-running service"), "{result}");
}
