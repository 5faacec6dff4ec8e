//! The credential matrix (issue 16, item 5): every HTTP route and WebSocket endpoint of the
//! interface, against every kind of credential and, for the valid ones, every subset of the
//! interface's six scopes, on a key and on a client token. Each cell asserts the interface's
//! answer: HTTP status and `error_id`, or for a socket the `error` envelope's code and close
//! code. The run doubles as the "no secret anywhere" check: every credential it used is
//! looked for in the captured logs, in every answer it got (bodies, headers, events, close
//! reasons) and in `/metrics`.

use crate::common::{client, mint_token, url, Form, Harness};
use crate::logs::capture;
use crate::ws::{connect, Auth};
use attune_server::{AccountLimits, KeyStore, Scope, ServerHandle};
use serde_json::json;
use std::fmt::Write as _;

/// A job id no account holds.
const NO_JOB: &str = "00000000000000000000000000000000";

/// One route or socket endpoint of the interface.
#[derive(Debug, Clone, Copy)]
enum Route {
    /// `POST /v2/upload/analyze` naming a model.
    V2Upload(&'static str),
    /// `GET /v2/upload/jobs/{job_id}` of a job no one holds.
    JobRead,
    /// `GET /v2/upload/jobs/{job_id}/report` of a job no one holds.
    JobReport,
    /// `POST /v1/upload/analyze`.
    V1Upload,
    /// `POST /v1/client_tokens` asking for `service.stream`.
    Mint,
    /// `POST /v1/client_tokens/revoke` of a token no one holds.
    Revoke,
    /// `WS /v2/stream/analyze`, with a `model` query or without.
    StreamV2(Option<&'static str>),
    /// `WS /v1/stream/analyze`.
    StreamV1,
    /// `WS /v0/realtime/analyze`.
    Realtime,
    /// `WS /v2/stream/analyze` with the credential as a browser sends it:
    /// `Sec-WebSocket-Protocol: access_token, <credential>`.
    BrowserStreamV2,
}

const ROUTES: [Route; 12] = [
    Route::V2Upload("inter-2"),
    Route::V2Upload("inter-2-audio"),
    Route::JobRead,
    Route::JobReport,
    Route::V1Upload,
    Route::Mint,
    Route::Revoke,
    Route::StreamV2(None),
    Route::StreamV2(Some("inter-2-audio")),
    Route::StreamV1,
    Route::Realtime,
    Route::BrowserStreamV2,
];

impl Route {
    fn name(self) -> String {
        match self {
            Route::V2Upload(model) => format!("POST /v2/upload/analyze model={model}"),
            Route::JobRead => "GET /v2/upload/jobs/{id}".into(),
            Route::JobReport => "GET /v2/upload/jobs/{id}/report".into(),
            Route::V1Upload => "POST /v1/upload/analyze".into(),
            Route::Mint => "POST /v1/client_tokens".into(),
            Route::Revoke => "POST /v1/client_tokens/revoke".into(),
            Route::StreamV2(None) => "WS /v2/stream/analyze".into(),
            Route::StreamV2(Some(model)) => format!("WS /v2/stream/analyze?model={model}"),
            Route::StreamV1 => "WS /v1/stream/analyze".into(),
            Route::Realtime => "WS /v0/realtime/analyze".into(),
            Route::BrowserStreamV2 => "WS /v2/stream/analyze (subprotocol)".into(),
        }
    }

    fn is_socket(self) -> bool {
        matches!(
            self,
            Route::StreamV2(_) | Route::StreamV1 | Route::Realtime | Route::BrowserStreamV2
        )
    }

    /// What a valid credential of `kind` holding `scopes` gets here, by the interface's
    /// scope rules (Authentication 3; `service.stream.inter-2` is implied by
    /// `service.stream` for existing credentials, as `attune_core::access` documents).
    fn expected_valid(self, kind: Kind, scopes: &[Scope]) -> String {
        let has = |scope: Scope| scopes.contains(&scope);
        let forbidden = || self.refused("ih2003");
        match self {
            Route::V2Upload(model) => {
                let model_scope = match model {
                    "inter-2" => Scope::UploadInter2,
                    _ => Scope::UploadInter2Audio,
                };
                if has(Scope::Upload) && has(model_scope) {
                    "202".into()
                } else {
                    forbidden()
                }
            }
            Route::JobRead | Route::JobReport => {
                if has(Scope::Upload) {
                    "404 ih4021".into()
                } else {
                    forbidden()
                }
            }
            Route::V1Upload => {
                if has(Scope::Upload) {
                    "200".into()
                } else {
                    forbidden()
                }
            }
            // Tokens are minted and revoked with keys only; a key needs the scope it grants.
            Route::Mint => match kind {
                Kind::Token => forbidden(),
                _ if has(Scope::Stream) => "200".into(),
                _ => forbidden(),
            },
            Route::Revoke => match kind {
                Kind::Token => forbidden(),
                _ => "200".into(),
            },
            Route::StreamV2(Some(_)) => {
                if has(Scope::Stream) && has(Scope::StreamInter2Audio) {
                    "ready".into()
                } else {
                    forbidden()
                }
            }
            Route::StreamV2(None) | Route::StreamV1 | Route::Realtime | Route::BrowserStreamV2 => {
                if has(Scope::Stream) {
                    "ready".into()
                } else {
                    forbidden()
                }
            }
        }
    }

    /// The refusal with `code`: its HTTP status, or on a socket its close code (the
    /// interface's: 401 and 4001 for credentials, 403 and 4003 for scope).
    fn refused(self, code: &str) -> String {
        let (status, close) = match code {
            "ih2003" => (403, 4003),
            _ => (401, 4001),
        };
        if self.is_socket() {
            format!("close {close} {code}")
        } else {
            format!("{status} {code}")
        }
    }
}

/// The kind of a valid credential.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Key,
    Token,
}

/// A credential tried, and what each route must answer it.
struct Credential {
    /// What it is, for the table.
    label: String,
    /// The bearer value; `None` sends none.
    secret: Option<String>,
    /// The refusal every route gives it, for invalid credentials.
    refusal: Option<&'static str>,
    /// For valid ones: the kind and the scopes held.
    valid: Option<(Kind, Vec<Scope>)>,
}

/// Every subset of the six scopes (the empty one included), in a stable order.
fn scope_subsets() -> Vec<Vec<Scope>> {
    (0u32..1 << Scope::ALL.len())
        .map(|bits| {
            Scope::ALL
                .iter()
                .enumerate()
                .filter(|(i, _)| bits & (1 << i) != 0)
                .map(|(_, scope)| *scope)
                .collect()
        })
        .collect()
}

/// Sends one HTTP route with `secret` and answers the observed outcome (`"404 ih4021"`, or
/// the bare status of a success) and everything of the answer a secret could leak into.
async fn call_http(
    server: &ServerHandle,
    route: Route,
    secret: Option<&str>,
    revoke_key: &str,
) -> (String, String) {
    let http = client();
    // A credential in the query is not one (the interface has none), and must not be
    // echoed from there either.
    let echo = secret.map_or(String::new(), |s| format!("?access_token={s}"));
    let request = match route {
        Route::V2Upload(model) => {
            let form = Form::new().text("model", model).media(1000);
            http.post(url(server, &format!("/v2/upload/analyze{echo}")))
                .header("content-type", form.content_type())
                .body(form.into_body())
        }
        Route::V1Upload => {
            let form = Form::new().media(1000);
            http.post(url(server, &format!("/v1/upload/analyze{echo}")))
                .header("content-type", form.content_type())
                .body(form.into_body())
        }
        Route::JobRead => http.get(url(server, &format!("/v2/upload/jobs/{NO_JOB}{echo}"))),
        Route::JobReport => http.get(url(
            server,
            &format!("/v2/upload/jobs/{NO_JOB}/report{echo}"),
        )),
        Route::Mint => http
            .post(url(server, &format!("/v1/client_tokens{echo}")))
            .header("content-type", "application/json")
            .body(json!({"scopes": ["service.stream"]}).to_string()),
        Route::Revoke => http
            .post(url(server, &format!("/v1/client_tokens/revoke{echo}")))
            .header("content-type", "application/json")
            // Revoking a token of no one: allowed to any key of the account.
            .body(json!({ "token": revoke_key }).to_string()),
        _ => unreachable!("sockets are called by call_socket"),
    };
    let request = match secret {
        Some(secret) => request.bearer_auth(secret),
        None => request,
    };
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let headers = format!("{:?}", response.headers());
    let body = response.bytes().await.unwrap();
    let text = String::from_utf8_lossy(&body).into_owned();
    let outcome = if status < 300 {
        status.to_string()
    } else {
        let error: serde_json::Value = serde_json::from_slice(&body)
            .unwrap_or_else(|e| panic!("{}: not an ErrorResponse ({e}): {text}", route.name()));
        format!("{status} {}", error["error_id"].as_str().unwrap_or("?"))
    };
    (outcome, format!("{headers}\n{text}"))
}

/// Opens one socket endpoint with `secret` in the `Authorization` header (in the subprotocol
/// pair for [`Route::BrowserStreamV2`]) and answers the outcome: `ready` (then closed
/// gracefully), or `close <code> <error code>`; and the text of every event and close reason.
async fn call_socket(
    server: &ServerHandle,
    route: Route,
    secret: Option<&str>,
) -> (String, String) {
    let echo = secret.map_or(String::new(), |s| format!("access_token={s}"));
    let path = match route {
        Route::StreamV2(None) | Route::BrowserStreamV2 => format!("/v2/stream/analyze?{echo}"),
        Route::StreamV2(Some(model)) => format!("/v2/stream/analyze?model={model}&{echo}"),
        Route::StreamV1 => format!("/v1/stream/analyze?{echo}"),
        Route::Realtime => format!("/v0/realtime/analyze?{echo}"),
        _ => unreachable!("HTTP routes are called by call_http"),
    };
    let auth = match secret {
        Some(secret) if matches!(route, Route::BrowserStreamV2) => Auth::Subprotocol(secret),
        Some(secret) => Auth::Header(secret),
        None => Auth::Nothing,
    };
    let mut ws = connect(server, &path, auth).await;
    // The browser form is acknowledged with `access_token` alone, never the credential.
    if matches!(auth, Auth::Subprotocol(_)) && ws.protocol.as_deref() != Some("access_token") {
        return (
            format!("subprotocol answered {:?}", ws.protocol),
            format!("{:?}", ws.protocol),
        );
    }
    let first = ws.event().await;
    let mut seen = format!("{:?} {first:?}", ws.protocol);
    let outcome = match first {
        Some(event) if event["type"] == "session.ready" => {
            let (events, code) = ws.close_gracefully().await;
            seen.push_str(&format!("{events:?} {:?}", ws.closed));
            if code == 1000 {
                "ready".to_owned()
            } else {
                format!("ready, then close {code}")
            }
        }
        Some(event) if event["type"] == "error" => {
            let (rest, code) = ws.rest().await;
            seen.push_str(&format!("{rest:?} {:?}", ws.closed));
            format!(
                "close {code} {}",
                event["data"]["code"].as_str().unwrap_or("?")
            )
        }
        other => format!("unexpected first event {other:?}"),
    };
    (outcome, seen)
}

#[tokio::test]
async fn every_route_answers_every_credential_and_scope_set_as_the_interface_says() {
    let logs = capture();
    let harness = Harness::new().await;
    let server = harness.start().await;
    let all = harness.key("matrix", &Scope::ALL).await;
    // Some 1,500 requests in a minute: the per-minute limit (ih3001) is another test's.
    harness
        .set_account(
            "matrix",
            true,
            AccountLimits {
                requests_per_minute: u32::MAX,
                ..AccountLimits::default()
            },
        )
        .await;

    // Expired first: the clock then moves past its lifetime (60 s, the shortest) before
    // anything else is minted.
    let expired = mint_token(
        &server,
        &all,
        json!({"scopes": ["service.stream", "service.upload"], "expires_in": 60}),
    )
    .await;
    harness.clock.advance(120);

    let account = harness
        .store
        .ensure_account("matrix", AccountLimits::default())
        .await
        .unwrap();
    let created = harness
        .store
        .create_key(account.id, &Scope::ALL)
        .await
        .unwrap();
    let revoked_key = created.key.expose().to_owned();
    let revoked_key_id = created.record.id;
    harness.store.revoke_key(&revoked_key_id).await.unwrap();

    let revoked_token = mint_token(
        &server,
        &all,
        json!({"scopes": ["service.stream", "service.upload"]}),
    )
    .await;
    let revoked = client()
        .post(url(&server, "/v1/client_tokens/revoke"))
        .bearer_auth(&all)
        .header("content-type", "application/json")
        .body(json!({ "token": revoked_token }).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(revoked.status(), 200);

    // Shaped like a key, but no key: the store is asked and finds nothing.
    let unknown_key = format!("atk_{}", "5a".repeat(32));
    let mut credentials = vec![
        Credential {
            label: "none".into(),
            secret: None,
            refusal: Some("ih2002"),
            valid: None,
        },
        Credential {
            label: "malformed".into(),
            secret: Some("matrix-malformed-7f3a9c1e5b".into()),
            refusal: Some("ih2001"),
            valid: None,
        },
        Credential {
            label: "unknown key".into(),
            secret: Some(unknown_key.clone()),
            refusal: Some("ih2001"),
            valid: None,
        },
        Credential {
            label: "revoked key".into(),
            secret: Some(revoked_key),
            refusal: Some("ih2001"),
            valid: None,
        },
        Credential {
            label: "expired token".into(),
            secret: Some(expired),
            refusal: Some("ih2001"),
            valid: None,
        },
        Credential {
            label: "revoked token".into(),
            secret: Some(revoked_token),
            refusal: Some("ih2014"),
            valid: None,
        },
    ];
    for scopes in scope_subsets() {
        let names: Vec<&str> = scopes.iter().map(|s| s.as_str()).collect();
        credentials.push(Credential {
            label: format!("key {names:?}"),
            secret: Some(harness.key("matrix", &scopes).await),
            refusal: None,
            valid: Some((Kind::Key, scopes.clone())),
        });
        // A token needs at least one scope (an empty list mints the default stream scope).
        if !scopes.is_empty() {
            let token =
                mint_token(&server, &all, json!({"scopes": names, "max_concurrent": 4})).await;
            credentials.push(Credential {
                label: format!("token {names:?}"),
                secret: Some(token),
                refusal: None,
                valid: Some((Kind::Token, scopes)),
            });
        }
    }

    let mut table = String::new();
    let mut mismatches = 0usize;
    let mut answers = String::new();
    for credential in &credentials {
        for route in ROUTES {
            let expected = match (&credential.valid, credential.refusal) {
                (Some((kind, scopes)), _) => route.expected_valid(*kind, scopes),
                (None, Some(code)) => route.refused(code),
                (None, None) => unreachable!(),
            };
            let secret = credential.secret.as_deref();
            let (observed, seen) = if route.is_socket() {
                call_socket(&server, route, secret).await
            } else {
                call_http(&server, route, secret, &format!("att_{}", "0".repeat(64))).await
            };
            answers.push_str(&seen);
            let mark = if observed == expected {
                "  "
            } else {
                mismatches += 1;
                "XX"
            };
            writeln!(
                table,
                "{mark} {:<44} {:<40} expected {:<22} observed {observed}",
                route.name(),
                credential.label,
                expected
            )
            .unwrap();
        }
    }
    let cells = credentials.len() * ROUTES.len();
    assert!(
        mismatches == 0,
        "{mismatches} of {cells} cells differ from the interface (XX):\n{table}"
    );

    let metrics = client().get(url(&server, "/metrics")).send().await.unwrap();
    assert_eq!(metrics.status(), 200);
    let metrics = metrics.text().await.unwrap();
    // The sessions above were counted: the scrape is a real one.
    assert!(metrics.contains("attune_"), "{metrics}");
    server.shutdown().await;

    let logged = logs.text();
    assert!(
        logged.contains("authenticated"),
        "the capture holds this run's log"
    );
    for credential in &credentials {
        let Some(secret) = &credential.secret else {
            continue;
        };
        // The tail alone: key prefixes (`atk_` and 8 digits) are shown on purpose by
        // `keys list`, and a leak of the rest would be one too.
        let tail = &secret[12..];
        for (place, text) in [
            ("the log", &logged),
            ("an answer", &answers),
            ("/metrics", &metrics),
        ] {
            assert!(
                !text.contains(tail),
                "the {} credential reached {place}",
                credential.label
            );
        }
    }
    // A dry run of the check above: it finds what is there.
    assert!(answers.contains("ih2014") && !answers.contains(&unknown_key[12..]));
    println!("{cells} cells, all as the interface says:\n{table}");
}
