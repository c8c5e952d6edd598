//! qmd's Origin/Host guard for its HTTP servers, `qmd mcp --http` and
//! `qmd web` (reference §9.2): a browser page on another site must not reach
//! a server on loopback (DNS rebinding, cross-origin POSTs). Both servers
//! build it with [`OriginGuard::from_env`] (`QMD_ALLOWED_ORIGINS`,
//! `QMD_ALLOWED_HOSTS`) and check every request with
//! [`OriginGuard::check_headers`]; rejections are 403s.

use axum::http::{HeaderMap, header};

const WILDCARD_BIND_HOSTS: [&str; 5] = ["", "0.0.0.0", "::", "[::]", "*"];

/// Which origins and hosts may talk to the server.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OriginGuard {
    pub disabled: bool,
    allowed_origins: Vec<String>,
    allowed_hosts: Vec<String>,
    enforce_host: bool,
}

/// `localhost`, `*.localhost`, `::1`, `127.0.0.0/8` (also IPv4-mapped).
/// `0.0.0.0` is not loopback.
pub fn is_loopback_hostname(hostname: &str) -> bool {
    let lowered = hostname.trim().to_ascii_lowercase();
    let h = lowered.trim_start_matches('[').trim_end_matches(']');
    if h == "localhost" || h.ends_with(".localhost") || h == "::1" || h == "0:0:0:0:0:0:0:1" {
        return true;
    }
    let v4 = h.strip_prefix("::ffff:").unwrap_or(h);
    let parts: Vec<&str> = v4.split('.').collect();
    parts.len() == 4
        && parts[0] == "127"
        && parts.iter().all(|p| !p.is_empty() && p.len() <= 3 && p.bytes().all(|b| b.is_ascii_digit()))
}

/// `scheme`, `host` (IPv6 in brackets) and `port` of an absolute URL.
fn split_url(url: &str) -> Option<(String, String, Option<String>)> {
    let (scheme, rest) = url.trim().split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
    let (host, port) = split_host_port(authority)?;
    Some((scheme.to_ascii_lowercase(), host, port))
}

fn split_host_port(authority: &str) -> Option<(String, Option<String>)> {
    let (host, port) = if authority.starts_with('[') {
        let end = authority.find(']')?;
        let port = authority[end + 1..].strip_prefix(':').map(str::to_string);
        (authority[..=end].to_string(), port)
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), Some(p.to_string())),
            None => (authority.to_string(), None),
        }
    };
    if host.is_empty() || port.as_deref().is_some_and(|p| !p.bytes().all(|b| b.is_ascii_digit())) {
        return None;
    }
    Some((host.to_ascii_lowercase(), port.filter(|p| !p.is_empty())))
}

/// The origin as a browser serialises it: `scheme://host[:port]`, default
/// ports dropped, lowercase.
fn normalize_origin(origin: &str) -> Option<String> {
    let (scheme, host, port) = split_url(origin)?;
    let default = matches!((scheme.as_str(), port.as_deref()), ("http", Some("80")) | ("https", Some("443")));
    Some(match port {
        Some(p) if !default => format!("{scheme}://{host}:{p}"),
        _ => format!("{scheme}://{host}"),
    })
}

fn split_list(value: Option<&str>) -> Vec<String> {
    value.unwrap_or("").split(',').map(str::trim).filter(|v| !v.is_empty()).map(str::to_string).collect()
}

impl OriginGuard {
    /// From the bind host and `QMD_ALLOWED_ORIGINS` / `QMD_ALLOWED_HOSTS`.
    pub fn new(bind_host: &str, allowed_origins: Option<&str>, allowed_hosts: Option<&str>) -> OriginGuard {
        let origins = split_list(allowed_origins);
        if origins.iter().any(|o| o == "*") {
            return OriginGuard { disabled: true, ..Default::default() };
        }
        let mut hosts: Vec<String> = split_list(allowed_hosts).iter().map(|h| h.to_ascii_lowercase()).collect();
        let bind = bind_host.trim().to_ascii_lowercase();
        let wildcard = WILDCARD_BIND_HOSTS.contains(&bind.as_str());
        if !wildcard && !is_loopback_hostname(&bind) {
            hosts.push(bind);
        }
        OriginGuard {
            disabled: false,
            allowed_origins: origins.iter().filter_map(|o| normalize_origin(o)).collect(),
            enforce_host: !wildcard || !hosts.is_empty(),
            allowed_hosts: hosts,
        }
    }

    /// From the bind host and `QMD_ALLOWED_ORIGINS` / `QMD_ALLOWED_HOSTS`,
    /// printing the startup warning (if any) on stderr.
    pub fn from_env(bind_host: &str) -> OriginGuard {
        let guard = OriginGuard::new(
            bind_host,
            std::env::var("QMD_ALLOWED_ORIGINS").ok().as_deref(),
            std::env::var("QMD_ALLOWED_HOSTS").ok().as_deref(),
        );
        if let Some(warning) = guard.warning(bind_host) {
            eprintln!("{warning}");
        }
        guard
    }

    /// [`check`](Self::check) on a request's headers. Every `Origin` and
    /// `Host` value counts, and one that is not text is refused, not skipped.
    pub fn check_headers(&self, headers: &HeaderMap) -> Result<(), String> {
        if self.disabled {
            return Ok(());
        }
        for (name, label) in [(header::ORIGIN, "Origin"), (header::HOST, "Host")] {
            for value in headers.get_all(&name) {
                let Ok(text) = value.to_str() else {
                    return Err(format!("{label} not allowed: {}", String::from_utf8_lossy(value.as_bytes())));
                };
                let (origin, host) = if label == "Origin" { (Some(text), None) } else { (None, Some(text)) };
                self.check(origin, host)?;
            }
        }
        Ok(())
    }

    /// A startup warning for configurations that weaken the guard.
    pub fn warning(&self, bind_host: &str) -> Option<String> {
        if self.disabled {
            return Some("Warning: QMD_ALLOWED_ORIGINS=* disables the Origin/Host checks.".into());
        }
        let bind = bind_host.trim().to_ascii_lowercase();
        (WILDCARD_BIND_HOSTS.contains(&bind.as_str()) && !self.enforce_host).then(|| {
            format!(
                "Warning: listening on all interfaces ({bind_host}) without a Host check; set QMD_ALLOWED_HOSTS to the names clients use."
            )
        })
    }

    /// `Err(reason)` when the request must be refused.
    pub fn check(&self, origin: Option<&str>, host: Option<&str>) -> Result<(), String> {
        if self.disabled {
            return Ok(());
        }
        if let Some(origin) = origin.map(str::trim).filter(|o| !o.is_empty()) {
            let url = split_url(origin).filter(|(s, _, _)| s == "http" || s == "https");
            // Loopback pages, listed origins, and pages served from a host
            // the user allowed (`QMD_ALLOWED_HOSTS`, `host` or `host:port`).
            let allowed = url.as_ref().is_some_and(|(_, h, p)| {
                is_loopback_hostname(h)
                    || self.allowed_hosts.contains(h)
                    || p.as_ref().is_some_and(|p| self.allowed_hosts.contains(&format!("{h}:{p}")))
            }) || normalize_origin(origin).is_some_and(|o| self.allowed_origins.contains(&o));
            if !allowed {
                return Err(format!("Origin not allowed: {origin}"));
            }
        }
        if let Some(host) = host.map(str::trim).filter(|h| !h.is_empty())
            && self.enforce_host
        {
            let lowered = host.to_ascii_lowercase();
            let hostname = split_host_port(&lowered).map(|(h, _)| h);
            let allowed = hostname.as_deref().is_some_and(is_loopback_hostname)
                || self.allowed_hosts.contains(&lowered)
                || hostname.is_some_and(|h| self.allowed_hosts.contains(&h));
            if !allowed {
                return Err(format!("Host not allowed: {host}"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_names() {
        for h in ["localhost", "app.localhost", "127.0.0.1", "127.1.2.3", "::1", "[::1]", "::ffff:127.0.0.1"] {
            assert!(is_loopback_hostname(h), "{h}");
        }
        for h in ["0.0.0.0", "evil.example", "128.0.0.1", "localhost.evil.example", "127.0.0"] {
            assert!(!is_loopback_hostname(h), "{h}");
        }
    }

    #[test]
    fn loopback_bind_refuses_foreign_origin_and_host() {
        let guard = OriginGuard::new("localhost", None, None);
        assert!(guard.check(None, Some("localhost:8181")).is_ok(), "no Origin: a CLI client");
        assert!(guard.check(Some("http://127.0.0.1:8181"), Some("127.0.0.1:8181")).is_ok());
        assert!(guard.check(Some("https://localhost"), None).is_ok());
        assert_eq!(
            guard.check(Some("http://evil.example"), None),
            Err("Origin not allowed: http://evil.example".into())
        );
        assert_eq!(guard.check(None, Some("evil.example")), Err("Host not allowed: evil.example".into()));
        assert!(guard.check(Some("null"), None).is_err(), "opaque origins are foreign");
        assert!(guard.check(Some("file://localhost"), None).is_err(), "only http(s) origins count as loopback");
    }

    #[test]
    fn allow_lists_and_wildcards() {
        let guard =
            OriginGuard::new("localhost", Some("https://notes.example:443, http://x.test:8080"), Some("box.lan"));
        assert!(guard.check(Some("https://notes.example"), Some("box.lan:8181")).is_ok());
        assert!(guard.check(Some("http://x.test:8080"), None).is_ok());
        assert!(guard.check(Some("http://x.test"), None).is_err());
        let wildcard = OriginGuard::new("0.0.0.0", None, None);
        assert!(wildcard.check(None, Some("anything.example")).is_ok(), "wildcard bind skips the Host check");
        assert!(wildcard.warning("0.0.0.0").is_some());
        assert!(wildcard.check(Some("http://evil.example"), None).is_err(), "but still checks Origin");
        let concrete = OriginGuard::new("192.168.1.5", None, None);
        assert!(concrete.check(None, Some("192.168.1.5:8181")).is_ok());
        assert!(concrete.check(None, Some("evil.example")).is_err());
        let off = OriginGuard::new("localhost", Some("*"), None);
        assert!(off.disabled && off.check(Some("http://evil.example"), Some("evil.example")).is_ok());
    }

    #[test]
    fn pages_of_an_allowed_host_may_call_it() {
        let guard = OriginGuard::new("127.0.0.1", None, Some("box.lan, other.lan:9000"));
        assert!(guard.check(Some("http://box.lan:8080"), Some("box.lan:8080")).is_ok());
        assert!(guard.check(Some("http://other.lan:9000"), None).is_ok());
        assert!(guard.check(Some("http://other.lan:9001"), None).is_err());
        assert!(guard.check(Some("http://box.lan.evil.example"), None).is_err());
    }

    #[test]
    fn every_header_value_counts() {
        use axum::http::{HeaderMap, HeaderValue};
        let guard = OriginGuard::new("127.0.0.1", None, None);
        let mut headers = HeaderMap::new();
        headers.append(header::HOST, HeaderValue::from_static("127.0.0.1:8080"));
        assert!(guard.check_headers(&headers).is_ok());
        headers.append(header::HOST, HeaderValue::from_static("evil.example"));
        assert!(guard.check_headers(&headers).is_err(), "a second Host is checked too");
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, HeaderValue::from_bytes(b"evil\xff.example").unwrap());
        assert!(guard.check_headers(&headers).is_err(), "a Host that is not text is refused");
        let mut headers = HeaderMap::new();
        headers.insert(header::ORIGIN, HeaderValue::from_bytes(b"http://\xfe").unwrap());
        assert!(guard.check_headers(&headers).is_err(), "an Origin that is not text is refused");
        let off = OriginGuard::new("127.0.0.1", Some("*"), None);
        assert!(off.check_headers(&headers).is_ok());
    }
}
