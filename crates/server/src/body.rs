//! Reading request bodies without trusting their size: a counted stream that
//! stops at a limit, a bounded JSON reader, and the lingering drain that lets
//! a client refused mid-upload read its answer.
//!
//! When a handler answers before the body is fully read (an upload cut at
//! its size limit, a form refused at its `model` field), closing the socket
//! at once would make the kernel answer the client's next bytes with a reset,
//! and a client still sending would often see that reset instead of the
//! answer. So the unread rest is read and thrown away for a short while
//! after the answer is sent (a "lingering close"), never kept in memory.

use crate::http_error::HttpError;
use attune_core::{ErrorCode, ServiceError};
use bytes::Bytes;
use futures_util::Stream;
use http_body_util::BodyExt;
use hyper::body::{Body as _, Incoming};
use hyper::header::{HeaderMap, HeaderValue, CONTENT_LENGTH, CONTENT_TYPE, EXPECT};
use hyper::StatusCode;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

/// How long an unread body is drained after the answer.
const LINGER_TIME: Duration = Duration::from_secs(2);

/// Most bytes drained after an answer; past them the connection is closed.
const LINGER_MAX_BYTES: u64 = 64 * 1024 * 1024;

tokio::task_local! {
    /// How long the request being handled may take to send its body: set by the server
    /// around each request (`body_read_timeout_seconds`), read by every [`LimitedBody`]. A
    /// task-local rather than a parameter because bodies are read deep inside handlers that
    /// otherwise know nothing of connections.
    pub static BODY_READ_TIMEOUT: Duration;
}

/// Why a counted body stopped.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    /// More than `limit` bytes arrived.
    #[error("the request body is larger than {limit} bytes")]
    TooLarge {
        /// The limit.
        limit: u64,
    },
    /// The connection failed or the client went away mid-body.
    #[error("the request body could not be read: {0}")]
    Read(#[source] hyper::Error),
    /// The body did not arrive within the body read timeout.
    #[error("the request body did not arrive within {} seconds", after.as_secs())]
    TimedOut {
        /// The timeout.
        after: Duration,
    },
}

/// A request body as a stream of chunks, counted as they arrive and cut off
/// with [`BodyError::TooLarge`] as soon as more than `limit` bytes have come,
/// so an oversized upload is refused without being held. Whatever is left
/// unread when it is dropped is drained in the background (see the module
/// docs).
#[derive(Debug)]
pub struct LimitedBody {
    body: Option<Incoming>,
    limit: u64,
    received: u64,
    /// The client sent `Expect: 100-continue`: it waits for a go-ahead that
    /// only reading the body sends, so a body never read need not be drained.
    expects_continue: bool,
    polled: bool,
    finished: bool,
    /// When the body must be complete, and the timeout it came from ([`BODY_READ_TIMEOUT`]);
    /// a slow-body client is cut there instead of holding its connection for good.
    deadline: Option<(Pin<Box<tokio::time::Sleep>>, Duration)>,
}

impl LimitedBody {
    /// Counts `body` against `limit` bytes; `headers` are the request's.
    pub fn new(body: Incoming, headers: &HeaderMap, limit: u64) -> LimitedBody {
        let expects_continue = headers
            .get(EXPECT)
            .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"));
        LimitedBody {
            body: Some(body),
            limit,
            received: 0,
            expects_continue,
            polled: false,
            finished: false,
            deadline: BODY_READ_TIMEOUT
                .try_with(|timeout| *timeout)
                .ok()
                .map(|timeout| (Box::pin(tokio::time::sleep(timeout)), timeout)),
        }
    }
}

impl Stream for LimitedBody {
    type Item = Result<Bytes, BodyError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if this.finished {
            return Poll::Ready(None);
        }
        let Some(body) = this.body.as_mut() else {
            return Poll::Ready(None);
        };
        this.polled = true;
        if let Some((deadline, after)) = this.deadline.as_mut() {
            if deadline.as_mut().poll(cx).is_ready() {
                this.finished = true;
                return Poll::Ready(Some(Err(BodyError::TimedOut { after: *after })));
            }
        }
        loop {
            match Pin::new(&mut *body).poll_frame(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) => {
                    this.finished = true;
                    return Poll::Ready(None);
                }
                Poll::Ready(Some(Err(error))) => {
                    this.finished = true;
                    return Poll::Ready(Some(Err(BodyError::Read(error))));
                }
                Poll::Ready(Some(Ok(frame))) => {
                    // Trailers carry no content.
                    let Ok(data) = frame.into_data() else {
                        continue;
                    };
                    this.received += data.len() as u64;
                    if this.received > this.limit {
                        // Ends the stream; the unread rest is drained on drop.
                        this.finished = true;
                        return Poll::Ready(Some(Err(BodyError::TooLarge { limit: this.limit })));
                    }
                    return Poll::Ready(Some(Ok(data)));
                }
            }
        }
    }
}

impl Drop for LimitedBody {
    fn drop(&mut self) {
        let Some(body) = self.body.take() else {
            return;
        };
        if body.is_end_stream() || (self.expects_continue && !self.polled) {
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(linger(body));
        }
    }
}

/// Reads and discards what is left of `body` for at most [`LINGER_TIME`] and
/// [`LINGER_MAX_BYTES`], keeping the connection open meanwhile.
async fn linger(mut body: Incoming) {
    let drain = async {
        let mut discarded = 0u64;
        while let Some(Ok(frame)) = body.frame().await {
            if let Some(data) = frame.data_ref() {
                discarded += data.len() as u64;
                if discarded > LINGER_MAX_BYTES {
                    break;
                }
            }
        }
        discarded
    };
    match tokio::time::timeout(LINGER_TIME, drain).await {
        Ok(discarded) => tracing::debug!(discarded, "unread request body drained"),
        Err(_) => tracing::debug!("unread request body still arriving; closing"),
    }
}

/// The `Content-Length` header, when present and well-formed.
pub fn content_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse().ok())
}

/// Largest JSON body accepted (client token requests are a few hundred
/// bytes).
pub const MAX_JSON_BODY: u64 = 64 * 1024;

/// How long a client may take to send a JSON body (a few hundred bytes), whatever the longer
/// body read timeout of uploads; answered 408 like it.
const JSON_BODY_TIMEOUT: Duration = Duration::from_secs(30);

fn invalid_json(message: impl Into<String>) -> HttpError {
    HttpError::new(ServiceError::with_message(ErrorCode::Ih4006, message))
}

/// Whether a `Content-Type` is JSON: `application/json` or any
/// `application/*+json`, parameters (such as `charset`) ignored.
fn is_json(content_type: &HeaderValue) -> bool {
    let Ok(text) = content_type.to_str() else {
        return false;
    };
    let essence = text.split(';').next().unwrap_or("").trim();
    let Some(subtype) = essence
        .to_ascii_lowercase()
        .strip_prefix("application/")
        .map(str::to_owned)
    else {
        return false;
    };
    subtype == "json" || subtype.ends_with("+json")
}

/// Reads a JSON request body whole, up to [`MAX_JSON_BODY`] bytes: `ih4006`
/// for a `Content-Type` other than JSON (a missing one is read as JSON, which
/// is what scripts omitting it mean), for a body too large (413), or for one
/// that does not arrive. An empty body reads as `{}`.
pub async fn read_json_body(body: Incoming, headers: &HeaderMap) -> Result<Bytes, HttpError> {
    if let Some(content_type) = headers.get(CONTENT_TYPE) {
        if !is_json(content_type) {
            let shown = crate::redact::loggable_value(content_type);
            return Err(invalid_json(format!(
                "The body must be JSON sent as `Content-Type: application/json`, not `{shown}`."
            )));
        }
    }
    let too_large = || {
        invalid_json(format!(
            "The JSON body is larger than {MAX_JSON_BODY} bytes."
        ))
        .with_status(StatusCode::PAYLOAD_TOO_LARGE)
    };
    if content_length(headers).is_some_and(|length| length > MAX_JSON_BODY) {
        return Err(too_large());
    }
    let mut body = LimitedBody::new(body, headers, MAX_JSON_BODY);
    let read = async {
        let mut bytes = Vec::new();
        while let Some(chunk) = futures_util::StreamExt::next(&mut body).await {
            bytes.extend_from_slice(&chunk?);
        }
        Ok::<_, BodyError>(bytes)
    };
    match tokio::time::timeout(JSON_BODY_TIMEOUT, read).await {
        Err(_) => Err(invalid_json(format!(
            "The JSON body did not arrive within {} seconds.",
            JSON_BODY_TIMEOUT.as_secs()
        ))
        .with_status(StatusCode::REQUEST_TIMEOUT)),
        Ok(Err(BodyError::TooLarge { .. })) => Err(too_large()),
        Ok(Err(error @ BodyError::TimedOut { .. })) => Err(invalid_json(format!(
            "The JSON body could not be read: {error}."
        ))
        .with_status(StatusCode::REQUEST_TIMEOUT)),
        Ok(Err(BodyError::Read(error))) => {
            tracing::debug!(%error, "JSON body unreadable");
            Err(invalid_json("The JSON body could not be read."))
        }
        Ok(Ok(bytes)) if bytes.iter().all(u8::is_ascii_whitespace) => Ok(Bytes::from_static(b"{}")),
        Ok(Ok(bytes)) => Ok(Bytes::from(bytes)),
    }
}

/// Parses a JSON object body into `T`: `ih4006` with serde's description of
/// what is wrong. The description may quote a value of the body back to its
/// sender; error messages are never logged, only their codes.
///
/// Two readings follow JSON rather than serde's defaults: the body must be
/// an object (serde would also read a struct from an array of its fields in
/// order, so `[null, null]` would pass for `{}`), and a number with no
/// fractional part is an integer whatever its spelling (`600.0` is `600`, as
/// JSON Schema and clients that only have floating-point numbers see it).
pub fn parse_json<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, HttpError> {
    let mut value: serde_json::Value = serde_json::from_slice(bytes)
        .map_err(|error| invalid_json(format!("The body is not valid JSON: {error}.")))?;
    if !value.is_object() {
        return Err(invalid_json("The body must be a JSON object."));
    }
    integral_floats_as_integers(&mut value);
    T::deserialize(value).map_err(|error| {
        invalid_json(format!(
            "The body is not JSON of the expected shape: {error}."
        ))
    })
}

/// Rewrites every number spelled with a zero fraction (`600.0`, `6e2`) that
/// fits a 64-bit integer as that integer.
fn integral_floats_as_integers(value: &mut serde_json::Value) {
    use serde_json::Value;
    // 2^64 and -2^63: the bounds of u64 and i64, exact as f64.
    const U64_END: f64 = 18_446_744_073_709_551_616.0;
    const I64_MIN: f64 = -9_223_372_036_854_775_808.0;
    match value {
        Value::Number(number) if number.is_f64() => {
            let Some(float) = number.as_f64() else { return };
            if float.fract() != 0.0 {
                return;
            }
            if (0.0..U64_END).contains(&float) {
                *value = Value::from(float as u64);
            } else if (I64_MIN..0.0).contains(&float) {
                *value = Value::from(float as i64);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(integral_floats_as_integers),
        Value::Object(fields) => fields.values_mut().for_each(integral_floats_as_integers),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_content_types_are_recognised_with_parameters() {
        for (value, json) in [
            ("application/json", true),
            ("Application/JSON; charset=utf-8", true),
            ("application/merge-patch+json", true),
            ("text/plain", false),
            ("application/x-www-form-urlencoded", false),
            ("multipart/form-data; boundary=x", false),
        ] {
            assert_eq!(is_json(&HeaderValue::from_static(value)), json, "{value}");
        }
    }

    #[test]
    fn json_errors_are_invalid_json_and_name_the_field() {
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code, reason = "only the parse result matters")]
        struct Shape {
            token: String,
        }
        let error = parse_json::<Shape>(br#"{"other": 5}"#).unwrap_err();
        assert_eq!(error.service_error().code, ErrorCode::Ih4006);
        assert!(error.service_error().message().contains("`token`"));
        let error = parse_json::<Shape>(b"{not json").unwrap_err();
        assert_eq!(error.service_error().code, ErrorCode::Ih4006);
        // A struct is not read from an array of its fields.
        assert!(parse_json::<Shape>(br#"["att_x"]"#).is_err());
        for not_an_object in [&b"[]"[..], b" null", b"\"x\"", b"7"] {
            let error = parse_json::<Shape>(not_an_object).unwrap_err();
            assert_eq!(error.service_error().code, ErrorCode::Ih4006);
            assert!(error.service_error().message().contains("object"));
        }
    }

    #[test]
    fn integral_numbers_read_as_integers_whatever_their_spelling() {
        #[derive(Debug, PartialEq, serde::Deserialize)]
        struct Caps {
            expires_in: u64,
            budget: f64,
            offsets: Vec<i64>,
        }
        let caps: Caps =
            parse_json(br#"{"expires_in": 6e2, "budget": 90.0, "offsets": [-3.0, 4]}"#).unwrap();
        assert_eq!(
            caps,
            Caps {
                expires_in: 600,
                budget: 90.0,
                offsets: vec![-3, 4]
            }
        );
        for refused in [
            &br#"{"expires_in": 600.5, "budget": 1, "offsets": []}"#[..],
            br#"{"expires_in": 1e20, "budget": 1, "offsets": []}"#,
            br#"{"expires_in": -1.0, "budget": 1, "offsets": []}"#,
        ] {
            let error = parse_json::<Caps>(refused).unwrap_err();
            assert_eq!(error.service_error().code, ErrorCode::Ih4006);
        }
    }
}
