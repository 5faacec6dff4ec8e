//! The browser demo: `GET /demo`, a static page that streams a camera to
//! `WS /v2/stream/analyze` with a client token, and `POST /demo/token`, which
//! mints that token with the configured demo key (`demo_api_key`).
//!
//! The key never leaves the server: the page only receives a client token,
//! minted through the same path as `POST /v1/client_tokens`
//! ([`client_tokens::issue`]) with fixed, small caps: the stream scopes
//! (`service.stream`, `service.stream.inter-2`), [`TOKEN_SECONDS`] of life,
//! one session of at most [`TOKEN_SECONDS`], a [`TOKEN_VIDEO_SECONDS`] video
//! budget, [`TOKEN_MAX_BYTES`], and `allowed_origins` set to the page's origin.
//!
//! Who may ask for a token: a request whose `Origin` is this server's own,
//! that is the origin of `base_url`, or the host the request was sent to
//! (`Host`) when that host is `localhost` or an IP address. A name other than
//! `base_url`'s is refused even when `Host` agrees: a page whose DNS name was
//! rebound to this server would send matching `Origin` and `Host`. Anything
//! else is `ih2013` (403).
//!
//! Answers chosen where the interface has nothing to say (the demo is not
//! part of it):
//! - demo disabled (no key configured): `ih2003` (403), with how to enable
//!   it; a 4xx, because it is a decision of the operator, not an outage;
//! - the configured key refused, or lacking a stream scope: `ih1003` (503),
//!   a server-side fault the page cannot fix; the cause is logged;
//! - the key's account over its request limits or inactive: its own code
//!   (`ih3001`, `ih3002`, `ih3005`), as on every route.
//!
//! The page is one HTML file with its style and script inlined at build time
//! (`include_str!`, no build step, no external resources). Its
//! Content-Security-Policy allows only that style and script, by a nonce
//! drawn for each response, and connections to this origin.

use crate::app::{json_response, App, DemoSettings};
use crate::client_tokens;
use crate::config::Config;
use crate::http_error::{Body, HttpError};
use crate::ids::{hex, random_bytes};
use crate::keys::Scope;
use crate::tokens::{normalize_origin, MintRequest};
use attune_core::wire::ClientTokenRequest;
use attune_core::{ErrorCode, ServiceError};
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{
    HeaderMap, HeaderName, HeaderValue, CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE, HOST,
    ORIGIN, REFERRER_POLICY, X_CONTENT_TYPE_OPTIONS, X_FRAME_OPTIONS,
};
use hyper::{Request, Response, StatusCode};
use std::net::{IpAddr, Ipv6Addr};
use std::sync::LazyLock;

/// Lifetime of a demo token, and the longest session it opens: enough to try
/// the page, short enough that a copied token is soon worthless.
pub const TOKEN_SECONDS: u64 = 600;
/// Seconds of media a demo token may have analyzed.
pub const TOKEN_VIDEO_SECONDS: f64 = 600.0;
/// Bytes one demo session may send: the page records about 0.9 Mbit/s, so
/// ten minutes fit with room to spare.
pub const TOKEN_MAX_BYTES: u64 = 128 * 1024 * 1024;
/// The scopes a demo token carries: the page streams on v2 with `inter-2`.
pub const TOKEN_SCOPES: [Scope; 2] = [Scope::Stream, Scope::StreamInter2];

const PERMISSIONS_POLICY: HeaderName = HeaderName::from_static("permissions-policy");

const TEMPLATE: &str = include_str!("../static/demo.html");
const STYLE: &str = include_str!("../static/demo.css");
const SCRIPT: &str = include_str!("../static/demo.js");

/// The page with its style and script in place; the nonce and the demo's
/// state are filled in per response.
static PAGE: LazyLock<String> = LazyLock::new(|| {
    TEMPLATE
        .replace("{{STYLE}}", STYLE.trim_end())
        .replace("{{SCRIPT}}", SCRIPT.trim_end())
});

impl App {
    /// This app with the browser demo set up as `config` says.
    pub(crate) fn with_demo(mut self, config: &Config) -> App {
        self.demo = DemoSettings::from_config(config);
        if self.demo.enabled() {
            tracing::info!(url = %format_args!("{}/demo", config.base_url), "browser demo enabled");
        }
        self
    }
}

/// `GET /demo`: the page, marked enabled or disabled.
pub(crate) fn page(app: &App) -> Response<Body> {
    let nonce = hex(&random_bytes::<16>());
    let html = PAGE.replace("{{NONCE}}", &nonce).replace(
        "{{DEMO}}",
        if app.demo.enabled() {
            "enabled"
        } else {
            "disabled"
        },
    );
    let policy = format!(
        "default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; \
         connect-src 'self'; img-src data:; media-src 'self' blob: mediastream:; \
         base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    );
    let mut response = Response::new(Full::new(Bytes::from(html)));
    let headers = response.headers_mut();
    headers.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    // The nonce is new on every response, so a cached copy would be refused its own script.
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        CONTENT_SECURITY_POLICY,
        HeaderValue::from_str(&policy).expect("hex and ASCII make a valid header value"),
    );
    headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.insert(
        PERMISSIONS_POLICY,
        HeaderValue::from_static("camera=(self), microphone=(self)"),
    );
    response
}

/// `POST /demo/token`: a client token for a page of this server's origin.
/// The request body, if any, is not read: nothing in it could change the
/// token.
pub(crate) async fn token(
    app: &App,
    request: Request<Incoming>,
) -> Result<Response<Body>, HttpError> {
    let Some(key) = &app.demo.key else {
        return Err(HttpError::new(ServiceError::with_message(
            ErrorCode::Ih2003,
            "The demo is disabled on this server. To enable it, restart `attune serve` with \
             ATTUNE_DEMO_API_KEY (or `demo_api_key` in the configuration file) set to an API key \
             holding the scopes service.stream and service.stream.inter-2.",
        )));
    };
    let origin = same_origin(request.headers(), app.demo.base_origin.as_deref())?;
    // The key is passed on its own, never beside the request's headers: an
    // `Authorization` sent by the page must not choose the minting credential.
    let caller = app
        .admit_key(&HeaderMap::new(), Some(key.expose()))
        .await
        .map_err(misconfigured)?;
    let mint = MintRequest::from_wire(&ClientTokenRequest {
        api_key: None,
        scopes: Some(TOKEN_SCOPES.iter().map(|s| s.as_str().to_owned()).collect()),
        expires_in: Some(TOKEN_SECONDS),
        max_duration_seconds: Some(TOKEN_SECONDS),
        max_bytes: Some(TOKEN_MAX_BYTES),
        max_concurrent: Some(1),
        max_video_seconds: Some(TOKEN_VIDEO_SECONDS),
        allowed_origins: Some(vec![origin.clone()]),
    })?;
    let response = client_tokens::issue(app, &caller, &mint)
        .await
        .map_err(misconfigured)?;
    tracing::info!(origin = %origin, "demo token minted");
    Ok(json_response(StatusCode::OK, &response))
}

/// The request's `Origin`, normalised, when it is this server's own (see the
/// module docs); `ih2013` otherwise.
fn same_origin(headers: &HeaderMap, base_origin: Option<&str>) -> Result<String, HttpError> {
    let refuse =
        |message: &str| HttpError::new(ServiceError::with_message(ErrorCode::Ih2013, message));
    let origin = headers
        .get(ORIGIN)
        .and_then(|value| value.to_str().ok())
        .and_then(normalize_origin)
        .ok_or_else(|| {
            refuse(
                "Demo tokens are only issued to the demo page: the request carries no browser \
                 Origin.",
            )
        })?;
    if base_origin == Some(origin.as_str()) {
        return Ok(origin);
    }
    let host = headers.get(HOST).and_then(|value| value.to_str().ok());
    let (scheme, _) = origin
        .split_once("://")
        .expect("a normalised origin has a scheme");
    let addressed = host.and_then(|host| normalize_origin(&format!("{scheme}://{host}")));
    if addressed.as_deref() == Some(origin.as_str()) && names_a_local_or_ip_host(&origin) {
        return Ok(origin);
    }
    Err(refuse(
        "Demo tokens are only issued to pages of this server's own origin (its base_url, or \
         localhost or an IP address it was reached at).",
    ))
}

/// Whether a normalised origin's host is `localhost` or an IP address: names
/// DNS cannot point elsewhere.
fn names_a_local_or_ip_host(origin: &str) -> bool {
    let authority = origin.split_once("://").map_or(origin, |(_, rest)| rest);
    if let Some(bracketed) = authority.strip_prefix('[') {
        return bracketed
            .split_once(']')
            .is_some_and(|(literal, _)| literal.parse::<Ipv6Addr>().is_ok());
    }
    let host = authority
        .split_once(':')
        .map_or(authority, |(host, _)| host);
    host == "localhost" || host.parse::<IpAddr>().is_ok()
}

/// A refusal of the configured demo key is the operator's to fix: the page
/// gets `ih1003` (503) and the log the cause. Limits and subscription answer
/// as themselves.
fn misconfigured(error: HttpError) -> HttpError {
    let code = error.service_error().code;
    if !matches!(
        code,
        ErrorCode::Ih2001 | ErrorCode::Ih2002 | ErrorCode::Ih2003 | ErrorCode::Ih2014
    ) {
        return error;
    }
    tracing::warn!(
        error_id = code.as_str(),
        reason = error.service_error().message(),
        "the configured demo key cannot mint demo tokens"
    );
    HttpError::new(ServiceError::with_message(
        ErrorCode::Ih1003,
        "The demo is misconfigured: the server's demo key was refused or lacks the scopes \
         service.stream and service.stream.inter-2. The server log says which.",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(origin: Option<&str>, host: Option<&str>) -> HeaderMap {
        let mut headers = HeaderMap::new();
        if let Some(origin) = origin {
            headers.insert(ORIGIN, HeaderValue::from_str(origin).unwrap());
        }
        if let Some(host) = host {
            headers.insert(HOST, HeaderValue::from_str(host).unwrap());
        }
        headers
    }

    fn allowed(origin: Option<&str>, host: Option<&str>, base: Option<&str>) -> Option<String> {
        same_origin(&headers(origin, host), base).ok()
    }

    #[test]
    fn the_base_url_origin_is_allowed_whatever_the_host() {
        let base = Some("https://demo.example.com");
        assert_eq!(
            allowed(
                Some("https://Demo.example.com:443"),
                Some("10.0.0.5:8080"),
                base
            )
            .as_deref(),
            Some("https://demo.example.com")
        );
        assert_eq!(allowed(Some("http://demo.example.com"), None, base), None);
    }

    #[test]
    fn the_addressed_host_is_allowed_when_it_is_local_or_an_ip_address() {
        for (origin, host) in [
            ("http://localhost:8080", "localhost:8080"),
            ("http://127.0.0.1:9000", "127.0.0.1:9000"),
            ("http://[::1]:9000", "[::1]:9000"),
            ("https://192.168.1.20", "192.168.1.20:443"),
        ] {
            assert_eq!(
                allowed(Some(origin), Some(host), None),
                normalize_origin(origin),
                "{origin} at {host}"
            );
        }
    }

    #[test]
    fn other_origins_and_rebound_names_are_refused() {
        for (origin, host) in [
            // Another site's page.
            (Some("https://evil.example"), Some("127.0.0.1:8080")),
            // Another port of the same host is another origin.
            (Some("http://127.0.0.1:9999"), Some("127.0.0.1:8080")),
            // A DNS name rebound to this server: Origin and Host agree.
            (Some("http://evil.example:8080"), Some("evil.example:8080")),
            (Some("null"), Some("127.0.0.1:8080")),
            (None, Some("127.0.0.1:8080")),
            (Some("http://127.0.0.1:8080"), None),
        ] {
            let refused = same_origin(&headers(origin, host), Some("http://127.0.0.1:8081"))
                .expect_err("refused");
            assert_eq!(
                refused.service_error().code,
                ErrorCode::Ih2013,
                "{origin:?}"
            );
        }
    }

    #[test]
    fn the_page_has_no_placeholder_left_and_only_nonced_code() {
        let app_page = PAGE
            .replace("{{NONCE}}", "n")
            .replace("{{DEMO}}", "enabled");
        assert!(!app_page.contains("{{"), "a placeholder is left");
        assert_eq!(app_page.matches("<script").count(), 1);
        assert_eq!(app_page.matches("<script nonce=\"n\">").count(), 1);
        assert_eq!(app_page.matches("<style nonce=\"n\">").count(), 1);
        // Nothing is loaded from elsewhere: the machine may have no network.
        assert!(!app_page.contains("src=\"http"));
        assert!(!app_page.contains("href=\"http"));
    }
}
