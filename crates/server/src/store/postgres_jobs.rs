//! v2 upload jobs in the PostgreSQL store, each stamped with the instance
//! that accepted or claimed it so a dead instance's jobs can be told from
//! live ones, and the shared queue any instance claims from.
//!
//! A job enqueued with its media belongs to no instance until claimed: the
//! sweep of dead instances leaves it queued, so a queue outlives the instance
//! that accepted it (and a restart of every instance). Once claimed, its
//! media is deleted and the claimer's lease covers it.

use super::jobs::{decode_turns, encode_turns};
use super::postgres_base::{raw, refund_usage, PgStore};
use super::postgres_tokens::refund_token;
use super::sqlite::{day_key, from_sql_int};
use super::sqlite_tokens::timestamp;
use super::{
    ClaimedJob, JobRecord, JobStore, NewJob, QueuedMedia, SpeakerTurn, StoreError, StoreFuture,
};
use attune_core::wire::{IncludeFlag, Model, Timestamp, UploadJobResult, UploadJobStatus};
use attune_core::{ErrorCode, ServiceError};
use deadpool_postgres::Pool;
use tokio_postgres::{GenericClient, Row, Transaction};

const JOB_COLUMNS: &str = "id, account_id, model, status, correlation_id, created_at, \
     expires_at, result, error_code, error_message, speaker_turns FROM jobs";

fn job_record(row: &Row) -> Result<JobRecord, StoreError> {
    let id: String = row.try_get(0)?;
    let incompatible = |what: String| StoreError::Incompatible(format!("job {id}: {what}"));
    let model: String = row.try_get(2)?;
    let model =
        Model::parse(&model).ok_or_else(|| incompatible(format!("unknown model `{model}`")))?;
    let status: String = row.try_get(3)?;
    let status = UploadJobStatus::parse(&status)
        .ok_or_else(|| incompatible(format!("unknown status `{status}`")))?;
    let result = row
        .try_get::<_, Option<String>>(7)?
        .as_deref()
        .map(serde_json::from_str::<UploadJobResult>)
        .transpose()
        .map_err(|e| incompatible(format!("unreadable result: {e}")))?;
    let speaker_turns = row
        .try_get::<_, Option<String>>(10)?
        .as_deref()
        .map(decode_turns)
        .transpose()
        .map_err(|e| incompatible(format!("unreadable speaker turns: {e}")))?;
    let error = match row.try_get::<_, Option<String>>(8)? {
        None => None,
        Some(code) => {
            let code = ErrorCode::parse(&code)
                .ok_or_else(|| incompatible(format!("unknown error code `{code}`")))?;
            Some(match row.try_get::<_, Option<String>>(9)? {
                Some(message) => ServiceError::with_message(code, message),
                None => ServiceError::new(code),
            })
        }
    };
    Ok(JobRecord {
        account_id: row.try_get(1)?,
        model,
        status,
        correlation_id: row.try_get(4)?,
        created_at: timestamp(row.try_get(5)?)?,
        expires_at: timestamp(row.try_get(6)?)?,
        result,
        error,
        speaker_turns,
        id,
    })
}

async fn job_by_id(client: &impl GenericClient, id: &str) -> Result<Option<JobRecord>, StoreError> {
    client
        .query_opt(&format!("SELECT {JOB_COLUMNS} WHERE id = $1"), &[&id])
        .await?
        .as_ref()
        .map(job_record)
        .transpose()
}

/// Which unfinished jobs to fail.
enum Unfinished<'a> {
    /// This one.
    Job(&'a str),
    /// Those of instances other than `live` whose lease lapsed by `now`
    /// (or that deregistered).
    OfDeadInstances { live: &'a str, now: i64 },
}

/// Fails the chosen unfinished jobs with `error`, giving back what each was
/// charged, in `tx`. Rows are locked first (`FOR UPDATE`), so two instances
/// sweeping at once refund each job once.
async fn fail_unfinished(
    tx: &Transaction<'_>,
    which: Unfinished<'_>,
    error: &ServiceError,
    at: i64,
) -> Result<u64, StoreError> {
    let rows = match which {
        Unfinished::Job(id) => {
            tx.query(
                "SELECT id, account_id, billed_day, billed_seconds, token_id FROM jobs \
                 WHERE id = $1 AND status IN ('queued', 'running') FOR UPDATE",
                &[&id],
            )
            .await?
        }
        Unfinished::OfDeadInstances { live, now } => {
            tx.query(
                "SELECT j.id, j.account_id, j.billed_day, j.billed_seconds, j.token_id \
                 FROM jobs j LEFT JOIN instances i ON i.id = j.instance_id \
                 WHERE j.status IN ('queued', 'running') \
                 AND j.instance_id IS DISTINCT FROM $1 \
                 AND (i.id IS NULL OR i.lease_expires_at <= $2) \
                 AND NOT EXISTS (SELECT 1 FROM job_media m WHERE m.job_id = j.id) \
                 FOR UPDATE OF j SKIP LOCKED",
                &[&live, &now],
            )
            .await?
        }
    };
    for row in &rows {
        let id: String = row.try_get(0)?;
        let account_id: i64 = row.try_get(1)?;
        let day: String = row.try_get(2)?;
        let seconds: f64 = row.try_get(3)?;
        let token_id: Option<String> = row.try_get(4)?;
        refund_usage(tx, account_id, &day, seconds).await?;
        if let Some(token_id) = token_id {
            refund_token(tx, &token_id, seconds).await?;
        }
        tx.execute(
            "UPDATE jobs SET status = 'failed', error_code = $2, error_message = $3, \
             updated_at = $4 WHERE id = $1",
            &[&id, &error.code.as_str(), &error.message(), &at],
        )
        .await?;
        // A job failed while still queued never needs its upload again.
        tx.execute("DELETE FROM job_media WHERE job_id = $1", &[&id])
            .await?;
    }
    Ok(rows.len() as u64)
}

/// Fails with `ih1004` the unfinished jobs of every instance but `live`
/// whose lease lapsed by `now`; answers how many.
pub(super) async fn fail_jobs_of_dead_instances(
    pool: &Pool,
    live: &str,
    now: i64,
) -> Result<u64, StoreError> {
    let mut client = pool.get().await?;
    let tx = raw(&mut client).transaction().await?;
    let error = ServiceError::new(ErrorCode::Ih1004);
    let count =
        fail_unfinished(&tx, Unfinished::OfDeadInstances { live, now }, &error, now).await?;
    // Registrations whose jobs are all settled serve no one any more.
    tx.execute(
        "DELETE FROM instances i WHERE i.lease_expires_at <= $1 AND i.id <> $2 \
         AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.instance_id = i.id \
         AND j.status IN ('queued', 'running'))",
        &[&now, &live],
    )
    .await?;
    tx.commit().await?;
    Ok(count)
}

fn join_flags(flags: &[IncludeFlag]) -> String {
    flags
        .iter()
        .map(|flag| flag.as_str())
        .collect::<Vec<_>>()
        .join(",")
}

fn split_flags(id: &str, flags: &str) -> Result<Vec<IncludeFlag>, StoreError> {
    flags
        .split(',')
        .filter(|flag| !flag.is_empty())
        .map(|flag| {
            IncludeFlag::parse(flag).ok_or_else(|| {
                StoreError::Incompatible(format!("job {id}: unknown include flag `{flag}`"))
            })
        })
        .collect()
}

async fn insert_job(
    client: &impl GenericClient,
    job: &NewJob,
    instance_id: &str,
) -> Result<(), StoreError> {
    client
        .execute(
            "INSERT INTO jobs (id, account_id, model, status, correlation_id, \
             created_at, expires_at, updated_at, billed_seconds, billed_day, token_id, \
             instance_id) VALUES ($1, $2, $3, 'queued', $4, $5, $6, $5, $7, $8, $9, $10)",
            &[
                &job.id,
                &job.account_id,
                &job.model.as_str(),
                &job.correlation_id,
                &job.created_at.unix_millis(),
                &job.expires_at.unix_millis(),
                &job.billed_seconds,
                &day_key(job.billed_day),
                &job.token_id,
                &instance_id,
            ],
        )
        .await?;
    Ok(())
}

/// Claims the oldest unexpired job queued with media in one statement: the
/// row lock with `SKIP LOCKED` makes concurrent claimers take different jobs,
/// and the media row is deleted as it is handed over.
const CLAIM: &str = "WITH next AS ( \
        SELECT j.id FROM jobs j \
        WHERE j.status = 'queued' AND j.expires_at > $1 \
        AND EXISTS (SELECT 1 FROM job_media m WHERE m.job_id = j.id) \
        ORDER BY j.created_at, j.id LIMIT 1 FOR UPDATE OF j SKIP LOCKED), \
    claimed AS ( \
        UPDATE jobs SET status = 'running', updated_at = $1, instance_id = $2 \
        FROM next WHERE jobs.id = next.id \
        RETURNING jobs.id, jobs.model, jobs.correlation_id, jobs.created_at) \
    DELETE FROM job_media m USING claimed c WHERE m.job_id = c.id \
    RETURNING c.id, c.model, c.correlation_id, m.bytes, m.file_name, m.content_type, \
        m.include, m.duration_seconds, c.created_at";

impl JobStore for PgStore {
    fn shares_queue(&self) -> bool {
        true
    }

    fn enqueue_job(&self, job: NewJob, media: QueuedMedia) -> StoreFuture<'_, JobRecord> {
        self.errors.op("enqueue_job").run(async move {
            let mut client = self.pool.get().await?;
            let tx = raw(&mut client).transaction().await?;
            insert_job(&tx, &job, &self.instance_id).await?;
            tx.execute(
                "INSERT INTO job_media (job_id, bytes, file_name, content_type, include, \
                 duration_seconds) VALUES ($1, $2, $3, $4, $5, $6)",
                &[
                    &job.id,
                    &media.bytes.as_ref(),
                    &media.file_name,
                    &media.content_type,
                    &join_flags(&media.include),
                    &media.duration_seconds,
                ],
            )
            .await?;
            let record = job_by_id(&tx, &job.id).await?.ok_or_else(|| {
                StoreError::Incompatible(format!("job `{}` vanished after insert", job.id))
            })?;
            tx.commit().await?;
            Ok(record)
        })
    }

    fn claim_job(&self, at: Timestamp) -> StoreFuture<'_, Option<ClaimedJob>> {
        self.errors.op("claim_job").run(async move {
            let client = self.pool.get().await?;
            let Some(row) = client
                .query_opt(CLAIM, &[&at.unix_millis(), &&*self.instance_id])
                .await?
            else {
                return Ok(None);
            };
            let id: String = row.try_get(0)?;
            let model: String = row.try_get(1)?;
            let model = Model::parse(&model).ok_or_else(|| {
                StoreError::Incompatible(format!("job {id}: unknown model `{model}`"))
            })?;
            let include: String = row.try_get(6)?;
            let media = QueuedMedia {
                bytes: bytes::Bytes::from(row.try_get::<_, Vec<u8>>(3)?),
                file_name: row.try_get(4)?,
                content_type: row.try_get(5)?,
                include: split_flags(&id, &include)?,
                duration_seconds: row.try_get(7)?,
            };
            let created_at: i64 = row.try_get(8)?;
            let created_at = Timestamp::from_unix_millis(created_at).ok_or_else(|| {
                StoreError::Incompatible(format!("job {id}: creation time {created_at}"))
            })?;
            Ok(Some(ClaimedJob {
                correlation_id: row.try_get(2)?,
                created_at,
                model,
                media,
                id,
            }))
        })
    }

    fn create_job(&self, job: NewJob) -> StoreFuture<'_, JobRecord> {
        self.errors.op("create_job").run(async move {
            let client = self.pool.get().await?;
            insert_job(&**client, &job, &self.instance_id).await?;
            job_by_id(&**client, &job.id).await?.ok_or_else(|| {
                StoreError::Incompatible(format!("job `{}` vanished after insert", job.id))
            })
        })
    }

    fn job<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<JobRecord>> {
        self.errors.op("job").run(async move {
            let client = self.pool.get().await?;
            // Prepared once per connection: job reads are the hottest query.
            let statement = client
                .prepare_cached(&format!("SELECT {JOB_COLUMNS} WHERE id = $1"))
                .await?;
            client
                .query_opt(&statement, &[&id])
                .await?
                .as_ref()
                .map(job_record)
                .transpose()
        })
    }

    fn mark_running<'a>(&'a self, id: &'a str, at: Timestamp) -> StoreFuture<'a, bool> {
        self.errors.op("mark_running").run(async move {
            let client = self.pool.get().await?;
            let changed = client
                .execute(
                    "UPDATE jobs SET status = 'running', updated_at = $2, instance_id = $3 \
                     WHERE id = $1 AND status = 'queued'",
                    &[&id, &at.unix_millis(), &&*self.instance_id],
                )
                .await?;
            Ok(changed == 1)
        })
    }

    fn mark_completed<'a>(
        &'a self,
        id: &'a str,
        result: &'a UploadJobResult,
        speaker_turns: &'a [SpeakerTurn],
        at: Timestamp,
    ) -> StoreFuture<'a, bool> {
        // Serialising plain data with string keys cannot fail.
        let result = serde_json::to_string(result).expect("a job result serialises");
        let turns = encode_turns(speaker_turns);
        self.errors.op("mark_completed").run(async move {
            let client = self.pool.get().await?;
            let changed = client
                .execute(
                    "UPDATE jobs SET status = 'completed', result = $2, speaker_turns = $3, \
                     updated_at = $4 WHERE id = $1 AND status = 'running'",
                    &[&id, &result, &turns, &at.unix_millis()],
                )
                .await?;
            Ok(changed == 1)
        })
    }

    fn mark_failed<'a>(
        &'a self,
        id: &'a str,
        error: &'a ServiceError,
        at: Timestamp,
    ) -> StoreFuture<'a, bool> {
        self.errors.op("mark_failed").run(async move {
            let mut client = self.pool.get().await?;
            let tx = raw(&mut client).transaction().await?;
            let changed =
                fail_unfinished(&tx, Unfinished::Job(id), error, at.unix_millis()).await?;
            tx.commit().await?;
            Ok(changed == 1)
        })
    }

    /// On a shared store only the jobs of other instances whose lease lapsed
    /// (or that shut down) are failed: a starting instance must not fail the
    /// jobs its live peers are running.
    fn mark_interrupted(&self, at: Timestamp) -> StoreFuture<'_, u64> {
        self.errors
            .op("mark_interrupted")
            .run(fail_jobs_of_dead_instances(
                &self.pool,
                &self.instance_id,
                at.unix_millis(),
            ))
    }

    fn count_active(&self) -> StoreFuture<'_, u64> {
        self.errors.op("count_active").run(async move {
            let client = self.pool.get().await?;
            let count: i64 = client
                .query_one(
                    "SELECT COUNT(*) FROM jobs WHERE status IN ('queued', 'running')",
                    &[],
                )
                .await?
                .try_get(0)?;
            from_sql_int(count, "active job count")
        })
    }

    fn oldest_queued(&self) -> StoreFuture<'_, Option<Timestamp>> {
        self.errors.op("oldest_queued").run(async move {
            let client = self.pool.get().await?;
            // The partial index `jobs_queued` is ordered by `created_at`.
            let oldest: Option<i64> = client
                .query_one(
                    "SELECT MIN(created_at) FROM jobs WHERE status = 'queued'",
                    &[],
                )
                .await?
                .try_get(0)?;
            oldest.map(timestamp).transpose()
        })
    }

    fn purge_expired(&self, now: Timestamp) -> StoreFuture<'_, u64> {
        self.errors.op("purge_expired").run(async move {
            let client = self.pool.get().await?;
            let deleted = client
                .execute(
                    "DELETE FROM jobs WHERE expires_at <= $1",
                    &[&now.unix_millis()],
                )
                .await?;
            Ok(deleted)
        })
    }
}
