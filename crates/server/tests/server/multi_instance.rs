//! Two real `attune serve` processes on one PostgreSQL store: a job submitted
//! on one is run and read on the other, `wait_seconds` works across them, an
//! instance killed with SIGKILL mid-job leaves its job to fail with `ih1004`
//! once its lease lapses, and a token revoked on one is refused on the other.
//! Request limits hold for the two together: an account's requests per
//! minute and concurrent requests, and a client token's `max_concurrent`
//! sessions. An instance stopped with SIGTERM finishes its running job and
//! leaves its queue to the other.
//!
//! Needs `ATTUNE_TEST_PG_URL` (`tests/pg/with-postgres.sh` sets it; `.ci/run`
//! always does). Without it the test prints a notice and checks nothing.

use crate::common::{client, expect_error, json, Form};
use crate::pg::fresh_database;
use crate::restart::{attune_with, read_until, synthetic_speech, Serve, SPEECH_MINUTES};
use attune_core::ErrorCode;
use futures_util::{SinkExt, StreamExt};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;

/// Seconds an instance's lease lasts here: short, so a killed instance's job
/// fails soon after.
const LEASE_SECONDS: &str = "2";

fn env(url: &str) -> [(&str, &str); 2] {
    [
        ("ATTUNE_STORE_URL", url),
        ("ATTUNE_STORE_LEASE_SECONDS", LEASE_SECONDS),
    ]
}

fn serve(url: &str) -> Serve {
    serve_with(url, &[])
}

/// An instance on the store at `url` with more environment.
fn serve_with(url: &str, more: &[(&str, &str)]) -> Serve {
    let mut command = attune_with(&env(url), &["serve", "--bind", "127.0.0.1:0"]);
    command.envs(more.iter().copied());
    Serve::start_command(command)
}

/// Submits `minutes` of speech on `serve` with extra form fields.
async fn submit(
    serve: &Serve,
    key: &str,
    minutes: u32,
    fields: &[(&str, &str)],
) -> reqwest::Response {
    let mut form = Form::new()
        .text("model", "inter-2-audio")
        .text("include[]", "signals");
    for (name, value) in fields {
        form = form.text(name, value);
    }
    let form = form.file("file", &synthetic_speech(minutes));
    client()
        .post(serve.url("/v2/upload/analyze"))
        .bearer_auth(key)
        .header("content-type", form.content_type())
        .body(form.into_body())
        .send()
        .await
        .unwrap()
}

/// The test cluster's admin URL, or `None` with a notice outside CI.
fn admin_url(test: &str) -> Option<String> {
    let Ok(admin_url) = std::env::var("ATTUNE_TEST_PG_URL") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must set ATTUNE_TEST_PG_URL (.ci/run runs tests/pg/with-postgres.sh)"
        );
        eprintln!(
            "NOTICE: {test}: ATTUNE_TEST_PG_URL is not set; skipped (run under \
             tests/pg/with-postgres.sh)"
        );
        return None;
    };
    Some(admin_url)
}

/// Runs `attune` with `args` on the store at `url` and answers its stdout.
fn attune_ok(url: &str, args: &[&str]) -> String {
    let output = attune_with(&env(url), args).output().expect("attune runs");
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

/// A fresh database, and a key of account "acme" that may upload (`inter-2-audio`) made in it.
async fn database_with_upload_key(admin_url: &str) -> (String, String) {
    let url = fresh_database(admin_url).await;
    let key = attune_ok(
        &url,
        &[
            "keys",
            "create",
            "--account",
            "acme",
            "--scopes",
            "service.upload,service.upload.inter-2-audio",
        ],
    );
    (url, key)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_share_jobs_leases_and_revocations() {
    let Some(admin_url) = admin_url("two_instances_share_jobs_leases_and_revocations") else {
        return;
    };
    let (url, key) = database_with_upload_key(&admin_url).await;

    // A alone, one worker: it claims the long job itself.
    let a = serve(&url);
    let response = submit(&a, &key, SPEECH_MINUTES, &[]).await;
    assert_eq!(response.status(), 202);
    let long_id = json(response).await["job_id"].as_str().unwrap().to_owned();
    let running = read_until(&a, &key, &long_id, |job| job["status"] != "queued").await;
    assert_eq!(running["status"], "running", "{running}");

    // B joins. A's only worker is busy, so a job submitted on A runs on B,
    // and B reads it to the end.
    let b = serve(&url);
    let response = submit(&a, &key, 1, &[]).await;
    assert_eq!(response.status(), 202);
    let short_id = json(response).await["job_id"].as_str().unwrap().to_owned();
    let done = read_until(&b, &key, &short_id, |job| {
        job["status"] == "completed" || job["status"] == "failed"
    })
    .await;
    assert_eq!(done["status"], "completed", "{done}");
    assert!(done["result"]["signals"].is_array(), "{done}");
    // B claimed it from the shared queue and timed its wait there.
    let scrape = client()
        .get(b.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let waits: f64 = scrape
        .lines()
        .find_map(|line| line.strip_prefix("attune_job_queue_wait_seconds_count "))
        .expect("the queue wait histogram is exported")
        .trim()
        .parse()
        .unwrap();
    assert!(waits >= 1.0, "B observed no queue wait: {scrape}");

    // wait_seconds on B: the submit answers the finished job.
    let response = submit(&b, &key, 1, &[("wait_seconds", "60")]).await;
    assert_eq!(response.status(), 200);
    let waited = json(response).await;
    assert_eq!(waited["status"], "completed", "{waited}");
    // And the job B waited on reads the same on A.
    let id = waited["job_id"].as_str().unwrap();
    let on_a = read_until(&a, &key, id, |_| true).await;
    assert_eq!(on_a["status"], "completed", "{on_a}");

    // A token minted and revoked on A is refused on B.
    let minted = client()
        .post(a.url("/v1/client_tokens"))
        .bearer_auth(&key)
        .header("content-type", "application/json")
        .body(json!({"scopes": ["service.upload"]}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(minted.status(), 200);
    let token = json(minted).await["access_token"]
        .as_str()
        .unwrap()
        .to_owned();
    let read_with_token = |serve: &Serve| {
        client()
            .get(serve.url(&format!("/v2/upload/jobs/{short_id}")))
            .bearer_auth(&token)
            .send()
    };
    assert_eq!(read_with_token(&b).await.unwrap().status(), 200);
    let revoked = client()
        .post(a.url("/v1/client_tokens/revoke"))
        .bearer_auth(&key)
        .header("content-type", "application/json")
        .body(json!({"token": token}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(revoked.status(), 200);
    expect_error(read_with_token(&b).await.unwrap(), 401, ErrorCode::Ih2014).await;

    // A killed mid-job: once its lease lapses, B fails the job with ih1004.
    let still = read_until(&b, &key, &long_id, |_| true).await;
    assert_eq!(
        still["status"], "running",
        "the long analysis must still run when A is killed: {still}"
    );
    a.kill();
    let job = read_until(&b, &key, &long_id, |job| job["status"] != "running").await;
    assert_eq!(job["status"], "failed", "{job}");
    assert_eq!(job["error"]["error_id"], "ih1004", "{job}");
}

/// Opens a stream session on `serve` with a client token and answers the
/// socket and its first event.
async fn open_session(
    serve: &Serve,
    token: &str,
) -> (
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>,
    serde_json::Value,
) {
    let mut request = format!("ws://{}/v2/stream/analyze", serve.addr())
        .into_client_request()
        .unwrap();
    request.headers_mut().insert(
        "sec-websocket-protocol",
        format!("access_token, {token}").parse().unwrap(),
    );
    let (mut ws, _) = tokio::time::timeout(
        crate::common::HANG_GUARD,
        tokio_tungstenite::connect_async(request),
    )
    .await
    .expect("handshake hung")
    .expect("handshake failed");
    let first = tokio::time::timeout(crate::common::HANG_GUARD, async {
        loop {
            match ws.next().await {
                Some(Ok(Message::Text(text))) => break serde_json::from_str(&text).unwrap(),
                Some(Ok(_)) => continue,
                other => panic!("no event before the socket ended: {other:?}"),
            }
        }
    })
    .await
    .expect("no first event");
    (ws, first)
}

/// Starts an upload on `serve` whose body never comes, with
/// `Expect: 100-continue`: once the server admits it, it asks for the body
/// (`100 Continue`) and the request stays in flight as long as the socket
/// is open. Answers the socket, or the refusal's head.
async fn upload_left_open(serve: &Serve, key: &str) -> Result<TcpStream, String> {
    let mut socket = TcpStream::connect(serve.addr()).await.unwrap();
    let head = format!(
        "POST /v2/upload/analyze HTTP/1.1\r\nhost: {}\r\nauthorization: Bearer {key}\r\n\
         content-type: multipart/form-data; boundary=b\r\ncontent-length: 100000\r\n\
         expect: 100-continue\r\n\r\n",
        serve.addr()
    );
    socket.write_all(head.as_bytes()).await.unwrap();
    let mut answer = vec![0; 4096];
    let read = tokio::time::timeout(crate::common::HANG_GUARD, socket.read(&mut answer))
        .await
        .expect("no answer to the upload's head")
        .unwrap();
    let answer = String::from_utf8_lossy(&answer[..read]).into_owned();
    if answer.starts_with("HTTP/1.1 100 ") {
        Ok(socket)
    } else {
        Err(answer)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_share_request_limits_and_token_sessions() {
    let Some(admin_url) = admin_url("two_instances_share_request_limits_and_token_sessions") else {
        return;
    };
    let url = fresh_database(&admin_url).await;
    let all_scopes = "service.upload,service.upload.inter-2,service.upload.inter-2-audio,\
                      service.stream,service.stream.inter-2,service.stream.inter-2-audio";
    let limited = attune_ok(
        &url,
        &[
            "keys",
            "create",
            "--account",
            "limited",
            "--scopes",
            all_scopes,
        ],
    );
    attune_ok(
        &url,
        &[
            "accounts",
            "set",
            "--account",
            "limited",
            "--requests-per-minute",
            "4",
        ],
    );
    let streamer = attune_ok(
        &url,
        &[
            "keys",
            "create",
            "--account",
            "streamer",
            "--scopes",
            all_scopes,
        ],
    );
    let busy = attune_ok(
        &url,
        &[
            "keys",
            "create",
            "--account",
            "busy",
            "--scopes",
            all_scopes,
        ],
    );
    attune_ok(
        &url,
        &[
            "accounts",
            "set",
            "--account",
            "busy",
            "--concurrent-requests",
            "2",
        ],
    );
    let a = serve(&url);
    let b = serve(&url);

    // Two requests at once for `busy`, across A and B together: with one
    // held open on each, a third is refused on either, exactly.
    let read_busy = |serve: &Serve| {
        client()
            .get(serve.url("/v2/upload/jobs/job_0000000000000000"))
            .bearer_auth(&busy)
            .send()
    };
    let on_a = upload_left_open(&a, &busy).await.expect("admitted on A");
    let _on_b = upload_left_open(&b, &busy).await.expect("admitted on B");
    for serve in [&a, &b, &a, &b] {
        expect_error(read_busy(serve).await.unwrap(), 429, ErrorCode::Ih3002).await;
    }
    let refused = upload_left_open(&b, &busy).await.unwrap_err();
    assert!(refused.contains(" 429 "), "{refused}");
    // The one on A ends: its place can be taken on B, at once or after A
    // gives it back (within half a second).
    drop(on_a);
    let mut admitted = false;
    for _ in 0..100 {
        let response = read_busy(&b).await.unwrap();
        if response.status() != 429 {
            assert_eq!(response.status(), 404);
            admitted = true;
            break;
        }
        expect_error(response, 429, ErrorCode::Ih3002).await;
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(admitted, "the place freed on A never reached B");

    // Four requests a minute for the account, across A and B together: two
    // on A, two on B, then the fifth is refused on B (and on A).
    let read = |serve: &Serve| {
        client()
            .get(serve.url("/v2/upload/jobs/job_0000000000000000"))
            .bearer_auth(&limited)
            .send()
    };
    for serve in [&a, &a, &b, &b] {
        let response = read(serve).await.unwrap();
        assert_ne!(response.status(), 429, "admitted within the allowance");
    }
    for serve in [&b, &a] {
        let response = read(serve).await.unwrap();
        let retry_after: u64 = response
            .headers()
            .get("retry-after")
            .expect("a rate refusal says when to retry")
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!(
            (1..=15).contains(&retry_after),
            "one interval of 60 s / 4 at most: {retry_after}"
        );
        expect_error(response, 429, ErrorCode::Ih3001).await;
    }

    // A client token with one session at a time: open on A, refused on B.
    let minted = client()
        .post(a.url("/v1/client_tokens"))
        .bearer_auth(&streamer)
        .header("content-type", "application/json")
        .body(json!({"max_concurrent": 1}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(minted.status(), 200);
    let token = json(minted).await["access_token"]
        .as_str()
        .unwrap()
        .to_owned();
    let (mut on_a, ready) = open_session(&a, &token).await;
    assert_eq!(ready["type"], "session.ready", "{ready}");
    let (_refused, error) = open_session(&b, &token).await;
    assert_eq!(error["type"], "error", "{error}");
    assert_eq!(error["data"]["code"], "ih3002", "{error}");
    // Once the session on A ends, B opens one (the place is given back as
    // the session's task ends: allow it a moment).
    on_a.send(Message::Close(None)).await.unwrap();
    while let Some(Ok(_)) = on_a.next().await {}
    let mut reopened = None;
    for _ in 0..100 {
        let (ws, first) = open_session(&b, &token).await;
        if first["type"] == "session.ready" {
            reopened = Some(ws);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(
        reopened.is_some(),
        "the session place on A was not given back"
    );
}

/// Graceful shutdown on a shared store: an instance stopped with SIGTERM
/// finishes the job it is running and takes no more from the queue; the job
/// queued behind it runs on the other instance. Both complete, each run
/// exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_draining_instance_finishes_its_job_and_leaves_the_queue_to_a_peer() {
    let Some(admin_url) =
        admin_url("a_draining_instance_finishes_its_job_and_leaves_the_queue_to_a_peer")
    else {
        return;
    };
    let (url, key) = database_with_upload_key(&admin_url).await;
    // A, one worker, with time enough to finish the long job when stopped.
    let a = serve_with(&url, &[("ATTUNE_SHUTDOWN_GRACE_SECONDS", "300")]);
    let response = submit(&a, &key, SPEECH_MINUTES, &[]).await;
    assert_eq!(response.status(), 202);
    let running_id = json(response).await["job_id"].as_str().unwrap().to_owned();
    let response = submit(&a, &key, 1, &[]).await;
    assert_eq!(response.status(), 202);
    let queued_id = json(response).await["job_id"].as_str().unwrap().to_owned();
    let running = read_until(&a, &key, &running_id, |job| job["status"] != "queued").await;
    assert_eq!(running["status"], "running", "{running}");
    let queued = read_until(&a, &key, &queued_id, |_| true).await;
    assert_eq!(queued["status"], "queued", "{queued}");

    a.terminate();
    // B starts while A drains, and takes the queued job.
    let b = serve(&url);
    let done = read_until(&b, &key, &queued_id, |job| {
        job["status"] == "completed" || job["status"] == "failed"
    })
    .await;
    assert_eq!(done["status"], "completed", "{done}");
    // A's own job completes there, not failed as interrupted.
    let done = read_until(&b, &key, &running_id, |job| {
        job["status"] == "completed" || job["status"] == "failed"
    })
    .await;
    assert_eq!(done["status"], "completed", "{done}");
    assert!(done["result"]["signals"].is_array(), "{done}");
    let a_log = a.log();
    let status = tokio::task::spawn_blocking(move || a.wait_exit())
        .await
        .unwrap();
    assert!(status.success(), "A did not exit cleanly: {status:?}");
    // Each job was claimed once, by one instance.
    let claims = |log: &str, id: &str| {
        log.lines()
            .filter(|line| line.contains("job claimed") && line.contains(id))
            .count()
    };
    let b_log = b.log();
    assert_eq!(claims(&a_log, &running_id), 1, "{a_log}");
    assert_eq!(claims(&a_log, &queued_id), 0, "{a_log}");
    assert_eq!(claims(&b_log, &queued_id), 1, "{b_log}");
    assert_eq!(claims(&b_log, &running_id), 0, "{b_log}");
}
