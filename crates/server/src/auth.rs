//! Authentication: from a request's `Authorization` header to the
//! [`Principal`] it speaks for, and the scope checks routes make on it.
//!
//! Failures never say why a credential was refused: unknown, malformed and
//! revoked keys all answer `ih2001` with the same message, so probing tells an
//! attacker nothing.

use crate::keys::{ApiKey, KeyHash, Scope};
use crate::store::{KeyStatus, KeyStore};
use attune_core::{ErrorCode, ServiceError};
use hyper::header::{HeaderMap, AUTHORIZATION};
use std::collections::BTreeSet;

/// Who a request acts for: an account, through one of its keys, with the
/// key's scopes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    account_id: i64,
    key_id: String,
    scopes: BTreeSet<Scope>,
}

impl Principal {
    /// A principal; the store-backed way to get one is [`authenticate`].
    pub fn new(account_id: i64, key_id: String, scopes: impl IntoIterator<Item = Scope>) -> Self {
        Principal {
            account_id,
            key_id,
            scopes: scopes.into_iter().collect(),
        }
    }

    /// The account's id.
    pub fn account_id(&self) -> i64 {
        self.account_id
    }

    /// The public id of the key used (safe to log).
    pub fn key_id(&self) -> &str {
        &self.key_id
    }

    /// The granted scopes.
    pub fn scopes(&self) -> &BTreeSet<Scope> {
        &self.scopes
    }

    /// Whether the exact scope `scope` (a wire spelling such as
    /// `service.upload.inter-2`) was granted. Scopes do not imply each other.
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|granted| granted.as_str() == scope)
    }

    /// `Ok` when `scope` was granted, else `ih2003` naming the scope needed.
    pub fn require_scope(&self, scope: &str) -> Result<(), ServiceError> {
        if self.has_scope(scope) {
            Ok(())
        } else {
            Err(ServiceError::with_message(
                ErrorCode::Ih2003,
                format!("The credential lacks the scope `{scope}` this request needs."),
            ))
        }
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

/// Authenticates a request from its headers: `ih2002` without a credential,
/// `ih2001` for a malformed, unknown or revoked key, `ih1003` when the store
/// cannot answer.
pub async fn authenticate(
    store: &dyn KeyStore,
    headers: &HeaderMap,
) -> Result<Principal, ServiceError> {
    let credential = bearer_credential(headers)?;
    if !ApiKey::is_well_formed(credential) {
        return Err(ErrorCode::Ih2001.into());
    }
    let record = store
        .find_key(KeyHash::of(credential))
        .await
        .map_err(|error| {
            tracing::error!(%error, "the key store cannot authenticate requests");
            ServiceError::with_message(
                ErrorCode::Ih1003,
                "The credential store is unavailable. Retry shortly.",
            )
        })?;
    match record {
        Some(record) if record.status == KeyStatus::Active => {
            tracing::debug!(key_id = %record.id, account_id = record.account_id, "authenticated");
            Ok(Principal::new(record.account_id, record.id, record.scopes))
        }
        Some(record) => {
            tracing::debug!(key_id = %record.id, status = record.status.as_str(), "key refused");
            Err(ErrorCode::Ih2001.into())
        }
        None => Err(ErrorCode::Ih2001.into()),
    }
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
        let principal = Principal::new(1, "key_1".into(), [Scope::Upload, Scope::UploadInter2]);
        assert!(principal.require_scope("service.upload").is_ok());
        assert!(principal.require_scope("service.upload.inter-2").is_ok());
        let refused = principal
            .require_scope("service.upload.inter-2-audio")
            .unwrap_err();
        assert_eq!(refused.code, ErrorCode::Ih2003);
        assert!(refused.message().contains("service.upload.inter-2-audio"));
        assert!(principal.require_scope("service.stream").is_err());
    }
}
