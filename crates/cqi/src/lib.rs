//! Conversation Quality Index math: engagement states and social signals in,
//! five 0-100 dimension scores and their mean out. Pure, no I/O.
//!
//! ```
//! use attune_cqi::{
//!     score, Band, EngagementEvidence, EngagementLevel, Probability, QualityValues,
//!     SignalEvidence, SignalType,
//! };
//!
//! // Ten seconds of an engaged conversation with confident delivery throughout.
//! let engagement = [EngagementEvidence { level: EngagementLevel::Engaged, start: 0.0, end: 10.0 }];
//! let signals = [SignalEvidence {
//!     signal_type: SignalType::Confidence,
//!     probability: Some(Probability::High),
//!     start: 0.0,
//!     end: 10.0,
//! }];
//! let values = score(&engagement, &signals);
//! assert_eq!(values.authority, 88.0);
//! assert_eq!(Band::of(values.authority).label(), "excellent");
//! assert_eq!(values.quality_index, values.dimensions().iter().sum::<f64>() / 5.0);
//!
//! // No evidence at all still yields a block: every score 50.
//! assert_eq!(score(&[], &[]), QualityValues::NEUTRAL);
//! ```
//!
//! # The formula (version [`FORMULA_VERSION`])
//!
//! The index measures the behavioural quality of an interaction from what the
//! analyzer detected over a span of media: the engagement state of each
//! stretch and the social signals, each with a probability. For each
//! dimension `d`:
//!
//! ```text
//! E_d     = ( Σ_signals  w(signal, d) · p(signal) · seconds(signal)
//!           + Σ_states   w(state, d)  · seconds(state) ) / T
//! score_d = 50 + 50 · tanh(GAIN · E_d)           (then rounded to a whole number)
//! quality_index = mean of the five scores
//! ```
//!
//! - `w` is the weight table below, `p` the probability weight (low 1/3,
//!   medium 2/3, high 1; a signal without a level counts as medium).
//! - `T` is the analyzed media: the seconds covered by engagement states (the
//!   analyzer gives every analyzed stretch exactly one), or the stretch from
//!   the first to the last signal when that is longer. A timeline period
//!   counts as analyzed over its whole length.
//! - Spans that cover no time, have a NaN or infinite bound, or are longer
//!   than [`MAX_SPAN_SECONDS`] are ignored, so no input leaves 0..=100.
//! - [`GAIN`] is 1: a dimension's strongest cue (weight 1) at high probability
//!   over the whole span reads 88 (excellent), at low probability 66 (good);
//!   over half the span at high probability 73.
//!
//! Why this shape:
//! - **Density, not count.** Dividing by `T` makes the score depend on how
//!   much of the conversation showed a cue, so a long call is not rewarded or
//!   punished for its length, and windows of any size fold the same way.
//! - **Neutral is exactly 50.** With no diagnostic evidence `E_d` is 0 and
//!   `tanh(0) = 0`, so the interface's "a dimension with no diagnostic
//!   evidence reads 50" holds exactly, and a neutral engagement state (a zero
//!   row) only dilutes the evidence around it.
//! - **Bounded and saturating.** `tanh` keeps every score inside 0..=100
//!   whatever the evidence, and stacked cues (several signals at once) give
//!   diminishing returns instead of overflowing the scale.
//! - **Additive and order-free.** The numerator and `T` are sums (and a
//!   min/max), so [`QualityAccumulator`] folds evidence in any order without
//!   keeping it, and a stream's cumulative score needs constant memory.
//!
//! # Weights
//!
//! Columns are the five dimensions: clarity (Clarity / Structure), authority
//! (Authority / Credibility), energy (Energy / Presence), rapport (Rapport /
//! Relational Safety), learning (Learning / Exploration). The code's copy is
//! [`WEIGHTS`]; a unit test keeps this printed table identical to it.
//!
//! | Cue | clarity | authority | energy | rapport | learning | Evidence |
//! |---|---|---|---|---|---|---|
//! | `agreement` | 0 | 0 | 0 | +0.8 | +0.3 | backchannels and assent are the positivity and coordination of rapport (Tickle-Degnen & Rosenthal 1990) and mark uptake (Ward & Tsukahara 2000) |
//! | `confidence` | +0.4 | +1.0 | +0.3 | 0 | 0 | loud, fluent, falling delivery is the dominance cue set (Jayagopi et al. 2009; Scherer, London & Wolf 1973); fluent speech is clear speech (Smiljanic & Bradlow 2009); loudness and rate are arousal (Bone, Lee & Narayanan 2014) |
//! | `confusion` | -0.8 | 0 | 0 | 0 | +0.2 | a listener not following is the most direct evidence the message was unclear; confusion is the cognitive disequilibrium that precedes learning when resolved (D'Mello & Graesser 2012) |
//! | `disagreement` | 0 | 0 | 0 | -0.6 | 0 | dissent removes the positivity component of rapport (Tickle-Degnen & Rosenthal 1990) |
//! | `disengagement` | 0 | 0 | -0.8 | -0.4 | -0.5 | withdrawal: low arousal (Bone et al. 2014), no mutual attention (Tickle-Degnen & Rosenthal 1990), and disengagement predicts poorer learning (Whitehill et al. 2014) |
//! | `engagement` | 0 | 0 | +0.8 | +0.4 | +0.5 | the mirror of disengagement (Gatica-Perez 2009; Oertel et al. 2020) |
//! | `frustration` | -0.2 | 0 | 0 | -0.5 | -0.6 | frustration (with boredom) is the affective state that hinders learning (D'Mello & Graesser 2012) and strains the relationship; often a reaction to not being understood |
//! | `hesitation` | -0.8 | -0.5 | -0.2 | 0 | 0 | filled and silent pauses are disfluencies (Clark & Fox Tree 2002; Smiljanic & Bradlow 2009); fillers lower perceived dominance (Jayagopi et al. 2009); slow rate is low arousal |
//! | `interest` | 0 | 0 | +0.5 | +0.3 | +0.8 | arousal directed at the topic (Schuller et al. 2009) is exploration; attention is part of rapport (Tickle-Degnen & Rosenthal 1990) |
//! | `skepticism` | 0 | -0.3 | 0 | -0.2 | 0 | doubt about what was said questions credibility; the weakest literature of all cues (Crespo-Sendra et al. 2013), so small weights |
//! | `stress` | -0.3 | -0.5 | +0.3 | -0.3 | 0 | stressed speech is less controlled (Hansen & Patil 2007) and reads as less assured, but it is high arousal, which is presence (Bone, Lee & Narayanan 2014) |
//! | `tension` | -0.2 | 0 | 0 | -0.8 | 0 | overlaps, interruptions and strained gaps are conflict (Kim, Valente & Vinciarelli 2012) and break the turn structure |
//! | `uncertainty` | -0.4 | -0.7 | 0 | 0 | 0 | rising terminals, latency and fillers are the cues of low speaker confidence (Smith & Clark 1993; Jiang & Pell 2017) |
//! | `state engaged` | 0 | 0 | +0.5 | +0.3 | +0.3 | talk-share balance, short gaps, backchannels and entrainment (Gatica-Perez 2009; Levitan et al. 2012) |
//! | `state disengaged` | 0 | 0 | -0.5 | -0.3 | -0.3 | low talk share, long gaps, monotone (Whitehill et al. 2014) |
//! | `state neutral` | 0 | 0 | 0 | 0 | 0 | no evidence either way (interface) |
//!
//! Choices behind the table:
//! - Each dimension's primary cue weighs 0.8-1.0 and secondary cues 0.2-0.5,
//!   following the dimension summary of the analyzer research: energy ~
//!   arousal (Bone, Lee & Narayanan 2014); authority ~ confidence and few
//!   fillers (Jayagopi et al. 2009); rapport and learning ~ agreement,
//!   interest and backchannels (Tickle-Degnen & Rosenthal 1990; Levitan et
//!   al. 2012); clarity ~ few disfluencies (Smiljanic & Bradlow 2009).
//! - Energy is arousal (Bone, Lee & Narayanan 2014), so stress, the
//!   clearest high-arousal state, raises it too; its costs to clarity,
//!   authority and rapport outweigh that, so stress still lowers the index.
//!   Frustration and tension are not credited with energy: their arousal is
//!   directed against the conversation.
//! - Engagement states weigh less than the engagement signals because they
//!   cover every analyzed second: they set the baseline, signals move it.
//!
//! Surveys behind the cue choices: Vinciarelli, Pantic & Bourlard 2009;
//! Schuller & Batliner 2013.
//!
//! # Bands
//!
//! [`Band::of`] maps a score to the interface's interpretation bands, each
//! half-open `[lower, upper)` so a boundary score belongs to the band above.
#![deny(missing_docs)]

mod accumulator;
mod band;
mod timeline;
mod values;
mod vocab;
mod weights;

pub use accumulator::{
    score, EngagementEvidence, QualityAccumulator, SignalEvidence, MAX_SPAN_SECONDS,
};
pub use band::Band;
pub use timeline::{timeline, TimelinePeriod, MAX_TIMELINE_PERIODS};
pub use values::QualityValues;
pub use vocab::{Dimension, EngagementLevel, Probability, SignalType};
pub use weights::{Cue, FORMULA_VERSION, GAIN, WEIGHTS};
