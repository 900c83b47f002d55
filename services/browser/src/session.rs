//! One session's browser: started on the first browser call, one tab,
//! refs from the last snapshot, the console's messages, and the wait for a
//! page to load after an action. Dropping it (the session ended) or
//! [`Browser::close`] (an interrupted call) kills every browser process.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde::Serialize;
use serde_json::{Value, json};
use tokio::sync::broadcast;
use tokio::task::JoinHandle;

use crate::cdp::{Cdp, Event};
use crate::launch::Chromium;
use crate::snapshot::{self, Ref};
use crate::{BrowserError, EgressProxy, Refusal};

/// Console messages kept per session (the oldest are dropped first).
const CONSOLE_LIMIT: usize = 500;

/// How long after a click or key press a navigation may start and still be
/// waited for.
const SETTLE: Duration = Duration::from_millis(400);

/// How a session's browser is started.
#[derive(Debug, Clone)]
pub struct BrowserSettings {
    /// The Chromium program.
    pub executable: PathBuf,
    /// Where the per-session profile directories are made (under the
    /// profile home); each is removed with its browser.
    pub profiles: PathBuf,
    /// `security.allow_private_urls`: pages may be on private addresses.
    pub allow_private: bool,
    /// How long a navigation may take to load.
    pub navigation_timeout: Duration,
    /// Directories the browser's processes must not see (the profile homes;
    /// its own profile directory stays reachable).
    pub hidden: Vec<PathBuf>,
}

/// A console message or an uncaught page error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConsoleEntry {
    /// `log`, `warning`, `error`, `info`, `debug`, or `exception`.
    pub level: String,
    /// The message text.
    pub text: String,
}

/// What a page is after a navigation or an action.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PageInfo {
    /// The address it ended on.
    pub url: String,
    /// Its title.
    pub title: String,
    /// Requests to private addresses the proxy refused on the way (images,
    /// scripts, frames of the page).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub blocked: Vec<String>,
}

/// What the page's shared state holds, updated from its events.
#[derive(Default)]
struct PageState {
    /// Bumped by each main-frame navigation: refs of an older one are stale.
    generation: u64,
    console: VecDeque<ConsoleEntry>,
}

/// A running browser and its tab.
pub(crate) struct Live {
    pub cdp: Cdp,
    pub session: String,
    pub proxy: EgressProxy,
    state: Arc<Mutex<PageState>>,
    refs: HashMap<String, Ref>,
    refs_generation: u64,
    watcher: JoinHandle<()>,
    // Last: killed after the connection and the watcher are gone.
    pub chromium: Chromium,
}

impl Drop for Live {
    fn drop(&mut self) {
        self.watcher.abort();
    }
}

/// One session's browser.
pub struct Browser {
    settings: BrowserSettings,
    live: tokio::sync::Mutex<Option<Live>>,
    /// When a call last ended (or the browser was made): how long it has been idle.
    last_used: Mutex<std::time::Instant>,
    /// The runtime the browser's connection and proxy run on, when it must
    /// outlive the runtime of the calls (a kept browser); else the caller's.
    runtime: Option<tokio::runtime::Handle>,
}

impl std::fmt::Debug for Browser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Browser")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl Browser {
    /// A browser that starts on first use.
    pub fn new(settings: BrowserSettings) -> Self {
        Self {
            settings,
            live: tokio::sync::Mutex::new(None),
            last_used: Mutex::new(std::time::Instant::now()),
            runtime: None,
        }
    }

    /// A browser whose connection and proxy run on `runtime`, so it keeps
    /// working after the runtime of the call that started it has ended.
    pub fn on_runtime(settings: BrowserSettings, runtime: tokio::runtime::Handle) -> Self {
        Self {
            runtime: Some(runtime),
            ..Self::new(settings)
        }
    }

    /// How long since its last call ended.
    pub fn idle_for(&self) -> Duration {
        self.last_used
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .elapsed()
    }

    /// Kills the browser, if one runs; the next call starts a new one.
    pub async fn close(&self) {
        self.live.lock().await.take();
    }

    /// Kills the browser without waiting for a call in flight to finish
    /// (an interrupted call: its future is being dropped).
    pub fn close_now(&self) {
        if let Ok(mut live) = self.live.try_lock() {
            live.take();
        }
    }

    /// The browser's main process id, if one runs.
    pub async fn process_id(&self) -> Option<u32> {
        self.live
            .lock()
            .await
            .as_ref()
            .and_then(|l| l.chromium.pid())
    }

    /// Runs `action` on the running browser (starting one first). A browser
    /// that died is forgotten, so the next call starts afresh.
    pub(crate) async fn with_live<T>(
        &self,
        action: impl AsyncFnOnce(&mut Live, &BrowserSettings) -> Result<T, BrowserError>,
    ) -> Result<T, BrowserError> {
        let mut guard = self.live.lock().await;
        let live = match guard.as_mut() {
            Some(live) => live,
            None => {
                let started = match &self.runtime {
                    Some(runtime) => runtime
                        .spawn(start(self.settings.clone()))
                        .await
                        .map_err(|e| BrowserError::Start(format!("the start was lost: {e}")))?,
                    None => start(self.settings.clone()).await,
                };
                guard.insert(started?)
            }
        };
        let outcome = action(live, &self.settings).await;
        if matches!(outcome, Err(BrowserError::Closed)) {
            guard.take();
        }
        *self
            .last_used
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = std::time::Instant::now();
        outcome
    }

    /// Opens `url` (http or https only) and waits for it to load.
    pub async fn navigate(&self, url: &str) -> Result<PageInfo, BrowserError> {
        let lower = url.trim().to_ascii_lowercase();
        if !(lower.starts_with("http://") || lower.starts_with("https://")) {
            return Err(BrowserError::Refused(format!(
                "only http and https pages can be opened, not '{}'",
                url.chars().take(80).collect::<String>()
            )));
        }
        let url = url.trim().to_owned();
        self.with_live(async move |live, settings| {
            live.proxy.take_refusals();
            let mut events = live.cdp.events();
            let answer = live.call("Page.navigate", json!({ "url": url })).await?;
            if let Some(error) = answer["errorText"].as_str().filter(|e| !e.is_empty()) {
                let refusals = live.proxy.take_refusals();
                return Err(match refusals.into_iter().next() {
                    Some(refusal) => BrowserError::Refused(refusal.reason),
                    None => BrowserError::Navigation(format!("{url} did not open: {error}")),
                });
            }
            if answer["loaderId"].is_string() {
                live.wait_for(&mut events, settings.navigation_timeout, |e| {
                    e.method == "Page.loadEventFired"
                })
                .await;
            }
            live.page_info_or_refusal().await
        })
        .await
    }

    /// Goes one entry back in the tab's history.
    pub async fn back(&self) -> Result<PageInfo, BrowserError> {
        self.with_live(async |live, settings| {
            let history = live.call("Page.getNavigationHistory", json!({})).await?;
            let current = history["currentIndex"].as_u64().unwrap_or(0) as usize;
            let previous = current
                .checked_sub(1)
                .and_then(|i| history["entries"].get(i))
                .and_then(|entry| entry["id"].as_i64())
                .ok_or_else(|| {
                    BrowserError::Input("there is no previous page in this tab's history".into())
                })?;
            live.proxy.take_refusals();
            let mut events = live.cdp.events();
            live.call(
                "Page.navigateToHistoryEntry",
                json!({ "entryId": previous }),
            )
            .await?;
            live.wait_for(&mut events, settings.navigation_timeout, |e| {
                e.method == "Page.loadEventFired" || e.method == "Page.frameStoppedLoading"
            })
            .await;
            live.page_info_or_refusal().await
        })
        .await
    }

    /// The page as text with refs; `full` keeps whole texts and structure.
    pub async fn snapshot(&self, full: bool) -> Result<String, BrowserError> {
        self.with_live(async |live, _| {
            live.call("Accessibility.enable", json!({})).await?;
            let tree = live.call("Accessibility.getFullAXTree", json!({})).await?;
            let nodes = tree["nodes"]
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or_default();
            let rendered = snapshot::render(nodes, full);
            live.refs = rendered.refs;
            live.refs_generation = live.generation();
            let page = live.page_info().await?;
            let body = if rendered.text.is_empty() {
                "(the page shows nothing readable)\n".to_owned()
            } else {
                rendered.text
            };
            Ok(format!(
                "URL: {}\nTitle: {}\nRefs: {} (valid until the next navigation)\n\n{body}",
                page.url,
                page.title,
                live.refs.len()
            ))
        })
        .await
    }

    /// The console's messages and page errors since the last clear.
    pub async fn console(&self, clear: bool) -> Result<Vec<ConsoleEntry>, BrowserError> {
        self.with_live(async |live, _| {
            let mut state = live.state();
            let entries = state.console.iter().cloned().collect();
            if clear {
                state.console.clear();
            }
            Ok(entries)
        })
        .await
    }
}

impl Live {
    /// A command to the tab.
    pub async fn call(&self, method: &str, params: Value) -> Result<Value, BrowserError> {
        self.cdp.call(method, params, Some(&self.session)).await
    }

    fn state(&self) -> std::sync::MutexGuard<'_, PageState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn generation(&self) -> u64 {
        self.state().generation
    }

    /// The refs of the last snapshot.
    pub fn refs(&self) -> &HashMap<String, Ref> {
        &self.refs
    }

    /// Whether the last snapshot's refs still name this page's elements.
    pub fn refs_current(&self) -> bool {
        !self.refs.is_empty() && self.refs_generation == self.generation()
    }

    /// The DOM node behind `reference` (`e3`, `@e3` or `ref=e3`) from the
    /// last snapshot, if the page has not navigated since.
    pub fn resolve(&self, reference: &str) -> Result<Ref, BrowserError> {
        let key = reference.trim();
        let key = key.strip_prefix("ref=").unwrap_or(key);
        let key = key.strip_prefix('@').unwrap_or(key);
        if self.refs.is_empty() {
            return Err(BrowserError::Input(
                "no snapshot has been taken of this page: call browser_snapshot for refs".into(),
            ));
        }
        let Some(found) = self.refs.get(key) else {
            return Err(BrowserError::Input(format!(
                "unknown ref '{reference}': the last snapshot has e1 to e{}",
                self.refs.len()
            )));
        };
        if self.refs_generation != self.generation() {
            return Err(BrowserError::Input(format!(
                "ref '{reference}' is stale: the page navigated since the snapshot that made \
                 it; call browser_snapshot for fresh refs"
            )));
        }
        Ok(found.clone())
    }

    /// Waits until an event of the tab matches, or `timeout`; whether one did.
    pub async fn wait_for(
        &self,
        events: &mut broadcast::Receiver<Event>,
        timeout: Duration,
        matches: impl Fn(&Event) -> bool,
    ) -> bool {
        let wait = async {
            loop {
                match events.recv().await {
                    Ok(event) if event.session.as_deref() == Some(&self.session) => {
                        if matches(&event) {
                            return true;
                        }
                    }
                    Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                    Err(broadcast::error::RecvError::Closed) => return false,
                }
            }
        };
        tokio::time::timeout(timeout, wait).await.unwrap_or(false)
    }

    /// After a click or a key press: if a navigation starts, waits for its page.
    pub async fn settle(&self, events: &mut broadcast::Receiver<Event>, timeout: Duration) {
        let started = self
            .wait_for(events, SETTLE, |e| {
                e.method == "Page.frameRequestedNavigation"
                    || e.method == "Page.frameStartedLoading"
            })
            .await;
        if started {
            self.wait_for(events, timeout, |e| e.method == "Page.loadEventFired")
                .await;
        }
    }

    /// Runs `expression` in the page and returns its JSON value.
    pub async fn evaluate(&self, expression: &str) -> Result<Value, BrowserError> {
        let answer = self
            .call(
                "Runtime.evaluate",
                json!({"expression": expression, "returnByValue": true, "awaitPromise": true}),
            )
            .await?;
        if let Some(details) = answer.get("exceptionDetails") {
            let text = details["exception"]["description"]
                .as_str()
                .or(details["text"].as_str())
                .unwrap_or("the script failed");
            return Err(BrowserError::Command(text.to_owned()));
        }
        Ok(answer["result"]["value"].clone())
    }

    /// Where the tab is.
    pub async fn page_info(&self) -> Result<PageInfo, BrowserError> {
        let value = self
            .evaluate("JSON.stringify([location.href, document.title])")
            .await?;
        let pair: (String, String) = value
            .as_str()
            .and_then(|text| serde_json::from_str(text).ok())
            .unwrap_or_default();
        Ok(PageInfo {
            url: pair.0,
            title: pair.1,
            blocked: Vec::new(),
        })
    }

    /// Where the tab is after a navigation; a page the proxy refused (the
    /// address itself, or a redirect to it) is an error and the tab is
    /// emptied, so its refusal text is not read as the page.
    pub async fn page_info_or_refusal(&self) -> Result<PageInfo, BrowserError> {
        let mut page = self.page_info().await?;
        let refusals = self.proxy.take_refusals();
        let host = host_of(&page.url);
        let refused_here = |r: &&Refusal| {
            host.as_deref() == Some(r.host.trim_start_matches('[').trim_end_matches(']'))
        };
        if let Some(refusal) = refusals.iter().find(refused_here) {
            let _ = self
                .call("Page.navigate", json!({"url": "about:blank"}))
                .await;
            return Err(BrowserError::Refused(refusal.reason.clone()));
        }
        page.blocked = refusals
            .into_iter()
            .map(|Refusal { reason, .. }| reason)
            .collect();
        page.blocked.dedup();
        Ok(page)
    }
}

/// The host of an http(s) URL, without brackets or port.
fn host_of(url: &str) -> Option<String> {
    let uri: http::Uri = url.parse().ok()?;
    if !matches!(uri.scheme_str(), Some("http" | "https")) {
        return None;
    }
    let host = uri.host()?;
    Some(
        host.trim_start_matches('[')
            .trim_end_matches(']')
            .to_ascii_lowercase(),
    )
}

/// Starts a browser for a session: its proxy, the process, the connection
/// and its first tab, with downloads refused and page events followed.
async fn start(settings: BrowserSettings) -> Result<Live, BrowserError> {
    let proxy = EgressProxy::start(settings.allow_private)
        .await
        .map_err(|e| BrowserError::Start(format!("cannot start the browser's proxy: {e}")))?;
    let (mut chromium, cdp) = Chromium::start(
        &settings.executable,
        &settings.profiles,
        proxy.port(),
        &settings.hidden,
    )?;
    chromium.started(&cdp).await?;
    cdp.call(
        "Browser.setDownloadBehavior",
        json!({"behavior": "deny", "eventsEnabled": false}),
        None,
    )
    .await?;
    let targets = cdp.call("Target.getTargets", json!({}), None).await?;
    let existing = targets["targetInfos"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|t| t["type"] == "page")
        .and_then(|t| t["targetId"].as_str().map(str::to_owned));
    let target = match existing {
        Some(target) => target,
        None => cdp
            .call("Target.createTarget", json!({"url": "about:blank"}), None)
            .await?["targetId"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| BrowserError::Protocol("the browser opened no tab".into()))?,
    };
    let attached = cdp
        .call(
            "Target.attachToTarget",
            json!({"targetId": target, "flatten": true}),
            None,
        )
        .await?;
    let session = attached["sessionId"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| BrowserError::Protocol("attaching to the tab gave no session".into()))?;
    let state = Arc::new(Mutex::new(PageState::default()));
    let watcher = tokio::spawn(follow(cdp.events(), session.clone(), state.clone()));
    for domain in ["Page.enable", "Runtime.enable", "Log.enable"] {
        cdp.call(domain, json!({}), Some(&session)).await?;
    }
    Ok(Live {
        cdp,
        session,
        proxy,
        state,
        refs: HashMap::new(),
        refs_generation: 0,
        watcher,
        chromium,
    })
}

/// Keeps the tab's state from its events: navigations of the main frame
/// (which make refs stale) and console messages.
async fn follow(
    mut events: broadcast::Receiver<Event>,
    session: String,
    state: Arc<Mutex<PageState>>,
) {
    loop {
        let event = match events.recv().await {
            Ok(event) => event,
            Err(broadcast::error::RecvError::Lagged(_)) => continue,
            Err(broadcast::error::RecvError::Closed) => return,
        };
        if event.session.as_deref() != Some(&session) {
            continue;
        }
        let mut state = state.lock().unwrap_or_else(PoisonError::into_inner);
        match event.method.as_str() {
            "Page.frameNavigated" if event.params["frame"].get("parentId").is_none() => {
                state.generation += 1;
            }
            _ => {
                if let Some(entry) = console_entry(&event) {
                    if state.console.len() == CONSOLE_LIMIT {
                        state.console.pop_front();
                    }
                    state.console.push_back(entry);
                }
            }
        }
    }
}

/// A console message, page error or browser log entry from an event.
fn console_entry(event: &Event) -> Option<ConsoleEntry> {
    let params = &event.params;
    match event.method.as_str() {
        "Runtime.consoleAPICalled" => {
            let text = params["args"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|arg| match &arg["value"] {
                    Value::String(s) => s.clone(),
                    Value::Null => arg["description"].as_str().unwrap_or("").to_owned(),
                    other => other.to_string(),
                })
                .collect::<Vec<_>>()
                .join(" ");
            let level = match params["type"].as_str().unwrap_or("log") {
                "warning" => "warning",
                "error" | "assert" => "error",
                "info" => "info",
                "debug" => "debug",
                _ => "log",
            };
            Some(ConsoleEntry {
                level: level.to_owned(),
                text,
            })
        }
        "Runtime.exceptionThrown" => {
            let details = &params["exceptionDetails"];
            let text = details["exception"]["description"]
                .as_str()
                .or(details["text"].as_str())
                .unwrap_or("uncaught exception");
            Some(ConsoleEntry {
                level: "exception".to_owned(),
                text: text.to_owned(),
            })
        }
        "Log.entryAdded" => Some(ConsoleEntry {
            level: params["entry"]["level"]
                .as_str()
                .unwrap_or("info")
                .to_owned(),
            text: params["entry"]["text"].as_str().unwrap_or("").to_owned(),
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(method: &str, params: Value) -> Event {
        Event {
            method: method.to_owned(),
            params,
            session: Some("s".to_owned()),
        }
    }

    #[test]
    fn console_messages_join_their_arguments() {
        let entry = console_entry(&event(
            "Runtime.consoleAPICalled",
            json!({"type": "warning", "args": [{"type": "string", "value": "low"}, {"type": "number", "value": 3}]}),
        ));
        assert_eq!(
            entry,
            Some(ConsoleEntry {
                level: "warning".into(),
                text: "low 3".into()
            })
        );
        let thrown = console_entry(&event(
            "Runtime.exceptionThrown",
            json!({"exceptionDetails": {"text": "Uncaught", "exception": {"description": "TypeError: x is undefined"}}}),
        ));
        assert_eq!(
            thrown.map(|e| (e.level, e.text)),
            Some(("exception".into(), "TypeError: x is undefined".into()))
        );
        assert_eq!(
            console_entry(&event("Page.loadEventFired", json!({}))),
            None
        );
    }

    #[test]
    fn hosts_are_read_without_brackets_or_ports() {
        assert_eq!(host_of("http://[::1]:8080/x").as_deref(), Some("::1"));
        assert_eq!(
            host_of("https://Example.org/a").as_deref(),
            Some("example.org")
        );
        assert_eq!(host_of("about:blank"), None);
    }
}
