//! Speaker turns by voice timbre: speech cut into short units, each described by its spectral envelope and pitch register, grouped into speakers online (streams) or by Gaussian voice models with BIC clustering (whole files).
//!
//! The pipeline of classic diarization systems (segmentation, one embedding
//! per segment, clustering; Anguera et al. 2012, *IEEE TASLP* 20(2)), kept
//! cheap enough to run beside the rest of the analysis at hundreds of times
//! realtime:
//!
//! - **Units.** Voiced frames are grouped into [`SpeechUnit`]s: a unit ends at
//!   [`UNIT_GAP_FRAMES`] (100 ms) without voicing, the shortest silence
//!   between two speakers' turns, or after [`UNIT_MAX_FRAMES`] (1 s), so a
//!   change without silence (overlap, latching) is found within a second.
//! - **Embedding.** Each unit's mean MFCC 1-13 over its voiced frames (the
//!   spectral envelope: vocal-tract length and shape, Reynolds 1995) and its
//!   median F0 (pitch register). The cepstral mean of the channel would
//!   cancel in the differences the distance takes, so no normalisation is
//!   needed within one recording. Distance: the root mean square of the
//!   MFCC differences, each divided by [`TIMBRE_SD`] (the typical spread of
//!   one speaker's unit means: a diagonal within-speaker covariance, so
//!   coefficients that vary with what is said weigh less), plus the F0
//!   difference over [`F0_SCALE_ST`].
//! - **Online** ([`SpeakerTracker`], streams and the extractor): leader-follower
//!   clustering (Hartigan 1975): a unit joins the nearest speaker when closer
//!   than [`NEW_SPEAKER_DISTANCE`], else founds a new one (at most
//!   [`MAX_SPEAKERS`]; beyond, the nearest). After each unit, two speakers
//!   whose centroids have come closer than [`MERGE_DISTANCE`] merge (the
//!   younger id retires; units already labelled keep their id, so a label,
//!   once given, is final and streams equal files).
//! - **Whole file** ([`super::diarize`], whole recordings): Gaussian voice models over the
//!   units' frames, BIC clustering and a Viterbi resegmentation that may
//!   split units where the speaker changes (`features/bic/`).
//!
//! Units with fewer than [`MIN_UNIT_VOICED_FRAMES`] voiced frames are too
//! short to describe a voice: they take the nearest speaker without moving
//! it.

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
/// Online: fewest voiced frames for a unit to found a new speaker (300 ms):
/// a short unit far from everyone is more often an odd sound than a person.
pub const MIN_FOUNDING_VOICED_FRAMES: u32 = 30;
/// Within-speaker standard deviation of unit-mean MFCC 1-13 (the spread
/// what is said gives one voice), measured on the committed evaluation
/// corpora (`tests/fixtures/conversations`, `tests/fixtures/real`): each
/// coefficient's difference is divided by it.
pub const TIMBRE_SD: [f32; TIMBRE_DIMS] = [
    4.3, 7.5, 15.0, 11.5, 14.0, 18.0, 14.5, 15.0, 11.5, 11.0, 11.5, 9.0, 9.0,
];
/// F0 difference counted as one unit of distance, semitones (a speaker's
/// unit medians spread over a few semitones with intonation).
pub const F0_SCALE_ST: f32 = 4.0;
/// Online: a unit farther than this from every speaker founds a new one.
pub const NEW_SPEAKER_DISTANCE: f32 = 3.0;
/// Online: two speakers whose centroids come this close merge.
pub const MERGE_DISTANCE: f32 = 1.4;
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

    fn embedding(&self) -> Embedding {
        Embedding {
            timbre: self.timbre,
            f0: self.f0_semitones,
        }
    }
}

/// A point in speaker space (or a speaker's centroid).
#[derive(Debug, Clone, Copy)]
struct Embedding {
    timbre: [f32; TIMBRE_DIMS],
    f0: f32,
}

impl Embedding {
    fn distance(&self, other: &Embedding) -> f32 {
        let timbre = (self
            .timbre
            .iter()
            .zip(&other.timbre)
            .zip(&TIMBRE_SD)
            .map(|((a, b), sd)| ((a - b) / sd) * ((a - b) / sd))
            .sum::<f32>()
            / TIMBRE_DIMS as f32)
            .sqrt();
        timbre + (self.f0 - other.f0).abs() / F0_SCALE_ST
    }
}

/// A speaker model: weighted centroid of its units.
#[derive(Debug, Clone, Copy)]
struct Centroid {
    id: u8,
    at: Embedding,
    weight: f32,
}

impl Centroid {
    fn absorb(&mut self, e: &Embedding, weight: f32) {
        let total = self.weight + weight;
        if total <= 0.0 {
            return;
        }
        let a = weight / total;
        for (m, v) in self.at.timbre.iter_mut().zip(&e.timbre) {
            *m += a * (v - *m);
        }
        self.at.f0 += a * (e.f0 - self.at.f0);
        self.weight = total;
    }
}

/// Online speaker assignment (leader-follower with merging).
#[derive(Debug, Clone, Default)]
pub(crate) struct SpeakerTracker {
    speakers: Vec<Centroid>,
    next_id: u8,
    /// Ids ever founded (merged ones included).
    founded: usize,
}

impl SpeakerTracker {
    /// Gives a closed unit its speaker (final once given).
    pub fn assign(&mut self, unit: &SpeechUnit) -> Option<u8> {
        if !unit.f0_semitones.is_finite() {
            return self.speakers.first().map(|s| s.id);
        }
        let e = unit.embedding();
        let nearest = self
            .speakers
            .iter()
            .enumerate()
            .map(|(i, s)| (i, s.at.distance(&e)))
            .min_by(|a, b| a.1.total_cmp(&b.1));
        if !unit.is_judged() {
            return nearest.map(|(i, _)| self.speakers[i].id);
        }
        let weight = unit.voiced_frames as f32;
        let chosen = match nearest {
            Some((i, d))
                if d <= NEW_SPEAKER_DISTANCE
                    || unit.voiced_frames < MIN_FOUNDING_VOICED_FRAMES
                    || self.speakers.len() >= MAX_SPEAKERS
                    || self.next_id == u8::MAX =>
            {
                self.speakers[i].absorb(&e, weight);
                i
            }
            _ => {
                self.speakers.push(Centroid {
                    id: self.next_id,
                    at: e,
                    weight,
                });
                self.next_id += 1;
                self.founded += 1;
                self.speakers.len() - 1
            }
        };
        let id = self.speakers[chosen].id;
        self.merge_close();
        Some(id)
    }

    /// Merges speakers whose centroids came closer than [`MERGE_DISTANCE`]:
    /// the older id survives.
    fn merge_close(&mut self) {
        loop {
            let mut closest: Option<(usize, usize, f32)> = None;
            for i in 0..self.speakers.len() {
                for j in i + 1..self.speakers.len() {
                    let d = self.speakers[i].at.distance(&self.speakers[j].at);
                    if d < MERGE_DISTANCE && closest.is_none_or(|c| d < c.2) {
                        closest = Some((i, j, d));
                    }
                }
            }
            let Some((i, j, _)) = closest else {
                return;
            };
            let gone = self.speakers.remove(j);
            self.speakers[i].absorb(&gone.at, gone.weight);
        }
    }

    /// Speakers currently held (merged ones not counted).
    pub fn count(&self) -> usize {
        self.speakers.len()
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

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(start: u64, f0: f32, timbre0: f32) -> SpeechUnit {
        let mut timbre = [0.0; TIMBRE_DIMS];
        timbre[0] = timbre0;
        SpeechUnit {
            start_frame: start,
            end_frame: start + 60,
            voiced_frames: 50,
            f0_semitones: f0,
            timbre,
            speaker: None,
        }
    }

    #[test]
    fn a_pitch_accent_of_a_few_semitones_stays_one_speaker() {
        let mut t = SpeakerTracker::default();
        assert_eq!(t.assign(&unit(0, 30.0, 10.0)), Some(0));
        assert_eq!(t.assign(&unit(100, 33.0, 12.0)), Some(0));
        assert_eq!(t.count(), 1);
    }

    #[test]
    fn same_pitch_different_timbre_is_a_second_speaker() {
        let mut t = SpeakerTracker::default();
        assert_eq!(t.assign(&unit(0, 30.0, 0.0)), Some(0));
        assert_eq!(t.assign(&unit(100, 30.5, 60.0)), Some(1));
        assert_eq!(t.assign(&unit(200, 30.2, 2.0)), Some(0));
        assert_eq!(t.assign(&unit(300, 30.4, 58.0)), Some(1));
        let short = SpeechUnit {
            voiced_frames: 5,
            ..unit(400, 30.0, 59.0)
        };
        assert_eq!(t.assign(&short), Some(1));
        assert_eq!(t.count(), 2);
    }

    #[test]
    fn no_more_than_the_cap_of_speakers_are_founded() {
        let mut t = SpeakerTracker::default();
        for k in 0..8 {
            t.assign(&unit(k * 100, 30.0 + 14.0 * k as f32, 0.0));
        }
        assert_eq!(t.count(), MAX_SPEAKERS);
    }
}
