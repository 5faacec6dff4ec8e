//! No credential reaches the logs, even at the most verbose level.

use crate::common::{client, correlation_id, json, url, Form, Harness};
use crate::ws::{connect_with, Auth};
use attune_server::{logging, KeyStore, Scope};
use std::sync::{Arc, Mutex, OnceLock};
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::EnvFilter;

/// Log output kept in memory.
#[derive(Clone, Default)]
pub(crate) struct Captured(Arc<Mutex<Vec<u8>>>);

impl Captured {
    /// Everything logged so far.
    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

/// The log of this test binary from the first call on, at the most verbose level: one
/// process-wide subscriber (the server logs from whichever runtime thread runs a
/// connection), shared by every test that reads the log.
pub(crate) fn capture() -> Captured {
    static CAPTURED: OnceLock<Captured> = OnceLock::new();
    CAPTURED
        .get_or_init(|| {
            let captured = Captured::default();
            tracing::subscriber::set_global_default(logging::subscriber(
                EnvFilter::new("attune_server=trace"),
                captured.clone(),
                false,
            ))
            .expect("no other test installs a subscriber");
            captured
        })
        .clone()
}

impl std::io::Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Captured {
    type Writer = Captured;

    fn make_writer(&'a self) -> Captured {
        self.clone()
    }
}

#[tokio::test]
async fn credentials_never_reach_the_logs() {
    let captured = capture();

    let harness = Harness::new().await;
    let key = harness.key("acme", &Scope::ALL).await;
    let key_id = harness.store.list_keys().await.unwrap()[0].id.clone();
    let server = harness.start().await;
    let client = client();
    let mut correlation_ids = Vec::new();
    for (path, request_id) in [
        (format!("/healthz?api_key={key}"), "req-healthz"),
        (format!("/auth?token={key}"), "req-auth"),
        (
            format!("/v2/upload/jobs/x?access_token={key}"),
            "req-missing",
        ),
    ] {
        let method = if path.starts_with("/auth") {
            reqwest::Method::POST
        } else {
            reqwest::Method::GET
        };
        let response = client
            .request(method, url(&server, &path))
            .header("Authorization", format!("Bearer {key}"))
            .header("Sec-WebSocket-Protocol", format!("access_token, {key}"))
            .header("Cookie", format!("session={key}"))
            .header("X-Client-Request-Id", request_id)
            .header("X-Interhuman-SDK", "python/1.3.4")
            .body(format!(r#"{{"key_id":"k","key_secret":"{key}"}}"#))
            .send()
            .await
            .unwrap();
        correlation_ids.push((correlation_id(&response), request_id));
        response.bytes().await.unwrap();
    }

    // A stream handshake announcing the official client by its header alone (it sends the
    // query pair too; without it here, only the header can put the SDK in the log).
    let mut ws = connect_with(
        &server,
        "/v2/stream/analyze",
        Auth::Header(&key),
        &[("X-Interhuman-SDK", "python/1.3.4")],
    )
    .await;
    ws.ready().await;
    let (_, code) = ws.close_gracefully().await;
    assert_eq!(code, 1000);

    // A token minted with the key in the body, used, revoked and refused.
    let minted = client
        .post(url(&server, "/v1/client_tokens"))
        .header("content-type", "application/json")
        .body(
            serde_json::json!({"api_key": key, "scopes": ["service.upload", "service.upload.inter-2"]})
                .to_string(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(minted.status(), 200);
    let token = json(minted).await["access_token"]
        .as_str()
        .unwrap()
        .to_owned();
    let form = Form::new().text("model", "inter-2").media(100);
    let submitted = client
        .post(url(&server, &format!("/v2/upload/analyze?token={token}")))
        .bearer_auth(&token)
        .header("content-type", form.content_type())
        .body(form.into_body())
        .send()
        .await
        .unwrap();
    assert_eq!(submitted.status(), 202);
    let revoked = client
        .post(url(&server, "/v1/client_tokens/revoke"))
        .header("content-type", "application/json")
        .body(serde_json::json!({"api_key": key, "token": token}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(revoked.status(), 200);
    let refused = client
        .get(url(&server, "/v2/upload/jobs/0123"))
        .header("Sec-WebSocket-Protocol", format!("access_token, {token}"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 401);

    harness.store.revoke_key(&key_id).await.unwrap();
    let refused = client
        .get(url(&server, "/v2/upload/jobs/0123"))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 401);
    server.shutdown().await;

    let logs = captured.text();
    // The capture worked: each request's line is there, with the client's
    // request id beside the correlation id, and the redacted headers.
    for (correlation_id, request_id) in &correlation_ids {
        let line = logs
            .lines()
            .find(|line| line.contains(correlation_id.as_str()) && line.contains("status="))
            .unwrap_or_else(|| panic!("no request line for {correlation_id} in:\n{logs}"));
        assert!(line.contains(request_id), "{line}");
        // The official client's spelling of `X-Service-SDK` is recorded like it.
        assert!(line.contains(r#"sdk="python/1.3.4""#), "{line}");
    }
    let session = logs
        .lines()
        .find(|line| line.contains("stream session accepted"))
        .unwrap_or_else(|| panic!("no stream session line in:\n{logs}"));
    assert!(session.contains(r#"sdk="python/1.3.4""#), "{session}");
    assert!(logs.contains("authorization: [redacted]"), "{logs}");
    assert!(
        logs.contains("sec-websocket-protocol: [redacted]"),
        "{logs}"
    );
    for event in [
        "authenticated",
        "key refused",
        "client token minted",
        "token refused: revoked",
        "job queued",
    ] {
        assert!(logs.contains(event), "{event} missing from:\n{logs}");
    }
    // And neither secret is anywhere, not even in part.
    for secret in [&key, &token] {
        assert!(
            !logs.contains(secret.as_str()),
            "a secret was logged:\n{logs}"
        );
        assert!(
            !logs.contains(&secret[12..]),
            "part of a secret was logged:\n{logs}"
        );
    }
}
