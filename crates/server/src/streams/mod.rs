//! The WebSocket endpoints (`/v1/stream/analyze`, `/v2/stream/analyze`,
//! `/v0/realtime/analyze`): the handshake, then one session task per connection.
//!
//! Handshake, in order (the decisions are attune-core's [`negotiate`] and the auth module's;
//! this only gathers their inputs):
//! 1. The credential: `Authorization: Bearer` when the header is present (then no
//!    subprotocol is acknowledged, even when one was offered), else the
//!    `Sec-WebSocket-Protocol: access_token, <credential>` pair, of which only
//!    `access_token` is echoed. Neither: `ih2002`.
//! 2. Authentication (`ih2001`, `ih2014`, client-token origin `ih2013`), the account's
//!    subscription (`ih3005`) and requests-per-minute allowance (`ih3001`; a session is
//!    admitted like one request and does not hold a concurrent-request slot while it runs),
//!    a client token's budget (`ih3006` when spent) and its concurrent sessions (`ih3002`).
//! 3. Scopes and the model ([`negotiate`]: `ih2003`/4003, `ih4005`/1008, `ih1003`/1013).
//!
//! Every refusal happens after the upgrade: the client gets the `error` envelope, then the
//! close code, as the interface's session table says. A request that is not a WebSocket
//! upgrade answers 426 with an ErrorResponse.

mod analysis;
mod credential;
mod session;

pub(crate) use analysis::AnalysisPool;

use crate::auth::{authenticate_credential, bearer_credential, Credential, Principal};
use crate::http_error::{Body, HttpError};
use crate::ids::CorrelationId;
use crate::keys::KeyHash;
use crate::limits::{check_subscription, RequestPermit};
use crate::recommend_backend::RecommendationService;
use crate::redact;
use crate::routes::{announced_sdk_header, App, X_CLIENT_REQUEST_ID, X_CORRELATION_ID};
use crate::store::TokenStore;
use attune_core::access::{negotiate, Refusal};
use attune_core::session::{Revoked, SessionLimits, SessionSetup, StreamSession};
use attune_core::wire::{Endpoint, ErrorEvent, EventData, Model, Seconds};
use attune_core::{ErrorCode, ServiceError};
use credential::CredentialWatch;
use fastwebsockets::upgrade::{is_upgrade_request, upgrade};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{HeaderMap, HeaderValue, AUTHORIZATION};
use hyper::{Request, Response, StatusCode};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::task::TaskTracker;

/// The request header of the WebSocket subprotocol list.
const SEC_WEBSOCKET_PROTOCOL: &str = "sec-websocket-protocol";
/// The subprotocol that announces a credential in the next list item.
pub const ACCESS_TOKEN_PROTOCOL: &str = "access_token";
/// Largest WebSocket message read by default: above the interface's 32 MiB frame limit, so
/// an oversized frame is answered with a non-fatal `ih6002` rather than a dropped
/// connection; beyond this the session ends with `ih6002` and close 1009.
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;

/// How stream sessions are run.
#[derive(Debug, Clone)]
pub struct StreamSettings {
    /// Session limits announced in `session.ready` and enforced.
    pub limits: SessionLimits,
    /// Models with an analysis backend on this instance (`ih1003` for others).
    pub models: Vec<Model>,
    /// Base of error documentation links.
    pub docs_url: String,
    /// Session seconds per real second: 1 in production. Tests speed time-driven rules
    /// (idle, maximum duration, drain, shutdown warnings) up with it.
    pub time_scale: f64,
    /// A frame that waited longer than this for analysis is decoded but not analyzed
    /// (`coverage.dropped`).
    pub max_lag: Duration,
    /// Unread bytes a session may hold for analysis; a frame arriving beyond is still
    /// demuxed and decoded (a continuous container needs every byte) but not analyzed
    /// (`coverage.dropped`).
    pub max_queued_bytes: u64,
    /// Unread bytes a session may hold at all (memory bound; at least `max_queued_bytes`):
    /// beyond, the session ends with `ih1002` and close 1013 rather than lose bytes.
    pub max_backlog_bytes: u64,
    /// Largest WebSocket message read ([`MAX_MESSAGE_BYTES`] by default).
    pub max_message_bytes: usize,
    /// Longest one write to the client may wait for it to read; past it the session ends and
    /// the connection is dropped without a close frame (the client sees 1006): a frame cut
    /// mid-write leaves nothing a close frame could follow, and a client that reads nothing
    /// would not read one either. This is what bounds a never-reading client to the socket
    /// buffers.
    pub write_timeout: Duration,
    /// How long a running session trusts its credential without reading the store again
    /// (revocations made through this server are seen at once; see `credential`).
    pub credential_recheck: Duration,
    /// Notice given to open sessions at shutdown (`ih6006` warnings, then `ih6005`), session
    /// seconds. About 5 minutes by default.
    pub shutdown_notice_seconds: Seconds,
    /// Analysis threads shared by all sessions.
    pub analysis_threads: usize,
    /// Writes realtime recommendations (the embedded recommender unless a backend is
    /// configured).
    pub recommender: RecommendationService,
}

impl Default for StreamSettings {
    fn default() -> Self {
        StreamSettings {
            limits: SessionLimits::default(),
            models: Model::SERVED.to_vec(),
            docs_url: "http://127.0.0.1:8080/docs".to_owned(),
            time_scale: 1.0,
            max_lag: Duration::from_secs(2),
            max_queued_bytes: 48 * 1024 * 1024,
            max_backlog_bytes: 96 * 1024 * 1024,
            max_message_bytes: MAX_MESSAGE_BYTES,
            write_timeout: Duration::from_secs(30),
            credential_recheck: Duration::from_secs(5),
            shutdown_notice_seconds: 300.0,
            analysis_threads: std::thread::available_parallelism().map_or(2, usize::from),
            recommender: RecommendationService::embedded(),
        }
    }
}

/// Session time: seconds since the handshake, times the configured scale.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SessionClock {
    start: Instant,
    scale: f64,
}

impl SessionClock {
    fn new(scale: f64) -> SessionClock {
        SessionClock {
            start: Instant::now(),
            scale: if scale.is_finite() && scale > 0.0 {
                scale
            } else {
                1.0
            },
        }
    }

    /// The session time now.
    pub(crate) fn now(&self) -> Seconds {
        self.start.elapsed().as_secs_f64() * self.scale
    }

    /// The instant at session time `at`.
    pub(crate) fn instant(&self, at: Seconds) -> Instant {
        let real = (at / self.scale).clamp(0.0, 1e9);
        self.start + Duration::from_secs_f64(real)
    }

    /// The session time of `instant`.
    pub(crate) fn session_time(&self, instant: Instant) -> Seconds {
        instant.saturating_duration_since(self.start).as_secs_f64() * self.scale
    }
}

/// State shared by every stream session of the server.
pub(crate) struct Streams {
    pub(crate) settings: StreamSettings,
    pub(crate) pool: AnalysisPool,
    pub(crate) tokens: Arc<dyn TokenStore>,
    shutdown: watch::Sender<Option<Instant>>,
    tracker: TaskTracker,
}

impl std::fmt::Debug for Streams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Streams")
            .field("settings", &self.settings)
            .field("sessions", &self.tracker.len())
            .finish_non_exhaustive()
    }
}

impl Streams {
    pub(crate) fn new(settings: StreamSettings, tokens: Arc<dyn TokenStore>) -> Streams {
        let pool = AnalysisPool::new(settings.analysis_threads);
        Streams {
            settings,
            pool,
            tokens,
            shutdown: watch::channel(None).0,
            tracker: TaskTracker::new(),
        }
    }

    fn shutdown_schedule(&self) -> watch::Receiver<Option<Instant>> {
        self.shutdown.subscribe()
    }

    /// Tells every open session the server shuts down after the notice period, and waits
    /// until they have all ended (they close themselves at the deadline).
    pub(crate) async fn shut_down(&self) {
        let notice = self.settings.shutdown_notice_seconds / self.settings.time_scale.max(1e-9);
        let at = Instant::now() + Duration::from_secs_f64(notice.clamp(0.0, 86_400.0));
        self.shutdown.send_replace(Some(at));
        self.tracker.close();
        if !self.tracker.is_empty() {
            tracing::info!(
                sessions = self.tracker.len(),
                notice_seconds = notice,
                "stream sessions told of the shutdown"
            );
        }
        // Sessions close at the deadline; a little slack for their last writes.
        let _ = tokio::time::timeout_at(at + Duration::from_secs(5), self.tracker.wait()).await;
    }
}

/// The WebSocket endpoint at `path`, if it is one.
pub(crate) fn endpoint_of(path: &str) -> Option<Endpoint> {
    [Endpoint::StreamV1, Endpoint::StreamV2, Endpoint::Realtime]
        .into_iter()
        .find(|e| e.path() == path)
}

/// Where the credential of a handshake came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CredentialSource {
    /// The `Authorization` header.
    Header,
    /// The `access_token` subprotocol pair (echo `access_token`).
    Subprotocol,
}

/// The credential of a handshake and where it came from (see the module docs).
pub(crate) fn handshake_credential(
    headers: &HeaderMap,
) -> Result<(&str, CredentialSource), ServiceError> {
    if headers.contains_key(AUTHORIZATION) {
        return bearer_credential(headers).map(|c| (c, CredentialSource::Header));
    }
    let offered = headers
        .get_all(SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|p| !p.is_empty());
    let mut after_marker = false;
    for protocol in offered {
        if after_marker {
            return Ok((protocol, CredentialSource::Subprotocol));
        }
        after_marker = protocol == ACCESS_TOKEN_PROTOCOL;
    }
    Err(ServiceError::new(ErrorCode::Ih2002))
}

/// The SDK a client announced: the `X-Service-SDK` (or `X-Interhuman-SDK`) header wins over
/// the query's `ih_sdk`/`ih_sdk_version` pair (read before the older `sdk`/`sdk_version` pair).
/// Recorded only; it never changes what the server does.
pub(crate) fn announced_sdk(
    headers: &HeaderMap,
    query: &HashMap<String, String>,
) -> Option<String> {
    // Percent-decoding gives back any character, and the value is logged: control characters
    // (a `%0A` would forge a log line in the text format) are shown as `?`, as
    // `redact::loggable_value` does for the header.
    let shown = |text: &str, max: usize| -> String {
        text.chars()
            .take(max)
            .map(|c| if c.is_control() { '?' } else { c })
            .collect()
    };
    let pair = |name: &str, version: &str| {
        Some(format!(
            "{}/{}",
            shown(query.get(name)?, 64),
            shown(query.get(version)?, 32)
        ))
    };
    let from_query = pair("ih_sdk", "ih_sdk_version").or_else(|| pair("sdk", "sdk_version"));
    match announced_sdk_header(headers).map(redact::loggable_value) {
        Some(header) => {
            if let Some(q) = from_query.filter(|q| !header.starts_with(q.as_str())) {
                tracing::debug!(header = %header, query = %q, "SDK header and query disagree; the header wins");
            }
            Some(header)
        }
        None => from_query,
    }
}

/// The handshake's query parameters, decoded (`+` and `%XX`); the first of a repeated name wins.
pub(crate) fn parse_query(query: Option<&str>) -> HashMap<String, String> {
    let mut out = HashMap::new();
    for (key, value) in form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        if !key.is_empty() {
            out.entry(key.into_owned())
                .or_insert_with(|| value.into_owned());
        }
    }
    out
}

/// What the handshake settled.
struct Admitted {
    principal: Principal,
    setup: SessionSetup,
    /// A client token's place among its open sessions, given back when the session ends
    /// however it ends.
    session_slot: Option<RequestPermit>,
}

/// Answers a request to a WebSocket endpoint: 101 and a session task, with any refusal sent
/// as the session's first and only event.
pub(crate) async fn handle(
    app: &App,
    endpoint: Endpoint,
    mut request: Request<Incoming>,
    correlation_id: &CorrelationId,
) -> Result<Response<Body>, HttpError> {
    if !is_upgrade_request(&request) {
        return Err(HttpError::new(ServiceError::with_message(
            ErrorCode::Ih4005,
            format!(
                "{} is a WebSocket endpoint: connect with a WebSocket client.",
                endpoint.path()
            ),
        ))
        .with_status(StatusCode::UPGRADE_REQUIRED));
    }
    let headers = request.headers().clone();
    let query = parse_query(request.uri().query());
    let sdk = announced_sdk(&headers, &query);
    let client_request_id = headers
        .get(&X_CLIENT_REQUEST_ID)
        .map(redact::loggable_value);
    let credential = handshake_credential(&headers);
    let source = credential.as_ref().map(|(_, s)| *s).ok();
    // Kept (hashed) to recheck the credential while the session runs.
    let credential_hash = credential.as_ref().ok().map(|(c, _)| KeyHash::of(c));
    let admitted = match credential {
        Ok((credential, _)) => admit(app, endpoint, credential, &headers, &query).await,
        Err(error) => Err(Refusal::from(error)),
    };
    // Taken by `admit`; given back when this handler or the session ends, however it ends.
    let mut admitted = admitted;
    let token_slot = admitted.as_mut().ok().and_then(|a| a.session_slot.take());
    let (mut response, upgrade_fut) = upgrade(&mut request).map_err(|error| {
        HttpError::new(ServiceError::with_message(
            ErrorCode::Ih4005,
            format!("not a valid WebSocket handshake: {error}"),
        ))
    })?;
    if source == Some(CredentialSource::Subprotocol) {
        response.headers_mut().insert(
            SEC_WEBSOCKET_PROTOCOL,
            HeaderValue::from_static(ACCESS_TOKEN_PROTOCOL),
        );
    }
    let correlation = correlation_id.as_str().to_owned();
    match &admitted {
        Ok(a) => tracing::info!(
            endpoint = endpoint.path(),
            correlation_id = %correlation,
            account_id = a.principal.account_id(),
            credential_id = a.principal.credential_id(),
            model = %a.setup.model,
            sdk = sdk.as_deref().unwrap_or("-"),
            client_request_id = client_request_id.as_deref().unwrap_or("-"),
            "stream session accepted"
        ),
        Err(refusal) => tracing::info!(
            endpoint = endpoint.path(),
            correlation_id = %correlation,
            error_id = refusal.error.code.as_str(),
            sdk = sdk.as_deref().unwrap_or("-"),
            client_request_id = client_request_id.as_deref().unwrap_or("-"),
            "stream session refused"
        ),
    }
    let streams = Arc::clone(&app.streams);
    let docs_url = app.docs_url.clone();
    let metrics = Arc::clone(&app.metrics);
    let stores = (
        Arc::clone(&app.services.keys),
        Arc::clone(&app.services.tokens),
    );
    streams.clone().tracker.spawn(async move {
        let _token_slot = token_slot;
        let ws = match upgrade_fut.await {
            Ok(ws) => ws,
            Err(error) => {
                tracing::debug!(%error, "WebSocket upgrade did not complete");
                return;
            }
        };
        let (inbound, mut writer) = session::split(
            ws,
            correlation,
            streams.settings.max_message_bytes,
            streams.settings.write_timeout,
        );
        let admitted = match admitted {
            Ok(admitted) => admitted,
            Err(refusal) => {
                let error = &refusal.error;
                writer
                    .event(EventData::Error(ErrorEvent {
                        code: error.code,
                        message: error.message().to_owned(),
                        link: Some(error.code.link(&docs_url)),
                        segment: None,
                        seconds_remaining: None,
                    }))
                    .await;
                writer
                    .close(refusal.close_code, error.code.info().meaning)
                    .await;
                return;
            }
        };
        let kind = match admitted.principal.credential() {
            Credential::Key { .. } => Revoked::Key,
            Credential::Token(_) => Revoked::Token,
        };
        let Some(hash) = credential_hash else {
            return; // Admitted sessions always had a credential.
        };
        let credential = CredentialWatch::new(
            stores.0,
            stores.1,
            hash,
            kind,
            streams.settings.credential_recheck,
        );
        let _counted = metrics.session_opened(endpoint);
        let clock = SessionClock::new(streams.settings.time_scale);
        let (engine, first_actions) = StreamSession::open(admitted.setup, clock.now());
        let run = session::SessionRun {
            streams: Arc::clone(&streams),
            endpoint,
            principal: admitted.principal,
            engine,
            first_actions,
            clock,
            credential,
            metrics: Arc::clone(&metrics),
        };
        session::run(run, inbound, writer).await;
    });
    response.headers_mut().insert(
        X_CORRELATION_ID,
        HeaderValue::from_str(correlation_id.as_str()).expect("hex is a valid header value"),
    );
    Ok(response.map(|_| Full::new(bytes::Bytes::new())))
}

/// Authenticates and admits a handshake (see the module docs for the order).
async fn admit(
    app: &App,
    endpoint: Endpoint,
    credential: &str,
    headers: &HeaderMap,
    query: &HashMap<String, String>,
) -> Result<Admitted, Refusal> {
    let services = &app.services;
    let now = services.clock.now();
    let principal = authenticate_credential(
        services.keys.as_ref(),
        services.tokens.as_ref(),
        credential,
        headers,
        now,
    )
    .await?;
    check_subscription(principal.account()).map_err(|e| e.service_error().clone())?;
    // Admitted like one request; the permit is released once the session is open.
    drop(
        app.limiter
            .admit(principal.account(), now)
            .await
            .map_err(|e| e.service_error().clone())?,
    );
    let has_scope = |scope: &str| principal.has_scope(scope);
    let negotiated = negotiate(
        endpoint,
        query.get("model").map(String::as_str),
        &has_scope,
        &app.streams.settings.models,
    )?;
    let mut limits = app.streams.settings.limits.clone();
    let mut session_slot = None;
    if let Some(token) = principal.token() {
        if token.video_seconds_left.is_some_and(|left| left <= 0.0) {
            return Err(ServiceError::with_message(
                ErrorCode::Ih3006,
                "The client token's video budget is spent.",
            )
            .into());
        }
        if let Some(max) = token.caps.max_bytes {
            limits.max_bytes = Some(max);
        }
        if let Some(max) = token.caps.max_duration_seconds {
            limits.max_duration_seconds = match limits.max_duration_seconds {
                0 => max,
                current => current.min(max),
            };
        }
        session_slot = Some(
            app.limiter
                .open_session(&token.id, token.caps.max_concurrent)
                .await
                .map_err(|e| e.service_error().clone())?,
        );
    }
    let mut setup = SessionSetup::new(endpoint, negotiated, app.docs_url.clone());
    setup.limits = limits;
    Ok(Admitted {
        principal,
        setup,
        session_slot,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.append(
                hyper::header::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        map
    }

    #[test]
    fn authorization_wins_over_the_subprotocol_pair() {
        let h = headers(&[
            ("authorization", "Bearer att_header"),
            ("sec-websocket-protocol", "access_token, att_protocol"),
        ]);
        assert_eq!(
            handshake_credential(&h).unwrap(),
            ("att_header", CredentialSource::Header)
        );
    }

    #[test]
    fn the_credential_follows_the_access_token_marker() {
        let h = headers(&[("sec-websocket-protocol", "access_token, att_abc")]);
        assert_eq!(
            handshake_credential(&h).unwrap(),
            ("att_abc", CredentialSource::Subprotocol)
        );
        // Browsers may send the list split over several header lines.
        let h = headers(&[
            ("sec-websocket-protocol", "access_token"),
            ("sec-websocket-protocol", "att_abc"),
        ]);
        assert_eq!(handshake_credential(&h).unwrap().0, "att_abc");
    }

    #[test]
    fn no_credential_is_ih2002() {
        for h in [
            headers(&[]),
            headers(&[("sec-websocket-protocol", "access_token")]),
            headers(&[("sec-websocket-protocol", "chat, superchat")]),
        ] {
            assert_eq!(
                handshake_credential(&h).unwrap_err().code,
                ErrorCode::Ih2002
            );
        }
        let h = headers(&[("authorization", "Basic abc")]);
        assert_eq!(
            handshake_credential(&h).unwrap_err().code,
            ErrorCode::Ih2001
        );
    }

    #[test]
    fn the_header_wins_over_the_query_sdk_and_the_new_pair_over_the_old() {
        let q = parse_query(Some(
            "ih_sdk=py&ih_sdk_version=2.1.0&sdk=old&sdk_version=1.0.0",
        ));
        assert_eq!(announced_sdk(&headers(&[]), &q).unwrap(), "py/2.1.0");
        let q = parse_query(Some("sdk=old&sdk_version=1.0.0"));
        assert_eq!(announced_sdk(&headers(&[]), &q).unwrap(), "old/1.0.0");
        // A lone half of a pair is not accepted.
        let q = parse_query(Some("ih_sdk=py"));
        assert_eq!(announced_sdk(&headers(&[]), &q), None);
        let h = headers(&[("x-service-sdk", "ts/3.0.0")]);
        let q = parse_query(Some("ih_sdk=py&ih_sdk_version=2.1.0"));
        assert_eq!(announced_sdk(&h, &q).unwrap(), "ts/3.0.0");
    }

    /// Found by the `handshake` fuzz target (fuzz/regressions/handshake/): the query's SDK
    /// pair, percent-decoded, reached the logs with its control characters.
    #[test]
    fn a_query_sdk_with_control_characters_is_logged_without_them() {
        let q = parse_query(Some(
            "ih_sdk=py%0Aforged%20line%00&ih_sdk_version=1%0D%1B[2J",
        ));
        assert_eq!(
            announced_sdk(&headers(&[]), &q).unwrap(),
            "py?forged line?/1??[2J"
        );
    }

    #[test]
    fn query_values_are_percent_decoded() {
        let q = parse_query(Some("model=inter-2%2Daudio&x=%zz&y=a+b"));
        assert_eq!(q["model"], "inter-2-audio");
        assert_eq!(q["x"], "%zz");
        assert_eq!(q["y"], "a b");
    }

    #[test]
    fn the_session_clock_scales_time() {
        let clock = SessionClock::new(100.0);
        let at = clock.instant(300.0);
        let real = at.duration_since(clock.start).as_secs_f64();
        assert!((real - 3.0).abs() < 1e-6, "{real}");
        assert!((clock.session_time(at) - 300.0).abs() < 1e-6);
    }
}
