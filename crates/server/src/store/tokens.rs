//! Client tokens as the store keeps them: hashed, with their caps, lifetime,
//! minting key and the video seconds they have used.

use super::StoreFuture;
use crate::keys::{KeyHash, Scope};
use attune_core::wire::Timestamp;

/// The caps a client token carries, as granted (after defaults and clamping).
#[derive(Debug, Clone, PartialEq)]
pub struct TokenCaps {
    /// One session's longest duration in seconds; `None` leaves the
    /// deployment's session limit.
    pub max_duration_seconds: Option<u64>,
    /// Bytes one stream session may send, and the largest upload the token
    /// may make; `None` leaves the deployment's limits.
    pub max_bytes: Option<u64>,
    /// Sessions open at once on the token.
    pub max_concurrent: u32,
    /// Seconds of media the token may have analyzed, across upload, stream
    /// and realtime; `None` is unlimited.
    pub max_video_seconds: Option<f64>,
    /// Browser origins (normalised `scheme://host[:port]`) allowed to use the
    /// token; `None` allows any origin, and a missing `Origin` header.
    pub allowed_origins: Option<Vec<String>>,
}

/// A token to store. Only its hash is kept.
#[derive(Debug, Clone, PartialEq)]
pub struct NewToken {
    /// Public identifier (`tok_` and 16 hex digits), safe to log.
    pub id: String,
    /// The hash of the token.
    pub hash: KeyHash,
    /// The account of the minting key.
    pub account_id: i64,
    /// The minting key's id.
    pub key_id: String,
    /// Granted scopes, sorted and without repeats.
    pub scopes: Vec<Scope>,
    /// The caps.
    pub caps: TokenCaps,
    /// When it was minted.
    pub created_at: Timestamp,
    /// When it stops authenticating.
    pub expires_at: Timestamp,
}

/// What the store knows about a token: everything but the token itself.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenRecord {
    /// Public identifier, safe to log.
    pub id: String,
    /// The account of the minting key.
    pub account_id: i64,
    /// The minting key's id.
    pub key_id: String,
    /// Whether the minting key is still active: a token dies with its key.
    pub key_active: bool,
    /// Granted scopes.
    pub scopes: Vec<Scope>,
    /// The caps.
    pub caps: TokenCaps,
    /// When it was minted.
    pub created_at: Timestamp,
    /// When it stops authenticating.
    pub expires_at: Timestamp,
    /// When it was revoked, if it was.
    pub revoked_at: Option<Timestamp>,
    /// Seconds of media analyzed on it so far.
    pub video_seconds_used: f64,
}

impl TokenRecord {
    /// Seconds left in the video budget; `None` when the token has none.
    pub fn video_seconds_left(&self) -> Option<f64> {
        self.caps
            .max_video_seconds
            .map(|budget| (budget - self.video_seconds_used).max(0.0))
    }
}

/// The answer to a request for video seconds from a token's budget.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum BudgetOutcome {
    /// The seconds were taken from the budget.
    Granted {
        /// What is left, `None` for a token without a budget.
        remaining: Option<f64>,
    },
    /// Taking them would overdraw the budget; nothing was taken (`ih3006`).
    Exhausted {
        /// What is left.
        remaining: f64,
    },
}

/// Client tokens.
pub trait TokenStore: Send + Sync {
    /// Stores a new token and answers its record.
    fn create_token(&self, token: NewToken) -> StoreFuture<'_, TokenRecord>;

    /// The token whose hash is `hash`, whatever its state.
    fn find_token(&self, hash: KeyHash) -> StoreFuture<'_, Option<TokenRecord>>;

    /// Revokes the token whose hash is `hash` if it belongs to `account_id`;
    /// answers whether such a token exists. Revoking a revoked or expired
    /// token succeeds.
    fn revoke_token(&self, hash: KeyHash, account_id: i64, at: Timestamp) -> StoreFuture<'_, bool>;

    /// Takes `seconds` from the token's video budget, all or nothing, in one
    /// atomic step (concurrent uploads and streams on one token share it).
    fn consume_video_seconds<'a>(
        &'a self,
        token_id: &'a str,
        seconds: f64,
    ) -> StoreFuture<'a, BudgetOutcome>;

    /// Gives back seconds taken for analysis that did not happen.
    fn refund_video_seconds<'a>(&'a self, token_id: &'a str, seconds: f64) -> StoreFuture<'a, ()>;
}
