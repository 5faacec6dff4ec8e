//! Request handling: a correlation id for every request, the route table,
//! admission (credential, subscription, per-account request limits) and one
//! log line per request.
//!
//! Every API route is admitted in the same order: credential (`ih2002`,
//! `ih2001`, `ih2014`, `ih2013`), subscription (`ih3005`), concurrent
//! requests (`ih3002`), requests per minute (`ih3001`); then the route checks
//! its scope and its own rules.
//!
//! Routing is a lookup in [`ROUTES`], a table of path templates, rather than
//! a framework router: the route set is small and fixed by the interface, and
//! every failure (unknown path, wrong method, unreadable body) must answer the
//! interface's `ErrorResponse` with the request's correlation id, which a
//! framework's own rejections would have to be intercepted to do. The same
//! table is what the OpenAPI document (`openapi.json`, served at
//! `GET /openapi.json`) is tested against, so a route cannot be added or
//! dropped without the document following.

use crate::app::App;
pub use crate::app::{
    announced_sdk_header, X_CLIENT_REQUEST_ID, X_CORRELATION_ID, X_INTERHUMAN_SDK, X_SERVICE_SDK,
};
use crate::http_error::{Body, HttpError};
use crate::ids::CorrelationId;
use crate::redact::{self, RedactedHeaders};
use crate::{client_tokens, demo, streams, uploads};
use attune_core::{ErrorCode, ServiceError};
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use std::time::{Duration, Instant};
use tracing::Instrument;

/// The body of `/auth` is read before answering so the client is not cut off
/// mid-send; past this size or time it is left unread and the connection is
/// closed after the answer instead.
const LEGACY_AUTH_BODY_LIMIT: usize = 64 * 1024;
const LEGACY_AUTH_BODY_TIMEOUT: Duration = Duration::from_secs(10);

const GET: &[Method] = &[Method::GET, Method::HEAD];
const POST: &[Method] = &[Method::POST];

/// The OpenAPI 3.1 document of these routes, served at `GET /openapi.json`.
pub const OPENAPI_JSON: &str = include_str!("../openapi.json");

/// The AsyncAPI 3.0 document of the WebSocket endpoints, served at
/// `GET /asyncapi.json`; its schemas named like OpenAPI components are
/// copies of them, kept identical by a test.
pub const ASYNCAPI_JSON: &str = include_str!("../asyncapi.json");

/// The endpoints this server answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Endpoint {
    /// `GET /healthz`: liveness for load balancers and orchestrators.
    Healthz,
    /// `GET /readyz`: readiness (store reachable, not draining).
    Readyz,
    /// `GET /metrics`: this instance's Prometheus metrics (an extension
    /// outside the interface).
    Metrics,
    /// `GET /openapi.json`: the OpenAPI document.
    OpenApi,
    /// `GET /asyncapi.json`: the AsyncAPI document of the WebSocket endpoints.
    AsyncApi,
    /// `POST /auth`: the retired key_id/key_secret exchange.
    LegacyAuth,
    /// `POST /v1/client_tokens`.
    MintToken,
    /// `POST /v1/client_tokens/revoke`.
    RevokeToken,
    /// `POST /v1/upload/analyze`.
    UploadV1,
    /// `POST /v2/upload/analyze`.
    UploadV2,
    /// `GET /v2/upload/jobs/{job_id}`.
    Job,
    /// `GET /v2/upload/jobs/{job_id}/report`: the job's HTML report (an
    /// extension outside the interface).
    JobReport,
    /// `GET /demo`: the browser demo page.
    DemoPage,
    /// `POST /demo/token`: a client token for the demo page.
    DemoToken,
}

/// One route: a path template and the methods it answers.
///
/// A template segment `{name}` matches any one non-empty path segment; the
/// rest match literally.
#[derive(Debug, Clone, Copy)]
pub struct Route {
    path: &'static str,
    methods: &'static [Method],
    endpoint: Endpoint,
}

impl Route {
    /// The path template, as the OpenAPI document spells it (e.g.
    /// `/v2/upload/jobs/{job_id}`).
    pub fn path(&self) -> &'static str {
        self.path
    }

    /// The methods answered; any other answers 405 with `Allow`.
    pub fn methods(&self) -> &'static [Method] {
        self.methods
    }

    /// Whether `path` matches the template; answers the value of its
    /// `{...}` segment, if it has one.
    fn capture<'p>(&self, path: &'p str) -> Option<Option<&'p str>> {
        let mut captured = None;
        let mut template = self.path.split('/');
        let mut segments = path.split('/');
        loop {
            match (template.next(), segments.next()) {
                (None, None) => return Some(captured),
                (Some(pattern), Some(segment))
                    if pattern.starts_with('{') && pattern.ends_with('}') =>
                {
                    if segment.is_empty() {
                        return None;
                    }
                    captured = Some(segment);
                }
                (Some(pattern), Some(segment)) if pattern == segment => {}
                _ => return None,
            }
        }
    }
}

/// The route table: what requests are dispatched on, and what the OpenAPI test
/// checks the document against.
pub const ROUTES: &[Route] = &[
    Route {
        path: "/healthz",
        methods: GET,
        endpoint: Endpoint::Healthz,
    },
    Route {
        path: "/readyz",
        methods: GET,
        endpoint: Endpoint::Readyz,
    },
    Route {
        path: "/metrics",
        methods: GET,
        endpoint: Endpoint::Metrics,
    },
    Route {
        path: "/openapi.json",
        methods: GET,
        endpoint: Endpoint::OpenApi,
    },
    Route {
        path: "/asyncapi.json",
        methods: GET,
        endpoint: Endpoint::AsyncApi,
    },
    Route {
        path: "/auth",
        methods: POST,
        endpoint: Endpoint::LegacyAuth,
    },
    Route {
        path: "/v1/client_tokens",
        methods: POST,
        endpoint: Endpoint::MintToken,
    },
    Route {
        path: "/v1/client_tokens/revoke",
        methods: POST,
        endpoint: Endpoint::RevokeToken,
    },
    Route {
        path: "/v1/upload/analyze",
        methods: POST,
        endpoint: Endpoint::UploadV1,
    },
    Route {
        path: "/v2/upload/analyze",
        methods: POST,
        endpoint: Endpoint::UploadV2,
    },
    Route {
        path: "/v2/upload/jobs/{job_id}",
        methods: GET,
        endpoint: Endpoint::Job,
    },
    Route {
        path: "/v2/upload/jobs/{job_id}/report",
        methods: GET,
        endpoint: Endpoint::JobReport,
    },
    Route {
        path: "/demo",
        methods: GET,
        endpoint: Endpoint::DemoPage,
    },
    Route {
        path: "/demo/token",
        methods: POST,
        endpoint: Endpoint::DemoToken,
    },
];

/// The route `path` belongs to, with the value of its path parameter.
fn resolve(path: &str) -> Option<(&'static Route, Option<&str>)> {
    ROUTES
        .iter()
        .find_map(|route| route.capture(path).map(|param| (route, param)))
}

impl App {
    /// Answers one request. Every response, errors included, carries
    /// `X-Correlation-ID`; the request log line is written here.
    pub(crate) async fn handle(&self, request: Request<Incoming>) -> Response<Body> {
        let started = Instant::now();
        let correlation_id = CorrelationId::new();
        let method = request.method().clone();
        let path = redact::loggable_path(request.uri());
        let route = route_label(request.uri().path());
        let client_request_id = request
            .headers()
            .get(&X_CLIENT_REQUEST_ID)
            .map(redact::loggable_value);
        let sdk = announced_sdk_header(request.headers()).map(redact::loggable_value);

        let span = tracing::info_span!("request", correlation_id = %correlation_id);
        tracing::debug!(
            parent: &span,
            method = %method,
            path = %path,
            headers = %RedactedHeaders(request.headers()),
            "request received"
        );
        let (mut response, error_id) =
            match self.route(request, &correlation_id).instrument(span).await {
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
        if error_id == Some(ErrorCode::Ih1003) {
            // Every store call that fails unavailable surfaces as ih1003.
            self.metrics.store_error();
        }
        self.metrics.observe_request(
            route,
            method_label(&method),
            response.status().as_u16(),
            started.elapsed(),
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

    async fn route(
        &self,
        request: Request<Incoming>,
        correlation_id: &CorrelationId,
    ) -> Result<Response<Body>, HttpError> {
        if let Some(endpoint) = streams::endpoint_of(request.uri().path()) {
            return streams::handle(self, endpoint, request, correlation_id).await;
        }
        let Some((route, param)) = resolve(request.uri().path()) else {
            return Err(not_found(request.uri()));
        };
        if !route.methods.contains(request.method()) {
            return Err(method_not_allowed(route, &request));
        }
        match route.endpoint {
            Endpoint::Healthz => Ok(healthz()),
            Endpoint::Readyz => Ok(self.readyz().await),
            Endpoint::Metrics => Ok(self.metrics_scrape().await),
            Endpoint::OpenApi => Ok(document(OPENAPI_JSON)),
            Endpoint::AsyncApi => Ok(document(ASYNCAPI_JSON)),
            Endpoint::LegacyAuth => Err(legacy_auth(request.into_body()).await),
            Endpoint::MintToken => client_tokens::mint(self, request).await,
            Endpoint::RevokeToken => client_tokens::revoke(self, request).await,
            Endpoint::UploadV1 => {
                let caller = self.admit(request.headers()).await?;
                uploads::analyze_v1(self, &caller, request).await
            }
            Endpoint::UploadV2 => {
                let caller = self.admit(request.headers()).await?;
                uploads::submit_v2(self, &caller, correlation_id, request).await
            }
            Endpoint::Job => {
                let caller = self.admit(request.headers()).await?;
                let job_id = param.unwrap_or_default().to_owned();
                uploads::read_job(self, &caller, &job_id).await
            }
            Endpoint::JobReport => {
                let caller = self.admit(request.headers()).await?;
                let job_id = param.unwrap_or_default().to_owned();
                crate::report::job_report(self, &caller, &job_id).await
            }
            Endpoint::DemoPage => Ok(demo::page(self)),
            Endpoint::DemoToken => demo::token(self, request).await,
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

fn method_not_allowed(route: &Route, request: &Request<Incoming>) -> HttpError {
    let allowed = route
        .methods
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
    .with_allow(route.methods)
}

/// The `route` label of a request: its route template, never the raw path,
/// so the metrics' cardinality stays bounded.
fn route_label(path: &str) -> &'static str {
    if let Some(endpoint) = streams::endpoint_of(path) {
        return endpoint.path();
    }
    resolve(path).map_or("other", |(route, _)| route.path)
}

/// The `method` label: the standard methods by name, anything else `other`
/// (a client can send any token as a method).
fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::OPTIONS => "OPTIONS",
        _ => "other",
    }
}

fn healthz() -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from_static(br#"{"status":"ok"}"#)));
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

impl App {
    /// `GET /readyz`: 200 while this instance should get new work; 503 when
    /// it is draining or its store does not answer.
    async fn readyz(&self) -> Response<Body> {
        let (status, body): (_, &'static [u8]) =
            if self.draining.load(std::sync::atomic::Ordering::Relaxed) {
                (StatusCode::SERVICE_UNAVAILABLE, br#"{"status":"draining"}"#)
            } else if let Err(error) = self.services.keys.ping().await {
                tracing::warn!(%error, "readiness: the store does not answer");
                (
                    StatusCode::SERVICE_UNAVAILABLE,
                    br#"{"status":"store_unavailable"}"#,
                )
            } else {
                (StatusCode::OK, br#"{"status":"ready"}"#)
            };
        let mut response = Response::new(Full::new(Bytes::from_static(body)));
        *response.status_mut() = status;
        let headers = response.headers_mut();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
        response
    }
}

impl App {
    /// `GET /metrics`: no credential, like `/healthz`; operators keep it off
    /// the public listener (`docs/SERVER.md`, "Metrics").
    async fn metrics_scrape(&self) -> Response<Body> {
        self.metrics
            .refresh_queue_age(self.services.jobs.as_ref(), self.services.clock.now())
            .await;
        let text = self.metrics.encode(&self.pool);
        let mut response = Response::new(Full::new(Bytes::from(text)));
        let headers = response.headers_mut();
        headers.insert(
            CONTENT_TYPE,
            HeaderValue::from_static(crate::metrics::CONTENT_TYPE),
        );
        headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
        response
    }
}

/// A document that changes only with the binary, so caches may keep it a
/// while.
fn document(json: &'static str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from_static(json.as_bytes())));
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(
        CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=300"),
    );
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
