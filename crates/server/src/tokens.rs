//! Client tokens: minting the secret, and the `POST /v1/client_tokens`
//! request checked into what is granted (the raw wire body first, then a
//! checked [`MintRequest`], as ripgrep turns low-level flags into high-level
//! arguments).
//!
//! Request rules (the interface leaves them open; existing clients expect
//! these): `scopes` defaults to `["service.stream"]` and must name known
//! scopes, all held by the minting key; `expires_in` defaults to 300 and is
//! clamped to 60..=3600; `max_duration_seconds` is clamped to the 3600-second
//! session limit; `max_concurrent` defaults to 1; every cap given must be
//! positive; `allowed_origins` entries must be browser origins
//! (`http(s)://host[:port]`, see [`normalize_origin`]), compared after
//! normalisation.

use crate::http_error::store_unavailable;
use crate::ids::{hex, random_bytes};
use crate::keys::{KeyHash, Scope};
use crate::store::{BudgetOutcome, TokenCaps, TokenStore};
use attune_core::billing;
use attune_core::wire::{ClientTokenRequest, ClientTokenResponse};
use attune_core::{ErrorCode, ServiceError};
use std::fmt;
use std::net::Ipv6Addr;

/// What every client token starts with: unlike API keys (`atk_`), so the two
/// are told apart without a lookup and recognisable to secret scanners.
pub const TOKEN_PREFIX: &str = "att_";

/// Random bytes in a token: 256 bits, like a key.
const TOKEN_BYTES: usize = 32;

/// Lifetime when the request names none.
pub const DEFAULT_EXPIRES_IN: u64 = 300;
/// Shortest lifetime granted; shorter requests are raised to it.
pub const MIN_EXPIRES_IN: u64 = 60;
/// Longest lifetime granted; longer requests are lowered to it.
pub const MAX_EXPIRES_IN: u64 = 3600;
/// The interface's maximum session duration: a token cannot raise it.
pub const MAX_SESSION_SECONDS: u64 = 3600;
/// Scopes granted when the request names none.
pub const DEFAULT_SCOPES: &[Scope] = &[Scope::Stream];

/// A freshly minted client token: the only moment it exists in the clear.
/// `Debug` hides it.
#[derive(Clone, PartialEq, Eq)]
pub struct ClientToken(String);

impl ClientToken {
    /// A new random token: `att_` and 64 lowercase hex digits.
    pub fn generate() -> ClientToken {
        ClientToken(format!(
            "{TOKEN_PREFIX}{}",
            hex(&random_bytes::<TOKEN_BYTES>())
        ))
    }

    /// The secret, to hand to the minting client.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The hash the store keeps instead of the token.
    pub fn hash(&self) -> KeyHash {
        KeyHash::of(&self.0)
    }

    /// Whether `text` has the shape of a client token.
    pub fn is_well_formed(text: &str) -> bool {
        text.strip_prefix(TOKEN_PREFIX).is_some_and(|digits| {
            digits.len() == TOKEN_BYTES * 2
                && digits
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        })
    }
}

impl fmt::Debug for ClientToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ClientToken(<redacted>)")
    }
}

/// A new token's public id: `tok_` and 16 hex digits, safe to log.
pub fn new_token_id() -> String {
    format!("tok_{}", hex(&random_bytes::<8>()))
}

/// Takes `seconds` of media from the video budget of the token `token_id`,
/// all or nothing, answering what is left (`None` for a token without a
/// budget). Upload, stream and realtime all charge through this, so the
/// budget is shared: `ih3006` when it cannot cover the seconds, `ih1003` when
/// the store cannot answer.
pub async fn charge_video_budget(
    tokens: &dyn TokenStore,
    token_id: &str,
    seconds: f64,
) -> Result<Option<f64>, ServiceError> {
    match tokens
        .consume_video_seconds(token_id, seconds)
        .await
        .map_err(|error| store_unavailable(&error))?
    {
        BudgetOutcome::Granted { remaining } => Ok(remaining),
        BudgetOutcome::Exhausted { remaining } => Err(billing::exhausted(seconds, remaining)),
    }
}

/// A checked `POST /v1/client_tokens` request: what will be granted.
#[derive(Debug, Clone, PartialEq)]
pub struct MintRequest {
    /// Scopes, sorted and without repeats.
    pub scopes: Vec<Scope>,
    /// Lifetime in seconds, clamped.
    pub expires_in: u64,
    /// The caps.
    pub caps: TokenCaps,
}

fn invalid(message: String) -> ServiceError {
    ServiceError::with_message(ErrorCode::Ih4005, message)
}

fn positive(name: &str, value: Option<u64>) -> Result<Option<u64>, ServiceError> {
    match value {
        Some(0) => Err(invalid(format!("`{name}` must be at least 1."))),
        other => Ok(other),
    }
}

impl MintRequest {
    /// Checks the wire request: `ih4005` naming the field at fault. Whether
    /// the minting key holds the scopes is checked by the caller.
    pub fn from_wire(request: &ClientTokenRequest) -> Result<MintRequest, ServiceError> {
        let mut scopes = match &request.scopes {
            None => DEFAULT_SCOPES.to_vec(),
            Some(names) if names.is_empty() => {
                return Err(invalid(
                    "`scopes` is empty; omit it for the default `service.stream`.".into(),
                ))
            }
            Some(names) => names
                .iter()
                .map(|name| name.parse::<Scope>())
                .collect::<Result<Vec<_>, _>>()
                .map_err(|unknown| invalid(format!("`scopes`: {unknown}.")))?,
        };
        scopes.sort();
        scopes.dedup();

        let expires_in = request
            .expires_in
            .unwrap_or(DEFAULT_EXPIRES_IN)
            .clamp(MIN_EXPIRES_IN, MAX_EXPIRES_IN);
        let max_duration_seconds = positive("max_duration_seconds", request.max_duration_seconds)?
            .map(|seconds| seconds.min(MAX_SESSION_SECONDS));
        let max_bytes = positive("max_bytes", request.max_bytes)?;
        let max_concurrent = match request.max_concurrent {
            None => 1,
            Some(0) => return Err(invalid("`max_concurrent` must be at least 1.".into())),
            Some(n) => n,
        };
        let max_video_seconds = match request.max_video_seconds {
            Some(seconds) if !(seconds.is_finite() && seconds > 0.0) => {
                return Err(invalid(
                    "`max_video_seconds` must be a positive number of seconds.".into(),
                ))
            }
            other => other,
        };
        let allowed_origins = match &request.allowed_origins {
            None => None,
            Some(origins) if origins.is_empty() => {
                return Err(invalid(
                    "`allowed_origins` is empty; omit it to allow any origin.".into(),
                ))
            }
            Some(origins) => {
                let mut normalised = origins
                    .iter()
                    .map(|origin| {
                        normalize_origin(origin).ok_or_else(|| {
                            invalid(format!(
                                "`allowed_origins`: `{origin}` is not a browser origin such as \
                                 `https://app.example.com`."
                            ))
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                normalised.sort();
                normalised.dedup();
                Some(normalised)
            }
        };
        Ok(MintRequest {
            scopes,
            expires_in,
            caps: TokenCaps {
                max_duration_seconds,
                max_bytes,
                max_concurrent,
                max_video_seconds,
                allowed_origins,
            },
        })
    }

    /// The response for `token` minted from this request.
    pub fn response(&self, token: &ClientToken) -> ClientTokenResponse {
        ClientTokenResponse {
            access_token: token.expose().to_owned(),
            token_type: "Bearer".to_owned(),
            expires_in: self.expires_in,
            scope: self
                .scopes
                .iter()
                .map(|scope| scope.as_str())
                .collect::<Vec<_>>()
                .join(" "),
            max_duration_seconds: self.caps.max_duration_seconds,
            max_bytes: self.caps.max_bytes,
            max_concurrent: self.caps.max_concurrent,
            max_video_seconds: self.caps.max_video_seconds,
            allowed_origins: self.caps.allowed_origins.clone(),
        }
    }
}

/// A browser origin in canonical form (`scheme://host[:port]`, lower case,
/// default port dropped, no trailing slash), or `None` for anything else: a
/// path, query, user info, the opaque `null`, a scheme other than http(s),
/// or a host no browser would send.
///
/// The host is a name of ASCII letters, digits, `-`, `.`, `_` and `~` (what
/// browsers put in `Origin`, internationalised names being in punycode), or
/// a bracketed IPv6 address, written back in its RFC 5952 form. The port is a
/// decimal number up to 65535. Surrounding whitespace is ignored, and so is a
/// single trailing `/`.
pub fn normalize_origin(text: &str) -> Option<String> {
    let text = text.trim();
    let (scheme, rest) = text.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    let default_port = match scheme.as_str() {
        "http" => 80,
        "https" => 443,
        _ => return None,
    };
    let authority = rest.strip_suffix('/').unwrap_or(rest);
    let (host, port) = match authority.strip_prefix('[') {
        Some(bracketed) => {
            let (literal, after) = bracketed.split_once(']')?;
            let address: Ipv6Addr = literal.parse().ok()?;
            let port = match after {
                "" => None,
                _ => Some(after.strip_prefix(':')?),
            };
            (format!("[{address}]"), port)
        }
        None => {
            let (host, port) = match authority.split_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (authority, None),
            };
            let name_byte =
                |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~');
            if host.is_empty() || !host.bytes().all(name_byte) {
                return None;
            }
            (host.to_ascii_lowercase(), port)
        }
    };
    let port = match port {
        None => None,
        Some(digits) if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) => {
            return None
        }
        Some(digits) => Some(digits.parse::<u16>().ok()?),
    };
    match port {
        Some(port) if port != default_port => Some(format!("{scheme}://{host}:{port}")),
        _ => Some(format!("{scheme}://{host}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_well_formed_distinct_hidden_and_unlike_keys() {
        let a = ClientToken::generate();
        let b = ClientToken::generate();
        assert!(ClientToken::is_well_formed(a.expose()));
        assert_ne!(a, b);
        assert!(!format!("{a:?}").contains(a.expose()));
        assert!(!crate::keys::ApiKey::is_well_formed(a.expose()));
        assert!(!ClientToken::is_well_formed(
            crate::keys::ApiKey::generate().expose()
        ));
    }

    #[test]
    fn defaults_and_clamps_follow_the_documented_rules() {
        let request = MintRequest::from_wire(&ClientTokenRequest::default()).unwrap();
        assert_eq!(request.scopes, vec![Scope::Stream]);
        assert_eq!(request.expires_in, 300);
        assert_eq!(request.caps.max_concurrent, 1);
        assert_eq!(request.caps.allowed_origins, None);

        for (asked, granted) in [(0, 60), (59, 60), (61, 61), (3600, 3600), (86_400, 3600)] {
            let request = MintRequest::from_wire(&ClientTokenRequest {
                expires_in: Some(asked),
                max_duration_seconds: Some(asked.max(1) * 2),
                ..ClientTokenRequest::default()
            })
            .unwrap();
            assert_eq!(request.expires_in, granted, "{asked}");
            assert!(request.caps.max_duration_seconds.unwrap() <= 3600);
        }
    }

    #[test]
    fn bad_fields_are_named_in_an_invalid_parameter_error() {
        let cases = [
            (
                ClientTokenRequest {
                    scopes: Some(vec!["service.everything".into()]),
                    ..Default::default()
                },
                "service.everything",
            ),
            (
                ClientTokenRequest {
                    scopes: Some(vec![]),
                    ..Default::default()
                },
                "scopes",
            ),
            (
                ClientTokenRequest {
                    max_bytes: Some(0),
                    ..Default::default()
                },
                "max_bytes",
            ),
            (
                ClientTokenRequest {
                    max_concurrent: Some(0),
                    ..Default::default()
                },
                "max_concurrent",
            ),
            (
                ClientTokenRequest {
                    max_video_seconds: Some(-1.0),
                    ..Default::default()
                },
                "max_video_seconds",
            ),
            (
                ClientTokenRequest {
                    allowed_origins: Some(vec!["https://ok.example".into(), "ftp://x".into()]),
                    ..Default::default()
                },
                "ftp://x",
            ),
        ];
        for (request, named) in cases {
            let error = MintRequest::from_wire(&request).unwrap_err();
            assert_eq!(error.code, ErrorCode::Ih4005);
            assert!(error.message().contains(named), "{}", error.message());
        }
    }

    #[test]
    fn the_response_spells_scopes_with_spaces_and_echoes_caps() {
        let request = MintRequest::from_wire(&ClientTokenRequest {
            scopes: Some(vec![
                "service.upload".into(),
                "service.stream".into(),
                "service.upload".into(),
            ]),
            max_video_seconds: Some(90.0),
            allowed_origins: Some(vec!["HTTPS://App.Example.com:443/".into()]),
            ..Default::default()
        })
        .unwrap();
        let token = ClientToken::generate();
        let response = request.response(&token);
        assert_eq!(response.scope, "service.upload service.stream");
        assert_eq!(response.token_type, "Bearer");
        assert_eq!(response.access_token, token.expose());
        assert_eq!(response.max_video_seconds, Some(90.0));
        assert_eq!(
            response.allowed_origins,
            Some(vec!["https://app.example.com".to_owned()])
        );
    }

    #[test]
    fn origins_are_normalised_and_non_origins_refused() {
        for (text, expected) in [
            ("https://app.example.com", Some("https://app.example.com")),
            ("https://App.Example.com/", Some("https://app.example.com")),
            ("http://localhost:80", Some("http://localhost")),
            ("http://localhost:3000", Some("http://localhost:3000")),
            ("http://[::1]:8080", Some("http://[::1]:8080")),
            ("http://[::1]", Some("http://[::1]")),
            ("null", None),
            ("https://app.example.com/path", None),
            ("https://user@app.example.com", None),
            ("https://", None),
            ("https://host:99999", None),
            ("https://host:", None),
            ("ws://host", None),
            ("http://HOST:0080", Some("http://host")),
            ("https://[0:0:0:0:0:0:0:1]:443", Some("https://[::1]")),
            ("http://[::ffff:10.0.0.1]", Some("http://[::ffff:10.0.0.1]")),
            ("http://[", None),
            ("http://[abc]", None),
            ("http://[::1]x", None),
            ("http://a:b:80", None),
            ("http://a]", None),
            ("http://exa mple.com", None),
            ("http://bücher.example", None),
            ("http://:80", None),
        ] {
            assert_eq!(normalize_origin(text).as_deref(), expected, "{text}");
        }
    }
}
