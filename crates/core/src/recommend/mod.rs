//! Realtime recommendations: when one is due ([`RecommendationPacer`]) and
//! what it says ([`Recommender`], with the deterministic
//! [`EmbeddedRecommender`] as the default).
//!
//! The interface sends `realtime_recommendation.generated` `{text, start,
//! end}` "only when instructions were supplied, at least one signal was
//! detected, and at least one transcript arrived since the previous
//! recommendation; paced by the configured frequency". The pacer decides the
//! *when* as a pure state machine fed with analyzed windows; a recommender
//! decides the *what* from a [`RecommendationInput`]. Nothing here does I/O:
//! a recommender that calls a language model lives in the server and falls
//! back to the embedded one.
//!
//! ```
//! use attune_core::lifecycle::signals::Detection;
//! use attune_core::lifecycle::ClosedWindow;
//! use attune_core::recommend::{EmbeddedRecommender, RecommendationPacer, Recommender};
//! use attune_core::wire::{
//!     EngagementLevel, Modality, Probability, RealtimeConfig, RecommendationFrequency,
//!     SignalType, TranscriptSegment,
//! };
//!
//! let config = RealtimeConfig {
//!     realtime_recommendation_instructions: Some("Sales call: help me listen more".into()),
//!     realtime_recommendation_frequency: RecommendationFrequency::High,
//!     ..RealtimeConfig::default()
//! };
//! let mut pacer = RecommendationPacer::new();
//! pacer.transcript_arrived();
//! for start in [0.0, 5.0] {
//!     pacer.observe_window(&ClosedWindow {
//!         start,
//!         end: start + 5.0,
//!         engagement: EngagementLevel::Neutral,
//!         detections: vec![Detection {
//!             signal_type: SignalType::Disengagement,
//!             probability: Probability::Medium,
//!             rationale: "speech in only 24% of the window".into(),
//!             modality: vec![Modality::Audio],
//!         }],
//!     });
//! }
//! // 10 s of analyzed media at `high`: a recommendation is due for 0-10 s.
//! let due = pacer.take_due(&config).expect("due");
//! assert_eq!((due.period.start, due.period.end), (0.0, 10.0));
//!
//! let transcript = [
//!     TranscriptSegment { start: 0.0, end: 8.5, text: "Our platform does it all".into(), speaker: 0 },
//!     TranscriptSegment { start: 8.5, end: 9.5, text: "Okay".into(), speaker: 1 },
//! ];
//! let text = EmbeddedRecommender
//!     .recommend(&due.input(&config, &transcript).expect("instructions are set"))
//!     .expect("one speaker dominates");
//! assert!(text.starts_with("Speaker 1 has talked 89% of the last 10 s"), "{text}");
//! ```

pub mod embedded;
mod intent;
pub mod pacer;
mod talk;

pub use embedded::{EmbeddedRecommender, MAX_RECOMMENDATION_CHARS};
pub use pacer::{DuePeriod, Period, RecommendationPacer};

use crate::wire::{EngagementLevel, Seconds, Signal, TranscriptSegment};

/// Everything a recommender may read to write one recommendation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RecommendationInput<'a> {
    /// The client's `realtime_recommendation_instructions` (non-empty when a
    /// recommendation is due).
    pub instructions: &'a str,
    /// Start of the analyzed-media period the recommendation covers (session
    /// seconds).
    pub start: Seconds,
    /// End of that period (session seconds).
    pub end: Seconds,
    /// The signals detected in the period, one entry per analysis window
    /// they were present in, with that window's span as `start`/`end`.
    pub signals: &'a [Signal],
    /// The session's transcript, in spoken order: the most recent one the client sent, or
    /// the server's own while the client sent none.
    pub transcript: &'a [TranscriptSegment],
    /// The engagement state of the latest analyzed window, if any.
    pub engagement: Option<EngagementLevel>,
}

/// Writes one short recommendation for a period, or nothing.
///
/// Implementations are synchronous and cheap enough to call on the session's
/// task; a recommender that needs I/O wraps one of these as its fallback.
pub trait Recommender: Send + Sync {
    /// One suggestion for the person being coached, or `None` when nothing in
    /// the input warrants one (the reference service's `NO_GUIDANCE`).
    fn recommend(&self, input: &RecommendationInput<'_>) -> Option<String>;
}

impl<R: Recommender + ?Sized> Recommender for &R {
    fn recommend(&self, input: &RecommendationInput<'_>) -> Option<String> {
        (**self).recommend(input)
    }
}

impl<R: Recommender + ?Sized> Recommender for Box<R> {
    fn recommend(&self, input: &RecommendationInput<'_>) -> Option<String> {
        (**self).recommend(input)
    }
}

impl<R: Recommender + ?Sized> Recommender for std::sync::Arc<R> {
    fn recommend(&self, input: &RecommendationInput<'_>) -> Option<String> {
        (**self).recommend(input)
    }
}
