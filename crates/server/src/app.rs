//! What every request handler shares: the [`App`] (stores, limits, pools,
//! streams), an admitted [`Caller`], the JSON response helper and the
//! request headers the server reads. Below the router ([`crate::routes`]) and
//! the handlers it calls (uploads, client tokens, streams, demo, report), so
//! that neither imports the other.

use crate::auth::{authenticate, authenticate_credential, bearer_credential, Principal};
use crate::http_error::{Body, HttpError};
use crate::jobs::{QueueSignals, WorkerPool};
use crate::limits::{check_subscription, RequestLimiter, RequestPermit};
use crate::services::Services;
use crate::streams::registry::{StreamSettings, Streams};
use crate::tokens::normalize_origin;
use attune_core::wire::Timestamp;
use attune_core::{ErrorCode, ServiceError};
use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{
    HeaderMap, HeaderName, HeaderValue, AUTHORIZATION, CACHE_CONTROL, CONTENT_TYPE,
};
use hyper::{Response, StatusCode};
use serde::Serialize;
use std::sync::Arc;

/// Response header carrying the request's correlation id.
pub const X_CORRELATION_ID: HeaderName = HeaderName::from_static("x-correlation-id");
/// Request header with the client's own request id: logged, never echoed.
pub const X_CLIENT_REQUEST_ID: HeaderName = HeaderName::from_static("x-client-request-id");
/// Request header naming the client SDK: telemetry only, never rejected.
pub const X_SERVICE_SDK: HeaderName = HeaderName::from_static("x-service-sdk");
/// The same header as the official clients spell it (`interhumanai` sends
/// `X-Interhuman-SDK: python/1.3.4`); read like [`X_SERVICE_SDK`].
pub const X_INTERHUMAN_SDK: HeaderName = HeaderName::from_static("x-interhuman-sdk");

/// The SDK a request announces in a header: `X-Service-SDK` (the interface's
/// name), else `X-Interhuman-SDK` (what the official clients send). Recorded
/// only: no caller of this lets it touch authentication, scopes or limits.
pub fn announced_sdk_header(headers: &HeaderMap) -> Option<&HeaderValue> {
    headers
        .get(&X_SERVICE_SDK)
        .or_else(|| headers.get(&X_INTERHUMAN_SDK))
}

/// The browser demo's settings: the key its tokens are minted with and the
/// origin always allowed to ask for one.
#[derive(Debug, Clone, Default)]
pub(crate) struct DemoSettings {
    /// The key tokens are minted with; `None` when the demo is disabled.
    pub(crate) key: Option<crate::config::DemoApiKey>,
    /// The origin of `base_url`, always allowed to ask for a token.
    pub(crate) base_origin: Option<String>,
}

impl DemoSettings {
    /// The demo switched off: the page explains how to enable it.
    pub(crate) fn disabled() -> DemoSettings {
        DemoSettings::default()
    }

    /// The demo as `config` sets it up.
    pub(crate) fn from_config(config: &crate::config::Config) -> DemoSettings {
        DemoSettings {
            key: config.demo_api_key.clone(),
            base_origin: normalize_origin(&config.base_url),
        }
    }

    /// Whether the demo is switched on.
    pub(crate) fn enabled(&self) -> bool {
        self.key.is_some()
    }
}

/// An authenticated request admitted past its account's limits.
#[derive(Debug)]
pub(crate) struct Caller {
    /// Who it acts for.
    pub(crate) principal: Principal,
    /// When it was admitted, by the server's clock.
    pub(crate) now: Timestamp,
    /// Its place among the account's concurrent requests, freed when the
    /// handler returns.
    _permit: RequestPermit,
}

/// What every request handler shares.
pub(crate) struct App {
    /// Base of the `link` in error bodies.
    pub(crate) docs_url: String,
    /// Largest upload accepted.
    pub(crate) max_upload_bytes: u64,
    /// Stores, runner and clock.
    pub(crate) services: Services,
    /// Per-account request limits (in memory, or in a shared store).
    pub(crate) limiter: Arc<RequestLimiter>,
    /// The analysis workers.
    pub(crate) pool: WorkerPool,
    /// The WebSocket sessions.
    pub(crate) streams: Arc<Streams>,
    /// The browser demo's key and origin (see [`App::with_demo`]).
    pub(crate) demo: DemoSettings,
    /// Set when shutdown begins, so `/readyz` tells the load balancer to
    /// send new work elsewhere while requests in flight finish.
    pub(crate) draining: std::sync::atomic::AtomicBool,
    /// Wakes the shared job queue's claimer and waiting submitters.
    pub(crate) queue: QueueSignals,
    /// This instance's Prometheus metrics.
    pub(crate) metrics: Arc<crate::metrics::Metrics>,
}

impl std::fmt::Debug for App {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("App")
            .field("docs_url", &self.docs_url)
            .field("pool", &self.pool)
            .finish_non_exhaustive()
    }
}

impl App {
    pub(crate) fn new(
        docs_url: String,
        max_upload_bytes: u64,
        services: Services,
        pool: WorkerPool,
        streams: StreamSettings,
    ) -> App {
        let streams = Arc::new(Streams::new(
            streams,
            Arc::clone(&services.tokens),
            pool.executor().clone(),
        ));
        let limiter = Arc::new(RequestLimiter::for_store(Arc::clone(&services.usage)));
        let metrics = Arc::new(crate::metrics::Metrics::with_store_errors(
            services.keys.error_counts(),
        ));
        App {
            docs_url,
            max_upload_bytes,
            services,
            limiter,
            pool,
            streams,
            demo: DemoSettings::disabled(),
            draining: std::sync::atomic::AtomicBool::new(false),
            queue: QueueSignals::default(),
            metrics,
        }
    }

    /// Authenticates a request by its `Authorization` header and admits it
    /// past its account's subscription check and request limits.
    pub(crate) async fn admit(&self, headers: &HeaderMap) -> Result<Caller, HttpError> {
        let now = self.services.clock.now();
        let principal = authenticate(
            self.services.keys.as_ref(),
            self.services.tokens.as_ref(),
            headers,
            now,
        )
        .await?;
        self.admit_principal(principal, now).await
    }

    /// Like [`App::admit`] for the client-token routes, whose API key comes
    /// from `Authorization` or, for clients that send it there, the body's
    /// `api_key`. A client token cannot stand in for the key (`ih2003`).
    pub(crate) async fn admit_key(
        &self,
        headers: &HeaderMap,
        body_key: Option<&str>,
    ) -> Result<Caller, HttpError> {
        let now = self.services.clock.now();
        let body_key = body_key.map(str::trim).filter(|key| !key.is_empty());
        let credential = match (headers.contains_key(AUTHORIZATION), body_key) {
            (false, Some(key)) => key,
            (true, Some(key)) if bearer_credential(headers).is_err() => key,
            _ => bearer_credential(headers)?,
        };
        let principal = authenticate_credential(
            self.services.keys.as_ref(),
            self.services.tokens.as_ref(),
            credential,
            headers,
            now,
        )
        .await?;
        if principal.token().is_some() {
            return Err(HttpError::new(ServiceError::with_message(
                ErrorCode::Ih2003,
                "Client tokens are minted and revoked with an API key, not with a client token.",
            )));
        }
        self.admit_principal(principal, now).await
    }

    async fn admit_principal(
        &self,
        principal: Principal,
        now: Timestamp,
    ) -> Result<Caller, HttpError> {
        check_subscription(principal.account())?;
        let permit = self.limiter.admit(principal.account(), now).await?;
        Ok(Caller {
            principal,
            now,
            _permit: permit,
        })
    }
}

/// A JSON response with `status`.
pub(crate) fn json_response(status: StatusCode, body: &impl Serialize) -> Response<Body> {
    // The wire types serialise plain data with string keys: this cannot fail.
    let json = serde_json::to_vec(body).expect("wire types serialise");
    let mut response = Response::new(Full::new(Bytes::from(json)));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}
