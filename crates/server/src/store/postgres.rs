//! The shared store for several instances: PostgreSQL through a connection
//! pool, schema migrated on open, each instance holding a lease on the jobs
//! it runs.
//!
//! Every instance registers itself in `instances` with a lease it renews
//! every third of [`PgStoreOptions::lease`]. Jobs record the instance that
//! accepted them. An instance killed outright stops renewing; once its lease
//! lapses, the next sweep by any live instance fails its unfinished jobs with
//! `ih1004`, as a restart does on the embedded store.

use super::postgres_base::{now_millis, raw, refund_usage, Heartbeat, PgStore};
use super::postgres_schema::MIGRATIONS;
use super::{
    Account, AccountLimits, CreatedKey, KeyRecord, KeyStatus, KeyStore, QuotaOutcome, SlotOutcome,
    StoreError, StoreFuture, Usage, UsageStore,
};
use crate::ids::{hex, random_bytes};
use crate::keys::{ApiKey, KeyHash, Scope};
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;
use time::{Date, OffsetDateTime};
use tokio_postgres::config::SslMode;
use tokio_postgres::{GenericClient, Row};

/// Any constant: the advisory lock taken while migrating, so instances
/// starting together apply each step once.
const MIGRATION_LOCK: i64 = 0x6174_7475_6e65;

const KEY_COLUMNS: &str = "k.id, k.account_id, a.name, k.display_prefix, k.scopes, k.status, \
     k.created_at, k.revoked_at FROM api_keys k JOIN accounts a ON a.id = k.account_id";

const ACCOUNT_COLUMNS: &str = "id, name, subscription_active, requests_per_minute, \
     concurrent_requests, analysis_quota_seconds, daily_quota_seconds FROM accounts";

/// How a [`PgStore`] is set up beyond its URL.
#[derive(Debug, Clone)]
pub struct PgStoreOptions {
    /// Connections kept in the pool.
    pub pool_size: usize,
    /// How long an instance's claim on its jobs lasts without renewal: the
    /// longest an instance killed outright leaves its jobs unfinished.
    pub lease: Duration,
}

impl Default for PgStoreOptions {
    /// 16 connections; a 30-second lease.
    fn default() -> Self {
        PgStoreOptions {
            pool_size: 16,
            lease: Duration::from_secs(30),
        }
    }
}

/// Whether `url` names a PostgreSQL store rather than a SQLite file.
pub fn is_postgres_url(url: &str) -> bool {
    url.starts_with("postgres://") || url.starts_with("postgresql://")
}

/// TLS for connections whose URL says `sslmode=require`: rustls with the
/// bundled Mozilla roots, like the recommendation backend's client.
fn tls() -> tokio_postgres_rustls::MakeRustlsConnect {
    let roots = rustls::RootCertStore::from_iter(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("ring supports the default protocol versions")
    .with_root_certificates(roots)
    .with_no_client_auth();
    tokio_postgres_rustls::MakeRustlsConnect::new(config)
}

impl PgStore {
    /// Connects to `url` (`postgres://user:password@host:port/db`, with
    /// `?sslmode=require` for TLS), applies missing migrations and registers
    /// this instance.
    pub async fn open(url: &str, options: PgStoreOptions) -> Result<PgStore, StoreError> {
        let pool = pool(url, options.pool_size)?;
        migrate(&pool).await?;
        let instance_id: Arc<str> = format!("inst_{}", hex(&random_bytes::<8>())).into();
        let store = PgStore {
            pool,
            instance_id,
            heartbeat: Arc::new(Heartbeat(std::sync::Mutex::new(None))),
            lease: options.lease,
            errors: super::StoreErrorCounts::default(),
            grants: Arc::default(),
        };
        store.renew_lease().await?;
        let handle = tokio::spawn(heartbeat(
            store.pool.clone(),
            Arc::clone(&store.instance_id),
            options.lease,
            Arc::clone(&store.grants),
        ));
        *store.heartbeat.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(handle);
        Ok(store)
    }

    /// Connects and applies missing migrations, nothing else: what
    /// `attune migrate` does. Answers the schema version now in force.
    pub async fn migrate_only(url: &str) -> Result<usize, StoreError> {
        let pool = pool(url, 1)?;
        migrate(&pool).await?;
        Ok(MIGRATIONS.len())
    }

    /// This instance's id, as recorded on the jobs it accepts.
    pub fn instance_id(&self) -> &str {
        &self.instance_id
    }

    /// Stops renewing the lease and removes this instance's registration, so
    /// the other instances fail its unfinished jobs at their next sweep.
    /// Called at a graceful shutdown once nothing more will run here.
    pub async fn deregister(&self) -> Result<(), StoreError> {
        if let Some(handle) = self
            .heartbeat
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            handle.abort();
        }
        let client = self.pool.get().await?;
        client
            .execute(
                "DELETE FROM instances WHERE id = $1",
                &[&&*self.instance_id],
            )
            .await?;
        client
            .execute(
                "DELETE FROM limit_holds WHERE instance_id = $1",
                &[&&*self.instance_id],
            )
            .await?;
        Ok(())
    }

    /// Stops renewing the lease without deregistering, as a killed process
    /// would: for tests of lease expiry.
    pub fn stop_heartbeat(&self) {
        if let Some(handle) = self
            .heartbeat
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            handle.abort();
        }
    }

    async fn renew_lease(&self) -> Result<(), StoreError> {
        renew(&self.pool, &self.instance_id, self.lease, &self.grants).await
    }
}

fn pool(url: &str, size: usize) -> Result<Pool, StoreError> {
    let mut config = tokio_postgres::Config::from_str(url)
        .map_err(|e| StoreError::Unavailable(format!("invalid store URL: {e}").into()))?;
    // TLS only when asked for: `prefer` (the driver's default) would try TLS
    // against servers with certificates no public root vouches for, and fail
    // where libpq would have connected.
    if config.get_ssl_mode() != SslMode::Require {
        config.ssl_mode(SslMode::Disable);
    }
    config.application_name("attune");
    let manager = Manager::from_config(
        config,
        tls(),
        ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        },
    );
    Pool::builder(manager)
        .max_size(size.max(1))
        .runtime(deadpool_postgres::Runtime::Tokio1)
        .wait_timeout(Some(Duration::from_secs(10)))
        .create_timeout(Some(Duration::from_secs(10)))
        .build()
        .map_err(|e| StoreError::Unavailable(format!("cannot build the pool: {e}").into()))
}

async fn migrate(pool: &Pool) -> Result<(), StoreError> {
    let mut client = pool.get().await?;
    let tx = raw(&mut client).transaction().await?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await?;
    tx.batch_execute("CREATE TABLE IF NOT EXISTS attune_schema (version BIGINT NOT NULL)")
        .await?;
    let applied: Option<i64> = tx
        .query_opt("SELECT version FROM attune_schema", &[])
        .await?
        .map(|row| row.get(0));
    if applied.is_none() {
        tx.execute("INSERT INTO attune_schema (version) VALUES (0)", &[])
            .await?;
    }
    let applied = usize::try_from(applied.unwrap_or(0)).unwrap_or(usize::MAX);
    if applied > MIGRATIONS.len() {
        return Err(StoreError::Incompatible(format!(
            "schema version {applied} is newer than this build's {}",
            MIGRATIONS.len()
        )));
    }
    for step in &MIGRATIONS[applied..] {
        tx.batch_execute(step).await?;
    }
    tx.execute(
        "UPDATE attune_schema SET version = $1",
        &[&(MIGRATIONS.len() as i64)],
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

async fn renew(
    pool: &Pool,
    instance_id: &str,
    lease: Duration,
    grants: &super::postgres_grants::LocalGrants,
) -> Result<(), StoreError> {
    let now = now_millis();
    let until = now.saturating_add(i64::try_from(lease.as_millis()).unwrap_or(i64::MAX));
    let client = pool.get().await?;
    client
        .execute(
            "INSERT INTO instances (id, started_at, lease_expires_at) VALUES ($1, $2, $3) \
             ON CONFLICT (id) DO UPDATE SET lease_expires_at = excluded.lease_expires_at",
            &[&instance_id, &now, &until],
        )
        .await?;
    if grants.lapsed(now) {
        // A peer may have swept this instance's places, or may yet: drop
        // them on both sides before granting anew.
        grants.drop_grants();
        client
            .execute(
                "DELETE FROM limit_holds WHERE instance_id = $1 AND subject LIKE 'account:%'",
                &[&instance_id],
            )
            .await?;
    }
    grants.lease_renewed(now, until);
    Ok(())
}

/// Renews the lease every third of its length and fails the jobs of
/// instances whose lease lapsed; every [`postgres_limits::RETURN_PERIOD`]
/// gives back the request-limit grants left unused.
///
/// [`postgres_limits::RETURN_PERIOD`]: super::postgres_limits::RETURN_PERIOD
async fn heartbeat(
    pool: Pool,
    instance_id: Arc<str>,
    lease: Duration,
    grants: Arc<super::postgres_grants::LocalGrants>,
) {
    // The first tick one period on: `open` has just renewed, and its caller
    // (a starting server) sweeps for itself with `mark_interrupted`.
    let period = (lease / 3).max(Duration::from_millis(100));
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let returns_every = super::postgres_limits::RETURN_PERIOD;
    let mut returns =
        tokio::time::interval_at(tokio::time::Instant::now() + returns_every, returns_every);
    returns.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = ticks.tick() => {}
            _ = returns.tick() => {
                super::postgres_limits::return_unused(&pool, &instance_id, &grants).await;
                continue;
            }
        }
        if let Err(error) = renew(&pool, &instance_id, lease, &grants).await {
            tracing::error!(%error, "store lease not renewed");
            continue;
        }
        match super::postgres_jobs::fail_jobs_of_dead_instances(&pool, &instance_id, now_millis())
            .await
        {
            Ok(0) => {}
            Ok(count) => tracing::warn!(count, "jobs of an instance whose lease lapsed failed"),
            Err(error) => tracing::error!(%error, "dead instances' jobs not swept"),
        }
        if let Err(error) = super::postgres_limits::sweep_slots(&pool, now_millis()).await {
            tracing::error!(%error, "dead instances' request limit places not swept");
        }
    }
}

fn datetime(seconds: i64) -> Result<OffsetDateTime, StoreError> {
    OffsetDateTime::from_unix_timestamp(seconds)
        .map_err(|_| StoreError::Incompatible(format!("timestamp {seconds} out of range")))
}

use super::sqlite::{day_key, from_sql_int, join_scopes, now_seconds, split_scopes, to_sql_int};

fn key_record(row: &Row) -> Result<KeyRecord, StoreError> {
    let status: String = row.try_get(5)?;
    let status = match status.as_str() {
        "active" => KeyStatus::Active,
        "revoked" => KeyStatus::Revoked,
        other => {
            return Err(StoreError::Incompatible(format!(
                "unknown key status `{other}`"
            )))
        }
    };
    let scopes: String = row.try_get(4)?;
    Ok(KeyRecord {
        id: row.try_get(0)?,
        account_id: row.try_get(1)?,
        account_name: row.try_get(2)?,
        display_prefix: row.try_get(3)?,
        scopes: split_scopes(&scopes)?,
        status,
        created_at: datetime(row.try_get(6)?)?,
        revoked_at: row
            .try_get::<_, Option<i64>>(7)?
            .map(datetime)
            .transpose()?,
    })
}

fn account_record(row: &Row) -> Result<Account, StoreError> {
    Ok(Account {
        id: row.try_get(0)?,
        name: row.try_get(1)?,
        subscription_active: row.try_get(2)?,
        limits: AccountLimits {
            requests_per_minute: from_sql_int(row.try_get(3)?, "requests_per_minute")?,
            concurrent_requests: from_sql_int(row.try_get(4)?, "concurrent_requests")?,
            analysis_quota_seconds: from_sql_int(row.try_get(5)?, "analysis_quota_seconds")?,
            daily_quota_seconds: from_sql_int(row.try_get(6)?, "daily_quota_seconds")?,
        },
    })
}

async fn key_by_id(
    client: &impl GenericClient,
    key_id: &str,
) -> Result<Option<KeyRecord>, StoreError> {
    client
        .query_opt(&format!("SELECT {KEY_COLUMNS} WHERE k.id = $1"), &[&key_id])
        .await?
        .as_ref()
        .map(key_record)
        .transpose()
}

pub(super) async fn account_by_id(
    client: &impl GenericClient,
    id: i64,
) -> Result<Option<Account>, StoreError> {
    client
        .query_opt(&format!("SELECT {ACCOUNT_COLUMNS} WHERE id = $1"), &[&id])
        .await?
        .as_ref()
        .map(account_record)
        .transpose()
}

fn limit_params(limits: &AccountLimits) -> [i64; 4] {
    [
        i64::from(limits.requests_per_minute),
        i64::from(limits.concurrent_requests),
        to_sql_int(limits.analysis_quota_seconds),
        to_sql_int(limits.daily_quota_seconds),
    ]
}

impl KeyStore for PgStore {
    fn error_counts(&self) -> Option<super::StoreErrorCounts> {
        Some(self.errors.clone())
    }

    fn ensure_account<'a>(
        &'a self,
        name: &'a str,
        limits: AccountLimits,
    ) -> StoreFuture<'a, Account> {
        self.errors.op("ensure_account").run(async move {
            if !Account::is_valid_name(name) {
                return Err(StoreError::InvalidAccountName(name.to_owned()));
            }
            let client = self.pool.get().await?;
            let [rpm, concurrent, quota, daily] = limit_params(&limits);
            client
                .execute(
                    "INSERT INTO accounts (name, subscription_active, requests_per_minute, \
                     concurrent_requests, analysis_quota_seconds, daily_quota_seconds, \
                     created_at) VALUES ($1, TRUE, $2, $3, $4, $5, $6) \
                     ON CONFLICT (name) DO NOTHING",
                    &[&name, &rpm, &concurrent, &quota, &daily, &now_seconds()],
                )
                .await?;
            client
                .query_opt(
                    &format!("SELECT {ACCOUNT_COLUMNS} WHERE name = $1"),
                    &[&name],
                )
                .await?
                .as_ref()
                .map(account_record)
                .transpose()?
                .ok_or_else(|| {
                    StoreError::Incompatible(format!("account `{name}` vanished after insert"))
                })
        })
    }

    fn create_key<'a>(
        &'a self,
        account_id: i64,
        scopes: &'a [Scope],
    ) -> StoreFuture<'a, CreatedKey> {
        let mut scopes = scopes.to_vec();
        scopes.sort();
        scopes.dedup();
        self.errors.op("create_key").run(async move {
            let key = ApiKey::generate();
            let key_id = format!("key_{}", hex(&random_bytes::<8>()));
            let client = self.pool.get().await?;
            if account_by_id(&**client, account_id).await?.is_none() {
                return Err(StoreError::UnknownAccount(account_id));
            }
            client
                .execute(
                    "INSERT INTO api_keys (id, account_id, display_prefix, key_hash, scopes, \
                     status, created_at) VALUES ($1, $2, $3, $4, $5, 'active', $6)",
                    &[
                        &key_id,
                        &account_id,
                        &key.display_prefix(),
                        &key.hash().as_bytes().as_slice(),
                        &join_scopes(&scopes),
                        &now_seconds(),
                    ],
                )
                .await?;
            let record = key_by_id(&**client, &key_id).await?.ok_or_else(|| {
                StoreError::Incompatible(format!("key `{key_id}` vanished after insert"))
            })?;
            Ok(CreatedKey { record, key })
        })
    }

    fn list_keys(&self) -> StoreFuture<'_, Vec<KeyRecord>> {
        self.errors.op("list_keys").run(async move {
            let client = self.pool.get().await?;
            client
                .query(
                    &format!("SELECT {KEY_COLUMNS} ORDER BY k.created_at, k.seq"),
                    &[],
                )
                .await?
                .iter()
                .map(key_record)
                .collect()
        })
    }

    fn revoke_key<'a>(&'a self, key_id: &'a str) -> StoreFuture<'a, KeyRecord> {
        self.errors.op("revoke_key").run(async move {
            let client = self.pool.get().await?;
            client
                .execute(
                    "UPDATE api_keys SET status = 'revoked', revoked_at = $2 \
                     WHERE id = $1 AND status <> 'revoked'",
                    &[&key_id, &now_seconds()],
                )
                .await?;
            key_by_id(&**client, key_id)
                .await?
                .ok_or_else(|| StoreError::UnknownKey(key_id.to_owned()))
        })
    }

    fn find_key(&self, hash: KeyHash) -> StoreFuture<'_, Option<KeyRecord>> {
        self.errors.op("find_key").run(async move {
            let client = self.pool.get().await?;
            // Prepared once per connection: every request looks its key up.
            let statement = client
                .prepare_cached(&format!("SELECT {KEY_COLUMNS} WHERE k.key_hash = $1"))
                .await?;
            client
                .query_opt(&statement, &[&hash.as_bytes().as_slice()])
                .await?
                .as_ref()
                .map(key_record)
                .transpose()
        })
    }

    fn key_count(&self) -> StoreFuture<'_, u64> {
        self.errors.op("key_count").run(async move {
            let client = self.pool.get().await?;
            let count: i64 = client
                .query_one("SELECT COUNT(*) FROM api_keys", &[])
                .await?
                .try_get(0)?;
            from_sql_int(count, "key count")
        })
    }

    fn account(&self, account_id: i64) -> StoreFuture<'_, Option<Account>> {
        self.errors.op("account").run(async move {
            let client = self.pool.get().await?;
            // Prepared once per connection: every request reads its account.
            let statement = client
                .prepare_cached(&format!("SELECT {ACCOUNT_COLUMNS} WHERE id = $1"))
                .await?;
            client
                .query_opt(&statement, &[&account_id])
                .await?
                .as_ref()
                .map(account_record)
                .transpose()
        })
    }

    fn ping(&self) -> StoreFuture<'_, ()> {
        self.errors.op("ping").run(async move {
            let client = self.pool.get().await?;
            client.simple_query("SELECT 1").await?;
            Ok(())
        })
    }

    fn update_account(
        &self,
        account_id: i64,
        subscription_active: bool,
        limits: AccountLimits,
    ) -> StoreFuture<'_, Account> {
        self.errors.op("update_account").run(async move {
            let client = self.pool.get().await?;
            let [rpm, concurrent, quota, daily] = limit_params(&limits);
            client
                .execute(
                    "UPDATE accounts SET subscription_active = $2, requests_per_minute = $3, \
                     concurrent_requests = $4, analysis_quota_seconds = $5, \
                     daily_quota_seconds = $6 WHERE id = $1",
                    &[
                        &account_id,
                        &subscription_active,
                        &rpm,
                        &concurrent,
                        &quota,
                        &daily,
                    ],
                )
                .await?;
            account_by_id(&**client, account_id)
                .await?
                .ok_or(StoreError::UnknownAccount(account_id))
        })
    }
}

async fn usage_of(
    client: &impl GenericClient,
    account_id: i64,
    day: &str,
    lock: bool,
) -> Result<Usage, StoreError> {
    // `FOR UPDATE` serialises charges to one account across instances: the
    // check and the charge cannot interleave with another's.
    let lock = if lock { " FOR UPDATE" } else { "" };
    let total_seconds: f64 = client
        .query_opt(
            &format!("SELECT analysis_seconds_used FROM accounts WHERE id = $1{lock}"),
            &[&account_id],
        )
        .await?
        .ok_or(StoreError::UnknownAccount(account_id))?
        .try_get(0)?;
    let day_seconds: f64 = client
        .query_opt(
            "SELECT seconds FROM daily_usage WHERE account_id = $1 AND day = $2",
            &[&account_id, &day],
        )
        .await?
        .map(|row| row.try_get(0))
        .transpose()?
        .unwrap_or(0.0);
    Ok(Usage {
        total_seconds,
        day_seconds,
    })
}

impl UsageStore for PgStore {
    fn usage(&self, account_id: i64, day: Date) -> StoreFuture<'_, Usage> {
        self.errors.op("usage").run(async move {
            let client = self.pool.get().await?;
            usage_of(&**client, account_id, &day_key(day), false).await
        })
    }

    fn charge_analysis_seconds(
        &self,
        account_id: i64,
        day: Date,
        seconds: f64,
    ) -> StoreFuture<'_, QuotaOutcome> {
        self.errors.op("charge_analysis_seconds").run(async move {
            let day = day_key(day);
            let mut client = self.pool.get().await?;
            let tx = raw(&mut client).transaction().await?;
            let used = usage_of(&tx, account_id, &day, true).await?;
            let account = account_by_id(&tx, account_id)
                .await?
                .ok_or(StoreError::UnknownAccount(account_id))?;
            let seconds = seconds.max(0.0);
            if used.total_seconds + seconds > account.limits.analysis_quota_seconds as f64 {
                return Ok(QuotaOutcome::TotalExceeded);
            }
            if used.day_seconds + seconds > account.limits.daily_quota_seconds as f64 {
                return Ok(QuotaOutcome::DailyExceeded);
            }
            tx.execute(
                "UPDATE accounts SET analysis_seconds_used = analysis_seconds_used + $2 \
                 WHERE id = $1",
                &[&account_id, &seconds],
            )
            .await?;
            tx.execute(
                "INSERT INTO daily_usage (account_id, day, seconds) VALUES ($1, $2, $3) \
                 ON CONFLICT (account_id, day) \
                 DO UPDATE SET seconds = daily_usage.seconds + excluded.seconds",
                &[&account_id, &day, &seconds],
            )
            .await?;
            tx.commit().await?;
            Ok(QuotaOutcome::Granted)
        })
    }

    fn refund_analysis_seconds(
        &self,
        account_id: i64,
        day: Date,
        seconds: f64,
    ) -> StoreFuture<'_, ()> {
        self.errors.op("refund_analysis_seconds").run(async move {
            let mut client = self.pool.get().await?;
            let tx = raw(&mut client).transaction().await?;
            refund_usage(&tx, account_id, &day_key(day), seconds.max(0.0)).await?;
            tx.commit().await?;
            Ok(())
        })
    }

    fn counts_requests(&self) -> bool {
        true
    }

    fn admit_request(
        &self,
        account_id: i64,
        limits: AccountLimits,
        now_millis: i64,
    ) -> StoreFuture<'_, SlotOutcome> {
        self.errors
            .op("admit_request")
            .run(super::postgres_limits::admit_request(
                self, account_id, limits, now_millis,
            ))
    }

    fn open_token_session<'a>(
        &'a self,
        token_id: &'a str,
        max: u32,
    ) -> StoreFuture<'a, SlotOutcome> {
        self.errors
            .op("open_token_session")
            .run(super::postgres_limits::open_token_session(
                self, token_id, max,
            ))
    }

    fn release_request(&self, account_id: i64) {
        super::postgres_limits::release_request(self, account_id);
    }

    fn close_token_session<'a>(&'a self, token_id: &'a str) -> StoreFuture<'a, ()> {
        self.errors
            .op("close_token_session")
            .run(super::postgres_limits::close_token_session(self, token_id))
    }
}
