//! Speaker turns on the frame grid: speech cut into short units of voicing, each given the
//! speaker the voice networks of `attune-voice` hear there (whole-file diarization for uploads,
//! online diarization for streams).
//!
//! - **Units.** Voiced frames are grouped into [`SpeechUnit`]s: a unit ends at
//!   [`UNIT_GAP_FRAMES`] (100 ms) without voicing, the shortest silence between two speakers'
//!   turns, or after [`UNIT_MAX_FRAMES`] (1 s). Units and voiced segments are what the
//!   turn-taking measures and per-speaker baselines are built from ([`super::summarize`]).
//! - **Speakers.** Each voiced frame takes the speaker whose turn holds its centre
//!   ([`SpeakerGrid`]); where two turns overlap, the one that started later (the voice that
//!   came in: a backchannel, an interruption), so the other speaker's turn is seen to be
//!   overlapped. Voiced frames no turn holds take the speaker of the nearest labelled frame of
//!   their unit, or of the nearest turn within [`NEAREST_TURN_FRAMES`]. A unit whose frames
//!   have two speakers is split where the speaker changes.

use serde::{Deserialize, Serialize};

use super::spectral::TIMBRE_DIMS;
use super::{FrameFeatures, FRAME_SECONDS};
use attune_voice::SpeakerTurn;

/// Most speakers told apart in one recording or stream.
pub const MAX_SPEAKERS: usize = 8;
/// Frames without voicing that end a unit (100 ms).
pub const UNIT_GAP_FRAMES: u64 = 10;
/// Longest unit, frames (1 s).
pub const UNIT_MAX_FRAMES: u64 = 100;
/// Fewest voiced frames for a unit to describe a voice (150 ms).
pub const MIN_UNIT_VOICED_FRAMES: u32 = 15;
/// Shortest voiced segment for [`VoicedSegment::duration_s`] users that
/// want a stable median F0, frames (150 ms).
pub const MIN_SEGMENT_FRAMES: u64 = 15;
/// How far, frames, a unit no turn touches looks for the nearest turn (0.5 s).
pub const NEAREST_TURN_FRAMES: u64 = 50;

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
    /// Speaker id (0, 1, ...: in order of first speech), from the voice networks' turns;
    /// `None` where no turn is near.
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

/// The speaker of every 10 ms frame from a set of turns (see the module docs), over a range
/// of frames.
#[derive(Debug, Clone, Default)]
pub(crate) struct SpeakerGrid {
    first: u64,
    labels: Vec<Option<u8>>,
}

impl SpeakerGrid {
    /// The grid of frames `[first, end)` from `turns` (any order).
    pub fn new(turns: &[SpeakerTurn], first: u64, end: u64) -> Self {
        let mut labels = vec![None; end.saturating_sub(first) as usize];
        let mut by_start: Vec<&SpeakerTurn> = turns.iter().collect();
        by_start.sort_by(|a, b| a.start.total_cmp(&b.start));
        // Later starts overwrite: where turns overlap, the voice that came in holds the frame.
        for t in by_start {
            let Ok(id) = u8::try_from(t.speaker) else {
                continue;
            };
            let a = ((t.start / FRAME_SECONDS).round().max(0.0) as u64).max(first);
            let b = ((t.end / FRAME_SECONDS).round().max(0.0) as u64).min(end);
            for k in a..b {
                labels[(k - first) as usize] = Some(id);
            }
        }
        Self { first, labels }
    }

    fn at(&self, k: u64) -> Option<u8> {
        k.checked_sub(self.first)
            .and_then(|i| self.labels.get(i as usize))
            .copied()
            .flatten()
    }

    /// The speaker of the labelled frame nearest to `[a, b)` within `reach` frames.
    fn nearest(&self, a: u64, b: u64, reach: u64) -> Option<u8> {
        (1..=reach).find_map(|d| self.at(a.saturating_sub(d)).or_else(|| self.at(b + d - 1)))
    }
}

/// Gives `unit` its speakers from `grid`: one unit per run of one speaker among its voiced
/// frames (the unit itself, labelled, when it has one speaker).
pub(crate) fn label_unit(
    features: &FrameFeatures,
    unit: &SpeechUnit,
    grid: &SpeakerGrid,
) -> Vec<SpeechUnit> {
    let voiced: Vec<u64> = (unit.start_frame..unit.end_frame)
        .filter(|&k| features.frame(k).is_some_and(|f| f.is_voiced()))
        .collect();
    let mut labels: Vec<Option<u8>> = voiced.iter().map(|&k| grid.at(k)).collect();
    if labels.iter().all(Option::is_none) {
        let near = grid.nearest(unit.start_frame, unit.end_frame, NEAREST_TURN_FRAMES);
        return vec![SpeechUnit {
            speaker: near,
            ..*unit
        }];
    }
    // Unlabelled frames take the nearest labelled one of the unit.
    for i in 0..labels.len() {
        if labels[i].is_none() {
            let before = labels[..i].iter().rposition(Option::is_some);
            let after = labels[i..].iter().position(Option::is_some).map(|p| p + i);
            labels[i] = match (before, after) {
                (Some(b), Some(a)) if i - b <= a - i => labels[b],
                (_, Some(a)) => labels[a],
                (Some(b), None) => labels[b],
                (None, None) => None,
            };
        }
    }
    if labels.windows(2).all(|w| w[0] == w[1]) {
        return vec![SpeechUnit {
            speaker: labels[0],
            ..*unit
        }];
    }
    let mut out = Vec::new();
    let mut run_start = 0;
    for i in 1..=labels.len() {
        if i == labels.len() || labels[i] != labels[run_start] {
            out.push(unit_of(features, &voiced[run_start..i], labels[run_start]));
            run_start = i;
        }
    }
    out
}

/// A unit of the given voiced frames.
fn unit_of(features: &FrameFeatures, voiced: &[u64], speaker: Option<u8>) -> SpeechUnit {
    let mut timbre_sum = [0.0f64; TIMBRE_DIMS];
    let mut f0: Vec<f32> = Vec::with_capacity(voiced.len());
    for &k in voiced {
        if let Some(f) = features.frame(k) {
            for (s, t) in timbre_sum.iter_mut().zip(&f.timbre) {
                *s += f64::from(*t);
            }
            f0.extend(f.f0_semitones);
        }
    }
    let n = voiced.len().max(1) as f64;
    let mut timbre = [0.0f32; TIMBRE_DIMS];
    for (t, s) in timbre.iter_mut().zip(&timbre_sum) {
        *t = (s / n) as f32;
    }
    SpeechUnit {
        start_frame: voiced.first().copied().unwrap_or(0),
        end_frame: voiced.last().map_or(0, |k| k + 1),
        voiced_frames: voiced.len() as u32,
        f0_semitones: super::summary::median(&mut f0).unwrap_or(f32::NAN),
        timbre,
        speaker,
    }
}

/// Gives every unit of `features` its speakers from `turns` (whole-file diarization), then
/// every voiced segment the speaker of the unit it starts in.
pub fn apply_speaker_turns(features: &mut FrameFeatures, turns: &[SpeakerTurn]) {
    let grid = SpeakerGrid::new(turns, features.first_index, features.end_index());
    let units = std::mem::take(&mut features.speech_units);
    let mut out = Vec::with_capacity(units.len());
    for u in &units {
        out.extend(label_unit(features, u, &grid));
    }
    features.speech_units = out;
    relabel_segments(features);
}

/// The online diarizer behind a stream's units, and the turns it has given so far.
pub(crate) struct OnlineVoices {
    /// `None` once the networks failed (a broken build): units are then left unlabelled.
    diarizer: Option<attune_voice::OnlineDiarizer>,
    turns: Vec<SpeakerTurn>,
    step_frames: u64,
}

impl OnlineVoices {
    pub fn new() -> Self {
        let params = attune_voice::OnlineParams::default();
        Self {
            // The features' own Silero scores are handed over (`push_vad`): one detector.
            diarizer: attune_voice::OnlineDiarizer::with_scores_from_caller(params).ok(),
            turns: Vec::new(),
            step_frames: ((params.step_s / FRAME_SECONDS).round() as u64).max(1),
        }
    }

    /// Frames between the diarizer's labelling steps: units are cut at multiples of it so
    /// that what a unit is labelled from does not depend on how the input was chunked.
    pub fn step_frames(&self) -> u64 {
        self.step_frames
    }

    /// The voice activity of the next 32 ms blocks, before the samples they cover are pushed.
    pub fn push_vad(&mut self, probs: &[f32]) {
        if let Some(d) = &mut self.diarizer {
            d.push_vad(probs);
        }
    }

    pub fn push(&mut self, pcm: &[f32]) {
        if let Some(d) = &mut self.diarizer {
            match d.push(pcm) {
                Ok(turns) => self.turns.extend(turns),
                Err(_) => self.diarizer = None,
            }
        }
    }

    pub fn finish(&mut self) {
        if let Some(d) = &mut self.diarizer {
            match d.finish() {
                Ok(turns) => self.turns.extend(turns),
                Err(_) => self.diarizer = None,
            }
        }
    }

    /// Frame before which every turn is known (unbounded once the networks failed: nothing
    /// is waited for).
    pub fn labelled_frames(&self, finished: bool) -> u64 {
        match &self.diarizer {
            Some(_) if finished => u64::MAX,
            Some(d) => (d.labelled_s() / FRAME_SECONDS).round() as u64,
            None => u64::MAX,
        }
    }

    /// The turns held.
    pub fn turns(&self) -> &[SpeakerTurn] {
        &self.turns
    }

    /// Speakers founded so far.
    pub fn speakers(&self) -> usize {
        self.diarizer.as_ref().map_or(0, |d| d.speakers())
    }

    /// The grid for labelling units that end at or before `end`: turns up to the labelling
    /// step `end` falls in, so the label is what it would be however the input arrived.
    pub fn grid(&self, first: u64, end: u64) -> SpeakerGrid {
        let boundary = end.div_ceil(self.step_frames) * self.step_frames;
        SpeakerGrid::new(
            &self.turns,
            first.saturating_sub(NEAREST_TURN_FRAMES),
            (end + NEAREST_TURN_FRAMES).min(boundary),
        )
    }

    /// Forgets turns that end before frame `k`.
    pub fn forget_before(&mut self, k: u64) {
        let t = k as f64 * FRAME_SECONDS;
        self.turns.retain(|turn| turn.end >= t);
    }
}

/// `unit` cut at every multiple of `step` frames (its voiced frames on either side).
pub(crate) fn split_at_steps(
    features: &FrameFeatures,
    unit: SpeechUnit,
    step: u64,
) -> Vec<SpeechUnit> {
    let first_boundary = (unit.start_frame / step + 1) * step;
    if first_boundary >= unit.end_frame {
        return vec![unit];
    }
    let voiced: Vec<u64> = (unit.start_frame..unit.end_frame)
        .filter(|&k| features.frame(k).is_some_and(|f| f.is_voiced()))
        .collect();
    let mut out = Vec::new();
    let mut from = 0;
    while from < voiced.len() {
        let boundary = (voiced[from] / step + 1) * step;
        let to = from + voiced[from..].partition_point(|&k| k < boundary);
        out.push(unit_of(features, &voiced[from..to], None));
        from = to;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(speaker: usize, start: f64, end: f64) -> SpeakerTurn {
        SpeakerTurn {
            speaker,
            start,
            end,
        }
    }

    #[test]
    fn overlapped_frames_go_to_the_voice_that_came_in() {
        let grid = SpeakerGrid::new(&[turn(0, 0.0, 5.0), turn(1, 2.0, 2.5)], 0, 600);
        assert_eq!(grid.at(100), Some(0));
        assert_eq!(grid.at(220), Some(1));
        assert_eq!(grid.at(300), Some(0));
        assert_eq!(grid.at(550), None);
        assert_eq!(grid.nearest(520, 540, 30), Some(0));
        assert_eq!(grid.nearest(560, 580, 30), None);
    }
}
