//! ISO boxes: the header, splitting a body into its children, and the tree check that runs
//! before any box body is interpreted.

use crate::bytes::Cursor;
use crate::error::MediaError;
use crate::info::Container;

/// The deepest box nesting followed (moov/trak/mdia/minf/stbl/stsd/entry/esds).
const MAX_DEPTH: usize = 10;

/// One box: its type and its body (the bytes after the header).
#[derive(Debug, Clone, Copy)]
pub(super) struct Mp4Box<'a> {
    pub(super) kind: [u8; 4],
    pub(super) body: &'a [u8],
}

/// A box header at the start of some bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Header {
    /// Fewer bytes than the header needs.
    Incomplete,
    /// A size smaller than the header itself.
    Invalid([u8; 4]),
    /// The type, the total size (`None`: the box runs to the end of its parent or the input)
    /// and the header's length.
    Done([u8; 4], Option<u64>, usize),
}

/// Reads the box header at the start of `b`.
pub(super) fn header(b: &[u8]) -> Header {
    let mut c = Cursor::new(b);
    let (Some(size32), Some(kind)) = (c.u32_be(), c.array::<4>()) else {
        return Header::Incomplete;
    };
    match size32 {
        0 => Header::Done(kind, None, 8),
        1 => match c.u64_be() {
            Some(size) if size >= 16 => Header::Done(kind, Some(size), 16),
            Some(_) => Header::Invalid(kind),
            None => Header::Incomplete,
        },
        n if n < 8 => Header::Invalid(kind),
        n => Header::Done(kind, Some(u64::from(n)), 8),
    }
}

/// Splits `data` into its boxes. A box that claims more bytes than remain is an error.
pub(super) fn split_boxes(data: &[u8]) -> Result<Vec<Mp4Box<'_>>, MediaError> {
    let mut out = Vec::new();
    let mut rest = data;
    // Trailing padding shorter than a header is tolerated (some muxers leave zeros).
    while rest.len() >= 8 {
        let (kind, size, len) = match header(rest) {
            Header::Done(kind, size, len) => (kind, size, len),
            Header::Invalid(kind) => {
                return Err(bad(format!(
                    "box {} smaller than its header",
                    fourcc(&kind)
                )))
            }
            Header::Incomplete => return Err(bad("box header")),
        };
        let size = size.unwrap_or(rest.len() as u64);
        let Some(end) = usize::try_from(size).ok().filter(|&e| e <= rest.len()) else {
            return Err(bad(format!(
                "box {} runs past the end of its parent",
                fourcc(&kind)
            )));
        };
        out.push(Mp4Box {
            kind,
            body: &rest[len..end],
        });
        rest = &rest[end..];
    }
    Ok(out)
}

/// Checks the box tree under `data` down to [`MAX_DEPTH`], so that no child box is larger than
/// its parent (Symphonia's reader, which reads the codec parameters, trusts the sizes).
pub(super) fn validate_tree(data: &[u8], depth: usize) -> Result<(), MediaError> {
    if depth > MAX_DEPTH {
        return Ok(());
    }
    for b in split_boxes(data)? {
        if is_container(&b.kind) {
            validate_tree(b.body, depth + 1)?;
        }
    }
    Ok(())
}

/// Box types whose body is a plain list of child boxes.
fn is_container(kind: &[u8; 4]) -> bool {
    matches!(
        kind,
        b"moov"
            | b"trak"
            | b"mdia"
            | b"minf"
            | b"stbl"
            | b"edts"
            | b"mvex"
            | b"moof"
            | b"traf"
            | b"dinf"
    )
}

/// The first child of type `kind`.
pub(super) fn child<'a>(boxes: &[Mp4Box<'a>], kind: &[u8; 4]) -> Option<Mp4Box<'a>> {
    boxes.iter().find(|b| &b.kind == kind).copied()
}

/// The children of a container box.
pub(super) fn children(b: Option<Mp4Box<'_>>) -> Result<Vec<Mp4Box<'_>>, MediaError> {
    match b {
        Some(b) => split_boxes(b.body),
        None => Ok(Vec::new()),
    }
}

/// An unreadable MP4 (`ih5002` on the file path).
pub(super) fn bad(reason: impl Into<String>) -> MediaError {
    MediaError::unreadable(Some(Container::Mp4), reason)
}

/// A box type for messages, with anything not printable as `?`.
pub(super) fn fourcc(kind: &[u8; 4]) -> String {
    kind.iter()
        .map(|&c| {
            if c.is_ascii_graphic() || c == b' ' {
                c as char
            } else {
                '?'
            }
        })
        .collect()
}

/// The timescale and duration of an `mvhd` or `mdhd` body.
pub(super) fn timescale_duration(body: &[u8]) -> Option<(u32, u64)> {
    let mut c = Cursor::new(body);
    let version = c.u8()?;
    c.skip(3)?;
    if version == 1 {
        c.skip(16)?;
        Some((c.u32_be()?, c.u64_be()?))
    } else {
        c.skip(8)?;
        Some((c.u32_be()?, u64::from(c.u32_be()?)))
    }
}
