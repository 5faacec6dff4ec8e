//! The upload routes' `multipart/form-data` body: streamed in and counted,
//! collected into a [`RawUploadForm`] of unchecked values, then checked into
//! an [`UploadRequest`] per route (raw input first, checked form second, as
//! ripgrep turns low-level flags into high-level arguments).
//!
//! Form rules where the interface is silent:
//! - A body that is not `multipart/form-data` has no `file` part: `ih4001`.
//! - `include[]` and `goal_dimensions[]` are repeated fields; the names
//!   without brackets are accepted too. An unknown value is `ih4005` (a typo
//!   would otherwise silently drop a requested section), and so is `signals`
//!   on v1, where the whole-file signal list is always present.
//! - `model`, `wait_seconds`, `conversation_context` and `file` may each
//!   appear once; a repeat is `ih4005`. Other fields are ignored.
//! - On v2 the `model` field is checked the moment it arrives, so a request
//!   naming an unknown, reserved or unauthorized model placed before its file
//!   is refused without reading the file.

use crate::auth::Principal;
use crate::body::{content_length, BodyError, LimitedBody};
use crate::http_error::HttpError;
use crate::jobs::{UploadFile, UploadRequest, UploadRoute};
use attune_core::access;
use attune_core::wire::{Dimension, IncludeFlag, Model};
use attune_core::{ErrorCode, ServiceError};
use bytes::{Bytes, BytesMut};
use hyper::body::Incoming;
use hyper::header::{HeaderMap, CONTENT_TYPE};
use std::time::Duration;

/// Room for the form's other fields and its multipart framing, beyond the
/// file itself.
pub const FORM_OVERHEAD_BYTES: u64 = 1024 * 1024;

/// Longest text field accepted (a `conversation_context` is a few sentences).
pub const MAX_TEXT_FIELD_BYTES: usize = 64 * 1024;

/// The interface's bound on `wait_seconds`.
pub const MAX_WAIT_SECONDS: u64 = 120;

/// The models the v2 upload route serves, as its `ih4020` message lists them.
const V2_MODELS: &str = "`inter-2`, `inter-2-audio`";

/// The form's fields as received: text values unchecked, repeats kept.
#[derive(Debug, Default)]
pub struct RawUploadForm {
    /// `file` parts, in order (more than one is refused when checked).
    pub files: Vec<UploadFile>,
    /// `model` values.
    pub model: Vec<String>,
    /// `wait_seconds` values.
    pub wait_seconds: Vec<String>,
    /// `include[]` values.
    pub include: Vec<String>,
    /// `goal_dimensions[]` values.
    pub goal_dimensions: Vec<String>,
    /// `conversation_context` values.
    pub conversation_context: Vec<String>,
}

fn invalid(message: String) -> ServiceError {
    ServiceError::with_message(ErrorCode::Ih4005, message)
}

/// A client-supplied value quoted in a message: short, printable.
fn quoted(value: &str) -> String {
    let mut shown: String = value
        .chars()
        .take(64)
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    if value.chars().count() > 64 {
        shown.push('…');
    }
    shown
}

fn at_most_once<'a>(field: &str, values: &'a [String]) -> Result<Option<&'a str>, ServiceError> {
    match values {
        [] => Ok(None),
        [value] => Ok(Some(value.trim())),
        _ => Err(invalid(format!("`{field}` was given more than once."))),
    }
}

impl RawUploadForm {
    /// The v2 `model`: `ih4005` when missing, repeated or unknown, `ih4020`
    /// for the reserved model, `ih2003` without `service.upload.<model>`.
    pub fn v2_model(&self, principal: &Principal) -> Result<Model, ServiceError> {
        let Some(text) = at_most_once("model", &self.model)? else {
            return Err(invalid(format!(
                "The `model` field is required; the models on this route are {V2_MODELS}."
            )));
        };
        let Some(model) = Model::parse(text) else {
            return Err(invalid(format!(
                "Unknown model `{}`; the models on this route are {V2_MODELS}.",
                quoted(text)
            )));
        };
        if model.is_reserved() {
            return Err(ServiceError::with_message(
                ErrorCode::Ih4020,
                format!(
                    "The model `{model}` is not available on POST /v2/upload/analyze; the \
                     models available on this route are {V2_MODELS}."
                ),
            ));
        }
        access::check_v2_upload(model, principal.scopes())?;
        Ok(model)
    }

    fn wait(&self) -> Result<Duration, ServiceError> {
        let Some(text) = at_most_once("wait_seconds", &self.wait_seconds)? else {
            return Ok(Duration::ZERO);
        };
        let seconds = Some(text)
            .filter(|t| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|t| t.parse::<u64>().ok())
            .filter(|&s| s <= MAX_WAIT_SECONDS)
            .ok_or_else(|| {
                invalid(format!(
                    "`wait_seconds` must be a whole number from 0 to {MAX_WAIT_SECONDS}, not `{}`.",
                    quoted(text)
                ))
            })?;
        Ok(Duration::from_secs(seconds))
    }

    pub(crate) fn include(&self, route: UploadRoute) -> Result<Vec<IncludeFlag>, ServiceError> {
        let accepted = match route {
            UploadRoute::V1 => "`conversation_quality_overall`, `conversation_quality_timeline`",
            UploadRoute::V2 => {
                "`conversation_quality_overall`, `conversation_quality_timeline`, `signals`"
            }
        };
        let mut flags = Vec::new();
        for text in self
            .include
            .iter()
            .map(|t| t.trim())
            .filter(|t| !t.is_empty())
        {
            let flag = IncludeFlag::parse(text)
                .filter(|flag| route == UploadRoute::V2 || flag.is_cqi())
                .ok_or_else(|| {
                    invalid(format!(
                        "Unknown `include[]` value `{}` on this route; accepted: {accepted}.",
                        quoted(text)
                    ))
                })?;
            if !flags.contains(&flag) {
                flags.push(flag);
            }
        }
        Ok(flags)
    }

    fn file(&mut self) -> Result<UploadFile, ServiceError> {
        if self.files.len() > 1 {
            return Err(invalid("Only one `file` part may be sent.".into()));
        }
        self.files.pop().ok_or_else(|| ErrorCode::Ih4001.into())
    }

    /// The checked v2 request (`model`, `wait_seconds`, `include[]`, `file`,
    /// in that order of checks).
    pub fn check_v2(mut self, principal: &Principal) -> Result<UploadRequest, ServiceError> {
        let model = self.v2_model(principal)?;
        let wait = self.wait()?;
        let include = self.include(UploadRoute::V2)?;
        let file = self.file()?;
        Ok(UploadRequest {
            route: UploadRoute::V2,
            model,
            file,
            include,
            wait,
            goal_dimensions: Vec::new(),
            conversation_context: None,
        })
    }

    /// The checked v1 request (`include[]`, `goal_dimensions[]`,
    /// `conversation_context`, `file`).
    pub fn check_v1(mut self) -> Result<UploadRequest, ServiceError> {
        let include = self.include(UploadRoute::V1)?;
        let mut goal_dimensions = Vec::new();
        for text in self
            .goal_dimensions
            .iter()
            .map(|t| t.trim())
            .filter(|t| !t.is_empty())
        {
            let dimension = Dimension::parse(text).ok_or_else(|| {
                invalid(format!(
                    "Unknown `goal_dimensions[]` value `{}`; accepted: `clarity`, `authority`, \
                     `energy`, `rapport`, `learning`.",
                    quoted(text)
                ))
            })?;
            if !goal_dimensions.contains(&dimension) {
                goal_dimensions.push(dimension);
            }
        }
        let conversation_context =
            at_most_once("conversation_context", &self.conversation_context)?
                .filter(|text| !text.is_empty())
                .map(str::to_owned);
        let file = self.file()?;
        Ok(UploadRequest {
            route: UploadRoute::V1,
            model: Model::Inter2,
            file,
            include,
            wait: Duration::ZERO,
            goal_dimensions,
            conversation_context,
        })
    }
}

/// Which of the form's fields a part is.
enum Part {
    File,
    Model,
    WaitSeconds,
    Include,
    GoalDimensions,
    ConversationContext,
    Other,
}

impl Part {
    fn of(name: Option<&str>) -> Part {
        match name.unwrap_or("") {
            "file" => Part::File,
            "model" => Part::Model,
            "wait_seconds" => Part::WaitSeconds,
            "include[]" | "include" => Part::Include,
            "goal_dimensions[]" | "goal_dimensions" => Part::GoalDimensions,
            "conversation_context" => Part::ConversationContext,
            _ => Part::Other,
        }
    }
}

fn too_large(max_file_bytes: u64) -> HttpError {
    HttpError::new(ServiceError::with_message(
        ErrorCode::Ih4003,
        format!("The upload is larger than the limit of {max_file_bytes} bytes."),
    ))
}

/// Turns a multipart failure into its answer: the size limit is `ih4003`,
/// the rest `ih4005`.
fn form_error(error: multer::Error, max_file_bytes: u64) -> HttpError {
    if let multer::Error::StreamReadFailed(source) = &error {
        match source.downcast_ref::<BodyError>() {
            Some(BodyError::TooLarge { .. }) => return too_large(max_file_bytes),
            Some(timed_out @ BodyError::TimedOut { .. }) => {
                return HttpError::new(invalid(format!("The upload was cut: {timed_out}.")))
                    .with_status(hyper::StatusCode::REQUEST_TIMEOUT);
            }
            Some(BodyError::Read(read)) => {
                tracing::debug!(error = %read, "upload body unreadable");
                return HttpError::new(invalid("The request body could not be read.".into()));
            }
            None => {}
        }
    }
    HttpError::new(invalid(format!(
        "The multipart/form-data body is malformed: {error}."
    )))
}

/// Reads a field's text, at most [`MAX_TEXT_FIELD_BYTES`].
async fn text(
    mut field: multer::Field<'_>,
    name: &str,
    max_file_bytes: u64,
) -> Result<String, HttpError> {
    let mut bytes = Vec::new();
    while let Some(chunk) = field
        .chunk()
        .await
        .map_err(|e| form_error(e, max_file_bytes))?
    {
        if bytes.len() + chunk.len() > MAX_TEXT_FIELD_BYTES {
            return Err(HttpError::new(invalid(format!(
                "The `{name}` field is longer than {MAX_TEXT_FIELD_BYTES} bytes."
            ))));
        }
        bytes.extend_from_slice(&chunk);
    }
    String::from_utf8(bytes)
        .map_err(|_| HttpError::new(invalid(format!("The `{name}` field is not UTF-8 text."))))
}

/// Reads the `file` part as it streams in, refusing it (`ih4003`) the moment
/// it passes `max_file_bytes`.
async fn file(mut field: multer::Field<'_>, max_file_bytes: u64) -> Result<UploadFile, HttpError> {
    let file_name = field.file_name().map(str::to_owned);
    let content_type = field.content_type().map(|mime| mime.to_string());
    let mut bytes = BytesMut::new();
    while let Some(chunk) = field
        .chunk()
        .await
        .map_err(|e| form_error(e, max_file_bytes))?
    {
        if (bytes.len() + chunk.len()) as u64 > max_file_bytes {
            return Err(too_large(max_file_bytes));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(UploadFile {
        bytes: Bytes::from(bytes),
        file_name,
        content_type,
    })
}

/// Streams a multipart form in. `max_file_bytes` caps the file part (the
/// whole body may be [`FORM_OVERHEAD_BYTES`] larger); a `Content-Length`
/// already above that is refused before any of the body is read.
/// `on_field` sees the form after each text field and may refuse it early.
pub async fn read_form(
    body: Incoming,
    headers: &HeaderMap,
    max_file_bytes: u64,
    on_field: &mut (dyn FnMut(&RawUploadForm) -> Result<(), ServiceError> + Send),
) -> Result<RawUploadForm, HttpError> {
    let body_limit = max_file_bytes.saturating_add(FORM_OVERHEAD_BYTES);
    // Wrapped first, so that every early answer below drains what the client
    // is still sending instead of resetting the connection under it.
    let body = LimitedBody::new(body, headers, body_limit);
    let boundary = headers
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| multer::parse_boundary(value).ok())
        .ok_or_else(|| {
            HttpError::new(ServiceError::with_message(
                ErrorCode::Ih4001,
                "Uploads are `multipart/form-data` requests with the media in a part named \
                 `file`.",
            ))
        })?;
    if content_length(headers).is_some_and(|length| length > body_limit) {
        return Err(too_large(max_file_bytes));
    }
    read_parts(body, boundary, max_file_bytes, on_field).await
}

/// The multipart parsing of [`read_form`] over any byte stream (the fuzz targets feed it
/// arbitrary bytes): the stream's errors are those of [`LimitedBody`] in the server.
pub(crate) async fn read_parts<S, E>(
    body: S,
    boundary: String,
    max_file_bytes: u64,
    on_field: &mut (dyn FnMut(&RawUploadForm) -> Result<(), ServiceError> + Send),
) -> Result<RawUploadForm, HttpError>
where
    S: futures_util::Stream<Item = Result<Bytes, E>> + Send + 'static,
    E: Into<Box<dyn std::error::Error + Send + Sync>> + 'static,
{
    let mut multipart = multer::Multipart::new(body, boundary);
    let mut form = RawUploadForm::default();
    while let Some(field) = multipart
        .next_field()
        .await
        .map_err(|e| form_error(e, max_file_bytes))?
    {
        let part = Part::of(field.name());
        let values = match part {
            Part::File => {
                form.files.push(file(field, max_file_bytes).await?);
                continue;
            }
            // Dropping the field skips it; its bytes still count.
            Part::Other => continue,
            Part::Model => &mut form.model,
            Part::WaitSeconds => &mut form.wait_seconds,
            Part::Include => &mut form.include,
            Part::GoalDimensions => &mut form.goal_dimensions,
            Part::ConversationContext => &mut form.conversation_context,
        };
        let name = field.name().unwrap_or("").to_owned();
        values.push(text(field, &name, max_file_bytes).await?);
        on_field(&form).map_err(HttpError::new)?;
    }
    Ok(form)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::Scope;
    use crate::store::{Account, AccountLimits};

    fn principal(scopes: &[Scope]) -> Principal {
        let account = Account {
            id: 1,
            name: "acme".into(),
            subscription_active: true,
            limits: AccountLimits::default(),
        };
        Principal::for_key(account, "key_1".into(), scopes.iter().copied())
    }

    fn form(fields: &[(&str, &str)], with_file: bool) -> RawUploadForm {
        let mut form = RawUploadForm::default();
        for (name, value) in fields {
            let values = match Part::of(Some(name)) {
                Part::Model => &mut form.model,
                Part::WaitSeconds => &mut form.wait_seconds,
                Part::Include => &mut form.include,
                Part::GoalDimensions => &mut form.goal_dimensions,
                Part::ConversationContext => &mut form.conversation_context,
                Part::File | Part::Other => panic!("{name}"),
            };
            values.push((*value).to_owned());
        }
        if with_file {
            form.files.push(UploadFile {
                bytes: Bytes::from_static(b"media"),
                file_name: Some("a.mp4".into()),
                content_type: None,
            });
        }
        form
    }

    fn all() -> Principal {
        principal(&Scope::ALL)
    }

    fn v2_code(fields: &[(&str, &str)], with_file: bool, who: &Principal) -> Option<ErrorCode> {
        form(fields, with_file).check_v2(who).err().map(|e| e.code)
    }

    #[test]
    fn a_complete_v2_form_is_checked_into_a_request() {
        let request = form(
            &[
                ("model", " inter-2-audio "),
                ("wait_seconds", "120"),
                ("include[]", "signals"),
                ("include", "conversation_quality_overall"),
                ("include[]", "signals"),
                ("include[]", ""),
            ],
            true,
        )
        .check_v2(&all())
        .unwrap();
        assert_eq!(request.model, Model::Inter2Audio);
        assert_eq!(request.wait, Duration::from_secs(120));
        assert_eq!(
            request.include,
            vec![
                IncludeFlag::Signals,
                IncludeFlag::ConversationQualityOverall
            ]
        );
        assert!(request.sections().signals && request.sections().overall);
        assert_eq!(request.file.bytes, Bytes::from_static(b"media"));
    }

    #[test]
    fn v2_models_are_required_known_served_and_in_scope() {
        assert_eq!(v2_code(&[], true, &all()), Some(ErrorCode::Ih4005));
        assert_eq!(
            v2_code(&[("model", "inter-3")], true, &all()),
            Some(ErrorCode::Ih4005)
        );
        assert_eq!(
            v2_code(&[("model", "inter-2"), ("model", "inter-2")], true, &all()),
            Some(ErrorCode::Ih4005)
        );
        let deep = form(&[("model", "inter-2-deep")], true)
            .check_v2(&all())
            .unwrap_err();
        assert_eq!(deep.code, ErrorCode::Ih4020);
        assert!(deep.message().contains("`inter-2`, `inter-2-audio`"));
        let audio_only = principal(&[Scope::Upload, Scope::UploadInter2Audio]);
        assert_eq!(
            v2_code(&[("model", "inter-2")], true, &audio_only),
            Some(ErrorCode::Ih2003)
        );
        assert_eq!(
            v2_code(&[("model", "inter-2-audio")], true, &audio_only),
            None
        );
    }

    #[test]
    fn wait_seconds_must_be_a_whole_number_up_to_120() {
        for bad in [
            "-1",
            "1.5",
            "121",
            "",
            "ten",
            "+3",
            "99999999999999999999999",
        ] {
            assert_eq!(
                v2_code(&[("model", "inter-2"), ("wait_seconds", bad)], true, &all()),
                Some(ErrorCode::Ih4005),
                "{bad}"
            );
        }
        for good in ["0", "7", "120"] {
            assert_eq!(
                v2_code(
                    &[("model", "inter-2"), ("wait_seconds", good)],
                    true,
                    &all()
                ),
                None,
                "{good}"
            );
        }
    }

    #[test]
    fn unknown_include_values_are_refused_and_signals_is_v2_only() {
        assert_eq!(
            v2_code(&[("model", "inter-2"), ("include[]", "cqi")], true, &all()),
            Some(ErrorCode::Ih4005)
        );
        let v1 = form(&[("include[]", "signals")], true)
            .check_v1()
            .unwrap_err();
        assert_eq!(v1.code, ErrorCode::Ih4005);
        assert!(v1.message().contains("signals"));
    }

    #[test]
    fn a_missing_file_is_ih4001_after_the_fields_are_checked() {
        assert_eq!(
            v2_code(&[("model", "inter-2")], false, &all()),
            Some(ErrorCode::Ih4001)
        );
        assert_eq!(
            v2_code(&[("model", "nope")], false, &all()),
            Some(ErrorCode::Ih4005)
        );
        let mut two = form(&[("model", "inter-2")], true);
        two.files.push(two.files[0].clone());
        assert_eq!(two.check_v2(&all()).unwrap_err().code, ErrorCode::Ih4005);
        assert_eq!(
            form(&[], false).check_v1().unwrap_err().code,
            ErrorCode::Ih4001
        );
    }

    #[test]
    fn v1_reads_goals_and_context() {
        let request = form(
            &[
                ("goal_dimensions[]", "rapport"),
                ("goal_dimensions", "clarity"),
                ("goal_dimensions[]", "rapport"),
                ("conversation_context", "  "),
                ("include[]", "conversation_quality_timeline"),
            ],
            true,
        )
        .check_v1()
        .unwrap();
        assert_eq!(request.model, Model::Inter2);
        assert_eq!(
            request.goal_dimensions,
            vec![Dimension::Rapport, Dimension::Clarity]
        );
        assert_eq!(request.conversation_context, None);
        assert!(request.sections().timeline);

        let bad = form(&[("goal_dimensions[]", "charisma")], true)
            .check_v1()
            .unwrap_err();
        assert_eq!(bad.code, ErrorCode::Ih4005);
        assert!(bad.message().contains("charisma"));
    }
}
