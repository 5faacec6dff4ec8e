//! Errors on the wire: a [`ServiceError`] becomes an HTTP response with the
//! catalog's status and the interface's `ErrorResponse` body.

use crate::ids::CorrelationId;
use attune_core::wire::Timestamp;
use attune_core::{ErrorCode, ServiceError};
use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{
    HeaderValue, ALLOW, CACHE_CONTROL, CONTENT_TYPE, RETRY_AFTER, WWW_AUTHENTICATE,
};
use hyper::{Method, Response, StatusCode};
use std::time::Duration;

/// The body type of every response this server writes.
pub type Body = Full<Bytes>;

/// `Retry-After` for `ih1002` when the caller gives none: the interface asks
/// clients to retry "after a short delay".
pub const DEFAULT_UNAVAILABLE_RETRY_AFTER: Duration = Duration::from_secs(5);

/// `Retry-After` for `ih3001` when the caller gives none: a whole minute, the
/// longest a per-minute window can take to make room.
pub const DEFAULT_RATE_LIMIT_RETRY_AFTER: Duration = Duration::from_secs(60);

/// A [`ServiceError`] with what its HTTP response needs beyond the catalog:
/// a status other than the catalog's, a `Retry-After` delay, an `Allow` list
/// or a `reset_time`.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpError {
    error: ServiceError,
    status: Option<StatusCode>,
    retry_after: Option<Duration>,
    reset_time: Option<Timestamp>,
    allow: Vec<Method>,
}

impl HttpError {
    /// The error with the catalog's status and defaults.
    pub fn new(error: impl Into<ServiceError>) -> HttpError {
        HttpError {
            error: error.into(),
            status: None,
            retry_after: None,
            reset_time: None,
            allow: Vec::new(),
        }
    }

    /// Answers with `status` instead of the catalog's: routing failures carry
    /// `ih4005` but answer 404 or 405.
    pub fn with_status(mut self, status: StatusCode) -> HttpError {
        self.status = Some(status);
        self
    }

    /// The `Retry-After` delay, rounded up to whole seconds.
    pub fn with_retry_after(mut self, delay: Duration) -> HttpError {
        self.retry_after = Some(delay);
        self
    }

    /// The body's `reset_time` (`ih3004`).
    pub fn with_reset_time(mut self, at: Timestamp) -> HttpError {
        self.reset_time = Some(at);
        self
    }

    /// The methods listed in `Allow` (405 answers).
    pub fn with_allow(mut self, methods: &[Method]) -> HttpError {
        self.allow = methods.to_vec();
        self
    }

    /// The wrapped error.
    pub fn service_error(&self) -> &ServiceError {
        &self.error
    }

    /// The `Retry-After` delay set on this error, if any (the defaults for
    /// `ih1002` and `ih3001` are added when the response is written).
    pub fn retry_after_delay(&self) -> Option<Duration> {
        self.retry_after
    }

    /// The body's `reset_time`, if set.
    pub fn reset_time(&self) -> Option<Timestamp> {
        self.reset_time
    }

    /// The HTTP status: the override, else the catalog's, else 500 for codes
    /// that have no HTTP form (they are a server bug if they reach here).
    pub fn status(&self) -> StatusCode {
        self.status.unwrap_or_else(|| {
            self.error
                .code
                .info()
                .http_status
                .and_then(|status| StatusCode::from_u16(status).ok())
                .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
        })
    }

    fn retry_after(&self) -> Option<Duration> {
        self.retry_after.or(match self.error.code {
            ErrorCode::Ih1002 => Some(DEFAULT_UNAVAILABLE_RETRY_AFTER),
            ErrorCode::Ih3001 => Some(DEFAULT_RATE_LIMIT_RETRY_AFTER),
            _ => None,
        })
    }

    /// The response for the request `correlation_id`. Its `X-Correlation-ID`
    /// header is added by the request handler, like on every response.
    pub fn into_response(self, correlation_id: &CorrelationId, docs_url: &str) -> Response<Body> {
        let status = self.status();
        let mut body = self.error.to_response(correlation_id.as_str(), docs_url);
        body.reset_time = self.reset_time;
        // Serialising a struct of strings and a code cannot fail.
        let json = serde_json::to_vec(&body).expect("ErrorResponse serialises");
        let mut response = Response::new(Full::new(Bytes::from(json)));
        *response.status_mut() = status;
        let headers = response.headers_mut();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
        if let Some(delay) = self.retry_after() {
            let seconds = delay.as_secs() + u64::from(delay.subsec_nanos() > 0);
            headers.insert(RETRY_AFTER, HeaderValue::from(seconds.max(1)));
        }
        if status == StatusCode::UNAUTHORIZED {
            // RFC 9110 requires a challenge on every 401.
            headers.insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        if !self.allow.is_empty() {
            let allow = self
                .allow
                .iter()
                .map(Method::as_str)
                .collect::<Vec<_>>()
                .join(", ");
            if let Ok(value) = HeaderValue::from_str(&allow) {
                headers.insert(ALLOW, value);
            }
        }
        response
    }
}

impl From<ServiceError> for HttpError {
    fn from(error: ServiceError) -> Self {
        HttpError::new(error)
    }
}

impl From<ErrorCode> for HttpError {
    fn from(code: ErrorCode) -> Self {
        HttpError::new(code)
    }
}

/// The HTTP response for `error` on the request `correlation_id`: the
/// catalog's status, the `ErrorResponse` JSON body with its link under
/// `docs_url`, and `Retry-After` for `ih1002` and `ih3001`.
pub fn error_response(
    error: &ServiceError,
    correlation_id: &CorrelationId,
    docs_url: &str,
) -> Response<Body> {
    HttpError::new(error.clone()).into_response(correlation_id, docs_url)
}

/// `ih1003` for a store that cannot answer, logged with its cause.
pub(crate) fn store_unavailable(error: &crate::store::StoreError) -> ServiceError {
    tracing::error!(%error, "the store cannot answer");
    ServiceError::with_message(
        ErrorCode::Ih1003,
        "The service's store is unavailable. Retry shortly.",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use attune_core::wire::ErrorResponse;
    use http_body_util::BodyExt;

    async fn body_of(response: Response<Body>) -> ErrorResponse {
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        serde_json::from_slice(&bytes).unwrap()
    }

    #[tokio::test]
    async fn every_http_code_answers_its_catalog_status_and_body() {
        let id = CorrelationId::new();
        for info in attune_core::error::CATALOG {
            let Some(status) = info.http_status else {
                continue;
            };
            let response = error_response(&ServiceError::new(info.code), &id, "https://d.example/");
            assert_eq!(response.status().as_u16(), status, "{}", info.code);
            assert_eq!(
                response.headers()[CONTENT_TYPE],
                "application/json",
                "{}",
                info.code
            );
            let body = body_of(response).await;
            assert_eq!(body.error_id, info.code);
            assert_eq!(body.correlation_id.as_deref(), Some(id.as_str()));
            assert_eq!(
                body.link,
                Some(format!(
                    "https://d.example/api-reference/error-handling#{}",
                    info.anchor
                ))
            );
            assert_eq!(body.message.as_deref(), Some(info.default_message));
        }
    }

    #[test]
    fn retry_after_is_sent_for_unavailable_and_rate_limited_only() {
        let id = CorrelationId::new();
        let header = |error: HttpError| {
            error
                .into_response(&id, "https://d.example")
                .headers()
                .get(RETRY_AFTER)
                .map(|v| v.to_str().unwrap().to_owned())
        };
        assert_eq!(header(ErrorCode::Ih1002.into()).as_deref(), Some("5"));
        assert_eq!(header(ErrorCode::Ih3001.into()).as_deref(), Some("60"));
        assert_eq!(
            header(HttpError::new(ErrorCode::Ih3001).with_retry_after(Duration::from_millis(2100)))
                .as_deref(),
            Some("3")
        );
        assert_eq!(header(ErrorCode::Ih3002.into()), None);
        assert_eq!(header(ErrorCode::Ih2001.into()), None);
    }

    #[tokio::test]
    async fn reset_time_status_override_and_allow_reach_the_response() {
        let id = CorrelationId::new();
        let reset = Timestamp::from_unix_millis(1_800_000_000_000).unwrap();
        let body = body_of(
            HttpError::new(ErrorCode::Ih3004)
                .with_reset_time(reset)
                .into_response(&id, "https://d.example"),
        )
        .await;
        assert_eq!(body.reset_time, Some(reset));

        let response = HttpError::new(ErrorCode::Ih4005)
            .with_status(StatusCode::METHOD_NOT_ALLOWED)
            .with_allow(&[Method::GET, Method::HEAD])
            .into_response(&id, "https://d.example");
        assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(response.headers()[ALLOW], "GET, HEAD");
        assert_eq!(body_of(response).await.error_id, ErrorCode::Ih4005);
    }

    #[test]
    fn codes_without_an_http_form_answer_500() {
        let error = HttpError::new(ErrorCode::Ih6003);
        assert_eq!(error.status(), StatusCode::INTERNAL_SERVER_ERROR);
    }
}
