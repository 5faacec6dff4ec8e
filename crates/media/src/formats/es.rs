//! Elementary-stream inspection for containers that do not describe their streams fully
//! (MPEG-TS, AVI): keyframe detection, picture sizes, ADTS and MPEG audio framing.

use crate::bytes::Cursor;
use crate::info::Codec;

/// Start-code-delimited units (`00 00 01` prefixed) of an Annex B / MPEG video payload, each
/// returned from the byte after its start code.
fn start_code_units(data: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut starts = Vec::new();
    let mut i = 0;
    while i + 3 <= data.len() {
        if data[i] == 0 && data[i + 1] == 0 && data[i + 2] == 1 {
            starts.push(i + 3);
            i += 3;
        } else {
            i += 1;
        }
    }
    let ends: Vec<usize> = starts
        .iter()
        .skip(1)
        .map(|&s| s - 3)
        .chain(std::iter::once(data.len()))
        .collect();
    starts
        .into_iter()
        .zip(ends)
        .map(move |(s, e)| &data[s..e.max(s)])
}

/// Whether an encoded frame is a random-access point, by looking inside it. `None` when the
/// codec is not one this function understands.
pub(crate) fn is_keyframe(codec: &Codec, frame: &[u8]) -> Option<bool> {
    match codec {
        // Every JPEG is complete on its own.
        Codec::Mjpeg => Some(true),
        Codec::H264 => {
            Some(start_code_units(frame).any(|u| u.first().is_some_and(|b| b & 0x1f == 5)))
        }
        Codec::H265 => Some(start_code_units(frame).any(|u| {
            u.first()
                .is_some_and(|b| (16..=23).contains(&((b >> 1) & 0x3f)))
        })),
        // Picture header (00 00 01 00): picture_coding_type 1 is an I picture.
        Codec::Mpeg2Video => start_code_units(frame)
            .find(|u| u.first() == Some(&0x00))
            .and_then(|u| u.get(2))
            .map(|b| (b >> 3) & 0x7 == 1),
        // VOP header (00 00 01 B6): vop_coding_type 0 is an I-VOP.
        Codec::Mpeg4Part2 => start_code_units(frame)
            .find(|u| u.first() == Some(&0xb6))
            .and_then(|u| u.get(1))
            .map(|b| b >> 6 == 0),
        _ => None,
    }
}

/// The picture size a video payload's sequence-level header states, if it carries one.
pub(crate) fn picture_size(codec: &Codec, frame: &[u8]) -> Option<(u32, u32)> {
    match codec {
        Codec::Mpeg2Video => {
            let seq = start_code_units(frame).find(|u| u.first() == Some(&0xb3))?;
            let b = seq.get(1..4)?;
            let w = (u32::from(b[0]) << 4) | u32::from(b[1] >> 4);
            let h = (u32::from(b[1] & 0x0f) << 8) | u32::from(b[2]);
            Some((w, h))
        }
        Codec::H264 => start_code_units(frame)
            .find(|u| u.first().is_some_and(|b| b & 0x1f == 7))
            .and_then(h264_sps_size),
        _ => None,
    }
}

/// An H.264 NAL payload with emulation-prevention bytes removed.
fn unescape(nal: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(nal.len());
    let mut zeros = 0;
    for &b in nal {
        if zeros >= 2 && b == 3 {
            zeros = 0;
            continue;
        }
        zeros = if b == 0 { zeros + 1 } else { 0 };
        out.push(b);
    }
    out
}

/// A big-endian bit reader for exp-Golomb coded headers.
struct Bits<'a> {
    data: &'a [u8],
    pos: usize,
}

impl Bits<'_> {
    fn bit(&mut self) -> Option<u32> {
        let byte = *self.data.get(self.pos / 8)?;
        let bit = (byte >> (7 - self.pos % 8)) & 1;
        self.pos += 1;
        Some(u32::from(bit))
    }

    fn bits(&mut self, n: u32) -> Option<u32> {
        (0..n).try_fold(0u32, |acc, _| Some((acc << 1) | self.bit()?))
    }

    fn ue(&mut self) -> Option<u32> {
        let mut zeros = 0;
        while self.bit()? == 0 {
            zeros += 1;
            if zeros > 31 {
                return None;
            }
        }
        Some((1u32 << zeros) - 1 + self.bits(zeros)?)
    }

    fn se(&mut self) -> Option<i32> {
        let v = self.ue()?;
        Some(if v % 2 == 1 {
            (v / 2 + 1) as i32
        } else {
            -((v / 2) as i32)
        })
    }
}

/// Width and height from an H.264 sequence parameter set NAL (header byte included).
pub(crate) fn h264_sps_size(nal: &[u8]) -> Option<(u32, u32)> {
    let rbsp = unescape(nal.get(1..)?);
    let mut r = Bits {
        data: &rbsp,
        pos: 0,
    };
    let profile = r.bits(8)?;
    r.bits(16)?;
    r.ue()?;
    let mut chroma_format = 1;
    if matches!(
        profile,
        100 | 110 | 122 | 244 | 44 | 83 | 86 | 118 | 128 | 138 | 139 | 134 | 135
    ) {
        chroma_format = r.ue()?;
        if chroma_format == 3 {
            r.bit()?;
        }
        r.ue()?;
        r.ue()?;
        r.bit()?;
        if r.bit()? == 1 {
            let lists = if chroma_format == 3 { 12 } else { 8 };
            for i in 0..lists {
                if r.bit()? == 1 {
                    let size = if i < 6 { 16 } else { 64 };
                    let (mut last, mut next) = (8i32, 8i32);
                    for _ in 0..size {
                        if next != 0 {
                            // delta_scale is -128..=127 (H.264 7.4.2.1.1.1): any other value
                            // is a broken SPS, not an overflow (found by the `elementary`
                            // fuzz target).
                            let delta = r.se()?;
                            if !(-128..=127).contains(&delta) {
                                return None;
                            }
                            next = (last + delta + 256) % 256;
                        }
                        last = if next == 0 { last } else { next };
                    }
                }
            }
        }
    }
    r.ue()?;
    match r.ue()? {
        0 => {
            r.ue()?;
        }
        1 => {
            r.bit()?;
            r.se()?;
            r.se()?;
            let cycle = r.ue()?;
            for _ in 0..cycle.min(255) {
                r.se()?;
            }
        }
        _ => {}
    }
    r.ue()?;
    r.bit()?;
    let width_mbs = r.ue()?.checked_add(1)?;
    let height_units = r.ue()?.checked_add(1)?;
    let frame_mbs_only = r.bit()?;
    if frame_mbs_only == 0 {
        r.bit()?;
    }
    r.bit()?;
    let (mut cl, mut cr, mut ct, mut cb) = (0, 0, 0, 0);
    if r.bit()? == 1 {
        cl = r.ue()?;
        cr = r.ue()?;
        ct = r.ue()?;
        cb = r.ue()?;
    }
    let (crop_x, crop_y) = match chroma_format {
        0 => (1, 2 - frame_mbs_only),
        1 => (2, 2 * (2 - frame_mbs_only)),
        2 => (2, 2 - frame_mbs_only),
        _ => (1, 2 - frame_mbs_only),
    };
    // Every value is read from the stream: checked arithmetic, so a crafted
    // SPS yields "unknown size" instead of an overflow.
    let width = width_mbs
        .checked_mul(16)?
        .checked_sub(cl.checked_add(cr)?.checked_mul(crop_x)?)?;
    let height = height_units
        .checked_mul(16)?
        .checked_mul(2 - frame_mbs_only)?
        .checked_sub(ct.checked_add(cb)?.checked_mul(crop_y)?)?;
    Some((width, height))
}

/// One ADTS frame header: (header length, frame length, profile, sampling index, channels).
pub(crate) fn adts_header(b: &[u8]) -> Option<(usize, usize, u8, u8, u8)> {
    let h = b.get(..7)?;
    if h[0] != 0xff || h[1] & 0xf6 != 0xf0 {
        return None;
    }
    let protection_absent = h[1] & 0x1 == 1;
    let profile = h[2] >> 6;
    let sr_index = (h[2] >> 2) & 0xf;
    let channels = ((h[2] & 0x1) << 2) | (h[3] >> 6);
    let frame_len =
        (usize::from(h[3] & 0x3) << 11) | (usize::from(h[4]) << 3) | usize::from(h[5] >> 5);
    let header_len = if protection_absent { 7 } else { 9 };
    if sr_index > 12 || frame_len < header_len {
        return None;
    }
    Some((header_len, frame_len, profile, sr_index, channels))
}

/// The sampling rate of an AAC sampling-frequency index.
pub(crate) fn aac_rate(index: u8) -> Option<u32> {
    const RATES: [u32; 13] = [
        96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350,
    ];
    RATES.get(usize::from(index)).copied()
}

/// Splits an ADTS stream into raw AAC frames; also returns the AudioSpecificConfig of the first
/// header (what a decoder of raw frames needs).
pub(crate) fn split_adts(data: &[u8]) -> (Vec<&[u8]>, Option<[u8; 2]>) {
    let mut frames = Vec::new();
    let mut asc = None;
    let mut c = Cursor::new(data);
    while c.remaining() >= 7 {
        let rest = &data[c.pos()..];
        match adts_header(rest) {
            Some((header_len, frame_len, profile, sr, ch)) if frame_len <= rest.len() => {
                asc.get_or_insert_with(|| {
                    let object_type = u16::from(profile) + 1;
                    let v = (object_type << 11) | (u16::from(sr) << 7) | (u16::from(ch) << 3);
                    v.to_be_bytes()
                });
                frames.push(&rest[header_len..frame_len]);
                let _ = c.skip(frame_len);
            }
            // Lost sync (a cut PES, garbage): look for the next header byte by byte.
            _ => {
                let _ = c.skip(1);
            }
        }
    }
    (frames, asc)
}

/// What the first frame header of an MPEG audio stream says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MpegAudioFormat {
    /// 1, 2 or 3.
    pub(crate) layer: u8,
    pub(crate) rate: u32,
    pub(crate) channels: u16,
}

/// Splits an MPEG audio stream into frames; also returns the format of the first frame.
pub(crate) fn split_mpeg_audio(data: &[u8]) -> (Vec<&[u8]>, Option<MpegAudioFormat>) {
    let mut frames = Vec::new();
    let mut first = None;
    let mut off = 0usize;
    while off + 4 <= data.len() {
        let h = [data[off], data[off + 1], data[off + 2], data[off + 3]];
        match super::plain::mpeg_audio_header(h) {
            Some((len, _, rate)) if off + len <= data.len() => {
                let channels = if h[3] >> 6 == 3 { 1 } else { 2 };
                first.get_or_insert(MpegAudioFormat {
                    layer: super::plain::mpeg_audio_layer(h[1]),
                    rate,
                    channels,
                });
                frames.push(&data[off..off + len]);
                off += len;
            }
            _ => off += 1,
        }
    }
    (frames, first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_h264_idr_is_a_keyframe_and_a_p_slice_is_not() {
        assert_eq!(
            is_keyframe(&Codec::H264, &[0, 0, 0, 1, 0x09, 0xf0, 0, 0, 1, 0x65, 0x88]),
            Some(true)
        );
        assert_eq!(
            is_keyframe(&Codec::H264, &[0, 0, 0, 1, 0x41, 0x9a]),
            Some(false)
        );
    }

    /// Writes an H.264 SPS NAL bit by bit, emulation prevention included.
    #[derive(Default)]
    struct SpsWriter {
        bits: Vec<u8>,
    }

    impl SpsWriter {
        fn bits(&mut self, value: u64, n: u32) -> &mut Self {
            for i in (0..n).rev() {
                self.bits.push(((value >> i) & 1) as u8);
            }
            self
        }
        fn ue(&mut self, value: u64) -> &mut Self {
            let code = value + 1;
            let len = 64 - code.leading_zeros();
            self.bits(0, len - 1).bits(code, len)
        }
        fn se(&mut self, value: i64) -> &mut Self {
            let code = if value > 0 {
                2 * value as u64 - 1
            } else {
                2 * value.unsigned_abs()
            };
            self.ue(code)
        }
        fn nal(&mut self) -> Vec<u8> {
            self.bits(1, 1);
            while !self.bits.len().is_multiple_of(8) {
                self.bits.push(0);
            }
            let mut out = vec![0x67];
            let mut zeros = 0;
            for byte in self.bits.chunks(8) {
                let b = byte.iter().fold(0u8, |acc, bit| (acc << 1) | bit);
                if zeros >= 2 && b <= 3 {
                    out.push(3);
                    zeros = 0;
                }
                zeros = if b == 0 { zeros + 1 } else { 0 };
                out.push(b);
            }
            out
        }
    }

    /// A High-profile 320x240 SPS whose first scaling list starts with `delta`.
    fn sps_with_scaling_delta(delta: i64) -> Vec<u8> {
        let mut w = SpsWriter::default();
        w.bits(100, 8).bits(0, 8).bits(30, 8); // profile_idc, constraints, level_idc
        w.ue(0).ue(1).ue(0).ue(0).bits(0, 1); // sps id, 4:2:0, 8-bit, 8-bit, no bypass
        w.bits(1, 1).bits(1, 1).se(delta); // scaling matrix present, list 0 present, delta
        if (8 + delta + 256) % 256 != 0 {
            // Not ended by a zero: the other 15 deltas of the 4x4 list, each 0.
            for _ in 1..16 {
                w.se(0);
            }
        }
        w.bits(0, 7); // lists 1-7 absent
        w.ue(0).ue(2).ue(1).bits(0, 1); // frame_num bits, POC type 2, 1 ref frame, no gaps
        w.ue(19).ue(14).bits(1, 1).bits(1, 1).bits(0, 1); // 20x15 MBs, frames, 8x8, no crop
        w.nal()
    }

    #[test]
    fn an_sps_scaling_delta_out_of_range_is_an_unknown_size_not_an_overflow() {
        // In range: the size is read past the scaling lists.
        assert_eq!(h264_sps_size(&sps_with_scaling_delta(-8)), Some((320, 240)));
        assert_eq!(h264_sps_size(&sps_with_scaling_delta(5)), Some((320, 240)));
        // 2^31 - 1 overflowed `last + delta + 256` (the `elementary` fuzz target's crash,
        // fuzz/regressions/elementary/); 128 is the first value H.264 does not allow.
        for delta in [i64::from(i32::MAX), 128, -129] {
            assert_eq!(
                h264_sps_size(&sps_with_scaling_delta(delta)),
                None,
                "{delta}"
            );
        }
        // And through the Annex B framing the `elementary` target drives.
        let mut framed = vec![0, 0, 0, 1];
        framed.extend(sps_with_scaling_delta(i64::from(i32::MAX)));
        assert_eq!(picture_size(&Codec::H264, &framed), None);
    }

    #[test]
    fn an_mpeg2_sequence_header_gives_the_picture_size() {
        // 160x120: 0x0a0 and 0x078.
        let frame = [0, 0, 1, 0xb3, 0x0a, 0x00, 0x78, 0x13];
        assert_eq!(picture_size(&Codec::Mpeg2Video, &frame), Some((160, 120)));
    }

    #[test]
    fn adts_framing_survives_leading_garbage() {
        let mut data = vec![0x12, 0x34];
        // ADTS, AAC LC, 44.1 kHz (index 4), mono, frame length 10 (7 header + 3 payload).
        let header = [0xff, 0xf1, 0x50, 0x40, 0x01, 0x5f, 0xfc];
        data.extend_from_slice(&header);
        data.extend_from_slice(&[1, 2, 3]);
        let (frames, asc) = split_adts(&data);
        assert_eq!(frames, vec![&[1u8, 2, 3][..]]);
        assert_eq!(asc, Some([0x12, 0x08]));
    }
}
