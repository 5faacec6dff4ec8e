//! Keeping credentials out of logs: the parts of a request that may be
//! written down, and placeholders for the rest.
//!
//! Credentials travel in `Authorization`, in `Sec-WebSocket-Protocol`
//! (`access_token, <credential>` from browsers), in cookies, and sometimes in
//! query strings pasted by hand. So request paths are logged without their
//! query, and headers by an allow-list: a header not known to be harmless has
//! its value replaced, whatever its name.

use hyper::header::{HeaderMap, HeaderName, HeaderValue};
use hyper::Uri;
use std::fmt;

/// What a withheld value is logged as.
pub const REDACTED: &str = "[redacted]";

/// Longest logged value; longer ones are cut, so a client cannot flood a log
/// line through a header.
pub const MAX_LOGGED_LEN: usize = 256;

/// Headers whose values are never credentials and help when reading logs.
const LOGGABLE_HEADERS: &[&str] = &[
    "accept",
    "accept-encoding",
    "connection",
    "content-length",
    "content-type",
    "expect",
    "host",
    "origin",
    "sec-websocket-version",
    "transfer-encoding",
    "upgrade",
    "user-agent",
    "x-client-request-id",
    "x-interhuman-sdk",
    "x-service-sdk",
];

/// Whether the value of header `name` may be logged.
pub fn is_loggable_header(name: &HeaderName) -> bool {
    LOGGABLE_HEADERS.contains(&name.as_str())
}

/// The request's path without its query string, cut to [`MAX_LOGGED_LEN`].
pub fn loggable_path(uri: &Uri) -> String {
    truncate(uri.path())
}

/// A client-supplied header value as it may appear in a log: visible ASCII,
/// cut to [`MAX_LOGGED_LEN`]. Other bytes become `?`, so the value cannot
/// forge log structure with control characters.
pub fn loggable_value(value: &HeaderValue) -> String {
    let text: String = value
        .as_bytes()
        .iter()
        .map(|&b| {
            if b.is_ascii_graphic() || b == b' ' {
                char::from(b)
            } else {
                '?'
            }
        })
        .collect();
    truncate(&text)
}

fn truncate(text: &str) -> String {
    match text.char_indices().nth(MAX_LOGGED_LEN) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// Displays a header map as `name: value` pairs with every value outside the
/// allow-list replaced by [`REDACTED`].
pub struct RedactedHeaders<'a>(pub &'a HeaderMap);

impl fmt::Display for RedactedHeaders<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("{")?;
        for (i, (name, value)) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            if is_loggable_header(name) {
                write!(f, "{name}: {:?}", loggable_value(value))?;
            } else {
                write!(f, "{name}: {REDACTED}")?;
            }
        }
        f.write_str("}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::header::{AUTHORIZATION, COOKIE, HOST, SEC_WEBSOCKET_PROTOCOL};

    #[test]
    fn credentials_in_headers_are_withheld_and_harmless_headers_kept() {
        let mut headers = HeaderMap::new();
        headers.insert(AUTHORIZATION, HeaderValue::from_static("Bearer s3cret-a"));
        headers.insert(
            SEC_WEBSOCKET_PROTOCOL,
            HeaderValue::from_static("access_token, s3cret-b"),
        );
        headers.insert(COOKIE, HeaderValue::from_static("session=s3cret-c"));
        headers.insert("x-api-key", HeaderValue::from_static("s3cret-d"));
        headers.insert(HOST, HeaderValue::from_static("api.example.com"));
        let shown = RedactedHeaders(&headers).to_string();
        assert!(!shown.contains("s3cret"), "{shown}");
        assert!(shown.contains("authorization: [redacted]"), "{shown}");
        assert!(shown.contains("api.example.com"), "{shown}");
    }

    #[test]
    fn paths_lose_their_query_and_values_their_control_bytes() {
        let uri: Uri = "/v2/upload/jobs/abc?api_key=s3cret".parse().unwrap();
        assert_eq!(loggable_path(&uri), "/v2/upload/jobs/abc");
        let value = HeaderValue::from_bytes(b"id\t\xff-7").unwrap();
        assert_eq!(loggable_value(&value), "id??-7");
        let long = "a".repeat(MAX_LOGGED_LEN + 10);
        let cut = loggable_value(&HeaderValue::from_str(&long).unwrap());
        assert_eq!(cut.chars().count(), MAX_LOGGED_LEN + 1);
    }
}
