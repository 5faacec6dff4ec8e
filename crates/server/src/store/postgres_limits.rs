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

use super::postgres_base::{now_millis, PgStore};
use super::postgres_grants::{GiveBack, LocalGrants};
use super::{AccountLimits, SlotOutcome, StoreError};
use deadpool_postgres::Pool;
use std::sync::Arc;
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
