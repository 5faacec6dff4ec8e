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
    assert_eq!(
        options["realtime_recommendation_instructions"]["type"],
        "string"
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
        assert_ne!(event["type"], "transcript.generated");
    }
    server.shutdown().await;
}

#[tokio::test]
async fn no_recommendation_without_instructions_or_transcript() {
    let h = Harness::new().await;
    let server = h.start().await;
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
    server.shutdown().await;
}

fn count_type(events: &[serde_json::Value], kind: &str) -> usize {
    events.iter().filter(|e| e["type"] == kind).count()
}
