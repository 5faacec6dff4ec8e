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
pub(crate) mod registry;
mod session;

pub(crate) use registry::{SessionClock, Streams, SEC_WEBSOCKET_PROTOCOL};
pub use registry::{StreamSettings, ACCESS_TOKEN_PROTOCOL, MAX_MESSAGE_BYTES};

use crate::app::{announced_sdk_header, App, X_CLIENT_REQUEST_ID, X_CORRELATION_ID};
use crate::auth::{authenticate_credential, bearer_credential, Credential, Principal};
use crate::http_error::{Body, HttpError};
use crate::ids::CorrelationId;
use crate::keys::KeyHash;
use crate::limits::{check_subscription, RequestPermit};
use crate::redact;
use attune_core::access::{negotiate, Refusal};
use attune_core::billing;
use attune_core::session::{Revoked, SessionSetup, StreamSession};
use attune_core::wire::{Endpoint, ErrorEvent, EventData};
use attune_core::{ErrorCode, ServiceError};
use credential::CredentialWatch;
use fastwebsockets::upgrade::{is_upgrade_request, upgrade};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{HeaderMap, HeaderValue, AUTHORIZATION};
use hyper::{Request, Response, StatusCode};
use std::collections::HashMap;
use std::sync::Arc;

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
                    .event(EventData::Error(ErrorEvent::new(error, &docs_url, None)))
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
    let negotiated = negotiate(
        endpoint,
        query.get("model").map(String::as_str),
        principal.scopes(),
        &app.streams.settings.models,
    )?;
    let mut limits = app.streams.settings.limits.clone();
    let mut session_slot = None;
    if let Some(token) = principal.token() {
        if billing::is_spent(token.video_seconds_left) {
            return Err(billing::session_refused().into());
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
