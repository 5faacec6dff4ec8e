//! A WebSocket test client: connects with either credential form, reads events with a hang
//! guard, and collects a session's events up to its close frame.

use crate::common::HANG_GUARD;
use attune_server::ServerHandle;
use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// How the client presents its credential.
#[derive(Debug, Clone, Copy)]
pub enum Auth<'a> {
    /// `Authorization: Bearer`.
    Header(&'a str),
    /// `Sec-WebSocket-Protocol: access_token, <credential>`, as a browser sends it.
    Subprotocol(&'a str),
    /// None.
    Nothing,
}

/// One client connection.
pub struct Ws {
    stream: WebSocketStream<MaybeTlsStream<TcpStream>>,
    /// The subprotocol the server acknowledged.
    pub protocol: Option<String>,
    /// The handshake's `X-Correlation-ID`.
    pub correlation_id: Option<String>,
    /// The close frame, once read.
    pub closed: Option<(u16, String)>,
    /// The path connected to, whose AsyncAPI channel every event is checked against.
    path: String,
}

/// Connects to `path` (with its query) on `server`.
pub async fn connect(server: &ServerHandle, path: &str, auth: Auth<'_>) -> Ws {
    connect_with(server, path, auth, &[]).await
}

/// Connects with extra request headers.
pub async fn connect_with(
    server: &ServerHandle,
    path: &str,
    auth: Auth<'_>,
    headers: &[(&str, &str)],
) -> Ws {
    let url = format!("ws://{}{path}", server.local_addr());
    let mut request = url.into_client_request().unwrap();
    let h = request.headers_mut();
    match auth {
        Auth::Header(c) => {
            h.insert("authorization", format!("Bearer {c}").parse().unwrap());
        }
        Auth::Subprotocol(c) => {
            h.insert(
                "sec-websocket-protocol",
                format!("access_token, {c}").parse().unwrap(),
            );
        }
        Auth::Nothing => {}
    }
    for (name, value) in headers {
        h.insert(
            tokio_tungstenite::tungstenite::http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
            HeaderValue::from_str(value).unwrap(),
        );
    }
    let config = tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default()
        .max_message_size(Some(128 << 20))
        .max_frame_size(Some(128 << 20));
    let (stream, response) = tokio::time::timeout(
        HANG_GUARD,
        tokio_tungstenite::connect_async_with_config(request, Some(config), false),
    )
    .await
    .expect("handshake hung")
    .expect("handshake failed");
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .map(|v| v.to_str().unwrap().to_owned())
    };
    Ws {
        stream,
        protocol: header("sec-websocket-protocol"),
        correlation_id: header("x-correlation-id"),
        closed: None,
        path: path.to_owned(),
    }
}

impl Ws {
    /// Sends a text frame.
    pub async fn text(&mut self, text: &str) {
        self.stream
            .send(Message::text(text.to_owned()))
            .await
            .unwrap();
    }

    /// Sends a JSON text frame.
    pub async fn json(&mut self, value: Value) {
        self.text(&value.to_string()).await;
    }

    /// Sends one raw WebSocket frame (a fragment, say); a failure (the server closed) is
    /// ignored.
    pub async fn frame(&mut self, frame: tokio_tungstenite::tungstenite::protocol::frame::Frame) {
        let _ = self.stream.send(Message::Frame(frame)).await;
    }

    /// Sends a binary frame; a failure (the server closed) is ignored.
    pub async fn binary(&mut self, bytes: &[u8]) {
        let _ = self.stream.send(Message::binary(bytes.to_vec())).await;
    }

    /// The next event, or `None` once the server closed (the close frame is kept).
    pub async fn event(&mut self) -> Option<Value> {
        loop {
            let message = tokio::time::timeout(HANG_GUARD, self.stream.next())
                .await
                .expect("no frame from the server in time");
            match message {
                Some(Ok(Message::Text(text))) => {
                    let value: Value = serde_json::from_str(&text).unwrap();
                    check_envelope(&value);
                    crate::asyncapi::check_event(&self.path, &value);
                    return Some(value);
                }
                Some(Ok(Message::Close(frame))) => {
                    self.closed = Some(
                        frame
                            .map(|CloseFrame { code, reason }| {
                                (u16::from(code), reason.to_string())
                            })
                            .unwrap_or((1005, String::new())),
                    );
                    return None;
                }
                Some(Ok(Message::Binary(_))) => panic!("the server sent a binary frame"),
                Some(Ok(_)) => continue,
                Some(Err(_)) | None => return None,
            }
        }
    }

    /// Events until one of `type`, which is returned; panics if the session ends first.
    pub async fn until(&mut self, kind: &str) -> Value {
        while let Some(event) = self.event().await {
            if event["type"] == kind {
                return event;
            }
        }
        panic!("session closed ({:?}) before a {kind} event", self.closed);
    }

    /// Every event up to the close frame, and the close code.
    pub async fn rest(&mut self) -> (Vec<Value>, u16) {
        let mut events = Vec::new();
        while let Some(event) = self.event().await {
            events.push(event);
        }
        (events, self.closed.as_ref().map_or(1006, |c| c.0))
    }

    /// Reads `session.ready`, checks it is first, and returns its data.
    pub async fn ready(&mut self) -> Value {
        let event = self.event().await.expect("session.ready");
        assert_eq!(event["type"], "session.ready", "{event}");
        event["data"].clone()
    }

    /// Sends `session.close` and reads to the end: the events and the close code.
    pub async fn close_gracefully(&mut self) -> (Vec<Value>, u16) {
        self.json(serde_json::json!({"type": "session.close"}))
            .await;
        self.rest().await
    }
}

/// Every envelope carries `type`, `timestamp`, `correlation_id` and `data`, nothing else.
fn check_envelope(value: &Value) {
    let object = value.as_object().expect("an envelope is an object");
    let mut keys: Vec<&str> = object.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        ["correlation_id", "data", "timestamp", "type"],
        "{value}"
    );
    assert!(value["data"].is_object(), "{value}");
    let timestamp = value["timestamp"].as_str().unwrap();
    assert!(timestamp.ends_with('Z'), "{timestamp}");
}

/// The error events among `events`, as (code, segment).
pub fn errors(events: &[Value]) -> Vec<(String, Value)> {
    events
        .iter()
        .filter(|e| e["type"] == "error")
        .map(|e| {
            (
                e["data"]["code"].as_str().unwrap().to_owned(),
                e["data"]["segment"].clone(),
            )
        })
        .collect()
}

/// The types of `events`, in order.
pub fn types(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_owned())
        .collect()
}

/// Sends a WebSocket upgrade request by hand and answers the response head as text, followed
/// by the payload of the first frame the server sends after it (if any within a second).
pub async fn raw_upgrade(server: &ServerHandle, path: &str, headers: &[(&str, &str)]) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut socket = TcpStream::connect(server.local_addr()).await.unwrap();
    let mut request = format!(
        "GET {path} HTTP/1.1\r\nHost: {}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
         Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n",
        server.local_addr()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    socket.write_all(request.as_bytes()).await.unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        let read = tokio::time::timeout(HANG_GUARD, socket.read(&mut byte))
            .await
            .expect("no response in time")
            .unwrap();
        if read == 0 {
            break;
        }
        head.push(byte[0]);
    }
    let mut text = String::from_utf8_lossy(&head).into_owned();
    if text.starts_with("HTTP/1.1 101") {
        let mut frame_head = [0u8; 2];
        let read = tokio::time::timeout(
            std::time::Duration::from_secs(1),
            socket.read_exact(&mut frame_head),
        )
        .await;
        if matches!(read, Ok(Ok(_))) {
            let len = match frame_head[1] & 0x7f {
                126 => {
                    let mut ext = [0u8; 2];
                    socket.read_exact(&mut ext).await.unwrap();
                    usize::from(u16::from_be_bytes(ext))
                }
                n => usize::from(n),
            };
            let mut payload = vec![0u8; len];
            socket.read_exact(&mut payload).await.unwrap();
            text.push_str(&String::from_utf8_lossy(&payload));
        }
    }
    text
}
