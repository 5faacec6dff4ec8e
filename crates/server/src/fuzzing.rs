//! Entry points for the cargo-fuzz targets in `fuzz/` that drive the server's parsers of
//! untrusted request bytes: the multipart upload form, the WebSocket handshake, client frames.
//!
//! Not part of the API: compiled only with the `fuzzing` feature and hidden from the docs. The
//! same functions replay the committed corpora in `tests/fuzz_corpus.rs`, so a replayed input
//! runs exactly what the fuzzer ran. Each one asserts what a client would notice: every refusal
//! carries one of the error codes the interface gives that step, with a status or close code
//! from the catalog and a bounded message; nothing accepted breaks the documented limits. A
//! violated property panics, which the fuzzer reports like any crash.

use crate::auth::Principal;
use crate::keys::Scope;
use crate::store::{Account, AccountLimits};
use crate::streams::{announced_sdk, handshake_credential, parse_query};
use crate::upload_form::{read_parts, RawUploadForm, MAX_TEXT_FIELD_BYTES};
use attune_core::access::{negotiate, Scopes};
use attune_core::session::{Action, SessionSetup, StreamSession};
use attune_core::wire::{ClientFrame, Endpoint, Event, Model, Timestamp};
use attune_core::{ErrorCode, ServiceError};
use bytes::Bytes;
use hyper::header::{HeaderMap, HeaderName, HeaderValue};
use std::sync::OnceLock;

/// The file-part limit under fuzzing: small, so that `ih4003` is reached.
const FUZZ_FILE_BYTES: u64 = 4096;

/// Longest error message a refusal may carry: messages quote client values only shortened.
const MAX_MESSAGE_CHARS: usize = 1024;

/// A principal with the scopes whose bits are set in `bits` (in [`Scope::ALL`]'s order).
fn principal(bits: u8) -> Principal {
    let account = Account {
        id: 1,
        name: "fuzz".into(),
        subscription_active: true,
        limits: AccountLimits::default(),
    };
    let scopes = Scope::ALL
        .into_iter()
        .enumerate()
        .filter(|(i, _)| bits & (1 << i) != 0)
        .map(|(_, s)| s);
    Principal::for_key(account, "key_fuzz".into(), scopes)
}

/// Asserts that a refusal carries one of `allowed`, a client-error status and a bounded message.
fn check_refusal(error: &ServiceError, status: hyper::StatusCode, allowed: &[ErrorCode]) {
    assert!(
        allowed.contains(&error.code),
        "unexpected {:?}: {}",
        error.code,
        error.message()
    );
    assert!(status.is_client_error(), "{status} for {:?}", error.code);
    let chars = error.message().chars().count();
    assert!(
        (1..=MAX_MESSAGE_CHARS).contains(&chars),
        "a message of {chars} characters"
    );
}

/// The multipart upload form reader ([`crate::upload_form::read_form`]'s parsing, on a
/// current-thread runtime), then the v1 or v2 checks, as the upload routes run them.
///
/// Layout: byte 0, flags: bit 0 the v2 route (its early `model` check included), bits 1-5
/// the principal's scopes (in `Scope::ALL`'s order; `service.upload` always), bits 6-7 the chunk size the body arrives in (1, 7, 64 bytes or
/// whole); then the `Content-Type` header value up to the first `\n`; the rest is the body.
/// The file part is limited to 4 KiB.
pub fn upload_form(data: &[u8]) {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let v2 = flags & 1 != 0;
    let principal = principal((flags >> 1) & 0x1f | 1);
    let (content_type, body) = match rest.iter().position(|&b| b == b'\n') {
        Some(at) => (&rest[..at], &rest[at + 1..]),
        None => (rest, &[][..]),
    };
    let chunk = match flags >> 6 {
        0 => 1,
        1 => 7,
        2 => 64,
        _ => body.len().max(1),
    };
    let chunks: Vec<Result<Bytes, std::io::Error>> = body
        .chunks(chunk)
        .map(|c| Ok(Bytes::copy_from_slice(c)))
        .collect();
    let mut headers = HeaderMap::new();
    if let Ok(value) = HeaderValue::from_bytes(content_type) {
        headers.insert(hyper::header::CONTENT_TYPE, value);
    }
    let Some(boundary) = headers
        .get(hyper::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| multer::parse_boundary(v).ok())
    else {
        return;
    };
    let mut model_check = |form: &RawUploadForm| match (v2, form.model.is_empty()) {
        (true, false) => form.v2_model(&principal).map(drop),
        _ => Ok(()),
    };
    let read = runtime().block_on(read_parts(
        futures_util::stream::iter(chunks),
        boundary,
        FUZZ_FILE_BYTES,
        &mut model_check,
    ));
    let form = match read {
        Ok(form) => form,
        Err(error) => {
            let allowed = [
                ErrorCode::Ih4003,
                ErrorCode::Ih4005,
                ErrorCode::Ih4020,
                ErrorCode::Ih2003,
            ];
            check_refusal(error.service_error(), error.status(), &allowed);
            return;
        }
    };
    for file in &form.files {
        assert!(
            file.bytes.len() as u64 <= FUZZ_FILE_BYTES,
            "file over the limit"
        );
    }
    for text in form
        .model
        .iter()
        .chain(&form.wait_seconds)
        .chain(&form.include)
        .chain(&form.goal_dimensions)
        .chain(&form.conversation_context)
    {
        assert!(
            text.len() <= MAX_TEXT_FIELD_BYTES,
            "text field over the limit"
        );
    }
    let checked = if v2 {
        form.check_v2(&principal)
    } else {
        form.check_v1()
    };
    match checked {
        Ok(request) => assert!(request.file.bytes.len() as u64 <= FUZZ_FILE_BYTES),
        Err(error) => {
            let status = crate::http_error::HttpError::new(error.clone()).status();
            let allowed = [
                ErrorCode::Ih4001,
                ErrorCode::Ih4005,
                ErrorCode::Ih4020,
                ErrorCode::Ih2003,
            ];
            check_refusal(&error, status, &allowed);
        }
    }
}

/// One current-thread runtime for every input (building one per input would dominate).
fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap_or_else(|e| panic!("no runtime for the fuzz target: {e}"))
    })
}

/// The WebSocket handshake's parsing, in the server's order: the query, the announced SDK,
/// the credential (`Authorization` or the `access_token` subprotocol pair), then the model
/// negotiation of the endpoint.
///
/// Layout: text lines (`\n`); the first is the request target (`/v2/stream/analyze?model=…`),
/// the others `name: value` headers; byte values that cannot be a header are dropped. The
/// principal has every scope, then only `service.stream` (two negotiations per input).
pub fn handshake(data: &[u8]) {
    let mut lines = data.split(|&b| b == b'\n');
    let target = String::from_utf8_lossy(lines.next().unwrap_or_default());
    let (path, query) = match target.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (&*target, None),
    };
    let mut headers = HeaderMap::new();
    for line in lines {
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            continue;
        };
        let (name, value) = (&line[..colon], line[colon + 1..].trim_ascii());
        if let (Ok(name), Ok(value)) =
            (HeaderName::from_bytes(name), HeaderValue::from_bytes(value))
        {
            headers.append(name, value);
        }
    }
    let endpoint = crate::streams::endpoint_of(path).unwrap_or(Endpoint::StreamV2);
    let query = parse_query(query);
    assert!(query.keys().all(|k| !k.is_empty()), "an empty query key");
    if let Some(sdk) = announced_sdk(&headers, &query) {
        assert!(
            !sdk.chars().any(char::is_control),
            "a control character in the logged SDK {sdk:?}"
        );
        assert!(sdk.chars().count() <= 4096, "an unbounded SDK label");
    }
    match handshake_credential(&headers) {
        Ok((credential, _)) => {
            assert!(!credential.is_empty() && credential.trim() == credential);
        }
        Err(error) => assert!(
            matches!(error.code, ErrorCode::Ih2001 | ErrorCode::Ih2002),
            "credential refused with {:?}",
            error.code
        ),
    }
    let model = query.get("model").map(String::as_str);
    for scopes in [
        &Scope::ALL[..],
        &[Scope::Stream][..],
        &[Scope::Stream, Scope::StreamInter2Audio][..],
    ] {
        let scopes: Scopes = scopes.iter().copied().collect();
        match negotiate(endpoint, model, &scopes, Model::SERVED) {
            Ok(negotiated) => {
                assert!(!negotiated.model.is_reserved(), "a reserved model admitted");
                assert!(scopes.contains(&Scope::Stream));
            }
            Err(refusal) => {
                assert!(
                    matches!(
                        refusal.error.code,
                        ErrorCode::Ih2003 | ErrorCode::Ih4005 | ErrorCode::Ih1003
                    ),
                    "handshake refused with {:?}",
                    refusal.error.code
                );
                assert!(
                    (1000..=4999).contains(&refusal.close_code),
                    "close code {}",
                    refusal.close_code
                );
                let chars = refusal.error.message().chars().count();
                assert!(
                    chars <= MAX_MESSAGE_CHARS,
                    "a message of {chars} characters"
                );
            }
        }
    }
}

/// The client frame parser ([`ClientFrame::parse`]) and the stream session engine fed the
/// same frames, as a session's reader hands them over.
///
/// Layout: byte 0 picks the endpoint (bits 0-1: v1, v2, realtime, v2) and the model (bit 2,
/// `inter-2-audio`); the rest is frames separated by `0xFF` (a byte UTF-8 text never holds):
/// a frame that is UTF-8 is a text frame, any other a binary frame. Each text frame is parsed
/// for its endpoint (a refusal is `ih4005`, `ih4006` or `ih6001`); every event the engine sends
/// serializes to an envelope with `type`, `timestamp`, `correlation_id` and `data`, and a close
/// is the last action of its batch. The engine is fed nothing after it closes.
pub fn client_frame(data: &[u8]) {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let endpoint = match flags & 3 {
        0 => Endpoint::StreamV1,
        2 => Endpoint::Realtime,
        _ => Endpoint::StreamV2,
    };
    let model = if flags & 4 != 0 && endpoint == Endpoint::StreamV2 {
        Some("inter-2-audio")
    } else {
        None
    };
    let Ok(negotiated) = negotiate(endpoint, model, &Scope::ALL.into(), Model::SERVED) else {
        return;
    };
    let setup = SessionSetup::new(endpoint, negotiated, "https://docs.example/errors");
    let (mut engine, actions) = StreamSession::open(setup, 0.0);
    let mut closed = check_actions(&actions);
    for (i, frame) in rest.split(|&b| b == 0xff).enumerate() {
        if closed {
            break;
        }
        let now = i as f64 * 0.25;
        let actions = match std::str::from_utf8(frame) {
            Ok(text) => {
                if let Err(error) = ClientFrame::parse(text, endpoint) {
                    assert!(
                        matches!(
                            error.code(),
                            ErrorCode::Ih4005 | ErrorCode::Ih4006 | ErrorCode::Ih6001
                        ),
                        "frame refused with {:?}",
                        error.code()
                    );
                }
                engine.on_text(now, text)
            }
            Err(_) => engine.on_binary(now, frame.to_vec()),
        };
        closed = check_actions(&actions);
        if !closed {
            closed = check_actions(&engine.on_tick(now));
        }
    }
}

/// Checks a batch of engine actions; returns whether it closed the session.
fn check_actions(actions: &[Action]) -> bool {
    for (i, action) in actions.iter().enumerate() {
        match action {
            Action::Send(data) => {
                let event = Event {
                    timestamp: Timestamp::from_unix_millis(0).unwrap_or_else(Timestamp::now),
                    correlation_id: "fuzz".into(),
                    data: data.clone(),
                };
                let json: serde_json::Value = serde_json::from_str(&event.to_json())
                    .unwrap_or_else(|e| panic!("an event that is not JSON: {e}"));
                for field in ["type", "timestamp", "correlation_id", "data"] {
                    assert!(json.get(field).is_some(), "an envelope without `{field}`");
                }
                assert_ne!(
                    json["data"].get("code").and_then(|c| c.as_str()),
                    Some("ih1001"),
                    "an internal error for client input: {json}"
                );
            }
            Action::Close { code, reason } => {
                assert!((1000..=4999).contains(code), "close code {code}");
                // A WebSocket close frame holds at most 123 bytes of reason.
                assert!(
                    reason.len() <= 123,
                    "a close reason of {} bytes",
                    reason.len()
                );
                assert_eq!(i + 1, actions.len(), "actions after a close");
                return true;
            }
            _ => {}
        }
    }
    false
}
