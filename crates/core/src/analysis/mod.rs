//! The window analyzer: measured features of one analysis window in, an
//! engagement state and social signals with evidence out.
//!
//! [`WindowAnalyzer`] is the seam a learned model would replace: it sees only
//! [`WindowFeatures`] (what was measured) and answers a [`WindowResult`].
//! The shipped implementation is [`RuleAnalyzer`], an explainable rule set:
//! each measurement becomes a cue judged against an absolute norm or the
//! speaker's own running baseline ([`cues`]), and each signal is a weighted
//! sum of its cues with per-level thresholds ([`params`], one versioned set
//! per model). Every rationale quotes the cues that carried the score.

pub mod arousal;
pub mod baseline;
pub mod cues;
pub mod face_cues;
pub mod features;
pub mod lexicon;
pub mod params;
mod rules;

pub use features::{
    AudioMeasures, FaceMeasures, FaceSample, FaceWindow, GestureMeasure, SpeakerMeasures,
    TurnMeasures, VideoMeasures, WindowFeatures,
};
pub use rules::{Explanation, RuleAnalyzer};

use crate::lifecycle::signals::Detection;
use crate::lifecycle::ClosedWindow;
use crate::wire::{
    Endpoint, EngagementLevel, Modality, Model, Probability, Seconds, Signal, SignalType,
    UploadJobWindow,
};

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

/// One analysis window's result: the one type files and streams produce
/// ([`crate::step::analyze_window`]), converted once into each surface's form:
/// [`WindowResult::upload_window`] for the upload result,
/// [`WindowResult::stream_window`] for a stream's event machines.
#[derive(Debug, Clone, PartialEq)]
pub struct WindowResult {
    /// Window start, seconds on the file or session clock.
    pub start: Seconds,
    /// Window end.
    pub end: Seconds,
    /// The window's engagement state.
    pub engagement: EngagementLevel,
    /// Signals detected, in `SignalType` order.
    pub findings: Vec<Finding>,
}

/// Turns one window's features into its result. Implementations may keep
/// state across windows (running baselines), so one analyzer serves one
/// conversation and sees its windows in order.
pub trait WindowAnalyzer: Send {
    /// Analyzes the next window.
    fn analyze(&mut self, window: &WindowFeatures) -> WindowResult;
}

/// Where a window's result is reported, which decides the `modality` its
/// signals carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Surface {
    /// An upload result (v1 or v2) analyzed by the model.
    Upload(Model),
    /// A stream or realtime session analyzed by the model.
    Stream(Model, Endpoint),
}

/// The `modality` a model's input gives its findings on uploads and streams:
/// `video` for `inter-2`, `audio` for `inter-2-audio`. Also the v1 upload's
/// default for a merged signal that carries none.
pub fn model_modality(model: Model) -> Vec<Modality> {
    match model {
        Model::Inter2Audio => vec![Modality::Audio],
        Model::Inter2 | Model::Inter2Deep => vec![Modality::Video],
    }
}

/// The `modality` a finding carries on a surface, decided here only: uploads
/// and streams name the model's input ([`model_modality`]); realtime names
/// the evidence channels (`audio`, `visual`).
pub fn modality(finding: &Finding, surface: Surface) -> Vec<Modality> {
    match surface {
        Surface::Stream(_, Endpoint::Realtime) => finding
            .channels
            .iter()
            .map(|c| match c {
                Channel::Audio => Modality::Audio,
                Channel::Visual => Modality::Visual,
            })
            .collect(),
        Surface::Upload(model) | Surface::Stream(model, _) => model_modality(model),
    }
}

impl WindowResult {
    /// The upload form: the window `index` of the result's `windows`, each
    /// finding a signal spanning the window.
    pub fn upload_window(&self, index: u64, model: Model) -> UploadJobWindow {
        UploadJobWindow {
            index: u32::try_from(index).unwrap_or(u32::MAX),
            start_seconds: self.start,
            end_seconds: self.end,
            engagement_status: self.engagement,
            signals: self
                .findings
                .iter()
                .map(|f| Signal {
                    signal_type: f.signal,
                    start: self.start,
                    end: self.end,
                    probability: Some(f.probability),
                    rationale: Some(f.rationale.clone()),
                    modality: Some(modality(f, Surface::Upload(model))),
                })
                .collect(),
        }
    }

    /// The stream form: what the session's event machines read, for `model`
    /// on `endpoint`.
    pub fn stream_window(&self, model: Model, endpoint: Endpoint) -> ClosedWindow {
        let surface = Surface::Stream(model, endpoint);
        ClosedWindow {
            start: self.start,
            end: self.end,
            engagement: self.engagement,
            detections: self
                .findings
                .iter()
                .map(|f| Detection {
                    signal_type: f.signal,
                    probability: f.probability,
                    rationale: f.rationale.clone(),
                    modality: modality(f, surface),
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests;
