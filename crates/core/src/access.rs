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
use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;

/// What a credential may do. The spellings are the interface's, exactly.
///
/// A scope applies across endpoint versions. On v2 routes the per-model scope
/// is needed in addition to the route's scope; neither implies the other
/// (except plain `service.stream` for `inter-2`, see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Scope {
    /// `service.upload`: both upload routes and job reads.
    Upload,
    /// `service.upload.inter-2`: the `inter-2` model on v2 upload.
    UploadInter2,
    /// `service.upload.inter-2-audio`: the `inter-2-audio` model on v2 upload.
    UploadInter2Audio,
    /// `service.stream`: both stream routes and realtime.
    Stream,
    /// `service.stream.inter-2`: the `inter-2` model on v2 stream.
    StreamInter2,
    /// `service.stream.inter-2-audio`: the `inter-2-audio` model on v2 stream.
    StreamInter2Audio,
}

impl Scope {
    /// Every scope, in a stable order.
    pub const ALL: [Scope; 6] = [
        Scope::Upload,
        Scope::UploadInter2,
        Scope::UploadInter2Audio,
        Scope::Stream,
        Scope::StreamInter2,
        Scope::StreamInter2Audio,
    ];

    /// The wire spelling, e.g. `service.upload.inter-2`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Scope::Upload => "service.upload",
            Scope::UploadInter2 => "service.upload.inter-2",
            Scope::UploadInter2Audio => "service.upload.inter-2-audio",
            Scope::Stream => "service.stream",
            Scope::StreamInter2 => "service.stream.inter-2",
            Scope::StreamInter2Audio => "service.stream.inter-2-audio",
        }
    }

    /// The per-model upload scope, e.g. `service.upload.inter-2`; `None` for
    /// a model no route serves (`inter-2-deep`).
    pub const fn upload_model(model: Model) -> Option<Scope> {
        match model {
            Model::Inter2 => Some(Scope::UploadInter2),
            Model::Inter2Audio => Some(Scope::UploadInter2Audio),
            Model::Inter2Deep => None,
        }
    }

    /// The per-model stream scope, e.g. `service.stream.inter-2-audio`;
    /// `None` for a model no route serves (`inter-2-deep`).
    pub const fn stream_model(model: Model) -> Option<Scope> {
        match model {
            Model::Inter2 => Some(Scope::StreamInter2),
            Model::Inter2Audio => Some(Scope::StreamInter2Audio),
            Model::Inter2Deep => None,
        }
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A scope name that is not one of the interface's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown scope `{0}`; the scopes are service.upload, service.upload.inter-2, \
     service.upload.inter-2-audio, service.stream, service.stream.inter-2, \
     service.stream.inter-2-audio"
)]
pub struct UnknownScope(pub String);

impl FromStr for Scope {
    type Err = UnknownScope;

    fn from_str(text: &str) -> Result<Scope, UnknownScope> {
        Scope::ALL
            .into_iter()
            .find(|scope| scope.as_str() == text)
            .ok_or_else(|| UnknownScope(text.to_owned()))
    }
}

/// The scopes a credential holds.
pub type Scopes = BTreeSet<Scope>;

/// Every scope a credential can hold, in a stable order.
pub const ALL_SCOPES: &[Scope] = &Scope::ALL;

/// Whether a credential holding `scopes` may stream with `model` (see the
/// module docs).
pub fn may_stream_model(model: Model, scopes: &Scopes) -> bool {
    Scope::stream_model(model).is_some_and(|scope| scopes.contains(&scope))
        || (model == Model::Inter2 && scopes.contains(&Scope::Stream))
}

/// `Ok` when `scope` was granted, else `ih2003` naming the scope a request
/// needs: the scope check of every HTTP route.
pub fn require(scopes: &Scopes, scope: Scope) -> Result<(), ServiceError> {
    if scopes.contains(&scope) {
        Ok(())
    } else {
        Err(ServiceError::with_message(
            ErrorCode::Ih2003,
            format!("The credential lacks the scope `{scope}` this request needs."),
        ))
    }
}

/// The scope check of both upload routes and the job reads:
/// `service.upload`, else `ih2003`.
pub fn check_upload(scopes: &Scopes) -> Result<(), ServiceError> {
    require(scopes, Scope::Upload)
}

/// Checks the scopes of a v2 upload naming `model`: `service.upload` and
/// `service.upload.<model>`, else `ih2003` naming the first one missing. A
/// reserved model (no scope of its own) is refused by the model check before
/// this is asked; here it is `ih2003` too.
pub fn check_v2_upload(model: Model, scopes: &Scopes) -> Result<(), ServiceError> {
    check_upload(scopes)?;
    match Scope::upload_model(model) {
        Some(scope) => require(scopes, scope),
        None => Err(ServiceError::with_message(
            ErrorCode::Ih2003,
            format!("No scope grants the model `{model}` on this route."),
        )),
    }
}

fn missing_scope(scope: impl fmt::Display) -> ServiceError {
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
/// `scopes` are the credential's; `served` lists the models this
/// deployment has a backend for. Checks, in order: the stream scope
/// (`ih2003`, 4003), the `model` value on v2 (unknown or `inter-2-deep`:
/// `ih4005`, 1008), the model's scope (`ih2003`, 4003), a backend for the
/// model (`ih1003`, 1013).
pub fn negotiate(
    endpoint: Endpoint,
    model_query: Option<&str>,
    scopes: &Scopes,
    served: &[Model],
) -> Result<Negotiated, Refusal> {
    if !scopes.contains(&Scope::Stream) {
        return Err(missing_scope(Scope::Stream).into());
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
    if !may_stream_model(model, scopes) {
        let needed = Scope::stream_model(model).unwrap_or(Scope::Stream);
        return Err(missing_scope(needed).into());
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
            .filter(|m| served.contains(m) && may_stream_model(*m, scopes))
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

    fn scopes(list: &[&str]) -> Scopes {
        list.iter().map(|s| s.parse().expect("a scope")).collect()
    }

    fn all() -> Scopes {
        ALL_SCOPES.iter().copied().collect()
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
        let all = all();
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
        assert!(check_v2_upload(Model::Inter2, &all()).is_ok());
        let err = check_v2_upload(
            Model::Inter2Audio,
            &scopes(&["service.upload", "service.upload.inter-2"]),
        )
        .unwrap_err();
        assert_eq!(err.code, ErrorCode::Ih2003);
        assert!(err.message().contains("service.upload.inter-2-audio"));
        assert!(check_v2_upload(Model::Inter2, &scopes(&["service.upload.inter-2"])).is_err());
        assert_eq!(
            check_v2_upload(Model::Inter2Deep, &all()).unwrap_err().code,
            ErrorCode::Ih2003
        );
    }

    #[test]
    fn scopes_spell_as_the_interface_and_parse_back() {
        for scope in Scope::ALL {
            assert_eq!(scope.as_str().parse::<Scope>(), Ok(scope));
        }
        assert!("service.upload.inter-2-deep".parse::<Scope>().is_err());
        assert_eq!(
            Scope::upload_model(Model::Inter2Audio),
            Some(Scope::UploadInter2Audio)
        );
        assert_eq!(Scope::stream_model(Model::Inter2Deep), None);
    }

    #[test]
    fn upload_routes_and_job_reads_need_the_upload_scope() {
        assert!(check_upload(&scopes(&["service.upload"])).is_ok());
        let error = check_upload(&scopes(&["service.stream"])).unwrap_err();
        assert_eq!(error.code, ErrorCode::Ih2003);
        assert!(
            error.message().contains("`service.upload`"),
            "{}",
            error.message()
        );
    }
}
