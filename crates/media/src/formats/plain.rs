//! Single-stream audio files that Symphonia demuxes whole: WAV, FLAC, MP3 and Ogg.

use std::io::Cursor as IoCursor;

use symphonia::core::codecs::audio::well_known::*;
use symphonia::core::codecs::audio::AudioCodecId;
use symphonia::core::codecs::CodecParameters;
use symphonia::core::errors::Error as SymError;
use symphonia::core::formats::{FormatOptions, FormatReader, Track as SymTrack};
use symphonia::core::io::MediaSourceStream;
use symphonia::default::formats::{FlacReader, MpaReader, OggReader, WavReader};

use super::ContainerReader;
use crate::audio::opus::OpusHead;
use crate::audio::{AudioCodec, AudioTrack, SymphoniaPackets};
use crate::error::MediaError;
use crate::info::{Codec, Container, PcmFormat, Track};

/// A WAV, FLAC, MP3 or Ogg file, opened with the matching Symphonia reader.
pub(crate) struct PlainReader<'a> {
    bytes: &'a [u8],
    container: Container,
    /// Tracks as Symphonia sees them, read once at open.
    sym_tracks: Vec<SymTrack>,
    /// Duration from the reader's metadata or, for MPEG audio, from a frame scan.
    duration: Option<f64>,
}

impl<'a> PlainReader<'a> {
    /// Opens `bytes` as `container`.
    pub(crate) fn open(bytes: &'a [u8], container: Container) -> Result<Self, MediaError> {
        let reader = make_reader(bytes, container)?;
        let sym_tracks = reader.tracks().to_vec();
        let audio = sym_tracks
            .iter()
            .find(|t| matches!(t.codec_params, Some(CodecParameters::Audio(_))));
        let mut duration = audio.and_then(track_seconds);
        if container == Container::Mp3 && duration.is_none() {
            duration = mpeg_audio_scan(bytes).map(|(frames, rate)| frames as f64 / f64::from(rate));
        }
        Ok(Self {
            bytes,
            container,
            sym_tracks,
            duration,
        })
    }
}

/// A Symphonia reader of the given container over `bytes`.
fn make_reader(
    bytes: &[u8],
    container: Container,
) -> Result<Box<dyn FormatReader + '_>, MediaError> {
    let mss = MediaSourceStream::new(Box::new(IoCursor::new(bytes)), Default::default());
    let opts = FormatOptions::default();
    let result: Result<Box<dyn FormatReader + '_>, SymError> =
        crate::guard::catch(|| match container {
            Container::Wav => {
                WavReader::try_new(mss, opts).map(|r| Box::new(r) as Box<dyn FormatReader>)
            }
            Container::Flac => {
                FlacReader::try_new(mss, opts).map(|r| Box::new(r) as Box<dyn FormatReader>)
            }
            Container::Ogg => {
                OggReader::try_new(mss, opts).map(|r| Box::new(r) as Box<dyn FormatReader>)
            }
            _ => MpaReader::try_new(mss, opts).map(|r| Box::new(r) as Box<dyn FormatReader>),
        })?;
    result.map_err(|e| match e {
        SymError::Unsupported(what) => MediaError::unsupported(what),
        e => MediaError::unreadable(Some(container), e.to_string()),
    })
}

/// Playable seconds of a Symphonia track (delay and padding excluded), if it states them.
fn track_seconds(t: &SymTrack) -> Option<f64> {
    if let (Some(frames), Some(CodecParameters::Audio(p))) = (t.num_frames, &t.codec_params) {
        if let Some(rate) = p.sample_rate.filter(|&r| r > 0) {
            return Some(frames as f64 / f64::from(rate));
        }
    }
    let (dur, tb) = (t.duration?, t.time_base?);
    Some(dur.get() as f64 * f64::from(tb.numer.get()) / f64::from(tb.denom.get()))
}

/// The crate's name for a Symphonia audio codec.
pub(crate) fn codec_from_symphonia(id: AudioCodecId) -> Codec {
    let pcm = |bits, float, big_endian| {
        Codec::Pcm(PcmFormat {
            bits,
            float,
            big_endian,
        })
    };
    match id {
        CODEC_ID_AAC => Codec::Aac,
        CODEC_ID_MP3 => Codec::Mp3,
        CODEC_ID_MP2 => Codec::Mp2,
        CODEC_ID_FLAC => Codec::Flac,
        CODEC_ID_VORBIS => Codec::Vorbis,
        CODEC_ID_OPUS => Codec::Opus,
        CODEC_ID_ALAC => Codec::Alac,
        CODEC_ID_PCM_U8 | CODEC_ID_PCM_S8 => pcm(8, false, false),
        CODEC_ID_PCM_S16LE => pcm(16, false, false),
        CODEC_ID_PCM_S16BE => pcm(16, false, true),
        CODEC_ID_PCM_S24LE => pcm(24, false, false),
        CODEC_ID_PCM_S24BE => pcm(24, false, true),
        CODEC_ID_PCM_S32LE => pcm(32, false, false),
        CODEC_ID_PCM_S32BE => pcm(32, false, true),
        CODEC_ID_PCM_F32LE => pcm(32, true, false),
        CODEC_ID_PCM_F32BE => pcm(32, true, true),
        CODEC_ID_PCM_F64LE => pcm(64, true, false),
        CODEC_ID_PCM_F64BE => pcm(64, true, true),
        other => Codec::Other(other.to_string()),
    }
}

impl<'a> ContainerReader<'a> for PlainReader<'a> {
    fn container(&self) -> Container {
        self.container
    }

    fn tracks(&self) -> Vec<Track> {
        self.sym_tracks
            .iter()
            .filter_map(|t| match &t.codec_params {
                Some(CodecParameters::Audio(p)) => {
                    let mut track = Track::audio(codec_from_symphonia(p.codec));
                    track.sample_rate = p.sample_rate;
                    track.channels = p.channels.as_ref().map(|c| c.count() as u16);
                    Some(track)
                }
                _ => None,
            })
            .collect()
    }

    fn duration(&self) -> Option<f64> {
        self.duration
    }

    fn audio_track(&self) -> Result<AudioTrack<'a>, MediaError> {
        let reader = make_reader(self.bytes, self.container)?;
        let (track_id, params) = reader
            .tracks()
            .iter()
            .find_map(|t| match &t.codec_params {
                Some(CodecParameters::Audio(p)) => Some((t.id, p.clone())),
                _ => None,
            })
            .ok_or(MediaError::NoAudioStream)?;
        let codec = codec_from_symphonia(params.codec);
        if !codec.is_decodable_audio() {
            return Err(MediaError::unsupported(codec.to_string()));
        }
        let is_opus = params.codec == CODEC_ID_OPUS;
        let (codec, skip) = if is_opus {
            // RFC 7845: the pre-skip is dropped from the decoder output; Symphonia's Ogg reader
            // marks the end trim from the last granule position on the packets.
            let head = params.extra_data.as_deref().and_then(OpusHead::parse);
            let channels = head.map_or(1, |h| h.channels);
            let pre_skip = head.map_or(0, |h| u64::from(h.pre_skip));
            (
                AudioCodec::Opus {
                    channels: usize::from(channels),
                },
                (pre_skip, 48_000),
            )
        } else {
            (AudioCodec::Symphonia(params), (0, 1))
        };
        Ok(AudioTrack {
            codec,
            packets: Box::new(SymphoniaPackets {
                reader,
                track_id,
                clear_trim_start: is_opus,
            }),
            skip,
            lead: (0, 1),
        })
    }
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

/// Whether `layer` of a frame header is Layer II (`true`) or III (`false`), if it is either.
pub(crate) fn mpeg_audio_layer(h1: u8) -> u8 {
    4 - ((h1 >> 1) & 0x3)
}

/// The length of an ID3v2 tag at the start, if there is one.
fn id3v2_len(b: &[u8]) -> usize {
    if b.len() >= 10 && &b[..3] == b"ID3" {
        let size = b[6..10]
            .iter()
            .fold(0usize, |acc, &x| (acc << 7) | usize::from(x & 0x7f));
        let footer = if b[5] & 0x10 != 0 { 10 } else { 0 };
        10 + size + footer
    } else {
        0
    }
}

/// Whether the input is MPEG audio: after an optional ID3v2 tag, three consecutive frame headers
/// that agree on version, layer and rate (one stray `0xFFE` sync in random bytes does not pass).
pub(crate) fn looks_like_mpeg_audio(b: &[u8]) -> bool {
    let mut off = id3v2_len(b);
    let mut first: Option<(u8, u32)> = None;
    for _ in 0..3 {
        let Some(h) = b
            .get(off..off + 4)
            .and_then(|s| <[u8; 4]>::try_from(s).ok())
        else {
            // A file of one or two frames ends here; accept it only if it had a tag.
            return first.is_some() && off >= b.len() && id3v2_len(b) > 0;
        };
        let Some((len, _, rate)) = mpeg_audio_header(h) else {
            return false;
        };
        let key = (h[1] & 0x1e, rate);
        if first.is_some_and(|f| f != (key.0, key.1)) {
            return false;
        }
        first = Some(key);
        off += len;
    }
    true
}

/// Counts frames of an MPEG audio stream: (total samples, sample rate). Stops at the first byte
/// that is not a frame header (a trailing ID3v1 tag, garbage).
fn mpeg_audio_scan(b: &[u8]) -> Option<(u64, u32)> {
    let mut off = id3v2_len(b);
    let mut total = 0u64;
    let mut rate = 0;
    while let Some(h) = b
        .get(off..off + 4)
        .and_then(|s| <[u8; 4]>::try_from(s).ok())
    {
        let Some((len, samples, r)) = mpeg_audio_header(h) else {
            break;
        };
        total += u64::from(samples);
        rate = r;
        off += len;
    }
    (rate > 0).then_some((total, rate))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_layer_three_header_is_decoded() {
        // MPEG-1 Layer III, 128 kb/s, 44.1 kHz, no padding: 417-byte frames of 1152 samples.
        assert_eq!(
            mpeg_audio_header([0xff, 0xfb, 0x90, 0x00]),
            Some((417, 1152, 44_100))
        );
        assert_eq!(mpeg_audio_layer(0xfb), 3);
        // MPEG-1 Layer II, 64 kb/s, 48 kHz: 192-byte frames.
        assert_eq!(
            mpeg_audio_header([0xff, 0xfd, 0x44, 0x00]),
            Some((192, 1152, 48_000))
        );
        assert_eq!(mpeg_audio_layer(0xfd), 2);
    }

    #[test]
    fn a_lone_sync_word_is_not_mpeg_audio() {
        let mut b = vec![0u8; 2000];
        b[..4].copy_from_slice(&[0xff, 0xfb, 0x90, 0x00]);
        assert!(!looks_like_mpeg_audio(&b));
    }
}
