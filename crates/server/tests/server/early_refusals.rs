//! Requests refused before their body is read reach clients that send the
//! whole body before reading the answer (as Python `httpx` does), whether the
//! body comes at once or slowly, chunked or with a `Content-Length`.

use crate::common::{get_job, Form, Harness, HANG_GUARD};
use attune_server::{AccountLimits, Scope, ServerHandle};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How a client sends its body.
#[derive(Debug, Clone, Copy)]
enum Sending {
    /// `Content-Length`, everything written in one go.
    AtOnce,
    /// `Content-Length`, in pieces with pauses between them.
    SlowlyWithLength,
    /// `Transfer-Encoding: chunked`, in pieces with pauses between them.
    SlowlyChunked,
    /// `Content-Length`, in pieces with long pauses: longer in all than the
    /// server's drain of an unread body takes.
    VerySlowlyWithLength,
}

const ALL_WAYS: [Sending; 3] = [
    Sending::AtOnce,
    Sending::SlowlyWithLength,
    Sending::SlowlyChunked,
];

/// A body larger than the socket buffers on both sides, so a server that
/// closed without reading it would make the client's writes fail.
const LARGE_FILE: usize = 16 * 1024 * 1024;

/// The slow bodies: `PIECES` pieces of `PIECE` bytes.
const PIECES: usize = 16;
const PIECE: usize = 256 * 1024;
const PAUSE: Duration = Duration::from_millis(30);
const LONG_PAUSE: Duration = Duration::from_millis(200);

fn form_body(form: &Form, file_size: usize) -> Vec<u8> {
    form.clone().media(file_size).into_body()
}

/// Sends `body` to `/v1/upload/analyze` with the `credential` header line
/// (or none) the way `sending` says, every byte of it, and only then reads
/// the answer: what it answers is its status line and JSON body.
async fn send_then_read(
    server: &ServerHandle,
    credential: Option<&str>,
    sending: Sending,
) -> (String, String) {
    let form = Form::new();
    let body = match sending {
        Sending::AtOnce => form_body(&form, LARGE_FILE),
        _ => form_body(&form, PIECES * PIECE),
    };
    let auth = credential.map_or(String::new(), |c| format!("Authorization: Bearer {c}\r\n"));
    let framing = match sending {
        Sending::SlowlyChunked => "Transfer-Encoding: chunked\r\n".to_owned(),
        _ => format!("Content-Length: {}\r\n", body.len()),
    };
    let head = format!(
        "POST /v1/upload/analyze HTTP/1.1\r\nHost: test\r\n{auth}Content-Type: {}\r\n{framing}\r\n",
        form.content_type()
    );
    let mut stream = TcpStream::connect(server.local_addr()).await.unwrap();
    stream.write_all(head.as_bytes()).await.unwrap();
    let sent = async {
        match sending {
            Sending::AtOnce => stream.write_all(&body).await,
            Sending::SlowlyWithLength | Sending::VerySlowlyWithLength => {
                let pause = match sending {
                    Sending::VerySlowlyWithLength => LONG_PAUSE,
                    _ => PAUSE,
                };
                for piece in body.chunks(PIECE) {
                    stream.write_all(piece).await?;
                    tokio::time::sleep(pause).await;
                }
                Ok(())
            }
            Sending::SlowlyChunked => {
                for piece in body.chunks(PIECE) {
                    let mut framed = format!("{:x}\r\n", piece.len()).into_bytes();
                    framed.extend_from_slice(piece);
                    framed.extend_from_slice(b"\r\n");
                    stream.write_all(&framed).await?;
                    tokio::time::sleep(PAUSE).await;
                }
                stream.write_all(b"0\r\n\r\n").await
            }
        }
    };
    tokio::time::timeout(HANG_GUARD, sent)
        .await
        .expect("the body could not be sent in time")
        .unwrap_or_else(|e| panic!("{sending:?}: the server cut the body off: {e}"));
    tokio::time::timeout(HANG_GUARD, read_answer(&mut stream))
        .await
        .expect("no answer")
        .unwrap_or_else(|e| panic!("{sending:?}: the answer was lost: {e}"))
}

/// Reads one answer: its status line and its `Content-Length` body.
async fn read_answer(stream: &mut TcpStream) -> std::io::Result<(String, String)> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break end + 4;
        }
        let read = stream.read(&mut chunk).await?;
        assert!(read > 0, "closed before the answer's head");
        buffer.extend_from_slice(&chunk[..read]);
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let length: usize = head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().unwrap())
        })
        .expect("a content-length");
    while buffer.len() < head_end + length {
        let read = stream.read(&mut chunk).await?;
        assert!(read > 0, "closed before the answer's body");
        buffer.extend_from_slice(&chunk[..read]);
    }
    let status = head.lines().next().unwrap_or("").to_owned();
    let body = String::from_utf8_lossy(&buffer[head_end..head_end + length]).into_owned();
    Ok((status, body))
}

/// Asserts every way of sending gets `status` with `code` in its JSON body.
async fn refused_every_way(
    server: &ServerHandle,
    credential: Option<&str>,
    status: u16,
    code: &str,
) {
    for sending in ALL_WAYS {
        let (line, body) = send_then_read(server, credential, sending).await;
        assert!(
            line.starts_with(&format!("HTTP/1.1 {status} ")),
            "{sending:?}, {code}: {line}"
        );
        let json: serde_json::Value = serde_json::from_str(&body)
            .unwrap_or_else(|e| panic!("{sending:?}, {code}: not JSON ({e}): {body:?}"));
        assert_eq!(json["error_id"], code, "{sending:?}: {json}");
    }
}

#[tokio::test]
async fn early_refusal_reaches_a_streaming_client() {
    let harness = Harness::new().await;
    let stream_only = harness.key("acme", &[Scope::Stream]).await;
    let server = harness.start().await;
    refused_every_way(&server, None, 401, "ih2002").await;
    refused_every_way(&server, Some("att_live_not_a_real_key"), 401, "ih2001").await;
    refused_every_way(&server, Some(&stream_only), 403, "ih2003").await;

    let busy = harness.key("busy", &Scope::ALL).await;
    harness
        .set_account(
            "busy",
            true,
            AccountLimits {
                concurrent_requests: 0,
                ..AccountLimits::default()
            },
        )
        .await;
    refused_every_way(&server, Some(&busy), 429, "ih3002").await;

    let slow = harness.key("slow", &Scope::ALL).await;
    harness
        .set_account(
            "slow",
            true,
            AccountLimits {
                requests_per_minute: 1,
                ..AccountLimits::default()
            },
        )
        .await;
    // The minute's one request (the clock stands still, so it stays used).
    assert_eq!(get_job(&server, &slow, "job_unknown").await.status(), 404);
    refused_every_way(&server, Some(&slow), 429, "ih3001").await;
    server.shutdown().await;
}

#[tokio::test]
async fn early_refusal_of_an_announced_oversized_body_reaches_a_client_sending_it() {
    let harness = Harness::new().await;
    let key = harness.key("acme", &Scope::ALL).await;
    let server = harness
        .start_with(
            |layer| layer.max_upload_bytes = Some(1024 * 1024),
            harness.services(),
        )
        .await;
    for sending in [
        Sending::AtOnce,
        Sending::SlowlyWithLength,
        Sending::VerySlowlyWithLength,
    ] {
        let (line, body) = send_then_read(&server, Some(&key), sending).await;
        assert!(line.starts_with("HTTP/1.1 413 "), "{sending:?}: {line}");
        assert!(
            body.contains("\"error_id\":\"ih4003\""),
            "{sending:?}: {body}"
        );
    }
    server.shutdown().await;
}
