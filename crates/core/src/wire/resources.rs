//! Resources of the interface: signals, upload results and jobs, the CQI block,
//! errors, transcripts and client tokens.

use super::enums::{Modality, Model, UploadJobStatus};
use super::timestamp::Timestamp;
use super::Seconds;
use crate::error::ErrorCode;
use attune_cqi::{Dimension, EngagementLevel, Probability, QualityValues, SignalType};
use serde::{Deserialize, Serialize};
use std::fmt;

/// A detected social signal over a span of media (`Signal`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Signal {
    /// Which signal.
    #[serde(rename = "type")]
    pub signal_type: SignalType,
    /// Start in seconds; in a v2 window, the window start.
    pub start: Seconds,
    /// End in seconds; in a v2 window, the window end.
    pub end: Seconds,
    /// How likely; may be absent on a merged whole-file entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probability: Option<Probability>,
    /// Short evidence-based explanation; may be absent on a merged entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rationale: Option<String>,
    /// Evidence source; optional (clients tolerate its absence).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modality: Option<Vec<Modality>>,
}

/// A time span `{start, end}` in seconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TimeRange {
    /// Start in seconds.
    pub start: Seconds,
    /// End in seconds.
    pub end: Seconds,
}

impl TimeRange {
    /// Length in seconds (0 for an inverted range).
    pub fn duration(&self) -> Seconds {
        (self.end - self.start).max(0.0)
    }
}

/// The v2 job envelope (`UploadJobResponse`) returned by both v2 upload routes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UploadJobResponse {
    /// Unguessable job id (32 lowercase hex characters).
    pub job_id: String,
    /// Current status.
    pub status: UploadJobStatus,
    /// The model submitted.
    pub model: Model,
    /// Submission time.
    pub created_at: Timestamp,
    /// One hour after submission; after it reads answer `ih4021`.
    pub expires_at: Timestamp,
    /// Path relative to the base URL: `/v2/upload/jobs/{job_id}`.
    pub status_url: String,
    /// Present only when `status` is `completed` (omitted otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<UploadJobResult>,
    /// Present only when `status` is `failed` (omitted otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorResponse>,
}

impl UploadJobResponse {
    /// The relative status URL of a job id.
    pub fn status_url_for(job_id: &str) -> String {
        format!("/v2/upload/jobs/{job_id}")
    }
}

/// The result of a completed v2 job (`UploadJobResult`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UploadJobResult {
    /// Length of the analyzed media.
    pub duration_seconds: Seconds,
    /// Length of each analysis window.
    pub window_seconds: Seconds,
    /// Windows in file order.
    pub windows: Vec<UploadJobWindow>,
    /// Present only when a CQI include flag was sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation_quality: Option<ConversationQuality>,
    /// Present only when `include[]` had `signals`; empty when nothing was detected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signals: Option<Vec<Signal>>,
}

/// One analysis window of a v2 job (`UploadJobWindow`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UploadJobWindow {
    /// Zero-based position.
    pub index: u32,
    /// Window start.
    pub start_seconds: Seconds,
    /// Window end.
    pub end_seconds: Seconds,
    /// The window's engagement state.
    pub engagement_status: EngagementLevel,
    /// Signals detected in the window, each spanning the window.
    pub signals: Vec<Signal>,
}

/// The CQI block (`ConversationQuality`): only the requested sections appear.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ConversationQuality {
    /// Present when the overall section was requested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overall: Option<QualityValues>,
    /// Present when the timeline section was requested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeline: Option<Vec<TimelineEntry>>,
}

/// One period of the CQI timeline: `{start, end, values}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimelineEntry {
    /// Period start.
    pub start: Seconds,
    /// Period end.
    pub end: Seconds,
    /// Scores over the period.
    pub values: QualityValues,
}

/// The body of every HTTP error (`ErrorResponse`), also carried by a failed job.
///
/// `correlation_id`, `link` and `message` are nullable in the interface and are
/// written as `null` when absent; `reset_time` is an extra field written only
/// for `ih3004` (daily quota).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorResponse {
    /// The code, such as `ih4001`.
    pub error_id: ErrorCode,
    /// Id of the request or connection (nullable).
    pub correlation_id: Option<String>,
    /// `{docs_url}/api-reference/error-handling#<anchor>` (nullable).
    pub link: Option<String>,
    /// Human-readable explanation (nullable).
    pub message: Option<String>,
    /// When the daily quota resets (`ih3004` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reset_time: Option<Timestamp>,
}

/// A contiguous span with one engagement state (v1 `engagement_state` item).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EngagementSpan {
    /// Span start.
    pub start: Seconds,
    /// Span end.
    pub end: Seconds,
    /// The engagement state over the span.
    pub state: EngagementLevel,
}

/// The v1 feedback object, discriminated on `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Feedback {
    /// Advice was generated.
    Feedback {
        /// The advice.
        message: String,
        /// The goal dimensions the advice addresses.
        active_dimensions: Vec<Dimension>,
        /// The signal the advice rests on.
        primary_signal: SignalType,
    },
    /// No advice was generated.
    NoFeedback {
        /// Why not.
        reason: String,
    },
}

/// The v1 upload result (`AnalysisResult`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnalysisResult {
    /// Whole-file signals with start, end, probability, rationale and modality.
    pub signals: Vec<Signal>,
    /// Contiguous engagement spans covering the file.
    pub engagement_state: Vec<EngagementSpan>,
    /// Only the sections requested by include flags; omitted when none were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation_quality: Option<ConversationQuality>,
    /// The feedback object (field name `feedback`, as existing clients expect).
    pub feedback: Feedback,
}

/// One realtime transcript segment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TranscriptSegment {
    /// Segment start in seconds.
    pub start: Seconds,
    /// Segment end in seconds.
    pub end: Seconds,
    /// What was said.
    pub text: String,
    /// Zero-based speaker index.
    pub speaker: u32,
}

/// Writes `<redacted>` for a present secret so `Debug` never leaks one.
struct Redacted<'a>(&'a Option<String>);

impl fmt::Debug for Redacted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(_) => f.write_str("Some(<redacted>)"),
            None => f.write_str("None"),
        }
    }
}

/// `POST /v1/client_tokens` request body (shape from existing clients; the
/// interface leaves it open). Unknown fields are ignored. `Debug` redacts the key.
#[derive(Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ClientTokenRequest {
    /// The minting API key, for clients that send it in the body instead of
    /// `Authorization: Bearer`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key: Option<String>,
    /// Requested scopes; default `service.stream`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scopes: Option<Vec<String>>,
    /// Lifetime in seconds; default 300, clamped to 60..=3600.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_in: Option<u64>,
    /// One session's maximum duration in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_duration_seconds: Option<u64>,
    /// Cumulative byte cap per session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_bytes: Option<u64>,
    /// Concurrent sessions on the token; default 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_concurrent: Option<u32>,
    /// Video budget in seconds shared across upload, stream and realtime.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_video_seconds: Option<f64>,
    /// Browser origins allowed to use the token; omitted means any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_origins: Option<Vec<String>>,
}

impl fmt::Debug for ClientTokenRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientTokenRequest")
            .field("api_key", &Redacted(&self.api_key))
            .field("scopes", &self.scopes)
            .field("expires_in", &self.expires_in)
            .field("max_duration_seconds", &self.max_duration_seconds)
            .field("max_bytes", &self.max_bytes)
            .field("max_concurrent", &self.max_concurrent)
            .field("max_video_seconds", &self.max_video_seconds)
            .field("allowed_origins", &self.allowed_origins)
            .finish()
    }
}

/// `POST /v1/client_tokens` response: the token and its effective caps under
/// the request's names. `Debug` redacts the token.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
pub struct ClientTokenResponse {
    /// The token to present as a credential.
    pub access_token: String,
    /// Always `Bearer`.
    pub token_type: String,
    /// Effective lifetime in seconds.
    pub expires_in: u64,
    /// Granted scopes, space-separated.
    pub scope: String,
    /// Effective per-session duration cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_duration_seconds: Option<u64>,
    /// Effective per-session byte cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_bytes: Option<u64>,
    /// Effective concurrent-session cap.
    pub max_concurrent: u32,
    /// Effective video budget in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_video_seconds: Option<f64>,
    /// Allowed browser origins; omitted means any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_origins: Option<Vec<String>>,
}

impl fmt::Debug for ClientTokenResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientTokenResponse")
            .field("access_token", &"<redacted>")
            .field("token_type", &self.token_type)
            .field("expires_in", &self.expires_in)
            .field("scope", &self.scope)
            .field("max_duration_seconds", &self.max_duration_seconds)
            .field("max_bytes", &self.max_bytes)
            .field("max_concurrent", &self.max_concurrent)
            .field("max_video_seconds", &self.max_video_seconds)
            .field("allowed_origins", &self.allowed_origins)
            .finish()
    }
}

/// `POST /v1/client_tokens/revoke` request body. `Debug` redacts both secrets.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
pub struct ClientTokenRevokeRequest {
    /// The minting API key, when not sent as `Authorization: Bearer`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key: Option<String>,
    /// The token to revoke.
    pub token: String,
}

impl fmt::Debug for ClientTokenRevokeRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientTokenRevokeRequest")
            .field("api_key", &Redacted(&self.api_key))
            .field("token", &"<redacted>")
            .finish()
    }
}
