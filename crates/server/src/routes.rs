//! Request handling: a correlation id for every request, the route table,
//! and one log line per request.
//!
//! Routing is a match on the path rather than a framework router: the route
//! set is small and fixed by the interface, and every failure (unknown path,
//! wrong method, unreadable body) must answer the interface's `ErrorResponse`
//! with the request's correlation id, which a framework's own rejections would
//! have to be intercepted to do.

use crate::http_error::{Body, HttpError};
use crate::ids::CorrelationId;
use crate::redact::{self, RedactedHeaders};
use attune_core::{ErrorCode, ServiceError};
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{HeaderName, HeaderValue, CACHE_CONTROL, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use std::time::{Duration, Instant};
use tracing::Instrument;

/// Response header carrying the request's correlation id.
pub const X_CORRELATION_ID: HeaderName = HeaderName::from_static("x-correlation-id");
/// Request header with the client's own request id: logged, never echoed.
pub const X_CLIENT_REQUEST_ID: HeaderName = HeaderName::from_static("x-client-request-id");
/// Request header naming the client SDK: telemetry only, never rejected.
pub const X_SERVICE_SDK: HeaderName = HeaderName::from_static("x-service-sdk");

/// The body of `/auth` is read before answering so the client is not cut off
/// mid-send; past this size or time it is left unread and the connection is
/// closed after the answer instead.
const LEGACY_AUTH_BODY_LIMIT: usize = 64 * 1024;
const LEGACY_AUTH_BODY_TIMEOUT: Duration = Duration::from_secs(10);

const GET: &[Method] = &[Method::GET, Method::HEAD];
const POST: &[Method] = &[Method::POST];

/// The endpoints this server answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Endpoint {
    /// `GET /healthz`: liveness for load balancers and orchestrators.
    Healthz,
    /// `POST /auth`: the retired key_id/key_secret exchange.
    LegacyAuth,
}

impl Endpoint {
    fn resolve(path: &str) -> Option<Endpoint> {
        match path {
            "/healthz" => Some(Endpoint::Healthz),
            "/auth" => Some(Endpoint::LegacyAuth),
            _ => None,
        }
    }

    fn methods(self) -> &'static [Method] {
        match self {
            Endpoint::Healthz => GET,
            Endpoint::LegacyAuth => POST,
        }
    }
}

/// What every request handler shares.
#[derive(Debug)]
pub(crate) struct App {
    /// Base of the `link` in error bodies.
    docs_url: String,
}

impl App {
    pub(crate) fn new(docs_url: String) -> App {
        App { docs_url }
    }

    /// Answers one request. Every response, errors included, carries
    /// `X-Correlation-ID`; the request log line is written here.
    pub(crate) async fn handle(&self, request: Request<Incoming>) -> Response<Body> {
        let started = Instant::now();
        let correlation_id = CorrelationId::new();
        let method = request.method().clone();
        let path = redact::loggable_path(request.uri());
        let client_request_id = request
            .headers()
            .get(&X_CLIENT_REQUEST_ID)
            .map(redact::loggable_value);
        let sdk = request
            .headers()
            .get(&X_SERVICE_SDK)
            .map(redact::loggable_value);

        let span = tracing::info_span!("request", correlation_id = %correlation_id);
        tracing::debug!(
            parent: &span,
            method = %method,
            path = %path,
            headers = %RedactedHeaders(request.headers()),
            "request received"
        );
        let (mut response, error_id) = match self.route(request).instrument(span).await {
            Ok(response) => (response, None),
            Err(error) => {
                let code = error.service_error().code;
                (
                    error.into_response(&correlation_id, &self.docs_url),
                    Some(code),
                )
            }
        };
        response.headers_mut().insert(
            X_CORRELATION_ID,
            HeaderValue::from_str(correlation_id.as_str()).expect("hex is a valid header value"),
        );
        tracing::info!(
            method = %method,
            path = %path,
            status = response.status().as_u16(),
            latency_ms = %format_args!("{:.3}", started.elapsed().as_secs_f64() * 1000.0),
            correlation_id = %correlation_id,
            client_request_id = client_request_id.as_deref().unwrap_or("-"),
            sdk = sdk.as_deref().unwrap_or("-"),
            error_id = error_id.map_or("-", ErrorCode::as_str),
            "request"
        );
        response
    }

    async fn route(&self, request: Request<Incoming>) -> Result<Response<Body>, HttpError> {
        let path = request.uri().path();
        let Some(endpoint) = Endpoint::resolve(path) else {
            return Err(not_found(request.uri()));
        };
        if !endpoint.methods().contains(request.method()) {
            return Err(method_not_allowed(endpoint, &request));
        }
        match endpoint {
            Endpoint::Healthz => Ok(healthz()),
            Endpoint::LegacyAuth => Err(legacy_auth(request.into_body()).await),
        }
    }
}

fn not_found(uri: &hyper::Uri) -> HttpError {
    HttpError::new(ServiceError::with_message(
        ErrorCode::Ih4005,
        format!("No endpoint at the path `{}`.", redact::loggable_path(uri)),
    ))
    .with_status(StatusCode::NOT_FOUND)
}

fn method_not_allowed(endpoint: Endpoint, request: &Request<Incoming>) -> HttpError {
    let allowed = endpoint
        .methods()
        .iter()
        .map(Method::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    HttpError::new(ServiceError::with_message(
        ErrorCode::Ih4005,
        format!(
            "The method {} is not allowed on `{}`; allowed: {allowed}.",
            request.method(),
            redact::loggable_path(request.uri()),
        ),
    ))
    .with_status(StatusCode::METHOD_NOT_ALLOWED)
    .with_allow(endpoint.methods())
}

fn healthz() -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from_static(br#"{"status":"ok"}"#)));
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// The answer to the retired `/auth` exchange. The body (which holds a
/// `key_secret`) is read and dropped, never parsed or logged.
async fn legacy_auth(body: Incoming) -> HttpError {
    let drained = tokio::time::timeout(
        LEGACY_AUTH_BODY_TIMEOUT,
        Limited::new(body, LEGACY_AUTH_BODY_LIMIT).collect(),
    )
    .await;
    if !matches!(drained, Ok(Ok(_))) {
        tracing::debug!("legacy /auth body left unread (too large, too slow or broken)");
    }
    HttpError::new(ServiceError::with_message(
        ErrorCode::Ih2001,
        "The key_id/key_secret exchange at /auth was replaced by API keys: send your API key \
         on every request as `Authorization: Bearer <API key>`.",
    ))
}
