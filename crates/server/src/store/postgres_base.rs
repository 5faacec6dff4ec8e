//! The PostgreSQL store handle and the helpers its parts (keys and usage, jobs, limits,
//! tokens) share: the lower module they all import, so none imports another's.

use super::StoreError;
use deadpool_postgres::{Object, Pool};
use std::sync::Arc;
use std::time::Duration;
use tokio_postgres::{Client, GenericClient};

/// The PostgreSQL store. Cloning shares the pool and the instance's lease.
#[derive(Clone)]
pub struct PgStore {
    pub(super) pool: Pool,
    /// This instance's id in `instances` and on the jobs it accepts.
    pub(super) instance_id: Arc<str>,
    /// Renews the lease and sweeps dead instances' jobs; stopped when the
    /// last clone is dropped.
    pub(super) heartbeat: Arc<Heartbeat>,
    pub(super) lease: Duration,
    /// Failed calls by operation.
    pub(super) errors: super::StoreErrorCounts,
    /// The request-limit grants this instance holds.
    pub(super) grants: Arc<super::postgres_grants::LocalGrants>,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The URL may carry a password: never printed.
        f.debug_struct("PgStore")
            .field("instance_id", &self.instance_id)
            .finish_non_exhaustive()
    }
}

/// The renewal task, aborted on drop.
pub(super) struct Heartbeat(pub(super) std::sync::Mutex<Option<tokio::task::JoinHandle<()>>>);

impl Drop for Heartbeat {
    fn drop(&mut self) {
        let handle = self.0.get_mut().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(handle) = handle {
            handle.abort();
        }
    }
}

fn unavailable(error: impl std::error::Error + Send + Sync + 'static) -> StoreError {
    StoreError::Unavailable(Box::new(error))
}

impl From<tokio_postgres::Error> for StoreError {
    fn from(error: tokio_postgres::Error) -> Self {
        unavailable(error)
    }
}

impl From<deadpool_postgres::PoolError> for StoreError {
    fn from(error: deadpool_postgres::PoolError) -> Self {
        unavailable(error)
    }
}

pub(super) fn now_millis() -> i64 {
    attune_core::wire::Timestamp::now().unix_millis()
}

/// Gives `seconds` back to an account's total and its `day`; usage never
/// goes below zero.
pub(super) async fn refund_usage(
    client: &impl GenericClient,
    account_id: i64,
    day: &str,
    seconds: f64,
) -> Result<(), StoreError> {
    client
        .execute(
            "UPDATE accounts SET analysis_seconds_used = GREATEST(0, analysis_seconds_used - $2) \
             WHERE id = $1",
            &[&account_id, &seconds],
        )
        .await?;
    client
        .execute(
            "UPDATE daily_usage SET seconds = GREATEST(0, seconds - $3) \
             WHERE account_id = $1 AND day = $2",
            &[&account_id, &day, &seconds],
        )
        .await?;
    Ok(())
}

/// The driver's client under the pool's wrapper, whose transactions
/// implement [`GenericClient`] (the wrapper's own do not).
pub(super) fn raw(object: &mut Object) -> &mut Client {
    object
}
