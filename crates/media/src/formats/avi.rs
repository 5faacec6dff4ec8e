//! AVI: a small RIFF reader of this crate's own.
//!
//! No crate on crates.io reads AVI usably (the few that exist are unmaintained or cannot list
//! chunks with their index flags), and the format is simple: `hdrl` describes the streams, `movi`
//! holds `##dc`/`##wb` chunks, and `idx1` flags the keyframes. Audio chunks are PCM (fed to
//! Symphonia's PCM decoder) or MPEG audio (re-framed and fed to its MP3/MP2 decoder).

use symphonia::core::packet::Packet;
use symphonia::core::units::{Duration as SymDuration, Timestamp};

use super::es;
use super::ContainerReader;
use crate::audio::params::symphonia_params;
use crate::audio::{AudioCodec, AudioTrack, VecPackets};
use crate::bytes::{le_u16, le_u32, Cursor};
use crate::error::MediaError;
use crate::info::{
    Codec, Container, EncodedVideo, EncodedVideoFrame, PcmFormat, Track, TrackKind, VideoFrameInfo,
};

/// PCM packets are cut to this many frames (the chunking of the file is arbitrary).
const PCM_FRAMES_PER_PACKET: usize = 4096;
/// `AVIIF_KEYFRAME` in `idx1` entries.
const AVIIF_KEYFRAME: u32 = 0x10;

fn bad(reason: impl Into<String>) -> MediaError {
    MediaError::unreadable(Some(Container::Avi), reason)
}

/// One RIFF chunk: FourCC and body (LIST chunks: form type then children).
#[derive(Debug, Clone, Copy)]
struct Chunk<'a> {
    id: [u8; 4],
    body: &'a [u8],
    /// Offset of the chunk header from the start of its parent's body.
    offset: usize,
}

/// Splits a RIFF body into chunks (bodies are padded to even length). A final chunk that runs
/// past the end is cut to what is there: truncated AVI files still have their first frames.
fn split_chunks(data: &[u8]) -> Vec<Chunk<'_>> {
    let mut out = Vec::new();
    let mut c = Cursor::new(data);
    while c.remaining() >= 8 {
        let offset = c.pos();
        let (Some(id), Some(size)) = (c.array::<4>(), c.u32_le()) else {
            break;
        };
        let size = (size as usize).min(c.remaining());
        let Some(body) = c.take(size) else { break };
        if size % 2 == 1 {
            let _ = c.skip(1);
        }
        out.push(Chunk { id, body, offset });
    }
    out
}

/// The list type and children of a `LIST` chunk.
fn list<'a>(chunk: &Chunk<'a>) -> Option<([u8; 4], Vec<Chunk<'a>>)> {
    if &chunk.id != b"LIST" || chunk.body.len() < 4 {
        return None;
    }
    let kind: [u8; 4] = chunk.body[..4].try_into().ok()?;
    Some((kind, split_chunks(&chunk.body[4..])))
}

/// One stream of the `hdrl`.
#[derive(Debug, Clone)]
struct Stream {
    track: Track,
    scale: u32,
    rate: u32,
    start: u32,
    length: u32,
}

/// A chunk of `movi` that belongs to a stream.
#[derive(Debug, Clone, Copy)]
struct DataChunk<'a> {
    stream: usize,
    data: &'a [u8],
    /// From `idx1`; `None` when the file has no index.
    keyframe: Option<bool>,
}

/// A parsed AVI file.
pub(crate) struct AviReader<'a> {
    /// Streams by stream number; `None` for streams that are neither video nor audio.
    streams: Vec<Option<Stream>>,
    micros_per_frame: u32,
    total_frames: u32,
    chunks: Vec<DataChunk<'a>>,
}

impl<'a> AviReader<'a> {
    /// Parses `hdrl`, `movi` and `idx1`.
    pub(crate) fn open(bytes: &'a [u8]) -> Result<Self, MediaError> {
        let riff = bytes.get(12..).ok_or_else(|| bad("RIFF header"))?;
        // The RIFF size is often wrong in files that were cut; the chunks themselves are used.
        let top = split_chunks(riff);
        let hdrl = top
            .iter()
            .filter_map(list)
            .find(|(kind, _)| kind == b"hdrl")
            .ok_or_else(|| bad("no hdrl list"))?
            .1;
        let avih = hdrl
            .iter()
            .find(|c| &c.id == b"avih")
            .ok_or_else(|| bad("no avih"))?;
        let micros_per_frame = le_u32(avih.body, 0).unwrap_or(0);
        let total_frames = le_u32(avih.body, 16).unwrap_or(0);
        let mut streams = Vec::new();
        for (_, strl) in hdrl.iter().filter_map(list).filter(|(k, _)| k == b"strl") {
            let strh = strl
                .iter()
                .find(|c| &c.id == b"strh")
                .ok_or_else(|| bad("no strh"))?;
            let strf = strl
                .iter()
                .find(|c| &c.id == b"strf")
                .map_or(&[][..], |c| c.body);
            streams.push(parse_stream(strh.body, strf)?);
        }
        let (movi_offset, movi) = top
            .iter()
            .find_map(|c| {
                list(c)
                    .filter(|(k, _)| k == b"movi")
                    .map(|(_, kids)| (c.offset, kids))
            })
            .ok_or_else(|| bad("no movi list"))?;
        let mut chunks = Vec::new();
        let mut positions = Vec::new();
        collect_movi(&movi, 0, &mut chunks, &mut positions);
        if let Some(idx1) = top.iter().find(|c| &c.id == b"idx1") {
            apply_index(idx1.body, movi_offset, &positions, &mut chunks);
        }
        Ok(Self {
            streams,
            micros_per_frame,
            total_frames,
            chunks,
        })
    }

    /// Seconds per video frame: the stream's rate, else the main header's.
    fn frame_time(&self, stream: &Stream) -> Result<f64, MediaError> {
        if stream.scale > 0 && stream.rate > 0 {
            Ok(f64::from(stream.scale) / f64::from(stream.rate))
        } else if self.micros_per_frame > 0 {
            Ok(f64::from(self.micros_per_frame) / 1e6)
        } else {
            Err(bad("video stream without a frame rate"))
        }
    }

    fn first(&self, kind: TrackKind) -> Option<(usize, &Stream)> {
        self.real_streams().find(|(_, s)| s.track.kind == kind)
    }

    /// Video and audio streams with their stream numbers.
    fn real_streams(&self) -> impl Iterator<Item = (usize, &Stream)> {
        self.streams
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.as_ref().map(|s| (i, s)))
    }
}

/// Walks `movi` (and its `rec ` lists) collecting stream chunks in file order, with each chunk's
/// offset relative to the start of the `movi` list's data (what `idx1` uses).
fn collect_movi<'a>(
    kids: &[Chunk<'a>],
    base: usize,
    out: &mut Vec<DataChunk<'a>>,
    pos: &mut Vec<usize>,
) {
    for c in kids {
        if let Some((kind, sub)) = list(c) {
            if &kind == b"rec " {
                // Offsets inside `rec `: past its header (8) and form type (4).
                collect_movi(&sub, base + c.offset + 12, out, pos);
            }
            continue;
        }
        let id = c.id;
        let stream = match (id[0], id[1]) {
            (a @ b'0'..=b'9', b @ b'0'..=b'9') => {
                usize::from(a - b'0') * 10 + usize::from(b - b'0')
            }
            _ => continue,
        };
        if !matches!(&id[2..], b"dc" | b"db" | b"wb") {
            continue;
        }
        out.push(DataChunk {
            stream,
            data: c.body,
            keyframe: None,
        });
        // +4: offsets in `movi` count from its form type.
        pos.push(base + c.offset + 4);
    }
}

/// Marks keyframes from `idx1`. Index offsets are relative to the `movi` form type or, in some
/// files, absolute; both are tried.
fn apply_index(idx: &[u8], movi_offset: usize, positions: &[usize], chunks: &mut [DataChunk<'_>]) {
    let entries: Vec<(u32, u32)> = idx
        .chunks_exact(16)
        .filter_map(|e| Some((le_u32(e, 4)?, le_u32(e, 8)?)))
        .collect();
    let Some(&(_, first_offset)) = entries.first() else {
        return;
    };
    // Absolute offsets point past the start of `movi` in the file (RIFF header 12 + movi header 8).
    let absolute_base = movi_offset + 12 + 8;
    let relative = positions
        .first()
        .is_some_and(|&p| p == first_offset as usize);
    for (flags, offset) in entries {
        let offset = offset as usize;
        let target = if relative {
            offset
        } else {
            offset.wrapping_sub(absolute_base) + 4
        };
        if let Ok(i) = positions.binary_search(&target) {
            chunks[i].keyframe = Some(flags & AVIIF_KEYFRAME != 0);
        }
    }
}

/// A stream from its `strh` and `strf`; `None` for one that is neither video nor audio.
fn parse_stream(strh: &[u8], strf: &[u8]) -> Result<Option<Stream>, MediaError> {
    let kind = strh.get(..4).ok_or_else(|| bad("short strh"))?;
    let handler: [u8; 4] = strh
        .get(4..8)
        .and_then(|h| h.try_into().ok())
        .unwrap_or([0; 4]);
    let scale = le_u32(strh, 20).unwrap_or(0);
    let rate = le_u32(strh, 24).unwrap_or(0);
    let start = le_u32(strh, 28).unwrap_or(0);
    let length = le_u32(strh, 32).unwrap_or(0);
    let track = match kind {
        b"vids" => {
            let compression: [u8; 4] = strf
                .get(16..20)
                .and_then(|h| h.try_into().ok())
                .unwrap_or(handler);
            let mut t = Track::video(video_codec(&compression, &handler));
            t.width = le_u32(strf, 4);
            t.height = le_u32(strf, 8).map(|h| (h as i32).unsigned_abs());
            t.frame_rate = (scale > 0 && rate > 0).then(|| f64::from(rate) / f64::from(scale));
            t
        }
        b"auds" => {
            let tag = le_u16(strf, 0).unwrap_or(0);
            let channels = le_u16(strf, 2).unwrap_or(0);
            let sample_rate = le_u32(strf, 4).unwrap_or(0);
            let bits = le_u16(strf, 14).unwrap_or(0);
            // WAVE_FORMAT_EXTENSIBLE carries the real tag in its sub-format GUID.
            let tag = if tag == 0xfffe {
                le_u16(strf, 24).unwrap_or(tag)
            } else {
                tag
            };
            let codec = match tag {
                0x0001 => Codec::Pcm(PcmFormat {
                    bits,
                    float: false,
                    big_endian: false,
                }),
                0x0003 => Codec::Pcm(PcmFormat {
                    bits,
                    float: true,
                    big_endian: false,
                }),
                0x0050 => Codec::Mp2,
                0x0055 => Codec::Mp3,
                0x00ff | 0x1600 | 0x706d => Codec::Aac,
                other => Codec::Other(format!("wFormatTag {other:#06x}")),
            };
            let mut t = Track::audio(codec);
            t.sample_rate = (sample_rate > 0).then_some(sample_rate);
            t.channels = (channels > 0).then_some(channels);
            t
        }
        // Text and MIDI streams are neither video nor audio; they keep their stream number.
        _ => return Ok(None),
    };
    Ok(Some(Stream {
        track,
        scale,
        rate,
        start,
        length,
    }))
}

fn video_codec(compression: &[u8; 4], handler: &[u8; 4]) -> Codec {
    let upper: [u8; 4] = compression.map(|b| b.to_ascii_uppercase());
    match &upper {
        b"H264" | b"X264" | b"AVC1" => Codec::H264,
        b"HEVC" | b"H265" | b"HVC1" => Codec::H265,
        b"MJPG" | b"AVRN" | b"LJPG" | b"JPGL" => Codec::Mjpeg,
        b"FMP4" | b"XVID" | b"DIVX" | b"DX50" | b"MP4V" | b"M4S2" => Codec::Mpeg4Part2,
        b"MPG2" | b"MPEG" | b"MPG1" | b"MP2V" => Codec::Mpeg2Video,
        b"VP80" => Codec::Vp8,
        b"VP90" => Codec::Vp9,
        _ if compression == &[0; 4] => Codec::Other(String::from_utf8_lossy(handler).into_owned()),
        other => Codec::Other(String::from_utf8_lossy(other).into_owned()),
    }
}

impl<'a> ContainerReader<'a> for AviReader<'a> {
    fn container(&self) -> Container {
        Container::Avi
    }

    fn tracks(&self) -> Vec<Track> {
        self.real_streams().map(|(_, s)| s.track.clone()).collect()
    }

    fn duration(&self) -> Option<f64> {
        // Each stream's length in its own units (frames for video, blocks or samples for
        // audio); the longest wins, as ffprobe does. The main header's frame count is the
        // fallback.
        let from_streams = self
            .real_streams()
            .filter(|(_, s)| s.scale > 0 && s.rate > 0 && s.length > 0)
            .map(|(_, s)| {
                (f64::from(s.start) + f64::from(s.length)) * f64::from(s.scale) / f64::from(s.rate)
            })
            .fold(None, |acc: Option<f64>, d| {
                Some(acc.map_or(d, |a| a.max(d)))
            });
        from_streams.or_else(|| {
            (self.micros_per_frame > 0 && self.total_frames > 0)
                .then(|| f64::from(self.total_frames) * f64::from(self.micros_per_frame) / 1e6)
        })
    }

    fn video_frames(&self) -> Result<Vec<VideoFrameInfo>, MediaError> {
        let Some((index, stream)) = self.first(TrackKind::Video) else {
            return Ok(Vec::new());
        };
        let frame_time = self.frame_time(stream)?;
        let mut frames = Vec::new();
        let chunks = self.chunks.iter().filter(|c| c.stream == index);
        for (n, chunk) in (u64::from(stream.start)..).zip(chunks) {
            // An empty chunk is a dropped frame: it takes its time slot but shows nothing new.
            if !chunk.data.is_empty() {
                let keyframe = chunk
                    .keyframe
                    .or_else(|| es::is_keyframe(&stream.track.codec, chunk.data))
                    .unwrap_or(true);
                frames.push(VideoFrameInfo {
                    pts: n as f64 * frame_time,
                    size: u32::try_from(chunk.data.len()).unwrap_or(u32::MAX),
                    keyframe,
                });
            }
        }
        Ok(frames)
    }

    fn encoded_video(&self) -> Result<Option<EncodedVideo>, MediaError> {
        let Some((index, stream)) = self.first(TrackKind::Video) else {
            return Ok(None);
        };
        let frame_time = self.frame_time(stream)?;
        let chunks = self.chunks.iter().filter(|c| c.stream == index);
        let frames = (u64::from(stream.start)..)
            .zip(chunks)
            .filter(|(_, chunk)| !chunk.data.is_empty())
            .map(|(n, chunk)| EncodedVideoFrame {
                pts: n as f64 * frame_time,
                keyframe: chunk
                    .keyframe
                    .or_else(|| es::is_keyframe(&stream.track.codec, chunk.data))
                    .unwrap_or(true),
                presented: true,
                data: chunk.data.to_vec(),
            })
            .collect();
        Ok(Some(EncodedVideo {
            codec: stream.track.codec.clone(),
            width: stream.track.width,
            height: stream.track.height,
            // AVI carries H.264 as Annex B with in-band parameter sets; JPEG frames are whole.
            config: None,
            frames,
        }))
    }

    fn audio_track(&self) -> Result<AudioTrack<'a>, MediaError> {
        let (index, stream) = self
            .first(TrackKind::Audio)
            .ok_or(MediaError::NoAudioStream)?;
        let codec = stream.track.codec.clone();
        let data: Vec<&'a [u8]> = self
            .chunks
            .iter()
            .filter(|c| c.stream == index)
            .map(|c| c.data)
            .collect();
        let rate = stream.track.sample_rate.unwrap_or(0);
        let channels = stream.track.channels.unwrap_or(0);
        let (params, packets) = match &codec {
            Codec::Pcm(p) if p.is_supported() => {
                let frame_bytes = usize::from(p.bits / 8) * usize::from(channels);
                if frame_bytes == 0 {
                    return Err(MediaError::unsupported(format!(
                        "{codec} with {channels} channels"
                    )));
                }
                let all: Vec<u8> = data.concat();
                let packets = all
                    .chunks(PCM_FRAMES_PER_PACKET * frame_bytes)
                    .map(|c| &c[..c.len() - c.len() % frame_bytes])
                    .filter(|c| !c.is_empty())
                    .map(packet)
                    .collect();
                (symphonia_params(&codec, rate, channels, None)?, packets)
            }
            Codec::Mp3 | Codec::Mp2 => {
                // Chunk boundaries need not fall on frame boundaries: re-frame the stream.
                let all: Vec<u8> = data.concat();
                let (frames, first) = es::split_mpeg_audio(&all);
                let codec = match first.map(|f| f.layer) {
                    Some(2) => Codec::Mp2,
                    Some(3) => Codec::Mp3,
                    _ => codec.clone(),
                };
                let packets = frames.into_iter().map(packet).collect();
                (symphonia_params(&codec, rate, channels, None)?, packets)
            }
            other => return Err(MediaError::unsupported(other.to_string())),
        };
        Ok(AudioTrack::new(
            AudioCodec::Symphonia(params),
            Box::new(VecPackets::new(packets)),
        ))
    }
}

/// A Symphonia packet holding `data`.
fn packet(data: &[u8]) -> Packet {
    Packet::new(0, Timestamp::new(0), SymDuration::new(0), data)
}
