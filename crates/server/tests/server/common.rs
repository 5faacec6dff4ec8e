//! Starting servers and reading their answers.

use attune_core::wire::ErrorResponse;
use attune_server::config::{Config, ConfigLayer};
use attune_server::ServerHandle;
use std::time::Duration;

/// The `docs_url` every test server is configured with.
pub const DOCS_URL: &str = "https://docs.attune.test";

/// A server on a free loopback port.
pub async fn start() -> ServerHandle {
    start_with_grace(Duration::from_secs(30)).await
}

/// A server on a free loopback port with the given shutdown grace period.
pub async fn start_with_grace(grace: Duration) -> ServerHandle {
    let config = Config::from_layer(ConfigLayer {
        bind: Some("127.0.0.1:0".parse().unwrap()),
        docs_url: Some(DOCS_URL.to_owned()),
        shutdown_grace_seconds: Some(grace.as_secs()),
        ..ConfigLayer::default()
    })
    .unwrap();
    attune_server::spawn(config).await.unwrap()
}

/// An HTTP client that never goes through a proxy.
pub fn client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().build().unwrap()
}

/// `http://{addr}{path}`.
pub fn url(server: &ServerHandle, path: &str) -> String {
    format!("http://{}{path}", server.local_addr())
}

/// The response's `X-Correlation-ID`, checked to be 32 hex characters.
pub fn correlation_id(response: &reqwest::Response) -> String {
    let id = response
        .headers()
        .get("x-correlation-id")
        .expect("every response carries X-Correlation-ID")
        .to_str()
        .unwrap()
        .to_owned();
    assert_eq!(id.len(), 32, "{id}");
    assert!(id.bytes().all(|b| b.is_ascii_hexdigit()), "{id}");
    id
}

/// The body as an `ErrorResponse`, checking its correlation id against the
/// header.
pub async fn error_body(response: reqwest::Response) -> ErrorResponse {
    let header = correlation_id(&response);
    let bytes = response.bytes().await.unwrap();
    let body: ErrorResponse = serde_json::from_slice(&bytes)
        .unwrap_or_else(|e| panic!("not an ErrorResponse ({e}): {bytes:?}"));
    assert_eq!(body.correlation_id.as_deref(), Some(header.as_str()));
    body
}
