//! Elementary-stream framing for the live transport stream demuxer: ADTS and MPEG audio frame
//! headers and video keyframe detection.
//!
//! These are the file path's rules (`formats::es`, `formats::plain`), repeated here because
//! those modules are private to the file readers; the two must stay in step, which the live
//! tests check by comparing a stream's output with the file decode of the same bytes.

use crate::info::Codec;

/// The offsets just after each `00 00 01` start code of an Annex B / MPEG video payload, with
/// the end of each unit.
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

/// Whether an encoded frame is a random-access point, by looking inside it; `None` when the
/// codec is not one this function understands.
pub(crate) fn is_keyframe(codec: &Codec, frame: &[u8]) -> Option<bool> {
    match codec {
        Codec::Mjpeg => Some(true),
        Codec::H264 => {
            Some(start_code_units(frame).any(|u| u.first().is_some_and(|b| b & 0x1f == 5)))
        }
        Codec::H265 => Some(start_code_units(frame).any(|u| {
            u.first()
                .is_some_and(|b| (16..=23).contains(&((b >> 1) & 0x3f)))
        })),
        Codec::Mpeg2Video => start_code_units(frame)
            .find(|u| u.first() == Some(&0x00))
            .and_then(|u| u.get(2))
            .map(|b| (b >> 3) & 0x7 == 1),
        Codec::Mpeg4Part2 => start_code_units(frame)
            .find(|u| u.first() == Some(&0xb6))
            .and_then(|u| u.get(1))
            .map(|b| b >> 6 == 0),
        _ => None,
    }
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

/// One MPEG audio frame header: (frame length in bytes, samples per frame, sample rate).
pub(crate) fn mpeg_audio_header(h: [u8; 4]) -> Option<(usize, u32, u32)> {
    if h[0] != 0xff || h[1] & 0xe0 != 0xe0 {
        return None;
    }
    let version = (h[1] >> 3) & 0x3; // 0: 2.5, 2: 2, 3: 1
    let layer = (h[1] >> 1) & 0x3; // 1: III, 2: II, 3: I
    let bitrate_index = usize::from(h[2] >> 4);
    let rate_index = usize::from((h[2] >> 2) & 0x3);
    let padding = u32::from((h[2] >> 1) & 0x1);
    if version == 1 || layer == 0 || bitrate_index == 0 || bitrate_index == 15 || rate_index == 3 {
        return None;
    }
    let mpeg1 = version == 3;
    const RATES: [u32; 3] = [44_100, 48_000, 32_000];
    let rate = RATES[rate_index]
        >> (if mpeg1 {
            0
        } else if version == 2 {
            1
        } else {
            2
        });
    const V1_L1: [u32; 15] = [
        0, 32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448,
    ];
    const V1_L2: [u32; 15] = [
        0, 32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384,
    ];
    const V1_L3: [u32; 15] = [
        0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320,
    ];
    const V2_L1: [u32; 15] = [
        0, 32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256,
    ];
    const V2_L23: [u32; 15] = [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160];
    let kbps = match (mpeg1, layer) {
        (true, 3) => V1_L1[bitrate_index],
        (true, 2) => V1_L2[bitrate_index],
        (true, _) => V1_L3[bitrate_index],
        (false, 3) => V2_L1[bitrate_index],
        (false, _) => V2_L23[bitrate_index],
    };
    let bps = kbps * 1000;
    let (len, samples) = match layer {
        3 => ((12 * bps / rate + padding) * 4, 384),
        2 => (144 * bps / rate + padding, 1152),
        _ if mpeg1 => (144 * bps / rate + padding, 1152),
        _ => (72 * bps / rate + padding, 576),
    };
    (len >= 4).then_some((len as usize, samples, rate))
}

/// The layer number (1, 2 or 3) of an MPEG audio frame header's second byte.
pub(crate) fn mpeg_audio_layer(h1: u8) -> u8 {
    4 - ((h1 >> 1) & 0x3)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_h264_idr_is_a_keyframe_and_a_p_slice_is_not() {
        let idr = [0, 0, 0, 1, 0x09, 0xf0, 0, 0, 1, 0x65, 0x88];
        assert_eq!(is_keyframe(&Codec::H264, &idr), Some(true));
        assert_eq!(
            is_keyframe(&Codec::H264, &[0, 0, 0, 1, 0x41, 0x9a]),
            Some(false)
        );
    }

    #[test]
    fn an_adts_header_gives_its_frame_length() {
        // AAC LC, 44.1 kHz (index 4), mono, frame length 10.
        let header = [0xff, 0xf1, 0x50, 0x40, 0x01, 0x5f, 0xfc];
        assert_eq!(adts_header(&header), Some((7, 10, 1, 4, 1)));
    }
}
