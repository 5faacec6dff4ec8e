//! Golden JSON for every wire type: each value is written exactly as
//! `interface.md` spells it and reads back unchanged, and client frames are
//! accepted or refused as the interface says.

use super::*;
use crate::error::ErrorCode;
use pretty_assertions::assert_eq;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::fmt::Debug;

/// Asserts that `value` serializes to exactly `expected` and that both the
/// golden JSON and the serialized text read back as `value`.
fn golden<T>(value: &T, expected: Value)
where
    T: Serialize + DeserializeOwned + PartialEq + Debug,
{
    assert_eq!(serde_json::to_value(value).unwrap(), expected);
    let from_golden: T = serde_json::from_value(expected).unwrap();
    assert_eq!(&from_golden, value, "golden JSON reads back differently");
    let text = serde_json::to_string(value).unwrap();
    let from_text: T = serde_json::from_str(&text).unwrap();
    assert_eq!(&from_text, value, "serialized text reads back differently");
}

/// Asserts that an enum has exactly the interface's values, each written and
/// read with the interface's spelling.
fn spelled<T>(all: &[T], spec: &[&str])
where
    T: Serialize + DeserializeOwned + PartialEq + Debug + Copy,
{
    assert_eq!(all.len(), spec.len(), "value count of {all:?}");
    let mut seen = Vec::new();
    for text in spec {
        let value: T = serde_json::from_value(json!(text))
            .unwrap_or_else(|e| panic!("`{text}` is not accepted: {e}"));
        assert_eq!(serde_json::to_value(value).unwrap(), json!(text));
        assert!(
            !seen.contains(&value),
            "`{text}` reads as a value seen before"
        );
        seen.push(value);
    }
    assert!(
        all.iter().all(|v| seen.contains(v)),
        "{all:?} has a value the spec lacks"
    );
}

fn at() -> Timestamp {
    // 2026-11-23T10:33:20.123Z
    Timestamp::from_unix_millis(1_795_430_000_123).unwrap()
}

fn later() -> Timestamp {
    at().plus_seconds(3600)
}

fn values(q: f64, c: f64, a: f64, e: f64, r: f64, l: f64) -> QualityValues {
    QualityValues {
        quality_index: q,
        clarity: c,
        authority: a,
        energy: e,
        rapport: r,
        learning: l,
    }
}

// ---------------------------------------------------------------- enumerations

#[test]
fn shared_enumerations_use_the_spec_spellings() {
    spelled(
        SignalType::ALL,
        &[
            "agreement",
            "confidence",
            "confusion",
            "disagreement",
            "disengagement",
            "engagement",
            "frustration",
            "hesitation",
            "interest",
            "skepticism",
            "stress",
            "tension",
            "uncertainty",
        ],
    );
    spelled(Probability::ALL, &["high", "medium", "low"]);
    spelled(EngagementLevel::ALL, &["engaged", "disengaged", "neutral"]);
    spelled(Model::ALL, &["inter-2", "inter-2-audio", "inter-2-deep"]);
    spelled(
        IncludeFlag::ALL,
        &[
            "conversation_quality_overall",
            "conversation_quality_timeline",
            "signals",
        ],
    );
    spelled(
        UploadJobStatus::ALL,
        &["queued", "running", "completed", "failed"],
    );
    spelled(
        Dimension::ALL,
        &["clarity", "authority", "energy", "rapport", "learning"],
    );
    spelled(RecommendationFrequency::ALL, &["high", "medium", "low"]);
    spelled(AnalysisGroup::ALL, &["visual", "audio"]);
}

#[test]
fn other_wire_enumerations_use_the_spec_spellings() {
    spelled(Modality::ALL, &["video", "audio", "visual"]);
    spelled(CoverageReason::ALL, &["video_gap"]);
    spelled(SessionEndReason::ALL, &["client_shutdown"]);
    spelled(&[AudioEncoding::PcmS16le], &["pcm_s16le"]);
}

#[test]
fn enumerations_refuse_other_spellings() {
    for text in ["Agreement", "AGREEMENT", "agree", ""] {
        assert!(serde_json::from_value::<SignalType>(json!(text)).is_err());
    }
    for text in ["inter_2", "Inter-2", "inter-3", "inter2"] {
        assert!(serde_json::from_value::<Model>(json!(text)).is_err());
    }
    assert!(serde_json::from_value::<Probability>(json!("very_high")).is_err());
    assert!(serde_json::from_value::<EngagementLevel>(json!("engagement")).is_err());
    assert!(serde_json::from_value::<IncludeFlag>(json!("conversation_quality")).is_err());
    assert!(serde_json::from_value::<UploadJobStatus>(json!("done")).is_err());
    assert!(serde_json::from_value::<AnalysisGroup>(json!("video")).is_err());
}

// ------------------------------------------------------------------- resources

fn full_signal() -> Signal {
    Signal {
        signal_type: SignalType::Interest,
        start: 5.0,
        end: 10.0,
        probability: Some(Probability::High),
        rationale: Some("Leans in and asks follow-up questions.".into()),
        modality: Some(vec![Modality::Video]),
    }
}

#[test]
fn signal_golden() {
    golden(
        &full_signal(),
        json!({
            "type": "interest",
            "start": 5.0,
            "end": 10.0,
            "probability": "high",
            "rationale": "Leans in and asks follow-up questions.",
            "modality": ["video"]
        }),
    );
}

#[test]
fn merged_signal_without_probability_rationale_or_modality_omits_them() {
    let merged = Signal {
        signal_type: SignalType::Tension,
        start: 0.0,
        end: 15.0,
        probability: None,
        rationale: None,
        modality: None,
    };
    golden(
        &merged,
        json!({"type": "tension", "start": 0.0, "end": 15.0}),
    );
    // A null is not how absence is written, but a reader tolerates it.
    let with_nulls: Signal = serde_json::from_value(json!({
        "type": "tension", "start": 0.0, "end": 15.0,
        "probability": null, "rationale": null, "modality": null
    }))
    .unwrap();
    assert_eq!(with_nulls, merged);
}

#[test]
fn signal_requires_type_start_and_end() {
    for missing in ["type", "start", "end"] {
        let mut value = json!({"type": "stress", "start": 0.0, "end": 5.0});
        value.as_object_mut().unwrap().remove(missing);
        assert!(
            serde_json::from_value::<Signal>(value).is_err(),
            "accepted without `{missing}`"
        );
    }
}

#[test]
fn time_range_and_transcript_segment_golden() {
    golden(
        &TimeRange {
            start: 12.5,
            end: 20.0,
        },
        json!({"start": 12.5, "end": 20.0}),
    );
    golden(
        &TranscriptSegment {
            start: 0.0,
            end: 2.4,
            text: "How did the pilot go?".into(),
            speaker: 1,
        },
        json!({"start": 0.0, "end": 2.4, "text": "How did the pilot go?", "speaker": 1}),
    );
}

fn window(index: u32, state: EngagementLevel, signals: Vec<Signal>) -> UploadJobWindow {
    let start = f64::from(index) * 5.0;
    UploadJobWindow {
        index,
        start_seconds: start,
        end_seconds: start + 5.0,
        engagement_status: state,
        signals,
    }
}

#[test]
fn upload_job_window_golden() {
    golden(
        &window(1, EngagementLevel::Engaged, vec![full_signal()]),
        json!({
            "index": 1,
            "start_seconds": 5.0,
            "end_seconds": 10.0,
            "engagement_status": "engaged",
            "signals": [{
                "type": "interest",
                "start": 5.0,
                "end": 10.0,
                "probability": "high",
                "rationale": "Leans in and asks follow-up questions.",
                "modality": ["video"]
            }]
        }),
    );
    golden(
        &window(0, EngagementLevel::Neutral, vec![]),
        json!({
            "index": 0,
            "start_seconds": 0.0,
            "end_seconds": 5.0,
            "engagement_status": "neutral",
            "signals": []
        }),
    );
}

#[test]
fn quality_values_are_whole_numbers_and_an_exact_mean() {
    golden(
        &values(72.0, 67.0, 68.0, 80.0, 75.0, 70.0),
        json!({
            "quality_index": 72, "clarity": 67, "authority": 68,
            "energy": 80, "rapport": 75, "learning": 70
        }),
    );
    golden(
        &values(72.2, 67.0, 68.0, 80.0, 76.0, 70.0),
        json!({
            "quality_index": 72.2, "clarity": 67, "authority": 68,
            "energy": 80, "rapport": 76, "learning": 70
        }),
    );
}

#[test]
fn conversation_quality_has_only_requested_sections() {
    golden(
        &ConversationQuality {
            overall: Some(QualityValues::NEUTRAL),
            timeline: None,
        },
        json!({"overall": {
            "quality_index": 50, "clarity": 50, "authority": 50,
            "energy": 50, "rapport": 50, "learning": 50
        }}),
    );
    golden(
        &ConversationQuality {
            overall: None,
            timeline: Some(vec![TimelineEntry {
                start: 0.0,
                end: 30.0,
                values: values(60.0, 60.0, 60.0, 60.0, 60.0, 60.0),
            }]),
        },
        json!({"timeline": [{
            "start": 0.0, "end": 30.0,
            "values": {
                "quality_index": 60, "clarity": 60, "authority": 60,
                "energy": 60, "rapport": 60, "learning": 60
            }
        }]}),
    );
    golden(&ConversationQuality::default(), json!({}));
}

fn completed_result() -> UploadJobResult {
    UploadJobResult {
        duration_seconds: 10.0,
        window_seconds: 5.0,
        windows: vec![
            window(0, EngagementLevel::Neutral, vec![]),
            window(1, EngagementLevel::Engaged, vec![full_signal()]),
        ],
        conversation_quality: Some(ConversationQuality {
            overall: Some(values(72.0, 67.0, 68.0, 80.0, 75.0, 70.0)),
            timeline: None,
        }),
        signals: Some(vec![full_signal()]),
    }
}

fn completed_result_json() -> Value {
    json!({
        "duration_seconds": 10.0,
        "window_seconds": 5.0,
        "windows": [
            {
                "index": 0, "start_seconds": 0.0, "end_seconds": 5.0,
                "engagement_status": "neutral", "signals": []
            },
            {
                "index": 1, "start_seconds": 5.0, "end_seconds": 10.0,
                "engagement_status": "engaged",
                "signals": [{
                    "type": "interest", "start": 5.0, "end": 10.0, "probability": "high",
                    "rationale": "Leans in and asks follow-up questions.", "modality": ["video"]
                }]
            }
        ],
        "conversation_quality": {"overall": {
            "quality_index": 72, "clarity": 67, "authority": 68,
            "energy": 80, "rapport": 75, "learning": 70
        }},
        "signals": [{
            "type": "interest", "start": 5.0, "end": 10.0, "probability": "high",
            "rationale": "Leans in and asks follow-up questions.", "modality": ["video"]
        }]
    })
}

#[test]
fn upload_job_result_golden() {
    golden(&completed_result(), completed_result_json());
}

#[test]
fn upload_job_result_omits_unrequested_sections_and_keeps_empty_signals() {
    let bare = UploadJobResult {
        duration_seconds: 4.2,
        window_seconds: 5.0,
        windows: vec![UploadJobWindow {
            end_seconds: 4.2,
            ..window(0, EngagementLevel::Disengaged, vec![])
        }],
        conversation_quality: None,
        signals: None,
    };
    golden(
        &bare,
        json!({
            "duration_seconds": 4.2,
            "window_seconds": 5.0,
            "windows": [{
                "index": 0, "start_seconds": 0.0, "end_seconds": 4.2,
                "engagement_status": "disengaged", "signals": []
            }]
        }),
    );
    let nothing_detected = UploadJobResult {
        signals: Some(vec![]),
        ..bare
    };
    assert_eq!(
        serde_json::to_value(&nothing_detected).unwrap()["signals"],
        json!([])
    );
}

const JOB_ID: &str = "0f8e2a6c4b1d49e7a3c5d7f9b2e4a6c8";

fn job(status: UploadJobStatus) -> UploadJobResponse {
    UploadJobResponse {
        job_id: JOB_ID.into(),
        status,
        model: Model::Inter2,
        created_at: at(),
        expires_at: later(),
        status_url: UploadJobResponse::status_url_for(JOB_ID),
        result: None,
        error: None,
    }
}

fn job_json(status: &str) -> Value {
    json!({
        "job_id": JOB_ID,
        "status": status,
        "model": "inter-2",
        "created_at": "2026-11-23T10:33:20.123Z",
        "expires_at": "2026-11-23T11:33:20.123Z",
        "status_url": "/v2/upload/jobs/0f8e2a6c4b1d49e7a3c5d7f9b2e4a6c8"
    })
}

#[test]
fn queued_and_running_jobs_omit_result_and_error() {
    golden(&job(UploadJobStatus::Queued), job_json("queued"));
    golden(&job(UploadJobStatus::Running), job_json("running"));
}

#[test]
fn completed_job_carries_the_result() {
    let completed = UploadJobResponse {
        model: Model::Inter2Audio,
        result: Some(completed_result()),
        ..job(UploadJobStatus::Completed)
    };
    let mut expected = job_json("completed");
    expected["model"] = json!("inter-2-audio");
    expected["result"] = completed_result_json();
    golden(&completed, expected);
}

#[test]
fn failed_job_carries_the_error_body() {
    let failed = UploadJobResponse {
        error: Some(ErrorResponse {
            error_id: ErrorCode::Ih1004,
            correlation_id: Some("req-7d1c".into()),
            link: Some(
                "https://docs.example/api-reference/error-handling#ih1004-job-interrupted".into(),
            ),
            message: Some("The job was interrupted.".into()),
            reset_time: None,
        }),
        ..job(UploadJobStatus::Failed)
    };
    let mut expected = job_json("failed");
    expected["error"] = json!({
        "error_id": "ih1004",
        "correlation_id": "req-7d1c",
        "link": "https://docs.example/api-reference/error-handling#ih1004-job-interrupted",
        "message": "The job was interrupted."
    });
    golden(&failed, expected);
}

#[test]
fn error_response_writes_absent_nullable_fields_as_null() {
    golden(
        &ErrorResponse {
            error_id: ErrorCode::Ih4001,
            correlation_id: None,
            link: None,
            message: None,
            reset_time: None,
        },
        json!({"error_id": "ih4001", "correlation_id": null, "link": null, "message": null}),
    );
    golden(
        &ErrorResponse {
            error_id: ErrorCode::Ih3004,
            correlation_id: Some("req-1".into()),
            link: None,
            message: Some("Daily quota exceeded.".into()),
            reset_time: Some(later()),
        },
        json!({
            "error_id": "ih3004", "correlation_id": "req-1", "link": null,
            "message": "Daily quota exceeded.", "reset_time": "2026-11-23T11:33:20.123Z"
        }),
    );
    assert!(serde_json::from_value::<ErrorResponse>(json!({"error_id": "ih9999"})).is_err());
}

#[test]
fn service_error_body_golden() {
    let body = crate::ServiceError::with_message(ErrorCode::Ih4001, "No file was uploaded.")
        .to_response("req-42", "https://docs.example/");
    golden(
        &body,
        json!({
            "error_id": "ih4001",
            "correlation_id": "req-42",
            "link": "https://docs.example/api-reference/error-handling#ih4001-missing-file",
            "message": "No file was uploaded."
        }),
    );
}

#[test]
fn v1_analysis_result_golden() {
    let result = AnalysisResult {
        signals: vec![Signal {
            signal_type: SignalType::Confusion,
            start: 0.0,
            end: 10.0,
            probability: Some(Probability::Medium),
            rationale: Some("Asks for the figures twice.".into()),
            modality: Some(vec![Modality::Video]),
        }],
        engagement_state: vec![
            EngagementSpan {
                start: 0.0,
                end: 10.0,
                state: EngagementLevel::Engaged,
            },
            EngagementSpan {
                start: 10.0,
                end: 12.5,
                state: EngagementLevel::Disengaged,
            },
        ],
        conversation_quality: None,
        feedback: Feedback::Feedback {
            message: "Pause after key figures to let them land.".into(),
            active_dimensions: vec![Dimension::Clarity, Dimension::Rapport],
            primary_signal: SignalType::Confusion,
        },
    };
    golden(
        &result,
        json!({
            "signals": [{
                "type": "confusion", "start": 0.0, "end": 10.0, "probability": "medium",
                "rationale": "Asks for the figures twice.", "modality": ["video"]
            }],
            "engagement_state": [
                {"start": 0.0, "end": 10.0, "state": "engaged"},
                {"start": 10.0, "end": 12.5, "state": "disengaged"}
            ],
            "feedback": {
                "type": "feedback",
                "message": "Pause after key figures to let them land.",
                "active_dimensions": ["clarity", "rapport"],
                "primary_signal": "confusion"
            }
        }),
    );
    let quiet = AnalysisResult {
        signals: vec![],
        engagement_state: vec![],
        conversation_quality: Some(ConversationQuality {
            overall: Some(QualityValues::NEUTRAL),
            timeline: None,
        }),
        feedback: Feedback::NoFeedback {
            reason: "no goal dimensions or conversation context supplied".into(),
        },
    };
    golden(
        &quiet,
        json!({
            "signals": [],
            "engagement_state": [],
            "conversation_quality": {"overall": {
                "quality_index": 50, "clarity": 50, "authority": 50,
                "energy": 50, "rapport": 50, "learning": 50
            }},
            "feedback": {
                "type": "no_feedback",
                "reason": "no goal dimensions or conversation context supplied"
            }
        }),
    );
}

#[test]
fn client_token_bodies_golden() {
    golden(
        &ClientTokenRequest {
            api_key: Some("key-secret".into()),
            scopes: Some(vec!["service.stream".into()]),
            expires_in: Some(600),
            max_duration_seconds: Some(900),
            max_bytes: Some(50_000_000),
            max_concurrent: Some(2),
            max_video_seconds: Some(1800.0),
            allowed_origins: Some(vec!["https://app.example".into()]),
        },
        json!({
            "api_key": "key-secret",
            "scopes": ["service.stream"],
            "expires_in": 600,
            "max_duration_seconds": 900,
            "max_bytes": 50_000_000,
            "max_concurrent": 2,
            "max_video_seconds": 1800.0,
            "allowed_origins": ["https://app.example"]
        }),
    );
    golden(&ClientTokenRequest::default(), json!({}));
    golden(
        &ClientTokenResponse {
            access_token: "tok-secret".into(),
            token_type: "Bearer".into(),
            expires_in: 300,
            scope: "service.stream service.upload".into(),
            max_duration_seconds: None,
            max_bytes: Some(1_000_000),
            max_concurrent: 1,
            max_video_seconds: None,
            allowed_origins: None,
        },
        json!({
            "access_token": "tok-secret",
            "token_type": "Bearer",
            "expires_in": 300,
            "scope": "service.stream service.upload",
            "max_bytes": 1_000_000,
            "max_concurrent": 1
        }),
    );
    golden(
        &ClientTokenRevokeRequest {
            api_key: Some("key-secret".into()),
            token: "tok-secret".into(),
        },
        json!({"api_key": "key-secret", "token": "tok-secret"}),
    );
}

// ---------------------------------------------------------------------- events

fn envelope(data: EventData) -> Event {
    Event {
        timestamp: at(),
        correlation_id: "conn-5f2a".into(),
        data,
    }
}

fn envelope_json(type_name: &str, data: Value) -> Value {
    json!({
        "type": type_name,
        "timestamp": "2026-11-23T10:33:20.123Z",
        "correlation_id": "conn-5f2a",
        "data": data
    })
}

/// One golden envelope per variant of every event type of the spec's Events
/// table (several for types whose shape differs per endpoint).
fn golden_events() -> Vec<(Event, Value)> {
    let ready_v2 = SessionReady {
        session_idle_timeout_seconds: 300,
        session_max_duration_seconds: 3600,
        max_segment_duration_seconds: None,
        min_segment_size_bytes: 1,
        max_segment_size_bytes: 33_554_432,
        supported_session_config_options: SupportedConfigOptions {
            include: vec![
                IncludeFlag::ConversationQualityOverall,
                IncludeFlag::ConversationQualityTimeline,
            ],
            model: Some(vec![Model::Inter2, Model::Inter2Audio]),
            realtime_recommendation_instructions: None,
            realtime_recommendation_frequency: None,
            analysis_groups: None,
        },
    };
    let ready_v1 = SessionReady {
        max_segment_duration_seconds: Some(30.0),
        supported_session_config_options: SupportedConfigOptions {
            model: None,
            ..ready_v2.supported_session_config_options.clone()
        },
        ..ready_v2.clone()
    };
    let ready_realtime = SessionReady {
        session_idle_timeout_seconds: 0,
        session_max_duration_seconds: 0,
        supported_session_config_options: SupportedConfigOptions {
            include: vec![],
            model: None,
            realtime_recommendation_instructions: Some(
                "string, up to 4000 characters; a non-empty value enables recommendations, null \
                 or an empty string disables them"
                    .into(),
            ),
            realtime_recommendation_frequency: Some(RecommendationFrequency::ALL.to_vec()),
            analysis_groups: Some(vec![AnalysisGroup::Visual, AnalysisGroup::Audio]),
        },
        ..ready_v2.clone()
    };
    let detected_v1 = SignalEvent {
        signal_type: SignalType::Agreement,
        start: 10.0,
        probability: Probability::Medium,
        rationale: Some("Nods while the other speaks.".into()),
        modality: Some(vec![Modality::Video]),
    };
    let detected_v2 = SignalEvent {
        modality: None,
        ..detected_v1.clone()
    };
    let updated_realtime = SignalEvent {
        signal_type: SignalType::Stress,
        start: 25.0,
        probability: Probability::High,
        rationale: None,
        modality: Some(vec![Modality::Audio, Modality::Visual]),
    };
    let timeline_entry = TimelineEntry {
        start: 30.0,
        end: 60.0,
        values: QualityValues::NEUTRAL,
    };
    let neutral = json!({
        "quality_index": 50, "clarity": 50, "authority": 50,
        "energy": 50, "rapport": 50, "learning": 50
    });

    vec![
        (
            envelope(EventData::SessionReady(ready_v2)),
            envelope_json(
                "session.ready",
                json!({
                    "session_idle_timeout_seconds": 300,
                    "session_max_duration_seconds": 3600,
                    "max_segment_duration_seconds": null,
                    "min_segment_size_bytes": 1,
                    "max_segment_size_bytes": 33554432,
                    "supported_session_config_options": {
                        "include": ["conversation_quality_overall", "conversation_quality_timeline"],
                        "model": ["inter-2", "inter-2-audio"]
                    }
                }),
            ),
        ),
        (
            envelope(EventData::SessionReady(ready_v1)),
            envelope_json(
                "session.ready",
                json!({
                    "session_idle_timeout_seconds": 300,
                    "session_max_duration_seconds": 3600,
                    "max_segment_duration_seconds": 30.0,
                    "min_segment_size_bytes": 1,
                    "max_segment_size_bytes": 33554432,
                    "supported_session_config_options": {
                        "include": ["conversation_quality_overall", "conversation_quality_timeline"],
                        "model": null
                    }
                }),
            ),
        ),
        (
            envelope(EventData::SessionReady(ready_realtime)),
            envelope_json(
                "session.ready",
                json!({
                    "session_idle_timeout_seconds": 0,
                    "session_max_duration_seconds": 0,
                    "max_segment_duration_seconds": null,
                    "min_segment_size_bytes": 1,
                    "max_segment_size_bytes": 33554432,
                    "supported_session_config_options": {
                        "include": [],
                        "model": null,
                        "realtime_recommendation_instructions": "string, up to 4000 characters; a non-empty value enables recommendations, null or an empty string disables them",
                        "realtime_recommendation_frequency": ["high", "medium", "low"],
                        "analysis_groups": ["visual", "audio"]
                    }
                }),
            ),
        ),
        (
            envelope(EventData::SessionUpdated(SessionUpdated::Stream {
                include: vec![],
                model: None,
            })),
            envelope_json("session.updated", json!({"include": [], "model": null})),
        ),
        (
            envelope(EventData::SessionUpdated(SessionUpdated::Stream {
                include: vec![IncludeFlag::ConversationQualityTimeline],
                model: Some(Model::Inter2Audio),
            })),
            envelope_json(
                "session.updated",
                json!({"include": ["conversation_quality_timeline"], "model": "inter-2-audio"}),
            ),
        ),
        (
            envelope(EventData::SessionUpdated(SessionUpdated::Realtime {
                realtime_recommendation_instructions: None,
                realtime_recommendation_frequency: RecommendationFrequency::Medium,
                analysis_groups: vec![AnalysisGroup::Audio, AnalysisGroup::Visual],
            })),
            envelope_json(
                "session.updated",
                json!({
                    "realtime_recommendation_instructions": null,
                    "realtime_recommendation_frequency": "medium",
                    "analysis_groups": ["audio", "visual"]
                }),
            ),
        ),
        (
            envelope(EventData::SessionUpdated(SessionUpdated::Realtime {
                realtime_recommendation_instructions: Some("Coach the seller.".into()),
                realtime_recommendation_frequency: RecommendationFrequency::High,
                analysis_groups: vec![AnalysisGroup::Visual],
            })),
            envelope_json(
                "session.updated",
                json!({
                    "realtime_recommendation_instructions": "Coach the seller.",
                    "realtime_recommendation_frequency": "high",
                    "analysis_groups": ["visual"]
                }),
            ),
        ),
        (
            envelope(EventData::SignalDetected(detected_v1)),
            envelope_json(
                "signal.detected",
                json!({
                    "signal_type": "agreement", "start": 10.0, "probability": "medium",
                    "rationale": "Nods while the other speaks.", "modality": ["video"]
                }),
            ),
        ),
        (
            envelope(EventData::SignalDetected(detected_v2.clone())),
            envelope_json(
                "signal.detected",
                json!({
                    "signal_type": "agreement", "start": 10.0, "probability": "medium",
                    "rationale": "Nods while the other speaks."
                }),
            ),
        ),
        (
            envelope(EventData::SignalUpdated(detected_v2)),
            envelope_json(
                "signal.updated",
                json!({
                    "signal_type": "agreement", "start": 10.0, "probability": "medium",
                    "rationale": "Nods while the other speaks."
                }),
            ),
        ),
        (
            envelope(EventData::SignalUpdated(updated_realtime)),
            envelope_json(
                "signal.updated",
                json!({
                    "signal_type": "stress", "start": 25.0, "probability": "high",
                    "modality": ["audio", "visual"]
                }),
            ),
        ),
        (
            envelope(EventData::SignalEnded(SignalEnded {
                signal_type: SignalType::Agreement,
                end: 20.0,
            })),
            envelope_json(
                "signal.ended",
                json!({"signal_type": "agreement", "end": 20.0}),
            ),
        ),
        (
            envelope(EventData::EngagementUpdated(EngagementUpdated {
                state: EngagementLevel::Disengaged,
                start: 15.0,
            })),
            envelope_json(
                "engagement.updated",
                json!({"state": "disengaged", "start": 15.0}),
            ),
        ),
        (
            envelope(EventData::ConversationQualityUpdated(
                ConversationQualityUpdated {
                    overall: Some(QualityValues::NEUTRAL),
                    timeline: Some(vec![timeline_entry]),
                },
            )),
            envelope_json(
                "conversation_quality.updated",
                json!({
                    "overall": neutral.clone(),
                    "timeline": [{"start": 30.0, "end": 60.0, "values": neutral.clone()}]
                }),
            ),
        ),
        (
            envelope(EventData::ConversationQualityUpdated(
                ConversationQualityUpdated {
                    overall: Some(values(72.0, 67.0, 68.0, 80.0, 75.0, 70.0)),
                    timeline: None,
                },
            )),
            envelope_json(
                "conversation_quality.updated",
                json!({"overall": {
                    "quality_index": 72, "clarity": 67, "authority": 68,
                    "energy": 80, "rapport": 75, "learning": 70
                }}),
            ),
        ),
        (
            envelope(EventData::CoverageDegraded(CoverageDegraded {
                ranges: vec![
                    TimeRange {
                        start: 5.0,
                        end: 10.0,
                    },
                    TimeRange {
                        start: 20.0,
                        end: 25.0,
                    },
                ],
                reason: CoverageReason::VideoGap,
            })),
            envelope_json(
                "coverage.degraded",
                json!({
                    "ranges": [{"start": 5.0, "end": 10.0}, {"start": 20.0, "end": 25.0}],
                    "reason": "video_gap"
                }),
            ),
        ),
        (
            envelope(EventData::CoverageDropped(CoverageDropped {
                ranges: vec![TimeRange {
                    start: 40.0,
                    end: 47.5,
                }],
            })),
            envelope_json(
                "coverage.dropped",
                json!({"ranges": [{"start": 40.0, "end": 47.5}]}),
            ),
        ),
        (
            envelope(EventData::Error(ErrorEvent {
                code: ErrorCode::Ih6009,
                message: "The session is closing.".into(),
                link: None,
                segment: None,
                seconds_remaining: None,
            })),
            envelope_json(
                "error",
                json!({"code": "ih6009", "message": "The session is closing.", "segment": null}),
            ),
        ),
        (
            envelope(EventData::Error(ErrorEvent {
                code: ErrorCode::Ih6007,
                message: "The segment could not be read.".into(),
                link: Some(
                    "https://docs.example/api-reference/error-handling#ih6007-unreadable-video-segment"
                        .into(),
                ),
                segment: Some(3),
                seconds_remaining: None,
            })),
            envelope_json(
                "error",
                json!({
                    "code": "ih6007",
                    "message": "The segment could not be read.",
                    "link": "https://docs.example/api-reference/error-handling#ih6007-unreadable-video-segment",
                    "segment": 3
                }),
            ),
        ),
        (
            envelope(EventData::Error(ErrorEvent {
                code: ErrorCode::Ih6006,
                message: "The server will shut down soon.".into(),
                link: None,
                segment: None,
                seconds_remaining: Some(300),
            })),
            envelope_json(
                "error",
                json!({
                    "code": "ih6006", "message": "The server will shut down soon.",
                    "segment": null, "seconds_remaining": 300
                }),
            ),
        ),
        (
            envelope(EventData::SessionClosing(SessionClosing {
                max_drain_seconds: 30,
            })),
            envelope_json("session.closing", json!({"max_drain_seconds": 30})),
        ),
        (
            envelope(EventData::SessionEnded(SessionEnded {
                reason: SessionEndReason::ClientShutdown,
            })),
            envelope_json("session.ended", json!({"reason": "client_shutdown"})),
        ),
        (
            envelope(EventData::RealtimeRecommendationGenerated(
                RealtimeRecommendationGenerated {
                    text: "Ask an open question about their timeline.".into(),
                    start: 0.0,
                    end: 20.0,
                },
            )),
            envelope_json(
                "realtime_recommendation.generated",
                json!({"text": "Ask an open question about their timeline.", "start": 0.0, "end": 20.0}),
            ),
        ),
        (
            envelope(EventData::TranscriptGenerated(TranscriptGenerated {
                start: 1.0,
                end: 3.5,
                text: "Let's start with the numbers.".into(),
                speaker: 2,
            })),
            envelope_json(
                "transcript.generated",
                json!({"start": 1.0, "end": 3.5, "text": "Let's start with the numbers.", "speaker": 2}),
            ),
        ),
    ]
}

#[test]
fn every_event_envelope_matches_its_golden_json() {
    for (event, expected) in golden_events() {
        let name = event.type_name();
        assert_eq!(
            serde_json::to_value(&event).unwrap(),
            expected,
            "envelope of {name}"
        );
        let text = event.to_json();
        assert_eq!(
            serde_json::from_str::<Value>(&text).unwrap(),
            expected,
            "to_json of {name}"
        );
        let back: Event = serde_json::from_value(expected).unwrap();
        assert_eq!(back, event, "{name} reads back differently");
        let back: Event = serde_json::from_str(&text).unwrap();
        assert_eq!(back, event, "{name} text reads back differently");
    }
}

#[test]
fn every_event_type_of_the_spec_has_a_golden_envelope() {
    let spec: BTreeSet<&str> = [
        "session.ready",
        "session.updated",
        "signal.detected",
        "signal.updated",
        "signal.ended",
        "engagement.updated",
        "conversation_quality.updated",
        "coverage.degraded",
        "coverage.dropped",
        "error",
        "session.closing",
        "session.ended",
        "realtime_recommendation.generated",
        "transcript.generated",
    ]
    .into_iter()
    .collect();
    let modelled: BTreeSet<&str> = EventData::TYPE_NAMES.iter().copied().collect();
    assert_eq!(modelled, spec);
    let covered: BTreeSet<&str> = golden_events()
        .iter()
        .map(|(event, _)| event.type_name())
        .collect();
    assert_eq!(covered, spec);
}

#[test]
fn envelopes_are_type_timestamp_correlation_id_and_data_with_utc_z_time() {
    for (event, _) in golden_events() {
        let value = serde_json::to_value(&event).unwrap();
        let keys: BTreeSet<&str> = value
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            BTreeSet::from(["type", "timestamp", "correlation_id", "data"])
        );
        assert!(value["data"].is_object());
        let stamp = value["timestamp"].as_str().unwrap();
        assert!(is_iso8601_utc_z(stamp), "timestamp {stamp}");
    }
    let now = serde_json::to_value(envelope_at_now()).unwrap();
    assert!(is_iso8601_utc_z(now["timestamp"].as_str().unwrap()));
}

fn envelope_at_now() -> Event {
    Event {
        timestamp: Timestamp::now(),
        ..envelope(EventData::SessionClosing(SessionClosing {
            max_drain_seconds: 5,
        }))
    }
}

/// `YYYY-MM-DDTHH:MM:SS[.fff]Z`, the ISO 8601 UTC form.
fn is_iso8601_utc_z(text: &str) -> bool {
    let bytes = text.as_bytes();
    let digits = |range: std::ops::Range<usize>| {
        bytes
            .get(range)
            .is_some_and(|b| b.iter().all(u8::is_ascii_digit))
    };
    let fixed = digits(0..4)
        && bytes.get(4) == Some(&b'-')
        && digits(5..7)
        && bytes.get(7) == Some(&b'-')
        && digits(8..10)
        && bytes.get(10) == Some(&b'T')
        && digits(11..13)
        && bytes.get(13) == Some(&b':')
        && digits(14..16)
        && bytes.get(16) == Some(&b':')
        && digits(17..19);
    let rest = &text[19.min(text.len())..];
    let tail_ok = match rest.strip_prefix('.').and_then(|f| f.strip_suffix('Z')) {
        Some(fraction) => !fraction.is_empty() && fraction.bytes().all(|b| b.is_ascii_digit()),
        None => rest == "Z",
    };
    fixed && tail_ok
}

#[test]
fn envelopes_refuse_unknown_types_and_fields() {
    let unknown_type = envelope_json("signal.maybe", json!({}));
    assert!(serde_json::from_value::<Event>(unknown_type).is_err());
    let mut extra = envelope_json("session.closing", json!({"max_drain_seconds": 5}));
    extra["sequence"] = json!(1);
    assert!(serde_json::from_value::<Event>(extra).is_err());
    let extra_data = envelope_json(
        "session.closing",
        json!({"max_drain_seconds": 5, "reason": "x"}),
    );
    assert!(serde_json::from_value::<Event>(extra_data).is_err());
}

// ---------------------------------------------------------------------- frames

const STREAMS: [Endpoint; 2] = [Endpoint::StreamV1, Endpoint::StreamV2];
const ALL_ENDPOINTS: [Endpoint; 3] = [Endpoint::StreamV1, Endpoint::StreamV2, Endpoint::Realtime];

fn parse(text: &str, endpoint: Endpoint) -> Result<ClientFrame, FrameError> {
    ClientFrame::parse(text, endpoint)
}

fn stream_config(frame: Result<ClientFrame, FrameError>) -> StreamConfig {
    match frame {
        Ok(ClientFrame::StreamConfig(config)) => config,
        other => panic!("expected a stream config, got {other:?}"),
    }
}

fn realtime_update(frame: Result<ClientFrame, FrameError>) -> RealtimeConfigUpdate {
    match frame {
        Ok(ClientFrame::RealtimeConfig(update)) => update,
        other => panic!("expected a realtime config, got {other:?}"),
    }
}

/// The config a session opened with defaults holds after `frame`.
fn realtime_config(frame: Result<ClientFrame, FrameError>) -> RealtimeConfig {
    RealtimeConfig::default().merged(&realtime_update(frame))
}

/// Asserts a refused config frame: `ih6001`, fatal only on v1 outside a drain.
fn assert_invalid_config(text: &str, endpoint: Endpoint) {
    match parse(text, endpoint) {
        Err(error @ FrameError::InvalidConfig(_)) => {
            assert_eq!(error.code(), ErrorCode::Ih6001, "{text}");
            assert_eq!(
                error.is_fatal(endpoint, false),
                endpoint == Endpoint::StreamV1,
                "{text} on {endpoint:?}"
            );
            assert!(!error.is_fatal(endpoint, true), "fatal while draining");
        }
        other => panic!("{text} on {endpoint:?}: expected InvalidConfig, got {other:?}"),
    }
}

#[test]
fn stream_config_frames_are_accepted_on_v1_and_v2() {
    for endpoint in STREAMS {
        let config = stream_config(parse(
            r#"{"include": ["conversation_quality_overall", "conversation_quality_timeline"]}"#,
            endpoint,
        ));
        assert_eq!(
            config,
            StreamConfig {
                include: vec![
                    IncludeFlag::ConversationQualityOverall,
                    IncludeFlag::ConversationQualityTimeline
                ],
                model: None,
                audio_format: None,
            }
        );
        // An omitted include is the empty set: each frame replaces the config.
        assert_eq!(
            stream_config(parse("{}", endpoint)),
            StreamConfig::default()
        );
        assert_eq!(
            stream_config(parse(r#"{"include": null}"#, endpoint)),
            StreamConfig::default()
        );
    }
}

#[test]
fn v2_config_selects_a_model_and_declares_raw_audio() {
    let config = stream_config(parse(
        r#"{"include": [], "model": "inter-2-audio",
            "audio_format": {"encoding": "pcm_s16le", "sample_rate": 24000, "channels": 1}}"#,
        Endpoint::StreamV2,
    ));
    assert_eq!(
        config,
        StreamConfig {
            include: vec![],
            model: Some(Model::Inter2Audio),
            audio_format: Some(AudioFormat {
                encoding: AudioEncoding::PcmS16le,
                sample_rate: 24000,
                channels: 1,
            }),
        }
    );
    let config = stream_config(parse(r#"{"model": "inter-2"}"#, Endpoint::StreamV2));
    assert_eq!(config.model, Some(Model::Inter2));
    assert_invalid_config(r#"{"model": "inter-3"}"#, Endpoint::StreamV2);
    assert_invalid_config(r#"{"model": 2}"#, Endpoint::StreamV2);
}

#[test]
fn stream_config_rejects_unknown_fields() {
    for endpoint in STREAMS {
        assert_invalid_config(r#"{"include": [], "language": "en"}"#, endpoint);
        assert_invalid_config(
            r#"{"includes": ["conversation_quality_overall"]}"#,
            endpoint,
        );
    }
}

#[test]
fn v1_config_rejects_model() {
    assert_invalid_config(r#"{"model": "inter-2"}"#, Endpoint::StreamV1);
    assert_invalid_config(r#"{"include": [], "model": null}"#, Endpoint::StreamV1);
}

#[test]
fn unknown_include_values_are_ignored() {
    for endpoint in STREAMS {
        let config = stream_config(parse(
            r#"{"include": ["conversation_quality_timeline", "sentiment", 7, "signals",
                            "conversation_quality_timeline", "conversation_quality_overall"]}"#,
            endpoint,
        ));
        assert_eq!(
            config.include,
            vec![
                IncludeFlag::ConversationQualityTimeline,
                IncludeFlag::ConversationQualityOverall
            ]
        );
    }
}

#[test]
fn audio_format_requires_all_three_fields_with_allowed_values() {
    let ok = stream_config(parse(
        r#"{"audio_format": {"encoding": "pcm_s16le", "sample_rate": 16000, "channels": 1}}"#,
        Endpoint::StreamV2,
    ));
    assert_eq!(ok.audio_format.map(|f| f.sample_rate), Some(16000));
    for bad in [
        r#"{"sample_rate": 16000, "channels": 1}"#,
        r#"{"encoding": "pcm_s16le", "channels": 1}"#,
        r#"{"encoding": "pcm_s16le", "sample_rate": 16000}"#,
        r#"{"encoding": "pcm_f32le", "sample_rate": 16000, "channels": 1}"#,
        r#"{"encoding": "pcm_s16le", "sample_rate": 44100, "channels": 1}"#,
        r#"{"encoding": "pcm_s16le", "sample_rate": 16000, "channels": 2}"#,
        r#"{"encoding": "pcm_s16le", "sample_rate": 16000, "channels": 1, "endian": "le"}"#,
        r#"{}"#,
    ] {
        assert_invalid_config(&format!(r#"{{"audio_format": {bad}}}"#), Endpoint::StreamV2);
    }
}

#[test]
fn audio_format_golden() {
    golden(
        &AudioFormat {
            encoding: AudioEncoding::PcmS16le,
            sample_rate: 16000,
            channels: 1,
        },
        json!({"encoding": "pcm_s16le", "sample_rate": 16000, "channels": 1}),
    );
}

#[test]
fn realtime_config_frames_are_accepted() {
    let config = realtime_config(parse(
        r#"{"realtime_recommendation_instructions": "Coach the seller on discovery.",
            "realtime_recommendation_frequency": "high",
            "analysis_groups": ["visual"]}"#,
        Endpoint::Realtime,
    ));
    assert_eq!(
        config,
        RealtimeConfig {
            realtime_recommendation_instructions: Some("Coach the seller on discovery.".into()),
            realtime_recommendation_frequency: RecommendationFrequency::High,
            analysis_groups: vec![AnalysisGroup::Visual],
        }
    );
    assert_eq!(
        realtime_config(parse("{}", Endpoint::Realtime)),
        RealtimeConfig::default()
    );
    let empty_instructions = realtime_config(parse(
        r#"{"realtime_recommendation_instructions": ""}"#,
        Endpoint::Realtime,
    ));
    assert_eq!(
        empty_instructions.realtime_recommendation_instructions,
        None
    );
}

#[test]
fn realtime_analysis_groups_null_or_omitted_mean_both_and_empty_is_refused() {
    let both = [AnalysisGroup::Audio, AnalysisGroup::Visual];
    for text in [r#"{}"#, r#"{"analysis_groups": null}"#] {
        let groups = realtime_config(parse(text, Endpoint::Realtime)).analysis_groups;
        assert_eq!(groups, both, "{text}");
    }
    assert_invalid_config(r#"{"analysis_groups": []}"#, Endpoint::Realtime);
    assert_invalid_config(r#"{"analysis_groups": ["thermal"]}"#, Endpoint::Realtime);
    assert_invalid_config(
        r#"{"realtime_recommendation_frequency": "hourly"}"#,
        Endpoint::Realtime,
    );
}

/// Issue 11, defect 10: a frame naming one field changes that field only; `null` resets one.
#[test]
fn partial_realtime_config_frames_keep_the_fields_they_omit() {
    let mut config = realtime_config(parse(
        r#"{"realtime_recommendation_instructions": "Coach the seller.",
            "analysis_groups": ["audio"]}"#,
        Endpoint::Realtime,
    ));
    // What the official Python client sends for `update_config(realtime_recommendation_frequency="high")`.
    let update = realtime_update(parse(
        r#"{"realtime_recommendation_frequency": "high"}"#,
        Endpoint::Realtime,
    ));
    assert_eq!(
        update,
        RealtimeConfigUpdate {
            realtime_recommendation_frequency: Some(RecommendationFrequency::High),
            ..RealtimeConfigUpdate::default()
        }
    );
    config.apply(&update);
    assert_eq!(
        config,
        RealtimeConfig {
            realtime_recommendation_instructions: Some("Coach the seller.".into()),
            realtime_recommendation_frequency: RecommendationFrequency::High,
            analysis_groups: vec![AnalysisGroup::Audio],
        }
    );
    // `{}` changes nothing; explicit nulls reset to the defaults; "" clears the instructions.
    config.apply(&realtime_update(parse("{}", Endpoint::Realtime)));
    assert_eq!(
        config.realtime_recommendation_frequency,
        RecommendationFrequency::High
    );
    config.apply(&realtime_update(parse(
        r#"{"analysis_groups": null, "realtime_recommendation_frequency": null}"#,
        Endpoint::Realtime,
    )));
    assert_eq!(
        config.analysis_groups,
        RealtimeConfig::default().analysis_groups
    );
    assert_eq!(
        config.realtime_recommendation_frequency,
        RecommendationFrequency::Medium
    );
    assert!(config.realtime_recommendation_instructions.is_some());
    for clear in [
        r#"{"realtime_recommendation_instructions": null}"#,
        r#"{"realtime_recommendation_instructions": "  "}"#,
    ] {
        let mut c = config.clone();
        c.apply(&realtime_update(parse(clear, Endpoint::Realtime)));
        assert_eq!(c.realtime_recommendation_instructions, None, "{clear}");
    }
}

#[test]
fn realtime_config_rejects_unknown_fields() {
    assert_invalid_config(
        r#"{"analysis_groups": ["audio"], "synthesis_prompt": "old name"}"#,
        Endpoint::Realtime,
    );
    assert_invalid_config(r#"{"include": []}"#, Endpoint::Realtime);
}

#[test]
fn session_close_is_accepted_everywhere_and_refuses_extra_fields() {
    for endpoint in ALL_ENDPOINTS {
        assert_eq!(
            parse(r#"{"type": "session.close"}"#, endpoint),
            Ok(ClientFrame::SessionClose)
        );
        match parse(r#"{"type": "session.close", "reason": "done"}"#, endpoint) {
            Err(error @ FrameError::CloseWithExtraFields(_)) => {
                assert_eq!(
                    error,
                    FrameError::CloseWithExtraFields(vec!["reason".into()])
                );
                assert_eq!(error.code(), ErrorCode::Ih4005);
                assert!(!error.is_fatal(endpoint, false), "the session stays open");
            }
            other => panic!("expected CloseWithExtraFields, got {other:?}"),
        }
    }
    golden(
        &SessionClose {
            frame_type: "session.close".into(),
        },
        json!({"type": "session.close"}),
    );
}

#[test]
fn transcript_updated_is_realtime_only() {
    let text = r#"{"type": "transcript.updated", "transcript": [
        {"start": 0.0, "end": 2.0, "text": "Hi there.", "speaker": 0},
        {"start": 2.5, "end": 4.0, "text": "Hello!", "speaker": 1}
    ]}"#;
    match parse(text, Endpoint::Realtime) {
        Ok(ClientFrame::TranscriptUpdated(update)) => {
            assert_eq!(update.transcript.len(), 2);
            assert_eq!(update.transcript[1].speaker, 1);
            assert_eq!(update.transcript[0].text, "Hi there.");
        }
        other => panic!("expected a transcript, got {other:?}"),
    }
    for endpoint in STREAMS {
        let error = parse(text, endpoint).unwrap_err();
        assert_eq!(
            error,
            FrameError::UnknownType("transcript.updated".into()),
            "{endpoint:?}"
        );
        assert_eq!(error.code(), ErrorCode::Ih4006);
        assert!(!error.is_fatal(endpoint, false));
    }
    for bad in [
        r#"{"type": "transcript.updated"}"#,
        r#"{"type": "transcript.updated", "transcript": [{"start": 0.0, "end": 1.0, "text": "x"}]}"#,
        r#"{"type": "transcript.updated", "transcript": [{"start": 3.0, "end": 1.0, "text": "x", "speaker": 0}]}"#,
    ] {
        let error = parse(bad, Endpoint::Realtime).unwrap_err();
        assert!(
            matches!(error, FrameError::InvalidTranscript(_)),
            "{bad}: {error:?}"
        );
        assert_eq!(error.code(), ErrorCode::Ih4005);
    }
}

#[test]
fn transcript_updated_golden() {
    let update = TranscriptUpdated {
        transcript: vec![TranscriptSegment {
            start: 0.0,
            end: 2.0,
            text: "Hi there.".into(),
            speaker: 0,
        }],
    };
    golden(
        &update,
        json!({
            "type": "transcript.updated",
            "transcript": [{"start": 0.0, "end": 2.0, "text": "Hi there.", "speaker": 0}]
        }),
    );
    // What a client of the wire model sends is what the server accepts.
    let sent = serde_json::to_string(&update).unwrap();
    assert_eq!(
        parse(&sent, Endpoint::Realtime),
        Ok(ClientFrame::TranscriptUpdated(update))
    );
}

#[test]
fn unparsable_frames_and_unknown_types_are_ih4006_and_not_fatal() {
    for endpoint in ALL_ENDPOINTS {
        for text in ["not json", "[1, 2]", "\"session.close\"", "{\"include\": "] {
            let error = parse(text, endpoint).unwrap_err();
            assert!(
                matches!(error, FrameError::Malformed(_)),
                "{text}: {error:?}"
            );
            assert_eq!(error.code(), ErrorCode::Ih4006);
            assert!(!error.is_fatal(endpoint, false));
        }
        let error = parse(r#"{"type": "session.update"}"#, endpoint).unwrap_err();
        assert_eq!(error, FrameError::UnknownType("session.update".into()));
        assert_eq!(error.code(), ErrorCode::Ih4006);
    }
}
