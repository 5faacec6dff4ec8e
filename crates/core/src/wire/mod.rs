//! The wire model: every resource, event and client frame of the interface,
//! with serde spellings exactly as `interface.md` gives them.
//!
//! Conventions that hold for every type here:
//! - optional fields are omitted when absent, never `null`, except where the
//!   interface says a field is nullable (those are documented on the field);
//! - times are seconds as JSON numbers ([`Seconds`]), date-times are RFC 3339
//!   UTC strings ([`Timestamp`]);
//! - enumerations accept and produce exactly the interface's values.

mod enums;
mod events;
mod frames;
mod resources;
mod timestamp;

pub use attune_cqi::{Dimension, EngagementLevel, Probability, QualityValues, SignalType};
pub use enums::{
    AnalysisGroup, CoverageReason, IncludeFlag, Modality, Model, RecommendationFrequency,
    SessionEndReason, UploadJobStatus,
};
pub use events::{
    ConversationQualityUpdated, CoverageDegraded, CoverageDropped, EngagementUpdated, ErrorEvent,
    Event, EventData, RealtimeRecommendationGenerated, SessionClosing, SessionEnded, SessionReady,
    SessionUpdated, SignalEnded, SignalEvent, SupportedConfigOptions, TranscriptGenerated,
};
pub use frames::{
    instructions_option_description, AudioEncoding, AudioFormat, ClientFrame, Endpoint, FrameError,
    RealtimeConfig, RealtimeConfigUpdate, SessionClose, StreamConfig, TranscriptUpdated,
    MAX_INSTRUCTIONS_CHARS,
};
pub use resources::{
    AnalysisResult, ClientTokenRequest, ClientTokenResponse, ClientTokenRevokeRequest,
    ConversationQuality, EngagementSpan, ErrorResponse, Feedback, Signal, TimeRange, TimelineEntry,
    TranscriptSegment, UploadJobResponse, UploadJobResult, UploadJobWindow,
};
pub use timestamp::Timestamp;

/// A time in seconds, as the interface writes every time inside results and
/// event data (session-cumulative on streams, media time on uploads).
pub type Seconds = f64;

#[cfg(test)]
mod golden_tests;
