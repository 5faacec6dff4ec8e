//! The realtime beta over loopback: its config, transcripts, signals per analysis group and
//! recommendations written by the embedded recommender.

use crate::common::Harness;
use crate::ws::{connect, errors, types, Auth};
use attune_server::Scope;
use serde_json::json;

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/../../tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[tokio::test]
async fn realtime_sessions_recommend_from_signals_and_the_transcript() {
    let h = Harness::new().await;
    let server = h.start().await;
    let key = h.key("coach", &Scope::ALL).await;
    let mut ws = connect(&server, "/v0/realtime/analyze", Auth::Subprotocol(&key)).await;
    let ready = ws.ready().await;
    let options = &ready["supported_session_config_options"];
    assert_eq!(
        options["realtime_recommendation_frequency"],
        json!(["high", "medium", "low"])
    );
    assert_eq!(options["analysis_groups"], json!(["visual", "audio"]));
    assert!(
        options["realtime_recommendation_instructions"].is_string(),
        "{options}"
    );

    // Unknown fields are refused without ending the session; at least one group is needed.
    ws.json(json!({"realtime_recommendation_frequency": "high", "tone": "warm"}))
        .await;
    assert_eq!(ws.until("error").await["data"]["code"], "ih6001");
    ws.json(json!({"analysis_groups": []})).await;
    assert_eq!(ws.until("error").await["data"]["code"], "ih6001");
    ws.json(json!({
        "realtime_recommendation_instructions": "Coach the seller to ask more questions.",
        "realtime_recommendation_frequency": "high",
    }))
    .await;
    let updated = ws.until("session.updated").await;
    assert_eq!(updated["data"]["realtime_recommendation_frequency"], "high");
    let transcript = json!({"type": "transcript.updated", "transcript": [
        {"start": 0.0, "end": 6.0, "text": "So our platform does everything you need and more, and the price is great.", "speaker": 0},
        {"start": 6.0, "end": 7.0, "text": "Okay.", "speaker": 1},
        {"start": 7.0, "end": 8.5, "text": "And we also include onboarding for the whole team at no cost.", "speaker": 0},
        {"start": 8.5, "end": 9.5, "text": "How long does onboarding take?", "speaker": 1},
    ]});
    ws.json(transcript.clone()).await;
    for _ in 0..2 {
        for name in ["seg0", "seg1", "seg2"] {
            ws.binary(&fixture(&format!("segments/{name}.webm"))).await;
        }
    }
    // A transcript is accepted while draining too (it replaces the stored one).
    ws.json(json!({"type": "session.close"})).await;
    ws.json(transcript).await;
    let (events, code) = ws.rest().await;
    assert_eq!(code, 1000);
    assert!(errors(&events).is_empty(), "{events:?}");
    assert_eq!(
        types(&events).last().map(String::as_str),
        Some("session.ended")
    );
    let recommendation = events
        .iter()
        .find(|e| e["type"] == "realtime_recommendation.generated")
        .unwrap_or_else(|| panic!("no recommendation: {:?}", types(&events)));
    let data = &recommendation["data"];
    // The first period starts with the media and ends at the end of the window that brought
    // the analyzed media to 10 s (`high`); windows analyzed in one batch carry it further, up
    // to the 18 s of media sent.
    assert_eq!(data["start"], 0.0);
    let end = data["end"].as_f64().unwrap();
    assert!((10.0..=18.1).contains(&end), "{end}");
    let text = data["text"].as_str().unwrap();
    assert!(!text.is_empty() && text.len() <= 200, "{text}");
    assert_ne!(text, "NO_GUIDANCE");
    // Realtime signals name the evidence channel; no CQI events on realtime.
    for event in &events {
        if event["type"] == "signal.detected" {
            for m in event["data"]["modality"].as_array().unwrap() {
                assert!(m == "audio" || m == "visual", "{m}");
            }
        }
        assert_ne!(event["type"], "conversation_quality.updated");
    }
    server.shutdown().await;
}

/// Without the server's transcription (`realtime_transcribe = false`) and without a client
/// transcript there is no transcript at all, so no recommendation, whatever the instructions.
#[tokio::test]
async fn no_recommendation_without_instructions_or_transcript() {
    let h = Harness::new().await;
    let server = h
        .start_with(|c| c.realtime_transcribe = Some(false), h.services())
        .await;
    let key = h.key("coach", &Scope::ALL).await;
    let mut ws = connect(&server, "/v0/realtime/analyze", Auth::Header(&key)).await;
    ws.ready().await;
    // Instructions but no transcript.
    ws.json(json!({"realtime_recommendation_instructions": "Coach me.", "realtime_recommendation_frequency": "high"}))
        .await;
    ws.until("session.updated").await;
    for _ in 0..2 {
        for name in ["seg0", "seg1", "seg2"] {
            ws.binary(&fixture(&format!("segments/{name}.webm"))).await;
        }
    }
    let (events, code) = ws.close_gracefully().await;
    assert_eq!(code, 1000);
    assert!(
        count_type(&events, "signal.detected") > 0,
        "{:?}",
        types(&events)
    );
    assert_eq!(count_type(&events, "realtime_recommendation.generated"), 0);
    assert_eq!(count_type(&events, "transcript.generated"), 0);
    server.shutdown().await;
}

/// Issue 29: a realtime session hears its own words. The real telephone call of
/// `tests/fixtures/real` (two women, 30 s) sent as a browser would, one continuous WebM in
/// 32 KiB frames, with instructions and no client transcript: each final segment arrives as
/// one `transcript.generated` (`{start, end, text, speaker}`, session seconds, voices from
/// 1), the call's last words before `session.ended`, and the recommendations read the
/// server's transcript.
#[tokio::test]
async fn realtime_sessions_send_the_words_they_hear() {
    let h = Harness::new().await;
    let server = h.start().await;
    let key = h.key("coach", &Scope::ALL).await;
    let mut ws = connect(&server, "/v0/realtime/analyze", Auth::Header(&key)).await;
    ws.ready().await;
    ws.json(json!({
        "realtime_recommendation_instructions": "Coach me to ask more questions.",
        "realtime_recommendation_frequency": "high",
    }))
    .await;
    ws.until("session.updated").await;
    for frame in fixture("real/sample_vp8_opus.webm").chunks(32 * 1024) {
        ws.binary(frame).await;
    }
    let (events, code) = ws.close_gracefully().await;
    assert_eq!(code, 1000);
    assert!(errors(&events).is_empty(), "{events:?}");
    let said: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["type"] == "transcript.generated")
        .map(|e| &e["data"])
        .collect();
    assert!(said.len() >= 3, "{:?}", types(&events));
    for data in &said {
        let fields: Vec<&str> = data
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(fields.len(), 4, "{data}");
        let (start, end) = (
            data["start"].as_f64().unwrap(),
            data["end"].as_f64().unwrap(),
        );
        assert!(0.0 <= start && start <= end && end <= 30.5, "{data}");
        assert!(!data["text"].as_str().unwrap().is_empty(), "{data}");
        assert!(data["speaker"].as_u64().unwrap() <= 8, "{data}");
    }
    let words: Vec<&str> = said.iter().map(|d| d["text"].as_str().unwrap()).collect();
    let diane = said
        .iter()
        .find(|d| d["text"].as_str().unwrap().contains("Diane"))
        .unwrap_or_else(|| panic!("{words:?}"));
    assert!(
        diane["text"].as_str().unwrap().contains("New Jersey"),
        "{diane}"
    );
    // Said at 12.54-14.18 s of the call (Whisper's timestamps are coarse: whole seconds on
    // this call), by the first voice heard.
    let (start, end) = (
        diane["start"].as_f64().unwrap(),
        diane["end"].as_f64().unwrap(),
    );
    assert!(
        start < 14.18 && end > 12.54 && (start - 12.54).abs() < 1.5,
        "{diane}"
    );
    assert_eq!(diane["speaker"], 1, "{diane}");
    // The last words (28.4-30.0 s) are final only at the drain, and still come first.
    let last = said.last().unwrap();
    assert!(last["end"].as_f64().unwrap() >= 29.0, "{last}");
    let kinds = types(&events);
    let last_words = kinds
        .iter()
        .rposition(|t| t == "transcript.generated")
        .unwrap();
    let ended = kinds.iter().position(|t| t == "session.ended").unwrap();
    assert!(last_words < ended, "{kinds:?}");
    // No client transcript was sent: the recommendations read the server's.
    assert!(
        count_type(&events, "realtime_recommendation.generated") >= 1,
        "{kinds:?}"
    );
    server.shutdown().await;
}

/// v1/v2 stream sessions may transcribe (`stream_transcribe = true`) for their analysis, but
/// the interface has no transcript event there: none is sent, and the session runs and ends
/// as without it.
#[tokio::test]
async fn stream_sessions_that_transcribe_send_no_transcript() {
    let h = Harness::new().await;
    let server = h
        .start_with(|c| c.stream_transcribe = Some(true), h.services())
        .await;
    let key = h.key("coach", &Scope::ALL).await;
    let mut ws = connect(&server, "/v2/stream/analyze", Auth::Header(&key)).await;
    ws.ready().await;
    for frame in fixture("real/sample_vp8_opus.webm").chunks(32 * 1024) {
        ws.binary(frame).await;
    }
    let (events, code) = ws.close_gracefully().await;
    assert_eq!(code, 1000);
    assert!(errors(&events).is_empty(), "{events:?}");
    assert!(
        count_type(&events, "signal.detected") > 0,
        "{:?}",
        types(&events)
    );
    assert_eq!(count_type(&events, "transcript.generated"), 0);
    server.shutdown().await;
}

fn count_type(events: &[serde_json::Value], kind: &str) -> usize {
    events.iter().filter(|e| e["type"] == kind).count()
}

/// Runs a realtime session on 27 s of media (the three 3 s segments, three times) with `config`
/// and one transcript sent before the media; answers every event up to the close.
async fn realtime_run(config: serde_json::Value) -> Vec<serde_json::Value> {
    let h = Harness::new().await;
    let server = h.start().await;
    let key = h.key("coach", &Scope::ALL).await;
    let mut ws = connect(&server, "/v0/realtime/analyze", Auth::Header(&key)).await;
    ws.ready().await;
    ws.json(config).await;
    ws.until("session.updated").await;
    ws.json(json!({"type": "transcript.updated", "transcript": [
        {"start": 0.0, "end": 6.0, "text": "Our plan covers every team and the price is fixed.", "speaker": 0},
        {"start": 6.0, "end": 7.0, "text": "Is onboarding included?", "speaker": 1},
    ]}))
    .await;
    for _ in 0..3 {
        for name in ["seg0", "seg1", "seg2"] {
            ws.binary(&fixture(&format!("segments/{name}.webm"))).await;
        }
    }
    let (events, code) = ws.close_gracefully().await;
    assert_eq!(code, 1000, "{events:?}");
    server.shutdown().await;
    events
}

fn recommendations(events: &[serde_json::Value]) -> Vec<(f64, f64)> {
    events
        .iter()
        .filter(|e| e["type"] == "realtime_recommendation.generated")
        .map(|e| {
            (
                e["data"]["start"].as_f64().unwrap(),
                e["data"]["end"].as_f64().unwrap(),
            )
        })
        .collect()
}

#[tokio::test]
async fn recommendations_are_paced_by_analyzed_media_per_frequency() {
    let instructions = "Coach the seller to listen more.";
    // One transcript: at most one recommendation, once the frequency's media was analyzed.
    for (frequency, length) in [("high", 10.0), ("medium", 20.0)] {
        let events = realtime_run(json!({
            "realtime_recommendation_instructions": instructions,
            "realtime_recommendation_frequency": frequency,
        }))
        .await;
        let got = recommendations(&events);
        assert_eq!(got.len(), 1, "{frequency}: {got:?}");
        assert_eq!(got[0].0, 0.0);
        assert!(
            got[0].1 >= length && got[0].1 <= 27.1,
            "{frequency}: {got:?}"
        );
    }
    // `low` needs 30 s of analyzed media: 27 s never gets there.
    let events = realtime_run(json!({
        "realtime_recommendation_instructions": instructions,
        "realtime_recommendation_frequency": "low",
    }))
    .await;
    assert!(recommendations(&events).is_empty());
}

#[tokio::test]
async fn the_audio_group_alone_reports_only_audio_evidence() {
    let events = realtime_run(json!({"analysis_groups": ["audio"]})).await;
    let modalities: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["type"] == "signal.detected" || e["type"] == "signal.updated")
        .map(|e| &e["data"]["modality"])
        .collect();
    assert!(!modalities.is_empty());
    for m in modalities {
        assert_eq!(m, &json!(["audio"]));
    }
    // No instructions: no recommendation however much media and transcript there is.
    assert!(recommendations(&events).is_empty());
}

/// `session.ready` as a strictly typed client declares it (the official Python client's
/// types): every member must deserialize into its declared JSON type.
#[derive(Debug, serde::Deserialize)]
#[allow(dead_code)]
struct TypedReady {
    session_idle_timeout_seconds: u64,
    session_max_duration_seconds: u64,
    max_segment_duration_seconds: Option<f64>,
    min_segment_size_bytes: u64,
    max_segment_size_bytes: u64,
    supported_session_config_options: TypedOptions,
}

#[derive(Debug, serde::Deserialize)]
#[allow(dead_code)]
struct TypedOptions {
    include: Vec<String>,
    model: Option<Vec<String>>,
    realtime_recommendation_instructions: String,
    realtime_recommendation_frequency: Vec<String>,
    analysis_groups: Vec<String>,
}

/// Issue 11, defect 1: a typed client accepts the realtime `session.ready` (it refused an
/// object for the instructions and waited for the idle timeout).
#[tokio::test]
async fn realtime_session_ready_reads_in_a_strictly_typed_client() {
    let h = Harness::new().await;
    let server = h.start().await;
    let key = h.key("coach", &Scope::ALL).await;
    let mut ws = connect(&server, "/v0/realtime/analyze", Auth::Header(&key)).await;
    let ready = ws.ready().await;
    let typed: TypedReady = serde_json::from_value(ready.clone())
        .unwrap_or_else(|e| panic!("a typed client refuses session.ready ({e}): {ready}"));
    let options = typed.supported_session_config_options;
    assert!(!options.realtime_recommendation_instructions.is_empty());
    assert_eq!(
        options.realtime_recommendation_frequency,
        ["high", "medium", "low"]
    );
    assert_eq!(options.analysis_groups, ["visual", "audio"]);
    let (_, code) = ws.close_gracefully().await;
    assert_eq!(code, 1000);
    server.shutdown().await;
}

/// Issue 11, defect 10: `update_config(realtime_recommendation_frequency="high")` of the
/// official Python client sends only that field. The instructions set before stay, the
/// acknowledgement reports the merged config, and recommendations are still written.
#[tokio::test]
async fn a_partial_realtime_config_frame_keeps_the_instructions() {
    let h = Harness::new().await;
    let server = h.start().await;
    let key = h.key("coach", &Scope::ALL).await;
    let mut ws = connect(&server, "/v0/realtime/analyze", Auth::Header(&key)).await;
    ws.ready().await;
    ws.json(json!({
        "realtime_recommendation_instructions": "Coach the seller to ask more questions.",
        "analysis_groups": ["audio", "visual"],
    }))
    .await;
    ws.until("session.updated").await;
    ws.json(json!({"realtime_recommendation_frequency": "high"}))
        .await;
    let updated = ws.until("session.updated").await;
    assert_eq!(
        updated["data"],
        json!({
            "realtime_recommendation_instructions": "Coach the seller to ask more questions.",
            "realtime_recommendation_frequency": "high",
            "analysis_groups": ["visual", "audio"],
        })
    );
    ws.json(json!({"type": "transcript.updated", "transcript": [
        {"start": 0.0, "end": 6.0, "text": "So our platform does everything you need and more, and the price is great.", "speaker": 0},
        {"start": 6.0, "end": 7.0, "text": "Okay.", "speaker": 1},
        {"start": 7.0, "end": 8.5, "text": "And we also include onboarding for the whole team at no cost.", "speaker": 0},
        {"start": 8.5, "end": 9.5, "text": "How long does onboarding take?", "speaker": 1},
    ]}))
    .await;
    for _ in 0..2 {
        for name in ["seg0", "seg1", "seg2"] {
            ws.binary(&fixture(&format!("segments/{name}.webm"))).await;
        }
    }
    let (events, code) = ws.close_gracefully().await;
    assert_eq!(code, 1000);
    assert!(errors(&events).is_empty(), "{events:?}");
    assert_eq!(
        count_type(&events, "realtime_recommendation.generated"),
        1,
        "{:?}",
        types(&events)
    );
    server.shutdown().await;
}
