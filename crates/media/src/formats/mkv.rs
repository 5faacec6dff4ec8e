//! Matroska and WebM: an EBML reader for tracks, timing and every block.
//!
//! Blocks are read here rather than through Symphonia's `MkvReader` because the frame list needs
//! each block's keyframe flag, and an exact audio length needs `DiscardPadding` and `CodecDelay`
//! (Opus pre-skip), which that reader does not expose. Clusters of unknown size (live
//! MediaRecorder output) end at the first element that cannot be a cluster child.

use symphonia::core::packet::Packet;
use symphonia::core::units::{Duration as SymDuration, Timestamp};

use super::ContainerReader;
use crate::audio::opus::OpusHead;
use crate::audio::params::symphonia_params;
use crate::audio::{AudioCodec, AudioTrack, VecPackets};
use crate::bytes::Cursor;
use crate::error::MediaError;
use crate::info::{Codec, Container, PcmFormat, Track, TrackKind, VideoFrameInfo};
use crate::video::{EncodedVideo, EncodedVideoFrame};

const ID_EBML: u32 = 0x1A45_DFA3;
const ID_DOCTYPE: u32 = 0x4282;
const ID_SEGMENT: u32 = 0x1853_8067;
const ID_INFO: u32 = 0x1549_A966;
const ID_TIMESTAMP_SCALE: u32 = 0x2A_D7B1;
const ID_DURATION: u32 = 0x4489;
const ID_TRACKS: u32 = 0x1654_AE6B;
const ID_TRACK_ENTRY: u32 = 0xAE;
const ID_TRACK_NUMBER: u32 = 0xD7;
const ID_TRACK_TYPE: u32 = 0x83;
const ID_CODEC_ID: u32 = 0x86;
const ID_CODEC_PRIVATE: u32 = 0x63A2;
const ID_CODEC_DELAY: u32 = 0x56AA;
const ID_DEFAULT_DURATION: u32 = 0x23_E383;
const ID_VIDEO: u32 = 0xE0;
const ID_PIXEL_WIDTH: u32 = 0xB0;
const ID_PIXEL_HEIGHT: u32 = 0xBA;
const ID_AUDIO: u32 = 0xE1;
const ID_SAMPLING_FREQUENCY: u32 = 0xB5;
const ID_CHANNELS: u32 = 0x9F;
const ID_BIT_DEPTH: u32 = 0x6264;
const ID_CONTENT_ENCODINGS: u32 = 0x6D80;
const ID_CLUSTER: u32 = 0x1F43_B675;
const ID_CLUSTER_TIMESTAMP: u32 = 0xE7;
const ID_SIMPLE_BLOCK: u32 = 0xA3;
const ID_BLOCK_GROUP: u32 = 0xA0;
const ID_BLOCK: u32 = 0xA1;
const ID_BLOCK_DURATION: u32 = 0x9B;
const ID_REFERENCE_BLOCK: u32 = 0xFB;
const ID_DISCARD_PADDING: u32 = 0x75A2;

/// Children a cluster may have; anything else ends a cluster of unknown size.
fn is_cluster_child(id: u32) -> bool {
    matches!(
        id,
        ID_CLUSTER_TIMESTAMP
            | ID_SIMPLE_BLOCK
            | ID_BLOCK_GROUP
            | 0xA7
            | 0xAB
            | 0x5854
            | 0xEC
            | 0xBF
    )
}

fn bad(reason: impl Into<String>) -> MediaError {
    MediaError::unreadable(Some(Container::Matroska), reason)
}

/// An element ID (1 to 4 bytes, length marker kept, as the specification writes IDs).
fn read_id(c: &mut Cursor<'_>) -> Option<u32> {
    let first = c.u8()?;
    let len = first.leading_zeros() as usize + 1;
    if len > 4 {
        return None;
    }
    let mut id = u32::from(first);
    for _ in 1..len {
        id = (id << 8) | u32::from(c.u8()?);
    }
    Some(id)
}

/// A variable-length integer with its marker removed; `Ok(None)` is the reserved "unknown" value.
fn read_vint(c: &mut Cursor<'_>) -> Option<Option<u64>> {
    let first = c.u8()?;
    let len = first.leading_zeros() as usize + 1;
    if len > 8 {
        return None;
    }
    let mut value = u64::from(first) & (0xff >> len);
    let mut all_ones = value == (0xff >> len);
    for _ in 1..len {
        let b = c.u8()?;
        all_ones &= b == 0xff;
        value = (value << 8) | u64::from(b);
    }
    Some(if all_ones { None } else { Some(value) })
}

/// One element: ID and body. `unknown` marks an element of unknown size whose body runs to the
/// end of its parent.
#[derive(Debug, Clone, Copy)]
struct Element<'a> {
    id: u32,
    body: &'a [u8],
    unknown: bool,
}

/// Reads the next element header and body at `c`. Segment and cluster bodies that run past the
/// end are cut to what is there (a truncated recording keeps its blocks); any other element
/// that does so is an error.
fn next_element<'a>(c: &mut Cursor<'a>) -> Result<Element<'a>, MediaError> {
    let id = read_id(c).ok_or_else(|| bad("element ID"))?;
    let size = read_vint(c).ok_or_else(|| bad("element size"))?;
    let lenient = matches!(id, ID_SEGMENT | ID_CLUSTER);
    match size {
        None => Ok(Element {
            id,
            body: c.rest(),
            unknown: true,
        }),
        Some(n) if n > c.remaining() as u64 => {
            if lenient {
                Ok(Element {
                    id,
                    body: c.rest(),
                    unknown: false,
                })
            } else {
                Err(bad(format!(
                    "element {id:#x} runs past the end of its parent"
                )))
            }
        }
        Some(n) => Ok(Element {
            id,
            body: c.take(n as usize).ok_or_else(|| bad("element body"))?,
            unknown: false,
        }),
    }
}

/// All child elements of a master element whose size is known.
fn children(data: &[u8]) -> Result<Vec<Element<'_>>, MediaError> {
    let mut c = Cursor::new(data);
    let mut out = Vec::new();
    while !c.is_empty() {
        out.push(next_element(&mut c)?);
    }
    Ok(out)
}

fn uint(body: &[u8]) -> Option<u64> {
    (body.len() <= 8).then(|| body.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b)))
}

fn sint(body: &[u8]) -> Option<i64> {
    if body.is_empty() {
        return Some(0);
    }
    let u = uint(body)?;
    let shift = 64 - 8 * body.len() as u32;
    Some(((u << shift) as i64) >> shift)
}

fn float(body: &[u8]) -> Option<f64> {
    match body.len() {
        0 => Some(0.0),
        4 => Some(f64::from(f32::from_be_bytes(body.try_into().ok()?))),
        8 => Some(f64::from_be_bytes(body.try_into().ok()?)),
        _ => None,
    }
}

/// What a track entry says.
#[derive(Debug, Clone)]
struct TrackEntry<'a> {
    number: u64,
    track: Track,
    codec_id: String,
    codec_private: Option<&'a [u8]>,
    codec_delay_ns: u64,
    default_duration_ns: Option<u64>,
    encoded: bool,
}

/// One frame of a block (a block with lacing holds several).
#[derive(Debug, Clone, Copy)]
struct Frame<'a> {
    track: u64,
    /// Presentation time in nanoseconds.
    time_ns: i64,
    keyframe: bool,
    data: &'a [u8],
    /// `DiscardPadding` of the block, on its last frame only.
    discard_padding_ns: i64,
    /// Block duration in nanoseconds, when stated.
    duration_ns: Option<u64>,
}

/// A parsed Matroska or WebM file.
pub(crate) struct MkvReader<'a> {
    container: Container,
    duration: Option<f64>,
    tracks: Vec<TrackEntry<'a>>,
    frames: Vec<Frame<'a>>,
}

impl<'a> MkvReader<'a> {
    /// Parses the EBML header, the segment's Info and Tracks, and every block.
    pub(crate) fn open(bytes: &'a [u8]) -> Result<Self, MediaError> {
        let mut c = Cursor::new(bytes);
        let header = next_element(&mut c)?;
        if header.id != ID_EBML {
            return Err(bad("no EBML header"));
        }
        let doctype = children(header.body)?
            .iter()
            .find(|e| e.id == ID_DOCTYPE)
            .map(|e| {
                String::from_utf8_lossy(e.body)
                    .trim_end_matches('\0')
                    .to_string()
            })
            .unwrap_or_else(|| "matroska".into());
        let container = match doctype.as_str() {
            "webm" => Container::WebM,
            "matroska" => Container::Matroska,
            other => return Err(bad(format!("EBML DocType {other:?} is not Matroska"))),
        };
        let segment = loop {
            if c.is_empty() {
                return Err(bad("no Segment"));
            }
            let e = next_element(&mut c)?;
            if e.id == ID_SEGMENT {
                break e;
            }
        };
        let mut reader = Self {
            container,
            duration: None,
            tracks: Vec::new(),
            frames: Vec::new(),
        };
        let mut scale = 1_000_000u64;
        let mut duration_ticks = None;
        let mut seg = Cursor::new(segment.body);
        while !seg.is_empty() {
            let e = match next_element(&mut seg) {
                Ok(e) => e,
                // Damage after the header: keep what was read (a truncated recording).
                Err(_) if !reader.tracks.is_empty() => break,
                Err(err) => return Err(err),
            };
            match e.id {
                ID_INFO => {
                    for f in children(e.body)? {
                        match f.id {
                            ID_TIMESTAMP_SCALE => {
                                scale = uint(f.body).filter(|&s| s > 0).unwrap_or(scale)
                            }
                            ID_DURATION => duration_ticks = float(f.body),
                            _ => {}
                        }
                    }
                }
                ID_TRACKS => {
                    for t in children(e.body)?.iter().filter(|t| t.id == ID_TRACK_ENTRY) {
                        if let Some(entry) = parse_track(t.body)? {
                            reader.tracks.push(entry);
                        }
                    }
                }
                ID_CLUSTER => {
                    // A cluster of unknown size ends where a non-cluster element starts; the
                    // segment walk resumes there.
                    let used = reader.read_cluster(e.body, scale, e.unknown);
                    if e.unknown {
                        let consumed_header = segment.body.len() - seg.remaining() - e.body.len();
                        seg = Cursor::new(segment.body);
                        seg.skip(consumed_header + used)
                            .ok_or_else(|| bad("cluster"))?;
                    }
                }
                _ => {}
            }
        }
        if reader.tracks.is_empty() {
            return Err(bad("no tracks"));
        }
        let stated = duration_ticks
            .map(|d| d * scale as f64 / 1e9)
            .filter(|d| *d > 0.0);
        reader.duration = stated.or_else(|| reader.duration_from_blocks());
        Ok(reader)
    }

    /// Reads the blocks of one cluster body; returns how many bytes of `body` belong to it.
    fn read_cluster(&mut self, body: &'a [u8], scale: u64, unknown: bool) -> usize {
        let mut c = Cursor::new(body);
        let mut cluster_ts = 0u64;
        while !c.is_empty() {
            let before = c.pos();
            let Ok(e) = next_element(&mut c) else {
                return before;
            };
            if unknown && !is_cluster_child(e.id) {
                return before;
            }
            match e.id {
                ID_CLUSTER_TIMESTAMP => cluster_ts = uint(e.body).unwrap_or(0),
                ID_SIMPLE_BLOCK => {
                    self.add_block(e.body, cluster_ts, scale, None, 0, None);
                }
                ID_BLOCK_GROUP => {
                    let Ok(kids) = children(e.body) else { continue };
                    let block = kids.iter().find(|k| k.id == ID_BLOCK);
                    let referenced = kids.iter().any(|k| k.id == ID_REFERENCE_BLOCK);
                    let padding = kids
                        .iter()
                        .find(|k| k.id == ID_DISCARD_PADDING)
                        .and_then(|k| sint(k.body))
                        .unwrap_or(0);
                    let duration = kids
                        .iter()
                        .find(|k| k.id == ID_BLOCK_DURATION)
                        .and_then(|k| uint(k.body));
                    if let Some(block) = block {
                        self.add_block(
                            block.body,
                            cluster_ts,
                            scale,
                            Some(!referenced),
                            padding,
                            duration,
                        );
                    }
                }
                _ => {}
            }
        }
        c.pos()
    }

    /// Splits one (Simple)Block into frames. Malformed blocks are skipped, as players do.
    fn add_block(
        &mut self,
        body: &'a [u8],
        cluster_ts: u64,
        scale: u64,
        keyframe: Option<bool>,
        padding_ticks: i64,
        duration_ticks: Option<u64>,
    ) {
        let mut c = Cursor::new(body);
        let Some(Some(track)) = read_vint(&mut c) else {
            return;
        };
        let (Some(rel), Some(flags)) = (c.u16_be(), c.u8()) else {
            return;
        };
        let rel = i64::from(rel as i16);
        let time_ticks = (cluster_ts as i64).saturating_add(rel);
        let time_ns = time_ticks.saturating_mul(scale as i64);
        let keyframe = keyframe.unwrap_or(flags & 0x80 != 0);
        let Some(sizes) = lace_sizes(&mut c, (flags >> 1) & 0x3) else {
            return;
        };
        let duration_ns = duration_ticks.map(|d| d.saturating_mul(scale));
        let padding_ns = padding_ticks;
        let n = sizes.len();
        for (i, size) in sizes.into_iter().enumerate() {
            let Some(data) = c.take(size) else { return };
            if data.is_empty() {
                continue;
            }
            self.frames.push(Frame {
                track,
                time_ns,
                keyframe,
                data,
                discard_padding_ns: if i + 1 == n { padding_ns } else { 0 },
                duration_ns: if n == 1 { duration_ns } else { None },
            });
        }
    }

    /// The end of the last block of any track, in seconds, for files without a Duration.
    fn duration_from_blocks(&self) -> Option<f64> {
        self.frames
            .iter()
            .map(|f| {
                let dur = f.duration_ns.or_else(|| {
                    self.tracks
                        .iter()
                        .find(|t| t.number == f.track)
                        .and_then(|t| t.default_duration_ns)
                });
                f.time_ns.saturating_add(dur.unwrap_or(0) as i64)
            })
            .max()
            .map(|ns| ns as f64 / 1e9)
    }

    fn first(&self, kind: TrackKind) -> Option<&TrackEntry<'a>> {
        self.tracks.iter().find(|t| t.track.kind == kind)
    }
}

/// The frame sizes of a block body after its header, for lacing mode `mode`
/// (0 none, 1 Xiph, 2 fixed, 3 EBML). The sizes always fit in what remains.
fn lace_sizes(c: &mut Cursor<'_>, mode: u8) -> Option<Vec<usize>> {
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
            let first = read_vint(c)??;
            let mut size = i64::try_from(first).ok()?;
            sizes.push(usize::try_from(size).ok()?);
            for _ in 1..count - 1 {
                let start = c.pos();
                let raw = read_vint(c)??;
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

/// One TrackEntry, or `None` for a track that is neither video nor audio.
fn parse_track(body: &[u8]) -> Result<Option<TrackEntry<'_>>, MediaError> {
    let kids = children(body)?;
    let find = |id| kids.iter().find(|k| k.id == id).map(|k| k.body);
    let Some(number) = find(ID_TRACK_NUMBER).and_then(uint) else {
        return Ok(None);
    };
    let kind = match find(ID_TRACK_TYPE).and_then(uint) {
        Some(1) => TrackKind::Video,
        Some(2) => TrackKind::Audio,
        _ => return Ok(None),
    };
    let codec_id = find(ID_CODEC_ID)
        .map(|b| {
            String::from_utf8_lossy(b)
                .trim_end_matches('\0')
                .to_string()
        })
        .unwrap_or_default();
    let codec_private = find(ID_CODEC_PRIVATE);
    let default_duration_ns = find(ID_DEFAULT_DURATION).and_then(uint).filter(|&d| d > 0);
    let track = match kind {
        TrackKind::Video => {
            let video = find(ID_VIDEO)
                .map(children)
                .transpose()?
                .unwrap_or_default();
            let vfind = |id| video.iter().find(|k| k.id == id).and_then(|k| uint(k.body));
            let mut t = Track::video(video_codec(&codec_id));
            t.width = vfind(ID_PIXEL_WIDTH).and_then(|v| u32::try_from(v).ok());
            t.height = vfind(ID_PIXEL_HEIGHT).and_then(|v| u32::try_from(v).ok());
            t.frame_rate = default_duration_ns.map(|d| 1e9 / d as f64);
            t
        }
        TrackKind::Audio => {
            let audio = find(ID_AUDIO)
                .map(children)
                .transpose()?
                .unwrap_or_default();
            let afind = |id| audio.iter().find(|k| k.id == id).map(|k| k.body);
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
        codec_private,
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
        "V_MS/VFW/FOURCC" => Codec::Other(id.to_string()),
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

impl<'a> ContainerReader<'a> for MkvReader<'a> {
    fn container(&self) -> Container {
        self.container
    }

    fn tracks(&self) -> Vec<Track> {
        self.tracks.iter().map(|t| t.track.clone()).collect()
    }

    fn duration(&self) -> Option<f64> {
        self.duration
    }

    fn video_frames(&self) -> Result<Vec<VideoFrameInfo>, MediaError> {
        let Some(track) = self.first(TrackKind::Video) else {
            return Ok(Vec::new());
        };
        let mut frames: Vec<VideoFrameInfo> = self
            .frames
            .iter()
            .filter(|f| f.track == track.number)
            .map(|f| VideoFrameInfo {
                pts: f.time_ns as f64 / 1e9,
                size: u32::try_from(f.data.len()).unwrap_or(u32::MAX),
                keyframe: f.keyframe,
            })
            .collect();
        frames.sort_by(|a, b| a.pts.total_cmp(&b.pts));
        Ok(frames)
    }

    fn encoded_video(&self) -> Result<Option<EncodedVideo>, MediaError> {
        let Some(track) = self.first(TrackKind::Video) else {
            return Ok(None);
        };
        // Blocks are stored in decode order, which is the order a decoder needs.
        let frames = self
            .frames
            .iter()
            .filter(|f| f.track == track.number)
            .map(|f| EncodedVideoFrame {
                pts: f.time_ns as f64 / 1e9,
                keyframe: f.keyframe,
                presented: true,
                data: f.data.to_vec(),
            })
            .collect();
        Ok(Some(EncodedVideo {
            codec: track.track.codec.clone(),
            width: track.track.width,
            height: track.track.height,
            config: track.codec_private.map(<[u8]>::to_vec),
            frames,
        }))
    }

    fn audio_track(&self) -> Result<AudioTrack<'a>, MediaError> {
        let track = self
            .first(TrackKind::Audio)
            .ok_or(MediaError::NoAudioStream)?;
        let codec = &track.track.codec;
        if !codec.is_decodable_audio() || track.encoded {
            return Err(MediaError::unsupported(format!(
                "{codec} ({})",
                track.codec_id
            )));
        }
        let rate = track.track.sample_rate.unwrap_or(0);
        let channels = track.track.channels.unwrap_or(1);
        let (audio_codec, skip, out_rate) = match codec {
            Codec::Opus => {
                let head = track.codec_private.and_then(OpusHead::parse);
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
                        track
                            .codec_private
                            .and_then(vorbis_extra)
                            .ok_or_else(|| bad("Vorbis headers"))?,
                    ),
                    Codec::Flac => Some(
                        track
                            .codec_private
                            .and_then(flac_extra)
                            .ok_or_else(|| bad("FLAC STREAMINFO"))?,
                    ),
                    _ => track.codec_private.map(Box::from),
                };
                (
                    AudioCodec::Symphonia(symphonia_params(codec, rate, channels, extra)?),
                    (0, 1),
                    rate,
                )
            }
        };
        let packets: Vec<Packet> = self
            .frames
            .iter()
            .filter(|f| f.track == track.number)
            .map(|f| {
                let mut p = Packet::new(0, Timestamp::new(0), SymDuration::new(0), f.data);
                if f.discard_padding_ns > 0 && out_rate > 0 {
                    let frames =
                        f.discard_padding_ns as u128 * u128::from(out_rate) / 1_000_000_000;
                    p.trim_end = SymDuration::new(frames.min(u128::from(u32::MAX)) as u64);
                }
                p
            })
            .collect();
        // Audio whose first block comes after timestamp 0 starts after media time 0.
        let first_ns = self
            .frames
            .iter()
            .find(|f| f.track == track.number)
            .map_or(0, |f| f.time_ns.max(0) as u64);
        Ok(AudioTrack {
            codec: audio_codec,
            packets: Box::new(VecPackets::new(packets)),
            skip,
            lead: (first_ns, 1_000_000_000),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vints_decode_with_their_marker_removed() {
        assert_eq!(read_vint(&mut Cursor::new(&[0x81])), Some(Some(1)));
        assert_eq!(read_vint(&mut Cursor::new(&[0x40, 0x02])), Some(Some(2)));
        assert_eq!(read_vint(&mut Cursor::new(&[0xff])), Some(None));
        assert_eq!(read_vint(&mut Cursor::new(&[0x00])), None);
        assert_eq!(
            read_id(&mut Cursor::new(&[0x1a, 0x45, 0xdf, 0xa3])),
            Some(ID_EBML)
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
}
