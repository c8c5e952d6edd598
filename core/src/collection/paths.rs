//! Where a collection's `path:` points. qmd's own commands write absolute
//! paths, but a project's `.qmd/index.yml` is written by hand and travels
//! with a checkout, so it holds relative ones (`path: docs`). Those mean
//! the project's folder wherever a command runs from: resolving them
//! against the current directory indexed the wrong folder from a subfolder
//! and removed the real documents.

/// What relative collection paths are resolved against.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PathBase {
    /// The folder holding the project (the parent of `.qmd`) for a project
    /// config; the config file's folder for the user's own.
    pub base: String,
    /// The home folder, for a leading `~`.
    pub home: Option<String>,
}

/// A collection path as a config means it: `~` is the home folder, a
/// relative path is under `base`, and `.` and `..` are removed by name, as
/// qmd's `path.resolve` does. The host opens exactly this path, and the
/// trust gate decides containment on its canonical form, so a link on it
/// is followed the same way by both (`link/..` is `base`, never the link
/// target's parent).
pub fn resolve_path(raw: &str, at: &PathBase) -> String {
    let raw = raw.trim();
    let expanded = match (raw.strip_prefix('~'), &at.home) {
        (Some(rest), Some(home)) if rest.is_empty() || rest.starts_with('/') => format!("{home}{rest}"),
        _ => raw.to_string(),
    };
    let joined = if expanded.starts_with('/') { expanded } else { format!("{}/{expanded}", at.base) };
    let mut parts: Vec<&str> = Vec::new();
    for part in joined.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            part => parts.push(part),
        }
    }
    format!("/{}", parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_home_and_dotted_paths() {
        let at = PathBase { base: "/p/proj".into(), home: Some("/home/me".into()) };
        assert_eq!(resolve_path("docs", &at), "/p/proj/docs");
        assert_eq!(resolve_path("./docs/", &at), "/p/proj/docs");
        assert_eq!(resolve_path("", &at), "/p/proj");
        assert_eq!(resolve_path(".", &at), "/p/proj");
        assert_eq!(resolve_path("link/..", &at), "/p/proj");
        assert_eq!(resolve_path("../other", &at), "/p/other");
        assert_eq!(resolve_path("../../../..", &at), "/");
        assert_eq!(resolve_path("~/notes", &at), "/home/me/notes");
        assert_eq!(resolve_path("~", &at), "/home/me");
        assert_eq!(resolve_path("~bob/x", &at), "/p/proj/~bob/x", "only the user's own ~");
        assert_eq!(resolve_path("/abs//a/./b/../c", &at), "/abs/a/c");
        let homeless = PathBase { base: "/p".into(), home: None };
        assert_eq!(resolve_path("~/x", &homeless), "/p/~/x");
    }
}
