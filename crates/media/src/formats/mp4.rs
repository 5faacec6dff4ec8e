//! ISO base media files (MP4, MOV, M4A), progressive and fragmented.
//!
//! This module parses the box tree itself, for three reasons: the probe needs every track
//! (Symphonia's reader exposes audio only in a decodable form), the video frame list needs the
//! sample tables including fragments (`moof`/`traf`/`trun`), and the edit list (`elst`), which
//! Symphonia 0.6 does not apply, decides where media time 0 is. Audio packets come from
//! Symphonia's `IsoMp4Reader`, run only after this parser has checked that every box lies inside
//! the file (so no size it reads can ask for more memory than the input holds).

use std::io::Cursor as IoCursor;

use symphonia::core::codecs::audio::well_known::CODEC_ID_OPUS;
use symphonia::core::codecs::CodecParameters;
use symphonia::core::formats::{FormatOptions, FormatReader};
use symphonia::core::io::MediaSourceStream;
use symphonia::default::formats::IsoMp4Reader;

use super::ContainerReader;
use crate::audio::opus::OpusHead;
use crate::audio::{AudioCodec, AudioTrack, SymphoniaPackets};
use crate::bytes::Cursor;
use crate::error::MediaError;
use crate::info::{Codec, Container, PcmFormat, Track, TrackKind, VideoFrameInfo};
use crate::video::{EncodedVideo, EncodedVideoFrame};

/// The deepest box nesting this parser follows (moov/trak/mdia/minf/stbl/stsd/entry/esds).
const MAX_DEPTH: usize = 10;

/// One box: its type and its body (the bytes after the header).
#[derive(Debug, Clone, Copy)]
struct Mp4Box<'a> {
    kind: [u8; 4],
    body: &'a [u8],
    /// Where the box header starts in the bytes it was split from (for top-level boxes, the
    /// file offset fragment data offsets count from).
    offset: usize,
}

/// Splits `data` into its boxes. A box that claims more bytes than remain is an error, except a
/// trailing `mdat` at top level, which is cut to what is there (a truncated download still has
/// its index when `moov` comes first).
fn split_boxes(data: &[u8], top_level: bool) -> Result<Vec<Mp4Box<'_>>, MediaError> {
    let mut out = Vec::new();
    let mut cur = Cursor::new(data);
    while !cur.is_empty() {
        let start = cur.pos();
        if cur.remaining() < 8 {
            // Trailing padding shorter than a header is tolerated (some muxers leave zeros).
            break;
        }
        let size32 = cur.u32_be().ok_or_else(|| bad("box header"))?;
        let kind = cur.array::<4>().ok_or_else(|| bad("box header"))?;
        let size = match size32 {
            0 => (data.len() - start) as u64,
            1 => cur.u64_be().ok_or_else(|| bad("box large size"))?,
            n => u64::from(n),
        };
        let header = cur.pos() - start;
        if size < header as u64 {
            return Err(bad(format!(
                "box {} smaller than its header",
                fourcc(&kind)
            )));
        }
        let available = (data.len() - start) as u64;
        let size = if size > available {
            if top_level && &kind == b"mdat" {
                available
            } else {
                return Err(bad(format!(
                    "box {} runs past the end of its parent",
                    fourcc(&kind)
                )));
            }
        } else {
            size
        };
        let body_len = size as usize - header;
        let body = cur.take(body_len).ok_or_else(|| bad("box body"))?;
        out.push(Mp4Box {
            kind,
            body,
            offset: start,
        });
    }
    Ok(out)
}

/// Checks the whole box tree down to [`MAX_DEPTH`], so that Symphonia's reader never sees a
/// child box larger than its parent.
fn validate_tree(data: &[u8], depth: usize, top_level: bool) -> Result<(), MediaError> {
    if depth > MAX_DEPTH {
        return Ok(());
    }
    for b in split_boxes(data, top_level)? {
        if is_container(&b.kind) {
            validate_tree(b.body, depth + 1, false)?;
        }
    }
    Ok(())
}

/// Box types whose body is a plain list of child boxes.
fn is_container(kind: &[u8; 4]) -> bool {
    matches!(
        kind,
        b"moov"
            | b"trak"
            | b"mdia"
            | b"minf"
            | b"stbl"
            | b"edts"
            | b"mvex"
            | b"moof"
            | b"traf"
            | b"dinf"
    )
}

/// The first child of type `kind`.
fn child<'a>(boxes: &[Mp4Box<'a>], kind: &[u8; 4]) -> Option<Mp4Box<'a>> {
    boxes.iter().find(|b| &b.kind == kind).copied()
}

/// The children of a container box.
fn children<'a>(b: Option<Mp4Box<'a>>) -> Result<Vec<Mp4Box<'a>>, MediaError> {
    match b {
        Some(b) => split_boxes(b.body, false),
        None => Ok(Vec::new()),
    }
}

fn bad(reason: impl Into<String>) -> MediaError {
    MediaError::unreadable(Some(Container::Mp4), reason)
}

fn fourcc(kind: &[u8; 4]) -> String {
    kind.iter()
        .map(|&c| {
            if c.is_ascii_graphic() || c == b' ' {
                c as char
            } else {
                '?'
            }
        })
        .collect()
}

/// The first edit of a track that maps media time: where presentation starts.
#[derive(Debug, Clone, Copy, Default)]
struct Edit {
    /// Movie-timescale duration of leading empty edits (presentation starts later).
    empty_lead: u64,
    /// Media time (track timescale) presented first.
    media_time: i64,
    /// Movie-timescale duration of that edit; 0 means "to the end".
    duration: u64,
}

/// A sample of a track, from the sample tables or a fragment.
#[derive(Debug, Clone, Copy)]
struct Sample {
    /// Decode time, track timescale.
    dts: u64,
    /// Composition offset, track timescale.
    cts_offset: i64,
    /// Duration, track timescale.
    duration: u32,
    size: u32,
    sync: bool,
    /// File offset of the sample's bytes; `u64::MAX` when no chunk offset places it.
    offset: u64,
}

/// What this parser knows of one track.
#[derive(Debug, Clone)]
struct TrakInfo {
    id: u32,
    track: Track,
    timescale: u32,
    /// `mdhd` duration in track timescale.
    media_duration: u64,
    edit: Option<Edit>,
    samples: Vec<Sample>,
    /// The video sample entry's decoder configuration box body (`avcC`), if any.
    config: Option<Vec<u8>>,
}

/// A parsed ISO base media file.
pub(crate) struct Mp4Reader<'a> {
    bytes: &'a [u8],
    container: Container,
    movie_timescale: u32,
    movie_duration: u64,
    traks: Vec<TrakInfo>,
}

impl<'a> Mp4Reader<'a> {
    /// Parses the box tree of `bytes`.
    pub(crate) fn open(bytes: &'a [u8]) -> Result<Self, MediaError> {
        validate_tree(bytes, 0, true)?;
        let top = split_boxes(bytes, true)?;
        let container = match child(&top, b"ftyp").and_then(|b| b.body.get(..4)) {
            Some(b"qt  ") => Container::Mov,
            Some(b"M4A ") | Some(b"M4B ") => Container::M4a,
            _ => Container::Mp4,
        };
        let moov = child(&top, b"moov").ok_or_else(|| bad("no moov box"))?;
        let moov_children = split_boxes(moov.body, false)?;
        let (movie_timescale, movie_duration) = child(&moov_children, b"mvhd")
            .and_then(|b| parse_mvhd(b.body))
            .ok_or_else(|| bad("missing or short mvhd"))?;
        let trex = parse_trex(&children(child(&moov_children, b"mvex"))?);
        let mut traks = Vec::new();
        for trak in moov_children.iter().filter(|b| &b.kind == b"trak") {
            if let Some(t) = parse_trak(trak.body, bytes.len())? {
                traks.push(t);
            }
        }
        let mut reader = Self {
            bytes,
            container,
            movie_timescale,
            movie_duration,
            traks,
        };
        for b in top.iter().filter(|b| &b.kind == b"moof") {
            reader.add_fragment(b.body, b.offset as u64, &trex)?;
        }
        Ok(reader)
    }

    /// Appends the samples of one `moof` (whose header starts at file offset `moof_start`) to
    /// their tracks.
    fn add_fragment(
        &mut self,
        moof: &[u8],
        moof_start: u64,
        trex: &[(u32, TrackDefaults)],
    ) -> Result<(), MediaError> {
        let limit = self.bytes.len();
        // Without an explicit base, the first track fragment's data starts from the moof and
        // each later one where the previous one's data ended (ISO 14496-12 8.8.7.1).
        let mut data_end = moof_start;
        for traf in split_boxes(moof, false)?
            .iter()
            .filter(|b| &b.kind == b"traf")
        {
            let kids = split_boxes(traf.body, false)?;
            let Some(tfhd) = child(&kids, b"tfhd") else {
                continue;
            };
            let mut c = Cursor::new(tfhd.body);
            let flags = c.u32_be().ok_or_else(|| bad("tfhd"))? & 0x00ff_ffff;
            let track_id = c.u32_be().ok_or_else(|| bad("tfhd"))?;
            let mut defaults = trex
                .iter()
                .find(|(id, _)| *id == track_id)
                .map(|(_, d)| *d)
                .unwrap_or_default();
            let base = if flags & 0x1 != 0 {
                c.u64_be().ok_or_else(|| bad("tfhd"))?
            } else if flags & 0x2_0000 != 0 {
                moof_start
            } else {
                data_end
            };
            if flags & 0x2 != 0 {
                c.skip(4).ok_or_else(|| bad("tfhd"))?;
            }
            if flags & 0x8 != 0 {
                defaults.duration = c.u32_be().ok_or_else(|| bad("tfhd"))?;
            }
            if flags & 0x10 != 0 {
                defaults.size = c.u32_be().ok_or_else(|| bad("tfhd"))?;
            }
            if flags & 0x20 != 0 {
                defaults.flags = c.u32_be().ok_or_else(|| bad("tfhd"))?;
            }
            let Some(trak) = self.traks.iter_mut().find(|t| t.id == track_id) else {
                continue;
            };
            let mut dts = match child(&kids, b"tfdt") {
                Some(tfdt) => {
                    let mut c = Cursor::new(tfdt.body);
                    let version = c.u8().ok_or_else(|| bad("tfdt"))?;
                    c.skip(3).ok_or_else(|| bad("tfdt"))?;
                    if version == 1 {
                        c.u64_be().ok_or_else(|| bad("tfdt"))?
                    } else {
                        u64::from(c.u32_be().ok_or_else(|| bad("tfdt"))?)
                    }
                }
                None => trak
                    .samples
                    .last()
                    .map_or(0, |s| s.dts + u64::from(s.duration)),
            };
            let mut next_data = base;
            for trun in kids.iter().filter(|b| &b.kind == b"trun") {
                let before = trak.samples.len();
                parse_trun(trun.body, &defaults, &mut dts, &mut trak.samples, limit)?;
                // A run without a data offset continues where the previous run's data ended.
                if let Some(offset) = trun_data_offset(trun.body) {
                    next_data = base.saturating_add_signed(i64::from(offset));
                }
                for s in &mut trak.samples[before..] {
                    s.offset = next_data;
                    next_data = next_data.saturating_add(u64::from(s.size));
                }
            }
            data_end = next_data;
        }
        Ok(())
    }

    /// The presentation time in seconds of each sample of `trak`, in sample (decode) order, and
    /// whether the edit list shows it.
    fn presentation(&self, trak: &TrakInfo) -> Result<Vec<(f64, bool)>, MediaError> {
        if trak.timescale == 0 {
            return Err(bad("video track timescale is 0"));
        }
        let ts = f64::from(trak.timescale);
        let edit = trak.edit.unwrap_or_default();
        let lead = if self.movie_timescale > 0 {
            edit.empty_lead as f64 / f64::from(self.movie_timescale)
        } else {
            0.0
        };
        let start = edit.media_time.max(0);
        let end = (edit.duration > 0 && self.movie_timescale > 0)
            .then(|| start as f64 / ts + edit.duration as f64 / f64::from(self.movie_timescale));
        Ok(trak
            .samples
            .iter()
            .map(|s| {
                let pts_ticks = (s.dts as i64).saturating_add(s.cts_offset);
                let media = pts_ticks as f64 / ts;
                // Frames before the edit's media time are decoded only to reach the first
                // shown frame; they are not presented, nor are those past the edit's end.
                let shown = pts_ticks >= start && !end.is_some_and(|e| media >= e - 1e-9);
                (media - start as f64 / ts + lead, shown)
            })
            .collect())
    }

    fn first(&self, kind: TrackKind) -> Option<&TrakInfo> {
        self.traks.iter().find(|t| t.track.kind == kind)
    }
}

impl<'a> ContainerReader<'a> for Mp4Reader<'a> {
    fn container(&self) -> Container {
        self.container
    }

    fn tracks(&self) -> Vec<Track> {
        self.traks.iter().map(|t| t.track.clone()).collect()
    }

    fn duration(&self) -> Option<f64> {
        let movie = (self.movie_timescale > 0 && self.movie_duration > 0)
            .then(|| self.movie_duration as f64 / f64::from(self.movie_timescale));
        // A fragmented file's moov states no duration (or only the initial part): the samples
        // in the fragments tell how long each track really is.
        let from_samples = self
            .traks
            .iter()
            .filter(|t| t.timescale > 0)
            .filter_map(|t| {
                let end = t
                    .samples
                    .iter()
                    .map(|s| s.dts + u64::from(s.duration))
                    .max()?;
                Some(end as f64 / f64::from(t.timescale))
            })
            .fold(None, |acc: Option<f64>, d| {
                Some(acc.map_or(d, |a| a.max(d)))
            });
        let from_mdhd = self
            .traks
            .iter()
            .filter(|t| t.timescale > 0 && t.media_duration > 0)
            .map(|t| t.media_duration as f64 / f64::from(t.timescale))
            .fold(None, |acc: Option<f64>, d| {
                Some(acc.map_or(d, |a| a.max(d)))
            });
        movie.or(from_samples).or(from_mdhd)
    }

    fn video_frames(&self) -> Result<Vec<VideoFrameInfo>, MediaError> {
        let Some(trak) = self.first(TrackKind::Video) else {
            return Ok(Vec::new());
        };
        let mut frames: Vec<VideoFrameInfo> = self
            .presentation(trak)?
            .into_iter()
            .zip(&trak.samples)
            .filter(|((_, shown), _)| *shown)
            .map(|((pts, _), s)| VideoFrameInfo {
                pts,
                size: s.size,
                keyframe: s.sync,
            })
            .collect();
        frames.sort_by(|a, b| a.pts.total_cmp(&b.pts));
        Ok(frames)
    }

    fn encoded_video(&self) -> Result<Option<EncodedVideo>, MediaError> {
        let Some(trak) = self.first(TrackKind::Video) else {
            return Ok(None);
        };
        let frames = self
            .presentation(trak)?
            .into_iter()
            .zip(&trak.samples)
            .map(|((pts, presented), s)| {
                let data = usize::try_from(s.offset)
                    .ok()
                    .and_then(|at| self.bytes.get(at..at.checked_add(s.size as usize)?))
                    .unwrap_or_default();
                EncodedVideoFrame {
                    pts,
                    keyframe: s.sync,
                    presented,
                    data: data.to_vec(),
                }
            })
            .collect();
        Ok(Some(EncodedVideo {
            codec: trak.track.codec.clone(),
            width: trak.track.width,
            height: trak.track.height,
            config: trak.config.clone(),
            frames,
        }))
    }

    fn audio_track(&self) -> Result<AudioTrack<'a>, MediaError> {
        let trak = self
            .first(TrackKind::Audio)
            .ok_or(MediaError::NoAudioStream)?;
        if !trak.track.codec.is_decodable_audio() {
            return Err(MediaError::unsupported(trak.track.codec.to_string()));
        }
        let mss = MediaSourceStream::new(Box::new(IoCursor::new(self.bytes)), Default::default());
        let reader = crate::guard::catch(|| IsoMp4Reader::try_new(mss, FormatOptions::default()))?
            .map_err(|e| bad(format!("mp4 reader: {e}")))?;
        let params = reader
            .tracks()
            .iter()
            .find(|t| t.id == trak.id)
            .and_then(|t| match &t.codec_params {
                Some(CodecParameters::Audio(p)) => Some(p.clone()),
                _ => None,
            })
            .ok_or_else(|| MediaError::unsupported(trak.track.codec.to_string()))?;
        let codec = if params.codec == CODEC_ID_OPUS {
            let channels = params
                .extra_data
                .as_deref()
                .and_then(OpusHead::parse)
                .map(|h| usize::from(h.channels))
                .or(trak.track.channels.map(usize::from))
                .unwrap_or(1);
            AudioCodec::Opus { channels }
        } else {
            AudioCodec::Symphonia(params)
        };
        // The edit list's media time is where presentation starts: for AAC it skips the
        // encoder priming (1024 frames from ffmpeg), for Opus the pre-skip. Symphonia 0.6 does
        // not apply edit lists, so the skip is handed to the decode loop.
        let skip = trak.edit.map_or(0, |e| e.media_time.max(0) as u64);
        Ok(AudioTrack {
            codec,
            packets: Box::new(SymphoniaPackets {
                reader: Box::new(reader),
                track_id: trak.id,
                clear_trim_start: false,
            }),
            skip: (skip, trak.timescale),
            // Leading empty edits delay the track's presentation.
            lead: (trak.edit.map_or(0, |e| e.empty_lead), self.movie_timescale),
        })
    }
}

/// `mvhd`: (timescale, duration).
fn parse_mvhd(body: &[u8]) -> Option<(u32, u64)> {
    let mut c = Cursor::new(body);
    let version = c.u8()?;
    c.skip(3)?;
    if version == 1 {
        c.skip(16)?;
        Some((c.u32_be()?, c.u64_be()?))
    } else {
        c.skip(8)?;
        Some((c.u32_be()?, u64::from(c.u32_be()?)))
    }
}

/// Per-track defaults for fragment samples.
#[derive(Debug, Clone, Copy, Default)]
struct TrackDefaults {
    duration: u32,
    size: u32,
    flags: u32,
}

/// `trex` boxes of `mvex`: (track id, defaults).
fn parse_trex(mvex: &[Mp4Box<'_>]) -> Vec<(u32, TrackDefaults)> {
    mvex.iter()
        .filter(|b| &b.kind == b"trex")
        .filter_map(|b| {
            let mut c = Cursor::new(b.body);
            c.skip(4)?;
            let id = c.u32_be()?;
            c.skip(4)?;
            Some((
                id,
                TrackDefaults {
                    duration: c.u32_be()?,
                    size: c.u32_be()?,
                    flags: c.u32_be()?,
                },
            ))
        })
        .collect()
}

/// The `data_offset` of a `trun`, when its flags say it has one.
fn trun_data_offset(body: &[u8]) -> Option<i32> {
    let mut c = Cursor::new(body);
    let flags = c.u32_be()? & 0x00ff_ffff;
    c.skip(4)?;
    if flags & 0x1 != 0 {
        c.i32_be()
    } else {
        None
    }
}

/// Whether fragment sample flags mark a sync sample (`sample_is_non_sync_sample` clear).
fn is_sync(flags: u32) -> bool {
    flags & 0x0001_0000 == 0
}

/// One `trun`: appends its samples, advancing `dts`. At most `limit` samples are accepted in
/// total (the input length: every sample takes at least one byte of the file, or an entry).
fn parse_trun(
    body: &[u8],
    defaults: &TrackDefaults,
    dts: &mut u64,
    out: &mut Vec<Sample>,
    limit: usize,
) -> Result<(), MediaError> {
    let mut c = Cursor::new(body);
    let version_flags = c.u32_be().ok_or_else(|| bad("trun"))?;
    let version = version_flags >> 24;
    let flags = version_flags & 0x00ff_ffff;
    let count = c.u32_be().ok_or_else(|| bad("trun"))? as usize;
    if flags & 0x1 != 0 {
        c.skip(4).ok_or_else(|| bad("trun"))?;
    }
    let first_flags = if flags & 0x4 != 0 {
        Some(c.u32_be().ok_or_else(|| bad("trun"))?)
    } else {
        None
    };
    let per_sample = [0x100, 0x200, 0x400, 0x800]
        .iter()
        .filter(|&&f| flags & f != 0)
        .count()
        * 4;
    if per_sample > 0 && count > c.remaining() / per_sample {
        return Err(bad("trun sample count exceeds the box"));
    }
    if out.len().saturating_add(count) > limit {
        return Err(bad("more fragment samples than the file can hold"));
    }
    for i in 0..count {
        let duration = if flags & 0x100 != 0 {
            c.u32_be().ok_or_else(|| bad("trun"))?
        } else {
            defaults.duration
        };
        let size = if flags & 0x200 != 0 {
            c.u32_be().ok_or_else(|| bad("trun"))?
        } else {
            defaults.size
        };
        let sflags = if flags & 0x400 != 0 {
            c.u32_be().ok_or_else(|| bad("trun"))?
        } else if i == 0 {
            first_flags.unwrap_or(defaults.flags)
        } else {
            defaults.flags
        };
        let cts_offset = if flags & 0x800 != 0 {
            let raw = c.u32_be().ok_or_else(|| bad("trun"))?;
            if version == 0 {
                i64::from(raw)
            } else {
                i64::from(raw as i32)
            }
        } else {
            0
        };
        out.push(Sample {
            dts: *dts,
            cts_offset,
            duration,
            size,
            sync: is_sync(sflags),
            offset: u64::MAX,
        });
        *dts = dts.saturating_add(u64::from(duration));
    }
    Ok(())
}

/// One `trak`, or `None` for a track that is neither video nor audio.
fn parse_trak(body: &[u8], limit: usize) -> Result<Option<TrakInfo>, MediaError> {
    let kids = split_boxes(body, false)?;
    let id = child(&kids, b"tkhd")
        .and_then(|b| {
            let mut c = Cursor::new(b.body);
            let version = c.u8()?;
            c.skip(3 + if version == 1 { 16 } else { 8 })?;
            c.u32_be()
        })
        .ok_or_else(|| bad("missing or short tkhd"))?;
    let mdia = children(child(&kids, b"mdia"))?;
    let handler = child(&mdia, b"hdlr").and_then(|b| b.body.get(8..12));
    let kind = match handler {
        Some(b"vide") => TrackKind::Video,
        Some(b"soun") => TrackKind::Audio,
        _ => return Ok(None),
    };
    let (timescale, media_duration) = child(&mdia, b"mdhd")
        .and_then(|b| parse_mvhd(b.body))
        .ok_or_else(|| bad("missing or short mdhd"))?;
    let minf = children(child(&mdia, b"minf"))?;
    let stbl = children(child(&minf, b"stbl"))?;
    let track = match child(&stbl, b"stsd") {
        Some(stsd) => parse_stsd(stsd.body, kind)?,
        None => return Err(bad("track without stsd")),
    };
    let edit = parse_elst(&children(child(&kids, b"edts"))?);
    let samples = sample_table(&stbl, limit)?;
    let config = if kind == TrackKind::Video {
        child(&stbl, b"stsd").and_then(|b| visual_config(b.body))
    } else {
        None
    };
    let mut track = track;
    if kind == TrackKind::Video && timescale > 0 && !samples.is_empty() {
        let total: u64 = samples.iter().map(|s| u64::from(s.duration)).sum();
        if total > 0 {
            track.frame_rate = Some(samples.len() as f64 * f64::from(timescale) / total as f64);
        }
    }
    Ok(Some(TrakInfo {
        id,
        track,
        timescale,
        media_duration,
        edit,
        samples,
        config,
    }))
}

/// The decoder configuration (`avcC` body) of an `stsd`'s first visual sample entry.
fn visual_config(stsd: &[u8]) -> Option<Vec<u8>> {
    let entries = split_boxes(stsd.get(8..)?, false).ok()?;
    let entry = entries.first()?;
    // A VisualSampleEntry's fixed fields take 78 bytes; its boxes follow.
    let extensions = split_boxes(entry.body.get(78..)?, false).ok()?;
    child(&extensions, b"avcC").map(|b| b.body.to_vec())
}

/// The first presenting edit of an `elst`, with the duration of any empty edits before it.
fn parse_elst(edts: &[Mp4Box<'_>]) -> Option<Edit> {
    let elst = child(edts, b"elst")?;
    let mut c = Cursor::new(elst.body);
    let version = c.u8()?;
    c.skip(3)?;
    let count = c.u32_be()?;
    let mut empty_lead = 0u64;
    for _ in 0..count {
        let (duration, media_time) = if version == 1 {
            (c.u64_be()?, c.i64_be()?)
        } else {
            (u64::from(c.u32_be()?), i64::from(c.i32_be()?))
        };
        c.skip(4)?;
        if media_time < 0 {
            empty_lead = empty_lead.saturating_add(duration);
        } else {
            return Some(Edit {
                empty_lead,
                media_time,
                duration,
            });
        }
    }
    None
}

/// The samples of a progressive track from `stts`, `ctts`, `stsz`/`stz2` and `stss`.
fn sample_table(stbl: &[Mp4Box<'_>], limit: usize) -> Result<Vec<Sample>, MediaError> {
    let sizes = match child(stbl, b"stsz") {
        Some(b) => {
            let mut c = Cursor::new(b.body);
            c.skip(4).ok_or_else(|| bad("stsz"))?;
            let fixed = c.u32_be().ok_or_else(|| bad("stsz"))?;
            let count = c.u32_be().ok_or_else(|| bad("stsz"))? as usize;
            if fixed != 0 {
                // Every sample occupies `fixed` bytes of the file, so their count is bounded by
                // the file's length.
                if count > limit / (fixed as usize).max(1) + 1 {
                    return Err(bad("stsz sample count exceeds the file"));
                }
                vec![fixed; count]
            } else {
                if count > c.remaining() / 4 {
                    return Err(bad("stsz sample count exceeds the box"));
                }
                (0..count).map(|_| c.u32_be().unwrap_or(0)).collect()
            }
        }
        None => Vec::new(),
    };
    let n = sizes.len();
    let mut samples: Vec<Sample> = sizes
        .into_iter()
        .map(|size| Sample {
            dts: 0,
            cts_offset: 0,
            duration: 0,
            size,
            sync: true,
            offset: u64::MAX,
        })
        .collect();
    place_samples(stbl, &mut samples);
    if let Some(b) = child(stbl, b"stts") {
        let mut c = Cursor::new(b.body);
        c.skip(4).ok_or_else(|| bad("stts"))?;
        let entries = c.u32_be().ok_or_else(|| bad("stts"))?;
        let (mut i, mut dts) = (0usize, 0u64);
        for _ in 0..entries {
            let (Some(count), Some(delta)) = (c.u32_be(), c.u32_be()) else {
                break;
            };
            for _ in 0..count {
                let Some(s) = samples.get_mut(i) else { break };
                s.dts = dts;
                s.duration = delta;
                dts = dts.saturating_add(u64::from(delta));
                i += 1;
            }
            if i >= n {
                break;
            }
        }
    }
    if let Some(b) = child(stbl, b"ctts") {
        let mut c = Cursor::new(b.body);
        let version = c.u8().ok_or_else(|| bad("ctts"))?;
        c.skip(3).ok_or_else(|| bad("ctts"))?;
        let entries = c.u32_be().ok_or_else(|| bad("ctts"))?;
        let mut i = 0usize;
        for _ in 0..entries {
            let (Some(count), Some(raw)) = (c.u32_be(), c.u32_be()) else {
                break;
            };
            let offset = if version == 1 {
                i64::from(raw as i32)
            } else {
                i64::from(raw)
            };
            for _ in 0..count {
                let Some(s) = samples.get_mut(i) else { break };
                s.cts_offset = offset;
                i += 1;
            }
            if i >= n {
                break;
            }
        }
    }
    if let Some(b) = child(stbl, b"stss") {
        for s in &mut samples {
            s.sync = false;
        }
        let mut c = Cursor::new(b.body);
        c.skip(4).ok_or_else(|| bad("stss"))?;
        let entries = c.u32_be().ok_or_else(|| bad("stss"))?;
        for _ in 0..entries {
            let Some(k) = c.u32_be() else { break };
            if let Some(s) = (k as usize).checked_sub(1).and_then(|i| samples.get_mut(i)) {
                s.sync = true;
            }
        }
    }
    Ok(samples)
}

/// Sets each sample's file offset from the chunk offsets (`stco`/`co64`) and the
/// sample-to-chunk table (`stsc`). Samples no chunk reaches keep `u64::MAX`.
fn place_samples(stbl: &[Mp4Box<'_>], samples: &mut [Sample]) {
    let chunk_offsets: Vec<u64> = if let Some(b) = child(stbl, b"stco") {
        let mut c = Cursor::new(b.body);
        let count = c.skip(4).and_then(|_| c.u32_be()).unwrap_or(0);
        (0..count)
            .map_while(|_| c.u32_be().map(u64::from))
            .collect()
    } else if let Some(b) = child(stbl, b"co64") {
        let mut c = Cursor::new(b.body);
        let count = c.skip(4).and_then(|_| c.u32_be()).unwrap_or(0);
        (0..count).map_while(|_| c.u64_be()).collect()
    } else {
        return;
    };
    let runs: Vec<(u32, u32)> = child(stbl, b"stsc")
        .map(|b| {
            let mut c = Cursor::new(b.body);
            let count = c.skip(4).and_then(|_| c.u32_be()).unwrap_or(0);
            (0..count)
                .map_while(|_| {
                    let first = c.u32_be()?;
                    let per_chunk = c.u32_be()?;
                    c.skip(4)?;
                    Some((first, per_chunk))
                })
                .collect()
        })
        .unwrap_or_default();
    let mut run = 0usize;
    let mut next = 0usize;
    for (i, &chunk_offset) in chunk_offsets.iter().enumerate() {
        let chunk = u32::try_from(i + 1).unwrap_or(u32::MAX);
        while runs.get(run + 1).is_some_and(|&(first, _)| first <= chunk) {
            run += 1;
        }
        let per_chunk = runs.get(run).map_or(0, |&(_, n)| n);
        let mut at = chunk_offset;
        for _ in 0..per_chunk {
            let Some(s) = samples.get_mut(next) else {
                return;
            };
            s.offset = at;
            at = at.saturating_add(u64::from(s.size));
            next += 1;
        }
    }
}

/// The first sample entry of an `stsd`, as a track description.
fn parse_stsd(body: &[u8], kind: TrackKind) -> Result<Track, MediaError> {
    let mut c = Cursor::new(body);
    c.skip(8).ok_or_else(|| bad("stsd"))?;
    let entries = split_boxes(c.rest(), false)?;
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
                .and_then(|b| split_boxes(b, false).ok())
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
        .and_then(|b| split_boxes(b, false).ok())
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

#[cfg(test)]
mod tests {
    use super::*;

    fn boxed(kind: &[u8; 4], body: &[u8]) -> Vec<u8> {
        let mut out = ((body.len() + 8) as u32).to_be_bytes().to_vec();
        out.extend_from_slice(kind);
        out.extend_from_slice(body);
        out
    }

    #[test]
    fn a_child_box_larger_than_its_parent_is_rejected() {
        let mut inner = boxed(b"trak", &[0; 4]);
        inner[3] = 200;
        let moov = boxed(b"moov", &inner);
        assert_eq!(
            validate_tree(&moov, 0, true).unwrap_err().code_str(),
            "ih5002"
        );
    }

    #[test]
    fn a_truncated_top_level_mdat_is_accepted() {
        let mut data = boxed(b"ftyp", b"isom\0\0\0\0");
        let mut mdat = boxed(b"mdat", &[0; 100]);
        mdat.truncate(50);
        data.extend_from_slice(&mdat);
        assert_eq!(split_boxes(&data, true).unwrap().len(), 2);
    }

    #[test]
    fn a_trun_claiming_more_samples_than_bytes_is_rejected() {
        let mut body = 0x0000_0300u32.to_be_bytes().to_vec();
        body.extend_from_slice(&1_000_000u32.to_be_bytes());
        body.extend_from_slice(&[0; 16]);
        let mut out = Vec::new();
        let err =
            parse_trun(&body, &TrackDefaults::default(), &mut 0, &mut out, 1 << 20).unwrap_err();
        assert_eq!(err.code_str(), "ih5002");
        assert!(out.is_empty());
    }
}
