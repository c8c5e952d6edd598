//! A file's bytes as text, as the file declares: a byte-order mark (UTF-8,
//! UTF-16 in either order), else UTF-8. The one place both builders (the
//! index's `update` and the host's `site build`) read a mark and tell text
//! from what is not text; the site build adds the charsets HTML declares.

use std::borrow::Cow;

/// [`SkippedFile::reason`](crate::SkippedFile) of a file that is not text.
pub const NOT_TEXT: &str = "NOT_TEXT";

/// How much of a text the NUL check reads.
const HEAD_BYTES: usize = 1024;

/// The encoding a byte-order mark names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bom {
    Utf8,
    Utf16Le,
    Utf16Be,
}

impl Bom {
    /// The mark at the start of `bytes`, and its length.
    pub fn sniff(bytes: &[u8]) -> Option<(Bom, usize)> {
        match bytes {
            [0xef, 0xbb, 0xbf, ..] => Some((Bom::Utf8, 3)),
            [0xff, 0xfe, ..] => Some((Bom::Utf16Le, 2)),
            [0xfe, 0xff, ..] => Some((Bom::Utf16Be, 2)),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Bom::Utf8 => "UTF-8",
            Bom::Utf16Le => "UTF-16LE",
            Bom::Utf16Be => "UTF-16BE",
        }
    }

    /// `body` (after the mark) decoded, and whether any bytes were invalid
    /// (read as U+FFFD; an odd last byte of UTF-16 is one).
    pub fn decode(self, body: &[u8]) -> (String, bool) {
        let unit = match self {
            Bom::Utf8 => {
                let text = String::from_utf8_lossy(body);
                let lossy = matches!(text, Cow::Owned(_));
                return (text.into_owned(), lossy);
            }
            Bom::Utf16Le => u16::from_le_bytes,
            Bom::Utf16Be => u16::from_be_bytes,
        };
        let units = body.chunks_exact(2).map(|pair| unit([pair[0], pair[1]]));
        let mut lossy = body.len() % 2 == 1;
        let mut text: String = char::decode_utf16(units)
            .map(|c| {
                c.unwrap_or_else(|_| {
                    lossy = true;
                    char::REPLACEMENT_CHARACTER
                })
            })
            .collect();
        if body.len() % 2 == 1 {
            text.push(char::REPLACEMENT_CHARACTER);
        }
        (text, lossy)
    }
}

/// Why text that [`mostly_nul`] flags is not read.
pub const MOSTLY_NUL: &str = "mostly NUL bytes (UTF-16 without a byte-order mark, or not text)";

/// Text that starts with a byte-order mark, decoded by it, with a note when
/// some bytes were invalid there; `None` without a mark.
pub fn marked(bytes: &[u8]) -> Option<(String, Option<String>)> {
    let (bom, len) = Bom::sniff(bytes)?;
    let (text, lossy) = bom.decode(&bytes[len..]);
    Some((text, lossy.then(|| format!("some bytes are not valid {} (read as U+FFFD)", bom.name()))))
}

/// Whether decoded text is mostly NUL bytes: UTF-16 without a mark reads
/// as valid UTF-8 with a NUL in every other byte of its ASCII, and so does
/// much that is not text. A head an eighth NULs is that; a stray NUL in a
/// note is not.
pub fn mostly_nul(text: &str) -> bool {
    let head = &text.as_bytes()[..text.len().min(HEAD_BYTES)];
    head.iter().filter(|&&b| b == 0).count() * 8 > head.len()
}

/// A note's text, and a note when some of its bytes were not valid in its
/// encoding (read as U+FFFD: indexed, and named, never in silence); or why
/// it is not text at all. Notes have no charset to declare, so what is
/// neither marked nor UTF-8 is read as UTF-8 with the note, as qmd reads it
/// (without the note).
pub fn note_text(bytes: &[u8]) -> Result<(Cow<'_, str>, Option<String>), String> {
    let (text, loss) = match marked(bytes) {
        Some((text, loss)) => (Cow::Owned(text), loss),
        None => match std::str::from_utf8(bytes) {
            Ok(text) => (Cow::Borrowed(text), None),
            Err(e) => (
                String::from_utf8_lossy(bytes),
                Some(format!(
                    "not UTF-8 from byte {} of {} (invalid bytes read as U+FFFD)",
                    e.valid_up_to(),
                    bytes.len()
                )),
            ),
        },
    };
    if mostly_nul(&text) {
        return Err(format!("{NOT_TEXT}: {MOSTLY_NUL}"));
    }
    Ok((text, loss))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utf16(text: &str, le: bool) -> Vec<u8> {
        let mut bytes = if le { vec![0xff, 0xfe] } else { vec![0xfe, 0xff] };
        bytes.extend(text.encode_utf16().flat_map(|u| if le { u.to_le_bytes() } else { u.to_be_bytes() }));
        bytes
    }

    #[test]
    fn marked_text_decodes_by_its_mark() {
        assert_eq!(note_text("\u{feff}# Café".as_bytes()).unwrap(), (Cow::Borrowed("# Café"), None));
        for le in [true, false] {
            let bytes = utf16("# Naïve 日本 🦀", le);
            let (text, loss) = note_text(&bytes).unwrap();
            assert_eq!((text.as_ref(), loss), ("# Naïve 日本 🦀", None));
        }
        assert_eq!(note_text(b"# plain").unwrap(), (Cow::Borrowed("# plain"), None));
    }

    #[test]
    fn invalid_bytes_are_named_and_not_text_is_refused() {
        let (text, loss) = note_text(b"# Caf\xe9 au lait").unwrap();
        assert_eq!(text, "# Caf\u{fffd} au lait");
        assert!(loss.unwrap().contains("not UTF-8 from byte 5 of 14"));
        // A lone surrogate and an odd last byte in UTF-16.
        let mut broken = utf16("ab", true);
        broken.extend([0x00, 0xd8, b'c']);
        let (text, loss) = note_text(&broken).unwrap();
        assert_eq!(text, "ab\u{fffd}\u{fffd}");
        assert!(loss.unwrap().contains("UTF-16LE"));
        let bare: Vec<u8> = "# hello world".encode_utf16().flat_map(u16::to_le_bytes).collect();
        assert!(note_text(&bare).unwrap_err().starts_with(NOT_TEXT));
        assert!(note_text(&[0u8; 64]).unwrap_err().contains("NUL"));
        assert!(note_text(b"# a stray \0 NUL in a note").is_ok());
    }
}
