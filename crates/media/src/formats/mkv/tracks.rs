//! Matroska track entries: what a TrackEntry says, and how its audio is to be decoded.

use super::ebml::*;
use crate::audio::opus::OpusHead;
use crate::audio::params::symphonia_params;
use crate::audio::{AudioCodec, AudioSetup};
use crate::bytes::Cursor;
use crate::error::MediaError;
use crate::info::{Codec, Container, PcmFormat, Track, TrackKind};

/// What a track entry says.
#[derive(Debug, Clone)]
pub(super) struct TrackEntry {
    pub(super) number: u64,
    pub(super) track: Track,
    pub(super) codec_id: String,
    pub(super) codec_private: Option<Vec<u8>>,
    pub(super) codec_delay_ns: u64,
    pub(super) default_duration_ns: Option<u64>,
    pub(super) encoded: bool,
}

pub(super) fn bad(reason: impl Into<String>) -> MediaError {
    MediaError::unreadable(Some(Container::Matroska), reason)
}

/// The children of a master element that must be whole: a malformed one is an error.
fn strict_children(body: &[u8]) -> Result<Vec<(u32, &[u8])>, MediaError> {
    children(body)
        .collect::<Result<Vec<_>, ()>>()
        .map_err(|()| bad("a malformed element in a track entry"))
}

/// The entries of a Tracks element that are video or audio, in order.
pub(super) fn parse_tracks(body: &[u8]) -> Result<Vec<TrackEntry>, MediaError> {
    let mut out = Vec::new();
    for (id, entry) in strict_children(body)? {
        if id == ID_TRACK_ENTRY {
            out.extend(parse_track(entry)?);
        }
    }
    Ok(out)
}

/// One TrackEntry, or `None` for a track that is neither video nor audio.
fn parse_track(body: &[u8]) -> Result<Option<TrackEntry>, MediaError> {
    let kids = strict_children(body)?;
    let find = |id| kids.iter().find(|k| k.0 == id).map(|k| k.1);
    let Some(number) = find(ID_TRACK_NUMBER).and_then(uint) else {
        return Ok(None);
    };
    let kind = match find(ID_TRACK_TYPE).and_then(uint) {
        Some(1) => TrackKind::Video,
        Some(2) => TrackKind::Audio,
        _ => return Ok(None),
    };
    let codec_id = find(ID_CODEC_ID).map(string).unwrap_or_default();
    let default_duration_ns = find(ID_DEFAULT_DURATION).and_then(uint).filter(|&d| d > 0);
    let track = match kind {
        TrackKind::Video => {
            let video = find(ID_VIDEO)
                .map(strict_children)
                .transpose()?
                .unwrap_or_default();
            let vfind = |id| video.iter().find(|k| k.0 == id).and_then(|k| uint(k.1));
            let mut t = Track::video(video_codec(&codec_id));
            t.width = vfind(ID_PIXEL_WIDTH).and_then(|v| u32::try_from(v).ok());
            t.height = vfind(ID_PIXEL_HEIGHT).and_then(|v| u32::try_from(v).ok());
            t.frame_rate = default_duration_ns.map(|d| 1e9 / d as f64);
            t
        }
        TrackKind::Audio => {
            let audio = find(ID_AUDIO)
                .map(strict_children)
                .transpose()?
                .unwrap_or_default();
            let afind = |id| audio.iter().find(|k| k.0 == id).map(|k| k.1);
            let bit_depth = afind(ID_BIT_DEPTH)
                .and_then(uint)
                .and_then(|b| u16::try_from(b).ok());
            let mut t = Track::audio(audio_codec(&codec_id, bit_depth));
            let rate = afind(ID_SAMPLING_FREQUENCY)
                .and_then(float)
                .unwrap_or(8000.0);
            t.sample_rate = (1.0..1e7).contains(&rate).then(|| rate.round() as u32);
            t.channels = Some(
                afind(ID_CHANNELS)
                    .and_then(uint)
                    .and_then(|c| u16::try_from(c).ok())
                    .unwrap_or(1),
            );
            t
        }
    };
    Ok(Some(TrackEntry {
        number,
        track,
        codec_id,
        codec_private: find(ID_CODEC_PRIVATE).map(<[u8]>::to_vec),
        codec_delay_ns: find(ID_CODEC_DELAY).and_then(uint).unwrap_or(0),
        default_duration_ns,
        encoded: find(ID_CONTENT_ENCODINGS).is_some(),
    }))
}

fn video_codec(id: &str) -> Codec {
    match id {
        "V_MPEG4/ISO/AVC" => Codec::H264,
        "V_MPEGH/ISO/HEVC" => Codec::H265,
        "V_VP8" => Codec::Vp8,
        "V_VP9" => Codec::Vp9,
        "V_AV1" => Codec::Av1,
        "V_MJPEG" => Codec::Mjpeg,
        "V_MPEG1" | "V_MPEG2" => Codec::Mpeg2Video,
        id if id.starts_with("V_MPEG4/ISO/") => Codec::Mpeg4Part2,
        other => Codec::Other(other.to_string()),
    }
}

fn audio_codec(id: &str, bits: Option<u16>) -> Codec {
    let pcm = |float: bool, big_endian: bool| {
        Codec::Pcm(PcmFormat {
            bits: bits.unwrap_or(if float { 32 } else { 16 }),
            float,
            big_endian,
        })
    };
    match id {
        "A_OPUS" => Codec::Opus,
        "A_VORBIS" => Codec::Vorbis,
        "A_FLAC" => Codec::Flac,
        "A_MPEG/L3" => Codec::Mp3,
        "A_MPEG/L2" => Codec::Mp2,
        "A_ALAC" => Codec::Alac,
        "A_PCM/INT/LIT" => pcm(false, false),
        "A_PCM/INT/BIG" => pcm(false, true),
        "A_PCM/FLOAT/IEEE" => pcm(true, false),
        id if id.starts_with("A_AAC") => Codec::Aac,
        other => Codec::Other(other.to_string()),
    }
}

/// How `track` (an audio entry) decodes, and the rate of the decoder's output, which turns
/// `DiscardPadding` into frames. The lead is left at zero: the first block's time sets it.
///
/// Errors: [`MediaError::UnsupportedCodec`] for a codec that cannot be decoded or a track whose
/// frames are compressed or encrypted (`ContentEncodings`); [`MediaError::Unreadable`] for
/// Vorbis or FLAC without the headers their decoders need.
pub(super) fn audio_setup(track: &TrackEntry) -> Result<(AudioSetup, u32), MediaError> {
    let codec = &track.track.codec;
    if !codec.is_decodable_audio() || track.encoded {
        return Err(MediaError::unsupported(format!(
            "{codec} ({})",
            track.codec_id
        )));
    }
    let rate = track.track.sample_rate.unwrap_or(0);
    let channels = track.track.channels.unwrap_or(1);
    let private = track.codec_private.as_deref();
    let (codec, skip, out_rate) = match codec {
        Codec::Opus => {
            let head = private.and_then(OpusHead::parse);
            let channels = head.map_or(channels, |h| u16::from(h.channels));
            // CodecDelay is the container's statement of the pre-skip; the OpusHead value is
            // the fallback for muxers that leave it out.
            let skip = if track.codec_delay_ns > 0 {
                (track.codec_delay_ns.min(u64::from(u32::MAX)), 1_000_000_000)
            } else {
                (u64::from(head.map_or(0, |h| h.pre_skip)), 48_000)
            };
            (
                AudioCodec::Opus {
                    channels: usize::from(channels),
                },
                skip,
                48_000,
            )
        }
        _ => {
            let extra = match codec {
                Codec::Vorbis => Some(
                    private
                        .and_then(vorbis_extra)
                        .ok_or_else(|| bad("Vorbis headers"))?,
                ),
                Codec::Flac => Some(
                    private
                        .and_then(flac_extra)
                        .ok_or_else(|| bad("FLAC STREAMINFO"))?,
                ),
                _ => private.map(Box::from),
            };
            (
                AudioCodec::Symphonia(symphonia_params(codec, rate, channels, extra)?),
                (0, 1),
                rate,
            )
        }
    };
    Ok((
        AudioSetup {
            codec,
            skip,
            lead: (0, 1),
        },
        out_rate,
    ))
}

/// Symphonia's Vorbis decoder takes the identification and setup headers back to back; Matroska
/// stores all three headers Xiph-laced.
fn vorbis_extra(private: &[u8]) -> Option<Box<[u8]>> {
    let mut c = Cursor::new(private);
    let sizes = lace_sizes(&mut c, 1)?;
    let mut ident = None;
    let mut setup = None;
    for size in sizes {
        let packet = c.take(size)?;
        match packet.first() {
            Some(1) => ident = Some(packet),
            Some(5) => setup = Some(packet),
            _ => {}
        }
    }
    Some([ident?, setup?].concat().into_boxed_slice())
}

/// Symphonia's FLAC decoder takes the STREAMINFO block body; Matroska stores `fLaC` and every
/// metadata block.
fn flac_extra(private: &[u8]) -> Option<Box<[u8]>> {
    let mut c = Cursor::new(private.strip_prefix(b"fLaC")?);
    loop {
        let header = c.u8()?;
        let len = c.u24_be()? as usize;
        let body = c.take(len)?;
        if header & 0x7f == 0 {
            return Some(body.into());
        }
        if header & 0x80 != 0 {
            return None;
        }
    }
}
