//! Measured audio features: 10 ms frames of voice activity, F0, intensity and voice quality, and their per-span statistics.
//!
//! Input is mono PCM at 16 kHz as `f32` in -1..1 (non-finite samples read as
//! 0, larger values are clamped). Frame `k` is centred at `(k + 0.5) * 10 ms`;
//! a buffer of `n` samples yields `(n + 79) / 160` frames (every frame whose
//! centre lies inside the input). What each field means, with its unit,
//! algorithm and the reference tool it is checked against, is written in
//! `docs/ANALYZER.md`; in short:
//!
//! | field | unit | definition |
//! |---|---|---|
//! | [`Frame::vad_probability`] | 0..1 | Silero VAD v6 (`attune-voice`) |
//! | [`Frame::f0_semitones`] | semitones re 27.5 Hz | Boersma (1993) autocorrelation, Praat `To Pitch (ac)` 75-600 Hz |
//! | [`Frame::intensity_db`] | dB re 2e-5 (samples as Pa) | Praat `To Intensity` (100 Hz, mean subtracted) |
//! | [`Frame::hnr_db`] | dB | Praat `To Harmonicity (cc)` |
//! | [`Frame::alpha_ratio_db`], [`Frame::hammarberg_db`] | dB | eGeMAPS (Eyben et al. 2016) |
//! | [`Frame::slope_0_500`], [`Frame::slope_500_1500`] | dB/Hz | eGeMAPS |
//! | [`Pulse`] | s | Praat `To PointProcess (periodic, cc)`, for jitter and shimmer |
//!
//! [`FeatureExtractor`] takes PCM in chunks of any size and hands out frames
//! as they are final (a fixed ~40 ms of look-ahead plus the F0 path's
//! decision, normally a few frames, at most 1 s); the same frames, bit for
//! bit, whatever the chunking. [`extract`] does a whole buffer,
//! [`summarize`] turns frames into the statistics of a span.
//!
//! A live session runs for up to an hour, so the extractor need not keep
//! everything: [`FeatureExtractor::forget_before`] lets go of frames, pulses
//! and voiced segments no later summary can read (memory then stays at about
//! the 10 s of context [`summarize`] looks back over plus one window), and
//! [`FeatureExtractor::settled_s`] says how far summaries are already what
//! they will be once the whole input is in.
//!
//! ```
//! use attune_core::features::{extract, summarize, Span, FeatureExtractor};
//!
//! // One second of a 200 Hz tone with harmonics, then one of silence.
//! let mut pcm: Vec<f32> = (0..16_000)
//!     .map(|i| {
//!         let t = i as f32 / 16_000.0;
//!         (1..=4).map(|h| (std::f32::consts::TAU * 200.0 * h as f32 * t).sin() / h as f32).sum::<f32>() * 0.2
//!     })
//!     .collect();
//! pcm.extend(std::iter::repeat(0.0).take(16_000));
//!
//! let features = extract(&pcm);
//! assert_eq!(features.frames.len(), 200);
//! let f0 = features.frames[50].f0_hz().unwrap();
//! assert!((f0 - 200.0).abs() < 2.0);
//! assert!(features.frames[150].f0_hz().is_none());
//!
//! // Streaming gives the same frames.
//! let mut stream = FeatureExtractor::new();
//! let mut n = 0;
//! for chunk in pcm.chunks(777) {
//!     n += stream.push(chunk).len();
//! }
//! n += stream.finish().len();
//! assert_eq!(n, 200);
//! assert_eq!(stream.features().frames, features.frames);
//!
//! let first_second = summarize(&features, Span::new(0.0, 1.0));
//! assert!((first_second.f0_median_semitones.unwrap() - 36.0 - 12.0 * (200.0f32 / 220.0).log2()).abs() < 0.2);
//! ```

mod harmonicity;
mod history;
mod intensity;
mod interp;
mod pitch;
mod pulses;
mod speakers;
mod spectral;
mod summary;
mod vad;

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use harmonicity::HarmonicityAnalyzer;
use history::SampleHistory;
use intensity::IntensityAnalyzer;
use pitch::{AcAnalyzer, Candidate, PitchPath};
use pulses::PulseTracker;
use speakers::{label_unit, split_at_steps, OnlineVoices, UnitBuilder};
use spectral::SpectralAnalyzer;
use vad::Vad;

pub use attune_voice::SpeakerTurn;
pub use intensity::{INTENSITY_FLOOR_DB, INTENSITY_MIN_PITCH_HZ};
pub use pitch::{PITCH_CEILING_HZ, PITCH_FLOOR_HZ};
pub use pulses::{
    Pulse, MAX_AMPLITUDE_FACTOR, MAX_PERIOD_FACTOR, PERIOD_CEILING_S, PERIOD_FLOOR_S,
};
pub use speakers::{
    apply_speaker_turns, SpeechUnit, VoicedSegment, MAX_SPEAKERS, MIN_SEGMENT_FRAMES,
    MIN_UNIT_VOICED_FRAMES, NEAREST_TURN_FRAMES, UNIT_GAP_FRAMES, UNIT_MAX_FRAMES,
};
pub use spectral::TIMBRE_DIMS;
pub use summary::{
    speaker_turns, summarize, Direction, Span, SpanFeatures, SpeakerSpan, TerminalContour, Turn,
    BACKCHANNEL_MAX_F0_RANGE_ST, BACKCHANNEL_MAX_GAP_S, BACKCHANNEL_MAX_S,
    BACKCHANNEL_MAX_SYLLABLES, CONTEXT_S, MIN_PAUSE_S, SILENCE_BELOW_PEAK_DB,
    TERMINAL_SLOPE_ST_PER_S,
};
pub use vad::VAD_THRESHOLD;

/// Input sample rate, Hz.
pub const SAMPLE_RATE: u32 = 16_000;
/// Samples between frame centres (10 ms).
pub const HOP: usize = 160;
/// Seconds between frame centres.
pub const FRAME_SECONDS: f64 = 0.01;
/// F0 reference for semitones, Hz (A0, as eGeMAPS uses).
pub const SEMITONE_REFERENCE_HZ: f32 = 27.5;

/// Samples the analyses read past a frame centre (the longest is the
/// intensity window).
const LOOKAHEAD: i64 = max(
    max(intensity::HALF_WINDOW + 1, pitch::HALF_WINDOW),
    max(harmonicity::LOOKAHEAD, spectral::WINDOW / 2),
) as i64;

const fn max(a: usize, b: usize) -> usize {
    if a > b {
        a
    } else {
        b
    }
}
/// Samples the pulse search may read before a voiced stretch, and the
/// analyses before a frame centre.
const LOOKBACK: i64 = 1024;
/// Voiced stretches longer than this (frames, 10 s) are closed and reopened
/// so a sustained tone cannot hold unbounded history.
const MAX_RUN_FRAMES: u64 = 1000;

/// Hz to semitones re [`SEMITONE_REFERENCE_HZ`].
pub fn hz_to_semitones(hz: f32) -> f32 {
    12.0 * (hz / SEMITONE_REFERENCE_HZ).log2()
}

/// Semitones re [`SEMITONE_REFERENCE_HZ`] to Hz.
pub fn semitones_to_hz(st: f32) -> f32 {
    SEMITONE_REFERENCE_HZ * (st / 12.0).exp2()
}

/// Everything measured for one 10 ms frame.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Frame {
    /// Frame number; the centre is at `(index + 0.5) * 10 ms`.
    pub index: u64,
    /// Probability of speech from Silero VAD (`attune-voice`), 0..1.
    pub vad_probability: f32,
    /// F0 in semitones re 27.5 Hz; `None` when the F0 path calls the frame
    /// unvoiced.
    pub f0_semitones: Option<f32>,
    /// Normalised autocorrelation of the chosen F0 candidate (0..1; 0 when
    /// unvoiced): how periodic the frame is.
    pub voicing_strength: f32,
    /// Intensity, dB re 2e-5 with samples read as pascal (Praat's
    /// convention; a full-scale sine is 91 dB), floored at 0 dB.
    pub intensity_db: f32,
    /// Harmonics-to-noise ratio, dB; `None` where Praat's harmonicity would
    /// call the frame silent.
    pub hnr_db: Option<f32>,
    /// Alpha ratio, dB: energy 1-5 kHz over energy below 1 kHz.
    pub alpha_ratio_db: f32,
    /// The alpha ratio inside the telephone band: energy 1-3 kHz over
    /// 400-1000 Hz, dB (band-limited audio leaves it where it was).
    pub alpha_band_db: f32,
    /// Hammarberg index, dB: strongest peak below 2 kHz over strongest 2-5 kHz.
    pub hammarberg_db: f32,
    /// Spectral slope 0-500 Hz, dB/Hz.
    pub slope_0_500: f32,
    /// Spectral slope 500-1500 Hz, dB/Hz, as openSMILE computes it (it moves
    /// with the frame's level).
    pub slope_500_1500: f32,
    /// Least-squares slope of the log spectrum 500-1500 Hz, dB/Hz: the same
    /// band as [`Frame::slope_500_1500`], independent of the level.
    pub tilt_500_1500: f32,
    /// Spectral centroid 0-8 kHz, Hz.
    pub spectral_centroid_hz: f32,
    /// MFCC 1-4 (26 mel bands, HTK-style, liftered), for spectral steadiness.
    pub mfcc: [f32; 4],
    /// MFCC 1-13 (same analysis; 1-4 equal [`Frame::mfcc`]): the spectral
    /// envelope speakers are told apart by.
    #[serde(default)]
    pub timbre: [f32; TIMBRE_DIMS],
}

impl Frame {
    /// Centre time, s.
    pub fn time_s(&self) -> f64 {
        (self.index as f64 + 0.5) * FRAME_SECONDS
    }

    /// Whether the VAD calls the frame speech.
    pub fn is_speech(&self) -> bool {
        self.vad_probability >= VAD_THRESHOLD
    }

    /// Whether the F0 path calls the frame voiced.
    pub fn is_voiced(&self) -> bool {
        self.f0_semitones.is_some()
    }

    /// F0 in Hz, if voiced.
    pub fn f0_hz(&self) -> Option<f32> {
        self.f0_semitones.map(semitones_to_hz)
    }
}

/// All frame-level output for an input so far, or for its recent part once
/// older output was forgotten ([`FeatureExtractor::forget_before`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FrameFeatures {
    /// Input samples consumed.
    pub sample_count: u64,
    /// Index of the first frame held (0 until something is forgotten).
    #[serde(default)]
    pub first_index: u64,
    /// Final frames held, in order, `frames[k].index == first_index + k`.
    pub frames: Vec<Frame>,
    /// Glottal pulse marks held, in time order.
    pub pulses: Vec<Pulse>,
    /// Voiced segments closed so far and held, in order, with their voice.
    pub voiced_segments: Vec<VoicedSegment>,
    /// Speech units closed so far and held, in order, with their speaker:
    /// the speaker turns are runs of units of one speaker.
    #[serde(default)]
    pub speech_units: Vec<SpeechUnit>,
}

impl FrameFeatures {
    /// Input duration, s.
    pub fn duration_s(&self) -> f64 {
        self.sample_count as f64 / SAMPLE_RATE as f64
    }

    /// One past the index of the last frame held.
    pub fn end_index(&self) -> u64 {
        self.first_index + self.frames.len() as u64
    }

    /// The frame with absolute index `index`, if held.
    pub fn frame(&self, index: u64) -> Option<&Frame> {
        let k = index.checked_sub(self.first_index)?;
        self.frames.get(usize::try_from(k).ok()?)
    }

    /// Drops frames before absolute index `cut`, the pulses before its start
    /// time (except the last two, which the pulse marker reads when it
    /// continues), and the voiced segments ending by then (except the last
    /// one with a voice, where [`summarize`] starts following turns).
    fn drop_before(&mut self, cut: u64) {
        let cut = cut.min(self.end_index());
        if cut <= self.first_index {
            return;
        }
        self.frames.drain(..(cut - self.first_index) as usize);
        self.first_index = cut;

        let cut_s = cut as f64 * FRAME_SECONDS;
        let dead = self
            .pulses
            .partition_point(|p| p.time_s < cut_s)
            .min(self.pulses.len().saturating_sub(2));
        self.pulses.drain(..dead);

        let segments = &mut self.voiced_segments;
        let dead = segments.partition_point(|s| s.end_frame <= cut);
        match segments[..dead].iter().rposition(|s| s.speaker.is_some()) {
            Some(keep) => {
                segments.drain(keep + 1..dead);
                segments.drain(..keep);
            }
            None => {
                segments.drain(..dead);
            }
        }

        // Turn-following starts at the last unit with a speaker before the
        // span, as for voiced segments.
        let units = &mut self.speech_units;
        let dead = units.partition_point(|u| u.end_frame <= cut);
        match units[..dead].iter().rposition(|u| u.speaker.is_some()) {
            Some(keep) => {
                units.drain(keep + 1..dead);
                units.drain(..keep);
            }
            None => {
                units.drain(..dead);
            }
        }
    }
}

/// Incremental feature extraction: feed PCM in chunks of any size, collect
/// frames as they become final. Work done is never repeated; memory held is
/// the frames, pulses and voiced segments not yet forgotten
/// ([`forget_before`](Self::forget_before)) plus about a second of samples
/// (more only while a voiced stretch lasts, up to 10 s).
pub struct FeatureExtractor {
    history: SampleHistory,
    /// Real input samples received.
    total: u64,
    finished: bool,
    vad: Vad,
    ac: AcAnalyzer,
    intensity: IntensityAnalyzer,
    harmonicity: HarmonicityAnalyzer,
    spectral: SpectralAnalyzer,
    path: PitchPath,
    decided: Vec<Candidate>,
    /// Next frame to analyse.
    next_frame: u64,
    /// Samples `[0, peak_upto)` are folded into `global_peak`.
    peak_upto: i64,
    global_peak: f64,
    /// Analysed frames waiting for their F0 decision.
    waiting: VecDeque<Frame>,
    features: FrameFeatures,
    /// First frame of the voiced stretch in progress.
    open_run: Option<u64>,
    pulses: PulseTracker,
    units: UnitBuilder,
    /// The online diarizer when units are labelled as a stream hears them; `None` when the
    /// caller labels them afterwards ([`extract`] with whole-file turns).
    voices: Option<OnlineVoices>,
    /// VAD blocks handed to the online diarizer so far (absolute count).
    vad_handed: u64,
    /// Closed units waiting for their speakers (online: until the diarizer has labelled them).
    pending: VecDeque<SpeechUnit>,
    scratch_f0: Vec<f32>,
}

impl Default for FeatureExtractor {
    fn default() -> Self {
        Self::new()
    }
}

impl FeatureExtractor {
    /// A fresh extractor at time 0 whose units get their speakers as a live stream hears
    /// them: from `attune-voice`'s online diarizer, a labelling step (5 s) at a time, with
    /// speaker numbers that never change.
    pub fn new() -> Self {
        Self::with_voices(Some(OnlineVoices::new()))
    }

    /// A fresh extractor at time 0 whose units get no speakers (for callers that label them
    /// afterwards, as [`extract`] does with whole-file turns).
    pub fn without_speakers() -> Self {
        Self::with_voices(None)
    }

    fn with_voices(voices: Option<OnlineVoices>) -> Self {
        Self {
            history: SampleHistory::new(),
            total: 0,
            finished: false,
            vad: Vad::new(),
            ac: AcAnalyzer::new(),
            intensity: IntensityAnalyzer::new(),
            harmonicity: HarmonicityAnalyzer::new(),
            spectral: SpectralAnalyzer::new(),
            path: PitchPath::new(),
            decided: Vec::with_capacity(128),
            next_frame: 0,
            peak_upto: 0,
            global_peak: 0.0,
            waiting: VecDeque::with_capacity(128),
            features: FrameFeatures::default(),
            open_run: None,
            pulses: PulseTracker::new(),
            units: UnitBuilder::default(),
            voices,
            vad_handed: 0,
            pending: VecDeque::new(),
            scratch_f0: Vec::with_capacity(1024),
        }
    }

    /// Feeds the next samples; returns the frames that became final. After
    /// [`finish`](Self::finish) input is ignored.
    pub fn push(&mut self, pcm: &[f32]) -> &[Frame] {
        let before = self.features.frames.len();
        if self.finished || pcm.is_empty() {
            return &self.features.frames[before..];
        }
        self.history.push_sanitized(pcm);
        self.total += pcm.len() as u64;
        self.features.sample_count = self.total;
        self.score_vad(self.total as i64);
        // The online diarizer reads these scores rather than running Silero itself: every
        // whole block of the input is scored by now, before it sees the samples.
        self.hand_vad_to_voices(u64::MAX);
        if let Some(voices) = &mut self.voices {
            voices.push(pcm);
        }
        while self.can_analyze(self.next_frame) {
            self.analyze_next();
        }
        self.label_pending();
        self.release();
        &self.features.frames[before..]
    }

    /// Ends the input: analyses the last frames (zero-padded past the end),
    /// decides the rest of the F0 path and closes the last voiced stretch.
    /// Returns the frames that became final.
    pub fn finish(&mut self) -> &[Frame] {
        let before = self.features.frames.len();
        if self.finished {
            return &self.features.frames[before..];
        }
        self.finished = true;
        let frame_count = (self.total + 79) / HOP as u64;
        if frame_count > self.next_frame {
            let last_centre = frame_centre(frame_count - 1);
            // Every block holding a frame centre or an input sample (the diarizer of a file
            // reads them all: `into_features_and_vad`), the last zero-padded.
            let vad_end = (last_centre + vad::BLOCK as i64)
                .max((self.total as usize).next_multiple_of(vad::BLOCK) as i64);
            let needed = (last_centre + LOOKAHEAD + vad::BLOCK as i64).max(vad_end);
            let pad = (needed - self.history.end()).max(0) as usize;
            self.history.push_zeros(pad);
            self.score_vad(vad_end);
            self.vad.finish();
            while self.next_frame < frame_count {
                self.analyze_next();
            }
        }
        self.decided.clear();
        self.path.finish(&mut self.decided);
        self.finalize_decided();
        if let Some(start) = self.open_run.take() {
            let end = self.features.end_index();
            self.close_run(start, end);
        }
        if let Some(unit) = self.units.close() {
            self.add_unit(unit);
        }
        if self.voices.is_some() {
            // The last, zero-padded partial block too (scored above when frames were left;
            // scored here otherwise), and nothing past the input.
            let blocks = (self.total as usize).div_ceil(vad::BLOCK);
            if (self.vad.blocks_scored() as usize) < blocks {
                let end = (blocks * vad::BLOCK) as i64;
                self.history
                    .push_zeros((end - self.history.end()).max(0) as usize);
                self.score_vad(end);
                self.vad.finish();
            }
            self.hand_vad_to_voices(blocks as u64);
        }
        if let Some(voices) = &mut self.voices {
            voices.finish();
        }
        self.label_pending();
        &self.features.frames[before..]
    }

    /// Hands the online diarizer the VAD scores of the blocks before `upto` it has not had.
    fn hand_vad_to_voices(&mut self, upto: u64) {
        if let Some(voices) = &mut self.voices {
            let scores = self.vad.scores_from(self.vad_handed);
            let n = (upto.saturating_sub(self.vad_handed) as usize).min(scores.len());
            voices.push_vad(&scores[..n]);
            self.vad_handed += n as u64;
        }
    }

    /// Everything final so far and not forgotten.
    pub fn features(&self) -> &FrameFeatures {
        &self.features
    }

    /// Gives up the extractor for its output.
    pub fn into_features(self) -> FrameFeatures {
        self.features
    }

    /// Keeps Silero's score of every 32 ms block (for [`into_features_and_vad`]), a whole
    /// file's worth: for files, whose diarization reads the same scores.
    ///
    /// [`into_features_and_vad`]: Self::into_features_and_vad
    pub fn keep_vad_scores(&mut self) {
        self.vad.keep_all();
    }

    /// The features, and Silero's score of every block of the input from its first sample
    /// when [`keep_vad_scores`](Self::keep_vad_scores) was called first (the last block
    /// zero-padded, as `attune_voice::speech_probabilities` scores it; `None` otherwise or if
    /// the network failed).
    pub fn into_features_and_vad(self) -> (FrameFeatures, Option<Vec<f32>>) {
        let blocks = (self.total as usize).div_ceil(vad::BLOCK);
        let scores = self
            .vad
            .all_scores()
            .filter(|s| s.len() >= blocks)
            .map(|s| s[..blocks].to_vec());
        (self.features, scores)
    }

    /// The online diarizer's turns held so far (who speaks when, overlapped speech given to
    /// both speakers; older ones go with [`forget_before`](Self::forget_before)); empty
    /// without online speakers.
    pub fn speaker_turns_heard(&self) -> &[SpeakerTurn] {
        self.voices.as_ref().map_or(&[], |v| v.turns())
    }

    /// Time, s, before which the online diarizer has given every speaker turn it ever will
    /// (it labels a step at a time, so this trails the input by up to a step): infinite after
    /// [`finish`](Self::finish), without online speakers, or once the diarizer failed.
    pub fn speakers_labelled_s(&self) -> f64 {
        match self
            .voices
            .as_ref()
            .map(|v| v.labelled_frames(self.finished))
        {
            Some(u64::MAX) | None => f64::INFINITY,
            Some(frames) => frames as f64 * FRAME_SECONDS,
        }
    }

    /// Number of distinct speakers heard so far (0 up to [`MAX_SPEAKERS`]): the online
    /// diarizer's, or the speakers the held units carry when there is none. Forgetting output
    /// does not forget the diarizer's.
    pub fn voice_count(&self) -> usize {
        match &self.voices {
            Some(v) => v.speakers(),
            None => {
                let mut ids: Vec<u8> = self
                    .features
                    .speech_units
                    .iter()
                    .filter_map(|u| u.speaker)
                    .collect();
                ids.sort_unstable();
                ids.dedup();
                ids.len()
            }
        }
    }

    /// Lets go of the final frames, glottal pulses and voiced segments that no
    /// [`summarize`] of a span starting at or after `t_s` (s) reads: it keeps
    /// the [`CONTEXT_S`] before `t_s` that pauses, phrases and turns look
    /// back over, the last voiced segment with a voice before that (where
    /// turn-following starts), the last two pulses (the pulse marker's own
    /// look-back) and everything of a voiced stretch still open. Summaries of
    /// such spans are then identical to those of an extractor that forgot
    /// nothing; spans starting earlier see only what is held. The voices
    /// found so far are kept. A NaN `t_s` forgets nothing.
    pub fn forget_before(&mut self, t_s: f64) {
        if t_s.is_nan() {
            return;
        }
        let end = self.features.end_index();
        let mut cut = summary::frame_at_or_after(t_s, 0, u64::MAX)
            .saturating_sub(summary::CONTEXT_FRAMES as u64)
            .min(end);
        if let Some(start) = self.open_run {
            // Closing the stretch reads its frames and, for the pulses, the
            // frame before it.
            cut = cut.min(start.saturating_sub(1));
        }
        if let Some(u) = self.pending.front() {
            // Labelling a unit reads its frames.
            cut = cut.min(u.start_frame);
        }
        self.features.drop_before(cut);
        if let Some(voices) = &mut self.voices {
            voices.forget_before(cut.saturating_sub(NEAREST_TURN_FRAMES));
        }
    }

    /// Time, s, before which summaries are settled: [`summarize`] of a span
    /// ending at or before it gives now exactly what it will give once the
    /// whole input is in (the span's frames, the pauses and phrases just
    /// past its end, and the pulses and voice of every voiced stretch in it
    /// are final). Infinite after [`finish`](Self::finish).
    pub fn settled_s(&self) -> f64 {
        if self.finished {
            return f64::INFINITY;
        }
        let mut settled = self
            .features
            .end_index()
            .saturating_sub(summary::LOOKAHEAD_FRAMES);
        if let Some(start) = self.open_run {
            // A stretch's first pulse can fall up to 1.25 periods (17 ms at
            // the 75 Hz floor) before it.
            settled = settled.min(start.saturating_sub(2));
        }
        if let Some(start) = self.units.open_start() {
            // The unit's speaker (and its segments') is given when it closes.
            settled = settled.min(start);
        }
        if let Some(u) = self.pending.front() {
            // ... or, online, once the diarizer has labelled its time.
            settled = settled.min(u.start_frame);
        }
        settled as f64 * FRAME_SECONDS
    }

    /// Scores every VAD block that ends at or before absolute sample `upto`.
    fn score_vad(&mut self, upto: i64) {
        let block = vad::BLOCK as i64;
        let start = self.vad.blocks_pushed() as i64 * block;
        let blocks = (upto.min(self.history.end()) - start).max(0) / block;
        if blocks > 0 {
            // One call for every whole block in: the network scores them a group at a time.
            let samples: Vec<f32> = match self.history.slice(start, start + blocks * block) {
                Some(s) => s.to_vec(),
                None => (start..start + blocks * block)
                    .map(|i| self.history.get(i))
                    .collect(),
            };
            self.vad.push_blocks(&samples);
        }
    }

    /// Whether frame `k` can be analysed: its look-ahead is in and its VAD block is scored.
    fn can_analyze(&self, k: u64) -> bool {
        let centre = frame_centre(k);
        centre + LOOKAHEAD <= self.total as i64
            && (centre as u64 / vad::BLOCK as u64) < self.vad.blocks_scored()
    }

    fn analyze_next(&mut self) {
        let k = self.next_frame;
        let centre = frame_centre(k);
        let peak_end = (centre + LOOKAHEAD).min(self.total as i64);
        if self.peak_upto < peak_end {
            if let Some(new) = self.history.slice(self.peak_upto, peak_end) {
                let peak = new.iter().fold(0.0f32, |m, &v| m.max(v.abs()));
                self.global_peak = self.global_peak.max(peak as f64);
            }
            self.peak_upto = peak_end;
        }
        let (buf, at) = self.history.view(centre);
        let mean = pitch::local_mean(buf, at);
        let cands = self.ac.analyze(buf, at, mean, self.global_peak);
        let intensity_db = self.intensity.analyze(buf, at);
        let hnr_db = self.harmonicity.analyze(buf, at, mean, self.global_peak);
        let spec = self.spectral.analyze(buf, at);
        let vad_probability = self.vad.score(centre as u64 / vad::BLOCK as u64);
        self.waiting.push_back(Frame {
            index: k,
            vad_probability,
            f0_semitones: None,
            voicing_strength: 0.0,
            intensity_db,
            hnr_db,
            alpha_ratio_db: spec.alpha_ratio_db,
            alpha_band_db: spec.alpha_band_db,
            hammarberg_db: spec.hammarberg_db,
            slope_0_500: spec.slope_0_500,
            slope_500_1500: spec.slope_500_1500,
            tilt_500_1500: spec.tilt_500_1500,
            spectral_centroid_hz: spec.centroid_hz,
            mfcc: spec.mfcc,
            timbre: spec.timbre,
        });
        self.next_frame += 1;
        self.decided.clear();
        self.path.push(cands, &mut self.decided);
        self.finalize_decided();
    }

    /// Moves frames whose F0 was just decided to the output.
    fn finalize_decided(&mut self) {
        for i in 0..self.decided.len() {
            let c = self.decided[i];
            let Some(mut frame) = self.waiting.pop_front() else {
                break;
            };
            if c.is_voiced() {
                frame.f0_semitones = Some(hz_to_semitones(c.frequency as f32));
                frame.voicing_strength = c.strength as f32;
            }
            let k = frame.index;
            let voiced = frame.is_voiced();
            if let Some(unit) = self.units.push(k, frame.f0_semitones, &frame.timbre) {
                self.add_unit(unit);
            }
            self.features.frames.push(frame);
            match (voiced, self.open_run) {
                (true, None) => self.open_run = Some(k),
                (true, Some(start)) if k - start >= MAX_RUN_FRAMES => {
                    self.close_run(start, k);
                    self.open_run = Some(k);
                }
                (false, Some(start)) => {
                    self.open_run = None;
                    self.close_run(start, k);
                }
                _ => {}
            }
        }
    }

    /// Marks pulses and records the voiced segment for frames `start..end`.
    fn close_run(&mut self, start: u64, end: u64) {
        let duration = self.total as f64 / SAMPLE_RATE as f64;
        let tleft = start as f64 * FRAME_SECONDS;
        let mut tright = end as f64 * FRAME_SECONDS;
        if self.finished {
            tright = tright.min(duration);
        }
        let n_samples = if self.finished {
            self.total as i64
        } else {
            self.history.end()
        };
        if tright > tleft {
            let (frames, first) = (&self.features.frames, self.features.first_index);
            let f0_at = |t: f64| pitch_at(frames, first, t);
            self.pulses.process(
                &self.history,
                n_samples,
                f0_at,
                tleft,
                tright,
                self.global_peak,
                &mut self.features.pulses,
            );
        }

        self.scratch_f0.clear();
        let mut mfcc = [0.0f32; 4];
        let first = self.features.first_index;
        let run = &self.features.frames[(start - first) as usize..(end - first) as usize];
        for f in run {
            if let Some(st) = f.f0_semitones {
                self.scratch_f0.push(st);
            }
            for (m, v) in mfcc.iter_mut().zip(&f.mfcc) {
                *m += v;
            }
        }
        let n = (end - start).max(1) as f32;
        for m in &mut mfcc {
            *m /= n;
        }
        let median = summary::median(&mut self.scratch_f0).unwrap_or(f32::NAN);
        let mut segment = VoicedSegment {
            start_frame: start,
            end_frame: end,
            median_f0_semitones: median,
            mean_mfcc: mfcc,
            speaker: None,
        };
        // The unit holding the segment's start may still be open; then it
        // labels the segment when it closes.
        let units = &self.features.speech_units;
        let k = units.partition_point(|u| u.end_frame <= start);
        segment.speaker = units
            .get(k)
            .filter(|u| u.start_frame <= start)
            .and_then(|u| u.speaker);
        self.features.voiced_segments.push(segment);
    }

    /// Takes a closed unit: online it waits for the diarizer (cut at its labelling steps);
    /// without voices it is kept unlabelled.
    fn add_unit(&mut self, unit: SpeechUnit) {
        match &self.voices {
            Some(voices) => {
                let step = voices.step_frames();
                let parts = split_at_steps(&self.features, unit, step);
                self.pending.extend(parts);
            }
            None => self.push_unit(unit),
        }
    }

    /// Labels the waiting units whose time the diarizer has labelled.
    fn label_pending(&mut self) {
        let Some(voices) = &self.voices else { return };
        let horizon = voices.labelled_frames(self.finished);
        let ready = self
            .pending
            .iter()
            .take_while(|u| u.end_frame <= horizon)
            .count();
        if ready == 0 {
            return;
        }
        let units: Vec<SpeechUnit> = self.pending.drain(..ready).collect();
        let voices = self.voices.as_ref().expect("checked above");
        let mut labelled = Vec::with_capacity(units.len());
        for u in &units {
            let grid = voices.grid(u.start_frame, u.end_frame);
            labelled.extend(label_unit(&self.features, u, &grid));
        }
        for u in labelled {
            self.push_unit(u);
        }
    }

    /// Appends a unit with its speaker and gives it the segments starting in it.
    fn push_unit(&mut self, unit: SpeechUnit) {
        for s in self.features.voiced_segments.iter_mut().rev() {
            if s.start_frame < unit.start_frame {
                break;
            }
            if s.start_frame < unit.end_frame {
                s.speaker = unit.speaker;
            }
        }
        self.features.speech_units.push(unit);
    }

    /// Lets go of samples and VAD scores no analysis can need again.
    fn release(&mut self) {
        let first_open = self.open_run.unwrap_or(self.features.end_index());
        let keep = frame_centre(first_open.min(self.next_frame)) - LOOKBACK;
        self.history.release_before(keep);
        self.vad
            .drop_before((frame_centre(self.next_frame).max(0) as u64) / vad::BLOCK as u64);
    }
}

/// Absolute sample index of frame `k`'s centre (the sample right of it).
fn frame_centre(k: u64) -> i64 {
    (k as i64) * HOP as i64 + (HOP / 2) as i64
}

/// F0 (Hz) at time `t` by linear interpolation between frame centres, as
/// Praat's `Pitch: Get value at time` does: undefined when the nearest frame
/// is unvoiced, the nearest value when only the other neighbour is.
/// `frames` start at absolute index `first`; frames not held read as
/// unvoiced.
fn pitch_at(frames: &[Frame], first: u64, t: f64) -> Option<f64> {
    let real = t / FRAME_SECONDS - 0.5;
    if !real.is_finite() {
        return None;
    }
    let left = real.floor();
    let mut phase = real - left;
    let left = left as i64;
    let (near, far) = if phase < 0.5 {
        (left, left + 1)
    } else {
        phase = 1.0 - phase;
        (left + 1, left)
    };
    let get = |i: i64| -> Option<f64> {
        let k = usize::try_from(i).ok()?.checked_sub(first as usize)?;
        frames.get(k).and_then(|f| f.f0_hz()).map(|v| v as f64)
    };
    let f_near = get(near)?;
    match get(far) {
        Some(f_far) => Some(f_near + phase * (f_far - f_near)),
        None => Some(f_near),
    }
}

/// Samples [`extract`] feeds the extractor at a time: the frames are the
/// same whatever the chunking, and small chunks keep the sample history
/// small instead of copying the whole input.
const EXTRACT_CHUNK: usize = 8192;

/// Frame features of a whole buffer, with the speaker turns of the whole file: one
/// [`FeatureExtractor::without_speakers`] fed it all, then `attune-voice`'s whole-file
/// diarization ([`attune_voice::diarize()`]) applied to its units ([`apply_speaker_turns`]).
/// Returns the turns too (who speaks when, overlapped speech given to both speakers).
pub fn extract_with_turns(pcm: &[f32]) -> (FrameFeatures, Vec<attune_voice::SpeakerTurn>) {
    let (mut features, vad) = extract_unlabelled_with_vad(pcm);
    // The networks are embedded; should they fail, the units keep no speaker. The diarizer
    // reads the features' voice activity (the same network on the same samples: the same
    // scores) rather than running Silero over the file a second time.
    let params = attune_voice::DiarizeParams::default();
    let turns = match vad {
        Some(vad) => attune_voice::diarize_given_vad(pcm, &params, vad),
        None => attune_voice::diarize_with(pcm, &params),
    }
    .map(|d| d.turns)
    .unwrap_or_default();
    apply_speaker_turns(&mut features, &turns);
    (features, turns)
}

/// [`extract_with_turns`] without the turns.
pub fn extract(pcm: &[f32]) -> FrameFeatures {
    extract_with_turns(pcm).0
}

/// Frame features of a whole buffer with unlabelled units.
pub fn extract_unlabelled(pcm: &[f32]) -> FrameFeatures {
    extract_whole(pcm, false).0
}

/// [`extract_unlabelled`], with Silero's score of every 32 ms block of the input
/// ([`FeatureExtractor::into_features_and_vad`]).
pub fn extract_unlabelled_with_vad(pcm: &[f32]) -> (FrameFeatures, Option<Vec<f32>>) {
    extract_whole(pcm, true)
}

fn extract_whole(pcm: &[f32], keep_vad: bool) -> (FrameFeatures, Option<Vec<f32>>) {
    let mut extractor = FeatureExtractor::without_speakers();
    if keep_vad {
        extractor.keep_vad_scores();
    }
    extractor
        .features
        .frames
        .reserve_exact((pcm.len() + 79) / HOP);
    for chunk in pcm.chunks(EXTRACT_CHUNK) {
        extractor.push(chunk);
    }
    extractor.finish();
    extractor.into_features_and_vad()
}

#[cfg(test)]
mod tests;
