//! Accounts, API keys, client tokens, usage and jobs behind the [`KeyStore`],
//! [`TokenStore`], [`UsageStore`] and [`JobStore`] traits, so the embedded
//! SQLite store and a PostgreSQL store for multi-instance deployments are
//! interchangeable.

mod jobs;
mod postgres;
mod postgres_base;
mod postgres_grants;
mod postgres_jobs;
mod postgres_limits;
mod postgres_schema;
mod postgres_tokens;
mod sqlite;
mod sqlite_jobs;
mod sqlite_tokens;
mod tokens;
mod usage;

pub use jobs::{ClaimedJob, JobRecord, JobStore, NewJob, QueuedMedia, SpeakerTurn};
pub use postgres::{is_postgres_url, PgStoreOptions};
pub use postgres_base::PgStore;
pub use sqlite::SqliteStore;
pub use tokens::{BudgetOutcome, NewToken, TokenCaps, TokenRecord, TokenStore};
pub use usage::{QuotaOutcome, SlotOutcome, Usage, UsageStore};

use crate::keys::{ApiKey, KeyHash, Scope};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use std::error::Error as StdError;
use std::future::Future;
use std::pin::Pin;
use time::OffsetDateTime;

/// What a store method returns: a boxed future, so `KeyStore` can be used as
/// `dyn KeyStore` and implemented by stores whose I/O is asynchronous.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// Store calls that failed with [`StoreError::Unavailable`], counted by
/// operation (the store trait's method name, such as `find_key` or
/// `claim_job`): what `/metrics` exports as `attune_store_operation_errors`.
/// Clones share the counts.
#[derive(Debug, Clone, Default)]
pub struct StoreErrorCounts(Family<OperationLabels, Counter>);

/// The label of [`StoreErrorCounts`].
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OperationLabels {
    /// The store method.
    pub operation: &'static str,
}

impl StoreErrorCounts {
    /// The counter family, for a metrics registry.
    pub fn family(&self) -> Family<OperationLabels, Counter> {
        self.0.clone()
    }

    /// How many calls of `operation` failed so far.
    pub fn get(&self, operation: &'static str) -> u64 {
        self.0.get_or_create(&OperationLabels { operation }).get()
    }

    pub(crate) fn op(&self, operation: &'static str) -> CountedOp {
        CountedOp {
            counts: self.clone(),
            operation,
        }
    }
}

/// One store operation about to run, counted if it fails unavailable.
pub(crate) struct CountedOp {
    counts: StoreErrorCounts,
    operation: &'static str,
}

impl CountedOp {
    /// Runs `call` and counts its failure.
    pub(crate) fn run<'a, T, F>(self, call: F) -> StoreFuture<'a, T>
    where
        F: Future<Output = Result<T, StoreError>> + Send + 'a,
        T: 'a,
    {
        Box::pin(async move {
            let result = call.await;
            if let Err(StoreError::Unavailable(_)) = &result {
                self.counts
                    .0
                    .get_or_create(&OperationLabels {
                        operation: self.operation,
                    })
                    .inc();
            }
            result
        })
    }
}

/// A store failure.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// No key has this id.
    #[error("no API key has the id `{0}`")]
    UnknownKey(String),
    /// No account has this id.
    #[error("no account has the id {0}")]
    UnknownAccount(i64),
    /// No job has this id.
    #[error("no job has the id `{0}`")]
    UnknownJob(String),
    /// An account name that the store will not accept.
    #[error("invalid account name `{0}`: use 1 to 64 letters, digits, `.`, `_` or `-`")]
    InvalidAccountName(String),
    /// The store cannot be reached or failed; requests that need it answer
    /// `ih1003` and may be retried.
    // The cause is in the message, not also a `#[source]`: a report of the whole chain
    // (`{:#}`) would print it twice.
    #[error("the store is unavailable: {0}")]
    Unavailable(Box<dyn StdError + Send + Sync>),
    /// The store holds data this build cannot read (a newer schema, or a value
    /// outside what this build writes).
    #[error("the store holds data this build cannot read: {0}")]
    Incompatible(String),
}

/// Per-account limits, stored with the account. Requests per minute and
/// concurrent requests are counted in memory on the embedded store and in
/// the store on a shared one (see [`UsageStore::counts_requests`]); the
/// quotas are always counted in the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AccountLimits {
    /// Requests accepted per minute (`ih3001` beyond).
    pub requests_per_minute: u32,
    /// Requests in progress at once (`ih3002` beyond).
    pub concurrent_requests: u32,
    /// Seconds of media the account may analyze in total (`ih3003` beyond).
    pub analysis_quota_seconds: u64,
    /// Seconds of media the account may analyze per UTC day (`ih3004` beyond).
    pub daily_quota_seconds: u64,
}

impl Default for AccountLimits {
    /// The interface leaves the numbers open; these suit a development or
    /// single-team deployment: 600 requests a minute, 8 at once, 1000 hours of
    /// media in total and 24 hours a day.
    fn default() -> Self {
        AccountLimits {
            requests_per_minute: 600,
            concurrent_requests: 8,
            analysis_quota_seconds: 1000 * 3600,
            daily_quota_seconds: 24 * 3600,
        }
    }
}

/// An account: who keys belong to and whose limits apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    /// Store-assigned id.
    pub id: i64,
    /// Unique name, as given to `attune keys create --account`.
    pub name: String,
    /// Whether the subscription is active (`ih3005` when not).
    pub subscription_active: bool,
    /// The account's limits.
    pub limits: AccountLimits,
}

impl Account {
    /// Whether `name` is acceptable as an account name: 1 to 64 ASCII letters,
    /// digits, `.`, `_` or `-`, so names are safe in logs and tables.
    pub fn is_valid_name(name: &str) -> bool {
        (1..=64).contains(&name.len())
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    }
}

/// Whether a key may still authenticate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeyStatus {
    /// The key authenticates.
    Active,
    /// The key was revoked and answers `ih2001`, like an unknown key.
    Revoked,
}

impl KeyStatus {
    /// The stored and displayed spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            KeyStatus::Active => "active",
            KeyStatus::Revoked => "revoked",
        }
    }
}

/// What the store knows about a key: everything but the key itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRecord {
    /// Public identifier, e.g. `key_1f2e3d4c5b6a7988`, used to revoke the key.
    pub id: String,
    /// The owning account's id.
    pub account_id: i64,
    /// The owning account's name.
    pub account_name: String,
    /// The key's first characters, to tell keys apart in listings.
    pub display_prefix: String,
    /// Granted scopes, sorted.
    pub scopes: Vec<Scope>,
    /// Whether the key authenticates.
    pub status: KeyStatus,
    /// When the key was created (UTC, whole seconds).
    pub created_at: OffsetDateTime,
    /// When the key was revoked, if it was.
    pub revoked_at: Option<OffsetDateTime>,
}

/// A key just created: its record and the secret, which is never stored and
/// must be shown to the user now or lost.
#[derive(Debug)]
pub struct CreatedKey {
    /// The stored record.
    pub record: KeyRecord,
    /// The secret key.
    pub key: ApiKey,
}

/// Accounts and API keys.
///
/// Methods return boxed futures so the trait is object-safe; a blocking
/// backend must run its I/O off the async worker threads.
pub trait KeyStore: Send + Sync {
    /// The account named `name`, created with `limits` if it does not exist
    /// (an existing account keeps its stored limits).
    fn ensure_account<'a>(
        &'a self,
        name: &'a str,
        limits: AccountLimits,
    ) -> StoreFuture<'a, Account>;

    /// Mints and stores a new active key for an account. Scopes are stored
    /// sorted and without repeats.
    fn create_key<'a>(
        &'a self,
        account_id: i64,
        scopes: &'a [Scope],
    ) -> StoreFuture<'a, CreatedKey>;

    /// Every key, oldest first.
    fn list_keys(&self) -> StoreFuture<'_, Vec<KeyRecord>>;

    /// Revokes a key and answers its record. Revoking a revoked key changes
    /// nothing and succeeds.
    fn revoke_key<'a>(&'a self, key_id: &'a str) -> StoreFuture<'a, KeyRecord>;

    /// The key whose hash is `hash`, whatever its status.
    fn find_key(&self, hash: KeyHash) -> StoreFuture<'_, Option<KeyRecord>>;

    /// A counter that moves whenever a key or a client token is revoked through this store
    /// instance, so running stream sessions know when to read their credential again without
    /// a query per frame. A store that cannot tell answers a constant: sessions then
    /// recheck on a timer only.
    fn revocations(&self) -> u64 {
        0
    }

    /// This store's failed calls by operation, when it counts them.
    fn error_counts(&self) -> Option<StoreErrorCounts> {
        None
    }

    /// How many keys were ever created, revoked ones included.
    fn key_count(&self) -> StoreFuture<'_, u64>;

    /// The account with id `account_id`.
    fn account(&self, account_id: i64) -> StoreFuture<'_, Option<Account>>;

    /// Answers once the store has shown it can serve a query: what `/readyz`
    /// asks. The default counts keys; stores with a cheaper probe override it.
    fn ping(&self) -> StoreFuture<'_, ()> {
        Box::pin(async move { self.key_count().await.map(drop) })
    }

    /// Sets an account's subscription flag and limits, answering the updated
    /// account.
    fn update_account(
        &self,
        account_id: i64,
        subscription_active: bool,
        limits: AccountLimits,
    ) -> StoreFuture<'_, Account>;
}
