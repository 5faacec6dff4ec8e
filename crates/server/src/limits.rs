//! Per-account request limits: requests per minute, concurrent requests and
//! a client token's open sessions, plus the refusals for the store-kept
//! quotas.
//!
//! Where they are counted depends on the store. On the embedded store (one
//! instance) they are counted in this process's memory, which costs nothing
//! per request. On a store shared by several instances
//! ([`UsageStore::counts_requests`]) the store counts them, so the whole
//! deployment shares each allowance: a client token's sessions one by one,
//! an account's requests from places and rate tokens granted to this
//! instance in batches (see the PostgreSQL store's `postgres_limits` for the
//! bounds). What an instance holds stops counting when its lease lapses. The
//! quotas (total and daily analysis seconds) and client-token budgets always
//! live in the store.
//!
//! Requests per minute use the generic cell rate algorithm (GCRA): a burst of
//! up to the whole minute's allowance is accepted, after which requests are
//! admitted one per `60 s / limit`, and a refused request learns exactly how
//! long until the next one fits (its `Retry-After`).

use crate::clock::next_utc_midnight;
use crate::http_error::store_unavailable;
use crate::http_error::HttpError;
use crate::store::{Account, QuotaOutcome, SlotOutcome, UsageStore};
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

/// The request limits of every account and client token, counted in memory
/// or, when the store is shared, in the store.
#[derive(Default)]
pub struct RequestLimiter {
    accounts: Mutex<HashMap<i64, AccountState>>,
    /// Open sessions per client token id.
    sessions: Mutex<HashMap<String, u32>>,
    /// The store that counts for every instance, when there is one.
    shared: Option<Arc<dyn UsageStore>>,
}

impl std::fmt::Debug for RequestLimiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestLimiter")
            .field("shared", &self.shared.is_some())
            .finish_non_exhaustive()
    }
}

/// Where a permit's place is held.
#[derive(Debug)]
enum Place {
    /// An account's in-flight count in this process.
    Request { account_id: i64 },
    /// A client token's session count in this process.
    Session { token_id: String },
    /// An account's request counted in the shared store.
    StoredRequest { account_id: i64 },
    /// A client token's session counted in the shared store.
    StoredSession { token_id: String },
}

/// Proof that a request or a session was admitted; dropping it (when the
/// response is ready, or the session ends) frees its place.
#[derive(Debug)]
pub struct RequestPermit {
    limiter: Arc<RequestLimiter>,
    place: Place,
}

impl Drop for RequestPermit {
    fn drop(&mut self) {
        match &mut self.place {
            Place::Request { account_id } => {
                let mut accounts = self.limiter.lock();
                if let Some(state) = accounts.get_mut(account_id) {
                    state.in_flight = state.in_flight.saturating_sub(1);
                }
            }
            Place::Session { token_id } => {
                let mut open = self
                    .limiter
                    .sessions
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                if let Some(count) = open.get_mut(token_id) {
                    *count = count.saturating_sub(1);
                    if *count == 0 {
                        open.remove(token_id);
                    }
                }
            }
            Place::StoredRequest { account_id } => {
                if let Some(store) = &self.limiter.shared {
                    store.release_request(*account_id);
                }
            }
            Place::StoredSession { token_id } => {
                let (Some(store), Ok(runtime)) = (
                    self.limiter.shared.clone(),
                    tokio::runtime::Handle::try_current(),
                ) else {
                    // Outside a runtime (a test, or the process ending): the
                    // place frees itself when this instance's lease lapses.
                    return;
                };
                let token_id = std::mem::take(token_id);
                runtime.spawn(async move {
                    if let Err(error) = store.close_token_session(&token_id).await {
                        // It counts until this instance's lease lapses.
                        tracing::warn!(%error, "session place not given back");
                    }
                });
            }
        }
    }
}

fn too_many_requests(in_flight: u32) -> HttpError {
    HttpError::new(ServiceError::with_message(
        ErrorCode::Ih3002,
        format!(
            "The account already has {in_flight} requests in progress, its limit. Retry when one \
             has finished."
        ),
    ))
}

fn rate_limited(rate: u32, wait: Duration) -> HttpError {
    HttpError::new(ServiceError::with_message(
        ErrorCode::Ih3001,
        format!(
            "The account's limit of {rate} requests per minute is used up. Retry after the delay \
             in Retry-After."
        ),
    ))
    .with_retry_after(wait)
}

fn too_many_sessions(max: u32) -> HttpError {
    HttpError::new(ServiceError::with_message(
        ErrorCode::Ih3002,
        format!("The client token already has {max} sessions open, its limit."),
    ))
}

impl RequestLimiter {
    /// An empty limiter counting in memory.
    pub fn new() -> RequestLimiter {
        RequestLimiter::default()
    }

    /// A limiter for a server on `store`: counting in the store when it
    /// counts for every instance, in memory otherwise.
    pub fn for_store(store: Arc<dyn UsageStore>) -> RequestLimiter {
        RequestLimiter {
            shared: store.counts_requests().then_some(store),
            ..RequestLimiter::default()
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<i64, AccountState>> {
        // The map is consistent after every statement, so a panic elsewhere
        // leaves nothing half-written.
        self.accounts.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Admits a request of `account` at `now`, or refuses it: `ih3002` when
    /// the account already has its maximum of requests in flight, `ih3001`
    /// (with `Retry-After`) when it has used its minute's allowance. A refused
    /// request counts against neither limit. `ih1003` when the shared store
    /// cannot answer.
    pub async fn admit(
        self: &Arc<Self>,
        account: &Account,
        now: Timestamp,
    ) -> Result<RequestPermit, HttpError> {
        let Some(store) = &self.shared else {
            return self.admit_in_memory(account, now);
        };
        let outcome = store
            .admit_request(account.id, account.limits, now.unix_millis())
            .await
            .map_err(|e| HttpError::new(store_unavailable(&e)))?;
        match outcome {
            SlotOutcome::Taken => Ok(RequestPermit {
                limiter: Arc::clone(self),
                place: Place::StoredRequest {
                    account_id: account.id,
                },
            }),
            SlotOutcome::Full(in_flight) => Err(too_many_requests(in_flight)),
            SlotOutcome::RateLimited(wait) => Err(rate_limited(
                account.limits.requests_per_minute.max(1),
                wait,
            )),
        }
    }

    /// Takes a place among the open sessions of client token `token_id`, at
    /// most `max` (0: no limit), or refuses with `ih3002`.
    pub async fn open_session(
        self: &Arc<Self>,
        token_id: &str,
        max: u32,
    ) -> Result<RequestPermit, HttpError> {
        if let Some(store) = &self.shared {
            let outcome = store
                .open_token_session(token_id, max)
                .await
                .map_err(|e| HttpError::new(store_unavailable(&e)))?;
            return match outcome {
                SlotOutcome::Taken => Ok(RequestPermit {
                    limiter: Arc::clone(self),
                    place: Place::StoredSession {
                        token_id: token_id.to_owned(),
                    },
                }),
                SlotOutcome::Full(_) | SlotOutcome::RateLimited(_) => Err(too_many_sessions(max)),
            };
        }
        let mut open = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        let count = open.entry(token_id.to_owned()).or_insert(0);
        if max > 0 && *count >= max {
            return Err(too_many_sessions(max));
        }
        *count += 1;
        Ok(RequestPermit {
            limiter: Arc::clone(self),
            place: Place::Session {
                token_id: token_id.to_owned(),
            },
        })
    }

    fn admit_in_memory(
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
            return Err(too_many_requests(state.in_flight));
        }
        let rate = account.limits.requests_per_minute.max(1);
        let interval_ms = MINUTE_MS / i64::from(rate);
        let tolerance_ms = MINUTE_MS - interval_ms;
        let arrival = state.next_arrival_ms.max(now_ms);
        let earliest = arrival - tolerance_ms;
        if earliest > now_ms {
            let wait = Duration::from_millis((earliest - now_ms) as u64);
            return Err(rate_limited(rate, wait));
        }
        state.next_arrival_ms = arrival + interval_ms;
        state.in_flight += 1;
        Ok(RequestPermit {
            limiter: Arc::clone(self),
            place: Place::Request {
                account_id: account.id,
            },
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
            drop(limiter.admit_in_memory(&acme, at(0)).unwrap());
        }
        let refused = limiter.admit_in_memory(&acme, at(0)).unwrap_err();
        assert_eq!(refused.service_error().code, ErrorCode::Ih3001);
        assert_eq!(refused.retry_after_delay(), Some(Duration::from_secs(20)));
        // Refusals do not use up the allowance: 20 s later one request fits.
        assert_eq!(
            code(limiter.admit_in_memory(&acme, at(19))),
            Some(ErrorCode::Ih3001)
        );
        assert!(limiter.admit_in_memory(&acme, at(20)).is_ok());
        assert_eq!(
            code(limiter.admit_in_memory(&acme, at(20))),
            Some(ErrorCode::Ih3001)
        );
        // A quiet minute restores the whole burst.
        for _ in 0..3 {
            limiter.admit_in_memory(&acme, at(200)).unwrap();
        }
    }

    #[test]
    fn requests_in_flight_are_capped_until_answered() {
        let limiter = Arc::new(RequestLimiter::new());
        let acme = account(1000, 2);
        let first = limiter.admit_in_memory(&acme, at(0)).unwrap();
        let _second = limiter.admit_in_memory(&acme, at(0)).unwrap();
        assert_eq!(
            code(limiter.admit_in_memory(&acme, at(0))),
            Some(ErrorCode::Ih3002)
        );
        drop(first);
        assert!(limiter.admit_in_memory(&acme, at(0)).is_ok());
        // Another account is not affected.
        let other = Account { id: 8, ..acme };
        assert!(limiter.admit_in_memory(&other, at(0)).is_ok());
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
