//! The analysis an account has used, against its total and daily quotas.

use super::{AccountLimits, StoreError, StoreFuture};
use std::time::Duration;
use time::Date;

/// Seconds of media an account has had analyzed.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Usage {
    /// Since the account was created.
    pub total_seconds: f64,
    /// On the UTC day asked about.
    pub day_seconds: f64,
}

/// The answer to a request to charge analysis seconds to an account.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuotaOutcome {
    /// The seconds were charged.
    Granted,
    /// Charging them would pass the account's total quota (`ih3003`);
    /// nothing was charged.
    TotalExceeded,
    /// Charging them would pass the account's daily quota (`ih3004`);
    /// nothing was charged.
    DailyExceeded,
}

/// The answer to a request for a place among an account's requests in
/// flight or a client token's open sessions, counted in a store shared by
/// every instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotOutcome {
    /// Admitted: the place is held until released
    /// ([`UsageStore::release_request`], [`UsageStore::close_token_session`])
    /// or until the holding instance's lease lapses.
    Taken,
    /// The limit of places held at once is reached; this many are held.
    Full(u32),
    /// The requests-per-minute allowance is used up; the next request fits
    /// after this delay.
    RateLimited(Duration),
}

/// Per-account usage, charged against the limits stored with the account.
///
/// A store shared by several instances also counts requests per minute,
/// requests in flight and client-token sessions for the whole deployment
/// ([`UsageStore::counts_requests`]); the embedded store leaves them to each
/// instance's memory, where they cost nothing.
pub trait UsageStore: Send + Sync {
    /// What `account_id` has used in total and on `day`.
    fn usage(&self, account_id: i64, day: Date) -> StoreFuture<'_, Usage>;

    /// Charges `seconds` to the account on `day` if both quotas allow the
    /// whole amount, in one atomic step.
    fn charge_analysis_seconds(
        &self,
        account_id: i64,
        day: Date,
        seconds: f64,
    ) -> StoreFuture<'_, QuotaOutcome>;

    /// Gives back seconds charged on `day` for analysis that did not happen.
    fn refund_analysis_seconds(
        &self,
        account_id: i64,
        day: Date,
        seconds: f64,
    ) -> StoreFuture<'_, ()>;

    /// Whether this store counts requests and sessions for every instance
    /// (the methods below); when not, each instance counts in memory.
    fn counts_requests(&self) -> bool {
        false
    }

    /// Admits one request of `account_id` at `now` against its
    /// requests-per-minute (GCRA) and concurrent-requests limits, counted
    /// across every instance: a place is taken, or the refusal says which
    /// limit is reached. A refused request counts against neither.
    fn admit_request(
        &self,
        account_id: i64,
        limits: AccountLimits,
        now_millis: i64,
    ) -> StoreFuture<'_, SlotOutcome> {
        let _ = (account_id, limits, now_millis);
        Box::pin(async { Err(not_counted()) })
    }

    /// Takes a place among the open sessions of client token `token_id`, at
    /// most `max` across every instance (0: no limit).
    fn open_token_session<'a>(
        &'a self,
        token_id: &'a str,
        max: u32,
    ) -> StoreFuture<'a, SlotOutcome> {
        let _ = (token_id, max);
        Box::pin(async { Err(not_counted()) })
    }

    /// Gives back a place taken by [`UsageStore::admit_request`] on this
    /// instance, when the request is answered. Synchronous: a store that
    /// must tell the database does so in the background.
    fn release_request(&self, account_id: i64) {
        let _ = account_id;
    }

    /// Gives back a place taken by [`UsageStore::open_token_session`] on this
    /// instance, when the session ends.
    fn close_token_session<'a>(&'a self, token_id: &'a str) -> StoreFuture<'a, ()> {
        let _ = token_id;
        Box::pin(async { Ok(()) })
    }
}

fn not_counted() -> StoreError {
    StoreError::Unavailable("this store does not count requests; count them in memory".into())
}
