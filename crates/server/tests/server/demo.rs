//! The browser demo's routes over HTTP: the page, the token route's origin rule and its
//! answers when the demo is off or its key unusable, and a demo token opening a stream.
//! The page itself runs in a real browser in tests/browser/.

use crate::common::{client, expect_error, json, url, Harness};
use crate::ws::{connect_with, Auth};
use attune_core::ErrorCode;
use attune_server::routes::OPENAPI_JSON;
use attune_server::{Scope, ServerHandle};
use serde_json::{json, Value};

/// A server whose demo mints with a new key of the `demo` account holding `scopes`;
/// answers the server and the key.
async fn demo_server(h: &Harness, scopes: &[Scope]) -> (ServerHandle, String) {
    let key = h.key("demo", scopes).await;
    let demo_key = key.clone();
    let server = h
        .start_with(
            move |config| config.demo_api_key = Some(demo_key.into()),
            h.services(),
        )
        .await;
    (server, key)
}

fn origin_of(server: &ServerHandle) -> String {
    format!("http://{}", server.local_addr())
}

async fn ask_token(server: &ServerHandle, origin: Option<&str>) -> reqwest::Response {
    let mut request = client().post(url(server, "/demo/token"));
    if let Some(origin) = origin {
        request = request.header("origin", origin);
    }
    request.send().await.unwrap()
}

/// Checks `instance` against the schema the OpenAPI document names at `pointer`.
fn assert_documented(pointer: &str, instance: &Value) {
    let mut root: Value = serde_json::from_str(OPENAPI_JSON).unwrap();
    let object = root.as_object_mut().unwrap();
    object.insert(
        "$schema".into(),
        json!("https://json-schema.org/draft/2020-12/schema"),
    );
    object.insert("$ref".into(), json!(format!("#{pointer}")));
    let validator = jsonschema::options().build(&root).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(instance)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{pointer}: {errors:?}\n{instance:#}");
}

/// The page's script and style nonce, checked to be the one its policy allows.
fn nonce(page: &str, policy: &str) -> String {
    let start = page.find("<script nonce=\"").expect("a nonced script") + 15;
    let nonce = &page[start..start + page[start..].find('"').unwrap()];
    assert!(
        policy.contains(&format!("script-src 'nonce-{nonce}'")),
        "{policy}"
    );
    assert!(page.contains(&format!("<style nonce=\"{nonce}\">")));
    nonce.to_owned()
}

#[tokio::test]
async fn without_a_demo_key_the_page_says_how_to_enable_it_and_no_token_is_minted() {
    let h = Harness::new().await;
    let server = h.start().await;

    let response = client().get(url(&server, "/demo")).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let headers = response.headers().clone();
    assert_eq!(headers["content-type"], "text/html; charset=utf-8");
    assert_eq!(headers["x-content-type-options"], "nosniff");
    let policy = headers["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(policy.contains("default-src 'none'"), "{policy}");
    assert!(policy.contains("connect-src 'self'"), "{policy}");
    let page = response.text().await.unwrap();
    assert!(page.contains(r#"data-demo="disabled""#));
    assert!(page.contains("ATTUNE_DEMO_API_KEY"));
    let first = nonce(&page, &policy);
    // A new nonce for every response.
    let response = client().get(url(&server, "/demo")).send().await.unwrap();
    let policy = response.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert_ne!(nonce(&response.text().await.unwrap(), &policy), first);

    let origin = origin_of(&server);
    let refused = expect_error(
        ask_token(&server, Some(&origin)).await,
        403,
        ErrorCode::Ih2003,
    )
    .await;
    let message = refused.message.unwrap();
    assert!(message.contains("ATTUNE_DEMO_API_KEY"), "{message}");
    server.shutdown().await;
}

#[tokio::test]
async fn a_same_origin_page_gets_a_small_stream_token_and_never_the_key() {
    let h = Harness::new().await;
    let (server, key) = demo_server(&h, &[Scope::Stream, Scope::StreamInter2]).await;
    let origin = origin_of(&server);

    let page = client()
        .get(url(&server, "/demo"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains(r#"data-demo="enabled""#));
    assert!(!page.contains(&key));

    let response = ask_token(&server, Some(&origin)).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["cache-control"], "no-store");
    let text = response.text().await.unwrap();
    assert!(!text.contains(&key), "the key leaked: {text}");
    let minted: Value = serde_json::from_str(&text).unwrap();
    assert_documented("/components/schemas/ClientTokenResponse", &minted);
    assert_eq!(minted["scope"], "service.stream service.stream.inter-2");
    assert_eq!(minted["expires_in"], 600);
    assert_eq!(minted["max_duration_seconds"], 600);
    assert_eq!(minted["max_video_seconds"], 600.0);
    assert_eq!(minted["max_concurrent"], 1);
    assert_eq!(minted["allowed_origins"], json!([origin]));

    // The token opens a stream from the page's origin, and from nowhere else.
    let token = minted["access_token"].as_str().unwrap().to_owned();
    let mut ws = connect_with(
        &server,
        "/v2/stream/analyze",
        Auth::Subprotocol(&token),
        &[("origin", &origin)],
    )
    .await;
    assert_eq!(ws.protocol.as_deref(), Some("access_token"));
    ws.ready().await;
    let (_, code) = ws.close_gracefully().await;
    assert_eq!(code, 1000);
    let mut ws = connect_with(
        &server,
        "/v2/stream/analyze",
        Auth::Subprotocol(&token),
        &[("origin", "https://elsewhere.example")],
    )
    .await;
    let (events, _) = ws.rest().await;
    assert_eq!(events[0]["data"]["code"], "ih2013", "{events:?}");

    // A credential sent by the page does not choose the minting key.
    let response = client()
        .post(url(&server, "/demo/token"))
        .header("origin", &origin)
        .bearer_auth("atk_not-a-key")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    // `localhost` reached as such is this server too.
    let response = client()
        .post(url(&server, "/demo/token"))
        .header("origin", "http://localhost:7")
        .header("host", "localhost:7")
        .send()
        .await
        .unwrap();
    assert_eq!(
        json(response).await["allowed_origins"],
        json!(["http://localhost:7"])
    );
    server.shutdown().await;
}

#[tokio::test]
async fn other_origins_are_refused() {
    let h = Harness::new().await;
    let (server, _) = demo_server(&h, &[Scope::Stream, Scope::StreamInter2]).await;
    let port = server.local_addr().port();
    for origin in [
        None,
        Some("null".to_owned()),
        Some("https://evil.example".to_owned()),
        Some(format!("http://127.0.0.1:{}", port.wrapping_add(1))),
    ] {
        let response = ask_token(&server, origin.as_deref()).await;
        let refused = expect_error(response, 403, ErrorCode::Ih2013).await;
        assert!(refused.message.is_some(), "{origin:?}");
    }
    // A DNS name pointed at this server: Origin and Host agree, and it is still refused.
    let response = client()
        .post(url(&server, "/demo/token"))
        .header("origin", "http://rebound.example:8080")
        .header("host", "rebound.example:8080")
        .send()
        .await
        .unwrap();
    expect_error(response, 403, ErrorCode::Ih2013).await;
    server.shutdown().await;
}

#[tokio::test]
async fn an_unusable_demo_key_is_a_server_fault_that_names_no_key() {
    let h = Harness::new().await;
    // A key without the stream scopes.
    let (server, key) = demo_server(&h, &[Scope::Upload]).await;
    let origin = origin_of(&server);
    let response = ask_token(&server, Some(&origin)).await;
    let body = expect_error(response, 503, ErrorCode::Ih1003).await;
    assert!(!format!("{body:?}").contains(&key));
    server.shutdown().await;

    // A key the store does not know (revoked, or from another store).
    let h = Harness::new().await;
    let unknown = attune_server::ApiKey::generate().expose().to_owned();
    let server = h
        .start_with(
            |config| config.demo_api_key = Some(unknown.clone().into()),
            h.services(),
        )
        .await;
    let response = ask_token(&server, Some(&origin_of(&server))).await;
    let body = expect_error(response, 503, ErrorCode::Ih1003).await;
    assert!(!format!("{body:?}").contains(&unknown));
    server.shutdown().await;
}
