//! qmd's context rule: the global context, then every collection context
//! whose prefix is a plain string prefix of `/<path>`, shortest first,
//! joined by a blank line. (String prefix: `/work` also matches `/workshop`.)

use super::Config;

/// The key a context is stored under, as qmd writes it: `/` for the
/// collection root, else the relative prefix without slashes at its ends
/// (`/sub/dir/` → `sub/dir`).
pub fn normalize_prefix(prefix: &str) -> String {
    // Spaces and slashes together, so normalising twice changes nothing
    // (` /a/ ` and `a` are one key; found by fuzzing).
    let trimmed = prefix.trim_matches(|c: char| c == '/' || c.is_whitespace());
    if trimmed.is_empty() { "/".to_string() } else { trimmed.to_string() }
}

/// The context for a document, or `None` when nothing applies.
pub fn context_for(config: &Config, collection: &str, path: &str) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    if let Some(global) = config.global_context.as_deref().filter(|g| !g.is_empty()) {
        parts.push(global);
    }
    if let Some(c) = config.collection(collection) {
        let full = format!("/{path}");
        let mut matching: Vec<&(String, String)> =
            c.contexts.iter().filter(|(prefix, _)| prefix == "/" || full[1..].starts_with(prefix.as_str())).collect();
        matching.sort_by_key(|(prefix, _)| if prefix == "/" { 0 } else { prefix.len() });
        parts.extend(matching.iter().map(|(_, text)| text.as_str()));
    }
    (!parts.is_empty()).then(|| parts.join("\n\n"))
}

#[cfg(test)]
mod tests {
    use super::super::Collection;
    use super::*;

    #[test]
    fn concatenates_global_and_all_matching_prefixes() {
        let mut c = Collection::new("notes", "/n", "**/*.md");
        c.contexts = vec![
            ("work/projects".into(), "Projects".into()),
            ("/".into(), "Notes".into()),
            ("work".into(), "Work".into()),
        ];
        let mut config = Config::default();
        config.global_context = Some("Global".into());
        config.collections.push(c);
        assert_eq!(context_for(&config, "notes", "work/projects/a.md").unwrap(), "Global\n\nNotes\n\nWork\n\nProjects");
        assert_eq!(context_for(&config, "notes", "workshop/x.md").unwrap(), "Global\n\nNotes\n\nWork");
        assert_eq!(context_for(&config, "notes", "home.md").unwrap(), "Global\n\nNotes");
        assert_eq!(context_for(&config, "other", "a.md").unwrap(), "Global");
        assert_eq!(context_for(&Config::default(), "x", "a.md"), None);
        assert_eq!(normalize_prefix("/sub/dir/"), "sub/dir");
        assert_eq!(normalize_prefix(""), "/");
        assert_eq!(normalize_prefix(":- /"), ":-", "idempotent: no space left behind a slash");
    }
}
