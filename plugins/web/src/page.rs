//! An HTML page to readable Markdown: the main content (`<main>`, a lone
//! `<article>`, `role=main`) or else the body, without scripts, styles,
//! navigation, site headers and footers, forms and frames; links and images
//! made absolute against the page's URL (or its `<base href>`). The HTML is
//! parsed with html5ever (`scraper`) and converted with `htmd`.

use htmd::element_handler::{HandlerResult, Handlers};
use htmd::options::{BulletListMarker, CodeBlockStyle, HeadingStyle, Options};
use htmd::{Element, HtmlToMarkdown};
use scraper::{ElementRef, Html};
use url::Url;

use crate::dom;

/// A page converted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Converted {
    /// From `<title>`, else the first `<h1>`.
    pub title: Option<String>,
    /// The content as Markdown.
    pub markdown: String,
}

/// Never content, wherever they are.
const NOISE: &str = "script, style, noscript, template, svg, canvas, iframe, frame, object, \
     embed, nav, aside, form, button, input, select, textarea, dialog, [hidden], \
     [aria-hidden=true], [role=navigation], [role=search], [role=complementary]";
/// The site's own header and footer: dropped when the whole body is used
/// (inside a `<main>` or `<article>` they belong to the content).
const SITE_CHROME: &str = "header, footer, [role=banner], [role=contentinfo]";

/// Deeper element nesting than this is converted as plain text: the
/// Markdown conversion recurses once per level, and a component's stack is
/// small (real pages stay well under 100 levels).
const MAX_DEPTH: usize = 256;

/// How deep elements nest under `root` (walked without recursion).
fn depth(root: ElementRef<'_>) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    for edge in root.traverse() {
        match edge {
            ego_tree::iter::Edge::Open(_) => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            ego_tree::iter::Edge::Close(_) => depth = depth.saturating_sub(1),
        }
    }
    deepest
}

/// The element holding the page's content.
fn content_root(doc: &Html) -> (Option<ElementRef<'_>>, bool) {
    let root = doc.root_element();
    for css in ["main", "[role=main]"] {
        if let Some(main) = dom::first(root, css) {
            return (Some(main), true);
        }
    }
    // One article is the content; several are an index page.
    if let [article] = dom::all(root, "article").as_slice() {
        return (Some(*article), true);
    }
    (dom::first(root, "body"), false)
}

/// The page's title.
pub fn title(doc: &Html) -> Option<String> {
    ["title", "h1"]
        .iter()
        .filter_map(|css| dom::find(doc, css).map(dom::text))
        .find(|t| !t.is_empty())
}

/// Converts `html`, a page fetched from `page_url`.
pub fn to_markdown(html: &str, page_url: &Url) -> Converted {
    convert(Html::parse_document(html), page_url)
}

/// Converts a parsed page fetched from `page_url`.
pub fn convert(mut doc: Html, page_url: &Url) -> Converted {
    let title = title(&doc);
    let base = dom::find(&doc, "base[href]")
        .and_then(|b| b.value().attr("href"))
        .and_then(|href| page_url.join(href).ok())
        .unwrap_or_else(|| page_url.clone());
    let (root, is_main) = content_root(&doc);
    let Some(root_id) = root.map(|r| r.id()) else {
        return Converted {
            title,
            markdown: String::new(),
        };
    };
    let mut dropped = Vec::new();
    if let Some(root) = doc.tree.get(root_id).and_then(ElementRef::wrap) {
        dropped.extend(dom::all(root, NOISE).iter().map(|e| e.id()));
        if !is_main {
            dropped.extend(dom::all(root, SITE_CHROME).iter().map(|e| e.id()));
        }
    }
    for id in dropped {
        if let Some(mut node) = doc.tree.get_mut(id) {
            node.detach();
        }
    }
    let Some(root) = doc.tree.get(root_id).and_then(ElementRef::wrap) else {
        return Converted {
            title,
            markdown: String::new(),
        };
    };
    if depth(root) > MAX_DEPTH {
        return Converted {
            title,
            markdown: dom::text(root),
        };
    }
    let markdown = converter(base).convert(&root.html()).unwrap_or_default();
    Converted {
        title,
        markdown: tidy(&markdown),
    }
}

/// The value of attribute `name` of `element`.
fn attr<'a>(element: &'a Element<'_>, name: &str) -> Option<&'a str> {
    element
        .attrs
        .iter()
        .find(|a| &*a.name.local == name)
        .map(|a| &*a.value)
}

/// `href` made absolute; `None` for links that lead nowhere useful.
fn absolute(base: &Url, href: &str) -> Option<String> {
    let href = href.trim();
    if href.is_empty() || href.starts_with('#') {
        return None;
    }
    let url = base.join(href).ok()?;
    matches!(url.scheme(), "http" | "https" | "mailto" | "ftp").then(|| url.into())
}

/// A link destination as Markdown wants it.
fn destination(url: &str) -> String {
    if url.contains([' ', '(', ')', '<', '>']) {
        format!("<{}>", url.replace('<', "%3C").replace('>', "%3E"))
    } else {
        url.to_owned()
    }
}

fn converter(base: Url) -> HtmlToMarkdown {
    let link_base = base.clone();
    HtmlToMarkdown::builder()
        .options(Options {
            heading_style: HeadingStyle::Atx,
            code_block_style: CodeBlockStyle::Fenced,
            bullet_list_marker: BulletListMarker::Dash,
            ul_bullet_spacing: 1,
            ol_number_spacing: 1,
            ..Options::default()
        })
        .skip_tags(vec!["script", "style", "noscript", "template", "head"])
        .add_handler(
            vec!["a"],
            move |handlers: &dyn Handlers, element: Element| {
                let text = handlers.walk_children(element.node).content;
                let label = text.trim();
                let href = attr(&element, "href").and_then(|h| absolute(&link_base, h));
                Some(HandlerResult::from(match href {
                    Some(href) if !label.is_empty() => {
                        format!("[{label}]({})", destination(&href))
                    }
                    _ => text,
                }))
            },
        )
        .add_handler(vec!["img"], move |_: &dyn Handlers, element: Element| {
            let src = attr(&element, "src").and_then(|s| absolute(&base, s))?;
            let alt =
                dom::collapse(attr(&element, "alt").unwrap_or_default()).replace(['[', ']'], "");
            Some(HandlerResult::from(format!(
                "![{alt}]({})",
                destination(&src)
            )))
        })
        .add_handler(vec!["pre"], |handlers: &dyn Handlers, element: Element| {
            // htmd fences only `<pre><code>`; a bare `<pre>` (manuals,
            // generated docs) would come out as loose text.
            let result = handlers.fallback(element)?;
            let body = result.content.trim_matches('\n');
            if body.trim_start().starts_with("```") || body.trim().is_empty() {
                return Some(result);
            }
            let fence = if body.contains("```") { "````" } else { "```" };
            Some(HandlerResult::from(format!(
                "\n\n{fence}\n{body}\n{fence}\n\n"
            )))
        })
        .build()
}

/// No runs of blank lines or trailing spaces outside code fences.
fn tidy(markdown: &str) -> String {
    let mut out = String::with_capacity(markdown.len());
    let mut blank = 0;
    let mut in_code = false;
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
        }
        let line = if in_code { line } else { line.trim_end() };
        if line.is_empty() && !in_code {
            blank += 1;
            if blank > 1 {
                continue;
            }
        } else {
            blank = 0;
        }
        out.push_str(line);
        out.push('\n');
    }
    out.trim().to_owned()
}
