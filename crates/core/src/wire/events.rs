//! Server-to-client events of the stream and realtime endpoints: the envelope
//! (`type`, `timestamp`, `correlation_id`, `data`) and every event's data.

use super::enums::{
    AnalysisGroup, CoverageReason, IncludeFlag, Modality, Model, RecommendationFrequency,
    SessionEndReason,
};
use super::resources::{TimeRange, TimelineEntry};
use super::timestamp::Timestamp;
use super::Seconds;
use crate::error::ErrorCode;
use attune_cqi::{EngagementLevel, Probability, QualityValues, SignalType};
use serde::ser::SerializeMap;
use serde::{de, Deserialize, Deserializer, Serialize, Serializer};

/// One event envelope as sent on the socket.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// When the event was produced.
    pub timestamp: Timestamp,
    /// Id of the connection.
    pub correlation_id: String,
    /// The event type and its data.
    pub data: EventData,
}

impl Event {
    /// The envelope's `type` value.
    pub fn type_name(&self) -> &'static str {
        self.data.type_name()
    }

    /// The envelope as a JSON text frame.
    pub fn to_json(&self) -> String {
        // Serializing these plain data types cannot fail: no maps with
        // non-string keys, no non-finite floats written by the engine.
        serde_json::to_string(self).unwrap_or_else(|e| {
            format!(
                "{{\"type\":\"error\",\"data\":{{\"code\":\"ih1001\",\"message\":\"{}\",\"segment\":null}}}}",
                e.to_string().replace('"', "'")
            )
        })
    }
}

/// Every event type and its `data` object.
#[derive(Debug, Clone, PartialEq)]
pub enum EventData {
    /// `session.ready`
    SessionReady(SessionReady),
    /// `session.updated`
    SessionUpdated(SessionUpdated),
    /// `signal.detected`
    SignalDetected(SignalEvent),
    /// `signal.updated`
    SignalUpdated(SignalEvent),
    /// `signal.ended`
    SignalEnded(SignalEnded),
    /// `engagement.updated`
    EngagementUpdated(EngagementUpdated),
    /// `conversation_quality.updated`
    ConversationQualityUpdated(ConversationQualityUpdated),
    /// `coverage.degraded`
    CoverageDegraded(CoverageDegraded),
    /// `coverage.dropped`
    CoverageDropped(CoverageDropped),
    /// `error`
    Error(ErrorEvent),
    /// `session.closing`
    SessionClosing(SessionClosing),
    /// `session.ended`
    SessionEnded(SessionEnded),
    /// `realtime_recommendation.generated`
    RealtimeRecommendationGenerated(RealtimeRecommendationGenerated),
    /// `transcript.generated`
    TranscriptGenerated(TranscriptGenerated),
}

/// Generates the type-name table and the (de)serialization of the data object
/// from one list, so a type name is written once.
macro_rules! event_types {
    ($($variant:ident($payload:ty) => $name:literal),+ $(,)?) => {
        impl EventData {
            /// Every envelope `type` value.
            pub const TYPE_NAMES: &'static [&'static str] = &[$($name),+];

            /// The envelope's `type` value.
            pub fn type_name(&self) -> &'static str {
                match self {
                    $(EventData::$variant(_) => $name),+
                }
            }

            fn serialize_payload<M: SerializeMap>(&self, map: &mut M) -> Result<(), M::Error> {
                match self {
                    $(EventData::$variant(payload) => map.serialize_entry("data", payload)),+
                }
            }

            /// Rebuilds the data from an envelope's `type` and `data`.
            pub fn from_parts(type_name: &str, data: serde_json::Value) -> Result<EventData, serde_json::Error> {
                match type_name {
                    $($name => Ok(EventData::$variant(<$payload>::deserialize(data)?)),)+
                    other => Err(de::Error::custom(format_args!("unknown event type `{other}`"))),
                }
            }
        }
    };
}

event_types! {
    SessionReady(SessionReady) => "session.ready",
    SessionUpdated(SessionUpdated) => "session.updated",
    SignalDetected(SignalEvent) => "signal.detected",
    SignalUpdated(SignalEvent) => "signal.updated",
    SignalEnded(SignalEnded) => "signal.ended",
    EngagementUpdated(EngagementUpdated) => "engagement.updated",
    ConversationQualityUpdated(ConversationQualityUpdated) => "conversation_quality.updated",
    CoverageDegraded(CoverageDegraded) => "coverage.degraded",
    CoverageDropped(CoverageDropped) => "coverage.dropped",
    Error(ErrorEvent) => "error",
    SessionClosing(SessionClosing) => "session.closing",
    SessionEnded(SessionEnded) => "session.ended",
    RealtimeRecommendationGenerated(RealtimeRecommendationGenerated) => "realtime_recommendation.generated",
    TranscriptGenerated(TranscriptGenerated) => "transcript.generated",
}

impl Serialize for Event {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(4))?;
        map.serialize_entry("type", self.data.type_name())?;
        map.serialize_entry("timestamp", &self.timestamp)?;
        map.serialize_entry("correlation_id", &self.correlation_id)?;
        self.data.serialize_payload(&mut map)?;
        map.end()
    }
}

impl<'de> Deserialize<'de> for Event {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Raw {
            #[serde(rename = "type")]
            type_name: String,
            timestamp: Timestamp,
            correlation_id: String,
            data: serde_json::Value,
        }
        let raw = Raw::deserialize(deserializer)?;
        let data = EventData::from_parts(&raw.type_name, raw.data).map_err(de::Error::custom)?;
        Ok(Event {
            timestamp: raw.timestamp,
            correlation_id: raw.correlation_id,
            data,
        })
    }
}

/// `session.ready` data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionReady {
    /// Idle limit in seconds; 0 means disabled (reference 300).
    pub session_idle_timeout_seconds: u64,
    /// Maximum session age in seconds; 0 means disabled (reference 3600).
    pub session_max_duration_seconds: u64,
    /// Longest accepted self-contained segment in seconds; nullable (written as `null`).
    pub max_segment_duration_seconds: Option<f64>,
    /// Smallest accepted binary frame (>= 1).
    pub min_segment_size_bytes: u64,
    /// Largest accepted binary frame (reference 33554432).
    pub max_segment_size_bytes: u64,
    /// What a config frame may set.
    pub supported_session_config_options: SupportedConfigOptions,
}

/// `supported_session_config_options` of `session.ready`.
///
/// `model` is always written: `null` on v1, the credential's selectable models
/// on v2. The three realtime entries are written only on the realtime endpoint,
/// each as the JSON type existing clients read it as: the instructions as a
/// *string* describing what is accepted (the official Python client types the
/// member `str` and refuses the whole envelope otherwise), the two enumerations
/// as arrays of their allowed values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SupportedConfigOptions {
    /// Include flags a config frame may name.
    pub include: Vec<IncludeFlag>,
    /// Selectable models (v2), `null` elsewhere.
    pub model: Option<Vec<Model>>,
    /// Realtime: what the free-text instructions field accepts, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub realtime_recommendation_instructions: Option<String>,
    /// Realtime: the allowed frequencies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub realtime_recommendation_frequency: Option<Vec<RecommendationFrequency>>,
    /// Realtime: the allowed analysis groups.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub analysis_groups: Option<Vec<AnalysisGroup>>,
}

/// `session.updated` data: the post-apply configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SessionUpdated {
    /// Stream endpoints.
    Stream {
        /// Active include flags, empty when none.
        include: Vec<IncludeFlag>,
        /// Current model; `null` on v1.
        model: Option<Model>,
    },
    /// The realtime endpoint.
    Realtime {
        /// Recommendation instructions; `null` when none.
        realtime_recommendation_instructions: Option<String>,
        /// Recommendation pacing.
        realtime_recommendation_frequency: RecommendationFrequency,
        /// Active analysis groups.
        analysis_groups: Vec<AnalysisGroup>,
    },
}

/// `signal.detected` and `signal.updated` data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignalEvent {
    /// Which signal.
    pub signal_type: SignalType,
    /// When this state applies (session seconds).
    pub start: Seconds,
    /// How likely.
    pub probability: Probability,
    /// Evidence-based explanation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rationale: Option<String>,
    /// Evidence source (v1 stream and realtime; omitted on v2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modality: Option<Vec<Modality>>,
}

/// `signal.ended` data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignalEnded {
    /// Which signal.
    pub signal_type: SignalType,
    /// When it stopped applying (session seconds).
    pub end: Seconds,
}

/// `engagement.updated` data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EngagementUpdated {
    /// The new level.
    pub state: EngagementLevel,
    /// When it applies from (session seconds).
    pub start: Seconds,
}

/// `conversation_quality.updated` data.
///
/// `timeline` holds exactly one entry, the just-closed period, and is present
/// whenever the timeline flag is set (the event description's rule).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConversationQualityUpdated {
    /// Cumulative over the session, when the overall flag is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overall: Option<QualityValues>,
    /// The just-closed period, when the timeline flag is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeline: Option<Vec<TimelineEntry>>,
}

/// `coverage.degraded` data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CoverageDegraded {
    /// Disjoint ascending ranges.
    pub ranges: Vec<TimeRange>,
    /// Always `video_gap`.
    pub reason: CoverageReason,
}

/// `coverage.dropped` data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CoverageDropped {
    /// The skipped ranges (not billed).
    pub ranges: Vec<TimeRange>,
}

/// `error` data. `segment` is nullable and always written; `seconds_remaining`
/// is written only on the `ih6006` shutdown warning.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ErrorEvent {
    /// The error code.
    pub code: ErrorCode,
    /// Human-readable explanation.
    pub message: String,
    /// Documentation URL of the code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
    /// Zero-based index of the caller's binary frame concerned, or `null`.
    pub segment: Option<u64>,
    /// Seconds until shutdown (`ih6006` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds_remaining: Option<u64>,
}

impl ErrorEvent {
    /// The one constructor of a stream's `error` event: `error`'s code and
    /// message, the code's documentation link under `docs_url`, and the
    /// caller's frame concerned (`None` when no frame is). Used by the session
    /// engine for every in-session error and by the server for a refused
    /// handshake, so the four ways a session can report an error spell it alike.
    pub fn new(error: &crate::error::ServiceError, docs_url: &str, segment: Option<u64>) -> Self {
        ErrorEvent {
            code: error.code,
            message: error.message().to_owned(),
            link: Some(error.code.link(docs_url)),
            segment,
            seconds_remaining: None,
        }
    }

    /// The `ih6006` shutdown warning: the server stops in `seconds`.
    pub fn shutdown_warning(seconds: u64, docs_url: &str) -> Self {
        let error = crate::error::ServiceError::with_message(
            ErrorCode::Ih6006,
            format!("the server shuts down in {seconds} s; reconnect after it"),
        );
        ErrorEvent {
            seconds_remaining: Some(seconds),
            ..ErrorEvent::new(&error, docs_url, None)
        }
    }
}

/// `session.closing` data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionClosing {
    /// The client waits at most this long for `session.ended`.
    pub max_drain_seconds: u64,
}

/// `session.ended` data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionEnded {
    /// Why the session ended.
    pub reason: SessionEndReason,
}

/// `realtime_recommendation.generated` data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RealtimeRecommendationGenerated {
    /// The recommendation.
    pub text: String,
    /// Start of the media period it covers.
    pub start: Seconds,
    /// End of the media period it covers.
    pub end: Seconds,
}

/// `transcript.generated` data: one segment of the server's transcript, final when sent
/// (fields not shown by the interface; this is the shape the official client parses, see
/// `docs/INTERFACE.md`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TranscriptGenerated {
    /// Start, seconds of session time.
    pub start: Seconds,
    /// End, seconds of session time.
    pub end: Seconds,
    /// What was said.
    pub text: String,
    /// The voice, numbered from 1 in order of first speech; 0 when unknown.
    pub speaker: u32,
}
