//! v2 jobs: the envelope, `wait_seconds`, expiry, ownership, a full
//! instance (`ih1002`), an unreachable store (`ih1003`), and jobs interrupted
//! by a restart (`ih1004`).

use crate::common::{
    correlation_id, expect_error, get_job, json, poll_until_done, submit, Harness,
};
use attune_core::wire::{Model, Timestamp, UploadJobResult};
use attune_core::{ErrorCode, ServiceError};
use attune_server::store::StoreFuture;
use attune_server::{
    Account, AccountLimits, CreatedKey, JobRecord, JobStore, KeyHash, KeyRecord, KeyStore, NewJob,
    QuotaOutcome, Scope, SpeakerTurn, StoreError, Usage, UsageStore,
};
use std::sync::Arc;
use time::Date;

fn is_job_id(text: &str) -> bool {
    text.len() == 32
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

fn timestamp(value: &serde_json::Value) -> Timestamp {
    serde_json::from_value(value.clone()).unwrap()
}

#[tokio::test]
async fn a_submission_answers_202_with_the_queued_envelope_then_completes() {
    let harness = Harness::new().await;
    let key = harness.key("acme", &Scope::ALL).await;
    let server = harness.start().await;
    let response = submit(
        &server,
        &key,
        "inter-2-audio",
        &[
            ("include[]", "signals"),
            ("include[]", "conversation_quality_overall"),
        ],
    )
    .await;
    assert_eq!(response.status(), 202);
    let envelope = json(response).await;
    let job_id = envelope["job_id"].as_str().unwrap().to_owned();
    assert!(is_job_id(&job_id), "{job_id}");
    assert_eq!(envelope["status"], "queued");
    assert_eq!(envelope["model"], "inter-2-audio");
    assert_eq!(envelope["status_url"], format!("/v2/upload/jobs/{job_id}"));
    let created = timestamp(&envelope["created_at"]);
    assert_eq!(created, crate::common::start_time());
    assert_eq!(
        timestamp(&envelope["expires_at"]),
        created.plus_seconds(3600)
    );
    assert!(envelope.get("result").is_none(), "{envelope}");
    assert!(envelope.get("error").is_none(), "{envelope}");

    let done = poll_until_done(&server, &key, &job_id).await;
    assert_eq!(done["status"], "completed");
    assert!(done.get("error").is_none(), "{done}");
    let result: UploadJobResult = serde_json::from_value(done["result"].clone()).unwrap();
    assert_eq!(result.duration_seconds, 12.0);
    assert_eq!(result.windows.len(), 3);
    assert_eq!(result.signals.map(|s| s.len()), Some(1));
    let quality = result.conversation_quality.unwrap();
    assert!(quality.overall.is_some() && quality.timeline.is_none());
    // Job ids differ.
    let again = json(submit(&server, &key, "inter-2", &[]).await).await;
    assert_ne!(again["job_id"], job_id.as_str());
    server.shutdown().await;
}

#[tokio::test]
async fn wait_seconds_answers_200_with_the_finished_job_or_202_when_it_is_not() {
    let harness = Harness::new().await;
    let key = harness.key("acme", &Scope::ALL).await;
    let server = harness.start().await;
    let response = submit(&server, &key, "inter-2", &[("wait_seconds", "30")]).await;
    assert_eq!(response.status(), 200);
    let envelope = json(response).await;
    assert_eq!(envelope["status"], "completed");
    assert!(envelope["result"]["windows"].is_array());
    assert!(envelope["result"].get("signals").is_none(), "not requested");

    harness.runner.set(|script| {
        script.run_error = Some(ServiceError::with_message(
            ErrorCode::Ih5002,
            "the moov atom is truncated",
        ))
    });
    let response = submit(&server, &key, "inter-2", &[("wait_seconds", "30")]).await;
    assert_eq!(response.status(), 200);
    let submitted_as = correlation_id(&response);
    let envelope = json(response).await;
    assert_eq!(envelope["status"], "failed");
    assert!(envelope.get("result").is_none(), "{envelope}");
    assert_eq!(envelope["error"]["error_id"], "ih5002");
    assert_eq!(envelope["error"]["message"], "the moov atom is truncated");
    assert_eq!(envelope["error"]["correlation_id"], submitted_as.as_str());
    assert_eq!(
        envelope["error"]["link"],
        format!(
            "{}/api-reference/error-handling#ih5002-corrupted-video",
            crate::common::DOCS_URL
        )
    );

    // Not finished within the wait: 202, queued.
    harness.runner.set(|script| {
        script.run_error = None;
        script.hold = true;
    });
    let response = submit(&server, &key, "inter-2", &[("wait_seconds", "1")]).await;
    assert_eq!(response.status(), 202);
    let envelope = json(response).await;
    assert_eq!(envelope["status"], "queued");
    let job_id = envelope["job_id"].as_str().unwrap().to_owned();
    let running = json(get_job(&server, &key, &job_id).await).await;
    assert_eq!(running["status"], "running");
    harness.runner.release();
    assert_eq!(
        poll_until_done(&server, &key, &job_id).await["status"],
        "completed"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn a_job_is_readable_by_its_account_until_it_expires() {
    let harness = Harness::new().await;
    let key = harness.key("acme", &Scope::ALL).await;
    let colleague = harness.key("acme", &[Scope::Upload]).await;
    let stranger = harness.key("globex", &Scope::ALL).await;
    let server = harness.start().await;
    let envelope = json(submit(&server, &key, "inter-2", &[("wait_seconds", "30")]).await).await;
    let job_id = envelope["job_id"].as_str().unwrap();

    // Any credential of the account reads it; another account gets the
    // answer a missing job gets.
    assert_eq!(get_job(&server, &colleague, job_id).await.status(), 200);
    let foreign = expect_error(
        get_job(&server, &stranger, job_id).await,
        404,
        ErrorCode::Ih4021,
    )
    .await;
    let missing = expect_error(
        get_job(&server, &key, "ffffffffffffffffffffffffffffffff").await,
        404,
        ErrorCode::Ih4021,
    )
    .await;
    assert_eq!(foreign.message, missing.message);
    expect_error(
        get_job(&server, &key, "not-a-job").await,
        404,
        ErrorCode::Ih4021,
    )
    .await;

    harness.clock.advance(3599);
    assert_eq!(get_job(&server, &key, job_id).await.status(), 200);
    harness.clock.advance(1);
    let expired = expect_error(get_job(&server, &key, job_id).await, 404, ErrorCode::Ih4021).await;
    assert_eq!(expired.message, missing.message);
    server.shutdown().await;
}

#[tokio::test]
async fn a_full_instance_answers_ih1002_with_retry_after() {
    let harness = Harness::new().await;
    let key = harness.key("acme", &Scope::ALL).await;
    let server = harness
        .start_with(
            |config| {
                config.analysis_threads = Some(1);
                config.max_jobs = Some(2);
            },
            harness.services(),
        )
        .await;
    harness.runner.set(|script| script.hold = true);
    let first = json(submit(&server, &key, "inter-2", &[]).await).await;
    let second = json(submit(&server, &key, "inter-2", &[]).await).await;
    harness.runner.wait_started(1).await;
    let refused = submit(&server, &key, "inter-2", &[]).await;
    assert_eq!(refused.headers()["retry-after"], "5");
    expect_error(refused, 503, ErrorCode::Ih1002).await;
    // Reads are not jobs and still work.
    let queued = json(get_job(&server, &key, second["job_id"].as_str().unwrap()).await).await;
    assert_eq!(queued["status"], "queued");

    harness.runner.release();
    for job in [&first, &second] {
        let id = job["job_id"].as_str().unwrap();
        assert_eq!(
            poll_until_done(&server, &key, id).await["status"],
            "completed"
        );
    }
    assert_eq!(submit(&server, &key, "inter-2", &[]).await.status(), 202);
    server.shutdown().await;
}

/// The embedded store, pausing after it records a job completed: the moment
/// in which a client may read `completed` before the server has moved on.
struct Lingering(Arc<dyn JobStore>);

impl JobStore for Lingering {
    fn create_job(&self, job: NewJob) -> StoreFuture<'_, JobRecord> {
        self.0.create_job(job)
    }
    fn job<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<JobRecord>> {
        self.0.job(id)
    }
    fn mark_running<'a>(&'a self, id: &'a str, at: Timestamp) -> StoreFuture<'a, bool> {
        self.0.mark_running(id, at)
    }
    fn mark_completed<'a>(
        &'a self,
        id: &'a str,
        result: &'a UploadJobResult,
        speaker_turns: &'a [SpeakerTurn],
        at: Timestamp,
    ) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let recorded = self.0.mark_completed(id, result, speaker_turns, at).await;
            tokio::time::sleep(std::time::Duration::from_millis(500)).await;
            recorded
        })
    }
    fn mark_failed<'a>(
        &'a self,
        id: &'a str,
        error: &'a ServiceError,
        at: Timestamp,
    ) -> StoreFuture<'a, bool> {
        self.0.mark_failed(id, error, at)
    }
    fn mark_interrupted(&self, at: Timestamp) -> StoreFuture<'_, u64> {
        self.0.mark_interrupted(at)
    }
    fn count_active(&self) -> StoreFuture<'_, u64> {
        self.0.count_active()
    }
    fn oldest_queued(&self) -> StoreFuture<'_, Option<Timestamp>> {
        self.0.oldest_queued()
    }
    fn purge_expired(&self, now: Timestamp) -> StoreFuture<'_, u64> {
        self.0.purge_expired(now)
    }
}

#[tokio::test]
async fn a_job_read_as_completed_no_longer_holds_its_slot() {
    // Found by CI: with one job slot, a client that saw its job `completed`
    // and submitted at once was refused with ih1002, because the slot was
    // given back only after the end state was written.
    let harness = Harness::new().await;
    let key = harness.key("acme", &Scope::ALL).await;
    let mut services = harness.services();
    services.jobs = Arc::new(Lingering(Arc::clone(&services.jobs)));
    let server = harness
        .start_with(
            |config| {
                config.analysis_threads = Some(1);
                config.max_jobs = Some(1);
            },
            services,
        )
        .await;
    let first = json(submit(&server, &key, "inter-2", &[]).await).await;
    let id = first["job_id"].as_str().unwrap();
    assert_eq!(
        poll_until_done(&server, &key, id).await["status"],
        "completed"
    );
    assert_eq!(submit(&server, &key, "inter-2", &[]).await.status(), 202);
    server.shutdown().await;
}

/// A store that cannot be reached.
struct Unreachable;

fn down<'a, T: Send + 'a>() -> StoreFuture<'a, T> {
    Box::pin(async { Err(StoreError::Unavailable("connection refused".into())) })
}

impl JobStore for Unreachable {
    fn create_job(&self, _: NewJob) -> StoreFuture<'_, JobRecord> {
        down()
    }
    fn job<'a>(&'a self, _: &'a str) -> StoreFuture<'a, Option<JobRecord>> {
        down()
    }
    fn mark_running<'a>(&'a self, _: &'a str, _: Timestamp) -> StoreFuture<'a, bool> {
        down()
    }
    fn mark_completed<'a>(
        &'a self,
        _: &'a str,
        _: &'a UploadJobResult,
        _: &'a [SpeakerTurn],
        _: Timestamp,
    ) -> StoreFuture<'a, bool> {
        down()
    }
    fn mark_failed<'a>(
        &'a self,
        _: &'a str,
        _: &'a ServiceError,
        _: Timestamp,
    ) -> StoreFuture<'a, bool> {
        down()
    }
    fn mark_interrupted(&self, _: Timestamp) -> StoreFuture<'_, u64> {
        down()
    }
    fn count_active(&self) -> StoreFuture<'_, u64> {
        down()
    }
    fn purge_expired(&self, _: Timestamp) -> StoreFuture<'_, u64> {
        down()
    }
}

impl KeyStore for Unreachable {
    fn ensure_account<'a>(&'a self, _: &'a str, _: AccountLimits) -> StoreFuture<'a, Account> {
        down()
    }
    fn create_key<'a>(&'a self, _: i64, _: &'a [Scope]) -> StoreFuture<'a, CreatedKey> {
        down()
    }
    fn list_keys(&self) -> StoreFuture<'_, Vec<KeyRecord>> {
        down()
    }
    fn revoke_key<'a>(&'a self, _: &'a str) -> StoreFuture<'a, KeyRecord> {
        down()
    }
    fn find_key(&self, _: KeyHash) -> StoreFuture<'_, Option<KeyRecord>> {
        down()
    }
    fn key_count(&self) -> StoreFuture<'_, u64> {
        down()
    }
    fn account(&self, _: i64) -> StoreFuture<'_, Option<Account>> {
        down()
    }
    fn update_account(&self, _: i64, _: bool, _: AccountLimits) -> StoreFuture<'_, Account> {
        down()
    }
}

impl UsageStore for Unreachable {
    fn usage(&self, _: i64, _: Date) -> StoreFuture<'_, Usage> {
        down()
    }
    fn charge_analysis_seconds(&self, _: i64, _: Date, _: f64) -> StoreFuture<'_, QuotaOutcome> {
        down()
    }
    fn refund_analysis_seconds(&self, _: i64, _: Date, _: f64) -> StoreFuture<'_, ()> {
        down()
    }
}

#[tokio::test]
async fn an_unreachable_job_store_answers_ih1003_and_bills_nothing() {
    let harness = Harness::new().await;
    let key = harness.key("acme", &Scope::ALL).await;
    let mut services = harness.services();
    services.jobs = Arc::new(Unreachable);
    let server = harness.start_with(|_| {}, services).await;
    let refused = expect_error(
        submit(&server, &key, "inter-2", &[]).await,
        503,
        ErrorCode::Ih1003,
    )
    .await;
    assert!(refused.message.unwrap().contains("unavailable"));
    expect_error(
        get_job(&server, &key, "00000000000000000000000000000000").await,
        503,
        ErrorCode::Ih1003,
    )
    .await;
    let account = harness
        .set_account("acme", true, AccountLimits::default())
        .await;
    let usage = harness
        .store
        .usage(account.id, crate::common::start_time().datetime().date())
        .await
        .unwrap();
    assert_eq!(usage.total_seconds, 0.0, "the charge was given back");
    server.shutdown().await;
}

#[tokio::test]
async fn unreachable_key_and_usage_stores_answer_ih1003() {
    let harness = Harness::new().await;
    let key = harness.key("acme", &Scope::ALL).await;
    let mut services = harness.services();
    services.keys = Arc::new(Unreachable);
    let server = harness.start_with(|_| {}, services).await;
    expect_error(
        get_job(&server, &key, "00000000000000000000000000000000").await,
        503,
        ErrorCode::Ih1003,
    )
    .await;
    server.shutdown().await;

    let mut services = harness.services();
    services.usage = Arc::new(Unreachable);
    let server = harness.start_with(|_| {}, services).await;
    expect_error(
        submit(&server, &key, "inter-2", &[]).await,
        503,
        ErrorCode::Ih1003,
    )
    .await;
    server.shutdown().await;
}

#[tokio::test]
async fn jobs_interrupted_by_a_restart_read_as_failed_with_ih1004() {
    let harness = Harness::new().await;
    let key = harness.key("acme", &Scope::ALL).await;
    let server = harness
        .start_with(
            |config| config.analysis_threads = Some(1),
            harness.services(),
        )
        .await;
    harness.runner.set(|script| script.hold = true);
    let running = json(submit(&server, &key, "inter-2", &[]).await).await;
    let queued = json(submit(&server, &key, "inter-2", &[]).await).await;
    harness.runner.wait_started(1).await;
    let running_id = running["job_id"].as_str().unwrap().to_owned();
    let queued_id = queued["job_id"].as_str().unwrap().to_owned();
    assert_eq!(
        json(get_job(&server, &key, &running_id).await).await["status"],
        "running"
    );
    server.shutdown().await;

    // The first server is gone (its analysis still holds a thread, as a
    // killed process's would hold nothing). A new one over the same store:
    let server = harness.start().await;
    for id in [&running_id, &queued_id] {
        let envelope = json(get_job(&server, &key, id).await).await;
        assert_eq!(envelope["status"], "failed", "{envelope}");
        assert_eq!(envelope["error"]["error_id"], "ih1004", "{envelope}");
        assert!(envelope.get("result").is_none());
    }
    // The old analysis finishing later does not bring the job back.
    harness.runner.release();
    harness.runner.wait_finished(1).await;
    // Its outcome is written right after it returns.
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    let envelope = json(get_job(&server, &key, &running_id).await).await;
    assert_eq!(envelope["error"]["error_id"], "ih1004");
    server.shutdown().await;
}

#[tokio::test]
async fn jobs_recorded_by_a_dead_process_fail_with_ih1004_when_the_store_reopens() {
    let harness = Harness::new().await;
    let key = harness.key("acme", &Scope::ALL).await;
    let account = harness
        .set_account("acme", true, AccountLimits::default())
        .await;
    let path = harness.dir.path().join("attune.sqlite3");
    {
        // A process that recorded a job and died without a word.
        let store = attune_server::SqliteStore::open(&path).await.unwrap();
        let now = crate::common::start_time();
        store
            .create_job(NewJob {
                id: "0123456789abcdef0123456789abcdef".into(),
                account_id: account.id,
                model: Model::Inter2,
                correlation_id: "f".repeat(32),
                created_at: now,
                expires_at: now.plus_seconds(3600),
                billed_seconds: 12.0,
                billed_day: now.datetime().date(),
                token_id: None,
            })
            .await
            .unwrap();
    }
    let server = harness.start().await;
    let envelope = json(get_job(&server, &key, "0123456789abcdef0123456789abcdef").await).await;
    assert_eq!(envelope["status"], "failed");
    assert_eq!(envelope["error"]["error_id"], "ih1004");
    assert_eq!(envelope["error"]["correlation_id"], "f".repeat(32));
    server.shutdown().await;
}

#[tokio::test]
async fn an_analysis_that_panics_fails_its_job_with_ih1001_and_the_server_goes_on() {
    let harness = Harness::new().await;
    let key = harness.key("acme", &Scope::ALL).await;
    let server = harness.start().await;
    harness.runner.set(|script| script.panic = true);
    let response = submit(&server, &key, "inter-2", &[("wait_seconds", "30")]).await;
    assert_eq!(response.status(), 200);
    let envelope = json(response).await;
    assert_eq!(envelope["status"], "failed", "{envelope}");
    assert_eq!(envelope["error"]["error_id"], "ih1001");
    // The next job is served as usual.
    harness.runner.set(|script| script.panic = false);
    let response = submit(&server, &key, "inter-2", &[("wait_seconds", "30")]).await;
    assert_eq!(json(response).await["status"], "completed");
    server.shutdown().await;
}
