//! Per-account request limits: requests per minute and concurrent requests,
//! counted in memory by each server instance, plus the refusals for the
//! store-kept quotas.
//!
//! Being in memory, the rate and concurrency limits hold per instance: a
//! deployment of N instances behind a load balancer admits up to N times
//! each limit. The quotas (total and daily analysis seconds) live in the store
//! and hold across instances.
//!
//! Requests per minute use the generic cell rate algorithm (GCRA): a burst of
//! up to the whole minute's allowance is accepted, after which requests are
//! admitted one per `60 s / limit`, and a refused request learns exactly how
//! long until the next one fits (its `Retry-After`).

use crate::clock::next_utc_midnight;
use crate::http_error::HttpError;
use crate::store::{Account, QuotaOutcome};
use attune_core::wire::Timestamp;
use attune_core::{ErrorCode, ServiceError};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

const MINUTE_MS: i64 = 60_000;

/// Accounts with no request in flight and an empty rate window are forgotten
/// once the table holds this many, so it does not grow with every account
/// ever seen.
const PRUNE_THRESHOLD: usize = 4096;

#[derive(Debug)]
struct AccountState {
    /// GCRA's theoretical arrival time of the next request, in Unix ms.
    next_arrival_ms: i64,
    /// Requests admitted and not yet answered.
    in_flight: u32,
}

/// The in-memory request limits of every account seen by this instance.
#[derive(Debug, Default)]
pub struct RequestLimiter {
    accounts: Mutex<HashMap<i64, AccountState>>,
}

/// Proof that a request was admitted; dropping it (when the response is
/// ready) frees its concurrency slot.
#[derive(Debug)]
pub struct RequestPermit {
    limiter: Arc<RequestLimiter>,
    account_id: i64,
}

impl Drop for RequestPermit {
    fn drop(&mut self) {
        let mut accounts = self.limiter.lock();
        if let Some(state) = accounts.get_mut(&self.account_id) {
            state.in_flight = state.in_flight.saturating_sub(1);
        }
    }
}

impl RequestLimiter {
    /// An empty limiter.
    pub fn new() -> RequestLimiter {
        RequestLimiter::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<i64, AccountState>> {
        // The map is consistent after every statement, so a panic elsewhere
        // leaves nothing half-written.
        self.accounts.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Admits a request of `account` at `now`, or refuses it: `ih3002` when
    /// the account already has its maximum of requests in flight, `ih3001`
    /// (with `Retry-After`) when it has used its minute's allowance. A refused
    /// request counts against neither limit.
    pub fn admit(
        self: &Arc<Self>,
        account: &Account,
        now: Timestamp,
    ) -> Result<RequestPermit, HttpError> {
        let now_ms = now.unix_millis();
        let mut accounts = self.lock();
        if accounts.len() >= PRUNE_THRESHOLD {
            accounts.retain(|_, state| state.in_flight > 0 || state.next_arrival_ms > now_ms);
        }
        let state = accounts.entry(account.id).or_insert(AccountState {
            next_arrival_ms: now_ms,
            in_flight: 0,
        });
        if state.in_flight >= account.limits.concurrent_requests {
            return Err(HttpError::new(ServiceError::with_message(
                ErrorCode::Ih3002,
                format!(
                    "The account already has {} requests in progress, its limit. Retry when one \
                     has finished.",
                    state.in_flight
                ),
            )));
        }
        let rate = account.limits.requests_per_minute.max(1);
        let interval_ms = MINUTE_MS / i64::from(rate);
        let tolerance_ms = MINUTE_MS - interval_ms;
        let arrival = state.next_arrival_ms.max(now_ms);
        let earliest = arrival - tolerance_ms;
        if earliest > now_ms {
            let wait = Duration::from_millis((earliest - now_ms) as u64);
            return Err(HttpError::new(ServiceError::with_message(
                ErrorCode::Ih3001,
                format!(
                    "The account's limit of {rate} requests per minute is used up. Retry after \
                     the delay in Retry-After."
                ),
            ))
            .with_retry_after(wait));
        }
        state.next_arrival_ms = arrival + interval_ms;
        state.in_flight += 1;
        Ok(RequestPermit {
            limiter: Arc::clone(self),
            account_id: account.id,
        })
    }
}

/// `ih3005` for an account whose subscription is inactive.
pub fn check_subscription(account: &Account) -> Result<(), HttpError> {
    if account.subscription_active {
        Ok(())
    } else {
        Err(HttpError::new(ServiceError::with_message(
            ErrorCode::Ih3005,
            "The account's subscription is not active.",
        )))
    }
}

/// The refusal for a quota outcome at `now`: `ih3003`, or `ih3004` with the
/// next UTC midnight as `reset_time`; `Ok` when granted.
pub fn quota_refusal(outcome: QuotaOutcome, now: Timestamp) -> Result<(), HttpError> {
    match outcome {
        QuotaOutcome::Granted => Ok(()),
        QuotaOutcome::TotalExceeded => Err(HttpError::new(ServiceError::with_message(
            ErrorCode::Ih3003,
            "The account's analysis quota does not cover this analysis.",
        ))),
        QuotaOutcome::DailyExceeded => {
            let reset = next_utc_midnight(now);
            Err(HttpError::new(ServiceError::with_message(
                ErrorCode::Ih3004,
                format!(
                    "The account's daily analysis quota does not cover this analysis; it resets \
                     at {reset}."
                ),
            ))
            .with_reset_time(reset))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::AccountLimits;

    fn account(requests_per_minute: u32, concurrent_requests: u32) -> Account {
        Account {
            id: 7,
            name: "acme".into(),
            subscription_active: true,
            limits: AccountLimits {
                requests_per_minute,
                concurrent_requests,
                ..AccountLimits::default()
            },
        }
    }

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_unix_millis(1_800_000_000_000 + seconds * 1000).unwrap()
    }

    fn code(result: Result<RequestPermit, HttpError>) -> Option<ErrorCode> {
        result.err().map(|e| e.service_error().code)
    }

    #[test]
    fn a_minutes_allowance_is_admitted_then_one_per_interval() {
        let limiter = Arc::new(RequestLimiter::new());
        let acme = account(3, 100);
        for _ in 0..3 {
            drop(limiter.admit(&acme, at(0)).unwrap());
        }
        let refused = limiter.admit(&acme, at(0)).unwrap_err();
        assert_eq!(refused.service_error().code, ErrorCode::Ih3001);
        assert_eq!(refused.retry_after_delay(), Some(Duration::from_secs(20)));
        // Refusals do not use up the allowance: 20 s later one request fits.
        assert_eq!(code(limiter.admit(&acme, at(19))), Some(ErrorCode::Ih3001));
        assert!(limiter.admit(&acme, at(20)).is_ok());
        assert_eq!(code(limiter.admit(&acme, at(20))), Some(ErrorCode::Ih3001));
        // A quiet minute restores the whole burst.
        for _ in 0..3 {
            limiter.admit(&acme, at(200)).unwrap();
        }
    }

    #[test]
    fn requests_in_flight_are_capped_until_answered() {
        let limiter = Arc::new(RequestLimiter::new());
        let acme = account(1000, 2);
        let first = limiter.admit(&acme, at(0)).unwrap();
        let _second = limiter.admit(&acme, at(0)).unwrap();
        assert_eq!(code(limiter.admit(&acme, at(0))), Some(ErrorCode::Ih3002));
        drop(first);
        assert!(limiter.admit(&acme, at(0)).is_ok());
        // Another account is not affected.
        let other = Account { id: 8, ..acme };
        assert!(limiter.admit(&other, at(0)).is_ok());
    }

    #[test]
    fn quota_refusals_carry_their_codes_and_the_daily_reset() {
        let now: Timestamp = serde_json::from_str("\"2026-11-22T15:00:00Z\"").unwrap();
        assert!(quota_refusal(QuotaOutcome::Granted, now).is_ok());
        let total = quota_refusal(QuotaOutcome::TotalExceeded, now).unwrap_err();
        assert_eq!(total.service_error().code, ErrorCode::Ih3003);
        let daily = quota_refusal(QuotaOutcome::DailyExceeded, now).unwrap_err();
        assert_eq!(daily.service_error().code, ErrorCode::Ih3004);
        assert_eq!(
            daily.reset_time().map(|t| t.to_string()).as_deref(),
            Some("2026-11-23T00:00:00.000Z")
        );
    }
}
