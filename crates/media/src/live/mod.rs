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
//! whether they arrive whole or in pieces, by the very demuxers the file path uses
//! (`formats::{mkv,mp4,ts}`); containers that can only be read whole (progressive
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
//! and `ih5008` no audio (each once per session), `ih5005` a self-contained segment declaring a video frame over the 32 MB cap (skipped),
//! `ih5003` an audio codec that cannot be
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
mod detect;
mod raw;
mod report;
mod whole;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use symphonia::core::packet::Packet;

use crate::formats::ts;

pub use crate::demux::LiveProblem;
pub(crate) use crate::demux::{Demuxer, Event};
use crate::error::MediaError;
use crate::info::{Container, Pcm, VideoFrameInfo};
use crate::requirements::MediaRequirements;
use crate::video::{LumaDecoder, PictureOptions, RgbFilter, VideoPicture};
use audio::{AudioPipeline, Stopped};
use detect::{detect, opens_file, Detected};
use raw::RawState;
pub use report::{
    ChunkReport, LiveError, LiveLimits, LiveMode, MediaSpan, PcmRate, SegmentProblem,
};

/// The largest PES packet the transport stream demuxer assembles (a 4K keyframe is a few MB).
const MAX_PES_BYTES: usize = 16 * 1024 * 1024;

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
    /// The file's pixel decoder, when pixels were asked for and its codec has one.
    pictures: Option<LumaDecoder>,
    /// Frames waiting for that decoder ([`LiveReader::with_deferred_pictures`]), in decode
    /// order, on the file's clock.
    undecoded: VecDeque<(VideoFrameInfo, Vec<u8>)>,
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
            pictures: None,
            undecoded: VecDeque::new(),
        }
    }

    /// The file's media time 0 on the session timeline, s.
    fn origin_s(&self) -> f64 {
        self.origin as f64 / f64::from(Pcm::SAMPLE_RATE)
    }

    /// Decodes the waiting frames up to and including the last one presented before `until`
    /// (session time), in decode order; the pictures on the session clock.
    fn decode_undecoded(&mut self, until: f64, out: &mut DecodedPictures) {
        let origin = self.origin_s();
        let Some(last) = self
            .undecoded
            .iter()
            .rposition(|(frame, _)| origin + frame.pts < until)
        else {
            return;
        };
        let Some(decoder) = self.pictures.as_mut() else {
            self.undecoded.clear();
            return;
        };
        for (frame, bytes) in self.undecoded.drain(..=last) {
            let before = decoder.over_budget();
            let picture = decoder.decode_bytes(frame.pts, Some(frame.keyframe), &bytes);
            out.frames_over_budget += decoder.over_budget() - before;
            if let Some(mut picture) = picture {
                shift_picture(&mut picture, origin);
                out.pictures.push(picture);
            }
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
    /// What to decode video to, when pixels were asked for ([`LiveReader::with_pixels`]).
    pixels: Option<LivePixels>,
    /// Frames are decoded to pictures when the caller asks ([`LiveReader::decode_pictures`]),
    /// not as they arrive.
    defer_pictures: bool,
    /// Which sampled pictures' RGB is made ([`LiveReader::with_rgb_filter`]), one filter for
    /// every file of the session.
    rgb_filter: Option<Arc<Mutex<RgbFilter>>>,
}

/// Pictures decoded by [`LiveReader::decode_pictures`].
#[derive(Debug, Default)]
pub struct DecodedPictures {
    /// The sampled pictures, on the session clock, in the decoder's output order.
    pub pictures: Vec<VideoPicture>,
    /// Frames not decoded because the decode budget ran out (see
    /// [`ChunkReport::frames_over_budget`]).
    pub frames_over_budget: usize,
}

/// Live pixel decoding: what each sampled picture gives and the decode budget.
///
/// Pixels come from continuous Matroska/WebM streams (what browsers record: VP8, VP9, H.264);
/// self-contained segments and other containers keep giving frame timing and sizes only. Each
/// file of the stream has its own decoder and budget (a MediaRecorder recording is one file).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LivePixels {
    /// Luma width, RGB width and sampling rate of the pictures handed out.
    pub options: PictureOptions,
    /// The decode budget: picture pixels decoded per second of media (see
    /// [`LumaDecoder::with_pixel_budget`]); past it, frames are skipped up to the next key
    /// frame and counted in [`ChunkReport::frames_over_budget`].
    pub pixels_per_second: f64,
}

impl LivePixels {
    /// The default budget: a 1280x720 stream at 30 fps, the most a webcam sends in a browser
    /// call, decodes whole; a larger or faster one is thinned to key frames. Decoding that much
    /// takes, per second of media on one core, about 0.28 s for H.264, 0.17 s for VP9 and 0.45 s
    /// for VP8 (BENCHMARKS.md, "Video decode"), so two cores hold about 7 such H.264 sessions, 11
    /// VP9 or 4 VP8 (browsers' 640x480 default takes a third of that).
    pub const DEFAULT_BUDGET: f64 = 1280.0 * 720.0 * 30.0;
}

impl Default for LivePixels {
    /// Luma at [`DEFAULT_LUMA_WIDTH`](crate::video::DEFAULT_LUMA_WIDTH), RGB at 320 px across,
    /// 10 pictures a second, [`LivePixels::DEFAULT_BUDGET`].
    fn default() -> Self {
        Self {
            options: PictureOptions {
                luma_width: crate::video::DEFAULT_LUMA_WIDTH,
                rgb_width: Some(320),
                sample_fps: Some(10.0),
            },
            pixels_per_second: Self::DEFAULT_BUDGET,
        }
    }
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
            pixels: None,
            defer_pictures: false,
            rgb_filter: None,
        }
    }

    /// The same reader decoding the video of Matroska/WebM streams to pictures
    /// ([`ChunkReport::pictures`]), as `pixels` says.
    pub fn with_pixels(mut self, pixels: LivePixels) -> Self {
        self.pixels = Some(pixels);
        self
    }

    /// The same reader making the RGB of a sampled picture ([`LivePixels::options`]'s
    /// `rgb_width`) only when `filter`, asked with the picture's luma, says so; the others are
    /// handed out with luma alone ([`VideoPicture::rgb`] `None`). One filter serves the whole
    /// session: it is asked about every sampled picture of every file, in the order the
    /// pictures are handed out and with their times on the session clock, so a caller can
    /// mirror in it what it will do with them (the decoders' own rules are
    /// [`LumaDecoder::with_rgb_filter`]'s).
    pub fn with_rgb_filter(mut self, filter: RgbFilter) -> Self {
        self.rgb_filter = Some(Arc::new(Mutex::new(filter)));
        self
    }

    /// The same reader leaving the decoding of pictures to the caller: the frames of a file
    /// with a pixel decoder wait, encoded, until [`decode_pictures`](Self::decode_pictures)
    /// asks for them (or the file ends: then the pictures come in the [`ChunkReport`] that ends
    /// it), so a caller can decode them when it has time rather than as each frame arrives.
    /// The pictures are the same either way; [`ChunkReport::video_frames`] still lists every
    /// frame as it is read. Without [`with_pixels`](Self::with_pixels) this changes nothing.
    pub fn with_deferred_pictures(mut self) -> Self {
        self.defer_pictures = true;
        self
    }

    /// Decodes the frames waiting for their decoder ([`with_deferred_pictures`](Self::with_deferred_pictures))
    /// up to and including the last one presented before session time `until` (`f64::INFINITY`:
    /// all of them), in decode order, so that every picture the decoder will ever show before
    /// `until` has been decoded except those it holds back for reordering.
    pub fn decode_pictures(&mut self, until: f64) -> DecodedPictures {
        let mut out = DecodedPictures::default();
        if let Some(file) = self.file.as_mut() {
            file.decode_undecoded(until, &mut out);
        }
        out
    }

    /// The session time of the earliest frame waiting for its decoder, if any waits.
    pub fn first_undecoded(&self) -> Option<f64> {
        let file = self.file.as_ref()?;
        let origin = file.origin_s();
        file.undecoded
            .iter()
            .map(|(frame, _)| origin + frame.pts)
            .min_by(f64::total_cmp)
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
            if let Err(e) = raw.finish(&mut self.samples) {
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
            Detected::Fmp4 => Box::new(crate::formats::mp4::Mp4Demuxer::stream(cap)),
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
        let mut waiting = DecodedPictures::default();
        file.decode_undecoded(f64::INFINITY, &mut waiting);
        r.pictures.extend(waiting.pictures);
        r.frames_over_budget += waiting.frames_over_budget;
        if let Some(mut decoder) = file.pictures.take() {
            let origin = file.origin_s();
            for mut picture in decoder.finish_pictures() {
                shift_picture(&mut picture, origin);
                r.pictures.push(picture);
            }
        }
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
                Event::VideoSetup { codec, config } => {
                    let (Some(file), Some(pixels)) = (self.file.as_mut(), self.pixels) else {
                        continue;
                    };
                    let options = pixels.options;
                    let origin = file.origin_s();
                    let filter = self.rgb_filter.clone();
                    // A codec without a pixel decoder keeps its frame timing and sizes.
                    file.pictures = LumaDecoder::new(&codec, config.as_deref(), options.luma_width)
                        .ok()
                        .map(|d| {
                            let d = d.with_pixel_budget(pixels.pixels_per_second);
                            let d = match options.rgb_width {
                                Some(w) => d.with_rgb(w),
                                None => d,
                            };
                            let d = match filter {
                                // Asked on the session clock, as the pictures are handed out
                                // (`shift_picture`); a poisoned filter makes every RGB.
                                Some(shared) => d.with_rgb_filter_at(
                                    Box::new(move |luma| {
                                        shared.lock().map_or(true, |mut f| f(luma))
                                    }),
                                    origin,
                                ),
                                None => d,
                            };
                            match options.sample_fps {
                                Some(fps) => d.with_sample_rate(fps),
                                None => d,
                            }
                        });
                }
                Event::Audio(packet) => {
                    self.unit();
                    self.decode(&packet, segment, r);
                }
                Event::Video(frame, bytes) => {
                    self.unit();
                    let Some(file) = self.file.as_mut() else {
                        continue;
                    };
                    let bytes = match bytes {
                        Some(bytes) if self.defer_pictures && file.pictures.is_some() => {
                            file.undecoded.push_back((frame, bytes));
                            None
                        }
                        bytes => bytes,
                    };
                    if let (Some(decoder), Some(bytes)) = (file.pictures.as_mut(), bytes) {
                        let before = decoder.over_budget();
                        // Decoded on the file's clock; handed out on the session's.
                        let picture = decoder.decode_bytes(frame.pts, Some(frame.keyframe), &bytes);
                        r.frames_over_budget += decoder.over_budget() - before;
                        if let Some(mut picture) = picture {
                            shift_picture(&mut picture, file.origin_s());
                            r.pictures.push(picture);
                        }
                    }
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

/// Moves a picture from its file's clock to the session timeline.
fn shift_picture(picture: &mut VideoPicture, origin: f64) {
    picture.luma.pts += origin;
    if let Some(rgb) = picture.rgb.as_mut() {
        rgb.pts += origin;
    }
}
