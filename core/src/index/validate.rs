//! Consistency checks of a manifest, run on every load and before every
//! store: a hand-edited or damaged manifest is reported as damage, never
//! trusted into an overflow, a huge allocation or a write over a live file.

use super::manifest::{Manifest, SegmentMeta};
use super::segment::TERMINFO_WIDTH;

/// The sections of a text segment, in file order.
pub const SECTIONS: [&str; 11] = [
    "terms",
    "terminfo",
    "postings",
    "positions",
    "doclen",
    "doccoll",
    "docoffs",
    "docs",
    "bodies",
    "metaoffs",
    "metadata",
];
/// A segment written before metadata was stored ends after `bodies`.
const SECTIONS_BEFORE_METADATA: usize = 9;

/// The number in a file name `<prefix>NNNNNN<suffix>`.
pub fn file_number(name: &str, prefix: &str, suffix: &str) -> Option<u64> {
    let digits = name.strip_prefix(prefix)?.strip_suffix(suffix)?;
    (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())).then(|| digits.parse().ok()).flatten()
}

/// Numbers of every segment and vector file the manifest names.
fn file_numbers(manifest: &Manifest) -> impl Iterator<Item = Option<u64>> + '_ {
    let segments = manifest.segments.iter().map(|s| file_number(&s.file, "seg-", ".qseg"));
    let vectors = manifest.vectors.iter().flat_map(|v| &v.segments).map(|s| file_number(&s.file, "vec-", ".qvec"));
    segments.chain(vectors)
}

/// `Err` says what is inconsistent.
pub fn check(manifest: &Manifest) -> Result<(), String> {
    for segment in &manifest.segments {
        check_segment(segment, manifest.generation).map_err(|why| format!("{}: {why}", segment.file))?;
    }
    for number in file_numbers(manifest) {
        let number = number.ok_or("a segment file has a name qmd does not write")?;
        if number >= manifest.next_segment {
            return Err(format!("next_segment {} is not above segment number {number}", manifest.next_segment));
        }
    }
    if let Some(vectors) = &manifest.vectors {
        if vectors.dimension == 0 || vectors.dimension > 1 << 16 {
            return Err(format!("vector dimension {} is out of range", vectors.dimension));
        }
        for segment in &vectors.segments {
            let bytes = u64::from(segment.rows).checked_mul(u64::from(vectors.dimension) * 5 + 8);
            if bytes.is_none_or(|b| b > 1 << 48) {
                return Err(format!("{}: row count {} is out of range", segment.file, segment.rows));
            }
        }
    }
    Ok(())
}

fn check_segment(s: &SegmentMeta, generation: u64) -> Result<(), String> {
    let number = file_number(&s.file, "seg-", ".qseg").ok_or("not a segment file name")?;
    if s.docs == 0 || s.deleted >= s.docs {
        return Err(format!("{} documents with {} deleted", s.docs, s.deleted));
    }
    match &s.deletes {
        None if s.deleted > 0 => return Err("deletions counted but no deletions file".into()),
        Some(file) => {
            let (stem, rest) = file.split_once('.').ok_or("bad deletions file name")?;
            let made = file_number(rest, "", ".del").ok_or("bad deletions file name")?;
            if file_number(stem, "seg-", "") != Some(number) || made > generation {
                return Err(format!("bad deletions file name {file}"));
            }
        }
        None => {}
    }
    if s.collections.is_empty() || s.collections.len() > usize::from(u16::MAX) + 1 {
        return Err(format!("{} collections", s.collections.len()));
    }
    let names: Vec<&str> = s.sections.iter().map(|x| x.name.as_str()).collect();
    if names != SECTIONS && names != SECTIONS[..SECTIONS_BEFORE_METADATA] {
        return Err(format!("sections {names:?}"));
    }
    let docs = u64::from(s.docs);
    let mut end = 0u64;
    for section in &s.sections {
        let expected = match section.name.as_str() {
            "doclen" => Some(docs * 4),
            "doccoll" => Some(docs * 2),
            "docoffs" | "metaoffs" => Some((docs + 1) * 4),
            _ => None,
        };
        if expected.is_some_and(|e| e != section.len)
            || (section.name == "terminfo"
                && (section.len < TERMINFO_WIDTH as u64 || section.len % TERMINFO_WIDTH as u64 != 0))
        {
            return Err(format!("section {} has the wrong length {}", section.name, section.len));
        }
        if section.offset < end {
            return Err(format!("section {} overlaps the one before", section.name));
        }
        end = section.offset.checked_add(section.len).ok_or_else(|| format!("section {} overflows", section.name))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_numbers_parse_only_our_names() {
        assert_eq!(file_number("seg-000012.qseg", "seg-", ".qseg"), Some(12));
        assert_eq!(file_number("seg-.qseg", "seg-", ".qseg"), None);
        assert_eq!(file_number("seg-1x.qseg", "seg-", ".qseg"), None);
        assert_eq!(file_number("../seg-1.qseg", "seg-", ".qseg"), None);
        assert_eq!(file_number("seg-99999999999999999999999.qseg", "seg-", ".qseg"), None);
    }
}
