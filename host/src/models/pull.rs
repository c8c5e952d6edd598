//! `qmd pull`: downloads the configured models from Hugging Face (or
//! `$HF_ENDPOINT`, a mirror in the hub's URL layout) into the model cache.
//!
//! Per file: a HEAD gives the ETag, compared with the `<file>.etag` sidecar
//! of the last download; a changed, missing or `--refresh`ed file is fetched
//! into `<file>.part`, resuming a partial one with a `Range` request, checked
//! against the ETag when the hub gives a SHA-256 (LFS files), and only then
//! renamed into place. A model is never half-replaced: readers see the old
//! file or the new one.

use std::fs;
use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use indicatif::{ProgressBar, ProgressStyle};
use qmd_core::display::escape_controls;
use sha2::{Digest, Sha256};

use super::{ModelSources, OPTIONAL_FILES, REQUIRED_FILES, hub, models_dir};
use crate::files::regular;

/// The hub: `$HF_ENDPOINT` (mirrors) or huggingface.co.
pub fn endpoint() -> String {
    std::env::var("HF_ENDPOINT")
        .ok()
        .filter(|e| !e.trim().is_empty())
        .unwrap_or_else(|| "https://huggingface.co".into())
        .trim_end_matches('/')
        .to_string()
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .timeout_connect(Some(Duration::from_secs(20)))
        .timeout_recv_body(Some(Duration::from_secs(120)))
        .http_status_as_error(false)
        .build()
        .into()
}

pub fn run(sources: &ModelSources, refresh: bool) -> Result<ExitCode> {
    let agent = agent();
    let sources = [&sources.embed, &sources.generate, &sources.rerank];
    // An id that is not one is refused before any request or write.
    let invalid: Vec<&str> = sources.iter().filter_map(|s| s.invalid.as_deref()).collect();
    if !invalid.is_empty() {
        bail!("{}", invalid.join("\n"));
    }
    for source in sources {
        if source.endpoint.is_some() {
            println!("- {}: {} (on a server, not downloaded)", source.role.label(), escape_controls(&source.id));
            continue;
        }
        if !source.remote {
            println!("- {}: {} (local, not downloaded)", source.role.label(), escape_controls(&source.id));
            continue;
        }
        if let Some(gguf) = &source.gguf {
            let url =
                gguf.url.as_deref().with_context(|| format!("{}: not an hf:owner/repo/file.gguf URI", source.id))?;
            match pull_file(&agent, url, &gguf.path, refresh)? {
                Pulled::Absent => bail!("{url}: not found (404)"),
                Pulled::File { size, fresh } => report(&source.id, &gguf.path, size, fresh),
            }
            continue;
        }
        for (file, required) in
            REQUIRED_FILES.iter().map(|f| (*f, true)).chain(OPTIONAL_FILES.iter().map(|f| (*f, false)))
        {
            let url = format!("{}/{}/resolve/main/{file}", endpoint(), source.id);
            let path = source.dir.join(file);
            match pull_file(&agent, &url, &path, refresh)? {
                Pulled::Absent if required => bail!("{}: {file} is not in the repository", source.id),
                Pulled::Absent => {}
                Pulled::File { size, fresh } => report(&format!("{}/{file}", source.id), &path, size, fresh),
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `- <name> -> <path> (<size>, downloaded|cached/checked)`, as qmd prints it.
fn report(name: &str, path: &Path, size: u64, fresh: bool) {
    println!(
        "- {} -> {} ({}, {})",
        escape_controls(name),
        escape_controls(&path.to_string_lossy()),
        human(size),
        if fresh { "downloaded" } else { "cached/checked" }
    );
}

enum Pulled {
    File {
        size: u64,
        fresh: bool,
    },
    /// The repository has no such (optional) file.
    Absent,
}

/// Downloads `url` to `path` unless the cached file's ETag is current.
/// `path` (and its sidecars beside it) must lie inside the model cache.
fn pull_file(agent: &ureq::Agent, url: &str, path: &Path, refresh: bool) -> Result<Pulled> {
    let cache = models_dir();
    if !hub::is_inside(&cache, path) {
        bail!(
            "refusing to write {}: it is not inside the model cache {}",
            escape_controls(&path.to_string_lossy()),
            escape_controls(&cache.to_string_lossy())
        );
    }
    let file = path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
    let etag_path = sidecar(path, "etag");
    let head = agent.head(url).call().with_context(|| format!("cannot reach {url}"))?;
    match head.status().as_u16() {
        200 => {}
        404 => return Ok(Pulled::Absent),
        401 | 403 => bail!("{url}: access denied ({}); is the repository gated or private?", head.status()),
        code => bail!("{url}: HTTP {code}"),
    }
    let etag = etag_of(head.headers());
    let cached = read_etag(&etag_path);
    if !refresh && path.is_file() && etag.is_some() && cached.as_deref() == etag.as_deref() {
        return Ok(Pulled::File { size: fs::metadata(path)?.len(), fresh: false });
    }
    fs::create_dir_all(path.parent().expect("file in a directory"))?;
    let part = sidecar(path, "part");
    // A partial download of another version must not be resumed.
    let part_etag = sidecar(path, "part.etag");
    if refresh || read_etag(&part_etag) != etag {
        let _ = fs::remove_file(&part);
    }
    if let Some(etag) = &etag {
        crate::files::write_atomically(&part_etag, etag.as_bytes())?;
    }
    download(agent, url, &part, &file)?;
    if let Some(expected) = etag.as_deref().filter(|e| is_sha256(e)) {
        let actual = sha256_file(&part)?;
        if actual != expected {
            let _ = fs::remove_file(&part);
            bail!(
                "{url}: checksum mismatch (expected sha256 {expected}, got {actual}); the download was discarded, run 'qmd pull' again"
            );
        }
    }
    check_not_html(&part, url)?;
    fs::rename(&part, path)?;
    let _ = fs::remove_file(&part_etag);
    match &etag {
        Some(etag) => crate::files::write_atomically(&etag_path, etag.as_bytes())?,
        None => {
            let _ = fs::remove_file(&etag_path);
        }
    }
    Ok(Pulled::File { size: fs::metadata(path)?.len(), fresh: true })
}

/// GETs `url` into `part`, resuming from its current length.
fn download(agent: &ureq::Agent, url: &str, part: &Path, label: &str) -> Result<()> {
    // What a regular part holds (not what a link there points at).
    let have = fs::symlink_metadata(part).ok().filter(|m| m.is_file()).map_or(0, |m| m.len());
    let mut request = agent.get(url);
    if have > 0 {
        request = request.header("Range", format!("bytes={have}-"));
    }
    let response = request.call().with_context(|| format!("cannot download {url}"))?;
    let (append, start) = match response.status().as_u16() {
        206 => (true, have),
        200 => (false, 0),
        // The part is already whole.
        416 if have > 0 => return Ok(()),
        code => bail!("{url}: HTTP {code}"),
    };
    let length = response.headers().get("content-length").and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    // Never through a link, never a blocking open of a FIFO in the part's place.
    let open = if append { regular::append } else { regular::create };
    let mut out = open(part).with_context(|| format!("cannot write {}", part.display()))?;
    let bar = progress(label, length.map(|l| l + start), start);
    let mut body = response.into_body().into_reader();
    let mut buffer = vec![0u8; 1 << 16];
    let mut written = start;
    loop {
        let n = body
            .read(&mut buffer)
            .with_context(|| format!("download of {url} was interrupted; run 'qmd pull' again to resume"))?;
        if n == 0 {
            break;
        }
        out.write_all(&buffer[..n])?;
        written += n as u64;
        if let Some(bar) = &bar {
            bar.set_position(written);
        }
    }
    out.sync_all()?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    if let Some(total) = length.map(|l| l + start)
        && written != total
    {
        bail!("download of {url} ended early ({written} of {total} bytes); run 'qmd pull' again to resume");
    }
    Ok(())
}

fn progress(label: &str, total: Option<u64>, start: u64) -> Option<ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = ProgressBar::new(total.unwrap_or(0));
    bar.set_style(
        ProgressStyle::with_template("{msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} ETA {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar.set_message(escape_controls(label).into_owned());
    bar.set_position(start);
    Some(bar)
}

/// A sidecar's ETag: a regular file of a few bytes, or none.
fn read_etag(path: &Path) -> Option<String> {
    String::from_utf8(regular::read(path, 1024).ok()?).ok()
}

fn sidecar(path: &Path, ext: &str) -> PathBuf {
    let mut name = path.file_name().expect("file name").to_os_string();
    name.push(format!(".{ext}"));
    path.with_file_name(name)
}

/// The ETag to compare: the hub's `X-Linked-Etag` (LFS sha256) when present,
/// else `ETag`, without quotes or the weak marker.
fn etag_of(headers: &ureq::http::HeaderMap) -> Option<String> {
    let raw = headers.get("x-linked-etag").or_else(|| headers.get("etag"))?.to_str().ok()?;
    Some(raw.trim().trim_start_matches("W/").trim_matches('"').to_string()).filter(|e| !e.is_empty())
}

fn is_sha256(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The file's sha256, in hex.
pub(crate) fn sha256_file(path: &Path) -> Result<String> {
    let mut file = regular::open(path)?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 16];
    loop {
        let n = file.read(&mut buffer)?;
        if n == 0 {
            break;
        }
        hasher.update(&buffer[..n]);
    }
    Ok(qmd_core::document::to_hex(&hasher.finalize()))
}

/// A captive portal or a mirror's error page is not a model.
fn check_not_html(path: &Path, url: &str) -> Result<()> {
    let mut head = [0u8; 64];
    let n = crate::files::regular::open(path)?.read(&mut head)?;
    let start = String::from_utf8_lossy(&head[..n]).trim_start().to_lowercase();
    if start.starts_with("<!doctype html") || start.starts_with("<html") {
        let _ = fs::remove_file(path);
        bail!("Downloaded model file is an HTML page, not a model: {url}. If you use a mirror, check HF_ENDPOINT.");
    }
    Ok(())
}

fn human(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 20 => format!("{:.1} MB", b as f64 / (1 << 20) as f64),
        b if b >= 1 << 10 => format!("{:.1} KB", b as f64 / 1024.0),
        b => format!("{b} B"),
    }
}
