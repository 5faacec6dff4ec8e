//! Request limits counted in PostgreSQL, so every instance of a deployment
//! shares one allowance per account and per client token.
//!
//! Each admission is one call of `attune_take_slot` (migration 3): it locks
//! the subject with a transaction-scoped advisory lock, sums the places held
//! by instances whose lease is live, applies the GCRA rate and counts the
//! new place on this instance's row, all in one round trip; a release is one
//! decrement. Places are counted per instance, so a killed instance's stop
//! counting when its lease lapses and its rows are deleted by the next sweep.

use super::postgres::{now_millis, PgStore};
use super::{AccountLimits, SlotOutcome, StoreError};
use deadpool_postgres::Pool;
use std::time::Duration;

const MINUTE_MS: i64 = 60_000;

const TAKE_SLOT: &str =
    "SELECT taken, in_use, wait_ms FROM attune_take_slot($1, $2, $3, $4, $5, $6, $7)";

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

async fn take_slot(
    store: &PgStore,
    subject: &str,
    now_ms: i64,
    max: u32,
    interval_ms: i64,
) -> Result<SlotOutcome, StoreError> {
    let client = store.pool.get().await?;
    let statement = client.prepare_cached(TAKE_SLOT).await?;
    let tolerance_ms = if interval_ms > 0 {
        MINUTE_MS - interval_ms
    } else {
        0
    };
    let row = client
        .query_one(
            &statement,
            &[
                &subject,
                &&*store.instance_id,
                &now_ms,
                &now_millis(),
                &i64::from(max),
                &interval_ms,
                &tolerance_ms,
            ],
        )
        .await?;
    let taken: bool = row.try_get(0)?;
    let in_use: Option<i64> = row.try_get(1)?;
    let wait_ms: Option<i64> = row.try_get(2)?;
    Ok(match (taken, wait_ms) {
        (true, _) => SlotOutcome::Taken,
        (false, Some(wait)) => {
            SlotOutcome::RateLimited(Duration::from_millis(u64::try_from(wait).unwrap_or(0)))
        }
        (false, None) => SlotOutcome::Full(
            in_use
                .and_then(|n| u32::try_from(n).ok())
                .unwrap_or(u32::MAX),
        ),
    })
}

pub(super) async fn admit_request(
    store: &PgStore,
    account_id: i64,
    limits: AccountLimits,
    now_ms: i64,
) -> Result<SlotOutcome, StoreError> {
    if limits.concurrent_requests == 0 {
        // The store reads 0 as no limit; an account limited to 0 admits none.
        return Ok(SlotOutcome::Full(0));
    }
    let interval_ms = MINUTE_MS / i64::from(limits.requests_per_minute.max(1));
    take_slot(
        store,
        &account_subject(account_id),
        now_ms,
        limits.concurrent_requests,
        interval_ms.max(1),
    )
    .await
}

pub(super) async fn open_token_session(
    store: &PgStore,
    token_id: &str,
    max: u32,
) -> Result<SlotOutcome, StoreError> {
    take_slot(store, &token_subject(token_id), 0, max, 0).await
}

async fn release(store: &PgStore, subject: &str) -> Result<(), StoreError> {
    let client = store.pool.get().await?;
    let statement = client.prepare_cached(RELEASE).await?;
    client
        .execute(&statement, &[&subject, &&*store.instance_id])
        .await?;
    Ok(())
}

pub(super) async fn release_request(store: &PgStore, account_id: i64) -> Result<(), StoreError> {
    release(store, &account_subject(account_id)).await
}

pub(super) async fn close_token_session(store: &PgStore, token_id: &str) -> Result<(), StoreError> {
    release(store, &token_subject(token_id)).await
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
