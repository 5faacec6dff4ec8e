//! Telling a stream's files apart by content: which frames open a new file, and what container
//! a file's first bytes are.

use crate::formats::ts;

/// Bytes gathered to recognise a stream's container: past this, what is not recognised is
/// not media.
pub(super) const SNIFF_LIMIT: usize = 4096;

/// What the first bytes of a file are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Detected {
    NeedMore,
    Unknown,
    Mkv,
    Fmp4,
    Ts { packet_size: usize, offset: usize },
    WholeFile,
}

const EBML_MAGIC: [u8; 4] = [0x1a, 0x45, 0xdf, 0xa3];

/// Whether a frame opens with a file header, and so starts a new file.
pub(super) fn opens_file(b: &[u8]) -> bool {
    let at = |off: usize, magic: &[u8]| b.get(off..off + magic.len()) == Some(magic);
    at(0, &EBML_MAGIC)
        || at(4, b"ftyp")
        || at(4, b"moov")
        || at(0, b"RIFF")
        || at(0, b"RF64")
        || at(0, b"fLaC")
        || at(0, b"OggS")
        || at(0, b"ID3")
}

/// Recognises the container of a file from its first bytes. `complete` says no more bytes
/// will come.
pub(super) fn detect(b: &[u8], complete: bool) -> Detected {
    if b.starts_with(&EBML_MAGIC) {
        return Detected::Mkv;
    }
    match ts::sniff_prefix(b, complete) {
        Some(Some((packet_size, offset))) => {
            return Detected::Ts {
                packet_size,
                offset,
            }
        }
        Some(None) if !complete && b.len() < SNIFF_LIMIT => return Detected::NeedMore,
        _ => {}
    }
    if b.len() < 12 {
        return if complete {
            Detected::Unknown
        } else {
            Detected::NeedMore
        };
    }
    match &b[4..8] {
        b"ftyp" | b"moov" => return iso_kind(b),
        b"moof" | b"styp" | b"sidx" | b"emsg" | b"prft" | b"mdat" => return Detected::Fmp4,
        b"free" | b"skip" | b"wide" | b"pnot" => return Detected::WholeFile,
        _ => {}
    }
    let at = |off: usize, magic: &[u8]| b.get(off..off + magic.len()) == Some(magic);
    if at(0, b"RIFF") || at(0, b"RF64") || at(0, b"fLaC") || at(0, b"OggS") || at(0, b"ID3") {
        return Detected::WholeFile;
    }
    if b[0] == 0xff && b[1] & 0xe0 == 0xe0 {
        return Detected::WholeFile;
    }
    Detected::Unknown
}

/// An ISO file: streamed when its `moov` declares fragments (`mvex`) or is not complete yet,
/// read whole when it is a progressive file.
fn iso_kind(b: &[u8]) -> Detected {
    let mut off = 0usize;
    while let Some(header) = off.checked_add(8).and_then(|end| b.get(off..end)) {
        let size = u32::from_be_bytes([header[0], header[1], header[2], header[3]]) as usize;
        let kind = &header[4..8];
        let (size, header_len) = if size == 1 {
            match b.get(off + 8..off + 16) {
                Some(large) => (
                    usize::try_from(u64::from_be_bytes(large.try_into().unwrap_or([0; 8])))
                        .unwrap_or(usize::MAX),
                    16,
                ),
                None => break,
            }
        } else {
            (size, 8)
        };
        match kind {
            b"moov" => {
                let Some(body) = off
                    .checked_add(size)
                    .and_then(|end| b.get(off + header_len..end))
                else {
                    return Detected::Fmp4;
                };
                return if top_level_box(body, b"mvex") {
                    Detected::Fmp4
                } else {
                    Detected::WholeFile
                };
            }
            b"mdat" => return Detected::WholeFile,
            b"moof" => return Detected::Fmp4,
            _ => {}
        }
        if size < header_len {
            break;
        }
        off = off.saturating_add(size);
    }
    Detected::Fmp4
}

/// Whether `b`, read as a run of boxes, holds one of type `kind`.
pub(super) fn top_level_box(b: &[u8], kind: &[u8; 4]) -> bool {
    let mut off = 0usize;
    while let Some(h) = off.checked_add(8).and_then(|end| b.get(off..end)) {
        if &h[4..8] == kind {
            return true;
        }
        let size = u32::from_be_bytes([h[0], h[1], h[2], h[3]]) as usize;
        if size < 8 {
            return false;
        }
        off = off.saturating_add(size);
    }
    false
}
