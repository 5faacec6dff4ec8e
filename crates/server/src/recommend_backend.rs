//! Realtime recommendations for the server: the embedded recommender, or an
//! OpenAI-compatible chat-completions backend with the embedded one as its
//! fallback.
//!
//! [`RecommendationService::recommend`] is what the realtime handler awaits.
//! Without a backend it answers with [`EmbeddedRecommender`] at once. With
//! one it sends `POST {url}/chat/completions` carrying the instructions, the
//! period's signals and the transcript (see [`render_prompt`]) and uses the
//! reply's `choices[0].message.content`. The whole call (connect, TLS,
//! request, reply) is bounded by the configured timeout, so a session never
//! waits longer than that for a recommendation.
//!
//! Choices where the interface is silent:
//! - A failure (connection refused, TLS error, non-2xx status, a body that is
//!   not a chat completion or holds no text, a reply over 1 MiB) or the
//!   timeout falls back to the embedded recommender and logs one warning
//!   naming the backend's host and path (never its query, user info or API
//!   key, never the reply body, which a misbehaving backend could fill with
//!   the request's headers).
//! - A reply of exactly `NO_GUIDANCE` (the reference service's text for
//!   "nothing to advise", which the prompt asks for) means no recommendation,
//!   not a failure: the embedded recommender is not asked.
//! - The reply is tidied into one line: a leading `<think>…</think>` block
//!   (reasoning models) and surrounding quotes are removed, whitespace runs
//!   become one space, and text over [`MAX_BACKEND_REPLY_CHARS`] is cut.
//! - The request body is the minimal chat completion (`model`, `messages`,
//!   `stream: false`): no `temperature` or `max_tokens`, which some
//!   compatible servers and models refuse; the prompt asks for one sentence.
//! - Both `http://` and `https://` URLs work. HTTPS uses rustls with the
//!   `ring` provider (builds with a C compiler, no cmake) and the bundled
//!   Mozilla roots (`webpki-roots`), so it behaves the same in a minimal
//!   container without a system certificate store; a backend behind a
//!   private certificate authority is reached over plain HTTP on a trusted
//!   network, or through a proxy that holds a public certificate.
//!
//! Configuration ([`RecommenderConfig`], the `[recommender]` table of the
//! configuration file or `ATTUNE_RECOMMENDER_*` variables):
//!
//! | key / variable suffix | meaning | default |
//! |---|---|---|
//! | `url` / `RECOMMENDER_URL` | base URL, e.g. `http://127.0.0.1:11434/v1`; a URL already ending in `/chat/completions` is used as is | none: embedded only |
//! | `model` / `RECOMMENDER_MODEL` | the `model` sent; required with `url` | none |
//! | `api_key_env` / `RECOMMENDER_API_KEY_ENV` | name of the environment variable holding the API key | none |
//! | `api_key` / `RECOMMENDER_API_KEY` | the API key itself (prefer `api_key_env` in files) | none: no `Authorization` header |
//! | `timeout_ms` / `RECOMMENDER_TIMEOUT_MS` | bound on one call, 1 to 60000 | 3000 |

use crate::redact;
use attune_core::recommend::{EmbeddedRecommender, RecommendationInput, Recommender};
use attune_core::wire::{Probability, Signal, TranscriptSegment};
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::header::{HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use hyper::{Request, Uri};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde::{Deserialize, Serialize};
use std::fmt::{self, Write as _};
use std::sync::Arc;
use std::time::Duration;

/// Default bound on one backend call.
pub const DEFAULT_TIMEOUT_MS: u64 = 3000;
/// Longest accepted `timeout_ms`: a recommendation later than this is stale.
pub const MAX_TIMEOUT_MS: u64 = 60_000;
/// Longest backend reply kept, in characters (the prompt asks for 200).
pub const MAX_BACKEND_REPLY_CHARS: usize = 280;
/// The backend's answer for "nothing to advise".
pub const NO_GUIDANCE: &str = "NO_GUIDANCE";
/// Largest reply body read from the backend.
const MAX_REPLY_BYTES: usize = 1 << 20;
/// Most transcript segments rendered into the prompt (the latest ones).
pub const PROMPT_MAX_SEGMENTS: usize = 60;
/// Most signal entries rendered into the prompt (the latest ones).
pub const PROMPT_MAX_SIGNALS: usize = 40;

/// The system message: the task, the length, and the `NO_GUIDANCE` answer.
pub const SYSTEM_PROMPT: &str = "You are a real-time conversation coach. From the person's \
instructions, the social signals detected in the latest period of their conversation and the \
transcript, write ONE short, specific suggestion (at most 200 characters) they can act on now, \
citing the evidence briefly. Reply with the suggestion only. If nothing warrants a suggestion, \
reply exactly NO_GUIDANCE.";

/// The `[recommender]` settings, one configuration layer: every field is
/// optional so files, variables and flags can each set some.
#[derive(Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecommenderConfig {
    /// Base URL of the OpenAI-compatible API; `None` keeps the embedded
    /// recommender alone.
    pub url: Option<String>,
    /// Model name sent as `model`.
    pub model: Option<String>,
    /// The API key itself.
    pub api_key: Option<String>,
    /// Name of the environment variable that holds the API key.
    pub api_key_env: Option<String>,
    /// Bound on one call in milliseconds (default [`DEFAULT_TIMEOUT_MS`]).
    pub timeout_ms: Option<u64>,
}

impl fmt::Debug for RecommenderConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecommenderConfig")
            .field("url", &self.url.as_deref().map(loggable_url))
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| redact::REDACTED))
            .field("api_key_env", &self.api_key_env)
            .field("timeout_ms", &self.timeout_ms)
            .finish()
    }
}

/// Why the recommender settings are unusable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RecommenderConfigError {
    /// `url` is not an absolute `http` or `https` URL.
    #[error("recommender.url must be an absolute http:// or https:// URL")]
    InvalidUrl,
    /// `url` is set without `model`.
    #[error("recommender.model is required when recommender.url is set")]
    MissingModel,
    /// Both `api_key` and `api_key_env` are set.
    #[error("set recommender.api_key or recommender.api_key_env, not both")]
    TwoKeys,
    /// The variable named by `api_key_env` is not set.
    #[error("the environment variable {0} named by recommender.api_key_env is not set")]
    MissingKeyVariable(String),
    /// The key cannot be sent in a header (control characters).
    #[error("the recommender API key contains characters a header cannot carry")]
    InvalidKey,
    /// `timeout_ms` is outside 1..=60000.
    #[error("recommender.timeout_ms must be between 1 and {MAX_TIMEOUT_MS}")]
    InvalidTimeout,
    /// The TLS stack could not be set up.
    #[error("cannot set up TLS for the recommender backend: {0}")]
    Tls(String),
}

impl RecommenderConfig {
    /// This layer with every setting of `over` put on top.
    pub fn overlay(self, over: RecommenderConfig) -> RecommenderConfig {
        RecommenderConfig {
            url: over.url.or(self.url),
            model: over.model.or(self.model),
            api_key: over.api_key.or(self.api_key),
            api_key_env: over.api_key_env.or(self.api_key_env),
            timeout_ms: over.timeout_ms.or(self.timeout_ms),
        }
    }

    /// Applies one configuration variable, `key` being its name without
    /// `ATTUNE_` (`RECOMMENDER_URL`, ...). Returns whether the key was a
    /// recommender setting, or why its value does not parse (the reason
    /// only: the caller names the variable).
    pub fn set_env(&mut self, key: &str, value: &str) -> Result<bool, String> {
        let value = value.trim().to_owned();
        match key {
            "RECOMMENDER_URL" => self.url = Some(value),
            "RECOMMENDER_MODEL" => self.model = Some(value),
            "RECOMMENDER_API_KEY" => self.api_key = Some(value),
            "RECOMMENDER_API_KEY_ENV" => self.api_key_env = Some(value),
            "RECOMMENDER_TIMEOUT_MS" => {
                self.timeout_ms = Some(
                    value
                        .parse()
                        .map_err(|e: std::num::ParseIntError| format!("`{value}`: {e}"))?,
                )
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Checks what can be checked without the environment: the URL, the
    /// model, the key settings and the timeout.
    pub fn validate(&self) -> Result<(), RecommenderConfigError> {
        self.timeout()?;
        if let Some(url) = &self.url {
            endpoint(url)?;
            if self.model.as_deref().is_none_or(|m| m.trim().is_empty()) {
                return Err(RecommenderConfigError::MissingModel);
            }
        }
        if self.api_key.is_some() && self.api_key_env.is_some() {
            return Err(RecommenderConfigError::TwoKeys);
        }
        Ok(())
    }

    /// The bound on one call.
    pub fn timeout(&self) -> Result<Duration, RecommenderConfigError> {
        match self.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS) {
            ms @ 1..=MAX_TIMEOUT_MS => Ok(Duration::from_millis(ms)),
            _ => Err(RecommenderConfigError::InvalidTimeout),
        }
    }
}

/// `{url}/chat/completions` as a URI, unless `url` already names it.
fn endpoint(url: &str) -> Result<Uri, RecommenderConfigError> {
    let base = url.trim().trim_end_matches('/');
    let full = if base.ends_with("/chat/completions") {
        base.to_owned()
    } else {
        format!("{base}/chat/completions")
    };
    let uri: Uri = full
        .parse()
        .map_err(|_| RecommenderConfigError::InvalidUrl)?;
    let scheme_ok = matches!(uri.scheme_str(), Some("http" | "https"));
    if !scheme_ok || uri.host().is_none_or(str::is_empty) {
        return Err(RecommenderConfigError::InvalidUrl);
    }
    Ok(uri)
}

/// A URL as it may appear in a log: scheme, host, port and path; no user
/// info, no query.
fn loggable_url(url: &str) -> String {
    match url.trim().parse::<Uri>() {
        Ok(uri) => loggable_uri(&uri),
        Err(_) => redact::REDACTED.to_owned(),
    }
}

fn loggable_uri(uri: &Uri) -> String {
    let port = uri.port_u16().map(|p| format!(":{p}")).unwrap_or_default();
    format!(
        "{}://{}{port}{}",
        uri.scheme_str().unwrap_or("?"),
        uri.host().unwrap_or("?"),
        redact::loggable_path(uri)
    )
}

/// The backend, resolved from the configuration.
struct ChatBackend {
    client: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
    endpoint: Uri,
    /// What logs say instead of the endpoint.
    loggable_endpoint: String,
    model: String,
    /// `Bearer <key>`, marked sensitive so hyper never shows it.
    authorization: Option<HeaderValue>,
    timeout: Duration,
}

/// Writes realtime recommendations: the backend when configured, the
/// embedded recommender otherwise or when the backend fails. Cheap to clone.
#[derive(Clone)]
pub struct RecommendationService {
    backend: Option<Arc<ChatBackend>>,
    embedded: EmbeddedRecommender,
}

impl fmt::Debug for RecommendationService {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut debug = f.debug_struct("RecommendationService");
        match &self.backend {
            Some(backend) => debug
                .field("backend", &backend.loggable_endpoint)
                .field("model", &backend.model)
                .field("timeout", &backend.timeout),
            None => debug.field("backend", &"embedded"),
        };
        debug.finish()
    }
}

impl Default for RecommendationService {
    fn default() -> Self {
        RecommendationService::embedded()
    }
}

impl RecommendationService {
    /// The embedded recommender alone.
    pub fn embedded() -> RecommendationService {
        RecommendationService {
            backend: None,
            embedded: EmbeddedRecommender,
        }
    }

    /// The service the configuration describes. `env` looks up environment
    /// variables (the key named by `api_key_env`); tests pass their own.
    pub fn from_config(
        config: &RecommenderConfig,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<RecommendationService, RecommenderConfigError> {
        config.validate()?;
        let Some(url) = &config.url else {
            return Ok(RecommendationService::embedded());
        };
        let endpoint = endpoint(url)?;
        let key = match (&config.api_key, &config.api_key_env) {
            (Some(key), _) => Some(key.clone()),
            (None, Some(name)) => Some(
                env(name)
                    .ok_or_else(|| RecommenderConfigError::MissingKeyVariable(name.clone()))?,
            ),
            (None, None) => None,
        };
        let authorization = key
            .filter(|key| !key.trim().is_empty())
            .map(|key| {
                let mut value = HeaderValue::from_str(&format!("Bearer {}", key.trim()))
                    .map_err(|_| RecommenderConfigError::InvalidKey)?;
                value.set_sensitive(true);
                Ok(value)
            })
            .transpose()?;
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_provider_and_webpki_roots(rustls::crypto::ring::default_provider())
            .map_err(|e| RecommenderConfigError::Tls(e.to_string()))?
            .https_or_http()
            .enable_http1()
            .build();
        let client = Client::builder(TokioExecutor::new()).build(connector);
        Ok(RecommendationService {
            backend: Some(Arc::new(ChatBackend {
                client,
                loggable_endpoint: loggable_uri(&endpoint),
                endpoint,
                model: config.model.clone().unwrap_or_default().trim().to_owned(),
                authorization,
                timeout: config.timeout()?,
            })),
            embedded: EmbeddedRecommender,
        })
    }

    /// Whether a backend is configured.
    pub fn has_backend(&self) -> bool {
        self.backend.is_some()
    }

    /// One recommendation for `input`, or `None` when nothing warrants one.
    /// Never takes much longer than the configured timeout: a slow or failed
    /// backend is replaced by the embedded recommender.
    pub async fn recommend(&self, input: RecommendationInput<'_>) -> Option<String> {
        let Some(backend) = &self.backend else {
            return self.embedded.recommend(&input);
        };
        let outcome = match tokio::time::timeout(backend.timeout, backend.ask(&input)).await {
            Ok(outcome) => outcome,
            Err(_) => Err(BackendError::Timeout(backend.timeout)),
        };
        match outcome {
            Ok(Reply::Text(text)) => Some(text),
            Ok(Reply::NoGuidance) => None,
            Err(error) => {
                tracing::warn!(
                    backend = %backend.loggable_endpoint,
                    %error,
                    "recommendation backend failed; using the embedded recommender"
                );
                self.embedded.recommend(&input)
            }
        }
    }
}

/// What the backend answered.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Reply {
    Text(String),
    NoGuidance,
}

/// Why a backend call gave no usable reply. Messages never include the key,
/// the request or the reply body.
#[derive(Debug, thiserror::Error)]
enum BackendError {
    #[error("no reply within {} ms", .0.as_millis())]
    Timeout(Duration),
    #[error("request failed: {0}")]
    Request(String),
    #[error("status {0}")]
    Status(u16),
    #[error("reply body unreadable or over {MAX_REPLY_BYTES} bytes")]
    Body,
    #[error("reply is not a chat completion: {0}")]
    NotCompletion(String),
    #[error("reply has no text")]
    Empty,
}

#[derive(Serialize)]
struct ChatRequest<'a> {
    model: &'a str,
    messages: [ChatMessage<'a>; 2],
    stream: bool,
}

#[derive(Serialize)]
struct ChatMessage<'a> {
    role: &'static str,
    content: &'a str,
}

#[derive(Deserialize)]
struct ChatCompletion {
    choices: Vec<Choice>,
}

#[derive(Deserialize)]
struct Choice {
    message: ReplyMessage,
}

#[derive(Deserialize)]
struct ReplyMessage {
    content: Option<String>,
}

impl ChatBackend {
    async fn ask(&self, input: &RecommendationInput<'_>) -> Result<Reply, BackendError> {
        let prompt = render_prompt(input);
        let body = serde_json::to_vec(&ChatRequest {
            model: &self.model,
            messages: [
                ChatMessage {
                    role: "system",
                    content: SYSTEM_PROMPT,
                },
                ChatMessage {
                    role: "user",
                    content: &prompt,
                },
            ],
            stream: false,
        })
        .map_err(|e| BackendError::Request(e.to_string()))?;
        let mut request = Request::post(self.endpoint.clone())
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/json");
        if let Some(authorization) = &self.authorization {
            request = request.header(AUTHORIZATION, authorization.clone());
        }
        let request = request
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| BackendError::Request(e.to_string()))?;
        let response = self
            .client
            .request(request)
            .await
            .map_err(|e| BackendError::Request(error_chain(&e)))?;
        let status = response.status();
        if !status.is_success() {
            return Err(BackendError::Status(status.as_u16()));
        }
        let body = Limited::new(response.into_body(), MAX_REPLY_BYTES)
            .collect()
            .await
            .map_err(|_| BackendError::Body)?
            .to_bytes();
        parse_reply(&body)
    }
}

/// An error and its sources on one line (hyper's top-level message alone
/// says little, e.g. "client error (Connect)").
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let _ = write!(text, ": {cause}");
        source = cause.source();
    }
    text
}

fn parse_reply(body: &[u8]) -> Result<Reply, BackendError> {
    let completion: ChatCompletion =
        serde_json::from_slice(body).map_err(|e| BackendError::NotCompletion(e.to_string()))?;
    let content = completion
        .choices
        .into_iter()
        .next()
        .and_then(|choice| choice.message.content)
        .ok_or(BackendError::Empty)?;
    let text = tidy(&content);
    if text.is_empty() {
        Err(BackendError::Empty)
    } else if text.trim_end_matches('.') == NO_GUIDANCE {
        Ok(Reply::NoGuidance)
    } else {
        Ok(Reply::Text(text))
    }
}

/// One line of reply text: no reasoning block, no wrapping quotes, single
/// spaces, at most [`MAX_BACKEND_REPLY_CHARS`] characters.
fn tidy(content: &str) -> String {
    let mut text = content.trim();
    if let Some(rest) = text.strip_prefix("<think>") {
        text = rest
            .split_once("</think>")
            .map_or("", |(_, after)| after)
            .trim();
    }
    for (open, close) in [('"', '"'), ('“', '”'), ('\'', '\'')] {
        if let Some(inner) = text.strip_prefix(open).and_then(|t| t.strip_suffix(close)) {
            text = inner.trim();
        }
    }
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(MAX_BACKEND_REPLY_CHARS - 1) {
        Some((at, _)) if line.chars().count() > MAX_BACKEND_REPLY_CHARS => {
            format!("{}…", line[..at].trim_end())
        }
        _ => line,
    }
}

/// The user message sent to the backend: instructions, period, engagement,
/// the period's signals (the latest [`PROMPT_MAX_SIGNALS`]) and the
/// transcript (the latest [`PROMPT_MAX_SEGMENTS`] segments). Speakers are
/// named `Speaker n`, `n` being the zero-based index plus one, as the
/// embedded recommender names them.
pub fn render_prompt(input: &RecommendationInput<'_>) -> String {
    let mut prompt = String::new();
    let _ = writeln!(prompt, "Instructions from the person being coached:");
    let _ = writeln!(prompt, "{}", input.instructions.trim());
    let _ = writeln!(
        prompt,
        "\nPeriod: {:.1} s to {:.1} s of the session.",
        input.start, input.end
    );
    if let Some(engagement) = input.engagement {
        let _ = writeln!(prompt, "Engagement at the end of the period: {engagement}.");
    }
    let _ = writeln!(
        prompt,
        "\nSignals detected in the period (window, signal, probability, source: evidence):"
    );
    render_signals(&mut prompt, input.signals);
    let _ = writeln!(
        prompt,
        "\nTranscript, most recent last (times in session seconds):"
    );
    render_transcript(&mut prompt, input.transcript);
    prompt
}

fn render_signals(prompt: &mut String, signals: &[Signal]) {
    if signals.is_empty() {
        let _ = writeln!(prompt, "(none)");
    }
    let skipped = signals.len().saturating_sub(PROMPT_MAX_SIGNALS);
    if skipped > 0 {
        let _ = writeln!(prompt, "({skipped} earlier entries omitted)");
    }
    for signal in &signals[skipped..] {
        let probability = signal.probability.map_or("unknown", Probability::as_str);
        let source = signal.modality.as_deref().map_or_else(
            || "unknown".to_owned(),
            |modality| {
                modality
                    .iter()
                    .map(|m| m.as_str())
                    .collect::<Vec<_>>()
                    .join("+")
            },
        );
        let _ = write!(
            prompt,
            "- [{:.1}-{:.1}] {}, {probability}, {source}",
            signal.start, signal.end, signal.signal_type
        );
        match signal.rationale.as_deref() {
            Some(rationale) => {
                let _ = writeln!(prompt, ": {}", one_line(rationale));
            }
            None => prompt.push('\n'),
        }
    }
}

fn render_transcript(prompt: &mut String, transcript: &[TranscriptSegment]) {
    if transcript.is_empty() {
        let _ = writeln!(prompt, "(empty)");
    }
    let skipped = transcript.len().saturating_sub(PROMPT_MAX_SEGMENTS);
    if skipped > 0 {
        let _ = writeln!(prompt, "({skipped} earlier segments omitted)");
    }
    for segment in &transcript[skipped..] {
        let _ = writeln!(
            prompt,
            "[{:.1}-{:.1}] Speaker {}: {}",
            segment.start,
            segment.end,
            u64::from(segment.speaker) + 1,
            one_line(&segment.text)
        );
    }
}

/// Client text on one line, so it cannot fake prompt structure with
/// newlines.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_are_tidied_into_one_line() {
        assert_eq!(
            parse_reply(br#"{"choices":[{"message":{"role":"assistant","content":"  \"Ask an\n open question.\"  "}}]}"#)
                .unwrap(),
            Reply::Text("Ask an open question.".into())
        );
        assert_eq!(
            parse_reply(
                br#"{"choices":[{"message":{"content":"<think>hmm</think>\nSlow down."}}]}"#
            )
            .unwrap(),
            Reply::Text("Slow down.".into())
        );
        assert_eq!(
            parse_reply(br#"{"choices":[{"message":{"content":"NO_GUIDANCE"}}]}"#).unwrap(),
            Reply::NoGuidance
        );
        let long = "word ".repeat(100);
        let body = serde_json::json!({"choices": [{"message": {"content": long}}]}).to_string();
        let Reply::Text(text) = parse_reply(body.as_bytes()).unwrap() else {
            panic!("text expected");
        };
        assert_eq!(text.chars().count(), MAX_BACKEND_REPLY_CHARS);
        assert!(text.ends_with('…'));
    }

    #[test]
    fn unusable_replies_are_errors() {
        for body in [
            &b"not json"[..],
            br#"{"choices":[]}"#,
            br#"{"choices":[{"message":{"content":null}}]}"#,
            br#"{"choices":[{"message":{"content":"   "}}]}"#,
            br#"{"error":{"message":"bad"}}"#,
        ] {
            assert!(
                parse_reply(body).is_err(),
                "{}",
                String::from_utf8_lossy(body)
            );
        }
    }

    #[test]
    fn the_endpoint_is_the_chat_completions_path_of_the_base_url() {
        let uri = endpoint("http://127.0.0.1:11434/v1/").unwrap();
        assert_eq!(
            uri.to_string(),
            "http://127.0.0.1:11434/v1/chat/completions"
        );
        let uri = endpoint("https://api.example.com/v1/chat/completions").unwrap();
        assert_eq!(uri.path(), "/v1/chat/completions");
        for bad in ["ftp://host/v1", "127.0.0.1:8000", "http://", "not a url"] {
            assert_eq!(
                endpoint(bad),
                Err(RecommenderConfigError::InvalidUrl),
                "{bad}"
            );
        }
    }

    #[test]
    fn logged_urls_lose_user_info_and_query() {
        assert_eq!(
            loggable_url("https://user:s3cret@api.example.com:8443/v1?key=s3cret"),
            "https://api.example.com:8443/v1"
        );
        let config = RecommenderConfig {
            url: Some("http://u:s3cret@host/v1".into()),
            api_key: Some("s3cret".into()),
            ..RecommenderConfig::default()
        };
        assert!(!format!("{config:?}").contains("s3cret"));
    }
}
