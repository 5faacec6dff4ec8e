//! EBML primitives for the Matroska demuxer: element headers, sizes, values and block lacing.
//!
//! Every function reads from a slice and reports "not enough bytes yet" apart from "these bytes
//! cannot be that", so the same code serves a whole file and a stream cut anywhere.

use crate::bytes::Cursor;

pub(super) const ID_EBML: u32 = 0x1A45_DFA3;
pub(super) const ID_DOCTYPE: u32 = 0x4282;
pub(super) const ID_SEGMENT: u32 = 0x1853_8067;
pub(super) const ID_SEEK_HEAD: u32 = 0x114D_9B74;
pub(super) const ID_INFO: u32 = 0x1549_A966;
pub(super) const ID_TIMESTAMP_SCALE: u32 = 0x2A_D7B1;
pub(super) const ID_DURATION: u32 = 0x4489;
pub(super) const ID_TRACKS: u32 = 0x1654_AE6B;
pub(super) const ID_TRACK_ENTRY: u32 = 0xAE;
pub(super) const ID_TRACK_NUMBER: u32 = 0xD7;
pub(super) const ID_TRACK_TYPE: u32 = 0x83;
pub(super) const ID_CODEC_ID: u32 = 0x86;
pub(super) const ID_CODEC_PRIVATE: u32 = 0x63A2;
pub(super) const ID_CODEC_DELAY: u32 = 0x56AA;
pub(super) const ID_DEFAULT_DURATION: u32 = 0x23_E383;
pub(super) const ID_VIDEO: u32 = 0xE0;
pub(super) const ID_PIXEL_WIDTH: u32 = 0xB0;
pub(super) const ID_PIXEL_HEIGHT: u32 = 0xBA;
pub(super) const ID_AUDIO: u32 = 0xE1;
pub(super) const ID_SAMPLING_FREQUENCY: u32 = 0xB5;
pub(super) const ID_CHANNELS: u32 = 0x9F;
pub(super) const ID_BIT_DEPTH: u32 = 0x6264;
pub(super) const ID_CONTENT_ENCODINGS: u32 = 0x6D80;
pub(super) const ID_CUES: u32 = 0x1C53_BB6B;
pub(super) const ID_TAGS: u32 = 0x1254_C367;
pub(super) const ID_CHAPTERS: u32 = 0x1043_A770;
pub(super) const ID_ATTACHMENTS: u32 = 0x1941_A469;
pub(super) const ID_VOID: u32 = 0xEC;
pub(super) const ID_CRC32: u32 = 0xBF;
pub(super) const ID_CLUSTER: u32 = 0x1F43_B675;
pub(super) const ID_CLUSTER_TIMESTAMP: u32 = 0xE7;
pub(super) const ID_SIMPLE_BLOCK: u32 = 0xA3;
pub(super) const ID_BLOCK_GROUP: u32 = 0xA0;
pub(super) const ID_BLOCK: u32 = 0xA1;
pub(super) const ID_BLOCK_DURATION: u32 = 0x9B;
pub(super) const ID_REFERENCE_BLOCK: u32 = 0xFB;
pub(super) const ID_DISCARD_PADDING: u32 = 0x75A2;
/// Cluster children nobody reads: Position, PrevSize, SilentTracks, EncryptedBlock.
pub(super) const IGNORED_CLUSTER_CHILDREN: [u32; 4] = [0xA7, 0xAB, 0x5854, 0xAF];

/// What the next bytes hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Parse<T> {
    /// Not enough bytes yet.
    Incomplete,
    /// Bytes that cannot be what was expected.
    Invalid,
    /// The value and how many bytes it took.
    Done(T, usize),
}

/// A variable-length integer with its marker removed; `None` is the reserved "unknown" value.
pub(super) fn vint(b: &[u8]) -> Parse<Option<u64>> {
    let Some(&first) = b.first() else {
        return Parse::Incomplete;
    };
    let len = first.leading_zeros() as usize + 1;
    if len > 8 {
        return Parse::Invalid;
    }
    let Some(bytes) = b.get(..len) else {
        return Parse::Incomplete;
    };
    let mask = (0xffu32 >> len) as u8;
    let mut value = u64::from(first & mask);
    let mut all_ones = first & mask == mask;
    for &x in &bytes[1..] {
        all_ones &= x == 0xff;
        value = (value << 8) | u64::from(x);
    }
    Parse::Done(if all_ones { None } else { Some(value) }, len)
}

/// An element header at the start of `b`: `(id, size)`, the size `None` when unknown. IDs keep
/// their length marker, as the specification writes them.
pub(super) fn element_header(b: &[u8]) -> Parse<(u32, Option<u64>)> {
    let Some(&first) = b.first() else {
        return Parse::Incomplete;
    };
    let id_len = first.leading_zeros() as usize + 1;
    if id_len > 4 {
        return Parse::Invalid;
    }
    let Some(id_bytes) = b.get(..id_len) else {
        return Parse::Incomplete;
    };
    let id = id_bytes
        .iter()
        .fold(0u32, |acc, &x| (acc << 8) | u32::from(x));
    match vint(&b[id_len..]) {
        Parse::Done(size, n) => Parse::Done((id, size), id_len + n),
        Parse::Incomplete => Parse::Incomplete,
        Parse::Invalid => Parse::Invalid,
    }
}

/// The child elements `(id, body)` of a master element's body, in order; an `Err` for a child
/// that is malformed, of unknown size or runs past the body, after which nothing follows.
pub(super) fn children(mut b: &[u8]) -> impl Iterator<Item = Result<(u32, &[u8]), ()>> {
    let mut broken = false;
    std::iter::from_fn(move || {
        if broken || b.is_empty() {
            return None;
        }
        let child = match element_header(b) {
            Parse::Done((id, Some(size)), n) => usize::try_from(size)
                .ok()
                .and_then(|size| n.checked_add(size))
                .and_then(|end| Some((id, b.get(n..end)?, end))),
            _ => None,
        };
        match child {
            Some((id, body, end)) => {
                b = &b[end..];
                Some(Ok((id, body)))
            }
            None => {
                broken = true;
                Some(Err(()))
            }
        }
    })
}

/// The children of `b` up to the first malformed one, for elements read leniently (the EBML
/// header, Info, BlockGroup): what was readable is used.
pub(super) fn readable_children(b: &[u8]) -> impl Iterator<Item = (u32, &[u8])> {
    children(b).map_while(Result::ok)
}

/// The body of the first child `id` of `b` that comes before any malformed child.
pub(super) fn child(b: &[u8], id: u32) -> Option<&[u8]> {
    readable_children(b)
        .find(|(i, _)| *i == id)
        .map(|(_, body)| body)
}

/// An unsigned integer element's value.
pub(super) fn uint(body: &[u8]) -> Option<u64> {
    (body.len() <= 8).then(|| body.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b)))
}

/// A signed integer element's value.
pub(super) fn sint(body: &[u8]) -> Option<i64> {
    if body.is_empty() {
        return Some(0);
    }
    let u = uint(body)?;
    let shift = 64 - 8 * body.len() as u32;
    Some(((u << shift) as i64) >> shift)
}

/// A float element's value.
pub(super) fn float(body: &[u8]) -> Option<f64> {
    match body.len() {
        0 => Some(0.0),
        4 => Some(f64::from(f32::from_be_bytes(body.try_into().ok()?))),
        8 => Some(f64::from_be_bytes(body.try_into().ok()?)),
        _ => None,
    }
}

/// A string element's value, trailing NULs removed.
pub(super) fn string(body: &[u8]) -> String {
    String::from_utf8_lossy(body)
        .trim_end_matches('\0')
        .to_string()
}

/// A vint read through a cursor, as block headers and EBML lacing store them.
fn cursor_vint(c: &mut Cursor<'_>) -> Option<Option<u64>> {
    let mut peek = *c;
    match vint(peek.rest()) {
        Parse::Done(v, n) => {
            c.skip(n)?;
            Some(v)
        }
        _ => None,
    }
}

/// The frame sizes of a block body after its header, for lacing mode `mode`
/// (0 none, 1 Xiph, 2 fixed, 3 EBML). The sizes always fit in what remains.
pub(super) fn lace_sizes(c: &mut Cursor<'_>, mode: u8) -> Option<Vec<usize>> {
    if mode == 0 {
        return Some(vec![c.remaining()]);
    }
    let count = usize::from(c.u8()?) + 1;
    let mut sizes = Vec::with_capacity(count);
    match mode {
        1 => {
            for _ in 0..count - 1 {
                let mut size = 0usize;
                loop {
                    let b = c.u8()?;
                    size += usize::from(b);
                    if b != 255 {
                        break;
                    }
                }
                sizes.push(size);
            }
        }
        3 => {
            let first = cursor_vint(c)??;
            let mut size = i64::try_from(first).ok()?;
            sizes.push(usize::try_from(size).ok()?);
            for _ in 1..count - 1 {
                let start = c.pos();
                let raw = cursor_vint(c)??;
                let len = (c.pos() - start) as u32;
                let bias = (1i64 << (7 * len - 1)) - 1;
                size = size.checked_add(raw as i64 - bias)?;
                sizes.push(usize::try_from(size).ok()?);
            }
        }
        _ => {
            let each = c.remaining() / count;
            return Some(vec![each; count]);
        }
    }
    let used: usize = sizes.iter().try_fold(0usize, |a, &s| a.checked_add(s))?;
    sizes.push(c.remaining().checked_sub(used)?);
    Some(sizes)
}

/// A (Simple)Block cut into its frames.
pub(super) struct Block<'a> {
    /// The track number the block belongs to.
    pub(super) track: u64,
    /// Timestamp relative to its cluster, in ticks.
    pub(super) relative: i16,
    /// The header flags (keyframe bit for a SimpleBlock, lacing bits).
    pub(super) flags: u8,
    /// How many frames the block's lacing declares.
    pub(super) count: usize,
    /// The frames, empty ones left out, with whether each is the block's last.
    pub(super) frames: Vec<(&'a [u8], bool)>,
}

/// Parses a (Simple)Block body; `None` for a malformed one (players skip those).
pub(super) fn block(body: &[u8]) -> Option<Block<'_>> {
    let mut c = Cursor::new(body);
    let track = cursor_vint(&mut c)??;
    let relative = c.u16_be()? as i16;
    let flags = c.u8()?;
    let sizes = lace_sizes(&mut c, (flags >> 1) & 0x3)?;
    let n = sizes.len();
    let mut frames = Vec::with_capacity(n);
    for (i, size) in sizes.into_iter().enumerate() {
        // A short last frame keeps the frames before it, as the block is cut in order.
        let Some(data) = c.take(size) else { break };
        if !data.is_empty() {
            frames.push((data, i + 1 == n));
        }
    }
    Some(Block {
        track,
        relative,
        flags,
        count: n,
        frames,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vints_decode_with_their_marker_removed() {
        assert_eq!(vint(&[0x81]), Parse::Done(Some(1), 1));
        assert_eq!(vint(&[0x40, 0x02]), Parse::Done(Some(2), 2));
        assert_eq!(vint(&[0xff]), Parse::Done(None, 1));
        assert_eq!(vint(&[0x00]), Parse::Invalid);
        assert_eq!(vint(&[0x40]), Parse::Incomplete);
        assert_eq!(
            element_header(&[0x1a, 0x45, 0xdf, 0xa3, 0x80]),
            Parse::Done((ID_EBML, Some(0)), 5)
        );
    }

    #[test]
    fn xiph_lacing_splits_a_block_into_frames() {
        // Three frames of 300, 2 and 5 bytes: sizes 255+45 and 2, the last takes the rest.
        let mut body = vec![2, 255, 45, 2];
        body.extend(std::iter::repeat_n(0u8, 307));
        let mut c = Cursor::new(&body);
        assert_eq!(lace_sizes(&mut c, 1), Some(vec![300, 2, 5]));
    }

    #[test]
    fn lacing_that_claims_more_than_the_block_is_refused() {
        let body = [1u8, 200, 0, 0];
        assert_eq!(lace_sizes(&mut Cursor::new(&body), 1), None);
    }

    #[test]
    fn a_child_past_its_parent_ends_the_children() {
        // A Void of 1 byte, then one that claims 5 bytes with 1 present.
        let body = [0xec, 0x81, 0x00, 0xec, 0x85, 0x00];
        let kids: Vec<_> = children(&body).collect();
        assert_eq!(kids, vec![Ok((ID_VOID, &[0u8][..])), Err(())]);
    }
}
