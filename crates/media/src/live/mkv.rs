//! Matroska and WebM as a stream: EBML elements parsed as their bytes arrive, as MediaRecorder
//! writes them (header and Tracks first, then Clusters, Segment and Clusters of unknown size).
//!
//! Only elements that must be read whole are buffered (the EBML header, Info, Tracks, a
//! cluster's Timestamp, each SimpleBlock or BlockGroup), each up to the reader's element cap;
//! everything else is skipped as it streams past, so a huge declared size never allocates.
//! Segments and Clusters are entered, not buffered. A malformed element makes the demuxer
//! report the problem and resynchronise on the next Cluster or EBML header ID.
//!
//! Tracks and codec setup come from the file path's Matroska reader, run on the header bytes
//! alone, so a stream decodes with the same parameters and start corrections as the same bytes
//! uploaded as a file; blocks are cut here exactly as that reader cuts them.

use symphonia::core::packet::Packet;
use symphonia::core::units::{Duration as SymDuration, Timestamp};

use super::audio::AudioSetup;
use super::queue::ByteQueue;
use super::{Demuxer, Event, LiveProblem};
use crate::audio::AudioCodec;
use crate::bytes::Cursor;
use crate::error::MediaError;
use crate::info::{Container, TrackKind, VideoFrameInfo};

const ID_EBML: u32 = 0x1A45_DFA3;
const ID_DOCTYPE: u32 = 0x4282;
const ID_SEGMENT: u32 = 0x1853_8067;
const ID_SEEK_HEAD: u32 = 0x114D_9B74;
const ID_INFO: u32 = 0x1549_A966;
const ID_TIMESTAMP_SCALE: u32 = 0x2A_D7B1;
const ID_TRACKS: u32 = 0x1654_AE6B;
const ID_TRACK_ENTRY: u32 = 0xAE;
const ID_TRACK_NUMBER: u32 = 0xD7;
const ID_TRACK_TYPE: u32 = 0x83;
const ID_CUES: u32 = 0x1C53_BB6B;
const ID_TAGS: u32 = 0x1254_C367;
const ID_CHAPTERS: u32 = 0x1043_A770;
const ID_ATTACHMENTS: u32 = 0x1941_A469;
const ID_VOID: u32 = 0xEC;
const ID_CRC32: u32 = 0xBF;
const ID_CLUSTER: u32 = 0x1F43_B675;
const ID_CLUSTER_TIMESTAMP: u32 = 0xE7;
const ID_SIMPLE_BLOCK: u32 = 0xA3;
const ID_BLOCK_GROUP: u32 = 0xA0;
const ID_BLOCK: u32 = 0xA1;
const ID_REFERENCE_BLOCK: u32 = 0xFB;
const ID_DISCARD_PADDING: u32 = 0x75A2;

/// The largest EBML header or Info element accepted; real ones are well under 1 KiB.
const MAX_SMALL_ELEMENT: u64 = 64 * 1024;

/// What the next bytes hold.
enum Parse<T> {
    /// Not enough bytes yet.
    Incomplete,
    /// Bytes that cannot be what was expected.
    Invalid,
    /// The value and how many bytes it took.
    Done(T, usize),
}

/// An element header at the start of `b`: `(id, size)`, size `None` when unknown.
fn element_header(b: &[u8]) -> Parse<(u32, Option<u64>)> {
    let Some(&first) = b.first() else {
        return Parse::Incomplete;
    };
    let id_len = first.leading_zeros() as usize + 1;
    if id_len > 4 {
        return Parse::Invalid;
    }
    let Some(id_bytes) = b.get(..id_len) else {
        return Parse::Incomplete;
    };
    let id = id_bytes
        .iter()
        .fold(0u32, |acc, &x| (acc << 8) | u32::from(x));
    match vint(&b[id_len..]) {
        Parse::Done(size, n) => Parse::Done((id, size), id_len + n),
        Parse::Incomplete => Parse::Incomplete,
        Parse::Invalid => Parse::Invalid,
    }
}

/// A variable-length integer with its marker removed; `None` is the reserved "unknown" value.
fn vint(b: &[u8]) -> Parse<Option<u64>> {
    let Some(&first) = b.first() else {
        return Parse::Incomplete;
    };
    let len = first.leading_zeros() as usize + 1;
    if len > 8 {
        return Parse::Invalid;
    }
    let Some(bytes) = b.get(..len) else {
        return Parse::Incomplete;
    };
    let mask = (0xffu32 >> len) as u8;
    let mut value = u64::from(first & mask);
    let mut all_ones = first & mask == mask;
    for &x in &bytes[1..] {
        all_ones &= x == 0xff;
        value = (value << 8) | u64::from(x);
    }
    Parse::Done(if all_ones { None } else { Some(value) }, len)
}

/// The child elements `(id, body)` of a master element's body, up to the first malformed one.
fn children(mut b: &[u8]) -> impl Iterator<Item = (u32, &[u8])> {
    std::iter::from_fn(move || {
        let Parse::Done((id, Some(size)), n) = element_header(b) else {
            return None;
        };
        let end = n.checked_add(usize::try_from(size).ok()?)?;
        let body = b.get(n..end)?;
        b = &b[end..];
        Some((id, body))
    })
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

/// A vint read through a cursor, as block headers and EBML lacing store them.
fn cursor_vint(c: &mut Cursor<'_>) -> Option<Option<u64>> {
    let mut peek = *c;
    match vint(peek.rest()) {
        Parse::Done(v, n) => {
            c.skip(n)?;
            Some(v)
        }
        _ => None,
    }
}

/// The frame sizes of a block body after its header, for lacing mode `mode` (0 none, 1 Xiph,
/// 2 fixed, 3 EBML); the same rules as the file reader's.
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
            let first = cursor_vint(c)??;
            let mut size = i64::try_from(first).ok()?;
            sizes.push(usize::try_from(size).ok()?);
            for _ in 1..count - 1 {
                let start = c.pos();
                let raw = cursor_vint(c)??;
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

/// Where in the element tree the parser stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    /// Before or between files: an EBML header or a Segment is expected.
    Top,
    /// Inside a Segment.
    Segment,
    /// Inside a Cluster.
    Cluster,
    /// After damage: scanning for the next Cluster or EBML header ID.
    Resync,
}

/// The tracks of the current file this demuxer reads.
struct Tracks {
    audio: Option<u64>,
    video: Option<u64>,
    /// Rate of the audio decoder's output, to turn `DiscardPadding` into frames.
    audio_out_rate: u32,
    /// Decoder setup, handed out with the first audio block (which fixes the lead).
    setup: Option<AudioSetup>,
}

/// An incremental Matroska/WebM demuxer.
pub(crate) struct MkvDemuxer {
    q: ByteQueue,
    level: Level,
    /// Bytes of an ignored element still to drop.
    skip: u64,
    max_element: u64,
    /// Raw bytes of the current file's EBML header and Info, to rebuild its header.
    ebml: Option<Vec<u8>>,
    info: Option<Vec<u8>>,
    container: Container,
    scale: u64,
    segment_end: Option<u64>,
    cluster_end: Option<u64>,
    cluster_unknown: bool,
    cluster_ts: u64,
    tracks: Option<Tracks>,
    /// Whether a header was ever read, so a later one starts a new file.
    had_file: bool,
    /// Whether a cluster without a preceding Tracks was already reported for this file.
    reported_headerless: bool,
    /// Bytes the resynchronisation scan dropped during the current feed.
    resync_dropped: usize,
}

impl MkvDemuxer {
    /// A demuxer buffering no element larger than `max_element` bytes.
    pub(crate) fn new(max_element: usize) -> Self {
        Self {
            q: ByteQueue::default(),
            level: Level::Top,
            skip: 0,
            max_element: max_element as u64,
            ebml: None,
            info: None,
            container: Container::WebM,
            scale: 1_000_000,
            segment_end: None,
            cluster_end: None,
            cluster_unknown: false,
            cluster_ts: 0,
            tracks: None,
            had_file: false,
            reported_headerless: false,
            resync_dropped: 0,
        }
    }

    /// Forgets the current file's header, for the next one.
    fn reset_file(&mut self) {
        self.ebml = None;
        self.info = None;
        self.scale = 1_000_000;
        self.segment_end = None;
        self.cluster_end = None;
        self.tracks = None;
        self.reported_headerless = false;
    }

    /// Reports damage and starts looking for a place to resume.
    fn damaged(&mut self, reason: impl Into<String>, out: &mut Vec<Event>) {
        out.push(Event::Problem(LiveProblem::Unreadable {
            reason: reason.into(),
        }));
        self.level = Level::Resync;
        self.segment_end = None;
        self.cluster_end = None;
        self.skip = 0;
        // Step past the damaged header so the scan does not find it again.
        self.q.consume(1);
    }

    /// Scans for a Cluster or EBML header ID; returns whether one was found.
    fn resync(&mut self) -> bool {
        let b = self.q.bytes();
        let found = b
            .windows(4)
            .position(|w| w == ID_CLUSTER.to_be_bytes() || w == ID_EBML.to_be_bytes());
        match found {
            Some(i) => {
                let ebml = b[i..i + 4] == ID_EBML.to_be_bytes();
                self.resync_dropped += self.q.consume(i);
                self.level = if ebml || self.tracks.is_none() {
                    Level::Top
                } else {
                    Level::Segment
                };
                true
            }
            None => {
                // Keep what could be the start of an ID cut by the frame boundary.
                let keep = self.q.len().min(3);
                self.resync_dropped += self.q.consume(self.q.len() - keep);
                false
            }
        }
    }

    /// The element at the front, once whole: `(id, header length, body length)`; `None` to wait.
    fn whole(&self, header_len: usize, size: u64) -> Option<usize> {
        let total = header_len as u64 + size;
        (self.q.len() as u64 >= total).then_some(total as usize)
    }

    /// The end of the innermost enclosing element of known size, if any.
    fn parent_end(&self) -> Option<u64> {
        match self.level {
            Level::Cluster => self.cluster_end.or(self.segment_end),
            Level::Segment => self.segment_end,
            _ => None,
        }
    }

    fn parse_ebml_header(&mut self, element: &[u8], body: &[u8], out: &mut Vec<Event>) {
        let doctype = children(body)
            .find(|(id, _)| *id == ID_DOCTYPE)
            .map(|(_, b)| {
                String::from_utf8_lossy(b)
                    .trim_end_matches('\0')
                    .to_string()
            })
            .unwrap_or_else(|| "matroska".into());
        let container = match doctype.as_str() {
            "webm" => Container::WebM,
            "matroska" => Container::Matroska,
            other => {
                self.damaged(format!("EBML DocType {other:?} is not Matroska"), out);
                return;
            }
        };
        if self.had_file {
            out.push(Event::NewFile);
        }
        self.reset_file();
        self.had_file = true;
        self.container = container;
        self.ebml = Some(element.to_vec());
    }

    fn parse_tracks(&mut self, element: &[u8], body: &[u8], out: &mut Vec<Event>) {
        let Some(ebml) = &self.ebml else {
            out.push(Event::Problem(LiveProblem::MissingHeader {
                reason: "Tracks without an EBML header".into(),
            }));
            return;
        };
        // The file reader picks the first audio and first video entry that has a number.
        let (mut audio, mut video) = (None, None);
        for (_, entry) in children(body).filter(|(id, _)| *id == ID_TRACK_ENTRY) {
            let find = |want| {
                children(entry)
                    .find(|(id, _)| *id == want)
                    .and_then(|(_, b)| uint(b))
            };
            let (Some(number), Some(kind)) = (find(ID_TRACK_NUMBER), find(ID_TRACK_TYPE)) else {
                continue;
            };
            match kind {
                1 => video = video.or(Some(number)),
                2 => audio = audio.or(Some(number)),
                _ => {}
            }
        }
        // The header alone, as a file with an open-ended Segment, through the file reader.
        let mut header = ebml.clone();
        header.extend_from_slice(&[0x18, 0x53, 0x80, 0x67, 0x01, 0xff, 0xff, 0xff]);
        header.extend_from_slice(&[0xff, 0xff, 0xff, 0xff]);
        if let Some(info) = &self.info {
            header.extend_from_slice(info);
        }
        header.extend_from_slice(element);
        let reader = match crate::formats::open(&header) {
            Ok(r) => r,
            Err(e) => {
                self.damaged(format!("Tracks: {e}"), out);
                return;
            }
        };
        let tracks = reader.tracks();
        let has_video = tracks.iter().any(|t| t.kind == TrackKind::Video);
        let has_audio = tracks.iter().any(|t| t.kind == TrackKind::Audio);
        let mut audio_out_rate = 0;
        let setup = match reader.audio_track() {
            Ok(track) => {
                audio_out_rate = match &track.codec {
                    AudioCodec::Opus { .. } => 48_000,
                    AudioCodec::Symphonia(_) => tracks
                        .iter()
                        .find(|t| t.kind == TrackKind::Audio)
                        .and_then(|t| t.sample_rate)
                        .unwrap_or(0),
                };
                Some(AudioSetup {
                    codec: track.codec,
                    skip: track.skip,
                    lead: (0, 1),
                })
            }
            Err(MediaError::NoAudioStream) => None,
            Err(e) => {
                out.push(Event::Problem(LiveProblem::from_media(&e)));
                None
            }
        };
        out.push(Event::Header {
            container: self.container,
            has_video,
            has_audio,
        });
        self.tracks = Some(Tracks {
            audio: if setup.is_some() { audio } else { None },
            video,
            audio_out_rate,
            setup,
        });
    }

    /// Cuts one (Simple)Block into frames, as the file reader does; malformed blocks are
    /// skipped.
    fn block(&mut self, body: &[u8], group: Option<(bool, i64)>, out: &mut Vec<Event>) {
        let Some(tracks) = self.tracks.as_mut() else {
            return;
        };
        let mut c = Cursor::new(body);
        let Some(Some(track)) = cursor_vint(&mut c) else {
            return;
        };
        let (Some(rel), Some(flags)) = (c.u16_be(), c.u8()) else {
            return;
        };
        if Some(track) != tracks.audio && Some(track) != tracks.video {
            return;
        }
        let time_ticks = (self.cluster_ts as i64).saturating_add(i64::from(rel as i16));
        let time_ns = time_ticks.saturating_mul(self.scale as i64);
        let keyframe = match group {
            Some((referenced, _)) => !referenced,
            None => flags & 0x80 != 0,
        };
        let padding_ns = group.map_or(0, |(_, p)| p);
        let Some(sizes) = lace_sizes(&mut c, (flags >> 1) & 0x3) else {
            return;
        };
        let n = sizes.len();
        for (i, size) in sizes.into_iter().enumerate() {
            let Some(data) = c.take(size) else { return };
            if data.is_empty() {
                continue;
            }
            if Some(track) == tracks.video {
                out.push(Event::Video(VideoFrameInfo {
                    pts: time_ns as f64 / 1e9,
                    size: u32::try_from(data.len()).unwrap_or(u32::MAX),
                    keyframe,
                }));
                continue;
            }
            if let Some(mut setup) = tracks.setup.take() {
                // Audio whose first block comes after timestamp 0 starts after media time 0.
                setup.lead = (time_ns.max(0) as u64, 1_000_000_000);
                out.push(Event::AudioSetup(setup));
            }
            let mut p = Packet::new(0, Timestamp::new(0), SymDuration::new(0), data);
            if i + 1 == n && padding_ns > 0 && tracks.audio_out_rate > 0 {
                let frames = padding_ns as u128 * u128::from(tracks.audio_out_rate) / 1_000_000_000;
                p.trim_end = SymDuration::new(frames.min(u128::from(u32::MAX)) as u64);
            }
            out.push(Event::Audio(p));
        }
    }

    fn block_group(&mut self, body: &[u8], out: &mut Vec<Event>) {
        let mut block = None;
        let mut referenced = false;
        let mut padding = 0;
        for (id, b) in children(body) {
            match id {
                ID_BLOCK => block = block.or(Some(b)),
                ID_REFERENCE_BLOCK => referenced = true,
                ID_DISCARD_PADDING if padding == 0 => padding = sint(b).unwrap_or(0),
                _ => {}
            }
        }
        if let Some(block) = block {
            self.block(block, Some((referenced, padding)), out);
        }
    }

    /// One step of the parser; `false` when it needs more bytes.
    fn step(&mut self, out: &mut Vec<Event>) -> bool {
        if self.skip > 0 {
            let n = self
                .q
                .consume(usize::try_from(self.skip).unwrap_or(usize::MAX));
            self.skip -= n as u64;
            return self.skip == 0;
        }
        if self.level == Level::Resync {
            return self.resync();
        }
        // Leaving elements of known size whose end has been reached.
        let pos = self.q.pos();
        if self.level == Level::Cluster && self.cluster_end.is_some_and(|e| pos >= e) {
            self.level = Level::Segment;
            self.cluster_end = None;
        }
        if self.level != Level::Top && self.segment_end.is_some_and(|e| pos >= e) {
            self.level = Level::Top;
            self.segment_end = None;
            self.cluster_end = None;
        }
        let (id, size, header_len) = match element_header(self.q.bytes()) {
            Parse::Incomplete => return false,
            Parse::Invalid => {
                self.damaged("invalid element header", out);
                return true;
            }
            Parse::Done((id, size), n) => (id, size, n),
        };
        // A child may not run past its parent.
        if let (Some(size), Some(end)) = (size, self.parent_end()) {
            if pos + header_len as u64 + size > end {
                self.damaged(format!("element {id:#x} runs past its parent"), out);
                return true;
            }
        }
        match (self.level, id) {
            (Level::Top, ID_EBML) => self.read_whole(header_len, size, MAX_SMALL_ELEMENT, out),
            (Level::Top, ID_SEGMENT) => {
                if self.ebml.is_none() {
                    return self.headerless("a Segment without an EBML header", out);
                }
                self.q.consume(header_len);
                self.segment_end = size.map(|s| pos + header_len as u64 + s);
                self.level = Level::Segment;
                true
            }
            (Level::Top, ID_CLUSTER | ID_TRACKS | ID_INFO) => {
                self.headerless("media data without an EBML header", out)
            }
            (Level::Segment, ID_CLUSTER) => {
                if self.tracks.is_none() {
                    return self.headerless("a Cluster before any Tracks", out);
                }
                self.q.consume(header_len);
                self.cluster_end = size.map(|s| pos + header_len as u64 + s);
                self.cluster_unknown = size.is_none();
                self.cluster_ts = 0;
                self.level = Level::Cluster;
                true
            }
            (Level::Segment, ID_INFO) => self.read_whole(header_len, size, MAX_SMALL_ELEMENT, out),
            (Level::Segment, ID_TRACKS) => self.read_whole(header_len, size, self.max_element, out),
            (Level::Segment | Level::Cluster, ID_EBML) => {
                // The next file of a stream of self-contained recordings.
                self.level = Level::Top;
                self.segment_end = None;
                self.cluster_end = None;
                true
            }
            (
                Level::Segment,
                ID_SEEK_HEAD | ID_CUES | ID_TAGS | ID_CHAPTERS | ID_ATTACHMENTS | ID_VOID
                | ID_CRC32,
            )
            | (Level::Top, ID_VOID | ID_CRC32) => self.skip_element(id, header_len, size, out),
            (Level::Cluster, ID_CLUSTER_TIMESTAMP) => self.read_whole(header_len, size, 8, out),
            (Level::Cluster, ID_SIMPLE_BLOCK | ID_BLOCK_GROUP) => {
                self.read_whole(header_len, size, self.max_element, out)
            }
            (Level::Cluster, 0xA7 | 0xAB | 0x5854 | ID_VOID | ID_CRC32 | 0xAF) => {
                self.skip_element(id, header_len, size, out)
            }
            (Level::Cluster, _) if self.cluster_unknown => {
                // A cluster of unknown size ends where an element that cannot be its child
                // starts; that element is read again one level up.
                self.level = Level::Segment;
                true
            }
            (Level::Cluster, _) => self.skip_element(id, header_len, size, out),
            (_, other) => {
                self.damaged(format!("unexpected element {other:#x}"), out);
                true
            }
        }
    }

    /// Reports data that needs a header this file has not given, once per file, and skips it.
    fn headerless(&mut self, reason: &str, out: &mut Vec<Event>) -> bool {
        if !self.reported_headerless {
            out.push(Event::Problem(LiveProblem::MissingHeader {
                reason: reason.into(),
            }));
            self.reported_headerless = true;
        }
        self.level = Level::Resync;
        // Step past this ID so the scan does not find it again.
        self.q.consume(1);
        true
    }

    /// Drops an element nobody reads, without buffering it.
    fn skip_element(
        &mut self,
        id: u32,
        header_len: usize,
        size: Option<u64>,
        out: &mut Vec<Event>,
    ) -> bool {
        let Some(size) = size else {
            self.damaged(format!("element {id:#x} of unknown size"), out);
            return true;
        };
        if self.parent_end().is_none() && size > self.max_element {
            // Nothing bounds it: a corrupt size would swallow the rest of the stream.
            self.damaged(format!("element {id:#x} of {size} bytes"), out);
            return true;
        }
        self.q.consume(header_len);
        self.skip = size;
        true
    }

    /// Reads an element that must be whole (at most `cap` bytes of body) and handles it.
    fn read_whole(
        &mut self,
        header_len: usize,
        size: Option<u64>,
        cap: u64,
        out: &mut Vec<Event>,
    ) -> bool {
        let (id, size) = match element_header(self.q.bytes()) {
            Parse::Done((id, Some(size)), _) if size <= cap => (id, size),
            Parse::Done((id, _), _) => {
                let what = size.map_or_else(|| "unknown".to_string(), |s| s.to_string());
                self.damaged(format!("element {id:#x} of {what} bytes"), out);
                return true;
            }
            _ => return false,
        };
        let Some(total) = self.whole(header_len, size) else {
            return false;
        };
        let element = self.q.bytes()[..total].to_vec();
        self.q.consume(total);
        let body = &element[header_len..];
        match id {
            ID_EBML => self.parse_ebml_header(&element, body, out),
            ID_INFO => {
                if let Some(scale) = children(body)
                    .find(|(id, _)| *id == ID_TIMESTAMP_SCALE)
                    .and_then(|(_, b)| uint(b))
                    .filter(|&s| s > 0)
                {
                    self.scale = scale;
                }
                self.info = Some(element.clone());
            }
            ID_TRACKS => self.parse_tracks(&element, body, out),
            ID_CLUSTER_TIMESTAMP => self.cluster_ts = uint(body).unwrap_or(0),
            ID_SIMPLE_BLOCK => self.block(body, None, out),
            ID_BLOCK_GROUP => self.block_group(body, out),
            _ => {}
        }
        true
    }
}

impl Demuxer for MkvDemuxer {
    fn feed(&mut self, data: &[u8], out: &mut Vec<Event>) {
        self.q.extend(data);
        self.resync_dropped = 0;
        // Every step consumes bytes, changes level or waits; level changes without consuming
        // happen at most three times in a row, so a step that consumes nothing four times in a
        // row means a bug, and stops the loop rather than spin.
        let mut idle = 0;
        while idle < 4 {
            let before = self.q.pos();
            if !self.step(out) {
                break;
            }
            idle = if self.q.pos() == before { idle + 1 } else { 0 };
        }
        if self.resync_dropped > 0 {
            // Damage that began in an earlier frame still covers this one.
            out.push(Event::Problem(LiveProblem::Unreadable {
                reason: format!("{} bytes skipped to resynchronise", self.resync_dropped),
            }));
        }
    }

    fn finish(&mut self, _out: &mut Vec<Event>) {
        self.q.clear();
        self.skip = 0;
    }

    fn pending_bytes(&self) -> usize {
        self.q.len()
    }
}
