//! Statistics of a span of frames (a window or a file): prosody, voice quality, timing and turn-taking.
//!
//! Everything a window's signal rules read, computed from final frames only,
//! so a span summarised during a stream and after the upload agree.
//! Definitions (units in the field docs; sources in `docs/ANALYZER.md`):
//!
//! - speech and pauses: frames the VAD calls speech and whose intensity is
//!   within [`SILENCE_BELOW_PEAK_DB`] of the loudest (99th percentile) nearby
//!   (the VAD alone trails off slowly into silence) and 5 dB above the
//!   quietest (5th percentile: background talk the VAD calls speech), blips under 30 ms
//!   dropped, gaps shorter than [`MIN_PAUSE_S`] bridged; a pause is a
//!   non-speech stretch of at least [`MIN_PAUSE_S`] between speech, counted in
//!   the span where speech resumes, with its whole length (Goldman-Eisler's
//!   250 ms convention);
//! - speech rate: syllable nuclei per second after de Jong & Wempe (2009):
//!   intensity peaks above (99th percentile - 25 dB), standing at least
//!   2 dB above the lowest intensity on each side before the nearest peak
//!   at least as loud (topographic prominence; de Jong & Wempe require the
//!   dip after the peak only), voiced, in speech;
//! - voiced segments per second: runs of voiced frames starting in the span
//!   over its duration (eGeMAPS `VoicedSegmentsPerSec`);
//! - terminal intonation: at each phrase end (speech followed by a pause, or
//!   by the end of the input) the Theil-Sen slope of F0 in semitones over the
//!   last 300 ms of voicing, and the final F0 relative to the phrase's median
//!   (a raised final word, the commonest question contour, rises against the
//!   phrase even when it is level within itself);
//! - turns: runs of speech units given to the same speaker (see
//!   `speakers`); the gap before a turn runs from the end of the speech
//!   holding the previous speaker's last unit to the start of the speech
//!   holding this one's first (speech here without bridging, so short gaps
//!   count); a change inside one stretch of speech (no silence) counts as an
//!   overlap; a backchannel is a short low-content turn by a listener while
//!   another holds the floor (see [`Turn::backchannel`]);
//! - per speaker: the measures a per-speaker baseline needs, over the
//!   frames of that speaker's units ([`SpeakerSpan`]);
//! - filled pauses ("uh", "um", "er": Clark & Fox Tree 2002): a vowel held
//!   with a level pitch and an unchanging spectrum, the acoustic signature
//!   Goto, Itou & Hayamizu (1999) detect them by (see [`filled_pauses`]).

use serde::{Deserialize, Serialize};

use super::pulses::{shimmer_local_db, JitterParts};
use super::{FrameFeatures, FRAME_SECONDS};

mod speech;
mod stats;
mod turns;

use speech::{filled_pauses, speech_masks, syllable_nuclei, terminal_contour};
pub(crate) use stats::median;
use stats::{mean, quantile};
use turns::{per_speaker, turns};

/// Shortest silence that counts as a pause, s.
pub const MIN_PAUSE_S: f64 = 0.25;
const MIN_PAUSE_FRAMES: usize = 25;
/// Terminal slopes beyond +/- this are rising / falling, semitones per second.
pub const TERMINAL_SLOPE_ST_PER_S: f32 = 5.0;
/// A phrase ending this far above (below) its median F0 with a level or
/// rising (falling) slope is rising (falling), semitones.
pub const TERMINAL_HEIGHT_ST: f32 = 4.0;
/// Frames quieter than the 99th percentile intensity nearby minus this are
/// silence whatever the VAD says, dB.
pub const SILENCE_BELOW_PEAK_DB: f32 = 35.0;
/// Longest backchannel, s: "yeah", "mm-hm", "right" last well under a
/// second (Ward & Tsukahara 2000 take at most a few words).
pub const BACKCHANNEL_MAX_S: f64 = 1.0;
/// Most syllable nuclei in a backchannel ("yeah", "mm-hm", "right").
pub const BACKCHANNEL_MAX_SYLLABLES: u32 = 2;
/// Largest F0 range (5th-95th percentile) of a backchannel, semitones: a
/// backchannel carries no pitch accent of its own, a question or an
/// exclamation moves further. 8 st, the limit filled pauses use: a one-word
/// "Yeah." still ends in a declarative fall (final lowering) and a two-beat
/// "mm hmm" steps, so the 5 st of rules-4 missed most of them (agreement
/// recall 0.29 with the reference turns; 0.71 at 8 st, docs/EVALUATION.md).
pub const BACKCHANNEL_MAX_F0_RANGE_ST: f32 = 8.0;
/// A backchannel comes while another speaker holds the floor: that
/// speaker's previous turn ended at most this long before it (or overlaps
/// it), s. A reply after a long silence is a turn of its own.
pub const BACKCHANNEL_MAX_GAP_S: f64 = 1.0;
/// Frames of context read before a span for pauses and turns (10 s).
pub(crate) const CONTEXT_FRAMES: usize = 1000;
/// Context [`summarize`] reads before a span for pauses, phrases and turns, s.
pub const CONTEXT_S: f64 = CONTEXT_FRAMES as f64 * FRAME_SECONDS;
/// Frames past a span's last frame that must be final (held and followed by
/// another) before its summary is settled: the pause look-ahead plus one
/// frame, so the end of the frames held is not read as the end of the input.
pub(crate) const LOOKAHEAD_FRAMES: u64 = MIN_PAUSE_FRAMES as u64 + 1;

/// A time range, s, half-open: frames whose centre lies in `[start_s, end_s)`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Span {
    /// Start, s.
    pub start_s: f64,
    /// End, s.
    pub end_s: f64,
}

impl Span {
    /// The span `[start_s, end_s)`.
    pub fn new(start_s: f64, end_s: f64) -> Self {
        Self { start_s, end_s }
    }

    /// The whole input the features cover.
    pub fn whole(features: &FrameFeatures) -> Self {
        Self::new(0.0, features.duration_s())
    }

    /// Length, s (0 if reversed or not finite).
    pub fn duration_s(&self) -> f64 {
        let d = self.end_s - self.start_s;
        if d.is_finite() {
            d.max(0.0)
        } else {
            0.0
        }
    }

    /// Absolute frame index range `[first, last)` of the frames in the
    /// span, clamped to the frames held, `[lo, hi)`.
    fn frame_range(&self, lo: u64, hi: u64) -> (u64, u64) {
        let first = frame_at_or_after(self.start_s, lo, hi);
        let last = frame_at_or_after(self.end_s, lo, hi).max(first);
        (first, last)
    }
}

/// Index of the first frame whose centre lies at or after `t` (s), clamped
/// to `lo..=hi`; NaN reads as the start.
pub(crate) fn frame_at_or_after(t: f64, lo: u64, hi: u64) -> u64 {
    if t == f64::INFINITY {
        return hi;
    }
    if !t.is_finite() || t <= 0.0 {
        return lo;
    }
    // Frames with centre >= t: index >= t / 10 ms - 0.5.
    let i = (t / FRAME_SECONDS - 0.5).ceil();
    if i <= 0.0 {
        lo
    } else {
        (i as u64).clamp(lo, hi.max(lo))
    }
}

/// Direction of a phrase-final F0 movement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Slope above +[`TERMINAL_SLOPE_ST_PER_S`], or a level-or-rising end
    /// at least `TERMINAL_HEIGHT_ST` (4 st) above the phrase.
    Rising,
    /// Slope below -[`TERMINAL_SLOPE_ST_PER_S`], or a level-or-falling end
    /// at least `TERMINAL_HEIGHT_ST` (4 st) below the phrase.
    Falling,
    /// In between.
    Level,
}

/// The F0 movement at the end of one phrase.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TerminalContour {
    /// End of the last voiced frame of the phrase, s.
    pub end_s: f64,
    /// Theil-Sen slope of F0 over the last 300 ms of voicing, semitones per
    /// second.
    pub slope_st_per_s: f32,
    /// Median F0 of the last 50 ms of voicing minus the phrase's median F0,
    /// semitones.
    pub final_height_st: f32,
    /// Rising, falling or level.
    pub direction: Direction,
}

/// One speaker turn.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Turn {
    /// Speaker id (see [`super::SpeechUnit::speaker`]).
    pub speaker: u8,
    /// Start of the speech holding the turn's first voiced segment, s.
    pub start_s: f64,
    /// End of the speech holding its last voiced segment, s.
    pub end_s: f64,
    /// Silence since the other voice's previous turn ended, s (0 when the
    /// change happened without silence); `None` for the first turn heard.
    pub gap_before_s: Option<f64>,
    /// A backchannel ("yeah", "mm-hm"): at most [`BACKCHANNEL_MAX_S`] long,
    /// at most [`BACKCHANNEL_MAX_SYLLABLES`] syllable nuclei, F0 range at
    /// most [`BACKCHANNEL_MAX_F0_RANGE_ST`], and after another speaker's turn
    /// that ended at most [`BACKCHANNEL_MAX_GAP_S`] before. Without words, a
    /// short flat answer ("yes.") right after a question reads the same.
    #[serde(default)]
    pub backchannel: bool,
}

/// What one speaker did in a span: the measures a per-speaker baseline
/// needs. Computed over the frames of that speaker's speech units (voiced
/// speech from the unit's first voiced frame to its last).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpeakerSpan {
    /// Speaker id (see [`super::SpeechUnit::speaker`]).
    pub speaker: u8,
    /// Time inside the speaker's units in the span, s.
    pub speech_s: f64,
    /// Share of all speakers' unit time in the span, 0..1.
    pub talk_share: f32,
    /// Mean F0 of the speaker's voiced frames, semitones re 27.5 Hz.
    pub f0_mean_semitones: Option<f32>,
    /// F0 range (5th to 95th percentile) of those frames, semitones.
    pub f0_range_semitones: Option<f32>,
    /// Mean intensity of the speaker's unit frames, dB (see
    /// [`Frame::intensity_db`](crate::features::Frame::intensity_db)).
    pub intensity_mean_db: Option<f32>,
    /// 5th-95th percentile range of the levels of those frames that are voiced, dB.
    pub intensity_range_db: Option<f32>,
    /// Mean harmonics-to-noise ratio of those frames, dB.
    pub hnr_db: Option<f32>,
    /// Mean alpha ratio of the speaker's voiced frames, dB.
    pub alpha_ratio_db: Option<f32>,
    /// Mean alpha ratio within the telephone band of those voiced frames, dB
    /// ([`crate::features::Frame::alpha_band_db`]).
    pub alpha_band_db: Option<f32>,
    /// Mean spectral slope 0-500 Hz of those voiced frames, dB/Hz.
    pub slope_0_500: Option<f32>,
    /// Mean spectral slope 500-1500 Hz of those voiced frames, dB/Hz.
    pub slope_500_1500: Option<f32>,
    /// Mean level-free spectral tilt 500-1500 Hz of those voiced frames, dB/Hz
    /// ([`crate::features::Frame::tilt_500_1500`]).
    pub tilt_500_1500: Option<f32>,
    /// Syllable nuclei in the speaker's units per second of them, syll/s
    /// (articulation rate).
    pub articulation_rate_syl_per_s: Option<f32>,
    /// Turns by the speaker that started in the span.
    pub turns: u32,
    /// Of those, backchannels.
    pub backchannels: u32,
}

/// Statistics of one span. `None` where the span holds nothing to measure
/// (no voiced frames, no pulses, ...).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpanFeatures {
    /// The span summarised.
    pub span: Span,
    /// Frames in the span.
    pub frame_count: usize,
    /// Speech time (VAD, gaps under the pause threshold bridged), s.
    pub speech_s: f64,
    /// Speech time over span duration, 0..1.
    pub speech_ratio: f32,
    /// Voiced frames over frames, 0..1.
    pub voiced_ratio: f32,
    /// Mean F0 of voiced frames, semitones re 27.5 Hz.
    pub f0_mean_semitones: Option<f32>,
    /// Median F0 of voiced frames, semitones re 27.5 Hz.
    pub f0_median_semitones: Option<f32>,
    /// Standard deviation of F0 of voiced frames, semitones.
    pub f0_sd_semitones: Option<f32>,
    /// F0 range, 5th to 95th percentile of voiced frames, semitones.
    pub f0_range_semitones: Option<f32>,
    /// Mean intensity of speech frames, dB (see
    /// [`Frame::intensity_db`](crate::features::Frame::intensity_db)).
    pub intensity_mean_db: Option<f32>,
    /// Intensity range, 5th to 95th percentile of voiced speech frames, dB.
    pub intensity_range_db: Option<f32>,
    /// Background level, dB on the intensity scale: the median intensity of
    /// the frames that are not speech, over the span and the context before
    /// it (so a window of continuous speech still has one); `None` when every
    /// frame is speech. With `intensity_mean_db` it gives the signal-to-noise
    /// ratio that gates noise-sensitive cues.
    pub noise_floor_db: Option<f32>,
    /// Jitter (local) over the span's pulses, ratio (0.01 = 1 %).
    pub jitter_local: Option<f32>,
    /// Shimmer (local, dB) over the span's pulses, dB.
    pub shimmer_local_db: Option<f32>,
    /// Mean HNR of frames with a harmonicity value, dB.
    pub hnr_db: Option<f32>,
    /// Mean alpha ratio of voiced frames, dB.
    pub alpha_ratio_db: Option<f32>,
    /// Mean alpha ratio within the telephone band of voiced frames, dB
    /// ([`crate::features::Frame::alpha_band_db`]).
    pub alpha_band_db: Option<f32>,
    /// Mean Hammarberg index of voiced frames, dB.
    pub hammarberg_db: Option<f32>,
    /// Mean spectral slope 0-500 Hz of voiced frames, dB/Hz.
    pub slope_0_500: Option<f32>,
    /// Mean spectral slope 500-1500 Hz of voiced frames, dB/Hz.
    pub slope_500_1500: Option<f32>,
    /// Mean level-free spectral tilt 500-1500 Hz of voiced frames, dB/Hz
    /// ([`crate::features::Frame::tilt_500_1500`]).
    pub tilt_500_1500: Option<f32>,
    /// Syllable nuclei found.
    pub syllable_count: u32,
    /// Syllable nuclei per second of span, syll/s.
    pub speech_rate_syl_per_s: f32,
    /// Syllable nuclei per second of speech, syll/s.
    pub articulation_rate_syl_per_s: Option<f32>,
    /// Voiced segments starting in the span per second, 1/s.
    pub voiced_segments_per_s: f32,
    /// Pauses that ended in the span.
    pub pause_count: u32,
    /// Their mean length, s.
    pub pause_mean_s: Option<f32>,
    /// Their longest, s.
    pub pause_max_s: Option<f32>,
    /// Their total, s.
    pub pause_total_s: f32,
    /// Filled pauses ("uh", "um") starting in the span: voiced stretches of
    /// 0.2-1 s, at least 70 % spectrally steady (MFCC 1-4 moving at most 3
    /// units per frame), with F0 level (Theil-Sen slope within +/- 20 st/s,
    /// 5th-95th percentile range at most 8 st).
    pub filled_pause_count: u32,
    /// Their total length, s.
    pub filled_pause_s: f32,
    /// Phrase-final contours of phrases ending in the span.
    pub terminals: Vec<TerminalContour>,
    /// How many of them rise.
    pub rising_terminals: u32,
    /// How many of them fall.
    pub falling_terminals: u32,
    /// Speakers heard in the span (0 up to [`super::MAX_SPEAKERS`]).
    pub voice_count: u8,
    /// Share of all speakers' unit time by speakers 0 and 1, 0..1 each;
    /// zeros if none. [`SpanFeatures::per_speaker`] has every speaker.
    pub talk_share: [f32; 2],
    /// Per speaker heard in the span, by id.
    #[serde(default)]
    pub per_speaker: Vec<SpeakerSpan>,
    /// Turns that started in the span and are backchannels.
    #[serde(default)]
    pub backchannel_count: u32,
    /// Turns that started in the span.
    pub turns: Vec<Turn>,
    /// Speaker changes in the span.
    pub speaker_changes: u32,
    /// Speaker changes per minute of span.
    pub speaker_changes_per_min: f32,
    /// Speaker changes without silence between the voices.
    pub overlap_count: u32,
    /// Mean gap before a change of speaker (response latency), s.
    pub gap_mean_s: Option<f32>,
    /// Longest gap before a change of speaker, s.
    pub gap_max_s: Option<f32>,
}

/// The speaker turns of `span`, exactly as [`summarize`] finds them (its
/// [`SpanFeatures::turns`]), without the rest of the summary.
pub fn speaker_turns(features: &FrameFeatures, span: Span) -> Vec<Turn> {
    let base = features.first_index;
    let (first_abs, last_abs) = span.frame_range(base, features.end_index());
    let (first, last) = ((first_abs - base) as usize, (last_abs - base) as usize);
    let lo = first.saturating_sub(CONTEXT_FRAMES);
    let hi = (last + MIN_PAUSE_FRAMES).min(features.frames.len());
    let (raw_mask, _) = speech_masks(&features.frames, lo, hi);
    turns(
        features,
        (first_abs as usize, last_abs as usize),
        &raw_mask,
        base as usize + lo,
    )
    .turns
}

/// Summarises the frames whose centre lies in `span`, reading up to
/// [`CONTEXT_S`] of earlier frames for pauses and turns that began before it.
/// Only frames held count: after [`super::FeatureExtractor::forget_before`]
/// a span reaching back into what was forgotten sees the rest.
pub fn summarize(features: &FrameFeatures, span: Span) -> SpanFeatures {
    let frames = &features.frames;
    // Absolute frame indices are turned into positions in `frames` once
    // here; turns, which follow voiced segments, work in absolute indices.
    let base = features.first_index;
    let (first_abs, last_abs) = span.frame_range(base, features.end_index());
    let (first, last) = ((first_abs - base) as usize, (last_abs - base) as usize);
    let in_span = &frames[first..last];
    let duration = span.duration_s();
    let lo = first.saturating_sub(CONTEXT_FRAMES);
    let hi = (last + MIN_PAUSE_FRAMES).min(frames.len());
    let (raw_mask, mask) = speech_masks(frames, lo, hi);
    let speech_frames = (first..last).filter(|&i| mask[i - lo]).count();

    let mut f0: Vec<f32> = in_span.iter().filter_map(|f| f.f0_semitones).collect();
    let voiced = f0.len();
    let f0_mean = mean(f0.iter().copied());
    let f0_sd = f0_mean.and_then(|m| {
        if f0.len() < 2 {
            return None;
        }
        let var = f0.iter().map(|v| ((v - m) as f64).powi(2)).sum::<f64>() / (f0.len() - 1) as f64;
        Some(var.sqrt() as f32)
    });
    let f0_median = median(&mut f0);
    let f0_range = match (quantile(&mut f0, 0.95), quantile(&mut f0, 0.05)) {
        (Some(a), Some(b)) => Some(a - b),
        _ => None,
    };

    let levels: Vec<f32> = (first..last)
        .filter(|&i| mask[i - lo])
        .map(|i| frames[i].intensity_db)
        .collect();
    let intensity_mean = mean(levels.iter().copied());
    // Dynamics over voiced frames only: unvoiced frames inside speech reach
    // down to the noise floor, so digital silence or added noise would set
    // the range rather than the voice.
    let mut voiced_levels: Vec<f32> = (first..last)
        .filter(|&i| mask[i - lo] && frames[i].f0_semitones.is_some())
        .map(|i| frames[i].intensity_db)
        .collect();
    let intensity_range = match (
        quantile(&mut voiced_levels, 0.95),
        quantile(&mut voiced_levels, 0.05),
    ) {
        (Some(a), Some(b)) => Some(a - b),
        _ => None,
    };

    let mut background: Vec<f32> = (lo..hi)
        .filter(|&i| !raw_mask[i - lo] && !frames[i].is_speech())
        .map(|i| frames[i].intensity_db)
        .collect();
    let noise_floor = median(&mut background);

    let p_lo = features.pulses.partition_point(|p| p.time_s < span.start_s);
    let p_hi = features.pulses.partition_point(|p| p.time_s <= span.end_s);
    let span_pulses = &features.pulses[p_lo..p_hi.max(p_lo)];
    let jitter = JitterParts::of(span_pulses).jitter().map(|v| v as f32);
    let shimmer = shimmer_local_db(span_pulses).map(|v| v as f32);
    let hnr = mean(in_span.iter().filter_map(|f| f.hnr_db));

    let voiced_frames = || in_span.iter().filter(|f| f.is_voiced());
    let alpha = mean(voiced_frames().map(|f| f.alpha_ratio_db));
    let alpha_band = mean(voiced_frames().map(|f| f.alpha_band_db));
    let hammarberg = mean(voiced_frames().map(|f| f.hammarberg_db));
    let slope_low = mean(voiced_frames().map(|f| f.slope_0_500));
    let slope_high = mean(voiced_frames().map(|f| f.slope_500_1500));
    let tilt_high = mean(voiced_frames().map(|f| f.tilt_500_1500));

    let nuclei = syllable_nuclei(frames, first, last, &mask, lo);
    let syllables = nuclei.len() as u32;
    let speech_s = speech_frames as f64 * FRAME_SECONDS;
    let voiced_starts = (first..last)
        .filter(|&i| frames[i].is_voiced() && (i == 0 || !frames[i - 1].is_voiced()))
        .count();

    // Pauses end where speech resumes inside the span; phrases end where a
    // pause (or the end of the input) begins inside the span.
    let mut pauses: Vec<f32> = Vec::new();
    let mut terminals = Vec::new();
    let mut phrase_start = lo;
    let mut i = 0;
    while i < mask.len() {
        if mask[i] {
            i += 1;
            continue;
        }
        let s = i;
        while i < mask.len() && !mask[i] {
            i += 1;
        }
        let (start, end) = (lo + s, lo + i);
        let after_speech = s > 0;
        let long = i - s >= MIN_PAUSE_FRAMES;
        let reaches_end = end == frames.len();
        if after_speech && long && end < frames.len() && (first..last).contains(&end) {
            pauses.push(((end - start) as f64 * FRAME_SECONDS) as f32);
        }
        if after_speech && (long || reaches_end) && (first..last).contains(&start) {
            if let Some(t) = terminal_contour(frames, phrase_start, start) {
                terminals.push(t);
            }
        }
        if long {
            phrase_start = end;
        }
    }
    if let (Some(&true), true) = (mask.last(), hi == frames.len()) {
        // Speech running to the end of the input ends a phrase too.
        if (first..last).contains(&(frames.len() - 1)) {
            if let Some(t) = terminal_contour(frames, phrase_start, frames.len()) {
                terminals.push(t);
            }
        }
    }

    let filled = filled_pauses(frames, first, last);
    let turns_summary = turns(
        features,
        (first_abs as usize, last_abs as usize),
        &raw_mask,
        base as usize + lo,
    );
    let per_speaker = per_speaker(features, (first_abs, last_abs), &nuclei, &turns_summary);
    let backchannel_count = turns_summary.turns.iter().filter(|t| t.backchannel).count() as u32;

    let pause_count = pauses.len() as u32;
    SpanFeatures {
        span,
        frame_count: in_span.len(),
        speech_s,
        speech_ratio: if duration > 0.0 {
            (speech_s / duration).min(1.0) as f32
        } else {
            0.0
        },
        voiced_ratio: if in_span.is_empty() {
            0.0
        } else {
            voiced as f32 / in_span.len() as f32
        },
        f0_mean_semitones: f0_mean,
        f0_median_semitones: f0_median,
        f0_sd_semitones: f0_sd,
        f0_range_semitones: f0_range,
        intensity_mean_db: intensity_mean,
        intensity_range_db: intensity_range,
        noise_floor_db: noise_floor,
        jitter_local: jitter,
        shimmer_local_db: shimmer,
        hnr_db: hnr,
        alpha_ratio_db: alpha,
        alpha_band_db: alpha_band,
        hammarberg_db: hammarberg,
        slope_0_500: slope_low,
        slope_500_1500: slope_high,
        tilt_500_1500: tilt_high,
        syllable_count: syllables,
        speech_rate_syl_per_s: if duration > 0.0 {
            (syllables as f64 / duration) as f32
        } else {
            0.0
        },
        articulation_rate_syl_per_s: if speech_s > 0.0 {
            Some((syllables as f64 / speech_s) as f32)
        } else {
            None
        },
        voiced_segments_per_s: if duration > 0.0 {
            (voiced_starts as f64 / duration) as f32
        } else {
            0.0
        },
        pause_count,
        pause_mean_s: mean(pauses.iter().copied()),
        pause_max_s: pauses.iter().copied().reduce(f32::max),
        pause_total_s: pauses.iter().sum(),
        filled_pause_count: filled.len() as u32,
        filled_pause_s: filled.iter().fold(0.0, |a, b| a + b),
        rising_terminals: terminals
            .iter()
            .filter(|t| t.direction == Direction::Rising)
            .count() as u32,
        falling_terminals: terminals
            .iter()
            .filter(|t| t.direction == Direction::Falling)
            .count() as u32,
        terminals,
        voice_count: turns_summary.voice_count,
        talk_share: turns_summary.talk_share,
        per_speaker,
        backchannel_count,
        speaker_changes: turns_summary.changes,
        speaker_changes_per_min: if duration > 0.0 {
            (turns_summary.changes as f64 * 60.0 / duration) as f32
        } else {
            0.0
        },
        overlap_count: turns_summary.overlaps,
        gap_mean_s: mean(turns_summary.gaps.iter().copied()),
        gap_max_s: turns_summary.gaps.iter().copied().reduce(f32::max),
        turns: turns_summary.turns,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_range_takes_frames_whose_centre_is_inside() {
        let s = Span::new(0.0, 1.0);
        assert_eq!(s.frame_range(0, 500), (0, 100));
        let s = Span::new(0.995, 2.0);
        assert_eq!(s.frame_range(0, 500), (99, 200));
        assert_eq!(Span::new(3.0, 2.0).frame_range(0, 500), (300, 300));
        // Frames before the first held are not there to take.
        assert_eq!(Span::new(0.0, 2.0).frame_range(150, 500), (150, 200));
        assert_eq!(
            Span::new(0.0, f64::INFINITY).frame_range(150, 500),
            (150, 500)
        );
    }
}
