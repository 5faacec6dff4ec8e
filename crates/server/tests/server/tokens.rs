//! `POST /v1/client_tokens` and its revoke route, and client tokens used as
//! credentials: scopes, lifetime, revocation, origins, byte cap and budget.

use crate::common::{
    client, expect_error, get_job, json, mint, mint_token, post_form, submit, url, Form, Harness,
};
use attune_core::ErrorCode;
use attune_server::{KeyStore, Scope};
use serde_json::json;

/// A job id no job has: reading it with a credential that passes
/// authentication and scope answers 404, so 404 here means "accepted".
const NO_JOB: &str = "00000000000000000000000000000000";

async fn mint_raw(
    server: &attune_server::ServerHandle,
    content_type: Option<&str>,
    authorization: Option<&str>,
    body: &str,
) -> reqwest::Response {
    let mut request = client()
        .post(url(server, "/v1/client_tokens"))
        .body(body.to_owned());
    if let Some(content_type) = content_type {
        request = request.header("content-type", content_type);
    }
    if let Some(key) = authorization {
        request = request.bearer_auth(key);
    }
    request.send().await.unwrap()
}

#[tokio::test]
async fn a_token_is_minted_with_defaults_from_a_bearer_key() {
    let harness = Harness::new().await;
    let key = harness.key("acme", &Scope::ALL).await;
    let server = harness.start().await;
    let response = mint(&server, &key, json!({})).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["cache-control"], "no-store");
    let body = json(response).await;
    let token = body["access_token"].as_str().unwrap();
    assert!(token.starts_with("att_") && token.len() == 68, "{token}");
    assert_eq!(body["token_type"], "Bearer");
    assert_eq!(body["expires_in"], 300);
    assert_eq!(body["scope"], "service.stream");
    assert_eq!(body["max_concurrent"], 1);
    for absent in [
        "max_duration_seconds",
        "max_bytes",
        "max_video_seconds",
        "allowed_origins",
    ] {
        assert!(body.get(absent).is_none(), "{absent} in {body}");
    }
    server.shutdown().await;
}

#[tokio::test]
async fn a_token_is_minted_from_a_key_in_the_body_with_effective_caps() {
    let harness = Harness::new().await;
    let key = harness.key("acme", &Scope::ALL).await;
    let server = harness.start().await;
    let request = json!({
        "api_key": key,
        "scopes": ["service.upload", "service.stream", "service.upload.inter-2"],
        "expires_in": 86400,
        "max_duration_seconds": 7200,
        "max_bytes": 1000,
        "max_concurrent": 3,
        "max_video_seconds": 90.5,
        "allowed_origins": ["HTTPS://App.Example.com/"],
        "client_name": "unknown fields are ignored",
    });
    let response = mint_raw(
        &server,
        Some("application/json"),
        None,
        &request.to_string(),
    )
    .await;
    assert_eq!(response.status(), 200);
    let body = json(response).await;
    assert_eq!(body["expires_in"], 3600, "clamped to 3600");
    assert_eq!(
        body["scope"],
        "service.upload service.upload.inter-2 service.stream"
    );
    assert_eq!(body["max_duration_seconds"], 3600);
    assert_eq!(body["max_bytes"], 1000);
    assert_eq!(body["max_concurrent"], 3);
    assert_eq!(body["max_video_seconds"], 90.5);
    assert_eq!(body["allowed_origins"], json!(["https://app.example.com"]));

    let short = mint(&server, &key, json!({"expires_in": 1})).await;
    assert_eq!(json(short).await["expires_in"], 60, "clamped to 60");
    server.shutdown().await;
}

#[tokio::test]
async fn minting_refuses_bad_credentials_bodies_and_scopes() {
    let harness = Harness::new().await;
    let key = harness.key("acme", &[Scope::Stream, Scope::Upload]).await;
    let server = harness.start().await;

    let missing = mint_raw(&server, Some("application/json"), None, "{}").await;
    expect_error(missing, 401, ErrorCode::Ih2002).await;
    let unknown = format!("atk_{}", "0".repeat(64));
    let invalid = mint_raw(&server, Some("application/json"), Some(&unknown), "{}").await;
    expect_error(invalid, 401, ErrorCode::Ih2001).await;
    let body_key = json!({"api_key": unknown}).to_string();
    let invalid = mint_raw(&server, None, None, &body_key).await;
    expect_error(invalid, 401, ErrorCode::Ih2001).await;

    let broken = mint_raw(
        &server,
        Some("application/json"),
        Some(&key),
        "{\"scopes\": [",
    )
    .await;
    expect_error(broken, 400, ErrorCode::Ih4006).await;
    let wrong_shape = mint_raw(
        &server,
        Some("application/json"),
        Some(&key),
        r#"{"scopes": "service.stream"}"#,
    )
    .await;
    expect_error(wrong_shape, 400, ErrorCode::Ih4006).await;
    let form = mint_raw(
        &server,
        Some("application/x-www-form-urlencoded"),
        Some(&key),
        "scopes=service.stream",
    )
    .await;
    let body = expect_error(form, 400, ErrorCode::Ih4006).await;
    let message = body.message.unwrap();
    assert!(
        message.contains("Content-Type: application/json"),
        "{message}"
    );
    // Without a content type the body is read as JSON; an empty one as `{}`.
    let bare = mint_raw(&server, None, Some(&key), "").await;
    assert_eq!(bare.status(), 200);

    let unknown_scope = mint(&server, &key, json!({"scopes": ["service.everything"]})).await;
    expect_error(unknown_scope, 400, ErrorCode::Ih4005).await;
    let bad_origin = mint(&server, &key, json!({"allowed_origins": ["*"]})).await;
    expect_error(bad_origin, 400, ErrorCode::Ih4005).await;
    let zero_bytes = mint(&server, &key, json!({"max_bytes": 0})).await;
    expect_error(zero_bytes, 400, ErrorCode::Ih4005).await;

    let beyond_key = mint(
        &server,
        &key,
        json!({"scopes": ["service.stream.inter-2-audio"]}),
    )
    .await;
    let body = expect_error(beyond_key, 403, ErrorCode::Ih2003).await;
    assert!(body
        .message
        .unwrap()
        .contains("service.stream.inter-2-audio"));

    // A token cannot mint tokens.
    let token = mint_token(&server, &key, json!({"scopes": ["service.stream"]})).await;
    let from_token = mint(&server, &token, json!({})).await;
    expect_error(from_token, 403, ErrorCode::Ih2003).await;
    server.shutdown().await;
}

#[tokio::test]
async fn a_token_works_until_it_expires() {
    let harness = Harness::new().await;
    let key = harness.key("acme", &Scope::ALL).await;
    let server = harness.start().await;
    let token = mint_token(
        &server,
        &key,
        json!({"scopes": ["service.upload"], "expires_in": 120}),
    )
    .await;
    expect_error(
        get_job(&server, &token, NO_JOB).await,
        404,
        ErrorCode::Ih4021,
    )
    .await;
    harness.clock.advance(119);
    expect_error(
        get_job(&server, &token, NO_JOB).await,
        404,
        ErrorCode::Ih4021,
    )
    .await;
    harness.clock.advance(1);
    expect_error(
        get_job(&server, &token, NO_JOB).await,
        401,
        ErrorCode::Ih2001,
    )
    .await;
    // Revoking an expired token succeeds, and it stays plainly invalid.
    let revoked = client()
        .post(url(&server, "/v1/client_tokens/revoke"))
        .bearer_auth(&key)
        .header("content-type", "application/json")
        .body(json!({"token": token}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(revoked.status(), 200);
    expect_error(
        get_job(&server, &token, NO_JOB).await,
        401,
        ErrorCode::Ih2001,
    )
    .await;
    server.shutdown().await;
}

async fn revoke(server: &attune_server::ServerHandle, key: &str, token: &str) -> reqwest::Response {
    client()
        .post(url(server, "/v1/client_tokens/revoke"))
        .header("content-type", "application/json")
        .body(json!({"api_key": key, "token": token}).to_string())
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_revoked_token_answers_ih2014_and_only_its_account_can_revoke_it() {
    let harness = Harness::new().await;
    let key = harness.key("acme", &Scope::ALL).await;
    let stranger = harness.key("globex", &Scope::ALL).await;
    let server = harness.start().await;
    let token = mint_token(&server, &key, json!({"scopes": ["service.upload"]})).await;

    // Another account's key answers the same 200 but changes nothing.
    let response = revoke(&server, &stranger, &token).await;
    assert_eq!(response.status(), 200);
    assert_eq!(json(response).await, json!({}));
    expect_error(
        get_job(&server, &token, NO_JOB).await,
        404,
        ErrorCode::Ih4021,
    )
    .await;

    assert_eq!(revoke(&server, &key, &token).await.status(), 200);
    expect_error(
        get_job(&server, &token, NO_JOB).await,
        401,
        ErrorCode::Ih2014,
    )
    .await;
    // Revoking twice succeeds.
    assert_eq!(revoke(&server, &key, &token).await.status(), 200);

    // A key is not a token; a token cannot revoke.
    expect_error(revoke(&server, &key, &key).await, 400, ErrorCode::Ih4005).await;
    let other = mint_token(&server, &key, json!({"scopes": ["service.upload"]})).await;
    let by_token = client()
        .post(url(&server, "/v1/client_tokens/revoke"))
        .bearer_auth(&other)
        .header("content-type", "application/json")
        .body(json!({"token": other}).to_string())
        .send()
        .await
        .unwrap();
    expect_error(by_token, 403, ErrorCode::Ih2003).await;
    let no_token = client()
        .post(url(&server, "/v1/client_tokens/revoke"))
        .bearer_auth(&key)
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .unwrap();
    expect_error(no_token, 400, ErrorCode::Ih4006).await;
    server.shutdown().await;
}

#[tokio::test]
async fn a_token_dies_with_its_minting_key() {
    let harness = Harness::new().await;
    let key = harness.key("acme", &Scope::ALL).await;
    let server = harness.start().await;
    let token = mint_token(&server, &key, json!({"scopes": ["service.upload"]})).await;
    let key_id = harness.store.list_keys().await.unwrap()[0].id.clone();
    harness.store.revoke_key(&key_id).await.unwrap();
    expect_error(
        get_job(&server, &token, NO_JOB).await,
        401,
        ErrorCode::Ih2014,
    )
    .await;
    server.shutdown().await;
}

#[tokio::test]
async fn a_token_with_allowed_origins_needs_a_listed_origin() {
    let harness = Harness::new().await;
    let key = harness.key("acme", &Scope::ALL).await;
    let server = harness.start().await;
    let token = mint_token(
        &server,
        &key,
        json!({
            "scopes": ["service.upload"],
            "allowed_origins": ["https://app.example.com", "http://localhost:3000"],
        }),
    )
    .await;
    let read = |origin: Option<&'static str>| {
        let mut request = client()
            .get(url(&server, &format!("/v2/upload/jobs/{NO_JOB}")))
            .bearer_auth(&token);
        if let Some(origin) = origin {
            request = request.header("origin", origin);
        }
        request.send()
    };
    expect_error(read(None).await.unwrap(), 403, ErrorCode::Ih2013).await;
    for refused in [
        "https://evil.example.com",
        "http://app.example.com",
        "https://app.example.com.evil.example",
        "null",
    ] {
        expect_error(read(Some(refused)).await.unwrap(), 403, ErrorCode::Ih2013).await;
    }
    for allowed in [
        "https://app.example.com",
        "https://APP.example.com:443",
        "http://localhost:3000",
    ] {
        expect_error(read(Some(allowed)).await.unwrap(), 404, ErrorCode::Ih4021).await;
    }

    // Without a list, any origin or none is fine.
    let open = mint_token(&server, &key, json!({"scopes": ["service.upload"]})).await;
    expect_error(
        get_job(&server, &open, NO_JOB).await,
        404,
        ErrorCode::Ih4021,
    )
    .await;
    server.shutdown().await;
}

#[tokio::test]
async fn a_tokens_video_budget_is_shared_and_answers_ih3006_when_used_up() {
    let harness = Harness::new().await;
    let key = harness.key("acme", &Scope::ALL).await;
    let server = harness.start().await;
    harness.runner.set(|script| script.duration_seconds = 6.0);
    let token = mint_token(
        &server,
        &key,
        json!({"scopes": ["service.upload", "service.upload.inter-2"], "max_video_seconds": 10}),
    )
    .await;
    // 6 s of the 10 s budget.
    assert_eq!(submit(&server, &token, "inter-2", &[]).await.status(), 202);
    // Another 6 s does not fit in the 4 s left: refused when charged.
    let body = expect_error(
        submit(&server, &token, "inter-2", &[]).await,
        429,
        ErrorCode::Ih3006,
    )
    .await;
    assert!(body.message.unwrap().contains("4.0 s left"));
    // 4 s fits exactly; then the budget is empty and requests are refused
    // before their body is read.
    harness.runner.set(|script| script.duration_seconds = 4.0);
    assert_eq!(submit(&server, &token, "inter-2", &[]).await.status(), 202);
    let validated = harness.runner.seen().len();
    expect_error(
        submit(&server, &token, "inter-2", &[]).await,
        429,
        ErrorCode::Ih3006,
    )
    .await;
    assert_eq!(
        harness.runner.seen().len(),
        validated,
        "refused before validation"
    );
    // The API key itself has no budget.
    assert_eq!(submit(&server, &key, "inter-2", &[]).await.status(), 202);
    server.shutdown().await;
}

#[tokio::test]
async fn a_failed_analysis_gives_the_budget_back() {
    let harness = Harness::new().await;
    let key = harness.key("acme", &Scope::ALL).await;
    let server = harness.start().await;
    harness.runner.set(|script| {
        script.duration_seconds = 10.0;
        script.run_error = Some(ErrorCode::Ih5002.into());
    });
    let token = mint_token(
        &server,
        &key,
        json!({"scopes": ["service.upload", "service.upload.inter-2"], "max_video_seconds": 10}),
    )
    .await;
    let response = submit(&server, &token, "inter-2", &[("wait_seconds", "30")]).await;
    assert_eq!(response.status(), 200);
    assert_eq!(json(response).await["status"], "failed");
    harness.runner.set(|script| script.run_error = None);
    let response = submit(&server, &token, "inter-2", &[("wait_seconds", "30")]).await;
    assert_eq!(response.status(), 200);
    assert_eq!(json(response).await["status"], "completed");
    server.shutdown().await;
}

#[tokio::test]
async fn a_tokens_max_bytes_caps_its_uploads() {
    let harness = Harness::new().await;
    let key = harness.key("acme", &Scope::ALL).await;
    let server = harness.start().await;
    let token = mint_token(
        &server,
        &key,
        json!({"scopes": ["service.upload", "service.upload.inter-2"], "max_bytes": 5000}),
    )
    .await;
    let small = Form::new().text("model", "inter-2").media(5000);
    assert_eq!(
        post_form(&server, "/v2/upload/analyze", &token, small)
            .await
            .status(),
        202
    );
    let large = Form::new().text("model", "inter-2").media(5001);
    let body = expect_error(
        post_form(&server, "/v2/upload/analyze", &token, large).await,
        413,
        ErrorCode::Ih4003,
    )
    .await;
    assert!(body.message.unwrap().contains("5000 bytes"));
    server.shutdown().await;
}
