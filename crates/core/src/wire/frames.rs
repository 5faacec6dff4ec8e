//! Client-to-server text frames: classification, strict parsing and the
//! error each malformed frame earns.
//!
//! A text frame is classified by its `type` member: `session.close`,
//! `transcript.updated` (realtime only), or no `type` at all for a session
//! config frame. Unknown fields are rejected where the interface says so
//! (stream config, realtime config, `session.close`).

use super::enums::{AnalysisGroup, IncludeFlag, Model, RecommendationFrequency};
use super::resources::TranscriptSegment;
use crate::error::ErrorCode;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Longest accepted `realtime_recommendation_instructions`, in characters.
pub const MAX_INSTRUCTIONS_CHARS: usize = 4000;

/// What `session.ready` advertises for `realtime_recommendation_instructions`: a
/// human-readable description, since clients type that member as a string.
pub fn instructions_option_description() -> String {
    format!(
        "string, up to {MAX_INSTRUCTIONS_CHARS} characters; a non-empty value enables \
         recommendations, null or an empty string disables them"
    )
}

/// The WebSocket endpoint a frame arrived on; parsing rules differ per endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Endpoint {
    /// `WS /v1/stream/analyze`
    StreamV1,
    /// `WS /v2/stream/analyze`
    StreamV2,
    /// `WS /v0/realtime/analyze` (beta)
    Realtime,
}

impl Endpoint {
    /// The request path of the endpoint.
    pub const fn path(self) -> &'static str {
        match self {
            Endpoint::StreamV1 => "/v1/stream/analyze",
            Endpoint::StreamV2 => "/v2/stream/analyze",
            Endpoint::Realtime => "/v0/realtime/analyze",
        }
    }
}

/// A parsed and validated client text frame.
#[derive(Debug, Clone, PartialEq)]
pub enum ClientFrame {
    /// A stream session config frame (v1, v2).
    StreamConfig(StreamConfig),
    /// A realtime session config frame: the fields it names.
    RealtimeConfig(RealtimeConfigUpdate),
    /// `{"type": "session.close"}`
    SessionClose,
    /// A realtime transcript replacement.
    TranscriptUpdated(TranscriptUpdated),
}

/// A validated stream session config frame.
///
/// `include` holds the recognised CQI flags of the frame (unknown values and
/// `signals` are ignored, as the interface says); an omitted `include` is the
/// empty set, since each accepted frame fully replaces the active config.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StreamConfig {
    /// The CQI sections to emit from now on.
    pub include: Vec<IncludeFlag>,
    /// A model to switch to (v2 only); `None` keeps the current model.
    pub model: Option<Model>,
    /// Declares that binary frames are raw PCM (`inter-2-audio` only).
    pub audio_format: Option<AudioFormat>,
}

/// The raw-audio declaration of a stream config frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AudioFormat {
    /// Must be `pcm_s16le`.
    pub encoding: AudioEncoding,
    /// 16000 or 24000.
    pub sample_rate: u32,
    /// Must be 1.
    pub channels: u32,
}

/// Raw audio encodings accepted in `audio_format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum AudioEncoding {
    /// Signed 16-bit little-endian PCM.
    #[serde(rename = "pcm_s16le")]
    PcmS16le,
}

/// The realtime config in force: the merge of every accepted config frame
/// ([`RealtimeConfig::apply`]), starting from [`RealtimeConfig::default`].
#[derive(Debug, Clone, PartialEq)]
pub struct RealtimeConfig {
    /// Non-empty instructions enable recommendations; `None` disables them.
    pub realtime_recommendation_instructions: Option<String>,
    /// Recommendation pacing; default `medium` (every 20 s of analyzed media).
    pub realtime_recommendation_frequency: RecommendationFrequency,
    /// Active groups, at least one; default both.
    pub analysis_groups: Vec<AnalysisGroup>,
}

impl Default for RealtimeConfig {
    fn default() -> Self {
        RealtimeConfig {
            realtime_recommendation_instructions: None,
            realtime_recommendation_frequency: RecommendationFrequency::Medium,
            analysis_groups: vec![AnalysisGroup::Audio, AnalysisGroup::Visual],
        }
    }
}

impl RealtimeConfig {
    /// Applies one accepted config frame: the fields it names take their new value (the most
    /// recent wins), the fields it omits keep theirs. Existing clients send partial frames
    /// (the official Python client's `update_config(...)` sends only the arguments it was
    /// given), and a change of frequency must not silently drop the instructions.
    pub fn apply(&mut self, update: &RealtimeConfigUpdate) {
        if let Some(instructions) = &update.realtime_recommendation_instructions {
            self.realtime_recommendation_instructions = instructions.clone();
        }
        if let Some(frequency) = update.realtime_recommendation_frequency {
            self.realtime_recommendation_frequency = frequency;
        }
        if let Some(groups) = &update.analysis_groups {
            self.analysis_groups = groups.clone();
        }
    }

    /// This config with `update` applied.
    #[must_use]
    pub fn merged(mut self, update: &RealtimeConfigUpdate) -> RealtimeConfig {
        self.apply(update);
        self
    }
}

/// A validated realtime session config frame: `None` for a field the frame
/// omits (the current value stays). An explicit `null` is already resolved to
/// what it means: no instructions (as is an empty or blank string), frequency
/// `medium`, both analysis groups.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RealtimeConfigUpdate {
    /// `Some(None)` clears the instructions (which stops recommendations).
    pub realtime_recommendation_instructions: Option<Option<String>>,
    /// A new pacing.
    pub realtime_recommendation_frequency: Option<RecommendationFrequency>,
    /// New active groups (at least one).
    pub analysis_groups: Option<Vec<AnalysisGroup>>,
}

/// The `session.close` frame (no fields besides `type`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionClose {
    /// Always `session.close`.
    #[serde(rename = "type")]
    pub frame_type: String,
}

/// The realtime `transcript.updated` frame. Serde writes and requires the
/// `"type": "transcript.updated"` member, so a serialized value is a valid frame.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename = "transcript.updated")]
pub struct TranscriptUpdated {
    /// The whole transcript so far, in spoken order; replaces the stored one.
    pub transcript: Vec<TranscriptSegment>,
}

/// Why a text frame was refused. The variant decides the error code; whether
/// it ends the session is [`FrameError::is_fatal`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameError {
    /// Not JSON, or not a JSON object.
    Malformed(String),
    /// A `type` this endpoint does not accept.
    UnknownType(String),
    /// A config frame with an unknown field, a wrong type or a refused value.
    InvalidConfig(String),
    /// `session.close` with fields besides `type`.
    CloseWithExtraFields(Vec<String>),
    /// A `transcript.updated` frame that does not have the required shape.
    InvalidTranscript(String),
}

impl FrameError {
    /// The error code the frame earns: `ih4006` for an unparsable frame or an
    /// unknown `type`, `ih6001` for an invalid config frame (fatal on v1 only),
    /// `ih4005` for a `session.close` or `transcript.updated` of the wrong shape.
    pub fn code(&self) -> ErrorCode {
        match self {
            FrameError::Malformed(_) | FrameError::UnknownType(_) => ErrorCode::Ih4006,
            FrameError::InvalidConfig(_) => ErrorCode::Ih6001,
            FrameError::CloseWithExtraFields(_) | FrameError::InvalidTranscript(_) => {
                ErrorCode::Ih4005
            }
        }
    }

    /// Whether the frame ends the session: only an invalid config frame on the
    /// v1 stream, and never while the session drains after `session.close`.
    pub fn is_fatal(&self, endpoint: Endpoint, draining: bool) -> bool {
        !draining && endpoint == Endpoint::StreamV1 && matches!(self, FrameError::InvalidConfig(_))
    }
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::Malformed(detail) => write!(f, "text frame is not a JSON object: {detail}"),
            FrameError::UnknownType(t) => write!(f, "unknown message type `{t}`"),
            FrameError::InvalidConfig(detail) => write!(f, "invalid session config: {detail}"),
            FrameError::CloseWithExtraFields(fields) => write!(
                f,
                "session.close takes no fields besides `type`; got {}",
                fields.join(", ")
            ),
            FrameError::InvalidTranscript(detail) => {
                write!(f, "invalid transcript.updated: {detail}")
            }
        }
    }
}

impl std::error::Error for FrameError {}

/// The stream config frame as written, before validation.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStreamConfig {
    #[serde(default)]
    include: Option<Vec<serde_json::Value>>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    audio_format: Option<AudioFormat>,
}

/// The v1 stream config frame as written: `model` is not a field on v1.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStreamConfigV1 {
    #[serde(default)]
    include: Option<Vec<serde_json::Value>>,
    #[serde(default)]
    audio_format: Option<AudioFormat>,
}

/// The realtime config frame as written, before validation. The double
/// `Option` tells an omitted field from an explicit `null`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRealtimeConfig {
    #[serde(default, deserialize_with = "present")]
    realtime_recommendation_instructions: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    realtime_recommendation_frequency: Option<Option<RecommendationFrequency>>,
    #[serde(default, deserialize_with = "present")]
    analysis_groups: Option<Option<Vec<AnalysisGroup>>>,
}

/// Marks a field as present (even when `null`), for double-`Option` fields.
fn present<'de, D, T>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer).map(Some)
}

impl ClientFrame {
    /// Parses and validates one text frame received on `endpoint`.
    pub fn parse(text: &str, endpoint: Endpoint) -> Result<ClientFrame, FrameError> {
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| FrameError::Malformed(e.to_string()))?;
        let object = value
            .as_object()
            .ok_or_else(|| FrameError::Malformed("expected a JSON object".into()))?;
        match object.get("type") {
            None => parse_config(value, endpoint),
            Some(serde_json::Value::String(t)) if t == "session.close" => {
                let extra: Vec<String> = object.keys().filter(|k| *k != "type").cloned().collect();
                if extra.is_empty() {
                    Ok(ClientFrame::SessionClose)
                } else {
                    Err(FrameError::CloseWithExtraFields(extra))
                }
            }
            Some(serde_json::Value::String(t))
                if t == "transcript.updated" && endpoint == Endpoint::Realtime =>
            {
                parse_transcript(value)
            }
            Some(other) => Err(FrameError::UnknownType(match other {
                serde_json::Value::String(s) => s.clone(),
                v => v.to_string(),
            })),
        }
    }
}

fn parse_config(value: serde_json::Value, endpoint: Endpoint) -> Result<ClientFrame, FrameError> {
    let invalid = |e: serde_json::Error| FrameError::InvalidConfig(e.to_string());
    match endpoint {
        Endpoint::StreamV1 => {
            let raw: RawStreamConfigV1 = serde_json::from_value(value).map_err(invalid)?;
            if raw.audio_format.is_some() {
                return Err(FrameError::InvalidConfig(
                    "`audio_format` is accepted on the inter-2-audio model only (v2 stream)".into(),
                ));
            }
            Ok(ClientFrame::StreamConfig(StreamConfig {
                include: known_cqi_flags(raw.include),
                model: None,
                audio_format: None,
            }))
        }
        Endpoint::StreamV2 => {
            let raw: RawStreamConfig = serde_json::from_value(value).map_err(invalid)?;
            let model = match raw.model {
                None => None,
                Some(name) => Some(Model::parse(&name).ok_or_else(|| {
                    FrameError::InvalidConfig(format!(
                        "unknown model `{name}`; expected one of inter-2, inter-2-audio"
                    ))
                })?),
            };
            if let Some(format) = raw.audio_format {
                validate_audio_format(format)?;
            }
            Ok(ClientFrame::StreamConfig(StreamConfig {
                include: known_cqi_flags(raw.include),
                model,
                audio_format: raw.audio_format,
            }))
        }
        Endpoint::Realtime => {
            let raw: RawRealtimeConfig = serde_json::from_value(value).map_err(invalid)?;
            let defaults = RealtimeConfig::default();
            let instructions = raw
                .realtime_recommendation_instructions
                .map(|value| value.filter(|s| !s.trim().is_empty()));
            if let Some(Some(text)) = &instructions {
                if text.chars().count() > MAX_INSTRUCTIONS_CHARS {
                    return Err(FrameError::InvalidConfig(format!(
                        "realtime_recommendation_instructions is longer than {MAX_INSTRUCTIONS_CHARS} characters"
                    )));
                }
            }
            let analysis_groups = match raw.analysis_groups {
                None => None,
                Some(None) => Some(defaults.analysis_groups),
                Some(Some(groups)) if groups.is_empty() => {
                    return Err(FrameError::InvalidConfig(
                        "analysis_groups needs at least one of visual, audio".into(),
                    ))
                }
                Some(Some(mut groups)) => {
                    groups.sort();
                    groups.dedup();
                    Some(groups)
                }
            };
            Ok(ClientFrame::RealtimeConfig(RealtimeConfigUpdate {
                realtime_recommendation_instructions: instructions,
                realtime_recommendation_frequency: raw
                    .realtime_recommendation_frequency
                    .map(|f| f.unwrap_or(defaults.realtime_recommendation_frequency)),
                analysis_groups,
            }))
        }
    }
}

fn validate_audio_format(format: AudioFormat) -> Result<(), FrameError> {
    if !matches!(format.sample_rate, 16000 | 24000) {
        return Err(FrameError::InvalidConfig(format!(
            "audio_format.sample_rate must be 16000 or 24000, got {}",
            format.sample_rate
        )));
    }
    if format.channels != 1 {
        return Err(FrameError::InvalidConfig(format!(
            "audio_format.channels must be 1, got {}",
            format.channels
        )));
    }
    Ok(())
}

/// Keeps the recognised CQI flags in first-seen order, dropping duplicates,
/// unknown values and non-CQI flags (the interface ignores unknown values).
fn known_cqi_flags(values: Option<Vec<serde_json::Value>>) -> Vec<IncludeFlag> {
    let mut flags = Vec::new();
    for value in values.unwrap_or_default() {
        if let Some(flag) = value.as_str().and_then(IncludeFlag::parse) {
            if flag.is_cqi() && !flags.contains(&flag) {
                flags.push(flag);
            }
        }
    }
    flags
}

fn parse_transcript(value: serde_json::Value) -> Result<ClientFrame, FrameError> {
    #[derive(Deserialize)]
    struct Raw {
        transcript: Vec<TranscriptSegment>,
    }
    let raw: Raw =
        serde_json::from_value(value).map_err(|e| FrameError::InvalidTranscript(e.to_string()))?;
    if let Some(bad) = raw
        .transcript
        .iter()
        .find(|s| !(s.start.is_finite() && s.end.is_finite()) || s.end < s.start)
    {
        return Err(FrameError::InvalidTranscript(format!(
            "segment {:?} has an invalid span {}..{}",
            bad.text, bad.start, bad.end
        )));
    }
    Ok(ClientFrame::TranscriptUpdated(TranscriptUpdated {
        transcript: raw.transcript,
    }))
}
