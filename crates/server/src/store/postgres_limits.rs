//! Request limits counted in PostgreSQL, so every instance of a deployment
//! shares one allowance per account and per client token.
//!
//! A client token's sessions are counted exactly: each opening is one call
//! of `attune_take_slot` (migration 3), which locks the token with a
//! transaction-scoped advisory lock, sums the sessions held by instances
//! whose lease is live and counts the new one on this instance's row; each
//! closing is one decrement.
//!
//! An account's requests are admitted from grants this instance holds,
//! without a round trip per request:
//!
//! - **Places** (concurrent requests): `limit_holds.held` on this instance's
//!   row is the number of places granted to it, and the sum over instances
//!   with a live lease never exceeds the account's limit (`attune_reserve`
//!   grants under the advisory lock). A request takes a free granted place
//!   in memory and gives it back in memory when answered; an instance asks
//!   for one more place only when all of its are in use. Places left unused
//!   for a whole [`RETURN_PERIOD`] go back to the store (at once when the
//!   account was near its limit at the last visit), so a place freed on one
//!   instance can be taken on another within two periods.
//! - **Tokens** (requests per minute, GCRA): a visit reserves a batch of
//!   arrivals, each conformant at the moment of reservation, and the
//!   instance admits from the batch for at most [`TOKEN_LIFETIME_MS`]. A
//!   batch is 1 token at first, doubling while batches are used up, never
//!   more than `max(1, ⌊rpm / 60⌋)` (one second at the steady rate).
//!   Unused tokens go back when they expire, if no one reserved since (the
//!   arrival time is then exactly as if they had never been reserved);
//!   otherwise they are dropped.
//!
//! An instance admits from its grants only while its own lease is known to
//! be live (renewed less than a lease ago, less a margin); otherwise it
//! answers the store unavailable, since its grants may no longer count.

use super::postgres::{now_millis, PgStore};
use super::{AccountLimits, SlotOutcome, StoreError};
use deadpool_postgres::Pool;
use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

const MINUTE_MS: i64 = 60_000;

/// How long reserved rate tokens stay usable by the reserving instance.
pub(super) const TOKEN_LIFETIME_MS: i64 = 1_000;

/// How often unused places and expired tokens go back to the store.
pub(super) const RETURN_PERIOD: Duration = Duration::from_millis(250);

/// Visits to the store one admission may make when other requests on this
/// instance take the grants it brought back first.
const MAX_VISITS: usize = 8;

const TAKE_SLOT: &str =
    "SELECT taken, in_use, wait_ms FROM attune_take_slot($1, $2, $3, $4, $5, $6, $7)";

const RESERVE: &str = "SELECT places, tokens, tat, in_use, wait_ms \
     FROM attune_reserve($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)";

const GIVE_BACK: &str = "SELECT attune_give_back($1, $2, $3, $4, $5)";

const RELEASE: &str = "UPDATE limit_holds SET held = GREATEST(held - 1, 0) \
     WHERE subject = $1 AND instance_id = $2";

/// The subject under which an account's requests are counted.
fn account_subject(account_id: i64) -> String {
    format!("account:{account_id}")
}

/// The subject under which a client token's sessions are counted.
fn token_subject(token_id: &str) -> String {
    format!("token:{token_id}")
}

/// What this instance holds for one account.
#[derive(Debug, Default)]
struct Grant {
    /// Places granted to this instance (its `limit_holds.held`).
    places: u32,
    /// Of which in use by requests in flight.
    in_flight: u32,
    /// The fewest unused places since the last return: those went unused
    /// for the whole period.
    min_unused: u32,
    /// Whether the account was near its limit at the last visit: unused
    /// places then go back as soon as a request ends.
    near_limit: bool,
    /// Rate tokens reserved and not yet used.
    tokens: u32,
    /// When they expire (Unix ms, this process's clock).
    tokens_until_ms: i64,
    /// The GCRA arrival time the store set at the reservation, when the
    /// unused tokens may go back; `None` when they may not.
    tokens_tat: Option<i64>,
    /// The interval they were reserved at.
    interval_ms: i64,
    /// The next batch's size.
    batch: u32,
}

impl Grant {
    fn unused(&self) -> u32 {
        self.places.saturating_sub(self.in_flight)
    }

    /// Takes a place and, unless the rate is `unlimited`, a token, if both
    /// are at hand.
    fn take(&mut self, max: u32, real_now: i64, unlimited: bool) -> bool {
        let place = self.in_flight < self.places.min(max);
        let token = unlimited || (self.tokens > 0 && real_now < self.tokens_until_ms);
        if place && token {
            self.in_flight += 1;
            if !unlimited {
                self.tokens -= 1;
            }
            self.min_unused = self.min_unused.min(self.unused());
            true
        } else {
            false
        }
    }
}

/// Something to give back to the store.
#[derive(Debug, Default, PartialEq)]
struct GiveBack {
    places: u32,
    tokens: u32,
    interval_ms: i64,
    tat: i64,
}

/// This instance's grants of every account, and how long its lease is
/// known to be live. Shared by the store's clones and its heartbeat.
#[derive(Debug, Default)]
pub(super) struct LocalGrants {
    accounts: Mutex<HashMap<i64, Grant>>,
    /// Until when (Unix ms) grants may be used: the lease's end at the last
    /// renewal, less a margin.
    usable_until_ms: AtomicI64,
    /// The lease's end at the last renewal (Unix ms).
    lease_end_ms: AtomicI64,
}

impl LocalGrants {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<i64, Grant>> {
        // Every update leaves the map consistent.
        self.accounts.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether a lease renewed at `renewed_ms` comes after the previous
    /// one ended: the store may then have swept this instance's places, so
    /// its grants must be dropped ([`LocalGrants::drop_grants`]) before they
    /// are used again.
    pub(super) fn lapsed(&self, renewed_ms: i64) -> bool {
        let end = self.lease_end_ms.load(Ordering::Acquire);
        end != 0 && renewed_ms >= end
    }

    /// Forgets every place and token granted to this instance.
    pub(super) fn drop_grants(&self) {
        for grant in self.lock().values_mut() {
            grant.places = 0;
            grant.min_unused = 0;
            grant.tokens = 0;
            grant.tokens_tat = None;
        }
    }

    /// Records a lease renewed at `renewed_ms` until `until_ms`: grants are
    /// usable until then, less a third of the lease (at most 1 s).
    pub(super) fn lease_renewed(&self, renewed_ms: i64, until_ms: i64) {
        let margin = ((until_ms - renewed_ms) / 3).min(1_000);
        self.lease_end_ms.store(until_ms, Ordering::Release);
        self.usable_until_ms
            .store(until_ms - margin, Ordering::Release);
    }

    fn usable(&self, real_now: i64) -> bool {
        real_now < self.usable_until_ms.load(Ordering::Acquire)
    }

    /// Frees the place of a request of `account_id` that was answered;
    /// answers what to give back at once, if anything.
    fn release(&self, account_id: i64) -> Option<GiveBack> {
        let mut accounts = self.lock();
        let grant = accounts.get_mut(&account_id)?;
        grant.in_flight = grant.in_flight.saturating_sub(1);
        if grant.near_limit && grant.unused() > 0 {
            let places = grant.unused();
            grant.places -= places;
            grant.min_unused = 0;
            return Some(GiveBack {
                places,
                ..GiveBack::default()
            });
        }
        None
    }

    /// Takes out of the grants what went unused for a whole period and the
    /// tokens that expired by `real_now`, and forgets idle accounts.
    fn due(&self, real_now: i64) -> Vec<(i64, GiveBack)> {
        let mut due = Vec::new();
        self.lock().retain(|&account_id, grant| {
            let places = grant.min_unused.min(grant.unused());
            grant.places -= places;
            grant.min_unused = grant.unused();
            let mut back = GiveBack {
                places,
                ..GiveBack::default()
            };
            if grant.tokens > 0 && real_now >= grant.tokens_until_ms {
                grant.batch = (grant.batch / 2).max(1);
                if let Some(tat) = grant.tokens_tat.take() {
                    back.tokens = grant.tokens;
                    back.tat = tat;
                    back.interval_ms = grant.interval_ms;
                }
                grant.tokens = 0;
            }
            if back != GiveBack::default() {
                due.push((account_id, back));
            }
            grant.places > 0 || grant.in_flight > 0 || grant.tokens > 0
        });
        due
    }

    /// Puts back places that could not be given back: the store still
    /// counts them for this instance.
    fn keep(&self, account_id: i64, places: u32) {
        if places > 0 {
            self.lock().entry(account_id).or_default().places += places;
        }
    }
}

/// Gives back `back` for `account_id`; on failure the places stay granted
/// (the store still counts them) and the tokens are dropped.
async fn give_back(
    pool: &Pool,
    instance_id: &str,
    grants: &LocalGrants,
    account_id: i64,
    back: GiveBack,
) -> Result<(), StoreError> {
    let result = async {
        let client = pool.get().await?;
        let statement = client.prepare_cached(GIVE_BACK).await?;
        client
            .execute(
                &statement,
                &[
                    &account_subject(account_id),
                    &instance_id,
                    &i64::from(back.places),
                    &(i64::from(back.tokens) * back.interval_ms),
                    &back.tat,
                ],
            )
            .await?;
        Ok::<_, StoreError>(())
    }
    .await;
    if result.is_err() {
        grants.keep(account_id, back.places);
    }
    result
}

/// Gives back what went unused: called every [`RETURN_PERIOD`] by the
/// store's background task.
pub(super) async fn return_unused(pool: &Pool, instance_id: &str, grants: &LocalGrants) {
    for (account_id, back) in grants.due(now_millis()) {
        if let Err(error) = give_back(pool, instance_id, grants, account_id, back).await {
            tracing::warn!(%error, "unused request places not given back");
        }
    }
}

async fn take_slot(store: &PgStore, subject: &str, max: u32) -> Result<SlotOutcome, StoreError> {
    let client = store.pool.get().await?;
    let statement = client.prepare_cached(TAKE_SLOT).await?;
    let row = client
        .query_one(
            &statement,
            &[
                &subject,
                &&*store.instance_id,
                &0_i64,
                &now_millis(),
                &i64::from(max),
                &0_i64,
                &0_i64,
            ],
        )
        .await?;
    let taken: bool = row.try_get(0)?;
    let in_use: Option<i64> = row.try_get(1)?;
    Ok(if taken {
        SlotOutcome::Taken
    } else {
        SlotOutcome::Full(count(in_use))
    })
}

fn count(in_use: Option<i64>) -> u32 {
    in_use
        .and_then(|n| u32::try_from(n).ok())
        .unwrap_or(u32::MAX)
}

/// What one visit to the store asks for and gives back.
struct Visit {
    places: u32,
    tokens: u32,
    back: GiveBack,
}

pub(super) async fn admit_request(
    store: &PgStore,
    account_id: i64,
    limits: AccountLimits,
    now_ms: i64,
) -> Result<SlotOutcome, StoreError> {
    let max = limits.concurrent_requests;
    if max == 0 {
        // The store reads 0 as no limit; an account limited to 0 admits none.
        return Ok(SlotOutcome::Full(0));
    }
    let rate = limits.requests_per_minute.max(1);
    // Above one request a millisecond the GCRA interval rounds to 0: no
    // rate limit, as in memory on the embedded store.
    let unlimited = MINUTE_MS / i64::from(rate) == 0;
    let interval_ms = (MINUTE_MS / i64::from(rate)).max(1);
    let batch_cap = (rate / 60).max(1);
    let grants = &store.grants;
    for _ in 0..MAX_VISITS {
        let real_now = now_millis();
        if !grants.usable(real_now) {
            return Err(StoreError::Unavailable(
                "this instance's lease is not known to be live; its request places may not count"
                    .into(),
            ));
        }
        let visit = {
            let mut accounts = grants.lock();
            let grant = accounts.entry(account_id).or_default();
            if grant.take(max, real_now, unlimited) {
                return Ok(SlotOutcome::Taken);
            }
            let mut visit = Visit {
                places: u32::from(grant.in_flight >= grant.places.min(max)),
                tokens: 0,
                back: GiveBack::default(),
            };
            if !unlimited && (grant.tokens == 0 || real_now >= grant.tokens_until_ms) {
                if grant.tokens > 0 {
                    // Expired unused: give them back on the way.
                    if let Some(tat) = grant.tokens_tat.take() {
                        visit.back = GiveBack {
                            places: 0,
                            tokens: grant.tokens,
                            interval_ms: grant.interval_ms,
                            tat,
                        };
                    }
                    grant.tokens = 0;
                    grant.batch = (grant.batch / 2).max(1);
                } else {
                    grant.batch = grant.batch.saturating_mul(2);
                }
                grant.batch = grant.batch.clamp(1, batch_cap);
                visit.tokens = grant.batch;
            }
            visit
        };
        let tolerance_ms = MINUTE_MS - interval_ms;
        let client = store.pool.get().await?;
        let statement = client.prepare_cached(RESERVE).await?;
        let row = client
            .query_one(
                &statement,
                &[
                    &account_subject(account_id),
                    &&*store.instance_id,
                    &now_ms,
                    &real_now,
                    &i64::from(max),
                    &i64::from(visit.places),
                    &interval_ms,
                    &tolerance_ms.max(0),
                    &i64::from(visit.tokens),
                    &(i64::from(visit.back.tokens) * visit.back.interval_ms),
                    &visit.back.tat,
                ],
            )
            .await?;
        drop(client);
        let places: i64 = row.try_get(0)?;
        let tokens: i64 = row.try_get(1)?;
        let tat: Option<i64> = row.try_get(2)?;
        let in_use: Option<i64> = row.try_get(3)?;
        let wait_ms: Option<i64> = row.try_get(4)?;
        let places = u32::try_from(places).unwrap_or(0);
        let tokens = u32::try_from(tokens).unwrap_or(0);
        {
            let mut accounts = grants.lock();
            let grant = accounts.entry(account_id).or_default();
            grant.places += places;
            if let Some(in_use) = in_use {
                grant.near_limit = in_use + i64::from(places) + 1 >= i64::from(max);
            }
            if tokens > 0 {
                // Tokens added to ones still held cannot go back exactly:
                // another reservation may have come between.
                grant.tokens_tat = if grant.tokens == 0 { tat } else { None };
                grant.tokens += tokens;
                grant.tokens_until_ms = real_now + TOKEN_LIFETIME_MS;
                grant.interval_ms = interval_ms;
            }
        }
        if let Some(wait) = wait_ms {
            // A place was free, the minute's allowance is not.
            let wait = u64::try_from(wait).unwrap_or(0);
            return Ok(SlotOutcome::RateLimited(Duration::from_millis(wait)));
        }
        if visit.places > 0 && places == 0 {
            return Ok(SlotOutcome::Full(count(in_use)));
        }
    }
    // Every grant brought back went to other requests of this instance
    // first: the account is as busy as its limits allow.
    let accounts = grants.lock();
    let in_flight = accounts.get(&account_id).map_or(0, |g| g.in_flight);
    Ok(SlotOutcome::Full(in_flight))
}

/// Frees the place of a request of `account_id` answered on this instance.
pub(super) fn release_request(store: &PgStore, account_id: i64) {
    let Some(back) = store.grants.release(account_id) else {
        return;
    };
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        // Outside a runtime: the places stay granted until the lease lapses.
        return;
    };
    let store = store.clone();
    runtime.spawn(async move {
        let grants = Arc::clone(&store.grants);
        if let Err(error) =
            give_back(&store.pool, &store.instance_id, &grants, account_id, back).await
        {
            tracing::warn!(%error, "request place not given back");
        }
    });
}

pub(super) async fn open_token_session(
    store: &PgStore,
    token_id: &str,
    max: u32,
) -> Result<SlotOutcome, StoreError> {
    take_slot(store, &token_subject(token_id), max).await
}

pub(super) async fn close_token_session(store: &PgStore, token_id: &str) -> Result<(), StoreError> {
    let client = store.pool.get().await?;
    let statement = client.prepare_cached(RELEASE).await?;
    client
        .execute(
            &statement,
            &[&token_subject(token_id), &&*store.instance_id],
        )
        .await?;
    Ok(())
}

/// Deletes the places of instances whose lease lapsed by `now` (or that are
/// gone): they no longer count, and the table should not keep them.
pub(super) async fn sweep_slots(pool: &Pool, now: i64) -> Result<u64, StoreError> {
    let client = pool.get().await?;
    Ok(client
        .execute(
            "DELETE FROM limit_holds h WHERE NOT EXISTS (SELECT 1 FROM instances i \
             WHERE i.id = h.instance_id AND i.lease_expires_at > $1)",
            &[&now],
        )
        .await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(places: u32, in_flight: u32, tokens: u32) -> Grant {
        Grant {
            places,
            in_flight,
            tokens,
            tokens_until_ms: 1_000,
            tokens_tat: Some(5_000),
            interval_ms: 100,
            batch: tokens,
            ..Grant::default()
        }
    }

    #[test]
    fn a_request_needs_a_free_place_and_a_live_token() {
        let mut g = grant(2, 1, 1);
        assert!(
            !g.take(1, 0, false),
            "the limit was lowered to the place in use"
        );
        assert!(!g.take(2, 1_000, false), "the token expired");
        assert!(g.take(2, 999, false));
        assert_eq!((g.in_flight, g.tokens), (2, 0));
        assert!(!g.take(3, 0, false), "no place left");
        // Above 60 000 a minute, places alone count.
        let mut g = grant(1, 0, 0);
        assert!(g.take(1, 0, true));
        assert!(!g.take(1, 0, true));
    }

    #[test]
    fn places_unused_for_a_whole_period_and_expired_tokens_go_back() {
        let grants = LocalGrants::default();
        grants.lock().insert(7, grant(3, 1, 4));
        // A request answered: two unused, but not for a whole period yet.
        assert_eq!(grants.due(0), vec![]);
        grants.release(7);
        assert_eq!(grants.lock()[&7].unused(), 3);
        // One period on: the two unused throughout go back; the one freed
        // since stays for another period. The tokens expired at 1 000.
        assert_eq!(
            grants.due(1_000),
            vec![(
                7,
                GiveBack {
                    places: 2,
                    tokens: 4,
                    interval_ms: 100,
                    tat: 5_000
                }
            )]
        );
        assert_eq!(grants.due(1_250)[0].1.places, 1);
        // Nothing held: the account is forgotten.
        assert!(grants.lock().is_empty());
    }

    #[test]
    fn near_its_limit_an_account_gives_back_a_place_as_soon_as_it_is_free() {
        let grants = LocalGrants::default();
        grants.lock().insert(
            7,
            Grant {
                near_limit: true,
                ..grant(2, 2, 0)
            },
        );
        assert_eq!(grants.release(7).map(|b| b.places), Some(1));
        assert_eq!(grants.lock()[&7].places, 1);
    }

    #[test]
    fn grants_are_usable_only_while_the_lease_is_known_live() {
        let grants = LocalGrants::default();
        assert!(!grants.usable(0), "no lease yet");
        grants.lease_renewed(0, 3_000);
        assert!(grants.usable(1_999) && !grants.usable(2_000));
        assert!(!grants.lapsed(2_999) && grants.lapsed(3_000));
        grants.lock().insert(7, grant(3, 1, 4));
        grants.drop_grants();
        let g = &grants.lock()[&7];
        assert_eq!((g.places, g.tokens, g.in_flight), (0, 0, 1));
    }
}
