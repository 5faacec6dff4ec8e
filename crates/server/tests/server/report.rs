//! `GET /v2/upload/jobs/{job_id}/report`: the HTML report of a job, read
//! with the job's own credential and scope rules.

use crate::common::{
    client, expect_error, get_job, json, poll_until_done, post_form, submit, url, Form, Harness,
};
use attune_core::pipeline::{analyze_bytes, AnalysisOptions};
use attune_core::upload::Sections;
use attune_core::wire::Model;
use attune_core::ErrorCode;
use attune_server::{AnalyzerRunner, Scope, Services};
use std::sync::Arc;
use std::time::Duration;

async fn get_report(
    server: &attune_server::ServerHandle,
    credential: Option<&str>,
    job_id: &str,
) -> reqwest::Response {
    let request = client().get(url(server, &format!("/v2/upload/jobs/{job_id}/report")));
    let request = match credential {
        Some(credential) => request.bearer_auth(credential),
        None => request,
    };
    request.send().await.unwrap()
}

#[tokio::test]
async fn a_completed_job_has_its_report_and_only_its_account_reads_it() {
    let harness = Harness::new().await;
    let key = harness.key("acme", &Scope::ALL).await;
    let other = harness.key("globex", &Scope::ALL).await;
    let stream_only = harness.key("acme", &[Scope::Stream]).await;
    let server = harness.start().await;
    let submitted = json(
        submit(
            &server,
            &key,
            "inter-2",
            &[("include[]", "conversation_quality_timeline")],
        )
        .await,
    )
    .await;
    let job_id = submitted["job_id"].as_str().unwrap().to_owned();
    let envelope = poll_until_done(&server, &key, &job_id).await;
    assert_eq!(envelope["status"], "completed", "{envelope}");

    let response = get_report(&server, Some(&key), &job_id).await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"],
        "text/html; charset=utf-8"
    );
    let page = response.text().await.unwrap();
    assert!(page.starts_with("<!DOCTYPE html>"), "{page}");
    assert!(page.contains(&job_id), "the page names its job");
    // The scripted runner reports `interest` in the first window only.
    assert_eq!(page.matches("class=\"signal-lane\"").count(), 1, "{page}");
    assert!(page.contains("data-signal=\"interest\""), "{page}");
    assert!(page.contains("leans in"), "the rationale is shown");
    assert!(page.contains("inter-2"), "{page}");
    assert!(!page.contains("<script"), "no scripts");
    assert!(
        !page.contains("http://") && !page.contains("https://www"),
        "no network"
    );

    expect_error(
        get_report(&server, Some(&other), &job_id).await,
        404,
        ErrorCode::Ih4021,
    )
    .await;
    expect_error(
        get_report(&server, Some(&stream_only), &job_id).await,
        403,
        ErrorCode::Ih2003,
    )
    .await;
    expect_error(
        get_report(&server, None, &job_id).await,
        401,
        ErrorCode::Ih2002,
    )
    .await;
    expect_error(
        get_report(&server, Some(&key), "not-a-job").await,
        404,
        ErrorCode::Ih4021,
    )
    .await;
    server.shutdown().await;
}

#[tokio::test]
async fn a_running_job_answers_202_and_a_failed_one_its_error() {
    let harness = Harness::new().await;
    let key = harness.key("acme", &Scope::ALL).await;
    let server = harness.start().await;
    harness.runner.set(|script| script.hold = true);
    let held = json(submit(&server, &key, "inter-2", &[]).await).await;
    let held_id = held["job_id"].as_str().unwrap().to_owned();
    harness.runner.wait_started(1).await;
    let response = get_report(&server, Some(&key), &held_id).await;
    assert_eq!(response.status(), 202);
    assert_eq!(response.headers()["retry-after"], "5");
    let page = response.text().await.unwrap();
    assert!(page.contains("running"), "{page}");
    harness.runner.release();
    poll_until_done(&server, &key, &held_id).await;

    harness.runner.set(|script| {
        script.hold = false;
        script.run_error = Some(attune_core::ServiceError::with_message(
            ErrorCode::Ih5002,
            "the file is corrupted",
        ));
    });
    let failed = json(submit(&server, &key, "inter-2", &[]).await).await;
    let failed_id = failed["job_id"].as_str().unwrap().to_owned();
    poll_until_done(&server, &key, &failed_id).await;
    let response = get_report(&server, Some(&key), &failed_id).await;
    assert_eq!(response.status(), 200);
    let page = response.text().await.unwrap();
    assert!(page.contains("ih5002"), "{page}");
    assert!(page.contains("the file is corrupted"), "{page}");
    server.shutdown().await;
}

/// The `<g class="speaker-lane">` groups of a report page, in order.
fn speaker_lanes(page: &str) -> Vec<&str> {
    page.match_indices("<g class=\"speaker-lane\"")
        .map(|(start, _)| {
            let end = start + page[start..].find("</g>").expect("a lane ends");
            &page[start..end]
        })
        .collect()
}

#[tokio::test]
async fn a_jobs_report_shows_the_same_speaker_lanes_as_the_clis() {
    let harness = Harness::new().await;
    let key = harness.key("acme", &Scope::ALL).await;
    let max_duration = Duration::from_secs(1800);
    let services = Services::new(
        harness.store.clone(),
        Arc::new(AnalyzerRunner::new(max_duration)),
    )
    .with_clock(harness.clock.clone());
    let server = harness.start_with(|_| {}, services).await;
    let path = format!(
        "{}/../../tests/fixtures/speech/two_voices.wav",
        env!("CARGO_MANIFEST_DIR")
    );
    let bytes = std::fs::read(&path).unwrap();
    let form = Form::new()
        .text("model", "inter-2-audio")
        .text("wait_seconds", "60")
        .file("file", &bytes);
    let job = json(post_form(&server, "/v2/upload/analyze", &key, form).await).await;
    assert_eq!(job["status"], "completed", "{job}");
    let job_id = job["job_id"].as_str().unwrap().to_owned();

    let page = get_report(&server, Some(&key), &job_id)
        .await
        .text()
        .await
        .unwrap();
    // What `attune analyze two_voices.wav --model inter-2-audio --html` draws.
    let options = AnalysisOptions {
        max_duration: max_duration.as_secs_f64(),
        ..AnalysisOptions::new(Model::Inter2Audio)
    };
    let analysis = analyze_bytes(&bytes, &options).unwrap();
    let result = analysis.job_result(Sections::from_flags(&[]));
    let cli =
        attune_server::analyze_cmd::report_page(std::path::Path::new(&path), &analysis, &result);
    let expected = speaker_lanes(&cli);
    assert_eq!(expected.len(), 2, "two voices in the CLI's report: {cli}");
    assert_eq!(speaker_lanes(&page), expected, "{page}");
    assert!(!page.contains("speaker turns: not known"), "{page}");

    // The turns stay off the wire: the job's result is the library's, field for field.
    let envelope = json(get_job(&server, &key, &job_id).await).await;
    assert_eq!(envelope["result"], serde_json::to_value(&result).unwrap());
    server.shutdown().await;
}
