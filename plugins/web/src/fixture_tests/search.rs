//! `web_search`: requests per backend, recorded answers, the rendered list.

use serde_json::Value;
use talaria_plugin_sdk::{HostError, ToolError};

use super::{Scripted, answer, fixture_text};
use crate::ddg::{self, target_url};
use crate::search::{self, Hit};
use crate::settings::{Backend, Settings};
use crate::web_search;

fn settings(backend: Backend) -> Settings {
    Settings {
        backend,
        duckduckgo_url: "http://127.0.0.1:9001/html/".into(),
        searxng_url: Some("http://127.0.0.1:9002".into()),
        brave_url: "http://127.0.0.1:9003".into(),
        tavily_url: "http://127.0.0.1:9004".into(),
        firecrawl_url: "http://127.0.0.1:9005".into(),
        exa_url: "http://127.0.0.1:9006".into(),
        ..Settings::default()
    }
}

fn ddg_hits(status: u16, fixture: &str) -> Result<ddg::Page, ToolError> {
    ddg::parse(status, &fixture_text(fixture))
}

fn body_json(call: &crate::net::HttpCall) -> Value {
    serde_json::from_slice(call.body.as_deref().unwrap()).unwrap()
}

#[test]
fn duckduckgo_results_are_read_with_ads_skipped_and_links_decoded() {
    let ddg::Page::Results(hits) = ddg_hits(200, "ddg-results.html").unwrap() else {
        panic!("not results");
    };
    assert_eq!(hits.len(), 4, "{hits:#?}");
    assert!(
        hits.iter().all(|h| !h.title.contains("Learn Rust Online")),
        "the ad was kept"
    );
    assert!(hits.iter().all(|h| !h.url.contains("duckduckgo.com")));
    assert_eq!(
        hits[0],
        Hit {
            title: "Rust - The WebAssembly Component Model".into(),
            url: "https://component-model.bytecodealliance.org/language-support/rust.html".into(),
            snippet: "Rust has first-class support for the component model via the cargo \
                      component tool & the wasm32-wasip2 target."
                .into(),
        }
    );
    // The target's own query survives the decoding of `uddg`.
    assert_eq!(
        hits[1].url,
        "https://doc.rust-lang.org/rustc/platform-support/wasm32-wasip2.html?highlight=wasi&x=1"
    );
    assert_eq!(
        hits[2].url,
        "https://github.com/bytecodealliance/wit-bindgen"
    );
    assert!(
        hits[2]
            .snippet
            .starts_with("A language binding generator for WebAssembly")
    );
    assert_eq!(hits[3].title, "Introduction - Wasmtime");
    assert_eq!(hits[3].snippet, "");
}

#[test]
fn uddg_redirects_decode_to_the_target() {
    assert_eq!(
        target_url("//duckduckgo.com/l/?uddg=https%3A%2F%2Fexample.org%2Fa%20b%3Fq%3D1&rut=abc")
            .as_deref(),
        Some("https://example.org/a%20b?q=1")
    );
    assert_eq!(
        target_url("https://example.org/direct").as_deref(),
        Some("https://example.org/direct")
    );
    assert_eq!(
        target_url("https://duckduckgo.com/y.js?ad_domain=x.com"),
        None
    );
    assert_eq!(target_url("//duckduckgo.com/l/?rut=abc"), None);
    assert_eq!(
        target_url("//duckduckgo.com/l/?uddg=javascript%3Aalert(1)"),
        None
    );
}

#[test]
fn duckduckgo_bot_checks_are_never_no_results() {
    // Served with 202 (and sometimes 200, 403): the markup decides.
    for status in [202, 200, 403] {
        assert_eq!(
            ddg_hits(status, "ddg-botcheck.html").unwrap(),
            ddg::Page::BotCheck
        );
    }
    // A bare 202 is the bot check even when its page is not recognised.
    assert_eq!(
        ddg::parse(202, "<html></html>").unwrap(),
        ddg::Page::BotCheck
    );
    let err =
        search::parse(Backend::DuckDuckGo, 202, &fixture_text("ddg-botcheck.html")).unwrap_err();
    assert!(err.message().contains("bot check"), "{err}");
    assert!(err.message().contains("not \"no results\""), "{err}");
}

#[test]
fn only_a_real_empty_page_is_no_results() {
    assert_eq!(
        ddg_hits(200, "ddg-no-results.html").unwrap(),
        ddg::Page::Results(Vec::new())
    );
    let err = ddg::parse(200, "<html><body><p>Something else</p></body></html>").unwrap_err();
    assert!(err.message().contains("not \"no results\""), "{err}");
    let err = ddg::parse(500, "<html></html>").unwrap_err();
    assert!(err.message().contains("HTTP 500"), "{err}");
}

#[test]
fn the_list_is_numbered_with_title_url_and_snippet() {
    let hits = vec![
        Hit {
            title: "One".into(),
            url: "https://one.test/".into(),
            snippet: "First.".into(),
        },
        Hit {
            title: String::new(),
            url: "https://two.test/".into(),
            snippet: String::new(),
        },
        Hit {
            title: "Three".into(),
            url: "https://three.test/".into(),
            snippet: "Third.".into(),
        },
    ];
    let text = search::render("q", Backend::Brave, &hits, 2);
    assert!(
        text.contains("1. **One**\n   https://one.test/\n   First.\n"),
        "{text}"
    );
    assert!(
        text.contains("2. **https://two.test/**\n   https://two.test/\n"),
        "{text}"
    );
    assert!(!text.contains("Three"), "limit ignored: {text}");
    let none = search::render("zzz", Backend::DuckDuckGo, &[], 5);
    assert!(none.starts_with("No results for \"zzz\""), "{none}");
}

#[test]
fn duckduckgo_is_asked_with_a_form_post() {
    let settings = settings(Backend::DuckDuckGo);
    let transport = Scripted::new().on(
        "http://127.0.0.1:9001/html/",
        answer(
            200,
            "text/html; charset=UTF-8",
            fixture_text("ddg-results.html"),
        ),
    );
    let text = web_search(&transport, &settings, " rust wasm component ", Some(2)).unwrap();
    let call = transport.only_call();
    assert_eq!(call.method, "POST");
    assert_eq!(call.body.as_deref(), Some(&b"q=rust+wasm+component&b="[..]));
    assert!(
        text.contains("1. **Rust - The WebAssembly Component Model**"),
        "{text}"
    );
    assert!(
        text.contains("2. **wasm32-wasip2 - The rustc book**"),
        "{text}"
    );
    assert!(!text.contains("3."), "{text}");
}

#[test]
fn arguments_are_checked() {
    let settings = settings(Backend::DuckDuckGo);
    let transport = Scripted::new();
    assert!(matches!(
        web_search(&transport, &settings, "  ", None),
        Err(ToolError::InvalidArguments(_))
    ));
    assert!(matches!(
        web_search(&transport, &settings, "x", Some(0)),
        Err(ToolError::InvalidArguments(_))
    ));
    // Over 20 is clamped to 20.
    let brave = settings_with(Backend::Brave);
    let call = search::request(&brave, "x", 20).unwrap();
    assert!(call.url.ends_with("count=20"), "{}", call.url);
}

fn settings_with(backend: Backend) -> Settings {
    settings(backend)
}

#[test]
fn a_denied_request_is_a_denial() {
    let settings = settings(Backend::DuckDuckGo);
    let transport = Scripted::new().fail(
        "http://127.0.0.1:9001/html/",
        HostError::Denied("not granted".into()),
    );
    assert_eq!(
        web_search(&transport, &settings, "x", None),
        Err(ToolError::Denied("not granted".into()))
    );
}

#[test]
fn searxng_asks_for_json_and_explains_a_403() {
    let call = search::request(&settings(Backend::Searxng), "rust & wasm", 5).unwrap();
    assert_eq!(call.method, "GET");
    assert_eq!(
        call.url,
        "http://127.0.0.1:9002/search?q=rust+%26+wasm&format=json"
    );
    let hits = search::parse(Backend::Searxng, 200, &fixture_text("searxng.json")).unwrap();
    assert_eq!(hits.len(), 2);
    assert_eq!(hits[1].title, "wasm32-wasip2 - The rustc book");
    assert_eq!(
        hits[0].snippet,
        "Rust has first-class support for the component model via the cargo component tool."
    );
    let err = search::parse(Backend::Searxng, 403, "<html>Forbidden</html>").unwrap_err();
    assert!(err.message().contains("json"), "{err}");
    assert!(err.message().contains("settings.yml"), "{err}");
    let unset = Settings {
        searxng_url: None,
        ..settings(Backend::Searxng)
    };
    let err = search::request(&unset, "x", 5).unwrap_err();
    assert!(
        err.message().contains("web.searxng_url is not set"),
        "{err}"
    );
}

#[test]
fn brave_sends_its_key_as_a_secret_placeholder() {
    let call = search::request(&settings(Backend::Brave), "rust wasm", 3).unwrap();
    assert_eq!(
        call.url,
        "http://127.0.0.1:9003/res/v1/web/search?q=rust+wasm&count=3"
    );
    assert_eq!(
        call.header_value("X-Subscription-Token"),
        Some("{{secret:BRAVE_API_KEY}}")
    );
    let hits = search::parse(Backend::Brave, 200, &fixture_text("brave.json")).unwrap();
    assert_eq!(hits.len(), 2);
    assert_eq!(
        hits[0].snippet,
        "Rust has first-class support for the component model via the cargo component tool."
    );
    assert!(
        hits[1]
            .snippet
            .contains("experimental target & an extension"),
        "{:?}",
        hits[1]
    );
    // No `web` section: Brave found nothing.
    assert_eq!(
        search::parse(
            Backend::Brave,
            200,
            r#"{"type":"search","query":{"original":"x"}}"#
        )
        .unwrap(),
        Vec::new()
    );
    let err =
        search::parse(Backend::Brave, 401, r#"{"error":{"detail":"bad token"}}"#).unwrap_err();
    assert!(err.message().contains("BRAVE_API_KEY"), "{err}");
    assert!(err.message().contains("bad token"), "{err}");
}

#[test]
fn tavily_firecrawl_and_exa_post_json_with_their_keys() {
    let tavily = search::request(&settings(Backend::Tavily), "q", 4).unwrap();
    assert_eq!(
        (tavily.method, tavily.url.as_str()),
        ("POST", "http://127.0.0.1:9004/search")
    );
    assert_eq!(
        tavily.header_value("authorization"),
        Some("Bearer {{secret:TAVILY_API_KEY}}")
    );
    assert_eq!(
        body_json(&tavily),
        serde_json::json!({"query": "q", "max_results": 4})
    );

    let firecrawl = search::request(&settings(Backend::Firecrawl), "q", 4).unwrap();
    assert_eq!(firecrawl.url, "http://127.0.0.1:9005/v1/search");
    assert_eq!(
        firecrawl.header_value("authorization"),
        Some("Bearer {{secret:FIRECRAWL_API_KEY}}")
    );
    assert_eq!(
        body_json(&firecrawl),
        serde_json::json!({"query": "q", "limit": 4})
    );

    let exa = search::request(&settings(Backend::Exa), "q", 4).unwrap();
    assert_eq!(exa.url, "http://127.0.0.1:9006/search");
    assert_eq!(
        exa.header_value("x-api-key"),
        Some("{{secret:EXA_API_KEY}}")
    );
    assert_eq!(body_json(&exa)["numResults"], 4);
    assert!(exa.header_value("authorization").is_none());
}

#[test]
fn tavily_firecrawl_and_exa_answers_are_read() {
    for (backend, file) in [
        (Backend::Tavily, "tavily.json"),
        (Backend::Firecrawl, "firecrawl.json"),
        (Backend::Exa, "exa.json"),
    ] {
        let hits = search::parse(backend, 200, &fixture_text(file)).unwrap();
        assert_eq!(hits.len(), 2, "{backend:?}");
        assert_eq!(
            hits[0].url,
            "https://component-model.bytecodealliance.org/language-support/rust.html"
        );
        assert_eq!(hits[1].title, "wasm32-wasip2 - The rustc book");
        assert!(
            hits[0]
                .snippet
                .contains("first-class support for the component model"),
            "{backend:?}: {:?}",
            hits[0]
        );
    }
    // Firecrawl v2 nests web results under `data.web`.
    let v2 = r#"{"success":true,"data":{"web":[{"url":"https://a.test/","title":"A","description":"d"}]}}"#;
    let hits = search::parse(Backend::Firecrawl, 200, v2).unwrap();
    assert_eq!(hits[0].snippet, "d");
    let err = search::parse(Backend::Exa, 200, r#"{"nothing":true}"#).unwrap_err();
    assert!(err.message().contains("no result list"), "{err}");
    let err = search::parse(Backend::Tavily, 429, "{}").unwrap_err();
    assert!(err.message().contains("rate-limited"), "{err}");
}
