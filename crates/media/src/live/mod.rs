//! Live input: one reader per stream session, fed binary frames one at a time, turning them
//! into 16 kHz mono PCM and video frame data on one session timeline as soon as they decode.
//!
//! # Inputs
//!
//! A [`LiveReader`] reads one of three kinds of input ([`LiveMode`]):
//!
//! - **Self-contained segments**: every frame is a complete short file (a new browser
//!   MediaRecorder per ~3 s segment). Any container [`probe`](crate::probe) reads.
//! - **One continuous stream** cut at arbitrary byte offsets: WebM/Matroska as MediaRecorder
//!   writes it with a timeslice (EBML header, Segment and Tracks first, then Clusters, Segment
//!   and Clusters of unknown size), fragmented MP4 (init segment, then `moof`/`mdat` pairs) or
//!   MPEG-TS (188-byte packets, alignment carried across frames; 192-byte M2TS too).
//! - **Raw PCM**, s16le mono at 16 000 or 24 000 Hz, cut at any byte ([`LiveReader::pcm`]).
//!
//! [`LiveMode::Auto`] (the default, [`LiveReader::new`]) tells segments and streams apart by
//! content, frame by frame: a frame that opens with a file header (an EBML header, an MP4
//! `ftyp`/`moov`, RIFF, `fLaC`, `OggS`, ID3) starts a new file; any other frame continues the
//! current one. WebM, Matroska, fragmented MP4 and MPEG-TS files are read incrementally
//! whether they arrive whole or in pieces; containers that can only be read whole (progressive
//! MP4/MOV, AVI, WAV, FLAC, MP3, Ogg) are taken as self-contained segments and must fit in one
//! frame. A transport stream has no file header: in it, a clock that steps back by more than a
//! second starts the next file (self-contained TS segments each muxed from their own start).
//! Raw PCM has no header to detect and is always set explicitly.
//!
//! # Timeline
//!
//! Each file's media is placed after the previous file's end: the session timeline is the
//! concatenation of the files, and PCM sample `n` of the session is session time `n / 16000`
//! (a file without audio is filled with silence for the length of its video). Within a file,
//! time 0 is the container's presentation origin, as for [`decode_audio`](crate::decode_audio)
//! and [`video_frames`](crate::video_frames): a stream decodes to exactly the PCM and frame list
//! of the same bytes uploaded as one file, whatever way they were cut (video frames come in
//! decode order, so codecs with B-frames list them out of presentation order). In a continuous
//! stream the resampler holds back its last few milliseconds until the file ends (the next file
//! header, or [`LiveReader::finish`]).
//!
//! # Problems
//!
//! Per frame, a [`ChunkReport`] says what was appended and lists non-fatal problems
//! ([`LiveProblem`], each tagged with the caller's segment index): `ih6007` unreadable data,
//! `ih5004` media without its container header (a fragment before any init segment), `ih5006`
//! a self-contained segment under 3 s, `ih5001` audio without video when video is required
//! and `ih5008` no audio (each once per session), `ih5003` an audio codec that cannot be
//! decoded. In [`LiveMode::Segments`], and for containers read whole, a short segment is
//! refused before it is decoded; a file [`LiveMode::Auto`] reads incrementally is only known to
//! have been a segment (one frame exactly) when the next frame opens a new file, so its
//! `ih5006` comes then, with that segment's index, and its media stays appended.
//!
//! Fatal errors ([`LiveError`]) stop the reader: `ih6010` when more than
//! [`LiveLimits::hold_bytes`] arrive without a header or a decodable unit (or more than
//! [`LiveLimits::max_pending_bytes`] wait for an incomplete one), `ih6004` when the session's
//! media passes [`LiveLimits::max_media_seconds`]. The hold limit counts bytes, not time; the
//! session engine keeps its own clock, with [`LiveReader::has_decoded_anything`] and
//! [`LiveReader::bytes_without_progress`] to decide.
//!
//! # Memory
//!
//! The reader holds only the bytes of units not yet complete (one element or box; for a
//! transport stream one PES per stream and those held until the start is known), never more
//! than `max_pending_bytes` in all, and checks every declared size before it buffers anything;
//! besides, one decoder and one resampler per file. The decoded PCM is the caller's: it accumulates until
//! [`LiveReader::drain_samples`] takes it, and over a whole session it cannot exceed
//! `max_media_seconds` of audio.

mod audio;
mod es;
mod fmp4;
mod queue;
mod ts;

use symphonia::core::packet::Packet;

pub use crate::demux::LiveProblem;
pub(crate) use crate::demux::{Demuxer, Event};
use crate::error::MediaError;
use crate::info::{Container, Pcm, TrackKind, VideoFrameInfo};
use crate::requirements::MediaRequirements;
use audio::{AudioPipeline, RawPipeline, Stopped};

/// The largest PES packet the transport stream demuxer assembles (a 4K keyframe is a few MB).
const MAX_PES_BYTES: usize = 16 * 1024 * 1024;
/// Bytes gathered to recognise a stream's container: past this, what is not recognised is
/// not media.
const SNIFF_LIMIT: usize = 4096;
/// Raw PCM is converted in pieces of this many samples, so a large frame needs no large copy.
const RAW_PIECE: usize = 64 * 1024;

/// A raw PCM sample rate the interface allows for `audio_format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PcmRate {
    /// 16 000 Hz.
    Hz16000,
    /// 24 000 Hz.
    Hz24000,
}

impl PcmRate {
    /// The rate for `hz`, if it is one the interface allows.
    pub fn from_hz(hz: u32) -> Option<Self> {
        match hz {
            16_000 => Some(Self::Hz16000),
            24_000 => Some(Self::Hz24000),
            _ => None,
        }
    }

    /// The rate in Hz.
    pub fn hz(self) -> u32 {
        match self {
            Self::Hz16000 => 16_000,
            Self::Hz24000 => 24_000,
        }
    }
}

/// What the binary frames of a session are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LiveMode {
    /// Told apart by content, frame by frame (see the [module docs](self)).
    Auto,
    /// Every frame is one complete file; each is checked (`ih5006` under 3 s) before it is
    /// decoded.
    Segments,
    /// One stream cut anywhere (WebM/Matroska, fragmented MP4, MPEG-TS); no frame is taken for
    /// a segment, and containers that can only be read whole are refused (`ih6007`).
    Continuous,
    /// Raw s16le mono PCM at the given rate, cut at any byte.
    RawPcm(PcmRate),
}

/// Bounds on what one session may make the reader hold.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LiveLimits {
    /// The most bytes waiting for an incomplete unit (and the largest element, box or sample
    /// accepted); beyond it the session fails with `ih6010`. Default 64 MiB, twice the
    /// interface's 32 MiB frame limit.
    pub max_pending_bytes: usize,
    /// The hold limit: bytes received since the last header or decodable unit after which the
    /// stream counts as not advancing (`ih6010`). Default 40 MiB: more than one maximal 32 MiB
    /// frame, so a single unreadable frame is reported as `ih6007` first.
    pub hold_bytes: u64,
    /// The most media, in seconds, one session may decode (`ih6004` beyond it). Default 3900 s:
    /// the interface's 60-minute session limit plus 5 minutes of client-side buffering.
    pub max_media_seconds: f64,
}

impl Default for LiveLimits {
    fn default() -> Self {
        Self {
            max_pending_bytes: 64 * 1024 * 1024,
            hold_bytes: 40 * 1024 * 1024,
            max_media_seconds: 3900.0,
        }
    }
}

/// A stretch of session media time, in seconds: `[start, end)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MediaSpan {
    /// Where the stretch starts.
    pub start: f64,
    /// Where it ends.
    pub end: f64,
}

/// A non-fatal problem and the caller's segment index of the frame it concerns.
#[derive(Debug, Clone, PartialEq)]
pub struct SegmentProblem {
    /// The segment index the caller passed with the frame.
    pub segment: u64,
    /// What was wrong.
    pub problem: LiveProblem,
}

/// A fatal condition: the reader stops and the session should close.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum LiveError {
    /// No header and no decodable unit within the hold limit, or more bytes waiting for an
    /// incomplete unit than the reader holds. `ih6010`.
    #[error("stream not advancing: {bytes} bytes without a header or a decodable unit")]
    NotAdvancing {
        /// The bytes received (or waiting) without progress.
        bytes: u64,
    },
    /// The session's decoded media passed the configured maximum. `ih6004`.
    #[error("the session's media passed its maximum of {maximum:.0} s")]
    MediaTooLong {
        /// The maximum in seconds.
        maximum: f64,
    },
}

impl LiveError {
    /// The interface error code, e.g. `"ih6010"`.
    pub fn code_str(&self) -> &'static str {
        match self {
            Self::NotAdvancing { .. } => "ih6010",
            Self::MediaTooLong { .. } => "ih6004",
        }
    }
}

/// What one frame (or [`LiveReader::finish`]) produced.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ChunkReport {
    /// The segment index the caller passed.
    pub segment: u64,
    /// PCM samples appended to the session buffer (16 kHz mono).
    pub samples_appended: usize,
    /// Video frames that became available, `pts` on the session timeline, in decode order.
    pub video_frames: Vec<VideoFrameInfo>,
    /// The session media time newly covered: from the media end before this frame to the
    /// media end after it ([`LiveReader::media_end`]); `None` when nothing was added.
    pub span: Option<MediaSpan>,
    /// Non-fatal problems, each with the segment index of the frame concerned.
    pub problems: Vec<SegmentProblem>,
    /// Set when the reader stopped; every later push reports it again and does nothing.
    pub fatal: Option<LiveError>,
}

impl ChunkReport {
    /// Whether any audio or video was appended.
    pub fn appended_media(&self) -> bool {
        self.samples_appended > 0 || !self.video_frames.is_empty()
    }

    fn problem(&mut self, segment: u64, problem: LiveProblem) {
        self.problems.push(SegmentProblem { segment, problem });
    }
}

/// What the first bytes of a file are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Detected {
    NeedMore,
    Unknown,
    Mkv,
    Fmp4,
    Ts { packet_size: usize, offset: usize },
    WholeFile,
}

const EBML_MAGIC: [u8; 4] = [0x1a, 0x45, 0xdf, 0xa3];

/// Whether a frame opens with a file header, and so starts a new file.
fn opens_file(b: &[u8]) -> bool {
    let at = |off: usize, magic: &[u8]| b.get(off..off + magic.len()) == Some(magic);
    at(0, &EBML_MAGIC)
        || at(4, b"ftyp")
        || at(4, b"moov")
        || at(0, b"RIFF")
        || at(0, b"RF64")
        || at(0, b"fLaC")
        || at(0, b"OggS")
        || at(0, b"ID3")
}

/// Recognises the container of a file from its first bytes. `complete` says no more bytes
/// will come.
fn detect(b: &[u8], complete: bool) -> Detected {
    if b.starts_with(&EBML_MAGIC) {
        return Detected::Mkv;
    }
    match ts::sniff(b, complete) {
        Some(Some((packet_size, offset))) => {
            return Detected::Ts {
                packet_size,
                offset,
            }
        }
        Some(None) if !complete && b.len() < SNIFF_LIMIT => return Detected::NeedMore,
        _ => {}
    }
    if b.len() < 12 {
        return if complete {
            Detected::Unknown
        } else {
            Detected::NeedMore
        };
    }
    match &b[4..8] {
        b"ftyp" | b"moov" => return iso_kind(b),
        b"moof" | b"styp" | b"sidx" | b"emsg" | b"prft" | b"mdat" => return Detected::Fmp4,
        b"free" | b"skip" | b"wide" | b"pnot" => return Detected::WholeFile,
        _ => {}
    }
    let at = |off: usize, magic: &[u8]| b.get(off..off + magic.len()) == Some(magic);
    if at(0, b"RIFF") || at(0, b"RF64") || at(0, b"fLaC") || at(0, b"OggS") || at(0, b"ID3") {
        return Detected::WholeFile;
    }
    if b[0] == 0xff && b[1] & 0xe0 == 0xe0 {
        return Detected::WholeFile;
    }
    Detected::Unknown
}

/// An ISO file: streamed when its `moov` declares fragments (`mvex`) or is not complete yet,
/// read whole when it is a progressive file.
fn iso_kind(b: &[u8]) -> Detected {
    let mut off = 0usize;
    while let Some(header) = off.checked_add(8).and_then(|end| b.get(off..end)) {
        let size = u32::from_be_bytes([header[0], header[1], header[2], header[3]]) as usize;
        let kind = &header[4..8];
        let (size, header_len) = if size == 1 {
            match b.get(off + 8..off + 16) {
                Some(large) => (
                    usize::try_from(u64::from_be_bytes(large.try_into().unwrap_or([0; 8])))
                        .unwrap_or(usize::MAX),
                    16,
                ),
                None => break,
            }
        } else {
            (size, 8)
        };
        match kind {
            b"moov" => {
                let Some(body) = off
                    .checked_add(size)
                    .and_then(|end| b.get(off + header_len..end))
                else {
                    return Detected::Fmp4;
                };
                return if top_level_box(body, b"mvex") {
                    Detected::Fmp4
                } else {
                    Detected::WholeFile
                };
            }
            b"mdat" => return Detected::WholeFile,
            b"moof" => return Detected::Fmp4,
            _ => {}
        }
        if size < header_len {
            break;
        }
        off = off.saturating_add(size);
    }
    Detected::Fmp4
}

/// Media that needs a container header it does not have, for a frame read as a whole file.
fn missing_header(b: &[u8]) -> Option<&'static str> {
    if let Some(kind) = b.get(4..8) {
        if matches!(
            kind,
            b"moof" | b"styp" | b"sidx" | b"mdat" | b"emsg" | b"prft"
        ) && !top_level_box(b, b"moov")
        {
            return Some("a movie fragment without its init segment");
        }
    }
    if b.starts_with(&[0x18, 0x53, 0x80, 0x67]) || b.starts_with(&[0x1f, 0x43, 0xb6, 0x75]) {
        return Some("Matroska data without an EBML header");
    }
    if let Some(Some((size, offset))) = ts::sniff(b, true) {
        let has_pat = b
            .get(offset..)
            .unwrap_or_default()
            .chunks(size)
            .any(|p| p.len() >= 3 && p[0] == 0x47 && p[1] & 0x5f == 0x40 && p[2] == 0);
        if !has_pat {
            return Some("a transport stream without a program association table");
        }
    }
    None
}

/// Whether `b`, read as a run of boxes, holds one of type `kind`.
fn top_level_box(b: &[u8], kind: &[u8; 4]) -> bool {
    let mut off = 0usize;
    while let Some(h) = off.checked_add(8).and_then(|end| b.get(off..end)) {
        if &h[4..8] == kind {
            return true;
        }
        let size = u32::from_be_bytes([h[0], h[1], h[2], h[3]]) as usize;
        if size < 8 {
            return false;
        }
        off = off.saturating_add(size);
    }
    false
}

/// One file of the session being read incrementally.
struct FileCtx {
    /// Session sample index of the file's media time 0.
    origin: u64,
    audio: Option<AudioPipeline>,
    /// The audio setup failed or the decoder gave up; later setups are ignored.
    audio_failed: bool,
    reported_stop: bool,
    /// PCM samples this file produced.
    audio_samples: u64,
    /// The latest video pts (file clock) and the last interval between frames.
    video_last: Option<f64>,
    video_step: f64,
    /// Frames that carried this file's bytes, its first frame's segment index, and whether it
    /// began at the start of a frame: a file that is exactly one frame was a segment.
    pushes: u32,
    first_segment: u64,
    starts_at_frame: bool,
}

impl FileCtx {
    fn new(origin: u64, segment: u64, starts_at_frame: bool) -> Self {
        Self {
            origin,
            audio: None,
            audio_failed: false,
            reported_stop: false,
            audio_samples: 0,
            video_last: None,
            video_step: 0.0,
            pushes: 0,
            first_segment: segment,
            starts_at_frame,
        }
    }

    /// The file's length in seconds: its audio, or for a file without audio its video.
    fn duration(&self) -> f64 {
        if self.audio_samples > 0 {
            self.audio_samples as f64 / f64::from(Pcm::SAMPLE_RATE)
        } else {
            self.video_last.map_or(0.0, |l| l + self.video_step)
        }
    }
}

/// Raw PCM state: the resampler and a byte left over from an odd-length frame.
struct RawState {
    pipeline: RawPipeline,
    carry: Option<u8>,
}

/// The incremental reader of one stream session's binary frames.
///
/// ```
/// use attune_media::live::LiveReader;
///
/// let mut reader = LiveReader::pcm(16_000).expect("an allowed rate");
/// let report = reader.push(&[0x00, 0x40, 0x00], 0); // one sample and half of the next
/// assert_eq!(report.samples_appended, 1);
/// reader.push(&[0xc0], 1);
/// assert_eq!(reader.drain_samples(), vec![0.5, -0.5]);
/// ```
pub struct LiveReader {
    mode: LiveMode,
    needs_video: bool,
    limits: LiveLimits,
    /// Decoded PCM not yet drained.
    samples: Vec<f32>,
    /// PCM samples appended over the session, drained or not.
    samples_total: u64,
    /// The latest video pts on the session timeline.
    video_end: f64,
    demux: Option<Box<dyn Demuxer>>,
    file: Option<FileCtx>,
    /// Bytes gathered while a new file's container is not yet recognised.
    sniff: Vec<u8>,
    sniff_segment: u64,
    raw: Option<RawState>,
    events: Vec<Event>,
    decoded_anything: bool,
    bytes_without_progress: u64,
    reported_no_video: bool,
    reported_no_audio: bool,
    container: Option<Container>,
    fatal: Option<LiveError>,
    last_segment: u64,
}

impl LiveReader {
    /// A reader that recognises its input by content ([`LiveMode::Auto`]). `needs_video`:
    /// the model needs video (`inter-2`), so audio without video is reported (`ih5001`).
    pub fn new(needs_video: bool) -> Self {
        Self::with_mode(LiveMode::Auto, needs_video)
    }

    /// A reader for raw s16le mono PCM at `sample_rate` Hz; `None` unless the rate is 16000 or
    /// 24000.
    pub fn pcm(sample_rate: u32) -> Option<Self> {
        PcmRate::from_hz(sample_rate).map(|r| Self::with_mode(LiveMode::RawPcm(r), false))
    }

    /// A reader for input of a known kind.
    pub fn with_mode(mode: LiveMode, needs_video: bool) -> Self {
        Self {
            mode,
            needs_video,
            limits: LiveLimits::default(),
            samples: Vec::new(),
            samples_total: 0,
            video_end: 0.0,
            demux: None,
            file: None,
            sniff: Vec::new(),
            sniff_segment: 0,
            raw: None,
            events: Vec::new(),
            decoded_anything: false,
            bytes_without_progress: 0,
            reported_no_video: false,
            reported_no_audio: false,
            container: None,
            fatal: None,
            last_segment: 0,
        }
    }

    /// The same reader with other limits.
    pub fn with_limits(mut self, limits: LiveLimits) -> Self {
        self.limits = limits;
        self
    }

    /// The mode the reader was made with.
    pub fn mode(&self) -> LiveMode {
        self.mode
    }

    /// The container of the file read most recently, once recognised.
    pub fn container(&self) -> Option<Container> {
        self.container
    }

    /// Reads one binary frame; `segment` is the caller's index for it, echoed in the report.
    pub fn push(&mut self, frame: &[u8], segment: u64) -> ChunkReport {
        let mut r = ChunkReport {
            segment,
            ..ChunkReport::default()
        };
        if let Some(f) = &self.fatal {
            r.fatal = Some(f.clone());
            return r;
        }
        self.last_segment = segment;
        let (total_before, end_before) = (self.samples_total, self.media_end());
        self.bytes_without_progress = self
            .bytes_without_progress
            .saturating_add(frame.len() as u64);
        match self.mode {
            LiveMode::RawPcm(rate) => self.push_raw(frame, rate, &mut r),
            LiveMode::Segments => self.whole_file(frame, segment, &mut r),
            LiveMode::Auto | LiveMode::Continuous => self.push_stream(frame, segment, &mut r),
        }
        self.close_report(&mut r, total_before, end_before);
        r
    }

    /// Ends the current file: hands out what was held back for more data (the last PES of a
    /// transport stream, the resampler's tail) and reports it like a frame. Frames pushed
    /// afterwards start a new file on the same timeline.
    pub fn finish(&mut self) -> ChunkReport {
        let segment = self.last_segment;
        let mut r = ChunkReport {
            segment,
            ..ChunkReport::default()
        };
        if let Some(f) = &self.fatal {
            r.fatal = Some(f.clone());
            return r;
        }
        let (total_before, end_before) = (self.samples_total, self.media_end());
        if let Some(raw) = self.raw.take() {
            let before = self.samples.len();
            if let Err(e) = raw.pipeline.finish(&mut self.samples) {
                r.problem(segment, LiveProblem::from_media(&e));
            }
            self.samples_total += (self.samples.len() - before) as u64;
        }
        if self.demux.is_some() {
            self.end_stream(segment, false, &mut r);
        } else if !self.sniff.is_empty() {
            let bytes = std::mem::take(&mut self.sniff);
            let sniff_segment = self.sniff_segment;
            self.start(&bytes, detect(&bytes, true), sniff_segment, false, &mut r);
            if self.demux.is_some() {
                self.end_stream(segment, false, &mut r);
            }
        }
        self.close_report(&mut r, total_before, end_before);
        r
    }

    /// The decoded PCM not yet drained: 16 kHz mono, its first sample at session index
    /// [`Self::samples_start`].
    pub fn samples(&self) -> &[f32] {
        &self.samples
    }

    /// Takes the decoded PCM not yet drained.
    pub fn drain_samples(&mut self) -> Vec<f32> {
        std::mem::take(&mut self.samples)
    }

    /// The session sample index of the first sample of [`Self::samples`].
    pub fn samples_start(&self) -> u64 {
        self.samples_total - self.samples.len() as u64
    }

    /// PCM samples appended over the session, drained or not.
    pub fn samples_total(&self) -> u64 {
        self.samples_total
    }

    /// How far the session's media reaches, in seconds: the end of its PCM or its latest video
    /// frame, whichever is later.
    pub fn media_end(&self) -> f64 {
        (self.samples_total as f64 / f64::from(Pcm::SAMPLE_RATE)).max(self.video_end)
    }

    /// Whether any audio packet or video frame was read in this session.
    pub fn has_decoded_anything(&self) -> bool {
        self.decoded_anything
    }

    /// Bytes received since the last container header or decodable unit (the hold counter).
    pub fn bytes_without_progress(&self) -> u64 {
        self.bytes_without_progress
    }

    /// Input bytes the reader holds while it waits for the rest of a unit (its own memory,
    /// beside decoder state and the undrained PCM).
    pub fn buffered_bytes(&self) -> usize {
        self.demux.as_ref().map_or(0, |d| d.pending_bytes()) + self.sniff.len()
    }

    /// The fatal error that stopped the reader, if one did.
    pub fn fatal(&self) -> Option<&LiveError> {
        self.fatal.as_ref()
    }

    fn max_samples(&self) -> u64 {
        (self.limits.max_media_seconds.max(0.0) * f64::from(Pcm::SAMPLE_RATE)) as u64
    }

    fn progress(&mut self) {
        self.bytes_without_progress = 0;
    }

    fn unit(&mut self) {
        self.bytes_without_progress = 0;
        self.decoded_anything = true;
    }

    fn stop(&mut self, error: LiveError) {
        self.fatal = Some(error);
        self.demux = None;
        self.file = None;
        self.raw = None;
        self.sniff = Vec::new();
    }

    /// Applies the limits, totals the frame's output and tidies its problem list.
    fn close_report(&mut self, r: &mut ChunkReport, total_before: u64, end_before: f64) {
        if self.fatal.is_none() {
            let pending = self.buffered_bytes();
            if self.samples_total > self.max_samples() {
                self.stop(LiveError::MediaTooLong {
                    maximum: self.limits.max_media_seconds,
                });
            } else if pending > self.limits.max_pending_bytes {
                self.stop(LiveError::NotAdvancing {
                    bytes: pending as u64,
                });
            } else if self.bytes_without_progress > self.limits.hold_bytes {
                self.stop(LiveError::NotAdvancing {
                    bytes: self.bytes_without_progress,
                });
            }
        }
        r.fatal = self.fatal.clone();
        r.samples_appended = (self.samples_total - total_before) as usize;
        let end = self.media_end();
        if end > end_before {
            r.span = Some(MediaSpan {
                start: end_before,
                end,
            });
        }
        // One report per (segment, code): a damaged frame is one problem, however many
        // elements in it were broken.
        let mut seen = Vec::new();
        r.problems.retain(|p| {
            let key = (p.segment, p.problem.code_str());
            let fresh = !seen.contains(&key);
            seen.push(key);
            fresh
        });
    }

    fn check_tracks(
        &mut self,
        has_video: bool,
        has_audio: bool,
        segment: u64,
        r: &mut ChunkReport,
    ) {
        if self.needs_video && has_audio && !has_video && !self.reported_no_video {
            self.reported_no_video = true;
            r.problem(segment, LiveProblem::NoVideo);
        }
        if !has_audio && !self.reported_no_audio {
            self.reported_no_audio = true;
            r.problem(segment, LiveProblem::NoAudio);
        }
    }

    fn push_raw(&mut self, frame: &[u8], rate: PcmRate, r: &mut ChunkReport) {
        if self.raw.is_none() {
            match RawPipeline::new(rate.hz()) {
                Ok(pipeline) => {
                    self.raw = Some(RawState {
                        pipeline,
                        carry: None,
                    })
                }
                Err(e) => return r.problem(r.segment, LiveProblem::from_media(&e)),
            }
        }
        let Some(raw) = self.raw.as_mut() else { return };
        let mut bytes = frame;
        let mut piece: Vec<f32> = Vec::with_capacity(RAW_PIECE.min(frame.len() / 2 + 1));
        if let (Some(low), Some((&high, rest))) = (raw.carry, bytes.split_first()) {
            piece.push(f32::from(i16::from_le_bytes([low, high])) / 32_768.0);
            raw.carry = None;
            bytes = rest;
        }
        let before = self.samples.len();
        let mut converted = 0usize;
        let mut failed = None;
        let mut pairs = bytes.chunks_exact(2);
        loop {
            let room = RAW_PIECE.saturating_sub(piece.len());
            piece.extend(
                pairs
                    .by_ref()
                    .take(room)
                    .map(|p| f32::from(i16::from_le_bytes([p[0], p[1]])) / 32_768.0),
            );
            if piece.is_empty() {
                break;
            }
            converted += piece.len();
            if let Err(e) = raw.pipeline.push(&piece, &mut self.samples) {
                failed = Some(e);
                break;
            }
            piece.clear();
        }
        if let [odd] = pairs.remainder() {
            raw.carry = Some(*odd);
        }
        self.samples_total += (self.samples.len() - before) as u64;
        if let Some(e) = failed {
            r.problem(r.segment, LiveProblem::from_media(&e));
        }
        // Every whole sample is a decodable unit, whether or not the resampler let it out yet.
        if converted > 0 {
            self.unit();
        }
    }

    /// A frame read as one complete file.
    fn whole_file(&mut self, bytes: &[u8], segment: u64, r: &mut ChunkReport) {
        if bytes.is_empty() {
            return r.problem(
                segment,
                LiveProblem::Unreadable {
                    reason: "an empty frame".into(),
                },
            );
        }
        if let Some(reason) = missing_header(bytes) {
            return r.problem(
                segment,
                LiveProblem::MissingHeader {
                    reason: reason.into(),
                },
            );
        }
        let reader = match crate::formats::open(bytes) {
            Ok(reader) => reader,
            Err(e) => return r.problem(segment, LiveProblem::from_media(&e)),
        };
        let duration = match reader.duration() {
            Some(d) if d.is_finite() && d > 0.0 => d,
            _ => {
                return r.problem(
                    segment,
                    LiveProblem::Unreadable {
                        reason: "the segment's duration is zero or unknown".into(),
                    },
                )
            }
        };
        if duration < MediaRequirements::MIN_DURATION {
            return r.problem(segment, LiveProblem::TooShort { duration });
        }
        self.progress();
        self.container = Some(reader.container());
        let tracks = reader.tracks();
        let has_video = tracks.iter().any(|t| t.kind == TrackKind::Video);
        let has_audio = tracks.iter().any(|t| t.kind == TrackKind::Audio);
        self.check_tracks(has_video, has_audio, segment, r);
        let room = self.max_samples().saturating_sub(self.samples_total);
        let pcm = match reader.audio_track() {
            Ok(track) => {
                let max_seconds = room as f64 / f64::from(Pcm::SAMPLE_RATE);
                match crate::audio::decode_track(track, max_seconds) {
                    Ok(pcm) => Some(pcm.samples),
                    Err(MediaError::TooLong { .. }) => {
                        return self.stop(LiveError::MediaTooLong {
                            maximum: self.limits.max_media_seconds,
                        })
                    }
                    Err(e) => {
                        r.problem(segment, LiveProblem::from_media(&e));
                        None
                    }
                }
            }
            Err(MediaError::NoAudioStream) => None,
            // The segment still happened: its video counts and its time passes in silence,
            // as for a stream whose audio cannot be decoded.
            Err(e) => {
                r.problem(segment, LiveProblem::from_media(&e));
                None
            }
        };
        let frames = reader.video_frames().unwrap_or_default();
        let origin = self.samples_total;
        let origin_s = origin as f64 / f64::from(Pcm::SAMPLE_RATE);
        match pcm {
            Some(samples) => {
                self.samples_total += samples.len() as u64;
                self.samples.extend(samples);
            }
            None => {
                // Silence as long as the video: its frames when it has any (a damaged
                // duration field must not stretch the timeline), else the stated duration.
                let end = match (frames.first(), frames.last()) {
                    (Some(first), Some(last)) if frames.len() > 1 => {
                        last.pts + (last.pts - first.pts) / (frames.len() - 1) as f64
                    }
                    _ => duration,
                };
                let n = (end.max(0.0) * f64::from(Pcm::SAMPLE_RATE)).round() as u64;
                if !self.pad(n) {
                    return;
                }
            }
        }
        for f in frames {
            let pts = origin_s + f.pts;
            self.video_end = self.video_end.max(pts);
            r.video_frames.push(VideoFrameInfo { pts, ..f });
        }
        self.unit();
    }

    /// Appends `n` samples of silence; `false` (and the reader stopped) past the media cap.
    fn pad(&mut self, n: u64) -> bool {
        if self.samples_total.saturating_add(n) > self.max_samples() {
            self.stop(LiveError::MediaTooLong {
                maximum: self.limits.max_media_seconds,
            });
            return false;
        }
        self.samples.resize(self.samples.len() + n as usize, 0.0);
        self.samples_total += n;
        true
    }

    fn push_stream(&mut self, frame: &[u8], segment: u64, r: &mut ChunkReport) {
        if self.demux.is_some() {
            if !opens_file(frame) {
                self.feed(frame, segment, r);
                if let Some(file) = self.file.as_mut() {
                    file.pushes += 1;
                }
                return;
            }
            self.end_stream(segment, true, r);
            if self.fatal.is_some() {
                return;
            }
        }
        if !self.sniff.is_empty() && opens_file(frame) {
            // What was gathered never became a recognisable header.
            self.sniff.clear();
            r.problem(
                self.sniff_segment,
                LiveProblem::Unreadable {
                    reason: "an incomplete container header".into(),
                },
            );
        }
        if self.sniff.is_empty() {
            // The usual case: the frame alone tells what it is, and is read without a copy.
            match detect(frame, false) {
                Detected::NeedMore => {
                    self.sniff_segment = segment;
                    self.sniff.extend_from_slice(frame);
                }
                detected => self.start(frame, detected, segment, true, r),
            }
            return;
        }
        // `detect` asks for more only below a few hundred bytes, so this stays small.
        self.sniff.extend_from_slice(frame);
        let detected = detect(&self.sniff, false);
        if detected != Detected::NeedMore {
            let bytes = std::mem::take(&mut self.sniff);
            self.start(&bytes, detected, segment, false, r);
        }
    }

    /// Starts reading a new file whose first bytes are `bytes`.
    fn start(
        &mut self,
        bytes: &[u8],
        detected: Detected,
        segment: u64,
        at_frame_start: bool,
        r: &mut ChunkReport,
    ) {
        let cap = self.limits.max_pending_bytes;
        let demux: Box<dyn Demuxer> = match detected {
            Detected::Mkv => Box::new(crate::formats::mkv::MkvDemuxer::stream(cap)),
            Detected::Fmp4 => Box::new(fmp4::Fmp4Demuxer::new(cap)),
            Detected::Ts {
                packet_size,
                offset,
            } => Box::new(ts::TsDemuxer::new(
                packet_size,
                offset,
                MAX_PES_BYTES.min(cap),
            )),
            Detected::WholeFile if self.mode == LiveMode::Continuous => {
                return r.problem(
                    segment,
                    LiveProblem::Unreadable {
                        reason: "a container that can only be read whole, in a continuous stream"
                            .into(),
                    },
                )
            }
            Detected::WholeFile => return self.whole_file(bytes, segment, r),
            Detected::NeedMore | Detected::Unknown => {
                return r.problem(
                    segment,
                    LiveProblem::Unreadable {
                        reason: "not a recognised media container".into(),
                    },
                )
            }
        };
        self.demux = Some(demux);
        let mut file = FileCtx::new(self.samples_total, segment, at_frame_start);
        file.pushes = 1;
        self.file = Some(file);
        self.feed(bytes, segment, r);
    }

    fn feed(&mut self, bytes: &[u8], segment: u64, r: &mut ChunkReport) {
        let Some(demux) = self.demux.as_mut() else {
            return;
        };
        let mut events = std::mem::take(&mut self.events);
        demux.feed(bytes, &mut events);
        self.apply(&mut events, segment, r);
        self.events = events;
    }

    /// Ends the stream's current file: flushes the demuxer and the decoder. `by_next_file`:
    /// the next frame opened a new file, so a file that was exactly one frame was a segment.
    fn end_stream(&mut self, segment: u64, by_next_file: bool, r: &mut ChunkReport) {
        if let Some(mut demux) = self.demux.take() {
            let mut events = std::mem::take(&mut self.events);
            demux.finish(&mut events);
            self.apply(&mut events, segment, r);
            self.events = events;
        }
        self.close_file(segment, by_next_file, r);
    }

    /// Finishes the current file's audio and moves the timeline to its end.
    fn close_file(&mut self, segment: u64, by_next_file: bool, r: &mut ChunkReport) {
        let Some(mut file) = self.file.take() else {
            return;
        };
        if let Some(pipeline) = file.audio.take() {
            let before = self.samples.len();
            if let Err(e) = pipeline.finish(&mut self.samples) {
                r.problem(segment, LiveProblem::from_media(&e));
            }
            let n = (self.samples.len() - before) as u64;
            self.samples_total += n;
            file.audio_samples += n;
        }
        if file.audio_samples == 0 {
            if let Some(last) = file.video_last {
                let end =
                    file.origin as f64 + (last + file.video_step) * f64::from(Pcm::SAMPLE_RATE);
                let n = (end.round() as u64).saturating_sub(self.samples_total);
                if !self.pad(n) {
                    return;
                }
            }
        }
        let segment_like =
            self.mode == LiveMode::Auto && by_next_file && file.pushes == 1 && file.starts_at_frame;
        let duration = file.duration();
        if segment_like && duration > 0.0 && duration < MediaRequirements::MIN_DURATION {
            r.problem(file.first_segment, LiveProblem::TooShort { duration });
        }
    }

    fn apply(&mut self, events: &mut Vec<Event>, segment: u64, r: &mut ChunkReport) {
        for event in events.drain(..) {
            if self.fatal.is_some() {
                continue;
            }
            match event {
                Event::Header {
                    container,
                    has_video,
                    has_audio,
                } => {
                    self.progress();
                    self.container = Some(container);
                    self.check_tracks(has_video, has_audio, segment, r);
                }
                Event::AudioSetup(setup) => {
                    let Some(file) = self.file.as_mut() else {
                        continue;
                    };
                    if file.audio.is_some() || file.audio_failed {
                        continue;
                    }
                    match AudioPipeline::new(setup) {
                        Ok(p) => file.audio = Some(p),
                        Err(e) => {
                            file.audio_failed = true;
                            r.problem(segment, LiveProblem::from_media(&e));
                        }
                    }
                }
                Event::Audio(packet) => {
                    self.unit();
                    self.decode(&packet, segment, r);
                }
                Event::Video(frame, _) => {
                    self.unit();
                    let Some(file) = self.file.as_mut() else {
                        continue;
                    };
                    if let Some(last) = file.video_last {
                        if frame.pts > last {
                            file.video_step = frame.pts - last;
                        }
                    }
                    file.video_last = Some(file.video_last.map_or(frame.pts, |l| l.max(frame.pts)));
                    let pts = file.origin as f64 / f64::from(Pcm::SAMPLE_RATE) + frame.pts;
                    self.video_end = self.video_end.max(pts);
                    r.video_frames.push(VideoFrameInfo { pts, ..frame });
                }
                Event::Problem(p) => r.problem(segment, p),
                Event::NewFile => {
                    self.close_file(segment, false, r);
                    if self.fatal.is_none() {
                        self.file = Some(FileCtx::new(self.samples_total, segment, false));
                    }
                }
            }
        }
    }

    fn decode(&mut self, packet: &Packet, segment: u64, r: &mut ChunkReport) {
        let room = self.max_samples().saturating_sub(self.samples_total);
        let Some(file) = self.file.as_mut() else {
            return;
        };
        let Some(pipeline) = file.audio.as_mut() else {
            return;
        };
        let before = self.samples.len();
        let result = pipeline.push(packet, &mut self.samples, room);
        let stop_reason = match (pipeline.stopped(), file.reported_stop) {
            (Some(stopped), false) => Some(match stopped {
                Stopped::BadPackets(e) => format!("the audio stopped decoding: {e}"),
                Stopped::RateChanged => "the audio changed its sample rate".to_string(),
                Stopped::ZeroRate => "the audio decoder reported 0 Hz".to_string(),
            }),
            _ => None,
        };
        file.reported_stop |= stop_reason.is_some();
        let n = (self.samples.len() - before) as u64;
        file.audio_samples += n;
        if result.is_err() {
            file.audio = None;
            file.audio_failed = true;
        }
        self.samples_total += n;
        if let Some(reason) = stop_reason {
            r.problem(segment, LiveProblem::Unreadable { reason });
        }
        match result {
            Ok(()) => {}
            Err(MediaError::TooLong { .. }) => self.stop(LiveError::MediaTooLong {
                maximum: self.limits.max_media_seconds,
            }),
            Err(e) => r.problem(segment, LiveProblem::from_media(&e)),
        }
    }
}

impl std::fmt::Debug for LiveReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveReader")
            .field("mode", &self.mode)
            .field("container", &self.container)
            .field("samples_total", &self.samples_total)
            .field("media_end", &self.media_end())
            .field("bytes_without_progress", &self.bytes_without_progress)
            .field("fatal", &self.fatal)
            .finish_non_exhaustive()
    }
}
