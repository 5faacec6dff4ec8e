//! The incremental Matroska/WebM demuxer: EBML elements parsed as their bytes arrive, the same
//! code for a whole file and for a stream as MediaRecorder writes it (header and Tracks first,
//! then Clusters; Segment and Clusters of unknown size).
//!
//! Only elements that must be read whole are held (the EBML header, Info, Tracks, a cluster's
//! Timestamp, each SimpleBlock or BlockGroup), each up to the element cap; everything else is
//! skipped as it goes past, so a huge declared size never allocates. Segments and Clusters are
//! entered, not held. Bytes are parsed where they arrive: only the start of an element that a
//! feed cut off is copied, to wait for the rest.
//!
//! The two inputs differ only in what damage does ([`Input`]): a stream reports it and
//! resynchronises on the next Cluster or EBML header; a whole file skips the rest of a damaged
//! cluster of known size and otherwise stops there, keeping what it read (a truncated or
//! damaged recording), and fails when the damage comes before its tracks.

use symphonia::core::packet::Packet;
use symphonia::core::units::{Duration as SymDuration, Timestamp};

use super::ebml::*;
use super::tracks::{audio_setup, bad, parse_tracks, TrackEntry};
use crate::audio::AudioSetup;
use crate::demux::{Event, LiveProblem, StepState, Stepper};
use crate::error::MediaError;
use crate::info::{Container, TrackKind, VideoFrameInfo};

/// The largest EBML header or Info element accepted; real ones are well under 1 KiB.
const MAX_SMALL_ELEMENT: u64 = 64 * 1024;

/// What the bytes are, which decides what damage does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Input {
    /// One file, fed whole: video frames keep their bytes, elements of unknown ID are skipped,
    /// and the read stops at damage it cannot step over.
    WholeFile,
    /// A live stream, possibly several files one after another: damage is reported and the
    /// parser resynchronises; only the IDs Matroska defines at each level are accepted.
    Stream,
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
    /// After damage in a stream: scanning for the next Cluster or EBML header ID.
    Resync,
    /// A whole file read to its end or its damage: the rest is ignored.
    Done,
}

/// The first audio and video tracks of the current file, as blocks are routed to them.
struct Routes {
    /// The audio track number, when its decoder could be set up.
    audio: Option<u64>,
    video: Option<u64>,
    /// Rate of the audio decoder's output, to turn `DiscardPadding` into frames.
    audio_out_rate: u32,
    /// Decoder setup, handed out with the first audio block (which fixes the lead).
    setup: Option<AudioSetup>,
}

/// The BlockGroup fields that matter beside its Block.
#[derive(Debug, Clone, Copy)]
struct GroupFacts {
    referenced: bool,
    discard_padding_ns: i64,
    duration_ticks: Option<u64>,
}

/// An incremental Matroska/WebM demuxer.
pub(crate) struct MkvDemuxer {
    input: Input,
    /// Where it stands in its input: tail, position, bytes to skip, bytes dropped.
    steps: StepState,
    level: Level,
    max_element: u64,
    /// Whether the current file's EBML header was read, and whether any file's was.
    has_header: bool,
    had_file: bool,
    container: Container,
    scale: u64,
    duration_ticks: Option<f64>,
    segment_end: Option<u64>,
    cluster_end: Option<u64>,
    cluster_unknown: bool,
    cluster_ts: u64,
    tracks: Option<Vec<TrackEntry>>,
    routes: Option<Routes>,
    /// Why the audio track cannot be decoded, when it cannot.
    audio_error: Option<MediaError>,
    /// The latest end of any block of any track, in nanoseconds.
    blocks_end_ns: Option<i64>,
    /// What stopped a whole file before its tracks were read.
    error: Option<MediaError>,
    /// Whether a cluster without a preceding Tracks was already reported for this file.
    reported_headerless: bool,
}

/// What a whole file's header said, once it was read to its end.
pub(super) struct FileFacts {
    pub(super) container: Container,
    pub(super) tracks: Vec<TrackEntry>,
    /// The Info Duration in seconds, when stated and positive, else the end of the last block.
    pub(super) duration: Option<f64>,
    pub(super) audio_error: Option<MediaError>,
}

impl MkvDemuxer {
    fn new(input: Input, max_element: u64) -> Self {
        Self {
            input,
            steps: StepState::default(),
            level: Level::Top,
            max_element,
            has_header: false,
            had_file: false,
            container: Container::WebM,
            scale: 1_000_000,
            duration_ticks: None,
            segment_end: None,
            cluster_end: None,
            cluster_unknown: false,
            cluster_ts: 0,
            tracks: None,
            routes: None,
            audio_error: None,
            blocks_end_ns: None,
            error: None,
            reported_headerless: false,
        }
    }

    /// A demuxer for a live stream, holding no element larger than `max_element` bytes.
    pub(crate) fn stream(max_element: usize) -> Self {
        Self::new(Input::Stream, max_element as u64)
    }

    /// A demuxer for one whole file, fed all its bytes at once; video frames keep their bytes.
    pub(super) fn whole_file() -> Self {
        Self::new(Input::WholeFile, u64::MAX)
    }

    /// What the file's header said, after the whole file was fed and finished.
    ///
    /// Errors: [`MediaError::Unreadable`] when no Tracks with a video or audio entry was read
    /// (no EBML header, another DocType, damage before the tracks).
    pub(super) fn into_facts(self) -> Result<FileFacts, MediaError> {
        let tracks = match self.tracks {
            Some(tracks) if !tracks.is_empty() => tracks,
            _ => return Err(self.error.unwrap_or_else(|| bad("no tracks"))),
        };
        let stated = self
            .duration_ticks
            .map(|d| d * self.scale as f64 / 1e9)
            .filter(|d| *d > 0.0);
        let from_blocks = self.blocks_end_ns.map(|ns| ns as f64 / 1e9);
        Ok(FileFacts {
            container: self.container,
            tracks,
            duration: stated.or(from_blocks),
            audio_error: self.audio_error,
        })
    }

    /// Forgets the current file's header, for the next one.
    fn reset_file(&mut self) {
        self.has_header = false;
        self.scale = 1_000_000;
        self.duration_ticks = None;
        self.segment_end = None;
        self.cluster_end = None;
        self.tracks = None;
        self.routes = None;
        self.audio_error = None;
        self.blocks_end_ns = None;
        self.reported_headerless = false;
    }

    /// Handles damage at the current position; returns the bytes to consume.
    fn damaged(&mut self, reason: impl Into<String>, out: &mut Vec<Event>) -> usize {
        if self.input == Input::WholeFile {
            // Inside a cluster of known size the rest of the cluster is dropped, as players do.
            if let (Level::Cluster, Some(end)) = (self.level, self.cluster_end) {
                self.steps.skip = end.saturating_sub(self.steps.pos);
                return 0;
            }
            if self.tracks.is_none() && self.error.is_none() {
                self.error = Some(bad(reason));
            }
            self.level = Level::Done;
            return 0;
        }
        self.level = Level::Resync;
        self.segment_end = None;
        self.cluster_end = None;
        self.steps.unreadable(reason, out)
    }

    /// Data that needs a header this file has not given: in a stream, reported once per file
    /// and skipped; in a whole file, a cluster before the Tracks is skipped and anything else
    /// ends the read.
    fn headerless(
        &mut self,
        reason: &str,
        header_len: usize,
        size: Option<u64>,
        out: &mut Vec<Event>,
    ) -> usize {
        if self.input == Input::WholeFile {
            return match (self.has_header, size) {
                (true, Some(size)) => {
                    self.steps.skip = size;
                    header_len
                }
                _ => self.damaged(reason, out),
            };
        }
        if !self.reported_headerless {
            out.push(Event::Problem(LiveProblem::MissingHeader {
                reason: reason.into(),
            }));
            self.reported_headerless = true;
        }
        self.level = Level::Resync;
        // Step past this ID so the scan does not find it again.
        1
    }

    /// Scans a stream for a Cluster or EBML header ID; `None` to wait for more bytes.
    fn resync(&mut self, b: &[u8]) -> Option<usize> {
        let found = b
            .windows(4)
            .position(|w| w == ID_CLUSTER.to_be_bytes() || w == ID_EBML.to_be_bytes());
        match found {
            Some(i) => {
                let ebml = b[i..i + 4] == ID_EBML.to_be_bytes();
                self.steps.resync_dropped += i;
                self.level = if ebml || self.tracks.is_none() {
                    Level::Top
                } else {
                    Level::Segment
                };
                Some(i)
            }
            None => {
                // Keep what could be the start of an ID cut by the frame boundary.
                let n = b.len() - b.len().min(3);
                self.steps.resync_dropped += n;
                (n > 0).then_some(n)
            }
        }
    }

    /// The end of the innermost enclosing element of known size, if any.
    fn parent_end(&self) -> Option<u64> {
        match self.level {
            Level::Cluster => self.cluster_end.or(self.segment_end),
            Level::Segment => self.segment_end,
            _ => None,
        }
    }

    /// Leaves a Segment: a stream may hold another file, a whole file has ended.
    fn leave_segment(&mut self) {
        self.level = match self.input {
            Input::WholeFile => Level::Done,
            Input::Stream => Level::Top,
        };
        self.segment_end = None;
        self.cluster_end = None;
    }

    /// One step of the parser over the unconsumed bytes `b`: the bytes consumed (zero when only
    /// the level changed), or `None` to wait for more.
    fn step(&mut self, b: &[u8], out: &mut Vec<Event>) -> Option<usize> {
        if self.level == Level::Done {
            return (!b.is_empty()).then_some(b.len());
        }
        if self.steps.skip > 0 {
            let n = usize::try_from(self.steps.skip)
                .unwrap_or(usize::MAX)
                .min(b.len());
            self.steps.skip -= n as u64;
            return (n > 0).then_some(n);
        }
        if self.level == Level::Resync {
            return self.resync(b);
        }
        // Leaving elements of known size whose end has been reached.
        let pos = self.steps.pos;
        if self.level == Level::Cluster && self.cluster_end.is_some_and(|e| pos >= e) {
            self.level = Level::Segment;
            self.cluster_end = None;
        }
        if self.level != Level::Top && self.segment_end.is_some_and(|e| pos >= e) {
            self.leave_segment();
            return Some(0);
        }
        let (id, size, header_len) = match element_header(b) {
            Parse::Incomplete => return None,
            Parse::Invalid => return Some(self.damaged("invalid element header", out)),
            Parse::Done((id, size), n) => (id, size, n),
        };
        // A child may not run past its parent.
        if let (Some(size), Some(end)) = (size, self.parent_end()) {
            if (pos + header_len as u64).saturating_add(size) > end {
                return Some(self.damaged(format!("element {id:#x} runs past its parent"), out));
            }
        }
        let whole = self.input == Input::WholeFile;
        let consumed = match (self.level, id) {
            (Level::Top, ID_EBML) => {
                return self.read_whole(b, id, header_len, size, MAX_SMALL_ELEMENT, out)
            }
            (Level::Top, _) if whole && !self.had_file => self.damaged("no EBML header", out),
            (Level::Top, ID_SEGMENT) => {
                if !self.has_header {
                    return Some(self.headerless(
                        "a Segment without an EBML header",
                        header_len,
                        size,
                        out,
                    ));
                }
                self.segment_end = size.map(|s| (pos + header_len as u64).saturating_add(s));
                self.level = Level::Segment;
                header_len
            }
            (Level::Top, ID_CLUSTER | ID_TRACKS | ID_INFO) => {
                self.headerless("media data without an EBML header", header_len, size, out)
            }
            (Level::Segment, ID_CLUSTER) => {
                if self.tracks.is_none() {
                    return Some(self.headerless(
                        "a Cluster before any Tracks",
                        header_len,
                        size,
                        out,
                    ));
                }
                self.cluster_end = size.map(|s| (pos + header_len as u64).saturating_add(s));
                self.cluster_unknown = size.is_none();
                self.cluster_ts = 0;
                self.level = Level::Cluster;
                header_len
            }
            (Level::Segment, ID_INFO) => {
                return self.read_whole(b, id, header_len, size, MAX_SMALL_ELEMENT, out)
            }
            (Level::Segment, ID_TRACKS) => {
                return self.read_whole(b, id, header_len, size, self.max_element, out)
            }
            (Level::Segment | Level::Cluster, ID_EBML) if whole => {
                // Only the first file of a concatenation is read, as players do.
                self.level = Level::Done;
                0
            }
            (Level::Segment | Level::Cluster, ID_EBML) => {
                // The next file of a stream of self-contained recordings.
                self.level = Level::Top;
                self.segment_end = None;
                self.cluster_end = None;
                0
            }
            (
                Level::Segment,
                ID_SEEK_HEAD | ID_CUES | ID_TAGS | ID_CHAPTERS | ID_ATTACHMENTS | ID_VOID
                | ID_CRC32,
            )
            | (Level::Top, ID_VOID | ID_CRC32) => self.skip_element(id, header_len, size, out),
            // A whole file skips what it does not know, as the specification asks.
            (Level::Top | Level::Segment, _) if whole => {
                self.skip_element(id, header_len, size, out)
            }
            (Level::Cluster, ID_CLUSTER_TIMESTAMP) => {
                return self.read_whole(b, id, header_len, size, 8, out)
            }
            (Level::Cluster, ID_SIMPLE_BLOCK | ID_BLOCK_GROUP) => {
                return self.read_whole(b, id, header_len, size, self.max_element, out)
            }
            (Level::Cluster, ID_VOID | ID_CRC32) => self.skip_element(id, header_len, size, out),
            (Level::Cluster, id) if IGNORED_CLUSTER_CHILDREN.contains(&id) => {
                self.skip_element(id, header_len, size, out)
            }
            (Level::Cluster, _) if self.cluster_unknown => {
                // A cluster of unknown size ends where an element that cannot be its child
                // starts; that element is read again one level up.
                self.level = Level::Segment;
                0
            }
            (Level::Cluster, _) => self.skip_element(id, header_len, size, out),
            (_, other) => self.damaged(format!("unexpected element {other:#x}"), out),
        };
        Some(consumed)
    }

    /// Starts dropping an element nobody reads, without holding it; returns the bytes consumed.
    fn skip_element(
        &mut self,
        id: u32,
        header_len: usize,
        size: Option<u64>,
        out: &mut Vec<Event>,
    ) -> usize {
        let Some(size) = size else {
            return self.damaged(format!("element {id:#x} of unknown size"), out);
        };
        if self.parent_end().is_none() && size > self.max_element {
            // Nothing bounds it: a corrupt size would swallow the rest of the stream.
            return self.damaged(format!("element {id:#x} of {size} bytes"), out);
        }
        self.steps.skip = size;
        header_len
    }

    /// Reads an element that must be whole (at most `cap` bytes of body) and handles it.
    fn read_whole(
        &mut self,
        b: &[u8],
        id: u32,
        header_len: usize,
        size: Option<u64>,
        cap: u64,
        out: &mut Vec<Event>,
    ) -> Option<usize> {
        let size = match size {
            Some(size) if size <= cap => size,
            _ => {
                let what = size.map_or_else(|| "unknown".to_string(), |s| s.to_string());
                return Some(self.damaged(format!("element {id:#x} of {what} bytes"), out));
            }
        };
        let total = usize::try_from(size)
            .ok()
            .and_then(|s| s.checked_add(header_len))
            .filter(|&t| t <= b.len())?;
        let body = &b[header_len..total];
        match id {
            ID_EBML => self.ebml_header(body, out),
            ID_INFO => {
                for (id, value) in readable_children(body) {
                    match id {
                        ID_TIMESTAMP_SCALE => {
                            self.scale = uint(value).filter(|&s| s > 0).unwrap_or(self.scale)
                        }
                        ID_DURATION => self.duration_ticks = float(value),
                        _ => {}
                    }
                }
            }
            ID_TRACKS => self.tracks(body, out),
            ID_CLUSTER_TIMESTAMP => self.cluster_ts = uint(body).unwrap_or(0),
            ID_SIMPLE_BLOCK => self.block(body, None, out),
            ID_BLOCK_GROUP => self.block_group(body, out),
            _ => {}
        }
        Some(total)
    }

    fn ebml_header(&mut self, body: &[u8], out: &mut Vec<Event>) {
        if self.input == Input::WholeFile && self.had_file {
            // A second header before the first file's Segment: the first file is read.
            return;
        }
        let doctype = child(body, ID_DOCTYPE).map_or_else(|| "matroska".into(), string);
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
        self.has_header = true;
        self.container = container;
    }

    fn tracks(&mut self, body: &[u8], out: &mut Vec<Event>) {
        let tracks = match parse_tracks(body) {
            Ok(tracks) if tracks.is_empty() => {
                self.damaged("Tracks: no video or audio track", out);
                return;
            }
            Ok(tracks) => tracks,
            Err(e) => {
                self.damaged(format!("Tracks: {e}"), out);
                return;
            }
        };
        // The first audio and the first video entry are the ones read.
        let first = |kind| tracks.iter().find(|t| t.track.kind == kind);
        let video = first(TrackKind::Video).map(|t| t.number);
        let (mut audio, mut audio_out_rate, mut setup) = (None, 0, None);
        self.audio_error = None;
        if let Some(entry) = first(TrackKind::Audio) {
            match audio_setup(entry) {
                Ok((s, rate)) => {
                    audio = Some(entry.number);
                    audio_out_rate = rate;
                    setup = Some(s);
                }
                Err(e) => {
                    if self.input == Input::Stream {
                        out.push(Event::Problem(LiveProblem::from_media(&e)));
                    }
                    self.audio_error = Some(e);
                }
            }
        }
        out.push(Event::Header {
            container: self.container,
            has_video: video.is_some(),
            has_audio: first(TrackKind::Audio).is_some(),
        });
        if let (Input::Stream, Some(entry)) = (self.input, first(TrackKind::Video)) {
            out.push(Event::VideoSetup {
                codec: entry.track.codec.clone(),
                config: entry.codec_private.clone(),
            });
        }
        self.routes = Some(Routes {
            audio,
            video,
            audio_out_rate,
            setup,
        });
        self.tracks = Some(tracks);
    }

    fn block_group(&mut self, body: &[u8], out: &mut Vec<Event>) {
        let mut block = None;
        let mut facts = GroupFacts {
            referenced: false,
            discard_padding_ns: 0,
            duration_ticks: None,
        };
        let mut padding = None;
        for (id, value) in readable_children(body) {
            match id {
                ID_BLOCK => block = block.or(Some(value)),
                ID_REFERENCE_BLOCK => facts.referenced = true,
                ID_DISCARD_PADDING => padding = padding.or(Some(value)),
                ID_BLOCK_DURATION => facts.duration_ticks = facts.duration_ticks.or(uint(value)),
                _ => {}
            }
        }
        facts.discard_padding_ns = padding.and_then(sint).unwrap_or(0);
        if let Some(block) = block {
            self.block(block, Some(facts), out);
        }
    }

    /// Cuts one (Simple)Block into frames and routes them; malformed blocks are skipped, as
    /// players do.
    fn block(&mut self, body: &[u8], group: Option<GroupFacts>, out: &mut Vec<Event>) {
        let (Some(routes), Some(tracks)) = (self.routes.as_mut(), self.tracks.as_ref()) else {
            return;
        };
        let Some(block) = block(body) else {
            return;
        };
        let time_ticks = (self.cluster_ts as i64).saturating_add(i64::from(block.relative));
        let time_ns = time_ticks.saturating_mul(self.scale as i64);
        if !block.frames.is_empty() {
            // Any track's blocks count towards the duration of a file that does not state it.
            let stated = group
                .and_then(|g| g.duration_ticks)
                .filter(|_| block.count == 1)
                .map(|d| d.saturating_mul(self.scale));
            let duration = stated.or_else(|| {
                tracks
                    .iter()
                    .find(|t| t.number == block.track)
                    .and_then(|t| t.default_duration_ns)
            });
            let end = time_ns.saturating_add(duration.unwrap_or(0) as i64);
            self.blocks_end_ns = Some(self.blocks_end_ns.map_or(end, |e| e.max(end)));
        }
        let keyframe = group.map_or(block.flags & 0x80 != 0, |g| !g.referenced);
        let padding_ns = group.map_or(0, |g| g.discard_padding_ns);
        for (data, last) in block.frames {
            if Some(block.track) == routes.video {
                let frame = VideoFrameInfo {
                    pts: time_ns as f64 / 1e9,
                    size: u32::try_from(data.len()).unwrap_or(u32::MAX),
                    keyframe,
                };
                // A stream's frames carry their bytes too, for the live pixel decoder; each is
                // dropped once decoded.
                let bytes = Some(data.to_vec());
                out.push(Event::Video(frame, bytes));
            } else if Some(block.track) == routes.audio {
                if let Some(mut setup) = routes.setup.take() {
                    // Audio whose first block comes after timestamp 0 starts after media time 0.
                    setup.lead = (time_ns.max(0) as u64, 1_000_000_000);
                    out.push(Event::AudioSetup(setup));
                }
                let mut p = Packet::new(0, Timestamp::new(0), SymDuration::new(0), data);
                if last && padding_ns > 0 && routes.audio_out_rate > 0 {
                    let frames =
                        padding_ns as u128 * u128::from(routes.audio_out_rate) / 1_000_000_000;
                    p.trim_end = SymDuration::new(frames.min(u128::from(u32::MAX)) as u64);
                }
                out.push(Event::Audio(p));
            }
        }
    }
}

impl Stepper for MkvDemuxer {
    fn step(&mut self, b: &[u8], out: &mut Vec<Event>) -> Option<usize> {
        MkvDemuxer::step(self, b, out)
    }

    fn steps(&self) -> &StepState {
        &self.steps
    }

    fn steps_mut(&mut self) -> &mut StepState {
        &mut self.steps
    }
}
