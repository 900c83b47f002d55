//! The engine against a real Chromium and pages served on loopback. Chromium
//! takes minutes to install, so these run with `./scripts/test --heavy`
//! (which installs it); the light tests of the tools use a fake DevTools
//! endpoint instead (tests/all/browser.rs).

use std::collections::BTreeMap;
use std::time::Duration;

use talaria_testkit::{Page, WebSite};

use crate::{Browser, BrowserError, BrowserSettings, find_executable};

/// A 1×1 PNG.
const PIXEL: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
    0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0xf8, 0xcf, 0xc0, 0xf0,
    0x1f, 0x00, 0x05, 0x00, 0x01, 0xff, 0x89, 0x99, 0x3d, 0x1d, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45,
    0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];

const HOME: &str = r#"<!doctype html><html><head><title>Shop</title></head><body>
<h1>Welcome to the shop</h1>
<p id="status">Nothing happened yet</p>
<button onclick="document.getElementById('status').textContent = 'Button was clicked'; console.log('clicked', 1)">Change it</button>
<form action="/ordered" method="get"><label>Name <input name="name"></label><button type="submit">Order</button></form>
<a href="/about">About us</a>
<img src="/pixel.png" alt="a pixel">
<script>console.warn('page ready')</script>
</body></html>"#;

fn site() -> WebSite {
    let pages = BTreeMap::from([
        ("/".to_owned(), Page::html(HOME)),
        (
            "/about".to_owned(),
            Page::html("<title>About</title><h1>About the shop</h1><p>Since 1999.</p>"),
        ),
        (
            "/ordered".to_owned(),
            Page::html("<title>Thanks</title><p>Your order is in.</p>"),
        ),
        ("/pixel.png".to_owned(), Page::new("image/png", PIXEL)),
        (
            "/long".to_owned(),
            Page::html("<title>Long</title><div style=\"height: 5000px\">top</div><p>bottom</p>"),
        ),
    ]);
    WebSite::spawn(pages).unwrap_or_else(|e| panic!("site: {e}"))
}

fn browser(allow_private: bool, profiles: &std::path::Path) -> Browser {
    let executable = find_executable(None)
        .unwrap_or_else(|| panic!("no Chromium on PATH: ./scripts/test --heavy installs it"));
    Browser::new(BrowserSettings {
        executable,
        profiles: profiles.to_path_buf(),
        allow_private,
        navigation_timeout: Duration::from_secs(20),
        hidden: Vec::new(),
    })
}

/// The ref of the first snapshot line containing `text`.
fn ref_of(snapshot: &str, text: &str) -> String {
    let line = snapshot
        .lines()
        .find(|line| line.contains(text) && line.contains("[ref="))
        .unwrap_or_else(|| panic!("no ref for {text} in\n{snapshot}"));
    let start = line.find("[ref=").map_or(0, |i| i + 5);
    line[start..].trim_end_matches(']').to_owned()
}

fn ok<T>(outcome: Result<T, BrowserError>) -> T {
    outcome.unwrap_or_else(|e| panic!("{e}"))
}

fn alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "heavy: needs Chromium (./scripts/test --heavy)"]
async fn a_session_reads_clicks_types_and_goes_back() {
    let site = site();
    let profiles = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let browser = browser(true, profiles.path());

    let page = ok(browser.navigate(&format!("{}/", site.url())).await);
    assert_eq!(page.title, "Shop");
    let snapshot = ok(browser.snapshot(false).await);
    assert!(snapshot.contains("Welcome to the shop"), "{snapshot}");
    assert!(snapshot.contains("Nothing happened yet"), "{snapshot}");

    let button = ref_of(&snapshot, "Change it");
    let (clicked, outcome) = ok(browser.click(&button).await);
    assert_eq!(clicked.name, "Change it");
    assert!(!outcome.navigated);
    let after = ok(browser.snapshot(false).await);
    assert!(after.contains("Button was clicked"), "{after}");

    let field = ref_of(&after, "textbox");
    ok(browser.type_text(&field, "Ada").await);
    let typed = ok(browser.snapshot(false).await);
    assert!(typed.contains(": Ada"), "{typed}");
    let outcome = ok(browser.press("Enter").await);
    assert!(outcome.navigated, "{outcome:?}");
    assert!(
        outcome.page.url.ends_with("/ordered?name=Ada"),
        "{outcome:?}"
    );
    assert!(
        site.visits()
            .iter()
            .any(|v| v.target == "/ordered?name=Ada")
    );

    // The refs of the first page are stale now.
    let stale = browser.click(&button).await.err().map(|e| e.to_string());
    assert!(
        stale.as_deref().is_some_and(|e| e.contains("stale")),
        "{stale:?}"
    );

    let back = ok(browser.back().await);
    assert!(back.url.ends_with('/'), "{back:?}");
    let home = ok(browser.snapshot(false).await);
    let link = ref_of(&home, "About us");
    let outcome = ok(browser.click(&link).await).1;
    assert!(
        outcome.navigated && outcome.page.title == "About",
        "{outcome:?}"
    );
    ok(browser.back().await);

    let images = ok(browser.images().await);
    assert_eq!(images.len(), 1, "{images:?}");
    assert!(images[0].src.ends_with("/pixel.png") && images[0].alt == "a pixel");
    ok(browser.snapshot(false).await);
    let png = ok(browser.screenshot(true).await);
    assert!(png.starts_with(&[0x89, b'P', b'N', b'G']), "not a PNG");

    let console = ok(browser.console(true).await);
    assert!(
        console
            .iter()
            .any(|e| e.level == "warning" && e.text == "page ready"),
        "{console:?}"
    );
    assert!(console.iter().any(|e| e.text == "clicked 1"), "{console:?}");
    assert!(ok(browser.console(false).await).is_empty());

    ok(browser.navigate(&format!("{}/long", site.url())).await);
    let down = ok(browser.scroll("down").await);
    assert!(down["scroll_y"].as_u64().is_some_and(|y| y > 0), "{down}");
    assert_eq!(down["at_top"], false);
    let up = ok(browser.scroll("up").await);
    assert_eq!(up["scroll_y"], 0, "{up}");
    let sideways = browser.scroll("left").await.err().map(|e| e.to_string());
    assert!(sideways.is_some_and(|e| e.contains("'up' or 'down'")));

    let pid = browser
        .process_id()
        .await
        .unwrap_or_else(|| panic!("no pid"));
    assert!(alive(pid));
    drop(browser);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!alive(pid), "the browser outlived its session");
    let left = std::fs::read_dir(profiles.path())
        .map(Iterator::count)
        .unwrap_or(0);
    assert_eq!(left, 0, "the session's profile was not removed");
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "heavy: needs Chromium (./scripts/test --heavy)"]
async fn private_addresses_are_refused_without_the_setting() {
    let site = site();
    let profiles = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let browser = browser(false, profiles.path());
    for url in [
        format!("{}/", site.url()),
        format!("http://localhost:{}/", site.port()),
        format!("http://2130706433:{}/", site.port()),
    ] {
        let refused = browser.navigate(&url).await.err().map(|e| e.to_string());
        assert!(
            refused.as_deref().is_some_and(|e| e.contains("loopback")),
            "{url}: {refused:?}"
        );
    }
    assert!(site.visits().is_empty(), "{:?}", site.visits());
    let page = ok(browser.snapshot(false).await);
    assert!(
        !page.contains("refused"),
        "the refusal was left as the page: {page}"
    );
}

#[tokio::test]
async fn only_web_pages_can_be_opened() {
    let profiles = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let browser = Browser::new(BrowserSettings {
        executable: "/nonexistent/chromium".into(),
        profiles: profiles.path().to_path_buf(),
        allow_private: false,
        navigation_timeout: Duration::from_secs(1),
        hidden: Vec::new(),
    });
    for url in [
        "file:///etc/passwd",
        "chrome://settings",
        "javascript:alert(1)",
        "data:text/html,x",
    ] {
        let error = browser.navigate(url).await.err().map(|e| e.to_string());
        assert!(
            error
                .as_deref()
                .is_some_and(|e| e.contains("only http and https")),
            "{url}: {error:?}"
        );
    }
    // Refused before any browser was started (this one cannot start).
    assert_eq!(browser.process_id().await, None);
}
