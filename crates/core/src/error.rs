//! The error catalog: every `ih` code of the interface in one table, with its
//! meaning, HTTP status, WebSocket close code, session severity, documentation
//! anchor and default message.
//!
//! The table is the single source for every place that turns a failure into a
//! wire error: the HTTP shell reads `http_status`, the session engine reads
//! `close_code` and `severity`, and both build `link` from the anchor.
//!
//! Where the interface gives no HTTP status or close code, this table chooses
//! one and says so in `docs/INTERFACE.md` ("Errors"): HTTP statuses follow the
//! meaning (401 for credentials, 429 for limits, 422 for media that cannot be
//! analyzed); close codes for credential, scope and limit refusals follow the
//! interface's own `ih2003` -> 4003 pattern (4000 + the HTTP status's last two
//! digits), and the rest use the standard codes of RFC 6455 (1001 going away,
//! 1008 policy violation, 1009 message too big, 1011 internal error, 1013 try
//! again later).

use crate::wire::ErrorResponse;
use serde::{de, Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// What an error does to a WebSocket session by default.
///
/// A few codes are fatal in one place and not in another (`ih2003` refuses a
/// handshake but only answers a refused model switch; `ih4005` closes a
/// handshake with a bad `model` query but only answers a malformed
/// `session.close`): the session engine decides those from context, and this
/// is the default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Severity {
    /// The session is closed with the catalog's close code.
    Fatal,
    /// An `error` envelope is sent and the session stays open.
    NonFatal,
    /// The code belongs to HTTP uploads and jobs only.
    HttpOnly,
}

/// One row of the catalog.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErrorInfo {
    /// The code.
    pub code: ErrorCode,
    /// The interface's meaning, verbatim.
    pub meaning: &'static str,
    /// HTTP status of an HTTP response carrying the code, if one can.
    pub http_status: Option<u16>,
    /// WebSocket close code when the code ends a session, if it can.
    pub close_code: Option<u16>,
    /// What the code does to a session by default.
    pub severity: Severity,
    /// Fragment of the documentation page: the code and a slug of its meaning.
    pub anchor: &'static str,
    /// Message used when the caller has nothing more specific to say.
    pub default_message: &'static str,
}

impl ErrorInfo {
    /// Whether the code ends a session by default.
    pub fn is_fatal(&self) -> bool {
        self.severity == Severity::Fatal
    }
}

macro_rules! catalog {
    ($(
        $variant:ident = $text:literal, $meaning:literal,
        http $http:expr, close $close:expr, $severity:ident, $anchor:literal,
        $message:literal;
    )+) => {
        /// An `ih` error code of the interface.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[non_exhaustive]
        pub enum ErrorCode {
            $(#[doc = $meaning] $variant),+
        }

        /// The whole catalog, one row per code, in code order.
        pub static CATALOG: &[ErrorInfo] = &[
            $(ErrorInfo {
                code: ErrorCode::$variant,
                meaning: $meaning,
                http_status: $http,
                close_code: $close,
                severity: Severity::$severity,
                anchor: $anchor,
                default_message: $message,
            }),+
        ];

        impl ErrorCode {
            /// Every code, in code order.
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$variant),+];

            /// The wire spelling, e.g. `ih4001`.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(ErrorCode::$variant => $text),+
                }
            }

            /// Parses the wire spelling.
            pub fn parse(text: &str) -> Option<ErrorCode> {
                match text {
                    $($text => Some(ErrorCode::$variant),)+
                    _ => None,
                }
            }
        }
    };
}

catalog! {
    Ih1001 = "ih1001", "internal server error", http Some(500), close Some(1011), Fatal,
        "ih1001-internal-server-error",
        "An internal error occurred. Retry with exponential backoff.";
    Ih1002 = "ih1002", "service temporarily unavailable", http Some(503), close Some(1013), Fatal,
        "ih1002-service-temporarily-unavailable",
        "The service is temporarily unavailable. Retry after the delay in Retry-After.";
    Ih1003 = "ih1003", "dependency unavailable", http Some(503), close Some(1013), Fatal,
        "ih1003-dependency-unavailable",
        "A dependency of the service is unavailable. Retry shortly.";
    Ih1004 = "ih1004", "job interrupted", http None, close None, HttpOnly,
        "ih1004-job-interrupted",
        "The job was interrupted by a worker restart and will not be resumed. Resubmit the file.";
    Ih2001 = "ih2001", "invalid credentials", http Some(401), close Some(4001), Fatal,
        "ih2001-invalid-credentials",
        "The credentials are invalid.";
    Ih2002 = "ih2002", "missing credentials", http Some(401), close Some(4001), Fatal,
        "ih2002-missing-credentials",
        "No credentials were sent. Send `Authorization: Bearer <API key>`.";
    Ih2003 = "ih2003", "insufficient scope", http Some(403), close Some(4003), Fatal,
        "ih2003-insufficient-scope",
        "The credential lacks the scope this request needs.";
    Ih2013 = "ih2013", "origin not allowed", http Some(403), close Some(4003), Fatal,
        "ih2013-origin-not-allowed",
        "The request's Origin is not in the client token's allowed origins.";
    Ih2014 = "ih2014", "token revoked", http Some(401), close Some(4001), Fatal,
        "ih2014-token-revoked",
        "The client token was revoked.";
    Ih3001 = "ih3001", "requests-per-minute limit exceeded", http Some(429), close Some(4029), Fatal,
        "ih3001-requests-per-minute-limit-exceeded",
        "Too many requests per minute. Retry after the delay in Retry-After.";
    Ih3002 = "ih3002", "concurrent request limit", http Some(429), close Some(4029), Fatal,
        "ih3002-concurrent-request-limit",
        "Too many concurrent requests for this account.";
    Ih3003 = "ih3003", "analysis quota exceeded", http Some(429), close Some(4029), Fatal,
        "ih3003-analysis-quota-exceeded",
        "The account's analysis quota is used up.";
    Ih3004 = "ih3004", "daily quota exceeded", http Some(429), close Some(4029), Fatal,
        "ih3004-daily-quota-exceeded",
        "The account's daily quota is used up; it resets at `reset_time`.";
    Ih3005 = "ih3005", "inactive subscription", http Some(403), close Some(4003), Fatal,
        "ih3005-inactive-subscription",
        "The account's subscription is not active.";
    Ih3006 = "ih3006", "token video budget exhausted", http Some(429), close Some(4029), Fatal,
        "ih3006-token-video-budget-exhausted",
        "The client token's video budget (max_video_seconds) is used up.";
    Ih4001 = "ih4001", "missing file", http Some(400), close None, HttpOnly,
        "ih4001-missing-file",
        "No file was uploaded: the multipart field must be named `file`.";
    Ih4002 = "ih4002", "unsupported file type", http Some(400), close None, HttpOnly,
        "ih4002-unsupported-file-type",
        "The file's container is not supported for this model.";
    Ih4003 = "ih4003", "file too large", http Some(413), close None, HttpOnly,
        "ih4003-file-too-large",
        "The file is larger than the 32 MB upload limit.";
    Ih4004 = "ih4004", "video too long", http Some(400), close None, HttpOnly,
        "ih4004-video-too-long",
        "The media is longer than this deployment's maximum duration.";
    Ih4005 = "ih4005", "invalid parameter", http Some(400), close Some(1008), Fatal,
        "ih4005-invalid-parameter",
        "A request parameter is invalid.";
    Ih4006 = "ih4006", "invalid JSON", http Some(400), close None, NonFatal,
        "ih4006-invalid-json",
        "The body or control message is not valid JSON of the expected shape.";
    Ih4007 = "ih4007", "video too short", http Some(400), close None, HttpOnly,
        "ih4007-video-too-short",
        "The media is shorter than 3 seconds.";
    Ih4020 = "ih4020", "model not available on route", http Some(400), close None, HttpOnly,
        "ih4020-model-not-available-on-route",
        "The model is not available on this route.";
    Ih4021 = "ih4021", "job not found or expired", http Some(404), close None, HttpOnly,
        "ih4021-job-not-found-or-expired",
        "No job with this id is readable by this account: it does not exist or has expired.";
    Ih5001 = "ih5001", "empty video", http Some(422), close None, NonFatal,
        "ih5001-empty-video",
        "The media has no analyzable content: zero or undeterminable duration, or no video stream.";
    Ih5002 = "ih5002", "corrupted video", http Some(422), close None, NonFatal,
        "ih5002-corrupted-video",
        "The container cannot be inspected or reports a negative duration.";
    Ih5003 = "ih5003", "unsupported codec", http Some(422), close None, NonFatal,
        "ih5003-unsupported-codec",
        "The media uses a codec this service cannot decode.";
    Ih5004 = "ih5004", "malformed video segment", http Some(422), close None, NonFatal,
        "ih5004-malformed-video-segment",
        "The segment is missing required container atoms.";
    Ih5005 = "ih5005", "video segment too large", http Some(413), close None, NonFatal,
        "ih5005-video-segment-too-large",
        "The segment is larger than the 32 MB segment cap.";
    Ih5006 = "ih5006", "video segment too short", http Some(422), close None, NonFatal,
        "ih5006-video-segment-too-short",
        "The self-contained segment is shorter than 3 seconds.";
    Ih5007 = "ih5007", "content rejected by model", http Some(422), close None, NonFatal,
        "ih5007-content-rejected-by-model",
        "The model rejected this content.";
    Ih5008 = "ih5008", "no audio stream", http Some(422), close None, NonFatal,
        "ih5008-no-audio-stream",
        "The media has no audio stream.";
    Ih6001 = "ih6001", "invalid session config message", http None, close Some(1008), Fatal,
        "ih6001-invalid-session-config-message",
        "The session config message is invalid.";
    Ih6002 = "ih6002", "message too large", http None, close Some(1009), NonFatal,
        "ih6002-message-too-large",
        "The binary message is larger than 33554432 bytes.";
    Ih6003 = "ih6003", "session idle timeout", http None, close Some(4008), Fatal,
        "ih6003-session-idle-timeout",
        "No data arrived within the session idle timeout.";
    Ih6004 = "ih6004", "session duration exceeded", http None, close Some(1008), Fatal,
        "ih6004-session-duration-exceeded",
        "The session reached its maximum duration.";
    Ih6005 = "ih6005", "server going away", http None, close Some(1001), Fatal,
        "ih6005-server-going-away",
        "The server is shutting down for a scheduled update. Reconnect.";
    Ih6006 = "ih6006", "shutdown warning", http None, close None, NonFatal,
        "ih6006-shutdown-warning",
        "The server will shut down soon; the connection stays open until then.";
    Ih6007 = "ih6007", "unreadable video segment", http None, close None, NonFatal,
        "ih6007-unreadable-video-segment",
        "The segment could not be read.";
    Ih6008 = "ih6008", "session byte limit exceeded", http None, close Some(1008), Fatal,
        "ih6008-session-byte-limit-exceeded",
        "The session sent more bytes than the client token's max_bytes.";
    Ih6009 = "ih6009", "session closing", http None, close None, NonFatal,
        "ih6009-session-closing",
        "The session is closing; new media is no longer accepted.";
    Ih6010 = "ih6010", "stream not advancing", http None, close Some(1008), Fatal,
        "ih6010-stream-not-advancing",
        "No container header and no decodable unit arrived within the hold limit.";
}

impl ErrorCode {
    /// The catalog row of this code.
    pub fn info(self) -> &'static ErrorInfo {
        // CATALOG is generated in the same order as the enum, so the
        // discriminant indexes it (checked by a test).
        &CATALOG[self as usize]
    }

    /// `{docs_url}/api-reference/error-handling#<anchor>`.
    pub fn link(self, docs_url: &str) -> String {
        format!(
            "{}/api-reference/error-handling#{}",
            docs_url.trim_end_matches('/'),
            self.info().anchor
        )
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ErrorCode {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ErrorCode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        ErrorCode::parse(&text)
            .ok_or_else(|| de::Error::custom(format_args!("unknown error code `{text}`")))
    }
}

/// A failure on its way to the wire: a code and, when the caller has one, a
/// more specific message than the catalog's default.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{code}: {}", self.message())]
pub struct ServiceError {
    /// The code.
    pub code: ErrorCode,
    detail: Option<String>,
}

impl ServiceError {
    /// An error with the catalog's default message.
    pub fn new(code: ErrorCode) -> ServiceError {
        ServiceError { code, detail: None }
    }

    /// An error with a specific message.
    pub fn with_message(code: ErrorCode, message: impl Into<String>) -> ServiceError {
        ServiceError {
            code,
            detail: Some(message.into()),
        }
    }

    /// The message: the specific one, or the catalog's default.
    pub fn message(&self) -> &str {
        self.detail
            .as_deref()
            .unwrap_or(self.code.info().default_message)
    }

    /// The HTTP body of this error for a request with `correlation_id`.
    pub fn to_response(&self, correlation_id: &str, docs_url: &str) -> ErrorResponse {
        ErrorResponse {
            error_id: self.code,
            correlation_id: Some(correlation_id.to_owned()),
            link: Some(self.code.link(docs_url)),
            message: Some(self.message().to_owned()),
            reset_time: None,
        }
    }
}

impl From<ErrorCode> for ServiceError {
    fn from(code: ErrorCode) -> Self {
        ServiceError::new(code)
    }
}

mod media;

#[cfg(test)]
mod tests;
