//! Fragmented MP4 as a stream: an init segment (`ftyp` + `moov` with `mvex`), then `moof` +
//! `mdat` pairs, cut anywhere.
//!
//! Top-level boxes are read whole only when they are small structure (`ftyp`, `moov`, `moof`,
//! each up to the reader's element cap); an `mdat` is never buffered whole: the samples its
//! `moof` located are cut out as their bytes arrive, and the bytes between them are dropped.
//! Other boxes (`styp`, `sidx`, `free`, `emsg`, `mfra`, ...) are skipped as they stream past.
//!
//! The init segment goes through the file path's MP4 reader, so the audio decoder and its start
//! corrections (edit list media time, empty edits) are exactly those of the same file uploaded
//! whole; video timing follows the same edit-list rules as the file path's frame list.

use std::collections::VecDeque;

use symphonia::core::packet::Packet;
use symphonia::core::units::{Duration as SymDuration, Timestamp};

use super::{Demuxer, Event, LiveProblem};
use crate::audio::AudioSetup;
use crate::bytes::Cursor;
use crate::error::MediaError;
use crate::info::{TrackKind, VideoFrameInfo};
use crate::queue::ByteQueue;

/// The most samples one `moof` may describe (about 5 s of PCM at 48 kHz, one sample per
/// frame; compressed fragments hold a few hundred).
const MAX_FRAGMENT_SAMPLES: usize = 1 << 18;
/// The largest `ftyp` accepted.
const MAX_FTYP: u64 = 64 * 1024;

/// A box header at the start of `b`: `(type, total size or None for "to the end", header len)`.
enum BoxHeader {
    Incomplete,
    Invalid,
    Done([u8; 4], Option<u64>, usize),
}

fn box_header(b: &[u8]) -> BoxHeader {
    let mut c = Cursor::new(b);
    let (Some(size32), Some(kind)) = (c.u32_be(), c.array::<4>()) else {
        return BoxHeader::Incomplete;
    };
    if !kind.iter().all(|&x| x.is_ascii_graphic() || x == b' ') {
        return BoxHeader::Invalid;
    }
    match size32 {
        0 => BoxHeader::Done(kind, None, 8),
        1 => match c.u64_be() {
            Some(size) if size >= 16 => BoxHeader::Done(kind, Some(size), 16),
            Some(_) => BoxHeader::Invalid,
            None => BoxHeader::Incomplete,
        },
        n if n < 8 => BoxHeader::Invalid,
        n => BoxHeader::Done(kind, Some(u64::from(n)), 8),
    }
}

/// The child boxes `(type, body)` of a box body, up to the first malformed one.
fn boxes(mut b: &[u8]) -> impl Iterator<Item = ([u8; 4], &[u8])> {
    std::iter::from_fn(move || {
        let BoxHeader::Done(kind, size, header) = box_header(b) else {
            return None;
        };
        let end = usize::try_from(size.unwrap_or(b.len() as u64)).ok()?;
        let body = b.get(header..end)?;
        b = &b[end..];
        Some((kind, body))
    })
}

fn child<'a>(b: &'a [u8], kind: &[u8; 4]) -> Option<&'a [u8]> {
    boxes(b).find(|(k, _)| k == kind).map(|(_, body)| body)
}

/// Per-track defaults for fragment samples (`trex`, overridden by `tfhd`).
#[derive(Debug, Clone, Copy, Default)]
struct Defaults {
    duration: u32,
    size: u32,
    flags: u32,
}

/// The first edit that maps media time (as the file reader reads `elst`).
#[derive(Debug, Clone, Copy, Default)]
struct Edit {
    empty_lead: u64,
    media_time: i64,
    duration: u64,
}

/// What the init segment says about one track this demuxer reads.
#[derive(Debug, Clone, Copy)]
struct TrackInit {
    id: u32,
    timescale: u32,
    defaults: Defaults,
    edit: Edit,
    /// Decode time of the next sample when a fragment has no `tfdt`.
    next_dts: u64,
}

/// One sample located by a `moof`.
#[derive(Debug, Clone, Copy)]
struct SampleRef {
    offset: u64,
    size: u32,
    dts: u64,
    cts: i64,
    sync: bool,
}

/// An incremental fragmented MP4 demuxer.
pub(crate) struct Fmp4Demuxer {
    q: ByteQueue,
    max_box: u64,
    skip: u64,
    /// `Some(end)` while inside an `mdat` (`None` inside: runs to the end of the stream).
    in_mdat: Option<Option<u64>>,
    ftyp: Option<Vec<u8>>,
    /// Stream position where the current file began (base of `base_data_offset`).
    file_start: u64,
    movie_timescale: u32,
    audio: Option<TrackInit>,
    video: Option<TrackInit>,
    has_init: bool,
    audio_samples: VecDeque<SampleRef>,
    video_samples: VecDeque<SampleRef>,
    resyncing: bool,
    /// Bytes the resynchronisation scan dropped during the current feed.
    resync_dropped: usize,
}

impl Fmp4Demuxer {
    /// A demuxer reading no structure box larger than `max_box` bytes.
    pub(crate) fn new(max_box: usize) -> Self {
        Self {
            q: ByteQueue::default(),
            max_box: max_box as u64,
            skip: 0,
            in_mdat: None,
            ftyp: None,
            file_start: 0,
            movie_timescale: 0,
            audio: None,
            video: None,
            has_init: false,
            audio_samples: VecDeque::new(),
            video_samples: VecDeque::new(),
            resyncing: false,
            resync_dropped: 0,
        }
    }

    fn damaged(&mut self, reason: impl Into<String>, out: &mut Vec<Event>) {
        out.push(Event::Problem(LiveProblem::Unreadable {
            reason: reason.into(),
        }));
        self.resyncing = true;
        self.in_mdat = None;
        self.skip = 0;
        self.audio_samples.clear();
        self.video_samples.clear();
        // Step past the damaged header so the scan does not find it again.
        self.q.consume(1);
    }

    /// Scans for the next box that starts a file or a fragment.
    fn resync(&mut self) -> bool {
        let b = self.q.bytes();
        let found = b.windows(8).position(|w| {
            matches!(&w[4..], b"moof" | b"ftyp" | b"moov" | b"styp")
                && u32::from_be_bytes([w[0], w[1], w[2], w[3]]) >= 8
        });
        match found {
            Some(i) => {
                self.resync_dropped += self.q.consume(i);
                self.resyncing = false;
                true
            }
            None => {
                let keep = self.q.len().min(7);
                self.resync_dropped += self.q.consume(self.q.len() - keep);
                false
            }
        }
    }

    /// Reads the init segment's `moov`.
    fn parse_moov(&mut self, element: &[u8], body: &[u8], out: &mut Vec<Event>) {
        let mut init = self.ftyp.clone().unwrap_or_else(|| {
            // The file reader wants a brand; an init segment without one is read as ISO.
            let mut f = 16u32.to_be_bytes().to_vec();
            f.extend_from_slice(b"ftypisom\0\0\0\0");
            f
        });
        init.extend_from_slice(element);
        let reader = match crate::formats::open(&init) {
            Ok(r) => r,
            Err(e) => {
                self.damaged(format!("init segment: {e}"), out);
                return;
            }
        };
        let tracks = reader.tracks();
        let setup = match reader.audio_track() {
            Ok(t) => Some(AudioSetup {
                codec: t.codec,
                skip: t.skip,
                lead: t.lead,
            }),
            Err(MediaError::NoAudioStream) => None,
            Err(e) => {
                out.push(Event::Problem(LiveProblem::from_media(&e)));
                None
            }
        };
        if child(body, b"mvex").is_none() {
            out.push(Event::Problem(LiveProblem::Unreadable {
                reason: "an MP4 without fragments cannot be streamed; send it whole".into(),
            }));
        }
        self.movie_timescale = child(body, b"mvhd").and_then(timescale).unwrap_or(0);
        let trex = child(body, b"mvex").map(parse_trex).unwrap_or_default();
        self.audio = None;
        self.video = None;
        for trak in boxes(body).filter(|(k, _)| k == b"trak").map(|(_, b)| b) {
            let Some((kind, mut t)) = parse_trak(trak) else {
                continue;
            };
            if let Some((_, d)) = trex.iter().find(|(id, _)| *id == t.id) {
                t.defaults = *d;
            }
            let slot = match kind {
                TrackKind::Audio => &mut self.audio,
                TrackKind::Video => &mut self.video,
            };
            slot.get_or_insert(t);
        }
        if setup.is_none() {
            self.audio = None;
        }
        out.push(Event::Header {
            container: reader.container(),
            has_video: tracks.iter().any(|t| t.kind == TrackKind::Video),
            has_audio: tracks.iter().any(|t| t.kind == TrackKind::Audio),
        });
        if let Some(setup) = setup {
            out.push(Event::AudioSetup(setup));
        }
        self.has_init = true;
    }

    /// Locates the samples of one `moof` (whose first byte is at `moof_start`).
    fn parse_moof(&mut self, moof_start: u64, body: &[u8], out: &mut Vec<Event>) {
        self.audio_samples.clear();
        self.video_samples.clear();
        let mut next_base = moof_start;
        let mut total = 0usize;
        for traf in boxes(body).filter(|(k, _)| k == b"traf").map(|(_, b)| b) {
            let Some(tfhd) = child(traf, b"tfhd") else {
                continue;
            };
            let mut c = Cursor::new(tfhd);
            let (Some(flags), Some(track_id)) = (c.u32_be(), c.u32_be()) else {
                return self.damaged("short tfhd", out);
            };
            let flags = flags & 0x00ff_ffff;
            let which = if self.audio.is_some_and(|t| t.id == track_id) {
                Some(TrackKind::Audio)
            } else if self.video.is_some_and(|t| t.id == track_id) {
                Some(TrackKind::Video)
            } else {
                None
            };
            let mut defaults = match which {
                Some(TrackKind::Audio) => self.audio.map(|t| t.defaults),
                Some(TrackKind::Video) => self.video.map(|t| t.defaults),
                None => None,
            }
            .unwrap_or_default();
            let mut base = if flags & 0x2_0000 != 0 {
                moof_start
            } else {
                next_base
            };
            let fields = (|| {
                if flags & 0x1 != 0 {
                    base = self.file_start.checked_add(c.u64_be()?)?;
                }
                if flags & 0x2 != 0 {
                    c.skip(4)?;
                }
                if flags & 0x8 != 0 {
                    defaults.duration = c.u32_be()?;
                }
                if flags & 0x10 != 0 {
                    defaults.size = c.u32_be()?;
                }
                if flags & 0x20 != 0 {
                    defaults.flags = c.u32_be()?;
                }
                Some(())
            })();
            if fields.is_none() {
                return self.damaged("short tfhd", out);
            }
            let track = match which {
                Some(TrackKind::Audio) => self.audio.as_mut(),
                Some(TrackKind::Video) => self.video.as_mut(),
                None => None,
            };
            let mut dts = match child(traf, b"tfdt") {
                Some(tfdt) => {
                    let mut c = Cursor::new(tfdt);
                    let v = c.u8().and_then(|v| c.skip(3).map(|_| v));
                    match v {
                        Some(1) => c.u64_be(),
                        Some(_) => c.u32_be().map(u64::from),
                        None => None,
                    }
                    .unwrap_or(0)
                }
                None => track.as_ref().map_or(0, |t| t.next_dts),
            };
            let mut data_pos = base;
            let mut samples = Vec::new();
            for trun in boxes(traf).filter(|(k, _)| k == b"trun").map(|(_, b)| b) {
                let room = MAX_FRAGMENT_SAMPLES.saturating_sub(total);
                match parse_trun(trun, &defaults, base, &mut data_pos, &mut dts, room) {
                    Some(mut s) => {
                        total += s.len();
                        samples.append(&mut s);
                    }
                    None => return self.damaged("malformed trun", out),
                }
            }
            next_base = data_pos;
            if let Some(track) = track {
                track.next_dts = dts;
                match which {
                    Some(TrackKind::Audio) => self.audio_samples.extend(samples),
                    _ => self.video_samples.extend(samples),
                }
            }
        }
    }

    /// Cuts out the samples whose bytes have arrived; `false` when it needs more.
    fn read_mdat(&mut self, end: Option<u64>, out: &mut Vec<Event>) -> bool {
        loop {
            let pos = self.q.pos();
            if end.is_some_and(|e| pos >= e) {
                self.leave_mdat();
                return true;
            }
            // Per track in decode order; between tracks, in file order.
            let take_audio = match (self.audio_samples.front(), self.video_samples.front()) {
                (Some(a), Some(v)) => a.offset <= v.offset,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (None, None) => {
                    match end {
                        Some(e) => {
                            self.skip = e - pos;
                            self.leave_mdat();
                        }
                        None => {
                            // An mdat to the end of the stream with nothing left to read.
                            let n = self.q.len();
                            self.q.consume(n);
                            return false;
                        }
                    }
                    return true;
                }
            };
            let queue = if take_audio {
                &mut self.audio_samples
            } else {
                &mut self.video_samples
            };
            let Some(&s) = queue.front() else {
                return true;
            };
            let sample_end = s.offset.saturating_add(u64::from(s.size));
            if s.offset < pos
                || end.is_some_and(|e| sample_end > e)
                || u64::from(s.size) > self.max_box
            {
                // Outside this mdat or already behind: not in the stream as it is read.
                queue.pop_front();
                continue;
            }
            if s.offset > pos {
                let gap = usize::try_from(s.offset - pos).unwrap_or(usize::MAX);
                if self.q.consume(gap) < gap {
                    return false;
                }
            }
            let size = s.size as usize;
            if self.q.len() < size {
                return false;
            }
            queue.pop_front();
            let data = &self.q.bytes()[..size];
            if take_audio {
                out.push(Event::Audio(Packet::new(
                    0,
                    Timestamp::new(0),
                    SymDuration::new(0),
                    data,
                )));
            } else if let Some(frame) = self.video_frame(&s) {
                out.push(Event::Video(frame, None));
            }
            self.q.consume(size);
        }
    }

    fn leave_mdat(&mut self) {
        self.in_mdat = None;
        self.audio_samples.clear();
        self.video_samples.clear();
    }

    /// A video sample as the file path lists it, `None` when the edit list hides it.
    fn video_frame(&self, s: &SampleRef) -> Option<VideoFrameInfo> {
        let track = self.video?;
        if track.timescale == 0 {
            return None;
        }
        let ts = f64::from(track.timescale);
        let edit = track.edit;
        let lead = if self.movie_timescale > 0 {
            edit.empty_lead as f64 / f64::from(self.movie_timescale)
        } else {
            0.0
        };
        let start = edit.media_time.max(0);
        let end = (edit.duration > 0 && self.movie_timescale > 0)
            .then(|| start as f64 / ts + edit.duration as f64 / f64::from(self.movie_timescale));
        let pts_ticks = (s.dts as i64).saturating_add(s.cts);
        if pts_ticks < start {
            return None;
        }
        let media = pts_ticks as f64 / ts;
        if end.is_some_and(|e| media >= e - 1e-9) {
            return None;
        }
        Some(VideoFrameInfo {
            pts: media - start as f64 / ts + lead,
            size: s.size,
            keyframe: s.sync,
        })
    }

    /// One step; `false` when more bytes are needed.
    fn step(&mut self, out: &mut Vec<Event>) -> bool {
        if self.skip > 0 {
            let n = self
                .q
                .consume(usize::try_from(self.skip).unwrap_or(usize::MAX));
            self.skip -= n as u64;
            return self.skip == 0;
        }
        if self.resyncing {
            return self.resync();
        }
        if let Some(end) = self.in_mdat {
            return self.read_mdat(end, out);
        }
        let pos = self.q.pos();
        let (kind, size, header) = match box_header(self.q.bytes()) {
            BoxHeader::Incomplete => return false,
            BoxHeader::Invalid => {
                self.damaged("invalid box header", out);
                return true;
            }
            BoxHeader::Done(kind, size, header) => (kind, size, header),
        };
        let cap = match &kind {
            b"ftyp" => MAX_FTYP,
            b"moov" | b"moof" => self.max_box,
            b"mdat" => {
                self.q.consume(header);
                if !self.has_init {
                    out.push(Event::Problem(LiveProblem::MissingHeader {
                        reason: "media data before any init segment".into(),
                    }));
                }
                match size {
                    Some(s) => {
                        let end = pos + s;
                        self.in_mdat = Some(Some(end));
                    }
                    None => self.in_mdat = Some(None),
                }
                return true;
            }
            _ => {
                let Some(size) = size else {
                    self.damaged(format!("box {} of unknown size", fourcc(&kind)), out);
                    return true;
                };
                self.q.consume(header);
                self.skip = size - header as u64;
                return true;
            }
        };
        let Some(size) = size.filter(|&s| s <= cap) else {
            self.damaged(format!("box {} too large", fourcc(&kind)), out);
            return true;
        };
        let total = size as usize;
        if self.q.len() < total {
            return false;
        }
        let element = self.q.bytes()[..total].to_vec();
        self.q.consume(total);
        let body = &element[header..];
        match &kind {
            b"ftyp" => {
                if self.has_init {
                    out.push(Event::NewFile);
                    self.has_init = false;
                }
                self.file_start = pos;
                self.ftyp = Some(element.clone());
            }
            b"moov" => {
                if self.has_init {
                    // A new init segment without its own ftyp: a new file all the same.
                    out.push(Event::NewFile);
                    self.file_start = pos;
                    self.ftyp = None;
                }
                if self.ftyp.is_none() {
                    self.file_start = pos;
                }
                self.parse_moov(&element, body, out);
            }
            _ => {
                if self.has_init {
                    self.parse_moof(pos, body, out);
                } else {
                    out.push(Event::Problem(LiveProblem::MissingHeader {
                        reason: "a movie fragment before any init segment".into(),
                    }));
                }
            }
        }
        true
    }
}

impl Demuxer for Fmp4Demuxer {
    fn feed(&mut self, data: &[u8], out: &mut Vec<Event>) {
        self.q.extend(data);
        self.resync_dropped = 0;
        // Every step consumes bytes, changes state or waits; a step that consumes nothing four
        // times in a row means a bug, and stops the loop rather than spin.
        let mut idle = 0;
        while idle < 4 {
            let before = self.q.pos();
            if !self.step(out) {
                break;
            }
            idle = if self.q.pos() == before { idle + 1 } else { 0 };
        }
        if self.resync_dropped > 0 {
            out.push(Event::Problem(LiveProblem::Unreadable {
                reason: format!("{} bytes skipped to resynchronise", self.resync_dropped),
            }));
        }
    }

    fn finish(&mut self, _out: &mut Vec<Event>) {
        self.q.clear();
        self.skip = 0;
        self.leave_mdat();
    }

    fn pending_bytes(&self) -> usize {
        self.q.len()
    }
}

fn fourcc(kind: &[u8; 4]) -> String {
    String::from_utf8_lossy(kind).into_owned()
}

/// The timescale of an `mvhd` or `mdhd` body.
fn timescale(body: &[u8]) -> Option<u32> {
    let mut c = Cursor::new(body);
    let version = c.u8()?;
    c.skip(3 + if version == 1 { 16 } else { 8 })?;
    c.u32_be()
}

/// `trex` boxes of an `mvex`: (track id, defaults).
fn parse_trex(mvex: &[u8]) -> Vec<(u32, Defaults)> {
    boxes(mvex)
        .filter(|(k, _)| k == b"trex")
        .filter_map(|(_, b)| {
            let mut c = Cursor::new(b);
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

/// A `trak`: its kind and what fragments need, or `None` for other tracks.
fn parse_trak(trak: &[u8]) -> Option<(TrackKind, TrackInit)> {
    let tkhd = child(trak, b"tkhd")?;
    let mut c = Cursor::new(tkhd);
    let version = c.u8()?;
    c.skip(3 + if version == 1 { 16 } else { 8 })?;
    let id = c.u32_be()?;
    let mdia = child(trak, b"mdia")?;
    let kind = match child(mdia, b"hdlr").and_then(|h| h.get(8..12)) {
        Some(b"vide") => TrackKind::Video,
        Some(b"soun") => TrackKind::Audio,
        _ => return None,
    };
    let timescale = child(mdia, b"mdhd").and_then(timescale)?;
    let edit = child(trak, b"edts")
        .and_then(|e| child(e, b"elst"))
        .and_then(parse_elst)
        .unwrap_or_default();
    Some((
        kind,
        TrackInit {
            id,
            timescale,
            defaults: Defaults::default(),
            edit,
            next_dts: 0,
        },
    ))
}

/// The first presenting edit of an `elst`, with the duration of the empty edits before it.
fn parse_elst(body: &[u8]) -> Option<Edit> {
    let mut c = Cursor::new(body);
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

/// Whether fragment sample flags mark a sync sample.
fn is_sync(flags: u32) -> bool {
    flags & 0x0001_0000 == 0
}

/// One `trun`: its samples with their stream offsets, or `None` when it is malformed or holds
/// more than `room` samples. `data_pos` is where the previous run's data ended.
fn parse_trun(
    body: &[u8],
    defaults: &Defaults,
    base: u64,
    data_pos: &mut u64,
    dts: &mut u64,
    room: usize,
) -> Option<Vec<SampleRef>> {
    let mut c = Cursor::new(body);
    let version_flags = c.u32_be()?;
    let version = version_flags >> 24;
    let flags = version_flags & 0x00ff_ffff;
    let count = c.u32_be()? as usize;
    if flags & 0x1 != 0 {
        let offset = i64::from(c.i32_be()?);
        *data_pos = base.checked_add_signed(offset)?;
    }
    let first_flags = if flags & 0x4 != 0 {
        Some(c.u32_be()?)
    } else {
        None
    };
    let per_sample = [0x100, 0x200, 0x400, 0x800]
        .iter()
        .filter(|&&f| flags & f != 0)
        .count()
        * 4;
    if count > room || (per_sample > 0 && count > c.remaining() / per_sample) {
        return None;
    }
    let mut out = Vec::with_capacity(count);
    for i in 0..count {
        let duration = if flags & 0x100 != 0 {
            c.u32_be()?
        } else {
            defaults.duration
        };
        let size = if flags & 0x200 != 0 {
            c.u32_be()?
        } else {
            defaults.size
        };
        let sflags = if flags & 0x400 != 0 {
            c.u32_be()?
        } else if i == 0 {
            first_flags.unwrap_or(defaults.flags)
        } else {
            defaults.flags
        };
        let cts = if flags & 0x800 != 0 {
            let raw = c.u32_be()?;
            if version == 0 {
                i64::from(raw)
            } else {
                i64::from(raw as i32)
            }
        } else {
            0
        };
        out.push(SampleRef {
            offset: *data_pos,
            size,
            dts: *dts,
            cts,
            sync: is_sync(sflags),
        });
        *data_pos = data_pos.saturating_add(u64::from(size));
        *dts = dts.saturating_add(u64::from(duration));
    }
    Some(out)
}
