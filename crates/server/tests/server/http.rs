//! Routing, headers and error bodies.

use crate::common::{client, correlation_id, error_body, url, Harness, DOCS_URL};
use attune_core::ErrorCode;
use std::collections::HashSet;

#[tokio::test]
async fn every_response_carries_its_own_correlation_id_and_never_the_client_request_id() {
    let harness = Harness::new().await;
    let server = harness.start().await;
    let client = client();
    let requests = [
        client.get(url(&server, "/healthz")),
        client.get(url(&server, "/healthz")),
        client.get(url(&server, "/no/such/route")),
        client.delete(url(&server, "/healthz")),
        client.post(url(&server, "/auth")),
    ];
    let mut seen = HashSet::new();
    for request in requests {
        let response = request
            .header("X-Client-Request-Id", "client-req-4711")
            .header("X-Service-SDK", "not a semver at all")
            .send()
            .await
            .unwrap();
        assert!(seen.insert(correlation_id(&response)), "ids repeat");
        for (name, value) in response.headers() {
            assert_ne!(name.as_str(), "x-client-request-id");
            assert!(!value
                .as_bytes()
                .windows(15)
                .any(|w| w == b"client-req-4711"));
        }
        let body = response.text().await.unwrap();
        assert!(!body.contains("client-req-4711"), "{body}");
    }
    server.shutdown().await;
}

#[tokio::test]
async fn healthz_answers_ok_whatever_the_sdk_header_says() {
    let harness = Harness::new().await;
    let server = harness.start().await;
    let response = client()
        .get(url(&server, "/healthz"))
        .header("X-Service-SDK", "??? not-an-sdk/-1.x")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/json");
    let body: serde_json::Value = serde_json::from_str(&response.text().await.unwrap()).unwrap();
    assert_eq!(body, serde_json::json!({"status": "ok"}));
    server.shutdown().await;
}

#[tokio::test]
async fn the_official_clients_sdk_header_never_changes_an_answer() {
    // `interhumanai` sends `X-Interhuman-SDK`, the interface names `X-Service-SDK`: either
    // one, even malformed, leaves credential checks and routing exactly as without it.
    let harness = Harness::new().await;
    let key = harness.key("acme", &attune_server::Scope::ALL).await;
    let server = harness.start().await;
    let client = client();
    let missing_job = "/v2/upload/jobs/00000000000000000000000000000000";
    for sdk in [
        None,
        Some(("X-Interhuman-SDK", "python/1.3.4")),
        Some(("X-Service-SDK", "python/1.3.4")),
        Some(("X-Interhuman-SDK", "??? not-an-sdk")),
    ] {
        for (credential, status, code) in [
            (None, 401, ErrorCode::Ih2002),
            (Some("ih_not-a-key"), 401, ErrorCode::Ih2001),
            (Some(key.as_str()), 404, ErrorCode::Ih4021),
        ] {
            let mut request = client.get(url(&server, missing_job));
            if let Some(credential) = credential {
                request = request.bearer_auth(credential);
            }
            if let Some((name, value)) = sdk {
                request = request.header(name, value);
            }
            let response = request.send().await.unwrap();
            assert_eq!(response.status(), status, "{sdk:?} {credential:?}");
            assert_eq!(error_body(response).await.error_id, code, "{sdk:?}");
        }
    }
    server.shutdown().await;
}

#[tokio::test]
async fn unknown_paths_answer_404_and_wrong_methods_405_with_allow() {
    let harness = Harness::new().await;
    let server = harness.start().await;
    let response = client()
        .get(url(&server, "/v9/nothing?api_key=query-secret"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 404);
    let body = error_body(response).await;
    assert_eq!(body.error_id, ErrorCode::Ih4005);
    let message = body.message.unwrap();
    assert!(message.contains("/v9/nothing"), "{message}");
    assert!(!message.contains("query-secret"), "{message}");

    let response = client().put(url(&server, "/healthz")).send().await.unwrap();
    assert_eq!(response.status(), 405);
    assert_eq!(response.headers()["allow"], "GET, HEAD");
    assert_eq!(error_body(response).await.error_id, ErrorCode::Ih4005);

    let response = client().get(url(&server, "/auth")).send().await.unwrap();
    assert_eq!(response.status(), 405);
    assert_eq!(response.headers()["allow"], "POST");
    server.shutdown().await;
}

#[tokio::test]
async fn legacy_auth_points_to_api_keys() {
    let harness = Harness::new().await;
    let server = harness.start().await;
    let response = client()
        .post(url(&server, "/auth"))
        .header("content-type", "application/json")
        .body(r#"{"key_id":"kid","key_secret":"legacy-secret"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    assert_eq!(response.headers()["www-authenticate"], "Bearer");
    let body = error_body(response).await;
    assert_eq!(body.error_id, ErrorCode::Ih2001);
    assert_eq!(
        body.link.as_deref(),
        Some(
            format!("{DOCS_URL}/api-reference/error-handling#ih2001-invalid-credentials").as_str()
        )
    );
    let message = body.message.unwrap();
    assert!(
        message.contains("Authorization: Bearer <API key>"),
        "{message}"
    );
    assert!(message.contains("key_id/key_secret"), "{message}");
    server.shutdown().await;
}

#[tokio::test]
async fn the_api_routes_answer_their_methods_only() {
    let harness = Harness::new().await;
    let server = harness.start().await;
    let client = client();
    for (method, path, allow) in [
        (reqwest::Method::GET, "/v2/upload/analyze", "POST"),
        (reqwest::Method::PUT, "/v1/upload/analyze", "POST"),
        (reqwest::Method::GET, "/v1/client_tokens", "POST"),
        (reqwest::Method::DELETE, "/v1/client_tokens/revoke", "POST"),
        (
            reqwest::Method::POST,
            "/v2/upload/jobs/0123456789abcdef0123456789abcdef",
            "GET, HEAD",
        ),
    ] {
        let response = client
            .request(method.clone(), url(&server, path))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 405, "{method} {path}");
        assert_eq!(response.headers()["allow"], allow, "{method} {path}");
        assert_eq!(error_body(response).await.error_id, ErrorCode::Ih4005);
    }
    for path in [
        "/v2/upload/jobs/",
        "/v2/upload/jobs/a/b",
        "/v1/client_tokens/x",
    ] {
        let response = client.get(url(&server, path)).send().await.unwrap();
        assert_eq!(response.status(), 404, "{path}");
    }
    // Every API route needs a credential.
    for (method, path) in [
        (reqwest::Method::POST, "/v2/upload/analyze"),
        (reqwest::Method::POST, "/v1/upload/analyze"),
        (reqwest::Method::POST, "/v1/client_tokens"),
        (reqwest::Method::POST, "/v1/client_tokens/revoke"),
        (
            reqwest::Method::GET,
            "/v2/upload/jobs/0123456789abcdef0123456789abcdef",
        ),
    ] {
        let response = client
            .request(method.clone(), url(&server, path))
            .header("content-type", "application/json")
            .body(r#"{"token": "att_x"}"#)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 401, "{method} {path}");
        assert_eq!(response.headers()["www-authenticate"], "Bearer");
        assert_eq!(error_body(response).await.error_id, ErrorCode::Ih2002);
    }
    server.shutdown().await;
}
