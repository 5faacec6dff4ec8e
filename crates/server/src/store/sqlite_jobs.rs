//! v2 upload jobs in the embedded SQLite store.

use super::jobs::{decode_turns, encode_turns};
use super::sqlite::{day_key, from_sql_int, refund_usage, SqliteStore};
use super::sqlite_tokens::{refund_token, timestamp};
use super::{JobRecord, JobStore, NewJob, SpeakerTurn, StoreError, StoreFuture};
use attune_core::wire::{Model, Timestamp, UploadJobResult, UploadJobStatus};
use attune_core::{ErrorCode, ServiceError};
use rusqlite::{params, Connection, OptionalExtension, Transaction, TransactionBehavior};

const JOB_COLUMNS: &str = "id, account_id, model, status, correlation_id, created_at, \
     expires_at, result, error_code, error_message, speaker_turns FROM jobs";

/// A job row as read, before its text columns are checked.
struct JobRow {
    id: String,
    account_id: i64,
    model: String,
    status: String,
    correlation_id: String,
    created_at: i64,
    expires_at: i64,
    result: Option<String>,
    error_code: Option<String>,
    error_message: Option<String>,
    speaker_turns: Option<String>,
}

impl JobRow {
    fn read(row: &rusqlite::Row<'_>) -> rusqlite::Result<JobRow> {
        Ok(JobRow {
            id: row.get(0)?,
            account_id: row.get(1)?,
            model: row.get(2)?,
            status: row.get(3)?,
            correlation_id: row.get(4)?,
            created_at: row.get(5)?,
            expires_at: row.get(6)?,
            result: row.get(7)?,
            error_code: row.get(8)?,
            error_message: row.get(9)?,
            speaker_turns: row.get(10)?,
        })
    }

    fn into_record(self) -> Result<JobRecord, StoreError> {
        let incompatible =
            |what: String| StoreError::Incompatible(format!("job {}: {what}", self.id));
        let model = Model::parse(&self.model)
            .ok_or_else(|| incompatible(format!("unknown model `{}`", self.model)))?;
        let status = UploadJobStatus::parse(&self.status)
            .ok_or_else(|| incompatible(format!("unknown status `{}`", self.status)))?;
        let result = self
            .result
            .as_deref()
            .map(serde_json::from_str::<UploadJobResult>)
            .transpose()
            .map_err(|e| incompatible(format!("unreadable result: {e}")))?;
        let speaker_turns = self
            .speaker_turns
            .as_deref()
            .map(decode_turns)
            .transpose()
            .map_err(|e| incompatible(format!("unreadable speaker turns: {e}")))?;
        let error = match self.error_code.as_deref() {
            None => None,
            Some(code) => {
                let code = ErrorCode::parse(code)
                    .ok_or_else(|| incompatible(format!("unknown error code `{code}`")))?;
                Some(match self.error_message {
                    Some(message) => ServiceError::with_message(code, message),
                    None => ServiceError::new(code),
                })
            }
        };
        Ok(JobRecord {
            account_id: self.account_id,
            model,
            status,
            correlation_id: self.correlation_id,
            created_at: timestamp(self.created_at)?,
            expires_at: timestamp(self.expires_at)?,
            result,
            error,
            speaker_turns,
            id: self.id,
        })
    }
}

fn job_by_id(conn: &Connection, id: &str) -> Result<Option<JobRecord>, StoreError> {
    conn.query_row(
        &format!("SELECT {JOB_COLUMNS} WHERE id = ?1"),
        [id],
        JobRow::read,
    )
    .optional()?
    .map(JobRow::into_record)
    .transpose()
}

/// Fails the unfinished job `only`, or every unfinished job when `None`,
/// with `error`, giving back what each was charged, in the transaction `tx`.
fn fail_unfinished(
    tx: &Transaction<'_>,
    only: Option<&str>,
    error: &ServiceError,
    at: Timestamp,
) -> Result<u64, StoreError> {
    let mut charges = tx.prepare(
        "SELECT account_id, billed_day, billed_seconds, token_id FROM jobs \
         WHERE status IN ('queued', 'running') AND (?1 IS NULL OR id = ?1)",
    )?;
    let rows = charges
        .query_map(params![only], |row| {
            Ok((
                row.get::<_, i64>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, f64>(2)?,
                row.get::<_, Option<String>>(3)?,
            ))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    drop(charges);
    for (account_id, day, seconds, token_id) in &rows {
        refund_usage(tx, *account_id, day, *seconds)?;
        if let Some(token_id) = token_id {
            refund_token(tx, token_id, *seconds)?;
        }
    }
    let changed = tx.execute(
        "UPDATE jobs SET status = 'failed', error_code = ?2, error_message = ?3, \
         updated_at = ?4 WHERE status IN ('queued', 'running') AND (?1 IS NULL OR id = ?1)",
        params![only, error.code.as_str(), error.message(), at.unix_millis()],
    )?;
    Ok(changed as u64)
}

impl JobStore for SqliteStore {
    fn create_job(&self, job: NewJob) -> StoreFuture<'_, JobRecord> {
        self.errors.op("create_job").run(self.call(move |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            tx.execute(
                "INSERT INTO jobs (id, account_id, model, status, correlation_id, created_at, \
                 expires_at, updated_at, billed_seconds, billed_day, token_id) \
                 VALUES (?1, ?2, ?3, 'queued', ?4, ?5, ?6, ?5, ?7, ?8, ?9)",
                params![
                    job.id,
                    job.account_id,
                    job.model.as_str(),
                    job.correlation_id,
                    job.created_at.unix_millis(),
                    job.expires_at.unix_millis(),
                    job.billed_seconds,
                    day_key(job.billed_day),
                    job.token_id,
                ],
            )?;
            let record = job_by_id(&tx, &job.id)?.ok_or_else(|| {
                StoreError::Incompatible(format!("job `{}` vanished after insert", job.id))
            })?;
            tx.commit()?;
            Ok(record)
        }))
    }

    fn job<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<JobRecord>> {
        let id = id.to_owned();
        self.errors
            .op("job")
            .run(self.call(move |conn| job_by_id(conn, &id)))
    }

    fn mark_running<'a>(&'a self, id: &'a str, at: Timestamp) -> StoreFuture<'a, bool> {
        let id = id.to_owned();
        self.errors.op("mark_running").run(self.call(move |conn| {
            let changed = conn.execute(
                "UPDATE jobs SET status = 'running', updated_at = ?2 \
                 WHERE id = ?1 AND status = 'queued'",
                params![id, at.unix_millis()],
            )?;
            Ok(changed == 1)
        }))
    }

    fn mark_completed<'a>(
        &'a self,
        id: &'a str,
        result: &'a UploadJobResult,
        speaker_turns: &'a [SpeakerTurn],
        at: Timestamp,
    ) -> StoreFuture<'a, bool> {
        let id = id.to_owned();
        // Serialising plain data with string keys cannot fail.
        let result = serde_json::to_string(result).expect("a job result serialises");
        let turns = encode_turns(speaker_turns);
        self.errors.op("mark_completed").run(self.call(move |conn| {
            let changed = conn.execute(
                "UPDATE jobs SET status = 'completed', result = ?2, speaker_turns = ?3, \
                 updated_at = ?4 WHERE id = ?1 AND status = 'running'",
                params![id, result, turns, at.unix_millis()],
            )?;
            Ok(changed == 1)
        }))
    }

    fn mark_failed<'a>(
        &'a self,
        id: &'a str,
        error: &'a ServiceError,
        at: Timestamp,
    ) -> StoreFuture<'a, bool> {
        let id = id.to_owned();
        let error = error.clone();
        self.errors.op("mark_failed").run(self.call(move |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let changed = fail_unfinished(&tx, Some(&id), &error, at)?;
            tx.commit()?;
            Ok(changed == 1)
        }))
    }

    fn mark_interrupted(&self, at: Timestamp) -> StoreFuture<'_, u64> {
        self.errors
            .op("mark_interrupted")
            .run(self.call(move |conn| {
                let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
                let error = ServiceError::new(ErrorCode::Ih1004);
                let changed = fail_unfinished(&tx, None, &error, at)?;
                tx.commit()?;
                Ok(changed)
            }))
    }

    fn count_active(&self) -> StoreFuture<'_, u64> {
        self.errors.op("count_active").run(self.call(|conn| {
            let count: i64 = conn.query_row(
                "SELECT COUNT(*) FROM jobs WHERE status IN ('queued', 'running')",
                [],
                |row| row.get(0),
            )?;
            from_sql_int(count, "active job count")
        }))
    }

    fn oldest_queued(&self) -> StoreFuture<'_, Option<Timestamp>> {
        self.errors.op("oldest_queued").run(self.call(|conn| {
            let oldest: Option<i64> = conn.query_row(
                "SELECT MIN(created_at) FROM jobs WHERE status = 'queued'",
                [],
                |row| row.get(0),
            )?;
            oldest.map(timestamp).transpose()
        }))
    }

    fn purge_expired(&self, now: Timestamp) -> StoreFuture<'_, u64> {
        self.errors.op("purge_expired").run(self.call(move |conn| {
            let deleted = conn.execute(
                "DELETE FROM jobs WHERE expires_at <= ?1",
                [now.unix_millis()],
            )?;
            Ok(deleted as u64)
        }))
    }
}
