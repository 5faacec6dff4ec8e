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
        if container == Container::Wav {
            // What the file holds, not what its header claims: a recorder that crashed or a
            // capture still being written leaves sizes larger than the data (or the 0 /
            // 0xFFFFFFFF of a stream written to a pipe); ffmpeg and Praat read what is there.
            if let Some(held) = wav_held_seconds(bytes) {
                duration = Some(duration.map_or(held, |d| d.min(held)));
            }
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
    let source: Box<dyn symphonia::core::io::MediaSource + '_> = match container {
        Container::Wav => match wav_header_as_held(bytes) {
            Some(head) => Box::new(Patched::new(head, bytes)),
            None => Box::new(IoCursor::new(bytes)),
        },
        _ => Box::new(IoCursor::new(bytes)),
    };
    let mss = MediaSourceStream::new(source, Default::default());
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

/// Where a RIFF/WAVE file's sample data lies: (offset of the `data` chunk's header, bytes of data
/// present up to its declared size, sample rate, block size). `None` when the chunks cannot be
/// found. Hand-written because Symphonia does not expose the data offset; the walk reads only
/// chunk headers.
fn wav_layout(bytes: &[u8]) -> Option<(usize, u64, u32, u16)> {
    if bytes.len() < 12 || &bytes[..4] != b"RIFF" || &bytes[8..12] != b"WAVE" {
        return None;
    }
    let u32_at = |at: usize| -> Option<u32> {
        Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
    };
    let mut at = 12usize;
    let mut format: Option<(u32, u16)> = None;
    while at.checked_add(8)? <= bytes.len() {
        let id = &bytes[at..at + 4];
        let size = u32_at(at + 4)?;
        let body = at + 8;
        if id == b"fmt " {
            let rate = u32_at(body + 4)?;
            let align = u16::from_le_bytes(bytes.get(body + 12..body + 14)?.try_into().ok()?);
            format = Some((rate, align));
        } else if id == b"data" {
            let (rate, align) = format.filter(|&(r, a)| r > 0 && a > 0)?;
            let present = (bytes.len() - body) as u64;
            // 0 and 0xFFFFFFFF: the size of a stream written to a pipe or never finalised.
            let declared = match size {
                0 | u32::MAX => present,
                n => u64::from(n),
            };
            let held = declared.min(present) / u64::from(align) * u64::from(align);
            return Some((at, held, rate, align));
        }
        // Chunks are padded to an even size.
        let padded = usize::try_from(size)
            .ok()?
            .checked_add(usize::from(size % 2 == 1))?;
        at = body.checked_add(padded)?;
    }
    None
}

/// The header of a WAV file (everything up to the sample data) with its `RIFF` and `data` sizes
/// set to what the file holds, when they say otherwise; Symphonia refuses a zero `RIFF` size and
/// trusts the declared data size.
fn wav_header_as_held(bytes: &[u8]) -> Option<Vec<u8>> {
    let (data_at, held, _, _) = wav_layout(bytes)?;
    let riff = u32::try_from((data_at as u64 + 8 + held) - 8).ok()?;
    let data = u32::try_from(held).ok()?;
    let declared_riff = u32::from_le_bytes(bytes[4..8].try_into().ok()?);
    let declared_data = u32::from_le_bytes(bytes[data_at + 4..data_at + 8].try_into().ok()?);
    if declared_riff == riff && declared_data == data {
        return None;
    }
    let mut head = bytes[..data_at + 8].to_vec();
    head[4..8].copy_from_slice(&riff.to_le_bytes());
    head[data_at + 4..data_at + 8].copy_from_slice(&data.to_le_bytes());
    Some(head)
}

/// A byte source that reads `head` in place of the first `head.len()` bytes of `rest`.
struct Patched<'a> {
    head: Vec<u8>,
    rest: &'a [u8],
    pos: u64,
}

impl<'a> Patched<'a> {
    fn new(head: Vec<u8>, rest: &'a [u8]) -> Self {
        Self { head, rest, pos: 0 }
    }
}

impl std::io::Read for Patched<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let pos = usize::try_from(self.pos).unwrap_or(usize::MAX);
        let source = if pos < self.head.len() {
            &self.head[pos..]
        } else {
            self.rest.get(pos..).unwrap_or_default()
        };
        let n = source.len().min(buf.len());
        buf[..n].copy_from_slice(&source[..n]);
        self.pos += n as u64;
        Ok(n)
    }
}

impl std::io::Seek for Patched<'_> {
    fn seek(&mut self, to: std::io::SeekFrom) -> std::io::Result<u64> {
        let len = self.rest.len() as i128;
        let target = match to {
            std::io::SeekFrom::Start(n) => i128::from(n),
            std::io::SeekFrom::End(n) => len + i128::from(n),
            std::io::SeekFrom::Current(n) => i128::from(self.pos) + i128::from(n),
        };
        self.pos = u64::try_from(target).map_err(|_| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "seek before the start")
        })?;
        Ok(self.pos)
    }
}

impl symphonia::core::io::MediaSource for Patched<'_> {
    fn is_seekable(&self) -> bool {
        true
    }

    fn byte_len(&self) -> Option<u64> {
        Some(self.rest.len() as u64)
    }
}

/// Seconds of sample data a RIFF/WAVE file actually holds (see [`wav_layout`]).
fn wav_held_seconds(bytes: &[u8]) -> Option<f64> {
    let (_, held, rate, align) = wav_layout(bytes)?;
    Some((held / u64::from(align)) as f64 / f64::from(rate))
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
