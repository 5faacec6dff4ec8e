//! Which scopes each route and model needs, and the handshake decisions of a
//! WebSocket session: the interface's Authentication rules, decided without a
//! socket.
//!
//! Scopes, exactly as the interface spells them:
//! - `service.upload` covers both upload routes and job reads; the v2 upload
//!   also needs `service.upload.<model>` for the model named.
//! - `service.stream` covers both stream endpoints and realtime; on the v2
//!   stream the selected model needs `service.stream.<model>`. A scope applies
//!   across endpoint versions "so existing keys and tokens need no new scope":
//!   Attune therefore lets plain `service.stream` cover `inter-2`, the default
//!   model every v1 session already used, and asks for
//!   `service.stream.inter-2-audio` only for that model.

use crate::error::{ErrorCode, ServiceError};
use crate::wire::{Endpoint, Model};

/// Scope for both upload routes and job reads.
pub const UPLOAD_SCOPE: &str = "service.upload";
/// Scope for the stream and realtime endpoints.
pub const STREAM_SCOPE: &str = "service.stream";

/// Every scope a credential can hold, in a stable order.
pub const ALL_SCOPES: &[&str] = &[
    "service.upload",
    "service.upload.inter-2",
    "service.upload.inter-2-audio",
    "service.stream",
    "service.stream.inter-2",
    "service.stream.inter-2-audio",
];

/// The per-model upload scope, e.g. `service.upload.inter-2`.
pub fn upload_model_scope(model: Model) -> String {
    format!("{UPLOAD_SCOPE}.{model}")
}

/// The per-model stream scope, e.g. `service.stream.inter-2-audio`.
pub fn stream_model_scope(model: Model) -> String {
    format!("{STREAM_SCOPE}.{model}")
}

/// Whether a credential may stream with `model` (see the module docs).
pub fn may_stream_model(model: Model, has_scope: &dyn Fn(&str) -> bool) -> bool {
    has_scope(&stream_model_scope(model)) || (model == Model::Inter2 && has_scope(STREAM_SCOPE))
}

/// Checks the scopes of a v2 upload naming `model`: `service.upload` and
/// `service.upload.<model>`, else `ih2003`.
pub fn check_v2_upload(model: Model, has_scope: &dyn Fn(&str) -> bool) -> Result<(), ServiceError> {
    if !has_scope(UPLOAD_SCOPE) {
        return Err(missing_scope(UPLOAD_SCOPE));
    }
    let scope = upload_model_scope(model);
    if !has_scope(&scope) {
        return Err(missing_scope(&scope));
    }
    Ok(())
}

fn missing_scope(scope: &str) -> ServiceError {
    ServiceError::with_message(
        ErrorCode::Ih2003,
        format!("the credential lacks the scope `{scope}`"),
    )
}

/// A refused WebSocket handshake: the `error` envelope's code and message,
/// sent after the upgrade, then the close code.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    /// Why.
    pub error: ServiceError,
    /// The close code that follows the envelope.
    pub close_code: u16,
}

impl Refusal {
    /// A refusal with the catalog's close code for the error (1008 when the
    /// catalog has none, which no refusal path produces).
    pub fn new(error: ServiceError) -> Refusal {
        let close_code = error.code.info().close_code.unwrap_or(1008);
        Refusal { error, close_code }
    }
}

impl From<ServiceError> for Refusal {
    fn from(error: ServiceError) -> Self {
        Refusal::new(error)
    }
}

/// What an accepted handshake settled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Negotiated {
    /// The session's model.
    pub model: Model,
    /// Models a v2 config frame may switch to (listed in `session.ready`);
    /// empty on v1 and realtime.
    pub selectable_models: Vec<Model>,
}

/// Decides a WebSocket handshake of an authenticated credential.
///
/// `model_query` is the raw `model` query parameter (read on v2 only);
/// `has_scope` answers for the credential; `served` lists the models this
/// deployment has a backend for. Checks, in order: the stream scope
/// (`ih2003`, 4003), the `model` value on v2 (unknown or `inter-2-deep`:
/// `ih4005`, 1008), the model's scope (`ih2003`, 4003), a backend for the
/// model (`ih1003`, 1013).
pub fn negotiate(
    endpoint: Endpoint,
    model_query: Option<&str>,
    has_scope: &dyn Fn(&str) -> bool,
    served: &[Model],
) -> Result<Negotiated, Refusal> {
    if !has_scope(STREAM_SCOPE) {
        return Err(missing_scope(STREAM_SCOPE).into());
    }
    let model = match (endpoint, model_query) {
        (Endpoint::StreamV2, Some(text)) => match Model::parse(text) {
            Some(model) if !model.is_reserved() => model,
            _ => {
                return Err(ServiceError::with_message(
                    ErrorCode::Ih4005,
                    format!(
                        "invalid model `{}`; this route serves inter-2 and inter-2-audio",
                        text.chars().take(64).collect::<String>()
                    ),
                )
                .into())
            }
        },
        _ => Model::Inter2,
    };
    if !may_stream_model(model, has_scope) {
        return Err(missing_scope(&stream_model_scope(model)).into());
    }
    if !served.contains(&model) {
        return Err(ServiceError::with_message(
            ErrorCode::Ih1003,
            format!("no analysis backend serves {model} right now"),
        )
        .into());
    }
    let selectable_models = if endpoint == Endpoint::StreamV2 {
        Model::SERVED
            .iter()
            .copied()
            .filter(|m| served.contains(m) && may_stream_model(*m, has_scope))
            .collect()
    } else {
        Vec::new()
    };
    Ok(Negotiated {
        model,
        selectable_models,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scopes(list: &'static [&'static str]) -> impl Fn(&str) -> bool {
        move |s| list.contains(&s)
    }

    #[test]
    fn missing_stream_scope_is_ih2003_close_4003() {
        let refusal = negotiate(
            Endpoint::StreamV1,
            None,
            &scopes(&["service.upload"]),
            Model::SERVED,
        )
        .unwrap_err();
        assert_eq!(refusal.error.code, ErrorCode::Ih2003);
        assert_eq!(refusal.close_code, 4003);
    }

    #[test]
    fn bad_or_reserved_model_query_on_v2_is_ih4005_close_1008() {
        let all = scopes(ALL_SCOPES);
        for bad in ["inter-2-deep", "inter-3", "", "INTER-2"] {
            let refusal =
                negotiate(Endpoint::StreamV2, Some(bad), &all, Model::SERVED).unwrap_err();
            assert_eq!(refusal.error.code, ErrorCode::Ih4005, "{bad}");
            assert_eq!(refusal.close_code, 1008);
        }
        // v1 has no model parameter: it is not read.
        let v1 = negotiate(Endpoint::StreamV1, Some("inter-3"), &all, Model::SERVED).unwrap();
        assert_eq!(v1.model, Model::Inter2);
        assert!(v1.selectable_models.is_empty());
    }

    #[test]
    fn model_scope_and_backend_are_checked_on_v2() {
        let plain = scopes(&["service.stream"]);
        let ok = negotiate(Endpoint::StreamV2, None, &plain, Model::SERVED).unwrap();
        assert_eq!(ok.model, Model::Inter2);
        assert_eq!(ok.selectable_models, vec![Model::Inter2]);
        let refusal = negotiate(
            Endpoint::StreamV2,
            Some("inter-2-audio"),
            &plain,
            Model::SERVED,
        )
        .unwrap_err();
        assert_eq!(
            (refusal.error.code, refusal.close_code),
            (ErrorCode::Ih2003, 4003)
        );

        let audio = scopes(&["service.stream", "service.stream.inter-2-audio"]);
        let ok = negotiate(
            Endpoint::StreamV2,
            Some("inter-2-audio"),
            &audio,
            Model::SERVED,
        )
        .unwrap();
        assert_eq!(ok.model, Model::Inter2Audio);
        assert_eq!(
            ok.selectable_models,
            vec![Model::Inter2, Model::Inter2Audio]
        );

        let refusal = negotiate(
            Endpoint::StreamV2,
            Some("inter-2-audio"),
            &audio,
            &[Model::Inter2],
        )
        .unwrap_err();
        assert_eq!(
            (refusal.error.code, refusal.close_code),
            (ErrorCode::Ih1003, 1013)
        );
    }

    #[test]
    fn v2_upload_needs_both_scopes() {
        assert!(check_v2_upload(Model::Inter2, &scopes(ALL_SCOPES)).is_ok());
        let err = check_v2_upload(
            Model::Inter2Audio,
            &scopes(&["service.upload", "service.upload.inter-2"]),
        )
        .unwrap_err();
        assert_eq!(err.code, ErrorCode::Ih2003);
        assert!(err.message().contains("service.upload.inter-2-audio"));
        assert!(check_v2_upload(Model::Inter2, &scopes(&["service.upload.inter-2"])).is_err());
    }
}
