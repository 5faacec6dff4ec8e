//! Slow and many clients (issue 16, item 2), against the real `attune` binary where the
//! process matters: a head or a body sent one byte a second is cut by its timeout while
//! another client is served; 2,000 silent connections do not keep a normal request out; a
//! WebSocket client that never reads is disconnected and costs the server no more than the
//! socket buffers. The per-address connection limit runs in process.

use crate::common::{client, error_body, url, Harness, HANG_GUARD};
use crate::restart::{attune, attune_with, Serve, PATIENCE};
use attune_core::ErrorCode;
use futures_util::{SinkExt, StreamExt};
use std::path::Path;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;

/// Peak RSS bound for the never-reading client, KiB: the same as the resource bombs'
/// (hostile.rs); a server that buffered what it could not write would pass it quickly.
const PEAK_RSS_BOUND_KB: u64 = 64 * 1024;

/// A key with every scope, created with `attune keys create` on `store`.
fn create_key(store: &Path) -> String {
    let created = attune(
        store,
        &[
            "keys",
            "create",
            "--account",
            "slow",
            "--scopes",
            "service.upload,service.upload.inter-2,service.stream,service.stream.inter-2",
        ],
    )
    .output()
    .unwrap();
    assert!(created.status.success(), "{created:?}");
    String::from_utf8(created.stdout).unwrap().trim().to_owned()
}

/// `attune serve` on `store` with the `ATTUNE_*` settings `env`.
fn serve(store: &Path, env: &[(&str, &str)]) -> Serve {
    let mut command = attune_with(env, &["serve", "--bind", "127.0.0.1:0"]);
    command.env("ATTUNE_STORE_PATH", store);
    Serve::start_command(command)
}

/// The server still answers another client.
async fn healthy(serve: &Serve) {
    let response = tokio::time::timeout(PATIENCE, client().get(serve.url("/healthz")).send())
        .await
        .expect("another client is served in time")
        .unwrap();
    assert_eq!(response.status(), 200);
}

/// Sends `bytes` one a second on `socket`, reading meanwhile; stops when the server answers
/// or closes. Answers how many bytes were sent and what was read.
async fn trickle(socket: &mut TcpStream, bytes: &[u8], serve: &Serve) -> (usize, Vec<u8>) {
    let mut read = Vec::new();
    let mut buf = [0u8; 4096];
    for (sent, byte) in bytes.iter().enumerate() {
        if socket.write_all(&[*byte]).await.is_err() {
            return (sent, read);
        }
        if sent == 1 {
            // The trickle is under way: another client is served meanwhile.
            healthy(serve).await;
        }
        match tokio::time::timeout(Duration::from_secs(1), socket.read(&mut buf)).await {
            Err(_) => {}
            Ok(Ok(0)) | Ok(Err(_)) => return (sent + 1, read),
            Ok(Ok(n)) => {
                read.extend_from_slice(&buf[..n]);
                // The rest of the answer, up to the server's close.
                let _ = tokio::time::timeout(PATIENCE, socket.read_to_end(&mut read)).await;
                return (sent + 1, read);
            }
        }
    }
    (bytes.len(), read)
}

#[tokio::test]
async fn a_head_or_a_body_sent_a_byte_a_second_is_cut_while_others_are_served() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("attune.sqlite3");
    let key = create_key(&store);
    let serve = serve(
        &store,
        &[
            ("ATTUNE_HEADER_READ_TIMEOUT_SECONDS", "3"),
            ("ATTUNE_BODY_READ_TIMEOUT_SECONDS", "3"),
        ],
    );

    // A head of 70-odd bytes at a byte a second would take over a minute: the connection
    // is closed at the header timeout, long before it is complete.
    let head = format!(
        "GET /healthz HTTP/1.1\r\nHost: {}\r\nUser-Agent: slow-loris\r\n\r\n",
        serve.addr()
    );
    let mut socket = TcpStream::connect(serve.addr()).await.unwrap();
    let (sent, answer) = trickle(&mut socket, head.as_bytes(), &serve).await;
    assert!(
        sent < head.len(),
        "the whole head was accepted at a byte a second: {}",
        String::from_utf8_lossy(&answer)
    );
    // Whatever hyper says on the way out, it is never a served request.
    assert!(
        !String::from_utf8_lossy(&answer).starts_with("HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&answer)
    );
    healthy(&serve).await;

    // An upload whose head arrives at once and whose body trickles: 408 with ih4005 at the
    // body read timeout.
    let boundary = "slow-body-boundary";
    let body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\ninter-2\r\n\
         --{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.mp4\"\r\n\
         Content-Type: video/mp4\r\n\r\n{}\r\n--{boundary}--\r\n",
        "x".repeat(200)
    );
    let request_head = format!(
        "POST /v2/upload/analyze HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {key}\r\n\
         Content-Type: multipart/form-data; boundary={boundary}\r\nContent-Length: {}\r\n\r\n",
        serve.addr(),
        body.len()
    );
    let mut socket = TcpStream::connect(serve.addr()).await.unwrap();
    socket.write_all(request_head.as_bytes()).await.unwrap();
    let (sent, answer) = trickle(&mut socket, body.as_bytes(), &serve).await;
    let answer = String::from_utf8_lossy(&answer);
    assert!(sent < body.len(), "the whole body was read: {answer}");
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("\"error_id\":\"ih4005\""), "{answer}");
    assert!(
        answer.contains("did not arrive within 3 seconds"),
        "{answer}"
    );
    healthy(&serve).await;
}

#[tokio::test]
async fn two_thousand_silent_connections_do_not_keep_a_request_out() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("attune.sqlite3");
    create_key(&store);
    // The default connection limit (1024), so most of the silent connections wait to be
    // accepted; the header timeout is what clears them, a second at a time here.
    let serve = serve(&store, &[("ATTUNE_HEADER_READ_TIMEOUT_SECONDS", "1")]);

    let mut idle = Vec::new();
    for _ in 0..2000 {
        // Past the listen backlog the kernel holds a connect back (SYN retries): what
        // connects within a moment is enough to hold every permit.
        if let Ok(Ok(socket)) =
            tokio::time::timeout(Duration::from_millis(200), TcpStream::connect(serve.addr())).await
        {
            idle.push(socket);
        }
    }
    assert!(idle.len() > 1024, "only {} connected", idle.len());

    // A normal request waits for a permit (it is not refused) and is served.
    healthy(&serve).await;

    // Every silent connection was closed by the server, none served or left open.
    let closed = futures_util::future::join_all(idle.into_iter().map(|mut socket| async move {
        let mut buf = [0u8; 64];
        matches!(
            tokio::time::timeout(PATIENCE, socket.read(&mut buf)).await,
            Ok(Ok(0)) | Ok(Err(_))
        )
    }))
    .await;
    let open = closed.iter().filter(|closed| !**closed).count();
    assert_eq!(open, 0, "{open} silent connections were never closed");
    healthy(&serve).await;
}

#[tokio::test]
async fn connections_over_the_per_address_limit_are_answered_503_ih1002() {
    let harness = Harness::new().await;
    let server = harness
        .start_with(|c| c.max_connections_per_ip = Some(3), harness.services())
        .await;
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(TcpStream::connect(server.local_addr()).await.unwrap());
    }
    // reqwest opens a fourth connection from the same address.
    let refused = tokio::time::timeout(HANG_GUARD, client().get(url(&server, "/healthz")).send())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(refused.status(), 503);
    assert!(refused.headers().contains_key("retry-after"));
    assert_eq!(error_body(refused).await.error_id, ErrorCode::Ih1002);

    // A closed connection gives its place back.
    held.pop();
    tokio::time::timeout(HANG_GUARD, async {
        loop {
            let response = client().get(url(&server, "/healthz")).send().await.unwrap();
            if response.status() == 200 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the freed place is given to a new connection");
    drop(held);
    server.shutdown().await;
}

/// Peak resident set of process `pid`, KiB.
fn peak_rss_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .expect("VmHWM in /proc/<pid>/status")
}

#[tokio::test]
async fn a_websocket_client_that_never_reads_is_dropped_and_costs_only_socket_buffers() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("attune.sqlite3");
    let key = create_key(&store);
    // Without the networks loaded at start (`warm_up`, a fixed 100 MiB or so): the bound is on
    // what the never-reading client costs.
    let serve = serve(
        &store,
        &[
            ("ATTUNE_STREAM_WRITE_TIMEOUT_SECONDS", "2"),
            ("ATTUNE_WARM_UP", "false"),
        ],
    );

    // A small receive window, so the server's writes stall after a few kilobytes.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let stream = socket.connect(serve.addr().parse().unwrap()).await.unwrap();
    let mut request = format!("ws://{}/v2/stream/analyze", serve.addr())
        .into_client_request()
        .unwrap();
    request
        .headers_mut()
        .insert("authorization", format!("Bearer {key}").parse().unwrap());
    let (mut ws, _) = tokio_tungstenite::client_async(request, stream)
        .await
        .unwrap();

    // Each config frame (`{}` padded with whitespace to a kilobyte, so the socket buffers
    // on both sides fill in thousands of frames rather than millions) is answered with a
    // `session.updated`. Sent without reading until the server stops taking them (its
    // writes stalled, so its reads stopped too) or drops the connection.
    let frame = format!("{{{}}}", " ".repeat(1000));
    let mut sent = 0usize;
    let mut stopped = false;
    while sent < 1_000_000 {
        match tokio::time::timeout(
            Duration::from_secs(5),
            ws.send(Message::text(frame.clone())),
        )
        .await
        {
            Ok(Ok(())) => sent += 1,
            Ok(Err(_)) | Err(_) => {
                stopped = true;
                break;
            }
        }
    }
    assert!(
        stopped,
        "the server read {sent} frames of a client that never reads"
    );
    // Others are served meanwhile.
    healthy(&serve).await;

    // Reading now: what the buffers held, then the end, without a close frame (the client
    // sees 1006): the session ended at the write timeout rather than waiting for good.
    let mut answered = 0usize;
    let mut close = None;
    let read_all = async {
        while let Some(message) = ws.next().await {
            match message {
                Ok(Message::Text(_)) => answered += 1,
                Ok(Message::Close(frame)) => close = Some(frame),
                Ok(_) => {}
                Err(_) => break,
            }
        }
    };
    tokio::time::timeout(PATIENCE, read_all)
        .await
        .expect("the stalled session ended");
    assert!(
        answered < sent,
        "all {sent} frames were answered: the server never gave up on the client"
    );
    assert_eq!(close, None, "a close frame after a stalled write");
    healthy(&serve).await;

    let peak = peak_rss_kb(serve.pid());
    eprintln!("server peak RSS with a never-reading client: {peak} KiB ({sent} frames sent, {answered} answered)");
    assert!(
        peak < PEAK_RSS_BOUND_KB,
        "peak RSS {peak} KiB over the bound of {PEAK_RSS_BOUND_KB} KiB"
    );
}
