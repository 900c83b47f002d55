//! `web_extract`: redirects, refusals, content types, charsets, HTML to
//! Markdown, bot checks, vendors' extract APIs.

use scraper::Html;
use talaria_plugin_sdk::{HostError, ToolError};
use url::Url;

use super::{Scripted, answer, fixture, fixture_text, redirect};
use crate::botcheck::{self, BotCheck};
use crate::extract::{self, Kind, Outcome, next_hop};
use crate::net::Fetched;
use crate::page;
use crate::remote;
use crate::settings::{ExtractBackend, Settings};
use crate::summary::HostModel;
use crate::{WebExtract, WebSearch, web_extract};

const ARTICLE_URL: &str = "https://news.example.com/2024/03/heap.html";

fn run(transport: &Scripted, urls: &[&str], char_limit: Option<u64>) -> String {
    let urls: Vec<String> = urls.iter().map(|u| (*u).to_owned()).collect();
    web_extract(
        transport,
        &HostModel,
        &Settings::default(),
        &urls,
        char_limit,
    )
    .unwrap()
}

fn markdown(file: &str, url: &str) -> page::Converted {
    page::to_markdown(&fixture_text(file), &Url::parse(url).unwrap())
}

#[test]
fn articles_keep_their_content_and_lose_the_chrome() {
    let page = markdown("article.html", ARTICLE_URL);
    let md = &page.markdown;
    assert_eq!(
        page.title.as_deref(),
        Some("Why the heap grows: a tour of allocators | The Systems Gazette")
    );
    assert!(
        md.contains("# Why the heap grows: a tour of allocators"),
        "{md}"
    );
    assert!(
        md.contains("Every long-running service eventually asks"),
        "{md}"
    );
    assert!(md.contains("## Fragmentation"), "{md}");
    assert!(
        md.contains("- Size classes keep similar objects together."),
        "{md}"
    );
    assert!(
        md.contains("Compare the allocator's own statistics"),
        "{md}"
    );
    for noise in [
        "NAV_MARKER",
        "FOOTER_MARKER",
        "TRACKING_SECRET_MARKER",
        "STYLE_MARKER",
        "ASIDE_MARKER",
        "IFRAME_MARKER",
        "NOSCRIPT_MARKER",
        "COOKIE_MARKER",
        "Search the Gazette",
        "Share on social",
        "gtag",
    ] {
        assert!(!md.contains(noise), "{noise} kept:\n{md}");
    }
}

#[test]
fn links_and_images_become_absolute() {
    let md = markdown("article.html", ARTICLE_URL).markdown;
    assert!(
        md.contains("[allocator](https://news.example.com/glossary/allocator)"),
        "{md}"
    );
    assert!(
        md.contains("[our piece on arenas](https://news.example.com/2024/2023/arenas.html)"),
        "{md}"
    );
    assert!(
        md.contains("[the classic survey](https://example.org/papers/fragmentation.pdf)"),
        "{md}"
    );
    assert!(
        md.contains(
            "![A heap with holes between live blocks](https://news.example.com/images/heap-diagram.png)"
        ),
        "{md}"
    );
}

#[test]
fn tables_and_code_blocks_survive_and_base_href_counts() {
    let page = markdown("table-and-code.html", "https://mirror.example.net/x/y.html");
    let md = &page.markdown;
    assert_eq!(page.title.as_deref(), Some("Benchmarks and configuration"));
    assert!(md.contains("| Runtime"), "{md}");
    assert!(md.contains("| wasmtime"), "{md}");
    assert!(md.contains("```"), "{md}");
    assert!(md.contains("  backend: searxng\n"), "{md}");
    assert!(md.contains("println!(\"hello & goodbye\");"), "{md}");
    assert!(md.contains("`config.yaml`"), "{md}");
    assert!(
        md.contains("[the method](https://docs.example.com/guide/methods.html)"),
        "{md}"
    );
    // The sidebar's navigation is not content.
    assert!(!md.contains("Introduction"), "{md}");
}

#[test]
fn a_real_manual_page_converts() {
    let url = "https://www.example.org/libffi/Closure-Example.html";
    let page = markdown("libffi-closure-example.html", url);
    assert_eq!(
        page.title.as_deref(),
        Some("Closure Example (libffi: the portable foreign function interface library)")
    );
    let md = &page.markdown;
    assert!(md.contains("### 2.6 Closure Example"), "{md}");
    assert!(
        md.contains("```\n#include <stdio.h>\n#include <ffi.h>\n"),
        "{md}"
    );
    assert!(
        md.contains("closure = ffi_closure_alloc(sizeof(ffi_closure), &bound_puts);"),
        "{md}"
    );
    assert!(
        md.contains("[Thread Safety](https://www.example.org/libffi/Thread-Safety.html)"),
        "{md}"
    );
    assert!(!md.contains("a.copiable-anchor"), "style kept: {md}");
    assert!(
        !md.contains("Permission is hereby granted"),
        "comment kept: {md}"
    );
}

#[test]
fn pages_are_decoded_in_their_declared_charset() {
    let transport = Scripted::new().on(
        "http://shop.test/cafe",
        answer(200, "text/html", fixture("latin1.html")),
    );
    let text = run(&transport, &["http://shop.test/cafe"], None);
    assert!(text.starts_with("# Café crème à la française\n"), "{text}");
    assert!(text.contains("coûte 3,50 ¤ à Paris « toujours »"), "{text}");
}

#[test]
fn redirects_are_followed_hop_by_hop() {
    let transport = Scripted::new()
        .on("http://a.test/start", redirect(301, "/moved/here?x=1"))
        .on("http://a.test/moved/here?x=1", redirect(302, "../final"))
        .on("http://a.test/final", redirect(307, "https://b.test/page"))
        .on(
            "https://b.test/page",
            answer(200, "text/html", "<title>B</title><p>Arrived.</p>"),
        );
    let text = run(&transport, &["http://a.test/start"], None);
    assert_eq!(
        transport.urls(),
        [
            "http://a.test/start",
            "http://a.test/moved/here?x=1",
            "http://a.test/final",
            "https://b.test/page"
        ]
    );
    assert!(
        text.starts_with("# B\nURL: https://b.test/page\n"),
        "{text}"
    );
    assert!(
        text.contains("Redirected from: http://a.test/start"),
        "{text}"
    );
    assert!(text.contains("Arrived."), "{text}");
}

#[test]
fn relative_locations_resolve_against_the_current_url() {
    let here = Url::parse("https://x.test/a/b/c.html?q=1").unwrap();
    assert_eq!(
        next_hop(&here, "d.html").unwrap().as_str(),
        "https://x.test/a/b/d.html"
    );
    assert_eq!(
        next_hop(&here, "/root").unwrap().as_str(),
        "https://x.test/root"
    );
    assert_eq!(
        next_hop(&here, "../up").unwrap().as_str(),
        "https://x.test/a/up"
    );
    assert_eq!(
        next_hop(&here, "//other.test/p").unwrap().as_str(),
        "https://other.test/p"
    );
    assert_eq!(
        next_hop(&here, "?page=2").unwrap().as_str(),
        "https://x.test/a/b/c.html?page=2"
    );
    assert!(next_hop(&here, "file:///etc/passwd").is_err());
    assert!(next_hop(&here, "ftp://x.test/f").is_err());
}

#[test]
fn redirect_loops_and_redirects_off_the_web_stop() {
    let transport = Scripted::new()
        .on("http://loop.test/", redirect(302, "http://loop.test/"))
        .on("http://away.test/", redirect(301, "file:///etc/passwd"));
    let text = run(
        &transport,
        &["http://loop.test/", "http://away.test/"],
        None,
    );
    assert_eq!(
        transport
            .urls()
            .iter()
            .filter(|u| u.contains("loop"))
            .count(),
        extract::MAX_REDIRECTS + 1
    );
    assert!(text.contains("Error: more than 10 redirects"), "{text}");
    assert!(
        text.contains(
            "# http://away.test/\nRefused: the page redirected elsewhere: only http and https"
        ),
        "{text}"
    );
}

#[test]
fn other_schemes_are_refused_and_the_rest_still_read() {
    let transport =
        Scripted::new().on("https://ok.test/", answer(200, "text/plain", "plain words"));
    let text = run(
        &transport,
        &[
            "file:///etc/passwd",
            "https://ok.test/",
            "javascript:alert(1)",
            "not a url",
        ],
        None,
    );
    assert_eq!(transport.urls(), ["https://ok.test/"]);
    let sections: Vec<&str> = text.split("\n\n---\n\n").collect();
    assert_eq!(sections.len(), 4, "{text}");
    assert!(
        sections[0].contains("Refused: only http and https URLs"),
        "{text}"
    );
    assert!(sections[0].contains("file: URL"), "{text}");
    assert!(sections[1].ends_with("plain words"), "{text}");
    assert!(
        sections[2].contains("Refused: only http and https"),
        "{text}"
    );
    assert!(
        sections[3].contains("Refused: \"not a url\" is not a valid URL"),
        "{text}"
    );
}

#[test]
fn a_host_denial_is_reported_with_its_reason() {
    let transport = Scripted::new()
        .fail(
            "http://10.0.0.5/admin",
            HostError::Denied("10.0.0.5 is a private address".into()),
        )
        .on("http://pub.test/", redirect(302, "http://127.0.0.1/secret"))
        .fail(
            "http://127.0.0.1/secret",
            HostError::Denied("127.0.0.1 is a loopback address".into()),
        );
    let text = run(
        &transport,
        &["http://10.0.0.5/admin", "http://pub.test/"],
        None,
    );
    assert!(
        text.contains("Refused: the host refused to fetch http://10.0.0.5/admin: 10.0.0.5 is a private address"),
        "{text}"
    );
    assert!(text.contains("127.0.0.1 is a loopback address"), "{text}");
}

#[test]
fn char_limit_cuts_each_page_and_says_so() {
    let long = "word ".repeat(100);
    let transport = Scripted::new()
        .on("https://a.test/", answer(200, "text/plain", long.clone()))
        .on("https://b.test/", answer(200, "text/plain", "short"));
    let text = run(
        &transport,
        &["https://a.test/", "https://b.test/"],
        Some(20),
    );
    assert!(
        text.contains(&format!(
            "{}\n\n[Cut at char_limit = 20 characters of 500",
            &long[..20]
        )),
        "{text}"
    );
    assert!(text.ends_with("short"), "{text}");
    assert!(!text.contains(&long[..40]), "{text}");
}

#[test]
fn text_and_json_are_kept_binary_and_pdf_refused() {
    let json = r#"{"a": [1, 2]}"#;
    let transport = Scripted::new()
        .on(
            "https://t.test/data.json",
            answer(200, "application/json", json),
        )
        .on(
            "https://t.test/readme.md",
            answer(200, "text/markdown; charset=utf-8", "# Title\n\n*x*"),
        )
        .on(
            "https://t.test/doc.pdf",
            answer(200, "application/pdf", "%PDF-1.7 …"),
        )
        .on(
            "https://t.test/img.png",
            answer(200, "image/png", vec![0x89, b'P', b'N', b'G', 0]),
        );
    let text = run(
        &transport,
        &[
            "https://t.test/data.json",
            "https://t.test/readme.md",
            "https://t.test/doc.pdf",
            "https://t.test/img.png",
        ],
        None,
    );
    assert!(
        text.contains(&format!("URL: https://t.test/data.json\n\n{json}")),
        "{text}"
    );
    assert!(text.contains("\n\n# Title\n\n*x*"), "{text}");
    assert!(
        text.contains("Refused: https://t.test/doc.pdf is a PDF document"),
        "{text}"
    );
    assert!(
        text.contains("Refused: https://t.test/img.png is binary content (image/png)"),
        "{text}"
    );
    assert_eq!(extract::classify(None, b"%PDF-1.4"), Kind::Pdf);
    assert_eq!(
        extract::classify(Some(""), b"<!DOCTYPE html><p>x"),
        Kind::Html
    );
    assert_eq!(extract::classify(None, b"just text"), Kind::Text);
    assert!(matches!(
        extract::classify(Some("application/octet-stream"), b"\0\x01"),
        Kind::Binary(_)
    ));
    assert_eq!(
        extract::classify(Some("application/ld+json"), b"{}"),
        Kind::Text
    );
}

#[test]
fn bot_checks_are_reported_not_read_as_content() {
    let mut challenged = answer(
        403,
        "text/html; charset=UTF-8",
        fixture("cloudflare-challenge.html"),
    );
    challenged
        .headers
        .push(("cf-mitigated".into(), "challenge".into()));
    let transport = Scripted::new()
        .on("https://cf.test/article", challenged)
        .on(
            "https://cf.test/quiet",
            answer(200, "text/html", fixture("cloudflare-challenge.html")),
        )
        .on(
            "https://html.duckduckgo.com/html/?q=x",
            answer(202, "text/html", fixture("ddg-botcheck.html")),
        );
    let text = run(
        &transport,
        &[
            "https://cf.test/article",
            "https://cf.test/quiet",
            "https://html.duckduckgo.com/html/?q=x",
        ],
        None,
    );
    assert_eq!(text.matches("Bot check: ").count(), 3, "{text}");
    assert!(text.contains("Cloudflare bot check"), "{text}");
    assert!(
        text.contains("DuckDuckGo answered with its bot check"),
        "{text}"
    );
    assert!(!text.contains("Enable JavaScript and cookies"), "{text}");
    assert!(!text.contains("Select all squares"), "{text}");
}

#[test]
fn captchas_count_only_in_place_of_a_page() {
    let wall = Html::parse_document(
        "<title>Verify</title><form action=\"/verify\"><div class=\"g-recaptcha\" \
         data-sitekey=\"k\"></div><button>Continue</button></form>",
    );
    assert_eq!(botcheck::detect(&wall, None), Some(BotCheck::Captcha));
    let article = format!(
        "<title>Post</title><article><p>{}</p></article><form action=\"/comment\">\
         <div class=\"g-recaptcha\"></div></form>",
        "A long paragraph of real content. ".repeat(80)
    );
    assert_eq!(
        botcheck::detect(&Html::parse_document(&article), None),
        None
    );
    let ordinary = Html::parse_document(&fixture_text("article.html"));
    assert_eq!(botcheck::detect(&ordinary, None), None);
    let results = Html::parse_document(&fixture_text("ddg-results.html"));
    assert_eq!(botcheck::detect(&results, None), None);
}

#[test]
fn errors_and_large_pages_are_said() {
    let big = format!(
        "<title>Big</title><p>{}</p>",
        "x".repeat(extract::MAX_PAGE_BYTES)
    );
    let transport = Scripted::new()
        .on(
            "https://e.test/missing",
            answer(404, "text/html", "<title>Not here</title><p>Sorry</p>"),
        )
        .on("https://e.test/big", answer(200, "text/html", big))
        .fail(
            "https://e.test/down",
            HostError::Failed("connection refused".into()),
        );
    let text = run(
        &transport,
        &[
            "https://e.test/missing",
            "https://e.test/big",
            "https://e.test/down",
        ],
        Some(50),
    );
    assert!(
        text.contains("Error: https://e.test/missing answered HTTP 404 (Not Found)"),
        "{text}"
    );
    assert!(
        text.contains("Note: The page is larger than 10 MB; only its first 10 MB were read."),
        "{text}"
    );
    assert!(
        text.contains("Error: fetching https://e.test/down: connection refused"),
        "{text}"
    );
}

#[test]
fn arguments_are_checked() {
    let transport = Scripted::new();
    let settings = Settings::default();
    let six: Vec<String> = (0..6).map(|i| format!("https://x.test/{i}")).collect();
    assert!(matches!(
        web_extract(&transport, &HostModel, &settings, &six, None),
        Err(ToolError::InvalidArguments(_))
    ));
    assert!(matches!(
        web_extract(&transport, &HostModel, &settings, &[], None),
        Err(ToolError::InvalidArguments(_))
    ));
    assert!(matches!(
        web_extract(&transport, &HostModel, &settings, &six[..1], Some(0)),
        Err(ToolError::InvalidArguments(_))
    ));
    assert!(transport.urls().is_empty());
}

#[test]
fn the_tools_have_hermes_names_and_arguments() {
    talaria_plugin_sdk::validate::<(WebSearch, WebExtract)>().unwrap();
    let specs = <(WebSearch, WebExtract) as talaria_plugin_sdk::ToolSet>::specs();
    let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["web_search", "web_extract"]);
    let search: serde_json::Value = serde_json::from_str(&specs[0].parameters).unwrap();
    assert_eq!(search["required"], serde_json::json!(["query"]));
    assert_eq!(search["properties"]["limit"]["type"], "integer");
    let extract: serde_json::Value = serde_json::from_str(&specs[1].parameters).unwrap();
    assert_eq!(extract["required"], serde_json::json!(["urls"]));
    assert_eq!(extract["properties"]["urls"]["type"], "array");
    assert_eq!(extract["properties"]["char_limit"]["type"], "integer");
    assert!(specs.iter().all(|s| s.flags.read_only));
}

fn remote_settings(backend: ExtractBackend) -> Settings {
    Settings {
        extract_backend: backend,
        firecrawl_url: "http://127.0.0.1:9005".into(),
        tavily_url: "http://127.0.0.1:9004".into(),
        exa_url: "http://127.0.0.1:9006".into(),
        ..Settings::default()
    }
}

#[test]
fn firecrawl_scrapes_each_url() {
    let settings = remote_settings(ExtractBackend::Firecrawl);
    let ok = r##"{"success":true,"data":{"markdown":"# Hello\n\nWorld","metadata":{"title":"Hello page","sourceURL":"https://h.test/","statusCode":200}}}"##;
    let transport = Scripted::new().on(
        "http://127.0.0.1:9005/v1/scrape",
        Fetched {
            status: 200,
            headers: Vec::new(),
            body: ok.into(),
            truncated: false,
        },
    );
    let urls = vec!["https://h.test/".to_owned(), "ftp://no.test/".to_owned()];
    let text = web_extract(&transport, &HostModel, &settings, &urls, None).unwrap();
    let call = transport.only_call();
    assert_eq!(
        call.header_value("authorization"),
        Some("Bearer {{secret:FIRECRAWL_API_KEY}}")
    );
    let body: serde_json::Value = serde_json::from_slice(call.body.as_deref().unwrap()).unwrap();
    assert_eq!(body["url"], "https://h.test/");
    assert_eq!(body["formats"], serde_json::json!(["markdown"]));
    assert!(
        text.starts_with("# Hello page\nURL: https://h.test/\n\n# Hello\n\nWorld"),
        "{text}"
    );
    assert!(text.contains("# ftp://no.test/\nRefused"), "{text}");
    let failed = remote::parse_firecrawl(
        "https://x.test/",
        200,
        r#"{"success":false,"error":"Blocked"}"#,
    );
    assert_eq!(
        failed.outcome,
        Outcome::Failed("Firecrawl could not scrape it: Blocked".into())
    );
}

#[test]
fn tavily_and_exa_extract_in_one_request() {
    let urls = vec!["https://a.test/".to_owned(), "https://b.test/".to_owned()];
    let tavily = remote::requests(
        ExtractBackend::Tavily,
        &remote_settings(ExtractBackend::Tavily),
        &urls,
    );
    assert_eq!(tavily.len(), 1);
    assert_eq!(tavily[0].url, "http://127.0.0.1:9004/extract");
    assert_eq!(
        tavily[0].header_value("authorization"),
        Some("Bearer {{secret:TAVILY_API_KEY}}")
    );
    let answer = r#"{"results":[{"url":"https://a.test","raw_content":"Alpha text"}],
        "failed_results":[{"url":"https://b.test/","error":"timeout"}],"response_time":0.5}"#;
    let items = remote::parse_tavily(&urls, 200, answer);
    assert!(matches!(&items[0].outcome, Outcome::Page { content, .. } if content == "Alpha text"));
    assert_eq!(
        items[1].outcome,
        Outcome::Failed("Tavily could not extract it: timeout".into())
    );

    let exa = remote::requests(
        ExtractBackend::Exa,
        &remote_settings(ExtractBackend::Exa),
        &urls,
    );
    assert_eq!(exa[0].url, "http://127.0.0.1:9006/contents");
    assert_eq!(
        exa[0].header_value("x-api-key"),
        Some("{{secret:EXA_API_KEY}}")
    );
    let answer = r#"{"results":[{"id":"https://a.test/","url":"https://a.test/","title":"A","text":"Alpha"}],
        "statuses":[{"id":"https://a.test/","status":"success"},
                    {"id":"https://b.test/","status":"error","error":{"tag":"CRAWL_NOT_FOUND","httpStatusCode":404}}]}"#;
    let items = remote::parse_exa(&urls, 200, answer);
    assert!(matches!(&items[0].outcome, Outcome::Page { title: Some(t), .. } if t == "A"));
    assert_eq!(
        items[1].outcome,
        Outcome::Failed("Exa could not read it: CRAWL_NOT_FOUND (HTTP 404)".into())
    );
    let refused = remote::parse_exa(&urls, 401, r#"{"error":"Invalid API key"}"#);
    assert!(matches!(&refused[1].outcome, Outcome::Failed(m) if m.contains("EXA_API_KEY")));
}

#[test]
fn deeply_nested_pages_do_not_overflow_a_small_stack() {
    // A component's stack is about 1 MB; this debug build uses more per
    // frame than the release component does.
    let convert = |levels: usize| {
        let html = format!(
            "<title>t</title><main>{}deep text{}</main>",
            "<div>".repeat(levels),
            "</div>".repeat(levels)
        );
        std::thread::Builder::new()
            .stack_size(1 << 20)
            .spawn(move || page::to_markdown(&html, &Url::parse("https://x.test/").unwrap()))
            .unwrap()
            .join()
            .unwrap()
            .markdown
    };
    assert_eq!(convert(200), "deep text");
    assert_eq!(convert(5000), "deep text");
}
