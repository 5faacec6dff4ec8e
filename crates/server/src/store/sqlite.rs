//! The embedded store: one SQLite file, schema migrated on open, every call
//! run on tokio's blocking pool.

use super::{
    Account, AccountLimits, CreatedKey, KeyRecord, KeyStatus, KeyStore, QuotaOutcome, StoreError,
    StoreFuture, Usage, UsageStore,
};
use crate::ids::{hex, random_bytes};
use crate::keys::{ApiKey, KeyHash, Scope};
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use time::{Date, OffsetDateTime};

/// Schema steps in order; `PRAGMA user_version` records how many were applied,
/// so opening a store applies only the ones it lacks. Never edit a step that
/// has shipped: append a new one.
const MIGRATIONS: &[&str] = &[
    // 1: accounts and API keys.
    "CREATE TABLE accounts (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        subscription_active INTEGER NOT NULL,
        requests_per_minute INTEGER NOT NULL,
        concurrent_requests INTEGER NOT NULL,
        analysis_quota_seconds INTEGER NOT NULL,
        daily_quota_seconds INTEGER NOT NULL,
        created_at INTEGER NOT NULL
    ) STRICT;
    CREATE TABLE api_keys (
        id TEXT PRIMARY KEY,
        account_id INTEGER NOT NULL REFERENCES accounts(id),
        display_prefix TEXT NOT NULL,
        key_hash BLOB NOT NULL UNIQUE,
        scopes TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('active', 'revoked')),
        created_at INTEGER NOT NULL,
        revoked_at INTEGER
    ) STRICT;",
    // 2: usage, client tokens and jobs. Times here are Unix milliseconds, the
    // precision of the interface's date-times.
    "ALTER TABLE accounts ADD COLUMN analysis_seconds_used REAL NOT NULL DEFAULT 0;
    CREATE TABLE daily_usage (
        account_id INTEGER NOT NULL REFERENCES accounts(id),
        day TEXT NOT NULL,
        seconds REAL NOT NULL,
        PRIMARY KEY (account_id, day)
    ) STRICT;
    CREATE TABLE client_tokens (
        id TEXT PRIMARY KEY,
        token_hash BLOB NOT NULL UNIQUE,
        account_id INTEGER NOT NULL REFERENCES accounts(id),
        key_id TEXT NOT NULL REFERENCES api_keys(id),
        scopes TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL,
        revoked_at INTEGER,
        max_duration_seconds INTEGER,
        max_bytes INTEGER,
        max_concurrent INTEGER NOT NULL,
        max_video_seconds REAL,
        allowed_origins TEXT,
        video_seconds_used REAL NOT NULL DEFAULT 0
    ) STRICT;
    CREATE TABLE jobs (
        id TEXT PRIMARY KEY,
        account_id INTEGER NOT NULL REFERENCES accounts(id),
        model TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'completed', 'failed')),
        correlation_id TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        result TEXT,
        error_code TEXT,
        error_message TEXT,
        billed_seconds REAL NOT NULL,
        billed_day TEXT NOT NULL,
        token_id TEXT
    ) STRICT;
    CREATE INDEX jobs_unfinished ON jobs(status) WHERE status IN ('queued', 'running');
    CREATE INDEX jobs_expires_at ON jobs(expires_at);",
    // 3: the speaker turns a completed job's analysis read, for its HTML report
    // (`[[start, end, speaker], ...]`; NULL for jobs completed before).
    "ALTER TABLE jobs ADD COLUMN speaker_turns TEXT;",
];

/// How long a writer waits for another process (say `attune keys create`
/// beside a running server) to release the database before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

const KEY_COLUMNS: &str = "k.id, k.account_id, a.name, k.display_prefix, k.scopes, k.status, \
     k.created_at, k.revoked_at FROM api_keys k JOIN accounts a ON a.id = k.account_id";

/// The embedded SQLite store.
///
/// One connection behind a mutex: SQLite serialises writers anyway, and the
/// calls are short. Cloning shares the connection.
#[derive(Clone)]
pub struct SqliteStore {
    /// The connection, locked by whichever blocking task is using it.
    conn: Arc<Mutex<Connection>>,
    /// Where the file is, for messages.
    path: PathBuf,
    /// Revocations made through this store (see [`KeyStore::revocations`]).
    revocations: Arc<AtomicU64>,
    /// Failed calls by operation.
    pub(super) errors: super::StoreErrorCounts,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl SqliteStore {
    /// Opens (creating it and its directory if needed) the store at `path` and
    /// brings its schema up to date.
    pub async fn open(path: impl Into<PathBuf>) -> Result<SqliteStore, StoreError> {
        let path = path.into();
        let opened = path.clone();
        let conn = tokio::task::spawn_blocking(move || open_connection(&opened))
            .await
            .map_err(|e| StoreError::Unavailable(Box::new(e)))??;
        Ok(SqliteStore {
            conn: Arc::new(Mutex::new(conn)),
            path,
            revocations: Arc::new(AtomicU64::new(0)),
            errors: super::StoreErrorCounts::default(),
        })
    }

    /// The file this store lives in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Counts one committed revocation (bumped after the commit, so whoever sees the new
    /// count reads the revoked state).
    pub(super) fn revocation_counter(&self) -> Arc<AtomicU64> {
        Arc::clone(&self.revocations)
    }

    /// Runs `f` with the connection on the blocking pool, so SQLite's
    /// synchronous I/O never stalls an async worker thread.
    pub(super) async fn call<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let conn = Arc::clone(&self.conn);
        tokio::task::spawn_blocking(move || {
            // A panic mid-call leaves no half-done write behind (an open
            // transaction rolls back when dropped), so a poisoned lock is safe
            // to keep using.
            let mut conn = conn.lock().unwrap_or_else(PoisonError::into_inner);
            f(&mut conn)
        })
        .await
        .map_err(|e| StoreError::Unavailable(Box::new(e)))?
    }
}

fn unavailable(context: String, error: impl std::fmt::Display) -> StoreError {
    StoreError::Unavailable(format!("{context}: {error}").into())
}

impl From<rusqlite::Error> for StoreError {
    fn from(error: rusqlite::Error) -> Self {
        StoreError::Unavailable(Box::new(error))
    }
}

fn open_connection(path: &Path) -> Result<Connection, StoreError> {
    if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| unavailable(format!("cannot create {}", dir.display()), e))?;
    }
    let mut conn = Connection::open(path)
        .map_err(|e| unavailable(format!("cannot open {}", path.display()), e))?;
    configure(&mut conn)?;
    Ok(conn)
}

fn configure(conn: &mut Connection) -> Result<(), StoreError> {
    conn.busy_timeout(BUSY_TIMEOUT)?;
    // WAL lets a reader (the server) and a writer (`attune keys`) work at once.
    conn.pragma_update_and_check(None, "journal_mode", "WAL", |_| Ok(()))?;
    conn.pragma_update(None, "foreign_keys", true)?;
    migrate(conn)
}

fn migrate(conn: &mut Connection) -> Result<(), StoreError> {
    // IMMEDIATE takes the write lock up front, so two processes opening a new
    // store at once cannot both run the same step.
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let applied: i64 = tx.query_row("PRAGMA user_version", [], |row| row.get(0))?;
    let applied = usize::try_from(applied).unwrap_or(usize::MAX);
    if applied > MIGRATIONS.len() {
        return Err(StoreError::Incompatible(format!(
            "schema version {applied} is newer than this build's {}",
            MIGRATIONS.len()
        )));
    }
    for step in &MIGRATIONS[applied..] {
        tx.execute_batch(step)?;
    }
    tx.pragma_update(None, "user_version", MIGRATIONS.len() as i64)?;
    tx.commit()?;
    Ok(())
}

pub(super) fn now_seconds() -> i64 {
    OffsetDateTime::now_utc().unix_timestamp()
}

fn datetime(seconds: i64) -> Result<OffsetDateTime, StoreError> {
    OffsetDateTime::from_unix_timestamp(seconds)
        .map_err(|_| StoreError::Incompatible(format!("timestamp {seconds} out of range")))
}

pub(super) fn to_sql_int(value: u64) -> i64 {
    // Limits come from this build's own types; anything above i64::MAX is
    // "unlimited" in every practical sense.
    i64::try_from(value).unwrap_or(i64::MAX)
}

pub(super) fn from_sql_int<T: TryFrom<i64>>(value: i64, column: &str) -> Result<T, StoreError> {
    T::try_from(value)
        .map_err(|_| StoreError::Incompatible(format!("{column} holds {value}, out of range")))
}

/// Scopes as stored: the wire spellings separated by spaces, as in an OAuth
/// `scope` string.
pub(super) fn join_scopes(scopes: &[Scope]) -> String {
    scopes
        .iter()
        .map(|scope| scope.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

pub(super) fn split_scopes(text: &str) -> Result<Vec<Scope>, StoreError> {
    text.split_whitespace()
        .map(|name| {
            name.parse()
                .map_err(|_| StoreError::Incompatible(format!("unknown stored scope `{name}`")))
        })
        .collect()
}

/// A key row as read, before its text columns are checked.
struct KeyRow {
    id: String,
    account_id: i64,
    account_name: String,
    display_prefix: String,
    scopes: String,
    status: String,
    created_at: i64,
    revoked_at: Option<i64>,
}

impl KeyRow {
    fn read(row: &rusqlite::Row<'_>) -> rusqlite::Result<KeyRow> {
        Ok(KeyRow {
            id: row.get(0)?,
            account_id: row.get(1)?,
            account_name: row.get(2)?,
            display_prefix: row.get(3)?,
            scopes: row.get(4)?,
            status: row.get(5)?,
            created_at: row.get(6)?,
            revoked_at: row.get(7)?,
        })
    }

    fn into_record(self) -> Result<KeyRecord, StoreError> {
        let status = match self.status.as_str() {
            "active" => KeyStatus::Active,
            "revoked" => KeyStatus::Revoked,
            other => {
                return Err(StoreError::Incompatible(format!(
                    "unknown key status `{other}`"
                )))
            }
        };
        Ok(KeyRecord {
            id: self.id,
            account_id: self.account_id,
            account_name: self.account_name,
            display_prefix: self.display_prefix,
            scopes: split_scopes(&self.scopes)?,
            status,
            created_at: datetime(self.created_at)?,
            revoked_at: self.revoked_at.map(datetime).transpose()?,
        })
    }
}

fn key_by_id(conn: &Connection, key_id: &str) -> Result<Option<KeyRecord>, StoreError> {
    conn.query_row(
        &format!("SELECT {KEY_COLUMNS} WHERE k.id = ?1"),
        [key_id],
        KeyRow::read,
    )
    .optional()?
    .map(KeyRow::into_record)
    .transpose()
}

fn account_by_name(conn: &Connection, name: &str) -> Result<Option<Account>, StoreError> {
    account_where(conn, "name = ?1", name)
}

pub(super) fn account_by_id(conn: &Connection, id: i64) -> Result<Option<Account>, StoreError> {
    account_where(conn, "id = ?1", id)
}

fn account_where(
    conn: &Connection,
    condition: &str,
    value: impl rusqlite::ToSql,
) -> Result<Option<Account>, StoreError> {
    let row = conn
        .query_row(
            &format!(
                "SELECT id, name, subscription_active, requests_per_minute, concurrent_requests, \
                 analysis_quota_seconds, daily_quota_seconds FROM accounts WHERE {condition}"
            ),
            [value],
            |row| {
                Ok((
                    row.get::<_, i64>(0)?,
                    row.get::<_, String>(1)?,
                    row.get::<_, bool>(2)?,
                    row.get::<_, i64>(3)?,
                    row.get::<_, i64>(4)?,
                    row.get::<_, i64>(5)?,
                    row.get::<_, i64>(6)?,
                ))
            },
        )
        .optional()?;
    let Some((id, name, active, rpm, concurrent, quota, daily)) = row else {
        return Ok(None);
    };
    Ok(Some(Account {
        id,
        name,
        subscription_active: active,
        limits: AccountLimits {
            requests_per_minute: from_sql_int(rpm, "requests_per_minute")?,
            concurrent_requests: from_sql_int(concurrent, "concurrent_requests")?,
            analysis_quota_seconds: from_sql_int(quota, "analysis_quota_seconds")?,
            daily_quota_seconds: from_sql_int(daily, "daily_quota_seconds")?,
        },
    }))
}

impl KeyStore for SqliteStore {
    fn error_counts(&self) -> Option<super::StoreErrorCounts> {
        Some(self.errors.clone())
    }

    fn ensure_account<'a>(
        &'a self,
        name: &'a str,
        limits: AccountLimits,
    ) -> StoreFuture<'a, Account> {
        let name = name.to_owned();
        self.errors.op("ensure_account").run(self.call(move |conn| {
            if !Account::is_valid_name(&name) {
                return Err(StoreError::InvalidAccountName(name));
            }
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            tx.execute(
                "INSERT INTO accounts (name, subscription_active, requests_per_minute, \
                 concurrent_requests, analysis_quota_seconds, daily_quota_seconds, created_at) \
                 VALUES (?1, 1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (name) DO NOTHING",
                params![
                    name,
                    i64::from(limits.requests_per_minute),
                    i64::from(limits.concurrent_requests),
                    to_sql_int(limits.analysis_quota_seconds),
                    to_sql_int(limits.daily_quota_seconds),
                    now_seconds(),
                ],
            )?;
            let account = account_by_name(&tx, &name)?.ok_or_else(|| {
                StoreError::Incompatible(format!("account `{name}` vanished after insert"))
            })?;
            tx.commit()?;
            Ok(account)
        }))
    }

    fn create_key<'a>(
        &'a self,
        account_id: i64,
        scopes: &'a [Scope],
    ) -> StoreFuture<'a, CreatedKey> {
        let mut scopes = scopes.to_vec();
        scopes.sort();
        scopes.dedup();
        self.errors.op("create_key").run(self.call(move |conn| {
            let key = ApiKey::generate();
            let key_id = format!("key_{}", hex(&random_bytes::<8>()));
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let exists: bool = tx.query_row(
                "SELECT EXISTS (SELECT 1 FROM accounts WHERE id = ?1)",
                [account_id],
                |row| row.get(0),
            )?;
            if !exists {
                return Err(StoreError::UnknownAccount(account_id));
            }
            tx.execute(
                "INSERT INTO api_keys (id, account_id, display_prefix, key_hash, scopes, status, \
                 created_at) VALUES (?1, ?2, ?3, ?4, ?5, 'active', ?6)",
                params![
                    key_id,
                    account_id,
                    key.display_prefix(),
                    key.hash().as_bytes(),
                    join_scopes(&scopes),
                    now_seconds(),
                ],
            )?;
            let record = key_by_id(&tx, &key_id)?.ok_or_else(|| {
                StoreError::Incompatible(format!("key `{key_id}` vanished after insert"))
            })?;
            tx.commit()?;
            Ok(CreatedKey { record, key })
        }))
    }

    fn list_keys(&self) -> StoreFuture<'_, Vec<KeyRecord>> {
        self.errors.op("list_keys").run(self.call(|conn| {
            let mut statement = conn.prepare(&format!(
                "SELECT {KEY_COLUMNS} ORDER BY k.created_at, k.rowid"
            ))?;
            let rows = statement
                .query_map([], KeyRow::read)?
                .collect::<Result<Vec<_>, _>>()?;
            rows.into_iter().map(KeyRow::into_record).collect()
        }))
    }

    fn revoke_key<'a>(&'a self, key_id: &'a str) -> StoreFuture<'a, KeyRecord> {
        let key_id = key_id.to_owned();
        let revocations = self.revocation_counter();
        self.errors.op("revoke_key").run(self.call(move |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            tx.execute(
                "UPDATE api_keys SET status = 'revoked', revoked_at = ?2 \
                 WHERE id = ?1 AND status <> 'revoked'",
                params![key_id, now_seconds()],
            )?;
            let record = key_by_id(&tx, &key_id)?.ok_or(StoreError::UnknownKey(key_id))?;
            tx.commit()?;
            revocations.fetch_add(1, Ordering::AcqRel);
            Ok(record)
        }))
    }

    fn revocations(&self) -> u64 {
        self.revocations.load(Ordering::Acquire)
    }

    fn find_key(&self, hash: KeyHash) -> StoreFuture<'_, Option<KeyRecord>> {
        self.errors.op("find_key").run(self.call(move |conn| {
            conn.query_row(
                &format!("SELECT {KEY_COLUMNS} WHERE k.key_hash = ?1"),
                [hash.as_bytes()],
                KeyRow::read,
            )
            .optional()?
            .map(KeyRow::into_record)
            .transpose()
        }))
    }

    fn key_count(&self) -> StoreFuture<'_, u64> {
        self.errors.op("key_count").run(self.call(|conn| {
            let count: i64 =
                conn.query_row("SELECT COUNT(*) FROM api_keys", [], |row| row.get(0))?;
            from_sql_int(count, "key count")
        }))
    }

    fn account(&self, account_id: i64) -> StoreFuture<'_, Option<Account>> {
        self.errors
            .op("account")
            .run(self.call(move |conn| account_by_id(conn, account_id)))
    }

    fn update_account(
        &self,
        account_id: i64,
        subscription_active: bool,
        limits: AccountLimits,
    ) -> StoreFuture<'_, Account> {
        self.errors.op("update_account").run(self.call(move |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            tx.execute(
                "UPDATE accounts SET subscription_active = ?2, requests_per_minute = ?3, \
                 concurrent_requests = ?4, analysis_quota_seconds = ?5, daily_quota_seconds = ?6 \
                 WHERE id = ?1",
                params![
                    account_id,
                    subscription_active,
                    i64::from(limits.requests_per_minute),
                    i64::from(limits.concurrent_requests),
                    to_sql_int(limits.analysis_quota_seconds),
                    to_sql_int(limits.daily_quota_seconds),
                ],
            )?;
            let account =
                account_by_id(&tx, account_id)?.ok_or(StoreError::UnknownAccount(account_id))?;
            tx.commit()?;
            Ok(account)
        }))
    }
}

/// The spelling of a UTC day in `daily_usage` (`2026-11-22`): sortable text.
pub(super) fn day_key(day: Date) -> String {
    day.to_string()
}

/// Gives `seconds` back to an account's total and its `day`; usage never
/// goes below zero.
pub(super) fn refund_usage(
    conn: &Connection,
    account_id: i64,
    day: &str,
    seconds: f64,
) -> Result<(), StoreError> {
    conn.execute(
        "UPDATE accounts SET analysis_seconds_used = max(0, analysis_seconds_used - ?2) \
         WHERE id = ?1",
        params![account_id, seconds],
    )?;
    conn.execute(
        "UPDATE daily_usage SET seconds = max(0, seconds - ?3) WHERE account_id = ?1 AND day = ?2",
        params![account_id, day, seconds],
    )?;
    Ok(())
}

fn usage_of(conn: &Connection, account_id: i64, day: &str) -> Result<Usage, StoreError> {
    let total_seconds: Option<f64> = conn
        .query_row(
            "SELECT analysis_seconds_used FROM accounts WHERE id = ?1",
            [account_id],
            |row| row.get(0),
        )
        .optional()?;
    let total_seconds = total_seconds.ok_or(StoreError::UnknownAccount(account_id))?;
    let day_seconds: f64 = conn
        .query_row(
            "SELECT seconds FROM daily_usage WHERE account_id = ?1 AND day = ?2",
            params![account_id, day],
            |row| row.get(0),
        )
        .optional()?
        .unwrap_or(0.0);
    Ok(Usage {
        total_seconds,
        day_seconds,
    })
}

impl UsageStore for SqliteStore {
    fn usage(&self, account_id: i64, day: Date) -> StoreFuture<'_, Usage> {
        self.errors
            .op("usage")
            .run(self.call(move |conn| usage_of(conn, account_id, &day_key(day))))
    }

    fn charge_analysis_seconds(
        &self,
        account_id: i64,
        day: Date,
        seconds: f64,
    ) -> StoreFuture<'_, QuotaOutcome> {
        self.errors
            .op("charge_analysis_seconds")
            .run(self.call(move |conn| {
                let day = day_key(day);
                let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
                let account = account_by_id(&tx, account_id)?
                    .ok_or(StoreError::UnknownAccount(account_id))?;
                let used = usage_of(&tx, account_id, &day)?;
                let seconds = seconds.max(0.0);
                if used.total_seconds + seconds > account.limits.analysis_quota_seconds as f64 {
                    return Ok(QuotaOutcome::TotalExceeded);
                }
                if used.day_seconds + seconds > account.limits.daily_quota_seconds as f64 {
                    return Ok(QuotaOutcome::DailyExceeded);
                }
                tx.execute(
                    "UPDATE accounts SET analysis_seconds_used = analysis_seconds_used + ?2 \
                 WHERE id = ?1",
                    params![account_id, seconds],
                )?;
                tx.execute(
                    "INSERT INTO daily_usage (account_id, day, seconds) VALUES (?1, ?2, ?3) \
                 ON CONFLICT (account_id, day) DO UPDATE SET seconds = seconds + excluded.seconds",
                    params![account_id, day, seconds],
                )?;
                tx.commit()?;
                Ok(QuotaOutcome::Granted)
            }))
    }

    fn refund_analysis_seconds(
        &self,
        account_id: i64,
        day: Date,
        seconds: f64,
    ) -> StoreFuture<'_, ()> {
        self.errors
            .op("refund_analysis_seconds")
            .run(self.call(move |conn| {
                let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
                refund_usage(&tx, account_id, &day_key(day), seconds.max(0.0))?;
                tx.commit()?;
                Ok(())
            }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn reopening_keeps_data_and_does_not_rerun_migrations() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested/dir/attune.sqlite3");
        let store = SqliteStore::open(&path).await.unwrap();
        let limits = AccountLimits {
            requests_per_minute: 7,
            concurrent_requests: 2,
            analysis_quota_seconds: 100,
            daily_quota_seconds: 50,
        };
        let account = store.ensure_account("acme", limits).await.unwrap();
        assert_eq!(account.limits, limits);
        assert!(account.subscription_active);
        drop(store);

        let store = SqliteStore::open(&path).await.unwrap();
        // An existing account keeps its stored limits.
        let again = store
            .ensure_account("acme", AccountLimits::default())
            .await
            .unwrap();
        assert_eq!(again, account);
    }

    #[tokio::test]
    async fn a_store_from_a_newer_build_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("attune.sqlite3");
        drop(SqliteStore::open(&path).await.unwrap());
        Connection::open(&path)
            .unwrap()
            .pragma_update(None, "user_version", 99)
            .unwrap();
        let error = SqliteStore::open(&path).await.unwrap_err();
        assert!(matches!(error, StoreError::Incompatible(_)), "{error}");
    }

    #[tokio::test]
    async fn keys_are_stored_as_hashes_with_sorted_scopes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("attune.sqlite3");
        let store = SqliteStore::open(&path).await.unwrap();
        let account = store
            .ensure_account("acme", AccountLimits::default())
            .await
            .unwrap();
        let created = store
            .create_key(account.id, &[Scope::Stream, Scope::Upload, Scope::Stream])
            .await
            .unwrap();
        assert_eq!(created.record.scopes, vec![Scope::Upload, Scope::Stream]);
        assert_eq!(created.record.account_name, "acme");

        let found = store.find_key(created.key.hash()).await.unwrap();
        assert_eq!(found, Some(created.record.clone()));

        // Nothing in the file spells the key out.
        drop(store);
        let bytes = std::fs::read(&path).unwrap();
        let wal = std::fs::read(path.with_extension("sqlite3-wal")).unwrap_or_default();
        let secret = created.key.expose().as_bytes();
        for content in [&bytes, &wal] {
            assert!(!content.windows(secret.len()).any(|w| w == secret));
        }
    }
}
