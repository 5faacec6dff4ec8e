//! The streaming analyzer: a stream session's binary frames in, closed analysis windows out,
//! through the same features, windows and window analyzer as a file.
//!
//! A [`LiveAnalyzer`] owns one session's media path: the incremental container reader
//! ([`attune_media::live::LiveReader`]), the incremental feature extractor, the visual track
//! (motion from encoded frame sizes: live video is not decoded to pixels), the
//! [`StreamWindower`] (5 s windows on the session clock) and the model's [`WindowAnalyzer`]
//! with its running baselines; each closed window goes through the same window step as a
//! file's ([`analyze_window`]) and its result is converted once, to the stream form. Each [`push`](LiveAnalyzer::push) reads one frame and returns
//! what it produced as a [`LiveOutput`]; the session engine
//! ([`crate::session::StreamSession`]) turns that into events.
//!
//! A window is analyzed only once every feature it reads is final
//! ([`FeatureExtractor::settled_s`]: frames, glottal pulses and voiced segments up to its end,
//! plus the pause look-ahead of the span summary), so a stream's window results equal those of
//! the same audio analyzed as a file, whatever the chunking. After each window the extractor
//! forgets what no later window reads, so a session's memory does not grow with its length.
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
use crate::features::{self, FeatureExtractor, Span};
use crate::lifecycle::ClosedWindow;
use crate::step::analyze_window;
use crate::visual::VisualTrack;
use crate::window::{StreamWindower, WindowPlan, WindowSpan};
use crate::wire::{AudioFormat, Endpoint, Model, Seconds, TimeRange};
use attune_media::live::{ChunkReport, LiveReader};

/// Audio sample rate of the analysis path, Hz.
const RATE: f64 = 16_000.0;
/// Video context kept before the next window for the visual track's running statistics, s.
const KEEP_CONTEXT_S: f64 = 12.0;
/// A window whose video covered less than this share of it is reported in
/// `coverage.degraded` (the analyzer stops reading its video below 0.5).
pub const DEGRADED_COVERAGE: f64 = 0.8;

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

/// Appends `range`, joining it to the last range when they touch.
fn push_merged(ranges: &mut Vec<TimeRange>, range: TimeRange) {
    match ranges.last_mut() {
        Some(last) if range.start <= last.end + 1e-9 => last.end = last.end.max(range.end),
        _ => ranges.push(range),
    }
}

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
                LiveReader::new(true).with_pixels(crate::visual::live_pixels())
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
        let report = self.reader.finish();
        let mut out = self.absorb(report, false);
        if out.fatal.is_some() {
            return out;
        }
        self.extractor.finish();
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

    fn absorb(&mut self, report: ChunkReport, skip: bool) -> LiveOutput {
        let mut out = LiveOutput::default();
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
        if let Some(visual) = self.visual.as_mut() {
            for picture in &report.pictures {
                visual.push_picture(picture);
            }
            for frame in &report.video_frames {
                visual.push_encoded(frame);
            }
        }
        if report.appended_media() {
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
            }
            self.extractor.push(&samples);
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
        out
    }

    fn analyze_span(&mut self, span: WindowSpan, out: &mut LiveOutput) {
        let range = TimeRange {
            start: span.start,
            end: span.end,
        };
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
        let result = analyze_window(self.analyzer.as_mut(), &span, &summary, false, video);
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
