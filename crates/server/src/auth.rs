//! Authentication: from a request's credential (an API key or a client
//! token) to the [`Principal`] it speaks for, and the scope checks routes
//! make on it.
//!
//! Failures never say why a key was refused: unknown, malformed and revoked
//! keys all answer `ih2001` with the same message, so probing tells an
//! attacker nothing. Client tokens follow the interface's finer codes: a live
//! token revoked answers `ih2014`, a disallowed origin `ih2013`; an expired or
//! unknown token is `ih2001` like a bad key.

use crate::http_error::store_unavailable;
use crate::keys::{ApiKey, KeyHash, Scope};
use crate::store::{Account, KeyStatus, KeyStore, TokenCaps, TokenStore};
use crate::tokens::{normalize_origin, ClientToken};
use attune_core::access;
use attune_core::wire::Timestamp;
use attune_core::{ErrorCode, ServiceError};
use hyper::header::{HeaderMap, AUTHORIZATION, ORIGIN};
use std::collections::BTreeSet;

/// The credential a request was authenticated with.
#[derive(Debug, Clone, PartialEq)]
pub enum Credential {
    /// An API key.
    Key {
        /// The key's public id.
        key_id: String,
    },
    /// A client token.
    Token(TokenGrant),
}

/// What a client token grants beyond its scopes.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenGrant {
    /// The token's public id (safe to log).
    pub id: String,
    /// The id of the key that minted it.
    pub key_id: String,
    /// Its caps.
    pub caps: TokenCaps,
    /// When it stops authenticating.
    pub expires_at: Timestamp,
    /// Seconds left in its video budget when the request arrived; `None`
    /// when it has no budget.
    pub video_seconds_left: Option<f64>,
}

/// Who a request acts for: an account, through one of its keys or a client
/// token minted from one, with the credential's scopes.
#[derive(Debug, Clone, PartialEq)]
pub struct Principal {
    account: Account,
    credential: Credential,
    scopes: BTreeSet<Scope>,
}

impl Principal {
    /// A principal acting through the API key `key_id`.
    pub fn for_key(
        account: Account,
        key_id: String,
        scopes: impl IntoIterator<Item = Scope>,
    ) -> Self {
        Principal {
            account,
            credential: Credential::Key { key_id },
            scopes: scopes.into_iter().collect(),
        }
    }

    /// A principal acting through a client token.
    pub fn for_token(
        account: Account,
        grant: TokenGrant,
        scopes: impl IntoIterator<Item = Scope>,
    ) -> Self {
        Principal {
            account,
            credential: Credential::Token(grant),
            scopes: scopes.into_iter().collect(),
        }
    }

    /// The account's id.
    pub fn account_id(&self) -> i64 {
        self.account.id
    }

    /// The account, with its subscription flag and limits as read for this
    /// request.
    pub fn account(&self) -> &Account {
        &self.account
    }

    /// The credential used.
    pub fn credential(&self) -> &Credential {
        &self.credential
    }

    /// The public id of the credential used: the key's id, or the token's
    /// (safe to log).
    pub fn credential_id(&self) -> &str {
        match &self.credential {
            Credential::Key { key_id } => key_id,
            Credential::Token(grant) => &grant.id,
        }
    }

    /// The id of the API key behind the request: the key used, or the key
    /// that minted the token used.
    pub fn key_id(&self) -> &str {
        match &self.credential {
            Credential::Key { key_id } => key_id,
            Credential::Token(grant) => &grant.key_id,
        }
    }

    /// The client token's grant, when the credential is a token.
    pub fn token(&self) -> Option<&TokenGrant> {
        match &self.credential {
            Credential::Key { .. } => None,
            Credential::Token(grant) => Some(grant),
        }
    }

    /// The granted scopes.
    pub fn scopes(&self) -> &BTreeSet<Scope> {
        &self.scopes
    }

    /// `Ok` when `scope` was granted, else `ih2003` naming the scope needed
    /// (the rule is attune-core's [`access::require`]).
    pub fn require_scope(&self, scope: Scope) -> Result<(), ServiceError> {
        access::require(&self.scopes, scope)
    }
}

/// The credential of an `Authorization: Bearer <credential>` header.
///
/// No header, an empty value, or `Bearer` with nothing after it is a missing
/// credential (`ih2002`): it is what a client sends when its key variable is
/// unset. Any other scheme or an unreadable value is `ih2001`.
pub fn bearer_credential(headers: &HeaderMap) -> Result<&str, ServiceError> {
    let Some(value) = headers.get(AUTHORIZATION) else {
        return Err(ErrorCode::Ih2002.into());
    };
    let value = value
        .to_str()
        .map_err(|_| ServiceError::new(ErrorCode::Ih2001))?
        .trim();
    if value.is_empty() {
        return Err(ErrorCode::Ih2002.into());
    }
    let (scheme, credential) = value.split_once(' ').unwrap_or((value, ""));
    // The scheme is case-insensitive (RFC 9110, section 11.1).
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(ErrorCode::Ih2001.into());
    }
    match credential.trim() {
        "" => Err(ErrorCode::Ih2002.into()),
        credential => Ok(credential),
    }
}

/// Authenticates a request from its headers (`Authorization`, and `Origin`
/// for client tokens with an origin allow-list). See
/// [`authenticate_credential`].
pub async fn authenticate(
    keys: &dyn KeyStore,
    tokens: &dyn TokenStore,
    headers: &HeaderMap,
    now: Timestamp,
) -> Result<Principal, ServiceError> {
    let credential = bearer_credential(headers)?;
    authenticate_credential(keys, tokens, credential, headers, now).await
}

/// Authenticates `credential` (an API key or a client token), with the
/// request's `headers` for the origin check:
/// - `ih2001` for a malformed, unknown, revoked or expired key or token;
/// - `ih2014` for a live token revoked (or whose minting key was revoked);
/// - `ih2013` for a token with `allowed_origins` on a request whose `Origin`
///   is absent or not listed;
/// - `ih1003` when the store cannot answer.
pub async fn authenticate_credential(
    keys: &dyn KeyStore,
    tokens: &dyn TokenStore,
    credential: &str,
    headers: &HeaderMap,
    now: Timestamp,
) -> Result<Principal, ServiceError> {
    if ApiKey::is_well_formed(credential) {
        authenticate_key(keys, credential).await
    } else if ClientToken::is_well_formed(credential) {
        authenticate_token(keys, tokens, credential, headers, now).await
    } else {
        Err(ErrorCode::Ih2001.into())
    }
}

async fn account_of(keys: &dyn KeyStore, account_id: i64) -> Result<Account, ServiceError> {
    match keys.account(account_id).await {
        Ok(Some(account)) => Ok(account),
        // A credential without its account cannot act for anyone.
        Ok(None) => Err(ErrorCode::Ih2001.into()),
        Err(error) => Err(store_unavailable(&error)),
    }
}

async fn authenticate_key(
    keys: &dyn KeyStore,
    credential: &str,
) -> Result<Principal, ServiceError> {
    // Looked up by its hash, never compared: see `KeyHash` on constant time.
    let record = keys
        .find_key(KeyHash::of(credential))
        .await
        .map_err(|error| store_unavailable(&error))?;
    match record {
        Some(record) if record.status == KeyStatus::Active => {
            let account = account_of(keys, record.account_id).await?;
            tracing::debug!(key_id = %record.id, account_id = record.account_id, "authenticated");
            Ok(Principal::for_key(account, record.id, record.scopes))
        }
        Some(record) => {
            tracing::debug!(key_id = %record.id, status = record.status.as_str(), "key refused");
            Err(ErrorCode::Ih2001.into())
        }
        None => Err(ErrorCode::Ih2001.into()),
    }
}

async fn authenticate_token(
    keys: &dyn KeyStore,
    tokens: &dyn TokenStore,
    credential: &str,
    headers: &HeaderMap,
    now: Timestamp,
) -> Result<Principal, ServiceError> {
    let record = tokens
        .find_token(KeyHash::of(credential))
        .await
        .map_err(|error| store_unavailable(&error))?;
    let Some(record) = record else {
        return Err(ErrorCode::Ih2001.into());
    };
    // An expired token is simply invalid, revoked or not: its answer must not
    // change when expired records are cleaned away.
    if now >= record.expires_at {
        tracing::debug!(token_id = %record.id, "token refused: expired");
        return Err(ErrorCode::Ih2001.into());
    }
    if record.revoked_at.is_some() || !record.key_active {
        tracing::debug!(token_id = %record.id, "token refused: revoked");
        return Err(ErrorCode::Ih2014.into());
    }
    if let Some(allowed) = &record.caps.allowed_origins {
        let origin = headers
            .get(ORIGIN)
            .and_then(|value| value.to_str().ok())
            .and_then(normalize_origin);
        let listed = origin
            .as_ref()
            .is_some_and(|origin| allowed.iter().any(|allowed| allowed == origin));
        if !listed {
            tracing::debug!(token_id = %record.id, "token refused: origin not allowed");
            return Err(ServiceError::with_message(
                ErrorCode::Ih2013,
                if origin.is_some() {
                    "The request's Origin is not in the client token's allowed origins."
                } else {
                    "This client token is limited to listed origins and the request carries no \
                     Origin header."
                },
            ));
        }
    }
    let account = account_of(keys, record.account_id).await?;
    tracing::debug!(
        token_id = %record.id,
        key_id = %record.key_id,
        account_id = record.account_id,
        "authenticated"
    );
    let video_seconds_left = record.video_seconds_left();
    Ok(Principal::for_token(
        account,
        TokenGrant {
            id: record.id,
            key_id: record.key_id,
            caps: record.caps,
            expires_at: record.expires_at,
            video_seconds_left,
        },
        record.scopes,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::header::HeaderValue;

    fn headers(authorization: Option<&str>) -> HeaderMap {
        let mut headers = HeaderMap::new();
        if let Some(value) = authorization {
            headers.insert(AUTHORIZATION, HeaderValue::from_str(value).unwrap());
        }
        headers
    }

    fn code(result: Result<&str, ServiceError>) -> Option<ErrorCode> {
        result.err().map(|e| e.code)
    }

    #[test]
    fn bearer_credentials_are_read_whatever_the_scheme_case() {
        assert_eq!(
            bearer_credential(&headers(Some("Bearer atk_x"))),
            Ok("atk_x")
        );
        assert_eq!(
            bearer_credential(&headers(Some("bearer  atk_x "))),
            Ok("atk_x")
        );
    }

    #[test]
    fn absent_or_empty_credentials_are_missing_and_other_schemes_invalid() {
        assert_eq!(
            code(bearer_credential(&headers(None))),
            Some(ErrorCode::Ih2002)
        );
        assert_eq!(
            code(bearer_credential(&headers(Some("")))),
            Some(ErrorCode::Ih2002)
        );
        assert_eq!(
            code(bearer_credential(&headers(Some("Bearer ")))),
            Some(ErrorCode::Ih2002)
        );
        assert_eq!(
            code(bearer_credential(&headers(Some("Basic dXNlcjpwYXNz")))),
            Some(ErrorCode::Ih2001)
        );
        assert_eq!(
            code(bearer_credential(&headers(Some("atk_abc")))),
            Some(ErrorCode::Ih2001)
        );
    }

    #[test]
    fn scopes_must_match_exactly() {
        let account = Account {
            id: 1,
            name: "acme".into(),
            subscription_active: true,
            limits: crate::store::AccountLimits::default(),
        };
        let principal = Principal::for_key(
            account,
            "key_1".into(),
            [Scope::Upload, Scope::UploadInter2],
        );
        assert!(principal.require_scope(Scope::Upload).is_ok());
        assert!(principal.require_scope(Scope::UploadInter2).is_ok());
        let refused = principal
            .require_scope(Scope::UploadInter2Audio)
            .unwrap_err();
        assert_eq!(refused.code, ErrorCode::Ih2003);
        assert!(refused.message().contains("service.upload.inter-2-audio"));
        assert!(principal.require_scope(Scope::Stream).is_err());
    }
}
