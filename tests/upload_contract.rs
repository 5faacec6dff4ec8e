//! Cross-crate contract of an upload result: per-window results through the
//! facade's merge and CQI into the exact JSON an existing client reads.

use attune::core::upload::{job_result, Sections};
use attune::core::wire::{
    EngagementLevel, IncludeFlag, Model, Probability, Signal, SignalType, Timestamp,
    UploadJobResponse, UploadJobStatus, UploadJobWindow,
};
use serde_json::Value;

fn window(
    index: u32,
    level: EngagementLevel,
    found: &[(SignalType, Probability, &str)],
) -> UploadJobWindow {
    let start = f64::from(index) * 5.0;
    UploadJobWindow {
        index,
        start_seconds: start,
        end_seconds: start + 5.0,
        engagement_status: level,
        signals: found
            .iter()
            .map(|&(signal_type, probability, rationale)| Signal {
                signal_type,
                start,
                end: start + 5.0,
                probability: Some(probability),
                rationale: Some(rationale.to_owned()),
                modality: Some(vec![attune::core::wire::Modality::Video]),
            })
            .collect(),
    }
}

#[test]
fn completed_job_envelope_reads_as_clients_expect() {
    let windows = vec![
        window(
            0,
            EngagementLevel::Neutral,
            &[(SignalType::Hesitation, Probability::Low, "first")],
        ),
        window(
            1,
            EngagementLevel::Engaged,
            &[(SignalType::Hesitation, Probability::High, "second")],
        ),
        window(2, EngagementLevel::Engaged, &[]),
    ];
    let sections = Sections::from_flags(&[
        IncludeFlag::Signals,
        IncludeFlag::ConversationQualityOverall,
    ]);
    let created = Timestamp::from_unix_millis(1_795_430_000_000).unwrap();
    let envelope = UploadJobResponse {
        job_id: "0123456789abcdef0123456789abcdef".into(),
        status: UploadJobStatus::Completed,
        model: Model::Inter2,
        created_at: created,
        expires_at: created.plus_seconds(3600),
        status_url: UploadJobResponse::status_url_for("0123456789abcdef0123456789abcdef"),
        result: Some(job_result(windows, 15.0, 5.0, sections)),
        error: None,
    };
    let json: Value = serde_json::to_value(&envelope).unwrap();

    assert_eq!(
        json["status_url"],
        "/v2/upload/jobs/0123456789abcdef0123456789abcdef"
    );
    assert_eq!(json["created_at"], "2026-11-23T10:33:20.000Z");
    assert_eq!(json["expires_at"], "2026-11-23T11:33:20.000Z");
    assert!(json.get("error").is_none(), "error is omitted, not null");
    let result = &json["result"];
    assert_eq!(result["window_seconds"], 5.0);
    assert_eq!(result["windows"].as_array().unwrap().len(), 3);
    assert_eq!(result["windows"][1]["engagement_status"], "engaged");
    // The two hesitation windows merge into one whole-file entry with the
    // highest probability and its rationale.
    let merged = result["signals"].as_array().unwrap();
    assert_eq!(merged.len(), 1);
    assert_eq!(merged[0]["type"], "hesitation");
    assert_eq!(
        (merged[0]["start"].as_f64(), merged[0]["end"].as_f64()),
        (Some(0.0), Some(10.0))
    );
    assert_eq!(merged[0]["probability"], "high");
    assert_eq!(merged[0]["rationale"], "second");
    // Only the overall section was requested.
    let quality = &result["conversation_quality"];
    assert!(quality.get("timeline").is_none());
    let overall = &quality["overall"];
    let dims: f64 = ["clarity", "authority", "energy", "rapport", "learning"]
        .iter()
        .map(|d| overall[*d].as_f64().unwrap())
        .sum();
    assert!((overall["quality_index"].as_f64().unwrap() - dims / 5.0).abs() < 1e-9);
    assert!(
        overall["clarity"].as_f64().unwrap() < 50.0,
        "hesitation lowers clarity: {overall}"
    );
    assert!(
        overall["energy"].as_f64().unwrap() > 50.0,
        "engaged windows raise energy: {overall}"
    );
}
