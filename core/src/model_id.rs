//! Model ids on the Hugging Face hub, parsed once: every form a user (the
//! environment, `models:` in a config, `--model`) may write, and nothing
//! else. An id becomes a folder of the model cache and a request URL, so
//! its owner and repository are single names of the characters the hub
//! allows, and a file in a repository is made of safe segments: a `..`,
//! an absolute path, a backslash or an escape never gets through.
//!
//! Forms: `owner/repo`, `hf:owner/repo`, `https://huggingface.co/owner/repo`
//! (a repository of safetensors files), and `owner/repo/file.gguf`,
//! `hf:owner/repo/dir/file.gguf`, `https://huggingface.co/owner/repo/resolve/main/file.gguf`
//! (`blob/main` too: one GGUF file in a repository). Local paths are told
//! apart by the host (`ModelSource::resolve`) before an id is parsed.

use std::path::{Component, Path, PathBuf};

/// The hub's limit on an owner's or a repository's name.
pub const MAX_NAME: usize = 96;
/// Limits on a file's path in a repository (each segment, and the whole).
const MAX_SEGMENT: usize = 255;
const MAX_FILE: usize = 1024;

/// What the URL forms start with.
const URL_PREFIXES: [&str; 2] = ["https://huggingface.co/", "http://huggingface.co/"];

/// Whether `spec` is written as a hub id whatever the file system holds
/// (`hf:…` or a hub URL): never taken for a local path.
pub fn is_hub_form(spec: &str) -> bool {
    spec.starts_with("hf:") || URL_PREFIXES.iter().any(|p| strip_prefix_ignore_case(spec, p).is_some())
}

/// A repository on the hub, and maybe one GGUF file in it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HubId {
    pub owner: String,
    pub repo: String,
    /// `/`-separated segments, each checked ([`check_segment`]); ends in
    /// `.gguf`.
    pub file: Option<String>,
}

impl HubId {
    /// Parses `spec` (trimmed) in any of the hub forms; anything else is an
    /// error saying what is wrong (the caller names the id).
    pub fn parse(spec: &str) -> Result<HubId, String> {
        let spec = spec.trim();
        let (rest, url) = match URL_PREFIXES.iter().find_map(|p| strip_prefix_ignore_case(spec, p)) {
            Some(rest) => (rest.strip_suffix('/').unwrap_or(rest), true),
            None => (spec.strip_prefix("hf:").unwrap_or(spec), false),
        };
        let segments: Vec<&str> = rest.split('/').collect();
        let [owner, repo, file @ ..] = segments.as_slice() else {
            return Err("a model on the hub is named owner/repo".into());
        };
        check_name("owner", owner)?;
        check_name("repository", repo)?;
        let file = match file {
            [] => None,
            // A file's page or download URL, as the hub shows it.
            [kind, revision, file @ ..] if url && matches!(*kind, "resolve" | "blob") => {
                if *revision != "main" {
                    return Err(format!("qmd downloads a repository's main revision, not {revision:?}"));
                }
                Some(check_file(file)?)
            }
            file => Some(check_file(file)?),
        };
        Ok(HubId { owner: owner.to_string(), repo: repo.to_string(), file })
    }

    /// `owner/repo`.
    pub fn repo_id(&self) -> String {
        format!("{}/{}", self.owner, self.repo)
    }

    /// The repository's folder in the model cache `models`.
    pub fn dir(&self, models: &Path) -> PathBuf {
        models.join(&self.owner).join(&self.repo)
    }

    /// The download URL of `file` (checked segments) at the hub `endpoint`.
    pub fn url(&self, endpoint: &str, file: &str) -> String {
        format!("{endpoint}/{}/{}/resolve/main/{file}", self.owner, self.repo)
    }
}

fn strip_prefix_ignore_case<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix).then(|| &text[prefix.len()..])
}

/// An owner's or a repository's name as the hub allows it: letters,
/// digits, `-`, `_` and `.`, at most [`MAX_NAME`], not starting or ending
/// with `.` or `-`, and no `--` or `..` in it.
pub fn check_name(what: &str, name: &str) -> Result<(), String> {
    let why = if name.is_empty() {
        "is empty"
    } else if name.len() > MAX_NAME {
        "is longer than 96 characters"
    } else if !name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.')) {
        "may hold only letters, digits, '-', '_' and '.'"
    } else if name.starts_with(['.', '-']) || name.ends_with(['.', '-']) {
        "may not start or end with '.' or '-'"
    } else if name.contains("..") || name.contains("--") {
        "may not hold '..' or '--'"
    } else {
        return Ok(());
    };
    Err(format!("the {what} name {why}"))
}

/// A file's path in a repository: safe segments, ending in `.gguf` (the
/// one kind of single-file model).
fn check_file(segments: &[&str]) -> Result<String, String> {
    for segment in segments {
        check_segment(segment)?;
    }
    let file = segments.join("/");
    if file.len() > MAX_FILE {
        return Err(format!("the file's path is longer than {MAX_FILE} bytes"));
    }
    if !file.to_lowercase().ends_with(".gguf") {
        return Err(
            "a model file in a repository is a .gguf file (name a safetensors model by its repository, owner/repo)"
                .into(),
        );
    }
    Ok(file)
}

/// One segment of a file's path: not empty, `.` or `..`, at most 255
/// bytes, no control character, and none of `\ % ? # :` (a separator on
/// another system, or an escape or a delimiter in a URL).
pub fn check_segment(segment: &str) -> Result<(), String> {
    let why = if segment.is_empty() {
        "has an empty segment"
    } else if segment == "." || segment == ".." {
        "may not hold '.' or '..' segments"
    } else if segment.len() > MAX_SEGMENT {
        "has a segment longer than 255 bytes"
    } else if segment.chars().any(|c| c.is_control() || matches!(c, '\\' | '%' | '?' | '#' | ':')) {
        "may not hold control characters, '\\', '%', '?', '#' or ':'"
    } else {
        return Ok(());
    };
    Err(format!("the file's path {why}"))
}

/// Whether `path` lies inside `root`, lexically: below it, through plain
/// names only (the second line of defence before writing a file there).
pub fn is_inside(root: &Path, path: &Path) -> bool {
    path.strip_prefix(root).is_ok_and(|rel| {
        rel.components().next().is_some() && rel.components().all(|c| matches!(c, Component::Normal(_)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(owner: &str, repo: &str, file: Option<&str>) -> HubId {
        HubId { owner: owner.into(), repo: repo.into(), file: file.map(Into::into) }
    }

    #[test]
    fn every_hub_form_parses_to_the_same_id() {
        let repo = id("sentence-transformers", "all-MiniLM-L6-v2", None);
        for spec in [
            "sentence-transformers/all-MiniLM-L6-v2",
            "hf:sentence-transformers/all-MiniLM-L6-v2",
            "https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2",
            "https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2/",
            "  HTTPS://huggingface.co/sentence-transformers/all-MiniLM-L6-v2 ",
        ] {
            assert_eq!(HubId::parse(spec), Ok(repo.clone()), "{spec}");
        }
        let gguf = id("tobil", "qmd-query-expansion-1.7B-gguf", Some("qmd-query-expansion-1.7B-q4_k_m.gguf"));
        for spec in [
            "hf:tobil/qmd-query-expansion-1.7B-gguf/qmd-query-expansion-1.7B-q4_k_m.gguf",
            "tobil/qmd-query-expansion-1.7B-gguf/qmd-query-expansion-1.7B-q4_k_m.gguf",
            "https://huggingface.co/tobil/qmd-query-expansion-1.7B-gguf/resolve/main/qmd-query-expansion-1.7B-q4_k_m.gguf",
            "https://huggingface.co/tobil/qmd-query-expansion-1.7B-gguf/blob/main/qmd-query-expansion-1.7B-q4_k_m.gguf",
        ] {
            assert_eq!(HubId::parse(spec), Ok(gguf.clone()), "{spec}");
        }
        assert_eq!(HubId::parse("hf:a/b/q8/model Q8.GGUF"), Ok(id("a", "b", Some("q8/model Q8.GGUF"))));
        assert_eq!(HubId::parse("_x/y.z_9"), Ok(id("_x", "y.z_9", None)));
        let long = "a".repeat(MAX_NAME);
        assert!(HubId::parse(&format!("{long}/{long}")).is_ok());
    }

    #[test]
    fn hostile_ids_are_refused() {
        let long = "a".repeat(MAX_NAME + 1);
        let long_segment = format!("hf:a/b/{}.gguf", "x".repeat(MAX_SEGMENT));
        let long_file = format!("hf:a/b/{}x.gguf", "d/".repeat(MAX_FILE / 2));
        let hostile = [
            "hf:a/b/../../../../tmp/v",
            "a/b/../../../../tmp/v",
            "https://huggingface.co/a/b/../../../../tmp/v",
            "hf:a/b/../../x.gguf",
            "hf:../b",
            "hf:a/..",
            "../../x/y",
            "hf:./b",
            "hf:a/.",
            "hf:a/b/./x.gguf",
            "hf:%2e%2e/%2e%2e",
            "hf:a/b/%2e%2e/x.gguf",
            "hf:a/b/..%2fx.gguf",
            "hf:a\\..\\..\\b",
            "hf:a/b/..\\..\\x.gguf",
            "hf:/tmp/v",
            "hf://tmp/v",
            "/tmp/v",
            "hf:a/b//x.gguf",
            "hf:a//b",
            "hf:a/b/",
            "hf:a",
            "hf:",
            "",
            "a/b\0",
            "hf:a/b/x\0.gguf",
            "hf:a/b/x\n.gguf",
            "hf:a/b/x:y.gguf",
            "hf:a/b/x?.gguf",
            "hf:a/b/x#.gguf",
            "C:/x",
            "a b/c",
            "a/b c",
            "-a/b",
            "a/b-",
            ".a/b",
            "a/b.",
            "a--x/b",
            "a/b..c",
            "ä/b",
            "a/b/model.safetensors",
            "https://huggingface.co/a/b/resolve/v1/x.gguf",
            "https://huggingface.co/a/b/tree/main",
            "https://evil.example/a/b",
            "hf:a/b:Q4_K_M",
            &format!("{long}/b"),
            &format!("a/{long}"),
            &long_segment,
            &long_file,
        ];
        for spec in hostile {
            assert!(HubId::parse(spec).is_err(), "{spec:?} was accepted: {:?}", HubId::parse(spec));
        }
        let why = HubId::parse("hf:a/b/../../x").unwrap_err();
        assert!(why.contains("'.' or '..'"), "{why}");
    }

    #[test]
    fn a_parsed_id_stays_inside_the_cache() {
        let models = Path::new("/c/models");
        let hub = HubId::parse("hf:a/b/sub/x.gguf").unwrap();
        assert!(is_inside(models, &hub.dir(models).join(hub.file.as_deref().unwrap())));
        assert_eq!(hub.url("https://h", "x.gguf"), "https://h/a/b/resolve/main/x.gguf");
        assert!(!is_inside(models, Path::new("/c/models/a/../../v")));
        assert!(!is_inside(models, Path::new("/c/models")));
        assert!(!is_inside(models, Path::new("/c/modelsx/a")));
        assert!(!is_inside(models, Path::new("/tmp/v")));
    }
}
