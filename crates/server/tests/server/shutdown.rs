//! Graceful shutdown: a request in flight is finished, within the grace period.

use crate::common::Harness;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Guards against a hang turning into a stuck test run; never reached when
/// the server behaves.
const HANG_GUARD: Duration = Duration::from_secs(20);

/// Opens a connection and sends the head of `POST /auth` announcing a body it
/// withholds, then waits for `100 Continue`: proof that the server is inside
/// the request, reading its body.
async fn request_in_flight(addr: SocketAddr) -> TcpStream {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(
            b"POST /auth HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n\
              Content-Length: 2\r\nExpect: 100-continue\r\n\r\n",
        )
        .await
        .unwrap();
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut byte = [0u8; 1];
        assert_eq!(stream.read(&mut byte).await.unwrap(), 1, "closed early");
        head.push(byte[0]);
    }
    assert!(
        head.starts_with(b"HTTP/1.1 100"),
        "{}",
        String::from_utf8_lossy(&head)
    );
    stream
}

/// Waits until the server refuses new connections, i.e. shutdown has begun.
async fn wait_until_refusing(addr: SocketAddr) {
    for _ in 0..2000 {
        if TcpStream::connect(addr).await.is_err() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("the server kept accepting connections after shutdown began");
}

async fn read_all(stream: &mut TcpStream) -> String {
    let mut response = Vec::new();
    // A reset instead of a clean close still ends the answer.
    let _ = stream.read_to_end(&mut response).await;
    String::from_utf8_lossy(&response).into_owned()
}

#[tokio::test]
async fn shutdown_finishes_the_request_in_flight_then_refuses_connections() {
    let harness = Harness::new().await;
    let mut server = harness.start().await;
    let addr = server.local_addr();
    let mut stream = request_in_flight(addr).await;

    server.begin_shutdown();
    wait_until_refusing(addr).await;
    stream.write_all(b"{}").await.unwrap();
    let response = tokio::time::timeout(HANG_GUARD, read_all(&mut stream))
        .await
        .unwrap();

    assert!(response.starts_with("HTTP/1.1 401"), "{response}");
    assert!(response.contains("\"error_id\":\"ih2001\""), "{response}");
    assert!(response.contains("x-correlation-id: "), "{response}");
    assert!(response.contains("connection: close"), "{response}");
    tokio::time::timeout(HANG_GUARD, server.stopped())
        .await
        .unwrap();
    assert!(TcpStream::connect(addr).await.is_err());
}

#[tokio::test]
async fn shutdown_drops_requests_still_running_after_the_grace_period() {
    let harness = Harness::new().await;
    let mut server = harness
        .start_with(
            |config| config.shutdown_grace_seconds = Some(0),
            harness.services(),
        )
        .await;
    let mut stream = request_in_flight(server.local_addr()).await;

    server.begin_shutdown();
    tokio::time::timeout(HANG_GUARD, server.stopped())
        .await
        .unwrap();
    // The body never came, so no answer did either: the connection is gone.
    let _ = stream.write_all(b"{}").await;
    let response = tokio::time::timeout(HANG_GUARD, read_all(&mut stream))
        .await
        .unwrap();
    assert_eq!(response, "");
}
