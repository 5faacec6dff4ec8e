//! Per-account limits on every authenticated route: requests per minute,
//! concurrent requests, analysis and daily quotas, subscription.

use crate::common::{expect_error, get_job, json, mint, submit, Harness};
use attune_core::ErrorCode;
use attune_server::{AccountLimits, Scope, UsageStore};
use serde_json::json;

const NO_JOB: &str = "00000000000000000000000000000000";

#[tokio::test]
async fn requests_beyond_the_minutes_allowance_answer_ih3001_with_retry_after() {
    let harness = Harness::new().await;
    let key = harness.key("acme", &Scope::ALL).await;
    let other = harness.key("globex", &Scope::ALL).await;
    harness
        .set_account(
            "acme",
            true,
            AccountLimits {
                requests_per_minute: 2,
                ..AccountLimits::default()
            },
        )
        .await;
    let server = harness.start().await;
    for _ in 0..2 {
        expect_error(get_job(&server, &key, NO_JOB).await, 404, ErrorCode::Ih4021).await;
    }
    let refused = get_job(&server, &key, NO_JOB).await;
    assert_eq!(refused.headers()["retry-after"], "30");
    expect_error(refused, 429, ErrorCode::Ih3001).await;
    // Every authenticated route counts, token minting included.
    let refused = mint(&server, &key, json!({})).await;
    expect_error(refused, 429, ErrorCode::Ih3001).await;
    // Other accounts are not affected.
    expect_error(
        get_job(&server, &other, NO_JOB).await,
        404,
        ErrorCode::Ih4021,
    )
    .await;

    harness.clock.advance(29);
    expect_error(get_job(&server, &key, NO_JOB).await, 429, ErrorCode::Ih3001).await;
    harness.clock.advance(1);
    expect_error(get_job(&server, &key, NO_JOB).await, 404, ErrorCode::Ih4021).await;
    server.shutdown().await;
}

#[tokio::test]
async fn requests_beyond_the_concurrency_limit_answer_ih3002() {
    let harness = Harness::new().await;
    let key = harness.key("acme", &Scope::ALL).await;
    harness
        .set_account(
            "acme",
            true,
            AccountLimits {
                concurrent_requests: 1,
                ..AccountLimits::default()
            },
        )
        .await;
    let server = harness.start().await;
    harness.runner.set(|script| script.hold = true);
    // A submission waiting for its result stays in progress.
    let waiting = tokio::spawn({
        let url = crate::common::url(&server, "/v2/upload/analyze");
        let key = key.clone();
        async move {
            let form = crate::common::Form::new()
                .text("model", "inter-2")
                .text("wait_seconds", "60")
                .media(100);
            crate::common::client()
                .post(url)
                .bearer_auth(key)
                .header("content-type", form.content_type())
                .body(form.into_body())
                .send()
                .await
                .unwrap()
        }
    });
    harness.runner.wait_started(1).await;
    expect_error(get_job(&server, &key, NO_JOB).await, 429, ErrorCode::Ih3002).await;
    harness.runner.release();
    let done = waiting.await.unwrap();
    assert_eq!(done.status(), 200);
    assert_eq!(json(done).await["status"], "completed");
    // Answered, so no longer counted.
    expect_error(get_job(&server, &key, NO_JOB).await, 404, ErrorCode::Ih4021).await;
    server.shutdown().await;
}

#[tokio::test]
async fn analysis_beyond_the_account_quota_answers_ih3003() {
    let harness = Harness::new().await;
    let key = harness.key("acme", &Scope::ALL).await;
    let account = harness
        .set_account(
            "acme",
            true,
            AccountLimits {
                analysis_quota_seconds: 20,
                ..AccountLimits::default()
            },
        )
        .await;
    let server = harness.start().await;
    harness.runner.set(|script| script.duration_seconds = 12.0);
    assert_eq!(submit(&server, &key, "inter-2", &[]).await.status(), 202);
    // 12 more seconds would pass the 20-second quota.
    expect_error(
        submit(&server, &key, "inter-2", &[]).await,
        429,
        ErrorCode::Ih3003,
    )
    .await;
    harness.runner.set(|script| script.duration_seconds = 8.0);
    assert_eq!(submit(&server, &key, "inter-2", &[]).await.status(), 202);
    let usage = harness
        .store
        .usage(account.id, crate::common::start_time().datetime().date())
        .await
        .unwrap();
    assert_eq!(usage.total_seconds, 20.0);
    // Used up: refused before the body is read, on v1 too; reading jobs and
    // minting tokens still work.
    let validated = harness.runner.seen().len();
    expect_error(
        submit(&server, &key, "inter-2", &[]).await,
        429,
        ErrorCode::Ih3003,
    )
    .await;
    let v1 = crate::common::post_form(
        &server,
        "/v1/upload/analyze",
        &key,
        crate::common::Form::new().media(10),
    )
    .await;
    expect_error(v1, 429, ErrorCode::Ih3003).await;
    assert_eq!(harness.runner.seen().len(), validated);
    expect_error(get_job(&server, &key, NO_JOB).await, 404, ErrorCode::Ih4021).await;
    assert_eq!(mint(&server, &key, json!({})).await.status(), 200);
    server.shutdown().await;
}

#[tokio::test]
async fn analysis_beyond_the_daily_quota_answers_ih3004_until_midnight() {
    let harness = Harness::new().await;
    let key = harness.key("acme", &Scope::ALL).await;
    harness
        .set_account(
            "acme",
            true,
            AccountLimits {
                daily_quota_seconds: 15,
                ..AccountLimits::default()
            },
        )
        .await;
    let server = harness.start().await;
    harness.runner.set(|script| script.duration_seconds = 10.0);
    assert_eq!(submit(&server, &key, "inter-2", &[]).await.status(), 202);
    let body = expect_error(
        submit(&server, &key, "inter-2", &[]).await,
        429,
        ErrorCode::Ih3004,
    )
    .await;
    // The clock stands at 2026-11-22T10:00:00Z.
    assert_eq!(
        body.reset_time.map(|t| t.to_string()).as_deref(),
        Some("2026-11-23T00:00:00.000Z")
    );
    harness.clock.advance(14 * 3600);
    assert_eq!(submit(&server, &key, "inter-2", &[]).await.status(), 202);
    server.shutdown().await;
}

#[tokio::test]
async fn an_inactive_subscription_answers_ih3005_everywhere() {
    let harness = Harness::new().await;
    let key = harness.key("acme", &Scope::ALL).await;
    let server = harness.start().await;
    let token =
        crate::common::mint_token(&server, &key, json!({"scopes": ["service.upload"]})).await;
    harness
        .set_account("acme", false, AccountLimits::default())
        .await;
    expect_error(get_job(&server, &key, NO_JOB).await, 403, ErrorCode::Ih3005).await;
    expect_error(
        get_job(&server, &token, NO_JOB).await,
        403,
        ErrorCode::Ih3005,
    )
    .await;
    expect_error(mint(&server, &key, json!({})).await, 403, ErrorCode::Ih3005).await;
    expect_error(
        submit(&server, &key, "inter-2", &[]).await,
        403,
        ErrorCode::Ih3005,
    )
    .await;
    harness
        .set_account("acme", true, AccountLimits::default())
        .await;
    expect_error(get_job(&server, &key, NO_JOB).await, 404, ErrorCode::Ih4021).await;
    server.shutdown().await;
}
