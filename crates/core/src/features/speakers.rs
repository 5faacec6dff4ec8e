//! Online assignment of voiced segments to at most two voices, from pitch and timbre.
//!
//! A leader-follower clustering (Hartigan 1975, *Clustering Algorithms*,
//! ch. 3), the simplest online speaker-change scheme: each voiced segment long
//! enough to judge is described by its median F0 (semitones) and its mean MFCC
//! 1-4 (timbre). The first such segment founds voice 0; a later one founds
//! voice 1 when its median F0 lies at least [`NEW_VOICE_SEMITONES`] from
//! voice 0 (further than a speaker's own accents and questions usually move,
//! closer than typical voices of different speakers); once two voices exist
//! every segment joins the nearer one, pitch first and timbre as a small
//! tie-breaker (segment-level MFCC means vary with the vowels spoken, so they
//! cannot carry the decision alone). Voice models are running means, so
//! decisions are final when made and never revisited. Two voices of similar
//! pitch are not told apart.

use serde::{Deserialize, Serialize};

/// Shortest voiced segment that is assigned a voice, frames (150 ms): shorter
/// ones are too brief for a stable median F0 and inherit their neighbours'.
pub const MIN_SEGMENT_FRAMES: u64 = 15;
/// F0 distance from voice 0 at which a segment founds a second voice, semitones.
pub const NEW_VOICE_SEMITONES: f32 = 8.0;
/// Semitones of distance per unit of MFCC distance when choosing between
/// two voices.
const TIMBRE_WEIGHT: f32 = 0.05;

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
    /// Voice (0 or 1) the segment was assigned to; `None` for segments
    /// shorter than [`MIN_SEGMENT_FRAMES`].
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

#[derive(Debug, Clone, Copy)]
struct Voice {
    f0: f32,
    mfcc: [f32; 4],
    weight: f32,
}

impl Voice {
    /// Distance in semitones, timbre added at [`TIMBRE_WEIGHT`].
    fn distance(&self, f0: f32, mfcc: &[f32; 4]) -> f32 {
        let timbre = self
            .mfcc
            .iter()
            .zip(mfcc)
            .map(|(a, b)| (a - b) * (a - b))
            .sum::<f32>()
            .sqrt();
        (self.f0 - f0).abs() + TIMBRE_WEIGHT * timbre
    }

    fn absorb(&mut self, f0: f32, mfcc: &[f32; 4], weight: f32) {
        let total = self.weight + weight;
        let a = weight / total;
        self.f0 += a * (f0 - self.f0);
        for (m, v) in self.mfcc.iter_mut().zip(mfcc) {
            *m += a * (v - *m);
        }
        self.weight = total;
    }
}

/// The voices found so far.
#[derive(Debug, Clone, Default)]
pub(crate) struct SpeakerTracker {
    voices: Vec<Voice>,
}

impl SpeakerTracker {
    /// Assigns a voice to a finished segment (or none if it is too short).
    pub fn assign(&mut self, segment: &VoicedSegment) -> Option<u8> {
        let frames = segment.end_frame - segment.start_frame;
        if frames < MIN_SEGMENT_FRAMES || !segment.median_f0_semitones.is_finite() {
            return None;
        }
        let (f0, mfcc, weight) = (
            segment.median_f0_semitones,
            segment.mean_mfcc,
            frames as f32,
        );
        let chosen = match self.voices.len() {
            0 => {
                self.voices.push(Voice { f0, mfcc, weight });
                return Some(0);
            }
            1 => {
                if (self.voices[0].f0 - f0).abs() >= NEW_VOICE_SEMITONES {
                    self.voices.push(Voice { f0, mfcc, weight });
                    return Some(1);
                }
                0
            }
            _ => {
                if self.voices[1].distance(f0, &mfcc) < self.voices[0].distance(f0, &mfcc) {
                    1
                } else {
                    0
                }
            }
        };
        self.voices[chosen].absorb(f0, &mfcc, weight);
        Some(chosen as u8)
    }

    /// Number of voices found so far.
    pub fn count(&self) -> usize {
        self.voices.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(start: u64, f0: f32, mfcc: [f32; 4]) -> VoicedSegment {
        VoicedSegment {
            start_frame: start,
            end_frame: start + 30,
            median_f0_semitones: f0,
            mean_mfcc: mfcc,
            speaker: None,
        }
    }

    #[test]
    fn a_pitch_accent_of_a_few_semitones_stays_one_voice() {
        let mut t = SpeakerTracker::default();
        assert_eq!(t.assign(&seg(0, 30.0, [10.0, 0.0, 0.0, 0.0])), Some(0));
        assert_eq!(t.assign(&seg(40, 36.5, [30.0, 0.0, 0.0, 0.0])), Some(0));
        assert_eq!(t.count(), 1);
    }

    #[test]
    fn a_voice_an_octave_away_is_a_second_speaker_and_later_segments_join_the_nearer() {
        let mut t = SpeakerTracker::default();
        assert_eq!(t.assign(&seg(0, 30.0, [10.0, 0.0, 0.0, 0.0])), Some(0));
        assert_eq!(t.assign(&seg(40, 42.0, [20.0, 5.0, 0.0, 0.0])), Some(1));
        assert_eq!(t.assign(&seg(80, 31.0, [11.0, 0.0, 0.0, 0.0])), Some(0));
        assert_eq!(t.assign(&seg(120, 41.0, [19.0, 4.0, 0.0, 0.0])), Some(1));
        let short = VoicedSegment {
            end_frame: 5,
            ..seg(0, 30.0, [0.0; 4])
        };
        assert_eq!(t.assign(&short), None);
    }
}
