//! The streaming analyzer: a stream session's binary frames in, closed analysis windows out,
//! through the same features, windows and window analyzer as a file.
//!
//! A [`LiveAnalyzer`] owns one session's media path: the incremental container reader
//! ([`attune_media::live::LiveReader`]), the incremental feature extractor, the visual track
//! (pictures and faces from the video of continuous WebM streams, encoded frame sizes
//! otherwise), the
//! [`StreamWindower`] (5 s windows on the session clock) and the model's [`WindowAnalyzer`]
//! with its running baselines; each closed window goes through the same window step as a
//! file's ([`crate::step::analyze_window`]) and its result is converted once, to the stream form. Each [`push`](LiveAnalyzer::push) reads one frame and returns
//! what it produced as a [`LiveOutput`]; the session engine
//! ([`crate::session::StreamSession`]) turns that into events.
//!
//! Video: a window is read from the pictures presented before its end plus
//! [`VIDEO_LOOKAHEAD_S`], whatever way the stream was cut, so its face cues do not depend on
//! how the sender chunked the stream. Pictures are decoded and read in order; those the window
//! closing now needs are read before it is analyzed, the rest after: by the same
//! [`push`](LiveAnalyzer::push), or, with [`LiveAnalyzer::defer_video`], by
//! [`LiveAnalyzer::read_ahead`] when the caller has time (the server runs it between a session's
//! frames), so that closing a window waits only for its last fraction of a second of video.
//! The visual track never reads past the next window's pictures until that window closes,
//! unless its video runs more than [`VIDEO_BACKLOG_S`] ahead of its audio (a stream without
//! audio closes no window before it ends), so undecoded video stays bounded.
//!
//! A window is analyzed only once every feature it reads is final
//! ([`FeatureExtractor::settled_s`]: frames, glottal pulses and voiced segments up to its end,
//! plus the pause look-ahead of the span summary), so a stream's window results equal those of
//! the same audio analyzed as a file, whatever the chunking. After each window the extractor
//! forgets what no later window reads, so a session's memory does not grow with its length.
//!
//! Words: built with [`LiveAnalyzer::keep_heard`], the analyzer keeps the samples it analyzed
//! and its diarizer's speaker turns for the session's [`LiveTranscript`], which the caller runs
//! apart from the analysis (see [`LiveTranscript`] for why); the utterances it gives come
//! back through [`LiveAnalyzer::add_utterances`] for later windows to read (so the words, and only
//! they, read differently from a file's, where each window reads its own).
//!
//! Falling behind: the caller decides when the session's analysis is behind (its queue of
//! unread frames) and pushes frames with `skip = true`. A skipped frame is still demuxed and
//! decoded (container and decoder state must follow the stream) but its audio is not analyzed;
//! windows that overlap skipped media are not analyzed and come back in
//! [`LiveOutput::dropped`] (the interface's `coverage.dropped`, not billed). After a skip the
//! feature extractor restarts at the first analyzed sample, so the work a skip saves is the
//! expensive part, feature extraction.

use crate::analysis::params::ModelParams;
use crate::analysis::{RuleAnalyzer, WindowAnalyzer};
use crate::error::{ErrorCode, ServiceError};
use crate::features::{self, FeatureExtractor, Span, SpeakerTurn};
use crate::lifecycle::ClosedWindow;
use crate::step::analyze_window_with_words;
use crate::transcript::Utterance;
use crate::visual::VisualTrack;
use crate::window::{StreamWindower, WindowPlan, WindowSpan};
use crate::wire::{AudioFormat, Endpoint, Model, Seconds, TimeRange};
use attune_media::live::{ChunkReport, LiveReader};
use attune_media::video::VideoPicture;
use attune_media::VideoFrameInfo;
use std::collections::VecDeque;
use std::sync::Arc;

/// Audio sample rate of the analysis path, Hz.
const RATE: f64 = 16_000.0;
/// Video context kept before the next window for the visual track's running statistics, s.
const KEEP_CONTEXT_S: f64 = 12.0;
/// A window is read from the pictures presented before its end plus this, s: under the audio's
/// own look-ahead (a window closes once its audio is final about 0.26 s past its end), so the
/// pictures are there when it closes unless the sender's video lags its audio; a nod or shake
/// confirmed later is reported in the next window (see `visual::FaceTrack::measure_live`).
pub const VIDEO_LOOKAHEAD_S: f64 = 0.25;
/// Video more than this far ahead of the next window's pictures is read anyway, s: the most
/// undecoded video a session holds (a stream without audio closes no window until it ends).
pub const VIDEO_BACKLOG_S: f64 = 10.0;
/// A window whose video covered less than this share of it is reported in
/// `coverage.degraded` (the analyzer stops reading its video below 0.5).
pub const DEGRADED_COVERAGE: f64 = 0.8;

mod heard;
pub use heard::{AudioRun, Heard, LiveTranscript};

/// A non-fatal problem of one frame.
#[derive(Debug, Clone, PartialEq)]
pub struct FrameProblem {
    /// The caller's segment index of the frame concerned.
    pub segment: u64,
    /// The problem, with its interface code.
    pub error: ServiceError,
}

/// What one [`LiveAnalyzer::push`] or [`LiveAnalyzer::finish`] produced.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LiveOutput {
    /// Windows analyzed, in order.
    pub windows: Vec<ClosedWindow>,
    /// Session media time now decoded, when this frame added media (the stream advances).
    pub media_end: Option<Seconds>,
    /// Non-fatal problems, each naming its frame.
    pub problems: Vec<FrameProblem>,
    /// Set when the media path stopped (`ih6010`, `ih6004`); the session should close.
    pub fatal: Option<ServiceError>,
    /// Analyzed windows whose video covered less than [`DEGRADED_COVERAGE`] of them, merged.
    pub degraded: Vec<TimeRange>,
    /// Windows skipped because the session's analysis was behind, merged.
    pub dropped: Vec<TimeRange>,
    /// Binary frames the reader examined to produce this output. The session's `ih6010` hold
    /// timer counts from the examination of a frame that did not advance the stream, not from
    /// its arrival, so a session whose analysis waits behind others is not mistaken for one
    /// sending undecodable bytes.
    pub frames_examined: u64,
}

impl LiveOutput {
    /// Whether there is nothing to tell.
    pub fn is_empty(&self) -> bool {
        self.windows.is_empty()
            && self.media_end.is_none()
            && self.problems.is_empty()
            && self.fatal.is_none()
            && self.degraded.is_empty()
            && self.dropped.is_empty()
            && self.frames_examined == 0
    }

    /// Appends `other` after this output.
    pub fn extend(&mut self, other: LiveOutput) {
        self.windows.extend(other.windows);
        if other.media_end.is_some() {
            self.media_end = other.media_end;
        }
        self.problems.extend(other.problems);
        if self.fatal.is_none() {
            self.fatal = other.fatal;
        }
        for range in other.degraded {
            push_merged(&mut self.degraded, range);
        }
        for range in other.dropped {
            push_merged(&mut self.dropped, range);
        }
        self.frames_examined += other.frames_examined;
    }
}

/// Has `visual` read every picture and frame presented before `until` that has arrived (in
/// the order the decoder gave them), decoding them from `reader` first.
fn read_video(
    reader: &mut LiveReader,
    visual: &mut VisualTrack,
    pictures: &mut VecDeque<VideoPicture>,
    frames: &mut VecDeque<VideoFrameInfo>,
    until: Seconds,
) {
    pictures.extend(reader.decode_pictures(until).pictures);
    while pictures.front().is_some_and(|p| p.luma.pts < until) {
        if let Some(picture) = pictures.pop_front() {
            visual.push_picture(&picture);
        }
    }
    while frames.front().is_some_and(|f| f.pts < until) {
        if let Some(frame) = frames.pop_front() {
            visual.push_encoded(&frame);
        }
    }
}

/// Whether the machine has more than one core to run a session's audio and video on at once.
fn second_core() -> bool {
    static MORE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *MORE.get_or_init(|| std::thread::available_parallelism().is_ok_and(|n| n.get() > 1))
}

/// Appends `range`, joining it to the last range when they touch.
fn push_merged(ranges: &mut Vec<TimeRange>, range: TimeRange) {
    match ranges.last_mut() {
        Some(last) if range.start <= last.end + 1e-9 => last.end = last.end.max(range.end),
        _ => ranges.push(range),
    }
}

/// Answers whether a second core is free now ([`LiveAnalyzer::with_spare_core`]).
pub type SpareCore = Arc<dyn Fn() -> bool + Send + Sync>;

/// One stream session's media analysis.
pub struct LiveAnalyzer {
    model: Model,
    endpoint: Endpoint,
    reader: LiveReader,
    extractor: FeatureExtractor,
    /// Session time of the extractor's time 0: later than 0 after a skip.
    origin: Seconds,
    /// Session time up to which audio was skipped (windows starting before it are dropped).
    skipped_until: Seconds,
    /// Whether the latest frame was skipped (the extractor restarts when analysis resumes).
    skipping: bool,
    windower: StreamWindower,
    analyzer: Box<dyn WindowAnalyzer>,
    visual: Option<VisualTrack>,
    /// Decoded pictures the visual track has not read yet, in the decoder's output order.
    pictures: VecDeque<VideoPicture>,
    /// Video frames the visual track has not seen yet (their encoded sizes), in decode order.
    frames: VecDeque<VideoFrameInfo>,
    /// `push` leaves the video ahead of its windows to [`LiveAnalyzer::read_ahead`].
    defer_video: bool,
    /// What the analysis heard, kept for a transcript ([`LiveAnalyzer::keep_heard`]).
    heard: Option<Heard>,
    /// Whether a second core is free now ([`LiveAnalyzer::with_spare_core`]).
    spare_core: SpareCore,
    /// Extractor time before which the diarizer's turns were already put in `heard`.
    turns_noted_until: f64,
    /// The session's words no window has read yet ([`LiveAnalyzer::add_utterances`]), in
    /// session time.
    utterances: Vec<Utterance>,
}

impl std::fmt::Debug for LiveAnalyzer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveAnalyzer")
            .field("model", &self.model)
            .field("endpoint", &self.endpoint)
            .field("origin", &self.origin)
            .field("media_time", &self.windower.media_time())
            .finish_non_exhaustive()
    }
}

impl LiveAnalyzer {
    /// A session's analysis with the model's rule analyzer.
    pub fn new(model: Model, endpoint: Endpoint) -> Self {
        let analyzer = Box::new(RuleAnalyzer::new(ModelParams::for_model(model)));
        Self::with_analyzer(model, endpoint, analyzer)
    }

    /// A session's analysis with another window analyzer (a learned model, say).
    pub fn with_analyzer(
        model: Model,
        endpoint: Endpoint,
        analyzer: Box<dyn WindowAnalyzer>,
    ) -> Self {
        let needs_video = model != Model::Inter2Audio;
        LiveAnalyzer {
            model,
            endpoint,
            reader: if needs_video {
                LiveReader::new(true)
                    .with_pixels(crate::visual::live_pixels())
                    .with_rgb_filter(crate::visual::face_colour_filter())
                    .with_deferred_pictures()
            } else {
                LiveReader::new(false)
            },
            extractor: FeatureExtractor::new(),
            origin: 0.0,
            skipped_until: 0.0,
            skipping: false,
            windower: StreamWindower::new(WindowPlan::UPLOAD),
            analyzer,
            visual: needs_video.then(VisualTrack::new),
            pictures: VecDeque::new(),
            frames: VecDeque::new(),
            defer_video: false,
            heard: None,
            spare_core: Arc::new(second_core),
            turns_noted_until: 0.0,
            utterances: Vec::new(),
        }
    }

    /// The same analyzer keeping what it hears for a transcript: the samples it analyzes and
    /// the speaker turns its online diarizer gives, in session time, until taken by
    /// [`take_heard`](Self::take_heard) (take them after every push: they are held until
    /// then). Feed them to a [`LiveTranscript`].
    pub fn keep_heard(mut self) -> Self {
        self.heard = Some(Heard::default());
        self
    }

    /// What the analysis heard since the last call (empty without
    /// [`keep_heard`](Self::keep_heard)).
    pub fn take_heard(&mut self) -> Heard {
        match self.heard.as_mut() {
            Some(heard) => {
                let until = heard.turns_until;
                let taken = std::mem::take(heard);
                heard.turns_until = until;
                taken
            }
            None => Heard::default(),
        }
    }

    /// The session's transcript arrived this far: utterances in session time, with their
    /// speakers (a [`LiveTranscript`]'s output), for the lexical cues of the windows that
    /// follow. Words are final only at a pause, typically 5-20 s after they were said, so a
    /// live window does not wait for its own: each window reads the utterances that arrived
    /// since the previous window closed and whose middle falls before its end (said in it or
    /// earlier), once, and its rationales quote their times. Memory stays bounded: every
    /// window takes what it reads.
    pub fn add_utterances(&mut self, utterances: &[Utterance]) {
        self.utterances.extend_from_slice(utterances);
    }

    /// The utterances added by [`add_utterances`](Self::add_utterances) that no window has read.
    pub fn utterances(&self) -> &[Utterance] {
        &self.utterances
    }

    /// Puts the diarizer's new turns (session time) in `heard`.
    fn note_turns(&mut self) {
        let Some(heard) = self.heard.as_mut() else {
            return;
        };
        // Each labelling step gives the turns of its own span, after the previous step's:
        // the new turns start at or after where the previous ones were known up to (half a
        // 10 ms grid frame of rounding).
        let since = self.turns_noted_until - 0.005;
        heard.turns.extend(
            self.extractor
                .speaker_turns_heard()
                .iter()
                .filter(|t| t.start >= since)
                .map(|t| SpeakerTurn {
                    speaker: t.speaker,
                    start: t.start + self.origin,
                    end: t.end + self.origin,
                }),
        );
        self.turns_noted_until = self.extractor.speakers_labelled_s();
        heard.turns_until = heard.turns_until.max(self.origin + self.turns_noted_until);
    }

    /// The same analyzer asking `spare` whether a second core is free before it reads a
    /// window's closing video on another thread beside its audio (by default: whether the
    /// machine has more than one core). A server answers from its own load, so that sessions
    /// do not take more threads than it has cores: on a loaded machine the second thread only
    /// slows every other session down.
    pub fn with_spare_core(mut self, spare: SpareCore) -> Self {
        self.spare_core = spare;
        self
    }

    /// The same analyzer with [`push`](Self::push) returning as soon as the windows its frame
    /// closed are analyzed, leaving the pictures ahead of them to [`read_ahead`](Self::read_ahead).
    /// The windows are the same either way (module docs); only when the work is done changes.
    pub fn defer_video(mut self) -> Self {
        self.defer_video = true;
        self
    }

    /// Whether [`read_ahead`](Self::read_ahead) has pictures to decode or read.
    pub fn has_work_ahead(&self) -> bool {
        if self.visual.is_none() {
            return false;
        }
        let until = self.read_ahead_until();
        self.reader.first_undecoded().is_some_and(|t| t < until)
            || self.pictures.front().is_some_and(|p| p.luma.pts < until)
            || self.frames.front().is_some_and(|f| f.pts < until)
    }

    /// Decodes and reads the pictures that arrived for the next window to close (and no later
    /// ones: see the module docs), so that its closing frame has little video left to read.
    /// Nothing to do without video.
    pub fn read_ahead(&mut self) {
        if self.visual.is_some() {
            self.read_video_until(self.read_ahead_until());
        }
    }

    /// Session time at which the next window to close ends.
    fn next_window_end(&self) -> Seconds {
        (self.windower.next_index() + 1) as f64 * self.windower.plan().window_seconds()
    }

    /// How far [`read_ahead`](Self::read_ahead) reads: the next full window's pictures, or
    /// further when the video runs more than [`VIDEO_BACKLOG_S`] ahead of them.
    fn read_ahead_until(&self) -> Seconds {
        (self.next_window_end() + VIDEO_LOOKAHEAD_S).max(self.reader.media_end() - VIDEO_BACKLOG_S)
    }

    /// Has the visual track read every picture and frame presented before `until` that has
    /// arrived (in the order the decoder gave them).
    fn read_video_until(&mut self, until: Seconds) {
        if let Some(visual) = self.visual.as_mut() {
            read_video(
                &mut self.reader,
                visual,
                &mut self.pictures,
                &mut self.frames,
                until,
            );
        }
    }

    /// Feeds `samples` (session audio up to `audio_end`) to the feature extractor while, when
    /// they reach the end of the next window, the session has video ahead and a second core is
    /// free ([`with_spare_core`](Self::with_spare_core)), another thread decodes and reads that video (what
    /// [`read_ahead`](Self::read_ahead) would read next). The two touch disjoint state, and
    /// reading ahead early changes no window (module docs), so the results are the same as
    /// one after the other; the frame that closes a window then waits for the longer of its
    /// audio and its video, not their sum.
    fn push_audio_beside_video(&mut self, samples: &[f32], audio_end: Seconds) {
        let until = self.read_ahead_until();
        let next_end = self.next_window_end();
        // Only a frame whose audio reaches the end of the next window to close waits on its
        // video; the others' video is left to `read_ahead` (or the end of this push).
        if !(audio_end >= next_end && self.has_work_ahead() && (self.spare_core)()) {
            self.extractor.push(samples);
            return;
        }
        let Self {
            reader,
            visual,
            pictures,
            frames,
            extractor,
            ..
        } = self;
        let Some(visual) = visual.as_mut() else {
            extractor.push(samples);
            return;
        };
        let spawned = std::thread::scope(|scope| {
            let video = std::thread::Builder::new()
                .name("attune-live-video".into())
                .spawn_scoped(scope, || {
                    read_video(reader, visual, pictures, frames, until)
                });
            extractor.push(samples);
            match video.map(|v| v.join()) {
                Ok(Ok(())) => true,
                Ok(Err(panic)) => std::panic::resume_unwind(panic),
                Err(_) => false,
            }
        });
        if !spawned {
            // No thread to be had: the video after the audio.
            self.read_video_until(until);
        }
    }

    /// The model analyzing the session.
    pub fn model(&self) -> Model {
        self.model
    }

    /// From now on frames are raw PCM in `format` (the session accepted `audio_format`).
    /// Answers `ih6001` for a format the reader cannot take.
    pub fn set_audio_format(&mut self, format: AudioFormat) -> Result<(), ServiceError> {
        let reader = LiveReader::pcm(format.sample_rate).ok_or_else(|| {
            ServiceError::with_message(
                ErrorCode::Ih6001,
                format!("sample_rate {} is not 16000 or 24000", format.sample_rate),
            )
        })?;
        self.reader = reader;
        Ok(())
    }

    /// Session media time decoded so far, s.
    pub fn media_end(&self) -> Seconds {
        self.reader.media_end()
    }

    /// Reads one binary frame. With `skip`, the frame's media is decoded but not analyzed.
    pub fn push(&mut self, segment: u64, bytes: &[u8], skip: bool) -> LiveOutput {
        let report = self.reader.push(bytes, segment);
        let mut out = self.absorb(report, skip);
        out.frames_examined = 1;
        out
    }

    /// The stream ended: analyzes what the reader held back and the last, possibly shorter,
    /// window.
    pub fn finish(&mut self) -> LiveOutput {
        // The video read so far must not depend on whether `read_ahead` ran after the last
        // frame, nor on `defer_video`.
        self.read_ahead();
        let report = self.reader.finish();
        let mut out = self.absorb(report, false);
        if out.fatal.is_some() {
            return out;
        }
        self.read_ahead();
        self.extractor.finish();
        self.note_turns();
        let mut spans: Vec<WindowSpan> = self
            .windower
            .advance(self.reader.media_end().max(self.origin))
            .collect();
        spans.extend(self.windower.finish());
        for span in spans {
            self.analyze_span(span, &mut out);
        }
        out
    }

    fn absorb(&mut self, mut report: ChunkReport, skip: bool) -> LiveOutput {
        let mut out = LiveOutput::default();
        let appended_media = report.appended_media();
        for p in &report.problems {
            out.problems.push(FrameProblem {
                segment: p.segment,
                error: ServiceError::from(&p.problem),
            });
        }
        if let Some(fatal) = &report.fatal {
            out.fatal = Some(ServiceError::from(fatal));
            return out;
        }
        if self.visual.is_some() {
            self.pictures.extend(std::mem::take(&mut report.pictures));
            self.frames.extend(std::mem::take(&mut report.video_frames));
        }
        if appended_media {
            out.media_end = Some(self.reader.media_end());
        }
        let samples_before = self.reader.samples_total() - self.reader.samples().len() as u64;
        let samples = self.reader.drain_samples();
        if skip {
            if !samples.is_empty() {
                self.skipping = true;
                self.skipped_until = (samples_before + samples.len() as u64) as f64 / RATE;
            }
        } else if !samples.is_empty() {
            if self.skipping {
                self.skipping = false;
                self.extractor = FeatureExtractor::new();
                self.origin = samples_before as f64 / RATE;
                self.turns_noted_until = 0.0;
            }
            let audio_end = (samples_before + samples.len() as u64) as f64 / RATE;
            self.push_audio_beside_video(&samples, audio_end);
            if let Some(heard) = self.heard.as_mut() {
                heard.push_audio(samples_before, &samples);
            }
            self.note_turns();
        }
        let ready = self.origin + self.extractor.settled_s();
        let analyzed_until = if self.skipping {
            self.skipped_until
        } else {
            ready.max(self.skipped_until)
        };
        let spans: Vec<WindowSpan> = self.windower.advance(analyzed_until).collect();
        for span in spans {
            self.analyze_span(span, &mut out);
        }
        if !self.defer_video {
            self.read_ahead();
        }
        out
    }

    fn analyze_span(&mut self, span: WindowSpan, out: &mut LiveOutput) {
        let range = TimeRange {
            start: span.start,
            end: span.end,
        };
        self.read_video_until(span.end + VIDEO_LOOKAHEAD_S);
        if span.start < self.skipped_until || span.start < self.origin {
            push_merged(&mut out.dropped, range);
            return;
        }
        let summary = features::summarize(
            self.extractor.features(),
            Span::new(span.start - self.origin, span.end - self.origin),
        );
        let video = self
            .visual
            .as_mut()
            .map(|v| v.measure_live_window(span.start, span.end));
        if let Some(v) = &video {
            if v.coverage < DEGRADED_COVERAGE {
                push_merged(&mut out.degraded, range);
            }
        }
        let (words, later): (Vec<Utterance>, Vec<Utterance>) = std::mem::take(&mut self.utterances)
            .into_iter()
            .partition(|u| (u.start + u.end) / 2.0 < span.end);
        self.utterances = later;
        let result =
            analyze_window_with_words(self.analyzer.as_mut(), &span, &summary, false, video, words);
        out.windows
            .push(result.stream_window(self.model, self.endpoint));
        // What no later window reads is let go: memory stays bounded however long the
        // session runs (the extractor keeps its own look-back before the next window).
        self.extractor.forget_before(span.end - self.origin);
        if let Some(visual) = self.visual.as_mut() {
            visual.forget_before(span.end - KEEP_CONTEXT_S);
        }
    }
}

#[cfg(test)]
mod chunk_props;
#[cfg(test)]
mod tests;
