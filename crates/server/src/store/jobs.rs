//! v2 upload jobs as the store keeps them, and the [`JobStore`] trait.
//!
//! Every state change is conditional on the state it leaves, so a late writer
//! cannot undo a later decision: a worker that finishes a job the next
//! process already declared interrupted (`ih1004`) changes nothing.
//!
//! A store shared by several instances also keeps the queue itself: a job is
//! recorded with its media ([`JobStore::enqueue_job`]) and any instance with a
//! free worker takes the oldest one ([`JobStore::claim_job`]). The embedded
//! store does not: its jobs run in the process that accepted them, as before.

use super::{StoreError, StoreFuture};
use attune_core::wire::{IncludeFlag, Model, Seconds, Timestamp, UploadJobResult, UploadJobStatus};
use attune_core::ServiceError;
use bytes::Bytes;
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
    /// The speaker turns the analysis read, kept beside a completed job's
    /// result for its HTML report (never on the wire: the interface's result
    /// has no field for them). `None` for a job not completed, or completed
    /// before stores kept turns.
    pub speaker_turns: Option<Vec<SpeakerTurn>>,
}

/// One stretch of speech by one voice, as far as the analysis can tell
/// voices apart: what the HTML report draws as a speaker lane.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SpeakerTurn {
    /// The voice, counted from 0 in order of first appearance.
    pub speaker: u32,
    /// Start, seconds.
    pub start: Seconds,
    /// End, seconds.
    pub end: Seconds,
}

/// The stored form of a job's speaker turns: a JSON array of `[start, end,
/// speaker]` triples, so a store keeps them in one text column.
pub(super) fn encode_turns(turns: &[SpeakerTurn]) -> String {
    let triples: Vec<(Seconds, Seconds, u32)> =
        turns.iter().map(|t| (t.start, t.end, t.speaker)).collect();
    // Numbers in arrays: serialising cannot fail (non-finite numbers become `null`, which
    // `decode_turns` refuses rather than invent a time).
    serde_json::to_string(&triples).expect("turns serialise")
}

/// Reads what [`encode_turns`] wrote.
pub(super) fn decode_turns(text: &str) -> Result<Vec<SpeakerTurn>, serde_json::Error> {
    let triples: Vec<(Seconds, Seconds, u32)> = serde_json::from_str(text)?;
    Ok(triples
        .into_iter()
        .map(|(start, end, speaker)| SpeakerTurn {
            speaker,
            start,
            end,
        })
        .collect())
}

/// What an instance needs to run a job it did not accept: the upload and
/// what validation found, kept in a shared store while the job is queued.
#[derive(Debug, Clone, PartialEq)]
pub struct QueuedMedia {
    /// The uploaded file (at most the deployment's upload limit, 32 MB by
    /// default).
    pub bytes: Bytes,
    /// The file name the client gave, if any.
    pub file_name: Option<String>,
    /// The part's declared content type, if any.
    pub content_type: Option<String>,
    /// The `include[]` flags, in the order given.
    pub include: Vec<IncludeFlag>,
    /// The media's duration as validation measured it, in seconds.
    pub duration_seconds: f64,
}

/// A job taken from a shared queue: now `running` on the claiming instance,
/// its media removed from the store.
#[derive(Debug, Clone, PartialEq)]
pub struct ClaimedJob {
    /// The job id.
    pub id: String,
    /// The model submitted.
    pub model: Model,
    /// The submitting request's correlation id, for the job's log lines.
    pub correlation_id: String,
    /// When the job was accepted (by the accepting instance's clock), so the
    /// claimer can tell how long it waited in the queue.
    pub created_at: Timestamp,
    /// The upload.
    pub media: QueuedMedia,
}

/// v2 upload jobs.
pub trait JobStore: Send + Sync {
    /// Records a job `queued`.
    fn create_job(&self, job: NewJob) -> StoreFuture<'_, JobRecord>;

    /// The job with id `id`, expired or not.
    fn job<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<JobRecord>>;

    /// `queued` -> `running`; answers whether the job was queued.
    fn mark_running<'a>(&'a self, id: &'a str, at: Timestamp) -> StoreFuture<'a, bool>;

    /// `running` -> `completed` with `result` and the speaker turns its
    /// analysis read (kept for [`JobRecord::speaker_turns`]); answers whether
    /// the job was running.
    fn mark_completed<'a>(
        &'a self,
        id: &'a str,
        result: &'a UploadJobResult,
        speaker_turns: &'a [SpeakerTurn],
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

    /// When the oldest job still `queued` was accepted (on a shared store,
    /// by any instance); `None` when no job waits. What `/metrics` exports
    /// as the queue's oldest age. A store that cannot tell answers `None`.
    fn oldest_queued(&self) -> StoreFuture<'_, Option<Timestamp>> {
        Box::pin(async { Ok(None) })
    }

    /// Deletes jobs whose `expires_at` is at or before `now` (they are
    /// unreadable anyway), with any media still queued; answers how many.
    fn purge_expired(&self, now: Timestamp) -> StoreFuture<'_, u64>;

    /// Whether queued jobs live in this store for any instance to claim
    /// ([`JobStore::enqueue_job`], [`JobStore::claim_job`]). When not, the
    /// accepting process runs its jobs itself.
    fn shares_queue(&self) -> bool {
        false
    }

    /// Records a job `queued` with its media, for whichever instance claims
    /// it first. Stores that do not share their queue refuse.
    fn enqueue_job(&self, job: NewJob, media: QueuedMedia) -> StoreFuture<'_, JobRecord> {
        let _ = (job, media);
        Box::pin(async {
            Err(StoreError::Incompatible(
                "this store does not keep a shared job queue".into(),
            ))
        })
    }

    /// Takes the oldest unexpired job queued with its media: `queued` ->
    /// `running` on this instance (whose lease now covers it), the media
    /// handed over and removed from the store. Concurrent claimers never get
    /// the same job. `None` when nothing waits.
    fn claim_job(&self, at: Timestamp) -> StoreFuture<'_, Option<ClaimedJob>> {
        let _ = at;
        Box::pin(async { Ok(None) })
    }
}
