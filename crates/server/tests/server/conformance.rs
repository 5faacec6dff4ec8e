//! Upload rules clients rely on: each route keeps its own media rules, an
//! upload without signals scores the neutral CQI, a file of the wrong type
//! is told apart from a broken one, and an oversized video frame has its own
//! code.

use crate::common::{expect_error, json, post_form, Form, Harness};
use attune_core::ErrorCode;
use attune_server::{AnalyzerRunner, Scope, ServerHandle, Services};
use std::sync::Arc;
use std::time::Duration;

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/../../tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The production analyzer, with a v2 maximum of `max_seconds`.
fn analyzer(harness: &Harness, max_seconds: u64) -> Services {
    Services::new(
        harness.store.clone(),
        Arc::new(AnalyzerRunner::new(Duration::from_secs(max_seconds))),
    )
    .with_clock(harness.clock.clone())
}

async fn v1(server: &ServerHandle, key: &str, file: &[u8]) -> reqwest::Response {
    let form = Form::new()
        .text("include[]", "conversation_quality_overall")
        .file("file", file);
    post_form(server, "/v1/upload/analyze", key, form).await
}

async fn v2(server: &ServerHandle, key: &str, file: &[u8]) -> reqwest::Response {
    let form = Form::new()
        .text("model", "inter-2")
        .text("wait_seconds", "60")
        .file("file", file);
    post_form(server, "/v2/upload/analyze", key, form).await
}

#[tokio::test]
async fn v1_analyzes_audioless_video_from_its_picture() {
    let harness = Harness::new().await;
    let key = harness.key("acme", &Scope::ALL).await;
    // Both fixtures last 5 s: over this deployment's v2 maximum.
    let server = harness.start_with(|_| {}, analyzer(&harness, 4)).await;

    let video_only = fixture("video_only.mp4");
    let response = v1(&server, &key, &video_only).await;
    assert_eq!(response.status(), 200, "v1 reads the picture");
    let result = json(response).await;
    let spans = result["engagement_state"].as_array().unwrap();
    assert!(!spans.is_empty(), "{result}");
    assert_eq!(
        spans.last().unwrap()["end"].as_f64().map(f64::round),
        Some(5.0)
    );
    for signal in result["signals"].as_array().unwrap() {
        assert_eq!(signal["modality"], serde_json::json!(["video"]), "{signal}");
        // A missing track is not read as a silent speaker.
        let rationale = signal["rationale"].as_str().unwrap_or_default();
        assert!(!rationale.contains("speech"), "{signal}");
    }
    assert!(
        result["conversation_quality"]["overall"].is_object(),
        "{result}"
    );

    // Media with sound over the v2 maximum: v1 analyzes it too.
    let response = v1(&server, &key, &fixture("mp4_h264_aac.mp4")).await;
    assert_eq!(response.status(), 200, "v1 has its own maximum");

    // v2 keeps its rules for both.
    expect_error(v2(&server, &key, &video_only).await, 422, ErrorCode::Ih5008).await;
    let long = v2(&server, &key, &fixture("mp4_h264_aac.mp4")).await;
    expect_error(long, 400, ErrorCode::Ih4004).await;
    server.shutdown().await;
}

#[tokio::test]
async fn upload_without_signals_scores_neutral_cqi() {
    let harness = Harness::new().await;
    let key = harness.key("acme", &Scope::ALL).await;
    // Engaged windows, no signal: engagement alone must not move the scores.
    harness.runner.set(|script| script.no_signals = true);
    let server = harness.start().await;
    let neutral = serde_json::json!({
        "clarity": 50.0, "authority": 50.0, "energy": 50.0, "rapport": 50.0,
        "learning": 50.0, "quality_index": 50.0
    });
    let include = [
        ("include[]", "conversation_quality_overall"),
        ("include[]", "conversation_quality_timeline"),
    ];

    let mut form = Form::new()
        .text("model", "inter-2")
        .text("wait_seconds", "60");
    for (name, value) in include {
        form = form.text(name, value);
    }
    let response = post_form(&server, "/v2/upload/analyze", &key, form.media(1000)).await;
    assert_eq!(response.status(), 200);
    let job = json(response).await;
    let quality = &job["result"]["conversation_quality"];
    let mut v1_form = Form::new();
    for (name, value) in include {
        v1_form = v1_form.text(name, value);
    }
    let response = post_form(&server, "/v1/upload/analyze", &key, v1_form.media(1000)).await;
    assert_eq!(response.status(), 200);
    let result = json(response).await;
    assert_eq!(result["signals"], serde_json::json!([]), "{result}");
    for (route, quality) in [("v2", quality), ("v1", &result["conversation_quality"])] {
        assert_eq!(
            numbers(&quality["overall"]),
            numbers(&neutral),
            "{route}: {quality}"
        );
        let timeline = quality["timeline"].as_array().unwrap();
        assert!(!timeline.is_empty(), "{route}");
        for period in timeline {
            let values = period.get("values").unwrap_or(period);
            for (name, value) in neutral.as_object().unwrap() {
                assert_eq!(values[name].as_f64(), value.as_f64(), "{route}: {period}");
            }
        }
    }
    server.shutdown().await;
}

/// The fields of a JSON object holding numbers, as `f64`s.
fn numbers(value: &serde_json::Value) -> Vec<(String, Option<f64>)> {
    let mut fields: Vec<_> = value
        .as_object()
        .unwrap_or_else(|| panic!("not an object: {value}"))
        .iter()
        .map(|(name, value)| (name.clone(), value.as_f64()))
        .collect();
    fields.sort_by(|a, b| a.0.cmp(&b.0));
    fields
}

/// `magic` followed by filler up to 4 KiB: enough for a file-type check.
fn headed(magic: &[u8]) -> Vec<u8> {
    let mut bytes = magic.to_vec();
    bytes.resize(4096, 0x5a);
    bytes
}

#[tokio::test]
async fn unsupported_container_is_ih4002_not_ih5002() {
    let harness = Harness::new().await;
    let key = harness.key("acme", &Scope::ALL).await;
    let server = harness.start_with(|_| {}, analyzer(&harness, 1800)).await;
    let asf = [
        0x30, 0x26, 0xb2, 0x75, 0x8e, 0x66, 0xcf, 0x11, 0xa6, 0xd9, 0x00, 0xaa, 0x00, 0x62, 0xce,
        0x6c,
    ];
    let unsupported: &[(&str, Vec<u8>)] = &[
        ("ASF/WMV", headed(&asf)),
        (
            "MPEG program stream",
            headed(&[0x00, 0x00, 0x01, 0xba, 0x44]),
        ),
        ("PNG", headed(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR")),
        (
            "JPEG",
            headed(&[0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, b'J', b'F']),
        ),
        ("GIF", headed(b"GIF89a")),
        ("PDF", headed(b"%PDF-1.7\n")),
    ];
    for (kind, bytes) in unsupported {
        for response in [
            v1(&server, &key, bytes).await,
            v2(&server, &key, bytes).await,
        ] {
            let body = expect_error(response, 400, ErrorCode::Ih4002).await;
            assert!(!body.message.unwrap_or_default().is_empty(), "{kind}");
        }
    }
    // A supported container that does not parse is still corrupted media.
    for broken in [fixture("truncated.mp4"), fixture("random.bin")] {
        expect_error(v1(&server, &key, &broken).await, 422, ErrorCode::Ih5002).await;
        expect_error(v2(&server, &key, &broken).await, 422, ErrorCode::Ih5002).await;
    }
    server.shutdown().await;
}

/// `mp4` with the first sample of its first `stsz` table declared at `size`
/// bytes; nothing else changes, so the file stays small.
fn with_first_sample_of(mp4: &[u8], size: u32) -> Vec<u8> {
    let mut bytes = mp4.to_vec();
    let at = bytes
        .windows(4)
        .position(|w| w == b"stsz")
        .expect("an stsz box");
    // Type, version and flags, then the common sample size (0: a table follows).
    let fixed = at + 8;
    assert_eq!(
        &bytes[fixed..fixed + 4],
        &[0, 0, 0, 0],
        "a per-sample table"
    );
    let first = fixed + 8;
    bytes[first..first + 4].copy_from_slice(&size.to_be_bytes());
    bytes
}

#[tokio::test]
async fn oversized_video_sample_is_ih5005() {
    let harness = Harness::new().await;
    let key = harness.key("acme", &Scope::ALL).await;
    let server = harness.start_with(|_| {}, analyzer(&harness, 1800)).await;
    // The video track comes first in this fixture.
    let original = fixture("mp4_h264_aac.mp4");
    let oversized = with_first_sample_of(&original, 33 * 1024 * 1024);
    assert_eq!(oversized.len(), original.len());
    for response in [
        v1(&server, &key, &oversized).await,
        v2(&server, &key, &oversized).await,
    ] {
        let body = expect_error(response, 413, ErrorCode::Ih5005).await;
        assert!(
            body.message.unwrap_or_default().contains("33554432 bytes"),
            "the message names the limit"
        );
    }
    // Exactly at the cap is allowed: the frame is then only out of the file's bounds.
    let at_cap = with_first_sample_of(&original, 32 * 1024 * 1024);
    let answer = json(v2(&server, &key, &at_cap).await).await;
    for code in [&answer["error_id"], &answer["error"]["error_id"]] {
        assert_ne!(code, "ih5005", "32 MiB is within the cap: {answer}");
    }
    server.shutdown().await;
}
