//! A built HTML page → a [`SitePage`]: its main content, title, headings
//! with anchors, language and filters, the way Pagefind reads pages.
//!
//! - Content: inside `[data-qmd-body]` elements if the page has any, else
//!   inside `<main>`, else the whole `<body>` without its `<header>`.
//! - Never indexed: `nav`, `footer`, `aside`, `script`, `style`,
//!   `noscript`, `template`, `svg`, `form`, `[data-qmd-ignore]`, `[hidden]`.
//! - Title: a `[data-qmd-title]` element, else the first `<h1>` of the
//!   content, else `<title>`, else the file name.
//! - Sub-results: headings with an `id` start sections (`url#id`).
//! - Filters: `data-qmd-filter="key:value"` on any element, and `lang`
//!   from `<html lang>`.

use std::cell::RefCell;
use std::rc::Rc;

use lol_html::html_content::{Element, TextType};
use lol_html::{HtmlRewriter, Settings, doc_text, element};
use qmd_core::site::{Anchor, SitePage};

const IGNORED: &[&str] = &["nav", "footer", "aside", "script", "style", "noscript", "template", "svg", "form"];

/// Elements that separate words: their edges become line breaks.
const BLOCKS: &[&str] = &[
    "address",
    "article",
    "blockquote",
    "br",
    "dd",
    "details",
    "div",
    "dl",
    "dt",
    "figcaption",
    "figure",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "hr",
    "li",
    "main",
    "ol",
    "p",
    "pre",
    "section",
    "summary",
    "table",
    "td",
    "th",
    "tr",
    "ul",
];

#[derive(Clone, Copy, PartialEq, Eq)]
enum Root {
    Marked,
    Main,
    Body,
    /// No `<body>` tag (HTML lets it be left out): the whole document.
    Document,
}

#[derive(Default)]
struct State {
    root_depth: u32,
    ignore_depth: u32,
    text: String,
    /// Raw text of the current text node (entities decode once it is whole).
    node: String,
    anchors: Vec<Anchor>,
    /// An open heading: (id, text so far, offset, level).
    heading: Option<(Option<String>, String, usize, u8)>,
    first_h1: Option<String>,
    marked_title: Option<String>,
    capture_marked_title: bool,
    title_tag: Option<String>,
    in_title_tag: bool,
    lang: Option<String>,
    filters: Vec<(String, String)>,
}

impl State {
    fn indexing(&self) -> bool {
        self.root_depth > 0 && self.ignore_depth == 0
    }

    /// Appends text with whitespace collapsed: runs become one space, and a
    /// block edge one line break.
    fn push_text(&mut self, text: &str) {
        for c in text.chars() {
            if c.is_whitespace() {
                if !self.text.is_empty() && !self.text.ends_with([' ', '\n']) {
                    self.text.push(' ');
                }
            } else {
                self.text.push(c);
            }
        }
    }

    fn break_line(&mut self) {
        if self.text.ends_with(' ') {
            self.text.pop();
        }
        if !self.text.is_empty() && !self.text.ends_with('\n') {
            self.text.push('\n');
        }
    }
}

fn root_of(html: &str) -> Root {
    let lower = html.to_ascii_lowercase();
    if lower.contains("data-qmd-body") {
        Root::Marked
    } else if lower.contains("<main") {
        Root::Main
    } else if lower.contains("<body") {
        Root::Body
    } else {
        Root::Document
    }
}

fn heading_level(tag: &str) -> Option<u8> {
    match tag.as_bytes() {
        [b'h', d @ b'1'..=b'6'] => Some(d - b'0'),
        _ => None,
    }
}

/// An attribute's value as the page means it: lol_html gives the source
/// text, so `Tom &amp; Jerry` is decoded here (once) before it becomes a
/// filter value or an anchor.
fn attribute(el: &Element<'_, '_>, name: &str) -> Option<String> {
    el.get_attribute(name).map(|raw| html_escape::decode_html_entities(&raw).into_owned())
}

/// Whitespace runs (newlines and tabs included) as one space, trimmed.
fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Extracts a page. `url` and `path` come from the file's place in the site.
pub fn extract(html: &str, url: String, path: String, file_stem: &str) -> Result<SitePage, String> {
    let root = root_of(html);
    let state = Rc::new(RefCell::new(State { root_depth: u32::from(root == Root::Document), ..State::default() }));
    let on_element = {
        let state = state.clone();
        move |el: &mut Element<'_, '_>| {
            let tag = el.tag_name();
            let mut s = state.borrow_mut();
            if tag == "html" {
                s.lang = attribute(el, "lang").map(|l| collapse(&l)).filter(|l| !l.is_empty());
            }
            if let Some(spec) = attribute(el, "data-qmd-filter") {
                for pair in spec.split(',') {
                    if let Some((k, v)) = pair.split_once(':') {
                        let (k, v) = (collapse(k), collapse(v));
                        if !k.is_empty() && !v.is_empty() {
                            s.filters.push((k, v));
                        }
                    }
                }
            }
            // Void elements (no end tag) hold no text.
            if el.end_tag_handlers().is_none() {
                return Ok(());
            }
            let is_root = match root {
                Root::Marked => el.has_attribute("data-qmd-body"),
                Root::Main => tag == "main",
                Root::Body => tag == "body",
                Root::Document => false,
            };
            let ignored = IGNORED.contains(&tag.as_str())
                || el.has_attribute("data-qmd-ignore")
                || el.has_attribute("hidden")
                || (root == Root::Body && tag == "header")
                || (root == Root::Document && (tag == "head" || tag == "title"));
            let block = BLOCKS.contains(&tag.as_str());
            let level = heading_level(&tag);
            let marked_title = el.has_attribute("data-qmd-title");
            let title_tag = tag == "title";
            if is_root {
                s.root_depth += 1;
            }
            if ignored {
                s.ignore_depth += 1;
            }
            if block && s.indexing() {
                s.break_line();
            }
            if let Some(level) = level
                && s.indexing()
                && s.heading.is_none()
            {
                let at = s.text.len();
                s.heading = Some((attribute(el, "id").filter(|i| !i.is_empty()), String::new(), at, level));
            }
            if marked_title && s.marked_title.is_none() {
                s.capture_marked_title = true;
                s.marked_title = Some(String::new());
            }
            s.in_title_tag |= title_tag;
            drop(s);
            let state = state.clone();
            let Some(end_handlers) = el.end_tag_handlers() else { return Ok(()) };
            end_handlers.push(Box::new(move |_end| {
                let mut s = state.borrow_mut();
                if block && s.indexing() {
                    s.break_line();
                }
                if level.is_some()
                    && let Some((id, text, at, open_level)) = s.heading.take()
                {
                    if Some(open_level) != level {
                        s.heading = Some((id, text, at, open_level));
                    } else {
                        let text = collapse(&text);
                        if open_level == 1 && s.first_h1.is_none() && !text.is_empty() {
                            s.first_h1 = Some(text.clone());
                        }
                        if let Some(id) = id {
                            s.anchors.push(Anchor { id, text, at });
                        }
                    }
                }
                if marked_title {
                    s.capture_marked_title = false;
                }
                if title_tag {
                    s.in_title_tag = false;
                }
                if ignored {
                    s.ignore_depth -= 1;
                }
                if is_root {
                    s.root_depth -= 1;
                }
                Ok(())
            }));
            Ok(())
        }
    };
    let on_text = {
        let state = state.clone();
        move |t: &mut lol_html::html_content::TextChunk<'_>| {
            let mut s = state.borrow_mut();
            s.node.push_str(t.as_str());
            if !t.last_in_text_node() {
                return Ok(());
            }
            let raw = std::mem::take(&mut s.node);
            // Script and style bodies are raw text; only markup text counts.
            if t.text_type() != TextType::Data && t.text_type() != TextType::RCData {
                return Ok(());
            }
            let text = html_escape::decode_html_entities(&raw).into_owned();
            if s.in_title_tag {
                s.title_tag.get_or_insert_with(String::new).push_str(&text);
            }
            if s.capture_marked_title
                && let Some(title) = s.marked_title.as_mut()
            {
                title.push_str(&text);
            }
            if s.indexing() {
                if let Some(heading) = s.heading.as_mut() {
                    heading.1.push_str(&text);
                }
                s.push_text(&text);
            }
            Ok(())
        }
    };
    let mut rewriter = HtmlRewriter::new(
        Settings {
            element_content_handlers: vec![element!("*", on_element)],
            document_content_handlers: vec![doc_text!(on_text)],
            ..Settings::new()
        },
        |_: &[u8]| {},
    );
    rewriter.write(html.as_bytes()).map_err(|e| e.to_string())?;
    rewriter.end().map_err(|e| e.to_string())?;

    let s = std::mem::take(&mut *state.borrow_mut());
    let title = [s.marked_title.map(|t| collapse(&t)), s.first_h1, s.title_tag.map(|t| collapse(&t))]
        .into_iter()
        .flatten()
        .find(|t| !t.is_empty())
        .unwrap_or_else(|| file_stem.to_string());
    let mut filters = s.filters;
    if let Some(lang) = s.lang {
        filters.push(("lang".to_string(), lang));
    }
    let text = s.text.trim_end().to_string();
    let anchors = s.anchors.into_iter().filter(|a| a.at <= text.len()).collect();
    Ok(SitePage { url, path, title, text, anchors, filters, ..SitePage::default() })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(html: &str) -> SitePage {
        extract(html, "/x/".into(), "x/".into(), "x").unwrap()
    }

    #[test]
    fn main_content_title_anchors_and_filters() {
        let p = page(
            r#"<!doctype html><html lang="en"><head><title>Site &amp; co</title><script>var x = "<p>no</p>";</script></head>
            <body><nav>Home About</nav><main data-qmd-filter="platform:linux">
            <h1 id="top">tar &mdash; archives</h1><p>Create an <b>archive</b>&nbsp;from files.</p>
            <h2 id="extract">Extract</h2><p>Use <code>tar xf</code>.</p><h2>No id</h2><p>last</p>
            <aside>related links</aside></main><footer>(c) 2026</footer></body></html>"#,
        );
        assert_eq!(p.title, "tar — archives");
        assert_eq!(p.text, "tar — archives\nCreate an archive from files.\nExtract\nUse tar xf.\nNo id\nlast");
        let anchors: Vec<(&str, &str)> = p.anchors.iter().map(|a| (a.id.as_str(), a.text.as_str())).collect();
        assert_eq!(anchors, [("top", "tar — archives"), ("extract", "Extract")]);
        assert!(p.text[p.anchors[1].at..].starts_with("Extract"));
        assert_eq!(p.filters, [("platform".into(), "linux".into()), ("lang".into(), "en".into())]);
    }

    #[test]
    fn attribute_values_are_decoded_before_they_become_data() {
        let p = page(
            "<html lang=\" en\n\"><main data-qmd-filter=\"author:Tom &amp; Jerry, tag : a\n\tb, k&#61;1:v&#x3a;w\">\
             <h2 id=\"a&amp;b\">Q&amp;A</h2><p>text</p></main></html>",
        );
        assert_eq!(
            p.filters,
            [
                ("author".into(), "Tom & Jerry".into()),
                ("tag".into(), "a b".into()),
                ("k=1".into(), "v:w".into()),
                ("lang".into(), "en".into())
            ]
        );
        assert_eq!((p.anchors[0].id.as_str(), p.anchors[0].text.as_str()), ("a&b", "Q&A"));
    }

    #[test]
    fn marked_body_wins_and_ignored_parts_are_skipped() {
        let p = page(
            r#"<html><body><main>chrome text</main><article data-qmd-body><p>kept <span data-qmd-ignore>dropped</span>
            words</p><div hidden>secret</div><span data-qmd-title>Custom title</span></article></body></html>"#,
        );
        assert_eq!(p.title, "Custom title");
        assert_eq!(p.text, "kept words\nCustom title");
    }

    #[test]
    fn body_fallback_drops_site_header_and_title_falls_back() {
        let p = page("<html><body><header>Brand</header><p>Only text</p></body></html>");
        assert_eq!(p.text, "Only text");
        assert_eq!(p.title, "x");
        let bare = page("<title>T</title><p>unclosed <b>bold <i>text</p> &unknownentity; &#x41;");
        assert_eq!((bare.title.as_str(), bare.text.as_str()), ("T", "unclosed bold text\n&unknownentity; A"));
    }
}
