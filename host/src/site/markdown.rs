//! A markdown file → a [`SitePage`]: indexed as the CLI indexes it (same
//! path field, title and body, so both rank alike), linked through a base
//! URL, with its headings as anchors (GitHub's slugs).

use qmd_core::document::extract_title;
use qmd_core::site::{Anchor, SitePage};

/// How a markdown path becomes a link.
pub struct Links {
    /// Prefix of every link (`https://example.com/docs`, `/docs`, or empty).
    pub base: String,
    /// Replaces the `.md` extension (`.html`; empty drops it).
    pub extension: String,
}

impl Links {
    pub fn url(&self, path: &str) -> String {
        let stem = path.strip_suffix(".md").or_else(|| path.strip_suffix(".markdown")).unwrap_or(path);
        format!("{}/{}{}", self.base.trim_end_matches('/'), super::links::encode_path(stem), self.extension)
    }
}

/// GitHub's heading slug: lowercase, punctuation dropped, spaces to `-`.
pub fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == '-' || *c == '_' || *c == ' ')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// ATX headings outside fenced code: (byte offset, text).
fn headings(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut fence: Option<&str> = None;
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        if let Some(open) = fence {
            if trimmed.starts_with(open) {
                fence = None;
            }
        } else if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fence = Some(&trimmed[..3]);
        } else if let Some(rest) = line.strip_prefix('#') {
            let rest = rest.trim_start_matches('#');
            let level = line.len() - line.trim_start_matches('#').len();
            if level <= 6 && (rest.starts_with([' ', '\t']) || rest.trim().is_empty()) {
                let title = rest.trim().trim_end_matches('#').trim();
                if !title.is_empty() {
                    out.push((at, title.to_string()));
                }
            }
        }
        at += line.len();
    }
    out
}

pub fn page(path: &str, text: String, links: &Links) -> SitePage {
    // How often each slug came before (a count, not a scan of the ones
    // seen: a page of 10⁶ headings would be quadratic).
    let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let anchors = headings(&text)
        .into_iter()
        .map(|(at, heading)| {
            let base = slug(&heading);
            let count = seen.entry(base.clone()).or_insert(0);
            let n = *count;
            *count += 1;
            let id = if n == 0 { base } else { format!("{base}-{n}") };
            Anchor { id, text: heading, at }
        })
        .collect();
    SitePage {
        url: links.url(path),
        path: path.to_string(),
        title: extract_title(&text, path),
        metadata: qmd_core::metadata::extract(path, &text),
        text,
        anchors,
        filters: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_slugs_and_headings() {
        let links = Links { base: "/docs/".into(), extension: ".html".into() };
        assert_eq!(links.url("guide/intro.md"), "/docs/guide/intro.html");
        let bare = Links { base: String::new(), extension: String::new() };
        assert_eq!(bare.url("a.md"), "/a");
        let text =
            "# Title\n\n```sh\n# not a heading\n```\n## Set-up: step 1!\n### Set-up: step 1!\n#nope\n".to_string();
        let p = page("intro.md", text, &links);
        let ids: Vec<&str> = p.anchors.iter().map(|a| a.id.as_str()).collect();
        assert_eq!(ids, ["title", "set-up-step-1", "set-up-step-1-1"]);
        assert!(p.text[p.anchors[1].at..].starts_with("## Set-up"));
        assert_eq!(p.title, "Title");
    }
}
