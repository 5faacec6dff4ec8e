//! Speaker turns by voice timbre: speech cut into short units, which Gaussian voice models with BIC clustering group into speakers, over a bounded recent history as a stream is heard (streams) or over the whole recording (uploads).
//!
//! The pipeline of classic diarization systems (segmentation, statistics
//! per segment, clustering; Anguera et al. 2012, *IEEE TASLP* 20(2)), kept
//! cheap enough to run beside the rest of the analysis at hundreds of times
//! realtime:
//!
//! - **Units.** Voiced frames are grouped into [`SpeechUnit`]s: a unit ends at
//!   [`UNIT_GAP_FRAMES`] (100 ms) without voicing, the shortest silence
//!   between two speakers' turns, or after [`UNIT_MAX_FRAMES`] (1 s), so a
//!   change without silence (overlap, latching) is found within a second.
//!   Each unit keeps its mean MFCC 1-13 (the spectral envelope: vocal-tract
//!   length and shape, Reynolds 1995) and median F0 (pitch register).
//! - **Online** (streams, inside [`super::FeatureExtractor`];
//!   `pipeline::Diarization::Online` for a file heard as a stream would):
//!   every 5 s of media (the window length), once every unit starting before
//!   that point has closed, the units waiting are labelled by the whole-file
//!   chain re-run over the last 30 s of voiced frames, its clusters mapped to
//!   the speaker ids already given by their overlap, so ids stay stable and
//!   labels given are final (`features/bic/online.rs`). No look-ahead past
//!   the window being closed: a stream's windows come out when they did.
//! - **Whole file** ([`super::diarize`], uploads): Gaussian voice models over
//!   the units' frames, BIC clustering and a Viterbi resegmentation that may
//!   split units where the speaker changes (`features/bic/`).
//!
//! Units with fewer than [`MIN_UNIT_VOICED_FRAMES`] voiced frames are too
//! short to seed a voice model; they are labelled by the resegmentation.

use serde::{Deserialize, Serialize};

use super::spectral::TIMBRE_DIMS;

/// Most speakers told apart in one recording or stream.
pub const MAX_SPEAKERS: usize = 4;
/// Frames without voicing that end a unit (100 ms).
pub const UNIT_GAP_FRAMES: u64 = 10;
/// Longest unit, frames (1 s).
pub const UNIT_MAX_FRAMES: u64 = 100;
/// Fewest voiced frames for a unit to shape a speaker (150 ms).
pub const MIN_UNIT_VOICED_FRAMES: u32 = 15;
/// Shortest voiced segment for [`VoicedSegment::duration_s`] users that
/// want a stable median F0, frames (150 ms).
pub const MIN_SEGMENT_FRAMES: u64 = 15;

/// A stretch of consecutive voiced frames.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct VoicedSegment {
    /// First frame index.
    pub start_frame: u64,
    /// One past the last frame index.
    pub end_frame: u64,
    /// Median F0, semitones re 27.5 Hz.
    pub median_f0_semitones: f32,
    /// Mean MFCC 1-4 over the segment.
    pub mean_mfcc: [f32; 4],
    /// Speaker of the [`SpeechUnit`] the segment starts in, once that unit
    /// has closed; `None` before, or for segments in no unit.
    pub speaker: Option<u8>,
}

impl VoicedSegment {
    /// Start time, s.
    pub fn start_s(&self) -> f64 {
        self.start_frame as f64 * super::FRAME_SECONDS
    }

    /// End time, s.
    pub fn end_s(&self) -> f64 {
        self.end_frame as f64 * super::FRAME_SECONDS
    }

    /// Length, s.
    pub fn duration_s(&self) -> f64 {
        (self.end_frame - self.start_frame) as f64 * super::FRAME_SECONDS
    }
}

/// A short stretch of voiced speech attributed to one speaker.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SpeechUnit {
    /// First frame index (the first voiced frame).
    pub start_frame: u64,
    /// One past the last voiced frame.
    pub end_frame: u64,
    /// Voiced frames in the unit.
    pub voiced_frames: u32,
    /// Median F0 of its voiced frames, semitones re 27.5 Hz.
    pub f0_semitones: f32,
    /// Mean MFCC 1-13 of its voiced frames.
    pub timbre: [f32; TIMBRE_DIMS],
    /// Speaker id (0, 1, ...: in order of first appearance for whole files;
    /// in order of founding online, where a merged speaker's id retires).
    pub speaker: Option<u8>,
}

impl SpeechUnit {
    /// Start time, s.
    pub fn start_s(&self) -> f64 {
        self.start_frame as f64 * super::FRAME_SECONDS
    }

    /// End time, s.
    pub fn end_s(&self) -> f64 {
        self.end_frame as f64 * super::FRAME_SECONDS
    }

    /// Whether the unit is long enough to shape a speaker model.
    pub fn is_judged(&self) -> bool {
        self.voiced_frames >= MIN_UNIT_VOICED_FRAMES && self.f0_semitones.is_finite()
    }
}

/// Accumulates the voiced frames of the unit in progress.
#[derive(Debug, Clone, Default)]
pub(crate) struct UnitBuilder {
    open: Option<OpenUnit>,
}

#[derive(Debug, Clone)]
struct OpenUnit {
    start: u64,
    last_voiced: u64,
    voiced: u32,
    timbre_sum: [f64; TIMBRE_DIMS],
    f0: Vec<f32>,
}

impl UnitBuilder {
    /// First frame of the unit in progress, if any.
    pub fn open_start(&self) -> Option<u64> {
        self.open.as_ref().map(|u| u.start)
    }

    /// Feeds final frame `k`; returns a unit that closed before it.
    pub fn push(
        &mut self,
        k: u64,
        f0: Option<f32>,
        timbre: &[f32; TIMBRE_DIMS],
    ) -> Option<SpeechUnit> {
        let mut closed = None;
        if let Some(open) = &self.open {
            let quiet_for = k - open.last_voiced;
            if quiet_for >= UNIT_GAP_FRAMES || (f0.is_some() && k - open.start >= UNIT_MAX_FRAMES) {
                closed = self.close();
            }
        }
        if let Some(st) = f0 {
            let open = self.open.get_or_insert_with(|| OpenUnit {
                start: k,
                last_voiced: k,
                voiced: 0,
                timbre_sum: [0.0; TIMBRE_DIMS],
                f0: Vec::with_capacity(UNIT_MAX_FRAMES as usize),
            });
            open.last_voiced = k;
            open.voiced += 1;
            for (s, v) in open.timbre_sum.iter_mut().zip(timbre) {
                *s += f64::from(*v);
            }
            open.f0.push(st);
        }
        closed
    }

    /// Closes the unit in progress (end of input).
    pub fn close(&mut self) -> Option<SpeechUnit> {
        let mut open = self.open.take()?;
        let n = f64::from(open.voiced.max(1));
        let mut timbre = [0.0f32; TIMBRE_DIMS];
        for (t, s) in timbre.iter_mut().zip(&open.timbre_sum) {
            *t = (s / n) as f32;
        }
        Some(SpeechUnit {
            start_frame: open.start,
            end_frame: open.last_voiced + 1,
            voiced_frames: open.voiced,
            f0_semitones: super::summary::median(&mut open.f0).unwrap_or(f32::NAN),
            timbre,
            speaker: None,
        })
    }
}

/// Gives every voiced segment the speaker of the unit it starts in.
pub(crate) fn relabel_segments(features: &mut super::FrameFeatures) {
    let units = &features.speech_units;
    for s in &mut features.voiced_segments {
        let k = units.partition_point(|u| u.end_frame <= s.start_frame);
        s.speaker = units
            .get(k)
            .filter(|u| u.start_frame <= s.start_frame)
            .and_then(|u| u.speaker);
    }
}
