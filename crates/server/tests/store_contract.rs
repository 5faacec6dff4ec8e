//! The store contract: one suite of behaviour every store must have, run
//! against the embedded SQLite store and against PostgreSQL.
//!
//! The PostgreSQL half needs `ATTUNE_TEST_PG_URL` (a superuser URL of a
//! throwaway cluster; `tests/pg/with-postgres.sh` starts one and sets it, and
//! `.ci/run` always does). Without it those tests print a notice and pass
//! without checking anything, so a plain `cargo test` works anywhere.

use attune_core::wire::{IncludeFlag, Model, Timestamp, UploadJobResult, UploadJobStatus};
use attune_core::{ErrorCode, ServiceError};
use attune_server::store::SlotOutcome;
use attune_server::store::{PgStore, PgStoreOptions};
use attune_server::{
    AccountLimits, BudgetOutcome, JobStore, KeyStatus, KeyStore, NewJob, NewToken, QueuedMedia,
    QuotaOutcome, Scope, SpeakerTurn, SqliteStore, StoreError, TokenCaps, TokenStore, UsageStore,
};
use std::sync::Arc;
use std::time::Duration;
use time::macros::date;

#[path = "support/pg.rs"]
mod pg;
use pg::fresh_database;

/// Every store trait at once.
trait Store: KeyStore + TokenStore + UsageStore + JobStore {}
impl<T: KeyStore + TokenStore + UsageStore + JobStore> Store for T {}

/// Where a backend's data lives, so a test can open a second handle on it
/// (another instance) or reopen it (a restart).
enum Place {
    Sqlite(tempfile::TempDir),
    Postgres(String),
}

/// An opened store and the place it lives.
struct Backend {
    place: Place,
}

/// How long a PostgreSQL instance's lease lasts in these tests: long enough
/// never to lapse by itself during a test, since lapses are simulated by
/// passing later times.
const TEST_LEASE: Duration = Duration::from_secs(60);

impl Backend {
    fn sqlite() -> Backend {
        Backend {
            place: Place::Sqlite(tempfile::tempdir().unwrap()),
        }
    }

    /// A fresh database in the test cluster, or `None` (with a notice) when
    /// there is no cluster.
    async fn postgres(test: &str) -> Option<Backend> {
        let Ok(admin_url) = std::env::var("ATTUNE_TEST_PG_URL") else {
            // CI runs under tests/pg/with-postgres.sh: a missing cluster there
            // is a broken setup, not a reason to skip.
            assert!(
                std::env::var_os("CI").is_none(),
                "{test}: CI must set ATTUNE_TEST_PG_URL (.ci/run runs tests/pg/with-postgres.sh)"
            );
            eprintln!(
                "NOTICE: {test}: ATTUNE_TEST_PG_URL is not set; PostgreSQL half skipped \
                 (run under tests/pg/with-postgres.sh)"
            );
            return None;
        };
        Some(Backend {
            place: Place::Postgres(fresh_database(&admin_url).await),
        })
    }

    /// Opens a handle: on PostgreSQL each is its own instance.
    async fn open(&self) -> Arc<dyn StoreHandle> {
        match &self.place {
            Place::Sqlite(dir) => Arc::new(
                SqliteStore::open(dir.path().join("attune.sqlite3"))
                    .await
                    .unwrap(),
            ),
            Place::Postgres(url) => Arc::new(
                PgStore::open(
                    url,
                    PgStoreOptions {
                        pool_size: 4,
                        lease: TEST_LEASE,
                    },
                )
                .await
                .unwrap(),
            ),
        }
    }
}

/// A store handle as tests use it: the traits, plus a clean shutdown.
trait StoreHandle: Store {
    /// What a process does when it stops gracefully.
    fn close(&self) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>>;
}

impl StoreHandle for SqliteStore {
    fn close(&self) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>> {
        Box::pin(async {})
    }
}

impl StoreHandle for PgStore {
    fn close(&self) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>> {
        Box::pin(async { self.deregister().await.unwrap() })
    }
}

/// Declares a contract test run once per backend: `sqlite` and `postgres`.
macro_rules! contract {
    ($name:ident, $body:expr) => {
        mod $name {
            use super::*;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                let body = $body;
                body(Backend::sqlite()).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                if let Some(backend) = Backend::postgres(stringify!($name)).await {
                    let body = $body;
                    body(backend).await;
                }
            }
        }
    };
}

/// The id of account "acme" (default limits), made if it is not there yet.
async fn acme(store: &dyn StoreHandle) -> i64 {
    store
        .ensure_account("acme", AccountLimits::default())
        .await
        .unwrap()
        .id
}

/// An account with default limits and one key of `scopes`: (account id, key id).
async fn account_with_key(
    store: &dyn StoreHandle,
    account: &str,
    scopes: &[Scope],
) -> (i64, String) {
    let account_id = store
        .ensure_account(account, AccountLimits::default())
        .await
        .unwrap()
        .id;
    let key_id = store
        .create_key(account_id, scopes)
        .await
        .unwrap()
        .record
        .id;
    (account_id, key_id)
}

fn at(seconds: i64) -> Timestamp {
    Timestamp::from_unix_millis(1_800_000_000_000 + seconds * 1000).unwrap()
}

fn quotas(total: u64, daily: u64) -> AccountLimits {
    AccountLimits {
        analysis_quota_seconds: total,
        daily_quota_seconds: daily,
        ..AccountLimits::default()
    }
}

fn new_job(account_id: i64, id: &str, token_id: Option<String>) -> NewJob {
    NewJob {
        id: id.to_owned(),
        account_id,
        model: Model::Inter2,
        correlation_id: "c".repeat(32),
        created_at: at(0),
        expires_at: at(3600),
        billed_seconds: 12.0,
        billed_day: date!(2026 - 01 - 15),
        token_id,
    }
}

fn result() -> UploadJobResult {
    UploadJobResult {
        duration_seconds: 5.0,
        window_seconds: 5.0,
        windows: vec![],
        conversation_quality: None,
        signals: None,
    }
}

/// Two voices taking turns, with times that do not round-trip through a
/// lossy format (thirds).
fn turns() -> Vec<SpeakerTurn> {
    vec![
        SpeakerTurn {
            speaker: 0,
            start: 0.0,
            end: 1.0 / 3.0,
        },
        SpeakerTurn {
            speaker: 1,
            start: 1.0 / 3.0,
            end: 2.5,
        },
        SpeakerTurn {
            speaker: 0,
            start: 2.75,
            end: 5.0,
        },
    ]
}

fn new_token(account_id: i64, key_id: &str, budget: Option<f64>) -> NewToken {
    let now = at(0);
    NewToken {
        id: attune_server::tokens::new_token_id(),
        hash: attune_server::ClientToken::generate().hash(),
        account_id,
        key_id: key_id.to_owned(),
        scopes: vec![Scope::Stream],
        caps: TokenCaps {
            max_duration_seconds: Some(600),
            max_bytes: Some(1000),
            max_concurrent: 2,
            max_video_seconds: budget,
            allowed_origins: Some(vec!["https://app.example.com".into()]),
        },
        created_at: now,
        expires_at: now.plus_seconds(300),
    }
}

contract!(
    accounts_keep_their_limits_and_keys_are_found_by_hash,
    |b: Backend| async move {
        let store = b.open().await;
        let limits = AccountLimits {
            requests_per_minute: 7,
            concurrent_requests: 2,
            analysis_quota_seconds: 100,
            daily_quota_seconds: 50,
        };
        let account = store.ensure_account("acme", limits).await.unwrap();
        assert_eq!(account.limits, limits);
        assert!(account.subscription_active);
        // An existing account keeps its stored limits.
        let again = store
            .ensure_account("acme", AccountLimits::default())
            .await
            .unwrap();
        assert_eq!(again, account);

        assert_eq!(store.key_count().await.unwrap(), 0);
        let first = store
            .create_key(account.id, &[Scope::Stream, Scope::Upload, Scope::Stream])
            .await
            .unwrap();
        assert_eq!(first.record.scopes, vec![Scope::Upload, Scope::Stream]);
        assert_eq!(first.record.account_name, "acme");
        assert_eq!(first.record.status, KeyStatus::Active);
        let second = store
            .create_key(account.id, &[Scope::Upload])
            .await
            .unwrap();
        assert_eq!(
            store.find_key(first.key.hash()).await.unwrap(),
            Some(first.record.clone())
        );
        assert_eq!(
            store
                .find_key(attune_server::KeyHash::of("nope"))
                .await
                .unwrap(),
            None
        );
        let ids: Vec<_> = store
            .list_keys()
            .await
            .unwrap()
            .into_iter()
            .map(|k| k.id)
            .collect();
        assert_eq!(ids, vec![first.record.id.clone(), second.record.id.clone()]);

        let revoked = store.revoke_key(&first.record.id).await.unwrap();
        assert_eq!(revoked.status, KeyStatus::Revoked);
        assert!(revoked.revoked_at.is_some());
        // Revoking again succeeds and changes nothing.
        assert_eq!(store.revoke_key(&first.record.id).await.unwrap(), revoked);
        assert_eq!(store.key_count().await.unwrap(), 2);

        let updated = store
            .update_account(account.id, false, quotas(5, 5))
            .await
            .unwrap();
        assert!(!updated.subscription_active);
        assert_eq!(store.account(account.id).await.unwrap(), Some(updated));
        assert_eq!(store.account(account.id + 1000).await.unwrap(), None);
    }
);

contract!(
    invalid_names_and_unknown_ids_are_refused,
    |b: Backend| async move {
        let store = b.open().await;
        for name in ["", "has space", "x".repeat(65).as_str()] {
            assert!(matches!(
                store.ensure_account(name, AccountLimits::default()).await,
                Err(StoreError::InvalidAccountName(_))
            ));
        }
        assert!(matches!(
            store.create_key(42, &[Scope::Upload]).await,
            Err(StoreError::UnknownAccount(42))
        ));
        assert!(matches!(
            store.revoke_key("key_0000000000000000").await,
            Err(StoreError::UnknownKey(_))
        ));
        assert!(matches!(
            store
                .update_account(42, true, AccountLimits::default())
                .await,
            Err(StoreError::UnknownAccount(42))
        ));
    }
);

contract!(
    usage_is_charged_against_total_and_daily_quotas,
    |b: Backend| async move {
        let store = b.open().await;
        let account_id = store
            .ensure_account("acme", quotas(100, 30))
            .await
            .unwrap()
            .id;
        let monday = date!(2026 - 11 - 23);
        let tuesday = date!(2026 - 11 - 24);
        let charge = |day, seconds| store.charge_analysis_seconds(account_id, day, seconds);
        assert_eq!(charge(monday, 20.0).await.unwrap(), QuotaOutcome::Granted);
        assert_eq!(
            charge(monday, 11.0).await.unwrap(),
            QuotaOutcome::DailyExceeded
        );
        assert_eq!(charge(monday, 10.0).await.unwrap(), QuotaOutcome::Granted);
        let used = store.usage(account_id, monday).await.unwrap();
        assert_eq!((used.total_seconds, used.day_seconds), (30.0, 30.0));
        // A new day starts a new daily count, not a new total.
        assert_eq!(charge(tuesday, 30.0).await.unwrap(), QuotaOutcome::Granted);
        store
            .refund_analysis_seconds(account_id, tuesday, 30.0)
            .await
            .unwrap();
        let used = store.usage(account_id, tuesday).await.unwrap();
        assert_eq!((used.total_seconds, used.day_seconds), (30.0, 0.0));
        assert_eq!(charge(tuesday, 30.0).await.unwrap(), QuotaOutcome::Granted);
        assert_eq!(
            charge(date!(2026 - 11 - 25), 30.0).await.unwrap(),
            QuotaOutcome::Granted
        );
        assert_eq!(
            charge(date!(2026 - 11 - 26), 11.0).await.unwrap(),
            QuotaOutcome::TotalExceeded
        );
        // Refunds never take usage below zero.
        store
            .refund_analysis_seconds(account_id, date!(2026 - 11 - 27), 1000.0)
            .await
            .unwrap();
        assert_eq!(
            store
                .usage(account_id, tuesday)
                .await
                .unwrap()
                .total_seconds,
            0.0
        );
    }
);

contract!(
    quota_charges_from_two_instances_never_overdraw,
    |b: Backend| async move {
        let a = b.open().await;
        let other = b.open().await;
        let account_id = a
            .ensure_account("acme", quotas(100, 1000))
            .await
            .unwrap()
            .id;
        let day = date!(2026 - 11 - 23);
        // 20 charges of 10 s race from two handles for a 100 s quota: exactly
        // ten may win, whichever they are.
        let mut tasks = Vec::new();
        for i in 0..20 {
            let store = if i % 2 == 0 { a.clone() } else { other.clone() };
            tasks.push(tokio::spawn(async move {
                store
                    .charge_analysis_seconds(account_id, day, 10.0)
                    .await
                    .unwrap()
            }));
        }
        let mut granted = 0;
        for task in tasks {
            if task.await.unwrap() == QuotaOutcome::Granted {
                granted += 1;
            }
        }
        assert_eq!(granted, 10);
        assert_eq!(
            other.usage(account_id, day).await.unwrap().total_seconds,
            100.0
        );
    }
);

contract!(
    tokens_round_trip_and_revoke_within_their_account,
    |b: Backend| async move {
        let store = b.open().await;
        let (account_id, key_id) = account_with_key(store.as_ref(), "acme", &[Scope::Stream]).await;
        let new = new_token(account_id, &key_id, Some(10.0));
        let created = store.create_token(new.clone()).await.unwrap();
        assert_eq!(created.caps, new.caps);
        assert_eq!(created.expires_at, new.expires_at);
        assert!(created.key_active);
        assert_eq!(store.find_token(new.hash).await.unwrap(), Some(created));

        let when = at(1);
        assert!(!store
            .revoke_token(new.hash, account_id + 1, when)
            .await
            .unwrap());
        assert!(store
            .find_token(new.hash)
            .await
            .unwrap()
            .unwrap()
            .revoked_at
            .is_none());
        assert!(store
            .revoke_token(new.hash, account_id, when)
            .await
            .unwrap());
        assert!(store
            .revoke_token(new.hash, account_id, at(2))
            .await
            .unwrap());
        // The first revocation time stays.
        assert_eq!(
            store
                .find_token(new.hash)
                .await
                .unwrap()
                .unwrap()
                .revoked_at,
            Some(when)
        );

        // A token dies with its key.
        store.revoke_key(&key_id).await.unwrap();
        let other = new_token(account_id, &key_id, None);
        store.create_token(other.clone()).await.unwrap();
        assert!(
            !store
                .find_token(other.hash)
                .await
                .unwrap()
                .unwrap()
                .key_active
        );
    }
);

contract!(
    a_revocation_on_one_instance_is_seen_by_another,
    |b: Backend| async move {
        let a = b.open().await;
        let other = b.open().await;
        let account_id = acme(a.as_ref()).await;
        let key = a.create_key(account_id, &[Scope::Stream]).await.unwrap();
        let token = new_token(account_id, &key.record.id, None);
        a.create_token(token.clone()).await.unwrap();
        assert!(a.revoke_token(token.hash, account_id, at(1)).await.unwrap());
        assert_eq!(
            other
                .find_token(token.hash)
                .await
                .unwrap()
                .unwrap()
                .revoked_at,
            Some(at(1))
        );
        a.revoke_key(&key.record.id).await.unwrap();
        assert_eq!(
            other
                .find_key(key.key.hash())
                .await
                .unwrap()
                .unwrap()
                .status,
            KeyStatus::Revoked
        );
    }
);

contract!(
    the_video_budget_is_taken_all_or_nothing_and_refunded,
    |b: Backend| async move {
        let store = b.open().await;
        let (account_id, key_id) = account_with_key(store.as_ref(), "acme", &[Scope::Stream]).await;
        let new = new_token(account_id, &key_id, Some(10.0));
        store.create_token(new.clone()).await.unwrap();
        assert_eq!(
            store.consume_video_seconds(&new.id, 6.0).await.unwrap(),
            BudgetOutcome::Granted {
                remaining: Some(4.0)
            }
        );
        assert_eq!(
            store.consume_video_seconds(&new.id, 6.0).await.unwrap(),
            BudgetOutcome::Exhausted { remaining: 4.0 }
        );
        store.refund_video_seconds(&new.id, 6.0).await.unwrap();
        let record = store.find_token(new.hash).await.unwrap().unwrap();
        assert_eq!(record.video_seconds_left(), Some(10.0));

        let unlimited = new_token(account_id, &key_id, None);
        store.create_token(unlimited.clone()).await.unwrap();
        assert_eq!(
            store
                .consume_video_seconds(&unlimited.id, 1e6)
                .await
                .unwrap(),
            BudgetOutcome::Granted { remaining: None }
        );
        assert!(matches!(
            store
                .consume_video_seconds("tok_0000000000000000", 1.0)
                .await,
            Err(StoreError::UnknownKey(_))
        ));
    }
);

contract!(
    the_oldest_queued_job_is_the_earliest_accepted_still_waiting,
    |b: Backend| async move {
        let store = b.open().await;
        let account_id = acme(store.as_ref()).await;
        assert_eq!(store.oldest_queued().await.unwrap(), None);
        for (id, second) in [("first", 5), ("second", 9), ("third", 12)] {
            let job = NewJob {
                created_at: at(second),
                ..new_job(account_id, id, None)
            };
            store.create_job(job).await.unwrap();
        }
        assert_eq!(store.oldest_queued().await.unwrap(), Some(at(5)));
        // Running or ended jobs wait no more.
        assert!(store.mark_running("first", at(20)).await.unwrap());
        assert_eq!(store.oldest_queued().await.unwrap(), Some(at(9)));
        let failed = ServiceError::new(ErrorCode::Ih1001);
        assert!(store.mark_failed("second", &failed, at(21)).await.unwrap());
        assert_eq!(store.oldest_queued().await.unwrap(), Some(at(12)));
        assert!(store.mark_running("third", at(22)).await.unwrap());
        assert_eq!(store.oldest_queued().await.unwrap(), None);
    }
);

contract!(
    jobs_move_only_forward_through_their_states,
    |b: Backend| async move {
        let store = b.open().await;
        let account_id = acme(store.as_ref()).await;
        let created = store
            .create_job(new_job(account_id, "a", None))
            .await
            .unwrap();
        assert_eq!(created.status, UploadJobStatus::Queued);
        assert_eq!(created.created_at, at(0));
        assert_eq!(store.count_active().await.unwrap(), 1);
        // Completing needs running first.
        assert!(!store
            .mark_completed("a", &result(), &turns(), at(1))
            .await
            .unwrap());
        assert_eq!(created.speaker_turns, None, "no turns before completion");
        assert!(store.mark_running("a", at(1)).await.unwrap());
        assert!(!store.mark_running("a", at(1)).await.unwrap());
        assert!(store
            .mark_completed("a", &result(), &turns(), at(2))
            .await
            .unwrap());
        // A finished job is not failed afterwards.
        let late = ServiceError::new(ErrorCode::Ih1001);
        assert!(!store.mark_failed("a", &late, at(3)).await.unwrap());
        let done = store.job("a").await.unwrap().unwrap();
        assert_eq!(done.status, UploadJobStatus::Completed);
        assert_eq!(done.result, Some(result()));
        assert_eq!(done.error, None);
        // The turns its analysis read come back as recorded, for its report.
        assert_eq!(done.speaker_turns, Some(turns()));
        assert_eq!(store.count_active().await.unwrap(), 0);
        assert_eq!(store.job("missing").await.unwrap(), None);
    }
);

contract!(
    failing_a_job_keeps_its_error_and_gives_back_its_charges,
    |b: Backend| async move {
        let store = b.open().await;
        let (account_id, key_id) = account_with_key(store.as_ref(), "acme", &[Scope::Upload]).await;
        let token = new_token(account_id, &key_id, Some(20.0));
        store.create_token(token.clone()).await.unwrap();
        let day = date!(2026 - 01 - 15);
        store
            .charge_analysis_seconds(account_id, day, 12.0)
            .await
            .unwrap();
        store.consume_video_seconds(&token.id, 12.0).await.unwrap();
        store
            .create_job(new_job(account_id, "b", Some(token.id.clone())))
            .await
            .unwrap();
        let error = ServiceError::with_message(ErrorCode::Ih5002, "broken moov atom");
        assert!(store.mark_failed("b", &error, at(1)).await.unwrap());
        // Failing twice refunds once.
        assert!(!store.mark_failed("b", &error, at(2)).await.unwrap());
        let failed = store.job("b").await.unwrap().unwrap();
        assert_eq!(failed.status, UploadJobStatus::Failed);
        assert_eq!(failed.error, Some(error));
        let usage = store.usage(account_id, day).await.unwrap();
        assert_eq!((usage.total_seconds, usage.day_seconds), (0.0, 0.0));
        let token = store.find_token(token.hash).await.unwrap().unwrap();
        assert_eq!(token.video_seconds_used, 0.0);
    }
);

contract!(
    a_restart_fails_unfinished_jobs_with_ih1004_and_purges_expired_ones,
    |b: Backend| async move {
        let store = b.open().await;
        let account_id = acme(store.as_ref()).await;
        for id in ["queued", "running", "done"] {
            store
                .create_job(new_job(account_id, id, None))
                .await
                .unwrap();
        }
        store.mark_running("running", at(1)).await.unwrap();
        store.mark_running("done", at(1)).await.unwrap();
        store
            .mark_completed("done", &result(), &[], at(2))
            .await
            .unwrap();
        assert_eq!(store.count_active().await.unwrap(), 2);
        store.close().await;
        drop(store);

        let store = b.open().await;
        assert_eq!(store.mark_interrupted(at(10)).await.unwrap(), 2);
        for id in ["queued", "running"] {
            let job = store.job(id).await.unwrap().unwrap();
            assert_eq!(job.status, UploadJobStatus::Failed, "{id}");
            assert_eq!(job.error.unwrap().code, ErrorCode::Ih1004, "{id}");
        }
        assert_eq!(
            store.job("done").await.unwrap().unwrap().status,
            UploadJobStatus::Completed
        );
        // The old worker finishing later changes nothing.
        assert!(!store
            .mark_completed("running", &result(), &[], at(11))
            .await
            .unwrap());
        assert_eq!(store.mark_interrupted(at(12)).await.unwrap(), 0);

        assert_eq!(store.purge_expired(at(3599)).await.unwrap(), 0);
        assert_eq!(store.purge_expired(at(3600)).await.unwrap(), 3);
        assert_eq!(store.job("done").await.unwrap(), None);
    }
);

/// PostgreSQL only: what sharing a store between live instances adds.
mod shared {
    use super::*;

    async fn pg(test: &str) -> Option<(Backend, PgStore, PgStore)> {
        let backend = Backend::postgres(test).await?;
        let Place::Postgres(url) = &backend.place else {
            unreachable!()
        };
        let options = PgStoreOptions {
            pool_size: 2,
            lease: TEST_LEASE,
        };
        let a = PgStore::open(url, options.clone()).await.unwrap();
        let other = PgStore::open(url, options).await.unwrap();
        Some((backend, a, other))
    }

    /// [`pg`] with the account "acme" (`limits`) made through the first instance, and its id.
    async fn pg_with_account(
        test: &str,
        limits: AccountLimits,
    ) -> Option<(Backend, PgStore, PgStore, i64)> {
        let (backend, a, other) = pg(test).await?;
        let account_id = a.ensure_account("acme", limits).await.unwrap().id;
        Some((backend, a, other, account_id))
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_starting_instance_leaves_a_live_peers_jobs_alone() {
        let Some((_backend, a, other, account_id)) = pg_with_account(
            "a_starting_instance_leaves_a_live_peers_jobs_alone",
            AccountLimits::default(),
        )
        .await
        else {
            return;
        };
        a.create_job(new_job(account_id, "a1", None)).await.unwrap();
        a.mark_running("a1", Timestamp::now()).await.unwrap();
        // The peer starts (or sweeps) while A's lease holds.
        assert_eq!(other.mark_interrupted(Timestamp::now()).await.unwrap(), 0);
        assert_eq!(
            other.job("a1").await.unwrap().unwrap().status,
            UploadJobStatus::Running
        );
        // A's own sweep never fails its own jobs either.
        let later = Timestamp::now().plus_seconds(3600);
        assert_eq!(a.mark_interrupted(later).await.unwrap(), 0);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_dead_instances_jobs_fail_with_ih1004_once_its_lease_lapses() {
        let Some((_backend, a, other, account_id)) = pg_with_account(
            "a_dead_instances_jobs_fail_with_ih1004_once_its_lease_lapses",
            quotas(1000, 1000),
        )
        .await
        else {
            return;
        };
        let day = date!(2026 - 01 - 15);
        a.charge_analysis_seconds(account_id, day, 12.0)
            .await
            .unwrap();
        a.create_job(new_job(account_id, "a1", None)).await.unwrap();
        a.mark_running("a1", Timestamp::now()).await.unwrap();
        // A is killed: no more renewals, no deregistration.
        a.stop_heartbeat();
        let lapsed = Timestamp::now().plus_seconds(TEST_LEASE.as_secs() as i64 + 1);
        assert_eq!(other.mark_interrupted(lapsed).await.unwrap(), 1);
        let job = other.job("a1").await.unwrap().unwrap();
        assert_eq!(job.status, UploadJobStatus::Failed);
        assert_eq!(job.error.unwrap().code, ErrorCode::Ih1004);
        // Its charge was given back, once.
        assert_eq!(other.mark_interrupted(lapsed).await.unwrap(), 0);
        assert_eq!(
            other.usage(account_id, day).await.unwrap().total_seconds,
            0.0
        );
        // A coming back late cannot complete what was declared lost.
        assert!(!a
            .mark_completed("a1", &result(), &[], lapsed)
            .await
            .unwrap());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn migrations_are_versioned_and_a_newer_schema_is_refused() {
        let Some((backend, a, _other)) =
            pg("migrations_are_versioned_and_a_newer_schema_is_refused").await
        else {
            return;
        };
        let Place::Postgres(url) = &backend.place else {
            unreachable!()
        };
        // Migrating again is a no-op that keeps data.
        let account = a
            .ensure_account("acme", AccountLimits::default())
            .await
            .unwrap();
        let version = PgStore::migrate_only(url).await.unwrap();
        assert!(version >= 1);
        assert_eq!(a.account(account.id).await.unwrap(), Some(account));

        let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(connection);
        client
            .batch_execute("UPDATE attune_schema SET version = 999")
            .await
            .unwrap();
        let error = PgStore::open(url, PgStoreOptions::default())
            .await
            .unwrap_err();
        assert!(matches!(error, StoreError::Incompatible(_)), "{error}");
    }

    #[tokio::test]
    async fn an_unreachable_database_is_unavailable_not_a_panic() {
        // Port 1 on loopback: nothing listens there.
        let error = PgStore::open(
            "postgres://attune@127.0.0.1:1/attune?connect_timeout=2",
            PgStoreOptions::default(),
        )
        .await
        .unwrap_err();
        assert!(matches!(error, StoreError::Unavailable(_)), "{error}");
        let error = PgStore::open("postgres://%%%", PgStoreOptions::default())
            .await
            .unwrap_err();
        assert!(matches!(error, StoreError::Unavailable(_)), "{error}");
    }

    fn media(bytes: &'static [u8]) -> QueuedMedia {
        QueuedMedia {
            bytes: bytes::Bytes::from_static(bytes),
            file_name: Some("call.wav".into()),
            content_type: None,
            include: vec![
                IncludeFlag::Signals,
                IncludeFlag::ConversationQualityTimeline,
            ],
            duration_seconds: 12.5,
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_job_queued_on_one_instance_is_claimed_once_by_another_with_its_media() {
        let Some((_backend, a, other)) =
            pg("a_job_queued_on_one_instance_is_claimed_once_by_another_with_its_media").await
        else {
            return;
        };
        assert!(a.shares_queue());
        let account_id = acme(&a).await;
        let record = a
            .enqueue_job(new_job(account_id, "q1", None), media(b"RIFF-one"))
            .await
            .unwrap();
        assert_eq!(record.status, UploadJobStatus::Queued);
        let claimed = other.claim_job(at(1)).await.unwrap().expect("a queued job");
        assert_eq!(claimed.id, "q1");
        assert_eq!(claimed.model, Model::Inter2);
        assert_eq!(claimed.media, media(b"RIFF-one"));
        assert_eq!(
            a.job("q1").await.unwrap().unwrap().status,
            UploadJobStatus::Running
        );
        // Claimed once: neither instance gets it again.
        assert_eq!(a.claim_job(at(2)).await.unwrap(), None);
        assert_eq!(other.claim_job(at(2)).await.unwrap(), None);
        // The claimer's lease covers it: A dying changes nothing for it...
        a.stop_heartbeat();
        let lapsed = Timestamp::now().plus_seconds(TEST_LEASE.as_secs() as i64 + 1);
        assert_eq!(other.mark_interrupted(lapsed).await.unwrap(), 0);
        assert!(other
            .mark_completed("q1", &result(), &[], at(3))
            .await
            .unwrap());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_claimers_take_different_jobs_oldest_first() {
        let Some((_backend, a, other, account_id)) = pg_with_account(
            "concurrent_claimers_take_different_jobs_oldest_first",
            AccountLimits::default(),
        )
        .await
        else {
            return;
        };
        let mut later = new_job(account_id, "q2", None);
        later.created_at = at(5);
        a.enqueue_job(later, media(b"two")).await.unwrap();
        a.enqueue_job(new_job(account_id, "q1", None), media(b"one"))
            .await
            .unwrap();
        let (first, second) = tokio::join!(a.claim_job(at(10)), other.claim_job(at(10)));
        let mut ids = vec![first.unwrap().unwrap().id, second.unwrap().unwrap().id];
        ids.sort();
        assert_eq!(ids, ["q1", "q2"]);
        // Sequentially, the oldest goes first.
        a.enqueue_job(
            {
                let mut job = new_job(account_id, "q4", None);
                job.created_at = at(7);
                job
            },
            media(b"four"),
        )
        .await
        .unwrap();
        a.enqueue_job(new_job(account_id, "q3", None), media(b"three"))
            .await
            .unwrap();
        assert_eq!(other.claim_job(at(10)).await.unwrap().unwrap().id, "q3");
        assert_eq!(other.claim_job(at(10)).await.unwrap().unwrap().id, "q4");
        // Nothing expired is handed out.
        a.enqueue_job(new_job(account_id, "q5", None), media(b"five"))
            .await
            .unwrap();
        assert_eq!(other.claim_job(at(3600)).await.unwrap(), None);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_queue_outlives_the_instance_that_accepted_it_and_a_failed_job_drops_its_media() {
        let Some((_backend, a, other, account_id)) = pg_with_account(
            "a_queue_outlives_the_instance_that_accepted_it_and_a_failed_job_drops_its_media",
            AccountLimits::default(),
        )
        .await
        else {
            return;
        };
        a.enqueue_job(new_job(account_id, "q1", None), media(b"one"))
            .await
            .unwrap();
        a.enqueue_job(new_job(account_id, "q2", None), media(b"two"))
            .await
            .unwrap();
        // A is killed with both jobs still queued: the sweep leaves them.
        a.stop_heartbeat();
        let lapsed = Timestamp::now().plus_seconds(TEST_LEASE.as_secs() as i64 + 1);
        assert_eq!(other.mark_interrupted(lapsed).await.unwrap(), 0);
        // A queued job failed (say, by an operator) is never handed out.
        let error = ServiceError::new(ErrorCode::Ih1001);
        assert!(other.mark_failed("q1", &error, at(1)).await.unwrap());
        let claimed = other.claim_job(at(1)).await.unwrap().unwrap();
        assert_eq!(claimed.id, "q2");
        assert_eq!(other.claim_job(at(1)).await.unwrap(), None);
        // The claimer killed mid-job: the job fails with ih1004 once its
        // lease lapses, like any running job.
        other.stop_heartbeat();
        let third = PgStore::open(
            &match &_backend.place {
                Place::Postgres(url) => url.clone(),
                Place::Sqlite(_) => unreachable!(),
            },
            PgStoreOptions {
                pool_size: 2,
                lease: TEST_LEASE,
            },
        )
        .await
        .unwrap();
        assert_eq!(third.mark_interrupted(lapsed).await.unwrap(), 1);
        let job = third.job("q2").await.unwrap().unwrap();
        assert_eq!(job.error.unwrap().code, ErrorCode::Ih1004);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_embedded_store_keeps_no_shared_queue() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path().join("attune.sqlite3"))
            .await
            .unwrap();
        assert!(!store.shares_queue());
        assert_eq!(store.claim_job(at(0)).await.unwrap(), None);
        // Requests are counted in each instance's memory, not here.
        assert!(!store.counts_requests());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn failed_calls_are_counted_by_operation() {
        let Some((backend, a, _other)) = pg("failed_calls_are_counted_by_operation").await else {
            return;
        };
        let Place::Postgres(url) = &backend.place else {
            unreachable!()
        };
        let counts = a
            .error_counts()
            .expect("the shared store counts its failures");
        a.key_count().await.unwrap();
        assert_eq!(counts.get("key_count"), 0);
        // The database goes away under the running instance.
        let admin = std::env::var("ATTUNE_TEST_PG_URL").unwrap();
        let (client, connection) = tokio_postgres::connect(&admin, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(connection);
        let name = url.rsplit('/').next().unwrap();
        client
            .batch_execute(&format!("DROP DATABASE {name} WITH (FORCE)"))
            .await
            .unwrap();
        for _ in 0..2 {
            let error = a.key_count().await.unwrap_err();
            assert!(matches!(error, StoreError::Unavailable(_)), "{error}");
        }
        assert!(a.job("j1").await.is_err());
        assert_eq!(counts.get("key_count"), 2);
        assert_eq!(counts.get("job"), 1);
        assert_eq!(counts.get("find_key"), 0);
    }

    fn taken(outcome: SlotOutcome) {
        assert_eq!(outcome, SlotOutcome::Taken);
    }

    /// Admits a request on `store`, retrying for a while as long as every
    /// place is held: a place freed on another instance reaches the store
    /// in the background, within two return periods (0.5 s).
    async fn admit_once_placed(
        store: &PgStore,
        id: i64,
        limits: AccountLimits,
        now: i64,
    ) -> SlotOutcome {
        let mut outcome = store.admit_request(id, limits, now).await.unwrap();
        for _ in 0..40 {
            if !matches!(outcome, SlotOutcome::Full(_)) {
                break;
            }
            assert_eq!(outcome, SlotOutcome::Full(limits.concurrent_requests));
            tokio::time::sleep(Duration::from_millis(25)).await;
            outcome = store.admit_request(id, limits, now).await.unwrap();
        }
        outcome
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn request_limits_hold_for_every_instance_together() {
        let Some((_backend, a, b)) = pg("request_limits_hold_for_every_instance_together").await
        else {
            return;
        };
        assert!(a.counts_requests());
        let limits = AccountLimits {
            requests_per_minute: 4,
            concurrent_requests: 3,
            ..AccountLimits::default()
        };
        let id = a.ensure_account("acme", limits).await.unwrap().id;
        let now = at(0).unix_millis();
        // Three in flight across A and B: the fourth is refused on either.
        taken(a.admit_request(id, limits, now).await.unwrap());
        taken(a.admit_request(id, limits, now).await.unwrap());
        taken(b.admit_request(id, limits, now).await.unwrap());
        assert_eq!(
            b.admit_request(id, limits, now).await.unwrap(),
            SlotOutcome::Full(3)
        );
        // One answered on A frees a place for B: the minute's fourth request.
        // A gives it back at once (the account is at its limit), in the
        // background: B takes it within a moment.
        a.release_request(id);
        taken(admit_once_placed(&b, id, limits, now).await);
        b.release_request(id);
        // The minute's allowance of 4 is used up across both: the fifth waits
        // one interval (60 s / 4), on A as on B, and counts against nothing.
        for store in [&a, &b] {
            assert_eq!(
                admit_once_placed(store, id, limits, now).await,
                SlotOutcome::RateLimited(Duration::from_secs(15))
            );
        }
        let later = at(15).unix_millis();
        taken(admit_once_placed(&a, id, limits, later).await);
        // Another account is not affected.
        let other = a.ensure_account("other", limits).await.unwrap().id;
        taken(b.admit_request(other, limits, now).await.unwrap());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_tokens_sessions_are_capped_across_instances() {
        let Some((_backend, a, b)) = pg("a_tokens_sessions_are_capped_across_instances").await
        else {
            return;
        };
        taken(a.open_token_session("tok_1", 2).await.unwrap());
        taken(b.open_token_session("tok_1", 2).await.unwrap());
        assert_eq!(
            a.open_token_session("tok_1", 2).await.unwrap(),
            SlotOutcome::Full(2)
        );
        // Another token has its own count.
        taken(a.open_token_session("tok_2", 1).await.unwrap());
        b.close_token_session("tok_1").await.unwrap();
        taken(a.open_token_session("tok_1", 2).await.unwrap());
        // A holds two now: closing one there frees a place for B.
        a.close_token_session("tok_1").await.unwrap();
        taken(b.open_token_session("tok_1", 2).await.unwrap());
        assert_eq!(
            b.open_token_session("tok_1", 2).await.unwrap(),
            SlotOutcome::Full(2)
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_killed_instances_slots_stop_counting_when_its_lease_lapses() {
        let Some(backend) =
            Backend::postgres("a_killed_instances_slots_stop_counting_when_its_lease_lapses").await
        else {
            return;
        };
        let Place::Postgres(url) = &backend.place else {
            unreachable!()
        };
        let short = Duration::from_secs(1);
        let a = PgStore::open(
            url,
            PgStoreOptions {
                pool_size: 2,
                lease: short,
            },
        )
        .await
        .unwrap();
        let b = PgStore::open(
            url,
            PgStoreOptions {
                pool_size: 2,
                lease: TEST_LEASE,
            },
        )
        .await
        .unwrap();
        taken(a.open_token_session("tok_1", 1).await.unwrap());
        assert_eq!(
            b.open_token_session("tok_1", 1).await.unwrap(),
            SlotOutcome::Full(1)
        );
        // A is killed while its session is open: nothing releases the slot.
        a.stop_heartbeat();
        tokio::time::sleep(short + Duration::from_millis(300)).await;
        taken(b.open_token_session("tok_1", 1).await.unwrap());
    }
}
