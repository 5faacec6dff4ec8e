//! The window analyzer: measured features of one analysis window in, an
//! engagement state and social signals with evidence out.
//!
//! [`WindowAnalyzer`] is the seam a learned model would replace: it sees only
//! [`WindowFeatures`] (what was measured) and answers a [`WindowVerdict`].
//! The shipped implementation is [`RuleAnalyzer`], an explainable rule set:
//! each measurement becomes a cue judged against an absolute norm or the
//! speaker's own running baseline ([`cues`]), and each signal is a weighted
//! sum of its cues with per-level thresholds ([`params`], one versioned set
//! per model). Every rationale quotes the cues that carried the score.

pub mod baseline;
pub mod cues;
pub mod face_cues;
pub mod features;
pub mod params;
mod rules;

pub use features::{
    AudioMeasures, FaceMeasures, FaceSample, FaceWindow, GestureMeasure, SpeakerMeasures,
    TurnMeasures, VideoMeasures, WindowFeatures,
};
pub use rules::{Explanation, RuleAnalyzer};

use crate::lifecycle::signals::Detection;
use crate::wire::{Endpoint, EngagementLevel, Modality, Model, Probability, SignalType};

/// The evidence channel a finding rests on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Channel {
    /// Heard.
    Audio,
    /// Seen.
    Visual,
}

/// One detected signal in one window.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    /// The signal.
    pub signal: SignalType,
    /// How likely.
    pub probability: Probability,
    /// The evidence, quoted with numbers.
    pub rationale: String,
    /// Which channels the evidence came from (at least one).
    pub channels: Vec<Channel>,
}

/// What the analyzer concluded about one window.
#[derive(Debug, Clone, PartialEq)]
pub struct WindowVerdict {
    /// The window's engagement state.
    pub engagement: EngagementLevel,
    /// Signals detected, in `SignalType` order.
    pub findings: Vec<Finding>,
}

/// Turns one window's features into a verdict. Implementations may keep
/// state across windows (running baselines), so one analyzer serves one
/// conversation and sees its windows in order.
pub trait WindowAnalyzer: Send {
    /// Analyzes the next window.
    fn analyze(&mut self, window: &WindowFeatures) -> WindowVerdict;
}

/// The `modality` a finding carries on a given surface: uploads and streams
/// name the model's input (`video` for `inter-2`, `audio` for
/// `inter-2-audio`); realtime names the evidence channels (`audio`, `visual`).
pub fn modality(finding: &Finding, model: Model, endpoint: Option<Endpoint>) -> Vec<Modality> {
    if endpoint == Some(Endpoint::Realtime) {
        return finding
            .channels
            .iter()
            .map(|c| match c {
                Channel::Audio => Modality::Audio,
                Channel::Visual => Modality::Visual,
            })
            .collect();
    }
    match model {
        Model::Inter2Audio => vec![Modality::Audio],
        Model::Inter2 | Model::Inter2Deep => vec![Modality::Video],
    }
}

impl Finding {
    /// The finding as a stream detection for `model` on `endpoint`.
    pub fn to_detection(&self, model: Model, endpoint: Endpoint) -> Detection {
        Detection {
            signal_type: self.signal,
            probability: self.probability,
            rationale: self.rationale.clone(),
            modality: modality(self, model, Some(endpoint)),
        }
    }
}

#[cfg(test)]
mod tests;
