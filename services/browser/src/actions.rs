//! What the model does on a page: click and type into elements by ref,
//! scroll, press keys, list images, take screenshots (optionally with the
//! refs drawn on them).

use base64::Engine;
use serde::Serialize;
use serde_json::{Value, json};

use crate::session::{Live, PageInfo};
use crate::snapshot::Ref;
use crate::{Browser, BrowserError, keys};

/// Most images `browser_get_images` lists.
const MAX_IMAGES: usize = 100;

/// Most ref labels drawn on an annotated screenshot.
const MAX_LABELS: usize = 150;

/// What a click or key press led to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ActionOutcome {
    /// The page afterwards.
    #[serde(flatten)]
    pub page: PageInfo,
    /// Whether the main frame navigated (refs of the last snapshot are stale).
    pub navigated: bool,
}

/// An image of the page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct PageImage {
    /// Its address.
    pub src: String,
    /// Its alternative text.
    pub alt: String,
    /// Natural width and height in pixels.
    pub width: u64,
    pub height: u64,
}

impl Browser {
    /// Clicks the element behind `reference` in its middle, as a user would.
    pub async fn click(&self, reference: &str) -> Result<(Ref, ActionOutcome), BrowserError> {
        self.with_live(async |live, settings| {
            let target = live.resolve(reference)?;
            let before = live.generation();
            let mut events = live.cdp.events();
            let node = json!({"backendNodeId": target.backend_node});
            let _ = live.call("DOM.scrollIntoViewIfNeeded", node.clone()).await;
            match centre(live, &node).await {
                Some((x, y)) => {
                    for kind in ["mouseMoved", "mousePressed", "mouseReleased"] {
                        live.call(
                            "Input.dispatchMouseEvent",
                            json!({"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}),
                        )
                        .await?;
                    }
                }
                // No box (hidden, zero-sized): the element's own click().
                None => {
                    call_on(live, reference, &node, "function() { this.click(); }").await?;
                }
            }
            live.settle(&mut events, settings.navigation_timeout).await;
            let outcome = outcome(live, before).await?;
            Ok((target, outcome))
        })
        .await
    }

    /// Replaces the text of the field behind `reference` with `text`.
    pub async fn type_text(&self, reference: &str, text: &str) -> Result<Ref, BrowserError> {
        self.with_live(async |live, _| {
            let target = live.resolve(reference)?;
            let node = json!({"backendNodeId": target.backend_node});
            live.call("DOM.focus", node.clone()).await.map_err(|e| {
                stale_or(reference, e, |e| {
                    BrowserError::Input(format!("{reference} cannot take text: {e}"))
                })
            })?;
            call_on(
                live,
                reference,
                &node,
                "function() { if ('value' in this) { this.value = ''; \
                 this.dispatchEvent(new Event('input', {bubbles: true})); } \
                 else if (this.isContentEditable) { this.textContent = ''; } }",
            )
            .await?;
            live.call("Input.insertText", json!({ "text": text }))
                .await?;
            Ok(target)
        })
        .await
    }

    /// Scrolls the page by most of a screen up or down.
    pub async fn scroll(&self, direction: &str) -> Result<Value, BrowserError> {
        let sign = match direction.trim().to_ascii_lowercase().as_str() {
            "down" => 1,
            "up" => -1,
            other => {
                return Err(BrowserError::Input(format!(
                    "direction must be 'up' or 'down', not '{other}'"
                )));
            }
        };
        self.with_live(async |live, _| {
            let expression = format!(
                "window.scrollBy(0, {sign} * Math.round(window.innerHeight * 0.8)); \
                 JSON.stringify([Math.round(window.scrollY), \
                 document.documentElement.scrollHeight, window.innerHeight])"
            );
            let value = live.evaluate(&expression).await?;
            let (y, height, screen): (u64, u64, u64) = value
                .as_str()
                .and_then(|text| serde_json::from_str(text).ok())
                .unwrap_or_default();
            Ok(json!({
                "scrolled": direction.trim().to_ascii_lowercase(),
                "scroll_y": y,
                "page_height": height,
                "at_bottom": y + screen >= height,
                "at_top": y == 0,
            }))
        })
        .await
    }

    /// Presses a key in the focused element (Enter submits, Tab moves on…).
    pub async fn press(&self, key: &str) -> Result<ActionOutcome, BrowserError> {
        let [down, up] = keys::key_events(key).map_err(BrowserError::Input)?;
        self.with_live(async |live, settings| {
            let before = live.generation();
            let mut events = live.cdp.events();
            live.call("Input.dispatchKeyEvent", down).await?;
            live.call("Input.dispatchKeyEvent", up).await?;
            live.settle(&mut events, settings.navigation_timeout).await;
            outcome(live, before).await
        })
        .await
    }

    /// The page's images (their addresses, alt texts and sizes).
    pub async fn images(&self) -> Result<Vec<PageImage>, BrowserError> {
        self.with_live(async |live, _| {
            let expression = format!(
                "JSON.stringify(Array.from(document.images).map(i => ({{src: i.currentSrc || \
                 i.src, alt: i.alt || '', width: i.naturalWidth, height: i.naturalHeight}})) \
                 .filter(i => i.src && !i.src.startsWith('data:')).slice(0, {MAX_IMAGES}))"
            );
            let value = live.evaluate(&expression).await?;
            Ok(value
                .as_str()
                .and_then(|text| serde_json::from_str(text).ok())
                .unwrap_or_default())
        })
        .await
    }

    /// A PNG of what the tab shows; `annotate` draws each ref of the last
    /// snapshot on its element first.
    pub async fn screenshot(&self, annotate: bool) -> Result<Vec<u8>, BrowserError> {
        self.with_live(async |live, _| {
            let labelled = annotate && live.refs_current();
            if labelled {
                draw_labels(live).await?;
            }
            let shot = live
                .call("Page.captureScreenshot", json!({"format": "png"}))
                .await;
            if labelled {
                let _ = live
                    .evaluate("document.getElementById('__talaria_refs')?.remove(); true")
                    .await;
            }
            let data = shot?["data"].as_str().unwrap_or_default().to_owned();
            base64::engine::general_purpose::STANDARD
                .decode(data)
                .map_err(|e| BrowserError::Protocol(format!("the screenshot is not base64: {e}")))
        })
        .await
    }
}

/// The page after an action, and whether it navigated since `before`.
async fn outcome(live: &Live, before: u64) -> Result<ActionOutcome, BrowserError> {
    let navigated = live.generation() != before;
    let page = if navigated {
        live.page_info_or_refusal().await?
    } else {
        live.page_info().await?
    };
    Ok(ActionOutcome { page, navigated })
}

/// The middle of a node's content box, in the viewport's CSS pixels.
async fn centre(live: &Live, node: &Value) -> Option<(f64, f64)> {
    let model = live.call("DOM.getBoxModel", node.clone()).await.ok()?;
    let quad: Vec<f64> = model["model"]["content"]
        .as_array()?
        .iter()
        .filter_map(Value::as_f64)
        .collect();
    if quad.len() != 8 {
        return None;
    }
    let x = (quad[0] + quad[2] + quad[4] + quad[6]) / 4.0;
    let y = (quad[1] + quad[3] + quad[5] + quad[7]) / 4.0;
    Some((x, y))
}

/// Calls `function` with the node as `this`.
async fn call_on(
    live: &Live,
    reference: &str,
    node: &Value,
    function: &str,
) -> Result<(), BrowserError> {
    let resolved = live
        .call("DOM.resolveNode", node.clone())
        .await
        .map_err(|e| stale_or(reference, e, |e| e))?;
    let object = resolved["object"]["objectId"]
        .as_str()
        .ok_or_else(|| BrowserError::Input(format!("{reference} is no longer on the page")))?;
    live.call(
        "Runtime.callFunctionOn",
        json!({"objectId": object, "functionDeclaration": function}),
    )
    .await?;
    Ok(())
}

/// A node the page removed since the snapshot is reported as a stale ref;
/// other errors as `otherwise` makes them.
fn stale_or(
    reference: &str,
    error: BrowserError,
    otherwise: impl FnOnce(BrowserError) -> BrowserError,
) -> BrowserError {
    match &error {
        BrowserError::Command(text) if text.contains("No node") || text.contains("not found") => {
            BrowserError::Input(format!(
                "ref '{reference}' is stale: its element is gone from the page; call \
                 browser_snapshot for fresh refs"
            ))
        }
        _ => otherwise(error),
    }
}

/// Puts a label with each ref on its element, in an overlay the screenshot
/// shows and [`Browser::screenshot`] removes.
async fn draw_labels(live: &Live) -> Result<(), BrowserError> {
    let mut labels = Vec::new();
    let mut refs: Vec<(&String, &Ref)> = live.refs().iter().collect();
    refs.sort_by_key(|(key, _)| key[1..].parse::<usize>().unwrap_or(usize::MAX));
    for (key, target) in refs.into_iter().take(MAX_LABELS) {
        let node = json!({"backendNodeId": target.backend_node});
        if let Some((x, y)) = centre(live, &node).await {
            labels.push(json!([key, x, y]));
        }
    }
    let script = format!(
        "(() => {{ const layer = document.createElement('div'); layer.id = '__talaria_refs'; \
         layer.style = 'position:fixed;inset:0;pointer-events:none;z-index:2147483647'; \
         for (const [label, x, y] of {}) {{ const tag = document.createElement('span'); \
         tag.textContent = label; tag.style = `position:fixed;left:${{x}}px;top:${{y}}px;\
         transform:translate(-50%,-50%);background:#ffd400;color:#000;font:bold 11px \
         monospace;padding:0 2px;border:1px solid #000`; layer.appendChild(tag); }} \
         document.documentElement.appendChild(layer); return true; }})()",
        Value::Array(labels)
    );
    live.evaluate(&script).await.map(|_| ())
}
