//! The movie box (`moov`): tracks, their edit lists and their sample tables, and how a
//! sample's decode time becomes a presentation time.

use super::boxes::{bad, child, children, split_boxes, timescale_duration, validate_tree, Mp4Box};
use super::entry::{parse_stsd, visual_config};
use crate::bytes::Cursor;
use crate::error::MediaError;
use crate::info::{Track, TrackKind};

/// Per-track defaults for fragment samples (`trex` in the `mvex` of the movie box, overridden
/// by a fragment's `tfhd`).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Defaults {
    pub(super) duration: u32,
    pub(super) size: u32,
    pub(super) flags: u32,
}

/// `trex` boxes of an `mvex`: (track id, defaults).
pub(super) fn parse_trex(mvex: &[Mp4Box<'_>]) -> Vec<(u32, Defaults)> {
    mvex.iter()
        .filter(|b| &b.kind == b"trex")
        .filter_map(|b| {
            let mut c = Cursor::new(b.body);
            c.skip(4)?;
            let id = c.u32_be()?;
            c.skip(4)?;
            Some((
                id,
                Defaults {
                    duration: c.u32_be()?,
                    size: c.u32_be()?,
                    flags: c.u32_be()?,
                },
            ))
        })
        .collect()
}

/// The first edit of a track that maps media time: where presentation starts.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Edit {
    /// Movie-timescale duration of leading empty edits (presentation starts later).
    pub(super) empty_lead: u64,
    /// Media time (track timescale) presented first.
    pub(super) media_time: i64,
    /// Movie-timescale duration of that edit; 0 means "to the end".
    pub(super) duration: u64,
}

/// A sample of a track, from the sample tables or a fragment.
#[derive(Debug, Clone, Copy)]
pub(super) struct Sample {
    /// Decode time, track timescale.
    pub(super) dts: u64,
    /// Composition offset, track timescale.
    pub(super) cts_offset: i64,
    /// Duration, track timescale.
    pub(super) duration: u32,
    pub(super) size: u32,
    pub(super) sync: bool,
    /// Input offset of the sample's bytes; `u64::MAX` when no chunk offset places it.
    pub(super) offset: u64,
}

/// What the movie box says of one video or audio track.
#[derive(Debug, Clone)]
pub(super) struct TrakInfo {
    pub(super) id: u32,
    pub(super) track: Track,
    pub(super) timescale: u32,
    /// `mdhd` duration in track timescale.
    pub(super) media_duration: u64,
    pub(super) edit: Option<Edit>,
    /// The samples of the sample tables, then (whole files) those of the fragments.
    pub(super) samples: Vec<Sample>,
    /// The video sample entry's decoder configuration box body (`avcC`), if any.
    pub(super) config: Option<Vec<u8>>,
    /// Fragment defaults (`trex`).
    pub(super) defaults: Defaults,
    /// Decode time of the next sample when a fragment has no `tfdt`.
    pub(super) next_dts: u64,
}

/// A parsed movie box.
#[derive(Debug, Clone)]
pub(super) struct Movie {
    pub(super) timescale: u32,
    pub(super) duration: u64,
    /// Video and audio tracks, in file order.
    pub(super) traks: Vec<TrakInfo>,
    /// Whether the movie declares fragments (`mvex`).
    pub(super) fragmented: bool,
}

impl Movie {
    /// Parses a `moov` body. `limit` bounds the samples a table may declare: the input's
    /// length (every sample takes at least a byte of it or a table entry).
    pub(super) fn parse(body: &[u8], limit: usize) -> Result<Self, MediaError> {
        // Every box down the tree lies within its parent before any is read.
        validate_tree(body, 1)?;
        let kids = split_boxes(body)?;
        let (timescale, duration) = child(&kids, b"mvhd")
            .and_then(|b| timescale_duration(b.body))
            .ok_or_else(|| bad("missing or short mvhd"))?;
        let mvex = child(&kids, b"mvex");
        let trex = parse_trex(&children(mvex)?);
        let mut traks = Vec::new();
        for trak in kids.iter().filter(|b| &b.kind == b"trak") {
            if let Some(mut t) = parse_trak(trak.body, limit)? {
                if let Some((_, d)) = trex.iter().find(|(id, _)| *id == t.id) {
                    t.defaults = *d;
                }
                traks.push(t);
            }
        }
        Ok(Self {
            timescale,
            duration,
            traks,
            fragmented: mvex.is_some(),
        })
    }

    /// The first track of `kind`, by index.
    pub(super) fn first(&self, kind: TrackKind) -> Option<usize> {
        self.traks.iter().position(|t| t.track.kind == kind)
    }

    /// How `trak`'s samples are placed on the presentation timeline; `None` for a timescale
    /// of 0.
    pub(super) fn timeline(&self, trak: &TrakInfo) -> Option<Timeline> {
        Timeline::new(trak.timescale, self.timescale, trak.edit)
    }
}

/// Where a track's samples are presented: its edit list applied to its decode and composition
/// times, in seconds on the media clock.
#[derive(Debug, Clone, Copy)]
pub(super) struct Timeline {
    timescale: f64,
    /// Media time presented first, track timescale.
    start: i64,
    /// Seconds of empty edits before it.
    lead: f64,
    /// Media time (seconds) at which the edit ends.
    end: Option<f64>,
}

impl Timeline {
    fn new(timescale: u32, movie_timescale: u32, edit: Option<Edit>) -> Option<Self> {
        if timescale == 0 {
            return None;
        }
        let ts = f64::from(timescale);
        let edit = edit.unwrap_or_default();
        let lead = if movie_timescale > 0 {
            edit.empty_lead as f64 / f64::from(movie_timescale)
        } else {
            0.0
        };
        let start = edit.media_time.max(0);
        let end = (edit.duration > 0 && movie_timescale > 0)
            .then(|| start as f64 / ts + edit.duration as f64 / f64::from(movie_timescale));
        Some(Self {
            timescale: ts,
            start,
            lead,
            end,
        })
    }

    /// A sample's presentation time in seconds and whether the edit list shows it: frames
    /// before the edit's media time are decoded only to reach the first shown frame, and
    /// those past the edit's end are not presented either.
    pub(super) fn place(&self, s: &Sample) -> (f64, bool) {
        let pts_ticks = (s.dts as i64).saturating_add(s.cts_offset);
        let media = pts_ticks as f64 / self.timescale;
        let shown = pts_ticks >= self.start && !self.end.is_some_and(|e| media >= e - 1e-9);
        (
            media - self.start as f64 / self.timescale + self.lead,
            shown,
        )
    }
}

/// One `trak`, or `None` for a track that is neither video nor audio.
fn parse_trak(body: &[u8], limit: usize) -> Result<Option<TrakInfo>, MediaError> {
    let kids = split_boxes(body)?;
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
        .and_then(|b| timescale_duration(b.body))
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
    let next_dts = samples
        .last()
        .map_or(0, |s| s.dts.saturating_add(u64::from(s.duration)));
    Ok(Some(TrakInfo {
        id,
        track,
        timescale,
        media_duration,
        edit,
        samples,
        config,
        defaults: Defaults::default(),
        next_dts,
    }))
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
