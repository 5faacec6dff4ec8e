//! The production analyzer behind the upload routes: real fixtures in, the
//! interface's results and media error codes out.

use crate::common::{expect_error, json, post_form, Form, Harness};
use attune_core::ErrorCode;
use attune_server::{AnalyzerRunner, Scope, Services};
use std::sync::Arc;
use std::time::Duration;

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/../../tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn analyzer(harness: &Harness, max_seconds: u64) -> Services {
    Services::new(
        harness.store.clone(),
        Arc::new(AnalyzerRunner::new(Duration::from_secs(max_seconds))),
    )
    .with_clock(harness.clock.clone())
}

fn v2(file: &str, model: &str) -> Form {
    Form::new()
        .text("model", model)
        .text("wait_seconds", "60")
        .text("include[]", "conversation_quality_overall")
        .text("include[]", "signals")
        .file("file", &fixture(file))
}

#[tokio::test]
async fn a_recording_is_analyzed_into_five_second_windows() {
    let harness = Harness::new().await;
    let key = harness.key("acme", &Scope::ALL).await;
    let server = harness.start_with(|_| {}, analyzer(&harness, 1800)).await;

    let response = post_form(
        &server,
        "/v2/upload/analyze",
        &key,
        v2("mp4_h264_aac.mp4", "inter-2"),
    )
    .await;
    assert_eq!(response.status(), 200, "finished within wait_seconds");
    let job = json(response).await;
    assert_eq!(job["status"], "completed", "{job}");
    let result = &job["result"];
    assert_eq!(result["window_seconds"], 5.0);
    let duration = result["duration_seconds"].as_f64().unwrap();
    assert!((duration - 5.0).abs() < 0.1, "{duration}");
    let windows = result["windows"].as_array().unwrap();
    assert!(!windows.is_empty());
    assert_eq!(windows[0]["start_seconds"], 0.0);
    for w in windows {
        let state = w["engagement_status"].as_str().unwrap();
        assert!(["engaged", "disengaged", "neutral"].contains(&state), "{w}");
        for s in w["signals"].as_array().unwrap() {
            assert_eq!(
                s["modality"],
                serde_json::json!(["video"]),
                "inter-2 uploads say video"
            );
            assert!(!s["rationale"].as_str().unwrap().is_empty());
        }
    }
    assert!(result["signals"].is_array(), "signals requested");
    let overall = &result["conversation_quality"]["overall"];
    assert!(overall["quality_index"].as_f64().unwrap() >= 0.0);

    // The audio model takes a WAV and labels its evidence `audio`.
    let response = post_form(
        &server,
        "/v2/upload/analyze",
        &key,
        v2("speech/hesitant.wav", "inter-2-audio"),
    )
    .await;
    let job = json(response).await;
    assert_eq!(job["status"], "completed", "{job}");
    let hesitation = job["result"]["signals"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["type"] == "hesitation")
        .unwrap_or_else(|| panic!("hesitant speech reads as hesitation: {job}"));
    assert_eq!(hesitation["modality"], serde_json::json!(["audio"]));
    assert!(
        hesitation["rationale"].as_str().unwrap().contains("pause"),
        "{hesitation}"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn media_the_model_cannot_use_is_refused_with_its_code() {
    let harness = Harness::new().await;
    let key = harness.key("acme", &Scope::ALL).await;
    let server = harness.start_with(|_| {}, analyzer(&harness, 4)).await;
    let cases: &[(&str, &str, u16, ErrorCode)] = &[
        ("empty.mp4", "inter-2", 422, ErrorCode::Ih5001),
        ("truncated.mp4", "inter-2", 422, ErrorCode::Ih5002),
        ("random.bin", "inter-2", 422, ErrorCode::Ih5002),
        ("text.txt", "inter-2-audio", 422, ErrorCode::Ih5002),
        ("video_only.mp4", "inter-2", 422, ErrorCode::Ih5008),
        (
            "audio_only_for_inter2.mp4",
            "inter-2",
            422,
            ErrorCode::Ih5001,
        ),
        ("short_2s.mp4", "inter-2", 400, ErrorCode::Ih4007),
        ("wav_pcm_s16le.wav", "inter-2", 400, ErrorCode::Ih4002),
        // This server's maximum duration is 4 s.
        ("mp4_h264_aac.mp4", "inter-2", 400, ErrorCode::Ih4004),
    ];
    for &(file, model, status, code) in cases {
        let response = post_form(&server, "/v2/upload/analyze", &key, v2(file, model)).await;
        let body = expect_error(response, status, code).await;
        assert!(!body.message.unwrap_or_default().is_empty(), "{file}");
    }
    server.shutdown().await;
}

#[tokio::test]
async fn v1_answers_signals_engagement_and_feedback_from_the_analyzer() {
    let harness = Harness::new().await;
    let key = harness.key("acme", &Scope::ALL).await;
    let server = harness.start_with(|_| {}, analyzer(&harness, 1800)).await;
    let form = Form::new()
        .text("include[]", "conversation_quality_timeline")
        .text("goal_dimensions[]", "clarity")
        .file("file", &fixture("mkv_h264_vorbis.mkv"));
    let response = post_form(&server, "/v1/upload/analyze", &key, form).await;
    assert_eq!(response.status(), 200);
    let body = json(response).await;
    assert!(body["signals"].is_array(), "{body}");
    let spans = body["engagement_state"].as_array().unwrap();
    assert_eq!(spans[0]["start"], 0.0);
    assert!(body["conversation_quality"]["timeline"].is_array());
    assert!(body["conversation_quality"].get("overall").is_none());
    let kind = body["feedback"]["type"].as_str().unwrap();
    assert!(kind == "feedback" || kind == "no_feedback", "{body}");
    server.shutdown().await;
}
