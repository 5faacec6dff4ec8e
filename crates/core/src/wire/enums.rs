//! Enumerations of the interface that are not part of the CQI vocabulary.

use serde::{Deserialize, Serialize};
use std::fmt;

macro_rules! wire_enum {
    ($(#[$meta:meta])* $ty:ident { $($(#[$vmeta:meta])* $variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        pub enum $ty {
            $($(#[$vmeta])* #[serde(rename = $text)] $variant),+
        }

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

wire_enum!(
    /// An analysis model (`UploadModel` and `StreamModel` share these values).
    Model {
        /// Reads the video and also requires an audio track.
        Inter2 => "inter-2",
        /// Hears audio alone; on streams it also accepts raw PCM.
        Inter2Audio => "inter-2-audio",
        /// Reserved: refused on both v2 routes.
        Inter2Deep => "inter-2-deep",
    }
);

impl Model {
    /// The models this service can run (`inter-2-deep` is reserved).
    pub const SERVED: &'static [Model] = &[Model::Inter2, Model::Inter2Audio];

    /// Whether the model is reserved and refused on every route.
    pub const fn is_reserved(self) -> bool {
        matches!(self, Model::Inter2Deep)
    }
}

wire_enum!(
    /// An optional output section (`IncludeFlag`).
    IncludeFlag {
        /// The cumulative CQI values.
        ConversationQualityOverall => "conversation_quality_overall",
        /// The CQI timeline.
        ConversationQualityTimeline => "conversation_quality_timeline",
        /// The merged whole-file signal list (v2 upload only).
        Signals => "signals",
    }
);

impl IncludeFlag {
    /// Whether the flag asks for a CQI section.
    pub const fn is_cqi(self) -> bool {
        matches!(
            self,
            IncludeFlag::ConversationQualityOverall | IncludeFlag::ConversationQualityTimeline
        )
    }
}

wire_enum!(
    /// The status of a v2 upload job (`UploadJobStatus`).
    UploadJobStatus {
        /// Accepted, waiting for a worker.
        Queued => "queued",
        /// A worker is analyzing it.
        Running => "running",
        /// Finished; `result` is set.
        Completed => "completed",
        /// Failed; `error` is set.
        Failed => "failed",
    }
);

impl UploadJobStatus {
    /// `completed` and `failed` are terminal; `queued` and `running` are transient.
    pub const fn is_terminal(self) -> bool {
        matches!(self, UploadJobStatus::Completed | UploadJobStatus::Failed)
    }
}

wire_enum!(
    /// How often realtime recommendations are generated.
    RecommendationFrequency {
        /// Every 10 s of analyzed media.
        High => "high",
        /// Every 20 s of analyzed media.
        Medium => "medium",
        /// Every 30 s of analyzed media.
        Low => "low",
    }
);

impl RecommendationFrequency {
    /// Seconds of analyzed media between two recommendations.
    pub const fn period_seconds(self) -> f64 {
        match self {
            RecommendationFrequency::High => 10.0,
            RecommendationFrequency::Medium => 20.0,
            RecommendationFrequency::Low => 30.0,
        }
    }
}

wire_enum!(
    /// A realtime analysis group.
    AnalysisGroup {
        /// Signals read from the picture.
        Visual => "visual",
        /// Signals heard in the audio.
        Audio => "audio",
    }
);

wire_enum!(
    /// The evidence source of a signal. Uploads and streams use `video`
    /// (`inter-2`) or `audio` (`inter-2-audio`); realtime uses `audio` and
    /// `visual`, one or both.
    Modality {
        /// Heard in the audio.
        Audio => "audio",
        /// Read from an `inter-2` recording (upload and stream spelling).
        Video => "video",
        /// Read from the picture (realtime spelling).
        Visual => "visual",
    }
);

wire_enum!(
    /// Why `coverage.degraded` was emitted (the interface has one reason).
    CoverageReason {
        /// Windows decoded materially less video than their span.
        VideoGap => "video_gap",
    }
);

wire_enum!(
    /// Why a session ended gracefully (`session.ended`).
    SessionEndReason {
        /// The client sent `session.close` and the drain finished.
        ClientShutdown => "client_shutdown",
    }
);
