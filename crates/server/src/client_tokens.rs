//! `POST /v1/client_tokens` and `POST /v1/client_tokens/revoke`: minting and
//! revoking client tokens with an API key.
//!
//! Revocation answers 200 with `{}` whether or not the account had such a
//! token (as OAuth token revocation, RFC 7009, does): the caller's goal, that
//! the token no longer works, holds either way. A `token` that is not shaped
//! like a client token at all (an API key pasted by mistake, say) is `ih4005`.

use crate::app::{json_response, App, Caller};
use crate::body::{parse_json, read_json_body};
use crate::http_error::store_unavailable;
use crate::http_error::{Body, HttpError};
use crate::keys::KeyHash;
use crate::store::NewToken;
use crate::tokens::{new_token_id, ClientToken, MintRequest};
use attune_core::wire::{ClientTokenRequest, ClientTokenResponse, ClientTokenRevokeRequest};
use attune_core::{ErrorCode, ServiceError};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};

/// Mints a token: the body is read (the key may be in it), the key
/// authenticated and admitted, the request checked, then [`issue`]d.
pub(crate) async fn mint(
    app: &App,
    request: Request<Incoming>,
) -> Result<Response<Body>, HttpError> {
    let (parts, body) = request.into_parts();
    let bytes = read_json_body(body, &parts.headers).await?;
    let wire: ClientTokenRequest = parse_json(&bytes)?;
    let caller = app
        .admit_key(&parts.headers, wire.api_key.as_deref())
        .await?;
    let mint = MintRequest::from_wire(&wire)?;
    let response = issue(app, &caller, &mint).await?;
    Ok(json_response(StatusCode::OK, &response))
}

/// Grants `mint` to an admitted key: the key must hold every requested scope
/// (`ih2003` naming the first it lacks), then the token is stored (only its
/// hash) and answered. The one minting path, shared by `/v1/client_tokens`
/// and the demo's `/demo/token`.
pub(crate) async fn issue(
    app: &App,
    caller: &Caller,
    mint: &MintRequest,
) -> Result<ClientTokenResponse, HttpError> {
    for scope in &mint.scopes {
        if !caller.principal.scopes().contains(scope) {
            return Err(HttpError::new(ServiceError::with_message(
                ErrorCode::Ih2003,
                format!(
                    "The API key lacks the scope `{scope}` requested for the token; a key can \
                     only grant scopes it holds."
                ),
            )));
        }
    }
    let token = ClientToken::generate();
    let expires_in = i64::try_from(mint.expires_in).unwrap_or(i64::MAX);
    let record = app
        .services
        .tokens
        .create_token(NewToken {
            id: new_token_id(),
            hash: token.hash(),
            account_id: caller.principal.account_id(),
            key_id: caller.principal.key_id().to_owned(),
            scopes: mint.scopes.clone(),
            caps: mint.caps.clone(),
            created_at: caller.now,
            expires_at: caller.now.plus_seconds(expires_in),
        })
        .await
        .map_err(|error| store_unavailable(&error))?;
    tracing::info!(
        token_id = %record.id,
        key_id = %record.key_id,
        account_id = record.account_id,
        expires_in = mint.expires_in,
        "client token minted"
    );
    Ok(mint.response(&token))
}

/// Revokes a token of the calling key's account.
pub(crate) async fn revoke(
    app: &App,
    request: Request<Incoming>,
) -> Result<Response<Body>, HttpError> {
    let (parts, body) = request.into_parts();
    let bytes = read_json_body(body, &parts.headers).await?;
    let wire: ClientTokenRevokeRequest = parse_json(&bytes)?;
    let caller = app
        .admit_key(&parts.headers, wire.api_key.as_deref())
        .await?;
    let token = wire.token.trim();
    if !ClientToken::is_well_formed(token) {
        return Err(HttpError::new(ServiceError::with_message(
            ErrorCode::Ih4005,
            "`token` is not a client token (they start with `att_`).",
        )));
    }
    let found = app
        .services
        .tokens
        .revoke_token(
            KeyHash::of(token),
            caller.principal.account_id(),
            caller.now,
        )
        .await
        .map_err(|error| store_unavailable(&error))?;
    tracing::info!(
        key_id = %caller.principal.key_id(),
        account_id = caller.principal.account_id(),
        found,
        "client token revocation"
    );
    Ok(json_response(StatusCode::OK, &serde_json::json!({})))
}
