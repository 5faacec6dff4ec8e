//! The behavioural vocabulary shared by the whole workspace: signal types,
//! probability levels, engagement levels and quality dimensions.
//!
//! These enumerations live in the lowest crate that reasons about them (the
//! CQI needs all four) and `attune-core` re-exports them as part of its wire
//! model, so there is exactly one definition of each. Their serde spellings are
//! exactly the values of the interface's "Shared enumerations" table.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Generates `ALL`, `as_str` and `Display` for a fieldless enum whose serde
/// spelling is given per variant, so the wire spelling is written once.
macro_rules! spelled_enum {
    ($ty:ident { $($variant:ident => $text:literal),+ $(,)? }) => {
        impl $ty {
            /// Every value, in the order the interface lists them.
            pub const ALL: &'static [$ty] = &[$($ty::$variant),+];

            /// The exact wire spelling.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $($ty::$variant => $text),+
                }
            }

            /// Parses the exact wire spelling; anything else is `None`.
            pub fn parse(text: &str) -> Option<Self> {
                match text {
                    $($text => Some($ty::$variant),)+
                    _ => None,
                }
            }
        }

        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

/// One of the 13 social signals the analyzer reports (`SignalType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SignalType {
    /// Assent: backchannels, short response latency, head nods.
    Agreement,
    /// Assured delivery: loud, fluent, falling terminals.
    Confidence,
    /// Not following: long pre-response pauses, rising questions.
    Confusion,
    /// Dissent: long inter-turn silence before a reply, overlap, head shakes.
    Disagreement,
    /// Withdrawal from the conversation.
    Disengagement,
    /// Active participation.
    Engagement,
    /// Raised loudness and pitch, repetitions, sighs.
    Frustration,
    /// Filled and silent pauses, slow rate.
    Hesitation,
    /// Raised arousal directed at the topic.
    Interest,
    /// Doubt about what was said.
    Skepticism,
    /// Raised pitch mean and range, loudness, voice-quality shifts.
    Stress,
    /// Interpersonal strain: overlaps, raised loudness, irregular gaps.
    Tension,
    /// Rising terminal pitch, long latency, fillers.
    Uncertainty,
}

spelled_enum!(SignalType {
    Agreement => "agreement",
    Confidence => "confidence",
    Confusion => "confusion",
    Disagreement => "disagreement",
    Disengagement => "disengagement",
    Engagement => "engagement",
    Frustration => "frustration",
    Hesitation => "hesitation",
    Interest => "interest",
    Skepticism => "skepticism",
    Stress => "stress",
    Tension => "tension",
    Uncertainty => "uncertainty",
});

/// How likely a detected signal is (`Probability`). Ordered `Low < Medium < High`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Probability {
    /// Weak evidence.
    Low,
    /// Moderate evidence.
    Medium,
    /// Strong evidence.
    High,
}

spelled_enum!(Probability {
    Low => "low",
    Medium => "medium",
    High => "high",
});

impl Probability {
    /// A weight in `(0, 1]` used wherever evidence is accumulated:
    /// low 1/3, medium 2/3, high 1.
    pub const fn weight(self) -> f64 {
        match self {
            Probability::Low => 1.0 / 3.0,
            Probability::Medium => 2.0 / 3.0,
            Probability::High => 1.0,
        }
    }
}

/// The engagement state of a span of conversation (`EngagementLevel`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EngagementLevel {
    /// Participants are actively taking part.
    Engaged,
    /// Participants have withdrawn.
    Disengaged,
    /// Neither.
    Neutral,
}

spelled_enum!(EngagementLevel {
    Engaged => "engaged",
    Disengaged => "disengaged",
    Neutral => "neutral",
});

/// One of the five Conversation Quality Index dimensions; also the v1 upload's
/// goal dimension.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Dimension {
    /// Clarity / Structure.
    Clarity,
    /// Authority / Credibility.
    Authority,
    /// Energy / Presence.
    Energy,
    /// Rapport / Relational Safety.
    Rapport,
    /// Learning / Exploration.
    Learning,
}

spelled_enum!(Dimension {
    Clarity => "clarity",
    Authority => "authority",
    Energy => "energy",
    Rapport => "rapport",
    Learning => "learning",
});

impl Dimension {
    /// The human-readable title the interface gives the dimension.
    pub const fn title(self) -> &'static str {
        match self {
            Dimension::Clarity => "Clarity / Structure",
            Dimension::Authority => "Authority / Credibility",
            Dimension::Energy => "Energy / Presence",
            Dimension::Rapport => "Rapport / Relational Safety",
            Dimension::Learning => "Learning / Exploration",
        }
    }
}
