//! Program-specific information and PES headers: the PAT, the PMT's stream-type table and the
//! PTS of a PES, each read from one packet's payload with every length checked.

use crate::info::{Codec, Track};

/// The PMT PID of the first program in a PAT section.
pub(crate) fn parse_pat(payload: &[u8]) -> Option<u16> {
    let section = payload.get(1 + usize::from(*payload.first()?)..)?;
    if *section.first()? != 0x00 {
        return None;
    }
    let len = (usize::from(section.get(1)? & 0x0f) << 8) | usize::from(*section.get(2)?);
    let end = (3 + len).min(section.len()).saturating_sub(4);
    let entries = section.get(8..end)?;
    entries.chunks_exact(4).find_map(|e| {
        let program = u16::from_be_bytes([e[0], e[1]]);
        (program != 0).then(|| (u16::from(e[2] & 0x1f) << 8) | u16::from(e[3]))
    })
}

/// The elementary streams of a PMT section: each PID with its track (the stream-type table
/// shared by the file and live readers).
pub(crate) fn pmt_tracks(payload: &[u8]) -> Vec<(u16, Track)> {
    let mut out = Vec::new();
    let Some(section) = payload
        .first()
        .and_then(|&p| payload.get(1 + usize::from(p)..))
    else {
        return out;
    };
    if section.first() != Some(&0x02) || section.len() < 12 {
        return out;
    }
    let len = (usize::from(section[1] & 0x0f) << 8) | usize::from(section[2]);
    let end = (3 + len).min(section.len()).saturating_sub(4);
    let info_len = (usize::from(section[10] & 0x0f) << 8) | usize::from(section[11]);
    let mut at = 12 + info_len;
    while at + 5 <= end {
        let stream_type = section[at];
        let pid = (u16::from(section[at + 1] & 0x1f) << 8) | u16::from(section[at + 2]);
        let es_info_len = (usize::from(section[at + 3] & 0x0f) << 8) | usize::from(section[at + 4]);
        let descriptors = section
            .get(at + 5..(at + 5 + es_info_len).min(end))
            .unwrap_or_default();
        at += 5 + es_info_len;
        let track = match stream_type {
            0x01 | 0x02 => Track::video(Codec::Mpeg2Video),
            0x10 => Track::video(Codec::Mpeg4Part2),
            0x1b => Track::video(Codec::H264),
            0x24 => Track::video(Codec::H265),
            0x03 | 0x04 => Track::audio(Codec::Mp2),
            0x0f => Track::audio(Codec::Aac),
            0x11 => Track::audio(Codec::Other("aac_latm".into())),
            0x81 => Track::audio(Codec::Other("ac3".into())),
            0x06 if has_registration(descriptors, b"Opus") => Track::audio(Codec::Opus),
            0x06 if has_registration(descriptors, b"AC-3") || has_tag(descriptors, 0x6a) => {
                Track::audio(Codec::Other("ac3".into()))
            }
            _ => continue,
        };
        out.push((pid, track));
    }
    out
}

/// Whether the descriptor loop holds a registration descriptor (tag 5) with `id`.
fn has_registration(descriptors: &[u8], id: &[u8; 4]) -> bool {
    descriptors_iter(descriptors).any(|(tag, body)| tag == 0x05 && body.get(..4) == Some(&id[..]))
}

fn has_tag(descriptors: &[u8], wanted: u8) -> bool {
    descriptors_iter(descriptors).any(|(tag, _)| tag == wanted)
}

fn descriptors_iter(mut d: &[u8]) -> impl Iterator<Item = (u8, &[u8])> {
    std::iter::from_fn(move || {
        let (&tag, rest) = d.split_first()?;
        let (&len, rest) = rest.split_first()?;
        let body = rest.get(..usize::from(len))?;
        d = &rest[usize::from(len)..];
        Some((tag, body))
    })
}

/// A PES header at the start of a payload: (PTS, payload after the header).
pub(super) fn parse_pes_header(p: &[u8]) -> Option<(Option<u64>, &[u8])> {
    if p.get(..3)? != [0, 0, 1] {
        return None;
    }
    let stream_id = *p.get(3)?;
    // Streams without the optional header (padding, private 2, ...): payload follows at once.
    if matches!(
        stream_id,
        0xbc | 0xbe | 0xbf | 0xf0 | 0xf1 | 0xff | 0xf2 | 0xf8
    ) {
        return Some((None, p.get(6..)?));
    }
    let flags = *p.get(7)?;
    let header_len = usize::from(*p.get(8)?);
    let body = p.get(9 + header_len..)?;
    let pts = if flags & 0x80 != 0 {
        let t = p.get(9..14)?;
        Some(
            (u64::from(t[0] >> 1) & 0x7) << 30
                | u64::from(t[1]) << 22
                | u64::from(t[2] >> 1) << 15
                | u64::from(t[3]) << 7
                | u64::from(t[4] >> 1),
        )
    } else {
        None
    };
    Some((pts, body))
}
