//! No credential reaches the logs, even at the most verbose level.

use crate::common::{client, correlation_id, start, url};
use attune_server::{authenticate, commands, logging, KeyStore, Scope, SqliteStore};
use hyper::header::{HeaderMap, HeaderValue, AUTHORIZATION};
use std::sync::{Arc, Mutex};
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::EnvFilter;

/// Log output kept in memory.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

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
    // The only subscriber of this test binary: process-wide, because the
    // server logs from whichever runtime thread runs a connection.
    let captured = Captured::default();
    tracing::subscriber::set_global_default(logging::subscriber(
        EnvFilter::new("attune_server=trace"),
        captured.clone(),
        false,
    ))
    .expect("no other test installs a subscriber");

    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("attune.sqlite3"))
        .await
        .unwrap();
    let (mut out, mut notes) = (Vec::new(), Vec::new());
    let created = commands::keys_create(&store, "acme", &Scope::ALL, &mut out, &mut notes)
        .await
        .unwrap();
    let key = created.key.expose().to_owned();

    let server = start().await;
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
            .body(format!(r#"{{"key_id":"k","key_secret":"{key}"}}"#))
            .send()
            .await
            .unwrap();
        correlation_ids.push((correlation_id(&response), request_id));
        response.bytes().await.unwrap();
    }
    authenticate(&store, &bearer(&key)).await.unwrap();
    store.revoke_key(&created.record.id).await.unwrap();
    authenticate(&store, &bearer(&key)).await.unwrap_err();
    server.shutdown().await;

    let logs = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    // The capture worked: each request's line is there, with the client's
    // request id beside the correlation id, and the redacted headers.
    for (correlation_id, request_id) in &correlation_ids {
        let line = logs
            .lines()
            .find(|line| line.contains(correlation_id.as_str()) && line.contains("status="))
            .unwrap_or_else(|| panic!("no request line for {correlation_id} in:\n{logs}"));
        assert!(line.contains(request_id), "{line}");
    }
    assert!(logs.contains("authorization: [redacted]"), "{logs}");
    assert!(
        logs.contains("sec-websocket-protocol: [redacted]"),
        "{logs}"
    );
    assert!(logs.contains("authenticated"), "{logs}");
    assert!(logs.contains("key refused"), "{logs}");
    // And the key is nowhere, not even in part.
    assert!(!logs.contains(&key), "the key was logged:\n{logs}");
    assert!(
        !logs.contains(&key[12..]),
        "part of the key was logged:\n{logs}"
    );
}

fn bearer(credential: &str) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(
        AUTHORIZATION,
        HeaderValue::from_str(&format!("Bearer {credential}")).unwrap(),
    );
    headers
}
