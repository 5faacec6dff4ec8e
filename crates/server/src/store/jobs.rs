//! v2 upload jobs as the store keeps them, and the [`JobStore`] trait.
//!
//! Every state change is conditional on the state it leaves, so a late writer
//! cannot undo a later decision: a worker that finishes a job the next
//! process already declared interrupted (`ih1004`) changes nothing.

use super::StoreFuture;
use attune_core::wire::{Model, Timestamp, UploadJobResult, UploadJobStatus};
use attune_core::ServiceError;
use time::Date;

/// A job to record at submission.
#[derive(Debug, Clone, PartialEq)]
pub struct NewJob {
    /// 32 lowercase hex characters from 128 random bits.
    pub id: String,
    /// The submitting account.
    pub account_id: i64,
    /// The model submitted.
    pub model: Model,
    /// The submitting request's correlation id, quoted in the job's error.
    pub correlation_id: String,
    /// Submission time.
    pub created_at: Timestamp,
    /// When the job stops being readable (submission + 1 h).
    pub expires_at: Timestamp,
    /// Seconds charged to the account (and token) at submission; given back
    /// if the job fails.
    pub billed_seconds: f64,
    /// The UTC day the seconds were charged to.
    pub billed_day: Date,
    /// The client token the job was submitted with, whose budget was charged.
    pub token_id: Option<String>,
}

/// A job as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct JobRecord {
    /// The job id.
    pub id: String,
    /// The submitting account.
    pub account_id: i64,
    /// The model submitted.
    pub model: Model,
    /// The current state.
    pub status: UploadJobStatus,
    /// The submitting request's correlation id.
    pub correlation_id: String,
    /// Submission time.
    pub created_at: Timestamp,
    /// When the job stops being readable.
    pub expires_at: Timestamp,
    /// Set when `status` is `completed`.
    pub result: Option<UploadJobResult>,
    /// Set when `status` is `failed`.
    pub error: Option<ServiceError>,
}

/// v2 upload jobs.
pub trait JobStore: Send + Sync {
    /// Records a job `queued`.
    fn create_job(&self, job: NewJob) -> StoreFuture<'_, JobRecord>;

    /// The job with id `id`, expired or not.
    fn job<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<JobRecord>>;

    /// `queued` -> `running`; answers whether the job was queued.
    fn mark_running<'a>(&'a self, id: &'a str, at: Timestamp) -> StoreFuture<'a, bool>;

    /// `running` -> `completed` with `result`; answers whether the job was
    /// running.
    fn mark_completed<'a>(
        &'a self,
        id: &'a str,
        result: &'a UploadJobResult,
        at: Timestamp,
    ) -> StoreFuture<'a, bool>;

    /// `queued` or `running` -> `failed` with `error`, giving back what the
    /// job was charged; answers whether the job was unfinished.
    fn mark_failed<'a>(
        &'a self,
        id: &'a str,
        error: &'a ServiceError,
        at: Timestamp,
    ) -> StoreFuture<'a, bool>;

    /// Every `queued` or `running` job -> `failed` with `ih1004`, giving back
    /// what each was charged; answers how many. Called when a server starts:
    /// jobs are not resumed, and with a store of its own a starting server
    /// knows every unfinished job belonged to a process that died. (A store
    /// shared between instances must scope this to instances known dead.)
    fn mark_interrupted(&self, at: Timestamp) -> StoreFuture<'_, u64>;

    /// How many jobs are `queued` or `running`.
    fn count_active(&self) -> StoreFuture<'_, u64>;

    /// Deletes jobs whose `expires_at` is at or before `now` (they are
    /// unreadable anyway); answers how many.
    fn purge_expired(&self, now: Timestamp) -> StoreFuture<'_, u64>;
}
