//! The links a bundle's results carry: `--base-url` (http(s) or a path,
//! nothing a click could run), `--link-ext`, and page paths percent-encoded
//! segment by segment, so a file named `a b#c.html` links to itself.

use anyhow::{Result, bail};
use percent_encoding::{AsciiSet, CONTROLS, utf8_percent_encode};

/// Bytes a path segment cannot hold as they are (RFC 3986's `pchar`, and
/// `%` itself, since file names are literal).
const SEGMENT: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'[')
    .add(b'\\')
    .add(b']')
    .add(b'^')
    .add(b'`')
    .add(b'{')
    .add(b'|')
    .add(b'}')
    .add(b'/');

/// `--base-url` is an http(s) URL, a protocol-relative one (`//host`), a
/// path, or empty: a scheme that is not http(s) (`javascript:`, `data:`)
/// would run or load when a result is clicked. Controls and spaces are
/// refused too (a browser strips or removes them inside a scheme).
pub fn check_base_url(base: &str) -> Result<()> {
    if base.chars().any(|c| c.is_control() || c.is_whitespace() || c == '\\') {
        bail!("--base-url holds a control character, space or backslash: {}", qmd_core::display::escape_controls(base));
    }
    if let Some((scheme, _)) = base.split_once(':')
        && !scheme.contains(['/', '?', '#'])
        && !(scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https"))
    {
        bail!("--base-url must be an http(s) URL or a path such as /docs (got a {scheme}: URL)");
    }
    Ok(())
}

/// `--link-ext` joins a path: URL path characters only.
pub fn check_link_ext(ext: &str) -> Result<()> {
    if let Some(c) = ext.chars().find(|c| !(c.is_ascii_alphanumeric() || "._~-/".contains(*c))) {
        bail!("--link-ext may hold letters, digits and . _ ~ - / only (got {:?})", c);
    }
    Ok(())
}

/// A `/`-separated relative path with each segment percent-encoded.
pub fn encode_path(path: &str) -> String {
    path.split('/').map(|segment| utf8_percent_encode(segment, SEGMENT).to_string()).collect::<Vec<_>>().join("/")
}

/// The link of an HTML file: `dir/index.html` is served as `dir/`.
pub fn html_url(base: &str, path: &str) -> String {
    let link = match path.rsplit_once('/') {
        Some((dir, "index.html")) => format!("{dir}/"),
        None if path == "index.html" => String::new(),
        _ => path.to_string(),
    };
    format!("{}/{}", base.trim_end_matches('/'), encode_path(&link))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_links() {
        assert_eq!(html_url("", "index.html"), "/");
        assert_eq!(html_url("", "docs/index.html"), "/docs/");
        assert_eq!(html_url("/site/", "docs/a.html"), "/site/docs/a.html");
        assert_eq!(html_url("", "a b#c?d%e.html"), "/a%20b%23c%3Fd%25e.html");
        assert_eq!(html_url("https://x.org", "café/ü.html"), "https://x.org/caf%C3%A9/%C3%BC.html");
    }

    #[test]
    fn only_bases_a_click_cannot_run() {
        for good in ["", "/docs", "/docs/", "https://example.com/docs", "HTTP://x", "//cdn.example.com", "docs", "/a:b"]
        {
            assert!(check_base_url(good).is_ok(), "{good}");
        }
        for bad in [
            "javascript:alert(1)//",
            "JavaScript:x",
            "data:text/html,x",
            "vbscript:x",
            "file:///etc",
            "java\tscript:x",
            " javascript:x",
        ] {
            assert!(check_base_url(bad).is_err(), "{bad}");
        }
        assert!(check_link_ext(".html").is_ok() && check_link_ext("").is_ok() && check_link_ext("/").is_ok());
        assert!(check_link_ext("\"><script>").is_err() && check_link_ext("?a=b c").is_err());
    }
}
