//! `GET /metrics`: a scrape after real traffic (a 200, a 401, an unknown
//! path, a stream session opened and ended, a job run) counts what a user
//! would expect, by route template and never by raw path or credential.

use crate::common::{client, submit, url, Harness, HANG_GUARD};
use crate::ws::{connect, Auth};
use attune_server::{Scope, ServerHandle};
use std::time::Duration;

/// The scrape's text, checked for its content type on the way.
async fn scrape(server: &ServerHandle) -> String {
    let response = client().get(url(server, "/metrics")).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/openmetrics-text"),
        "{:?}",
        response.headers()["content-type"]
    );
    response.text().await.unwrap()
}

/// The sum of the samples named `name` whose labels include every pair of
/// `labels`, parsed from the text format (`name{k="v",...} value`).
fn sample(text: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    let mut sum = 0.0;
    let mut found = false;
    for line in text.lines().filter(|line| !line.starts_with('#')) {
        let (series, value) = line.rsplit_once(' ').expect("a sample line has a value");
        let (series_name, series_labels) = match series.split_once('{') {
            Some((n, rest)) => (n, rest.trim_end_matches('}')),
            None => (series, ""),
        };
        if series_name != name {
            continue;
        }
        let pairs: Vec<&str> = series_labels.split(',').collect();
        if labels
            .iter()
            .all(|(k, v)| pairs.contains(&format!("{k}=\"{v}\"").as_str()))
        {
            found = true;
            sum += value.parse::<f64>().expect("a numeric sample value");
        }
    }
    assert!(found, "no sample {name} {labels:?} in:\n{text}");
    sum
}

/// Scrapes until `name{labels}` reads `want`: a session's count drops when
/// its server task has finished, just after the client sees the close.
async fn scrape_until(server: &ServerHandle, name: &str, labels: &[(&str, &str)], want: f64) {
    tokio::time::timeout(HANG_GUARD, async {
        loop {
            if sample(&scrape(server).await, name, labels) == want {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{name} {labels:?} never reached {want}"));
}

#[tokio::test]
async fn a_scrape_counts_requests_sessions_and_jobs_by_route_template() {
    let harness = Harness::new().await;
    let key = harness.key("acme", &Scope::ALL).await;
    let server = harness.start().await;
    let client = client();

    let health = client.get(url(&server, "/healthz")).send().await.unwrap();
    assert_eq!(health.status(), 200);
    let unauthenticated = client
        .post(url(&server, "/v2/upload/analyze"))
        .send()
        .await
        .unwrap();
    assert_eq!(unauthenticated.status(), 401);
    let unknown = client
        .get(url(&server, "/v2/upload/nothing-here-7f3a"))
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), 404);
    let job_read = client
        .get(url(
            &server,
            "/v2/upload/jobs/0123456789abcdef0123456789abcdef",
        ))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(job_read.status(), 404);

    let text = scrape(&server).await;
    let requests = "attune_http_requests_total";
    let analyze = [("route", "/v2/upload/analyze"), ("method", "POST")];
    assert_eq!(
        sample(
            &text,
            requests,
            &[analyze[0], analyze[1], ("status", "401")]
        ),
        1.0
    );
    assert_eq!(
        sample(
            &text,
            requests,
            &[("route", "/healthz"), ("method", "GET"), ("status", "200")]
        ),
        1.0
    );
    assert_eq!(
        sample(&text, requests, &[("route", "other"), ("status", "404")]),
        1.0
    );
    assert_eq!(
        sample(
            &text,
            requests,
            &[("route", "/v2/upload/jobs/{job_id}"), ("status", "404")]
        ),
        1.0
    );
    assert_eq!(
        sample(
            &text,
            "attune_http_request_duration_seconds_count",
            &[("route", "/healthz")]
        ),
        1.0
    );
    // Bounded labels: no raw path, id or credential is ever a label value.
    for secret in [
        "nothing-here-7f3a",
        "0123456789abcdef",
        key.as_str(),
        "acme",
    ] {
        assert!(!text.contains(secret), "{secret} leaked into:\n{text}");
    }

    // A stream session counts while open and no longer once it ended.
    let sessions = "attune_stream_sessions";
    assert_eq!(sample(&text, sessions, &[("endpoint", "v2")]), 0.0);
    let mut ws = connect(&server, "/v2/stream/analyze", Auth::Header(&key)).await;
    ws.ready().await;
    let text = scrape(&server).await;
    assert_eq!(sample(&text, sessions, &[("endpoint", "v2")]), 1.0);
    assert_eq!(sample(&text, sessions, &[("endpoint", "v1")]), 0.0);
    let (_, code) = ws.close_gracefully().await;
    assert_eq!(code, 1000);
    scrape_until(&server, sessions, &[("endpoint", "v2")], 0.0).await;
    assert_eq!(
        sample(
            &scrape(&server).await,
            "attune_stream_dropped_seconds_total",
            &[("endpoint", "v2")]
        ),
        0.0
    );

    // A job run: accepted, waited for a worker, completed, no longer held.
    let response = submit(&server, &key, "inter-2", &[("wait_seconds", "30")]).await;
    assert_eq!(response.status(), 200);
    let text = scrape(&server).await;
    assert_eq!(
        sample(
            &text,
            requests,
            &[analyze[0], analyze[1], ("status", "200")]
        ),
        1.0
    );
    assert_eq!(
        sample(&text, "attune_job_queue_wait_seconds_count", &[]),
        1.0
    );
    assert_eq!(sample(&text, "attune_jobs", &[("state", "queued")]), 0.0);
    assert_eq!(sample(&text, "attune_jobs", &[("state", "running")]), 0.0);
    assert_eq!(sample(&text, "attune_store_errors_total", &[]), 0.0);
    // The scrapes themselves are requests too, under their own route.
    assert!(sample(&text, requests, &[("route", "/metrics"), ("status", "200")]) >= 3.0);
    server.shutdown().await;
}

/// A stream session that analyzes speech records how far each analyzed
/// window trailed real time, under its endpoint.
#[tokio::test]
async fn stream_analysis_lag_is_observed_per_endpoint() {
    let h = Harness::new().await;
    let server = h.start().await;
    let key = h.key("streamer", &Scope::ALL).await;
    let lag = "attune_stream_analysis_lag_seconds_count";
    let text = scrape(&server).await;
    assert_eq!(sample(&text, lag, &[("endpoint", "v2")]), 0.0);
    let mut ws = connect(
        &server,
        "/v2/stream/analyze?model=inter-2-audio",
        Auth::Header(&key),
    )
    .await;
    ws.ready().await;
    ws.json(serde_json::json!({
        "audio_format": {"encoding": "pcm_s16le", "sample_rate": 16000, "channels": 1},
    }))
    .await;
    ws.until("session.updated").await;
    let path = format!(
        "{}/../../tests/fixtures/speech/baseline.wav",
        env!("CARGO_MANIFEST_DIR")
    );
    let wav = std::fs::read(&path).unwrap();
    for chunk in wav[44..].chunks(16_000) {
        ws.binary(chunk).await;
    }
    let (_, code) = ws.close_gracefully().await;
    assert_eq!(code, 1000);
    let text = scrape(&server).await;
    assert!(sample(&text, lag, &[("endpoint", "v2")]) >= 1.0, "{text}");
    assert_eq!(sample(&text, lag, &[("endpoint", "v1")]), 0.0);
    server.shutdown().await;
}

/// The age of the oldest job waiting for a worker: 0 with none waiting,
/// then the time since the oldest still queued was accepted (a running job
/// no longer counts).
#[tokio::test]
async fn the_oldest_queued_jobs_age_is_exported() {
    let h = Harness::new().await;
    let key = h.key("acme", &Scope::ALL).await;
    let server = h
        .start_with(|config| config.analysis_threads = Some(1), h.services())
        .await;
    h.runner.set(|script| script.hold = true);
    let oldest = "attune_job_queue_oldest_age_seconds";
    assert_eq!(sample(&scrape(&server).await, oldest, &[]), 0.0);
    // The first job takes the only worker and waits there.
    assert_eq!(submit(&server, &key, "inter-2", &[]).await.status(), 202);
    h.runner.wait_started(1).await;
    h.clock.advance(30);
    assert_eq!(sample(&scrape(&server).await, oldest, &[]), 0.0);
    // Two more queue behind it, 30 s and 40 s after the first.
    assert_eq!(submit(&server, &key, "inter-2", &[]).await.status(), 202);
    h.clock.advance(10);
    assert_eq!(submit(&server, &key, "inter-2", &[]).await.status(), 202);
    h.clock.advance(12);
    assert_eq!(sample(&scrape(&server).await, oldest, &[]), 22.0);
    // Once they have all run, nothing waits.
    h.runner.release();
    h.runner.wait_finished(3).await;
    assert_eq!(sample(&scrape(&server).await, oldest, &[]), 0.0);
    server.shutdown().await;
}
