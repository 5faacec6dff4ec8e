//! Sample entries (`stsd`): the codec, picture size, sample rate and channels of a track, and
//! the decoder configuration of its video.

use super::boxes::{bad, child, children, fourcc, split_boxes, Mp4Box};
use crate::bytes::Cursor;
use crate::error::MediaError;
use crate::info::{Codec, PcmFormat, Track, TrackKind};

/// The decoder configuration (`avcC` body) of an `stsd`'s first visual sample entry.
pub(super) fn visual_config(stsd: &[u8]) -> Option<Vec<u8>> {
    let entries = split_boxes(stsd.get(8..)?).ok()?;
    let entry = entries.first()?;
    // A VisualSampleEntry's fixed fields take 78 bytes; its boxes follow.
    let extensions = split_boxes(entry.body.get(78..)?).ok()?;
    child(&extensions, b"avcC").map(|b| b.body.to_vec())
}

/// The first sample entry of an `stsd`, as a track description.
pub(super) fn parse_stsd(body: &[u8], kind: TrackKind) -> Result<Track, MediaError> {
    let mut c = Cursor::new(body);
    c.skip(8).ok_or_else(|| bad("stsd"))?;
    let entries = split_boxes(c.rest())?;
    let entry = entries.first().ok_or_else(|| bad("stsd without entries"))?;
    let body = entry.body;
    Ok(match kind {
        TrackKind::Video => {
            let mut t = Track::video(video_codec(&entry.kind, body));
            let mut c = Cursor::new(body);
            if c.skip(24).is_some() {
                t.width = c.u16_be().map(u32::from);
                t.height = c.u16_be().map(u32::from);
            }
            t
        }
        TrackKind::Audio => parse_audio_entry(&entry.kind, body),
    })
}

/// The codec of a visual sample entry.
fn video_codec(kind: &[u8; 4], body: &[u8]) -> Codec {
    match kind {
        b"avc1" | b"avc2" | b"avc3" | b"avc4" => Codec::H264,
        b"hvc1" | b"hev1" => Codec::H265,
        b"vp08" => Codec::Vp8,
        b"vp09" => Codec::Vp9,
        b"av01" => Codec::Av1,
        b"jpeg" | b"mjpa" | b"mjpb" | b"MJPG" => Codec::Mjpeg,
        b"mp2v" | b"m2v1" | b"mpg2" | b"xdv7" => Codec::Mpeg2Video,
        b"mp4v" => {
            let extensions = body
                .get(78..)
                .and_then(|b| split_boxes(b).ok())
                .unwrap_or_default();
            match child(&extensions, b"esds").and_then(|b| esds_object_type(b.body)) {
                Some(0x60..=0x65 | 0x6a) => Codec::Mpeg2Video,
                Some(0x6c) => Codec::Mjpeg,
                _ => Codec::Mpeg4Part2,
            }
        }
        other => Codec::Other(fourcc(other)),
    }
}

/// An audio sample entry (ISO and QuickTime versions 0, 1 and 2).
fn parse_audio_entry(kind: &[u8; 4], body: &[u8]) -> Track {
    let mut c = Cursor::new(body);
    let header = (|| {
        c.skip(8)?;
        let version = c.u16_be()?;
        c.skip(6)?;
        let channels = c.u16_be()?;
        let sample_size = c.u16_be()?;
        c.skip(4)?;
        let rate = c.u32_be()? >> 16;
        Some((version, channels, sample_size, rate))
    })();
    let Some((version, mut channels, mut bits, mut rate)) = header else {
        return Track::audio(Codec::Other(fourcc(kind)));
    };
    let mut lpcm_flags = None;
    let children_at = match version {
        1 => 28 + 16,
        2 => {
            // QuickTime v2 stores the real rate as f64 and the channel count after it.
            let mut c = Cursor::new(body.get(28..).unwrap_or_default());
            let fields = (|| {
                c.skip(4)?;
                let rate = f64::from_bits(c.u64_be()?);
                let ch = c.u32_be()?;
                c.skip(4)?;
                let bits = c.u32_be()?;
                let flags = c.u32_be()?;
                Some((rate, ch, bits, flags))
            })();
            if let Some((r, ch, b, flags)) = fields {
                if r.is_finite() && r > 0.0 && r < 10_000_000.0 {
                    rate = r.round() as u32;
                }
                channels = u16::try_from(ch).unwrap_or(0);
                bits = u16::try_from(b).unwrap_or(0);
                lpcm_flags = Some(flags);
            }
            28 + 36
        }
        _ => 28,
    };
    let extensions = body
        .get(children_at..)
        .and_then(|b| split_boxes(b).ok())
        .unwrap_or_default();
    let pcm = |bits: u16, float: bool, big_endian: bool| {
        Codec::Pcm(PcmFormat {
            bits,
            float,
            big_endian,
        })
    };
    let codec = match kind {
        b"mp4a" => {
            let esds = child(&extensions, b"esds").or_else(|| {
                child(
                    &children(child(&extensions, b"wave")).unwrap_or_default(),
                    b"esds",
                )
            });
            match esds.and_then(|b| esds_config(b.body)) {
                Some((0x69 | 0x6b, _)) => Codec::Mp3,
                Some((_, asc)) => {
                    if let Some((r, ch)) = asc.and_then(asc_rate_channels) {
                        rate = r;
                        if ch > 0 {
                            channels = ch;
                        }
                    }
                    Codec::Aac
                }
                None => Codec::Aac,
            }
        }
        b".mp3" | b"mp3 " => Codec::Mp3,
        b"Opus" => Codec::Opus,
        b"fLaC" => Codec::Flac,
        b"alac" => Codec::Alac,
        b"sowt" => pcm(bits, false, false),
        b"twos" => pcm(bits, false, true),
        b"raw " | b"NONE" => pcm(8, false, false),
        b"in24" => pcm(24, false, !little_endian_in_wave(&extensions)),
        b"in32" => pcm(32, false, !little_endian_in_wave(&extensions)),
        b"fl32" => pcm(32, true, !little_endian_in_wave(&extensions)),
        b"fl64" => pcm(64, true, !little_endian_in_wave(&extensions)),
        b"lpcm" => {
            let flags = lpcm_flags.unwrap_or(0);
            pcm(bits, flags & 0x1 != 0, flags & 0x2 != 0)
        }
        b"ipcm" | b"fpcm" => pcm(bits, kind == b"fpcm", true),
        other => Codec::Other(fourcc(other)),
    };
    let mut t = Track::audio(codec);
    t.channels = (channels > 0).then_some(channels);
    t.sample_rate = (rate > 0).then_some(rate);
    t
}

/// QuickTime `wave`/`enda`: whether the integer or float PCM is little-endian.
fn little_endian_in_wave(extensions: &[Mp4Box<'_>]) -> bool {
    let wave = children(child(extensions, b"wave")).unwrap_or_default();
    child(&wave, b"enda")
        .and_then(|b| b.body.get(1).copied())
        .is_some_and(|v| v != 0)
}

/// The `objectTypeIndication` of an `esds` (full box with an ES_Descriptor).
fn esds_object_type(body: &[u8]) -> Option<u8> {
    esds_config(body).map(|(oti, _)| oti)
}

/// The `objectTypeIndication` and DecoderSpecificInfo (for AAC: the AudioSpecificConfig) of an
/// `esds`.
fn esds_config(body: &[u8]) -> Option<(u8, Option<&[u8]>)> {
    let mut c = Cursor::new(body);
    c.skip(4)?;
    // The ES_Descriptor (tag 3) holds the DecoderConfigDescriptor (tag 4).
    if c.u8()? != 0x03 {
        return None;
    }
    descriptor_len(&mut c)?;
    c.skip(2)?;
    let flags = c.u8()?;
    if flags & 0x80 != 0 {
        c.skip(2)?;
    }
    if flags & 0x40 != 0 {
        let len = c.u8()?;
        c.skip(usize::from(len))?;
    }
    if flags & 0x20 != 0 {
        c.skip(2)?;
    }
    if c.u8()? != 0x04 {
        return None;
    }
    descriptor_len(&mut c)?;
    let oti = c.u8()?;
    // streamType, bufferSizeDB, maxBitrate, avgBitrate.
    if c.skip(12).is_none() || c.u8() != Some(0x05) {
        return Some((oti, None));
    }
    let len = descriptor_len(&mut c)? as usize;
    Some((oti, c.take(len)))
}

/// Sample rate and channel count from an AudioSpecificConfig (ISO 14496-3 1.6.2.1). The
/// sample entry's own channel field is often a fixed 2, so the configuration is what counts.
fn asc_rate_channels(asc: &[u8]) -> Option<(u32, u16)> {
    let mut bits = 0u64;
    for (i, &b) in asc.iter().take(8).enumerate() {
        bits |= u64::from(b) << (56 - 8 * i);
    }
    let mut pos = 0u32;
    let mut take = |n: u32| {
        let v = (bits << pos) >> (64 - n);
        pos += n;
        v as u32
    };
    if take(5) == 31 {
        take(6);
    }
    let index = take(4);
    let rate = if index == 15 {
        take(24)
    } else {
        crate::formats::es::aac_rate(index as u8)?
    };
    let channels = take(4) as u16;
    Some((rate, channels))
}

/// An MPEG-4 descriptor length: up to four 7-bit groups.
fn descriptor_len(c: &mut Cursor<'_>) -> Option<u32> {
    let mut len = 0u32;
    for _ in 0..4 {
        let b = c.u8()?;
        len = (len << 7) | u32::from(b & 0x7f);
        if b & 0x80 == 0 {
            break;
        }
    }
    Some(len)
}
