//! Running analyses off the request path: the [`JobRunner`] trait the
//! analyzer plugs into, the validated [`UploadRequest`] it receives, and the
//! bounded [`WorkerPool`] that runs it.
//!
//! The pool bounds two things: how many analyses run at once (as many as the
//! instance's one analysis [`Executor`] lets uploads run: every thread but one,
//! see [`crate::executor`]; the analyses run on it, in its upload lane), and how many jobs
//! the instance holds at all, queued or running (`max_jobs`). A submission
//! that finds the instance full is refused with `ih1002` before its body is
//! read, so a busy instance sheds load cheaply. Workers are taken in arrival
//! order (tokio's semaphore is fair).

use crate::executor::{Executor, Lane};
use crate::store::SpeakerTurn;
use attune_core::upload::{Sections, V1Parts};
use attune_core::wire::{Dimension, Feedback, IncludeFlag, Model, Seconds, UploadJobResult};
use attune_core::{ErrorCode, ServiceError};
use bytes::Bytes;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};

/// Which upload route a request came in on; the media rules differ (v2
/// `inter-2` needs an audio track and has a maximum duration).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UploadRoute {
    /// `POST /v1/upload/analyze`: synchronous, video.
    V1,
    /// `POST /v2/upload/analyze`: a job.
    V2,
}

/// The uploaded file, held whole in memory (at most `max_upload_bytes`).
#[derive(Debug, Clone, PartialEq)]
pub struct UploadFile {
    /// The content.
    pub bytes: Bytes,
    /// The file name the client gave, if any (never trusted for the type).
    pub file_name: Option<String>,
    /// The part's declared content type, if any (never trusted either).
    pub content_type: Option<String>,
}

/// An upload request whose form was checked: what the analyzer is asked to
/// do. Built from the raw multipart form by [`crate::upload_form`].
#[derive(Debug, Clone, PartialEq)]
pub struct UploadRequest {
    /// The route it came in on.
    pub route: UploadRoute,
    /// The model: named on v2, `inter-2` on v1 (which reads video).
    pub model: Model,
    /// The file.
    pub file: UploadFile,
    /// The `include[]` flags, without repeats, in the order first given.
    pub include: Vec<IncludeFlag>,
    /// How long the submitter waits for the result (v2; zero on v1).
    pub wait: Duration,
    /// v1 `goal_dimensions[]`, without repeats.
    pub goal_dimensions: Vec<Dimension>,
    /// v1 `conversation_context`, when given and not blank.
    pub conversation_context: Option<String>,
}

impl UploadRequest {
    /// The result sections the include flags ask for.
    pub fn sections(&self) -> Sections {
        Sections::from_flags(&self.include)
    }
}

/// What validation learned about the media, used to charge quotas and
/// budgets before the job is accepted.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ValidatedMedia {
    /// The media's duration in seconds: what the analysis will be billed.
    pub duration_seconds: Seconds,
}

/// One analysis to run.
#[derive(Debug, Clone, PartialEq)]
pub struct JobInput {
    /// The v2 job id; `None` for a synchronous v1 request.
    pub job_id: Option<String>,
    /// The request.
    pub request: UploadRequest,
    /// What validation found.
    pub media: ValidatedMedia,
}

/// What an analysis hands back: the result the interface reports and, for
/// the job's HTML report only, the speaker turns the analysis read.
#[derive(Debug, Clone, PartialEq)]
pub struct JobOutput {
    /// The job's `result`, as the wire carries it.
    pub result: UploadJobResult,
    /// The speaker turns the analysis read (empty when it read none, or when
    /// the runner does not tell voices apart); stored with the job, never sent.
    pub speaker_turns: Vec<SpeakerTurn>,
}

impl From<UploadJobResult> for JobOutput {
    /// A result without speaker turns.
    fn from(result: UploadJobResult) -> JobOutput {
        JobOutput {
            result,
            speaker_turns: Vec::new(),
        }
    }
}

/// The analysis behind the upload routes. Every method is called on a
/// blocking thread, never on an async worker.
pub trait JobRunner: Send + Sync + 'static {
    /// Checks the media before the job is accepted (probe, container, tracks,
    /// duration for the route and model): an error here answers the submit
    /// with its catalog status (`ih4002`, `ih4004`, `ih4007`, `ih5001`,
    /// `ih5002`, `ih5008`, or `ih1003` when no backend serves the model).
    fn validate(&self, request: &UploadRequest) -> Result<ValidatedMedia, ServiceError>;

    /// Analyzes the media. On v2 an error fails the job (the submit already
    /// succeeded); on v1 it answers the request.
    fn run(&self, job: JobInput) -> Result<JobOutput, ServiceError>;

    /// The v1 feedback for a request that gave goal dimensions or a
    /// conversation context, from the whole-file results: `feedback` when a
    /// signal supports advice, else `no_feedback` with a reason. The context,
    /// when given, is the sole source.
    fn feedback(&self, request: &UploadRequest, parts: &V1Parts) -> Result<Feedback, ServiceError>;
}

/// The runner of a server built without an analysis backend: every
/// submission is refused at validation with `ih1003`, the interface's answer
/// when no backend serves the model. Nothing is analyzed or billed.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoBackendRunner;

impl NoBackendRunner {
    fn refusal(model: Model) -> ServiceError {
        ServiceError::with_message(
            ErrorCode::Ih1003,
            format!("No analysis backend serves the model `{model}` on this server."),
        )
    }
}

impl JobRunner for NoBackendRunner {
    fn validate(&self, request: &UploadRequest) -> Result<ValidatedMedia, ServiceError> {
        Err(NoBackendRunner::refusal(request.model))
    }

    fn run(&self, job: JobInput) -> Result<JobOutput, ServiceError> {
        Err(NoBackendRunner::refusal(job.request.model))
    }

    fn feedback(&self, request: &UploadRequest, _: &V1Parts) -> Result<Feedback, ServiceError> {
        Err(NoBackendRunner::refusal(request.model))
    }
}

/// What wakes the shared queue's claimer and waiting submitters on this
/// instance.
#[derive(Debug, Default)]
pub(crate) struct QueueSignals {
    /// A job was enqueued here: look for it now rather than at the next poll.
    pub(crate) submitted: Notify,
    /// A job ended here: submitters waiting on it need not wait for a poll.
    pub(crate) ended: Notify,
}

/// A place among the jobs the instance may hold, taken before a submission's
/// body is read and kept until its analysis ends.
#[derive(Debug)]
pub struct JobSlot {
    _permit: OwnedSemaphorePermit,
}

/// A worker, taken when an analysis starts and given back when it ends.
#[derive(Debug)]
pub struct Worker {
    _permit: OwnedSemaphorePermit,
}

/// The pool has shut down: jobs still waiting for a worker will not run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the worker pool has shut down")]
pub struct PoolClosed;

/// The bounded worker pool (see the module docs).
#[derive(Clone)]
pub struct WorkerPool {
    /// The analysis.
    runner: Arc<dyn JobRunner>,
    /// One permit per job the instance may hold (queued or running).
    slots: Arc<Semaphore>,
    /// One permit per analysis that may run at once.
    workers: Arc<Semaphore>,
    /// The permits `slots` and `workers` started with, to read occupancy.
    capacity: (usize, usize),
    /// The instance's analysis executor, shared with stream sessions.
    executor: Executor,
}

impl std::fmt::Debug for WorkerPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkerPool")
            .field("free_slots", &self.slots.available_permits())
            .field("free_workers", &self.workers.available_permits())
            .finish_non_exhaustive()
    }
}

fn analysis_failed() -> ServiceError {
    ServiceError::with_message(
        ErrorCode::Ih1001,
        "The analysis failed unexpectedly. Retry with exponential backoff.",
    )
}

fn panicked(what: &str, error: tokio::task::JoinError) -> ServiceError {
    tracing::error!(%error, "the analysis {what} panicked");
    analysis_failed()
}

impl WorkerPool {
    /// A pool running `runner` on `executor`, as many analyses at once as the
    /// executor lets uploads run, holding at most `max_jobs` jobs (at least
    /// that many).
    pub fn new(runner: Arc<dyn JobRunner>, executor: Executor, max_jobs: usize) -> WorkerPool {
        let workers = executor.upload_capacity();
        let max_jobs = max_jobs.max(workers);
        WorkerPool {
            runner,
            slots: Arc::new(Semaphore::new(max_jobs)),
            workers: Arc::new(Semaphore::new(workers)),
            capacity: (max_jobs, workers),
            executor,
        }
    }

    /// The executor the analyses run on.
    pub fn executor(&self) -> &Executor {
        &self.executor
    }

    /// How many jobs this instance holds (queued or running) and how many
    /// analyses run now, v1's synchronous ones included.
    pub fn occupancy(&self) -> (usize, usize) {
        let held = self
            .capacity
            .0
            .saturating_sub(self.slots.available_permits());
        let running = self
            .capacity
            .1
            .saturating_sub(self.workers.available_permits());
        (held, running)
    }

    /// A slot for one more job, or `ih1002` when the instance holds as many
    /// as it may.
    pub fn reserve(&self) -> Result<JobSlot, ServiceError> {
        Arc::clone(&self.slots)
            .try_acquire_owned()
            .map(|permit| JobSlot { _permit: permit })
            .map_err(|_| attune_core::backlog::jobs_full())
    }

    /// Waits for a free worker (in arrival order), or fails once the pool has
    /// shut down.
    pub async fn worker(&self) -> Result<Worker, PoolClosed> {
        Arc::clone(&self.workers)
            .acquire_owned()
            .await
            .map(|permit| Worker { _permit: permit })
            .map_err(|_| PoolClosed)
    }

    /// Stops handing out workers: jobs still waiting will not run. Running
    /// analyses finish.
    pub fn close(&self) {
        self.workers.close();
    }

    /// Validates `request` on a blocking thread; answers it back with what
    /// validation found.
    pub async fn validate(
        &self,
        request: UploadRequest,
    ) -> Result<(UploadRequest, ValidatedMedia), ServiceError> {
        let runner = Arc::clone(&self.runner);
        let (request, media) = tokio::task::spawn_blocking(move || {
            let media = runner.validate(&request);
            (request, media)
        })
        .await
        .map_err(|e| panicked("validation", e))?;
        Ok((request, media?))
    }

    /// Runs an analysis on the executor's upload lane. The caller holds a
    /// [`Worker`].
    pub async fn run(&self, _worker: &Worker, input: JobInput) -> Result<JobOutput, ServiceError> {
        let runner = Arc::clone(&self.runner);
        self.executor
            .run(Lane::Upload, move || runner.run(input))
            .await
            .unwrap_or_else(|| {
                tracing::error!("the analysis run panicked");
                Err(analysis_failed())
            })
    }

    /// Asks the runner for v1 feedback on a blocking thread.
    pub async fn feedback(
        &self,
        request: UploadRequest,
        parts: V1Parts,
    ) -> Result<(UploadRequest, V1Parts, Feedback), ServiceError> {
        let runner = Arc::clone(&self.runner);
        let (request, parts, feedback) = tokio::task::spawn_blocking(move || {
            let feedback = runner.feedback(&request, &parts);
            (request, parts, feedback)
        })
        .await
        .map_err(|e| panicked("feedback", e))?;
        Ok((request, parts, feedback?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> UploadRequest {
        UploadRequest {
            route: UploadRoute::V2,
            model: Model::Inter2Audio,
            file: UploadFile {
                bytes: Bytes::from_static(b"RIFF"),
                file_name: None,
                content_type: None,
            },
            include: vec![],
            wait: Duration::ZERO,
            goal_dimensions: vec![],
            conversation_context: None,
        }
    }

    #[tokio::test]
    async fn a_full_instance_refuses_with_ih1002_until_a_slot_frees() {
        let pool = WorkerPool::new(Arc::new(NoBackendRunner), Executor::new(1), 2);
        let first = pool.reserve().unwrap();
        let _second = pool.reserve().unwrap();
        assert_eq!(pool.reserve().unwrap_err().code, ErrorCode::Ih1002);
        drop(first);
        assert!(pool.reserve().is_ok());
    }

    #[tokio::test]
    async fn a_closed_pool_hands_out_no_workers() {
        let pool = WorkerPool::new(Arc::new(NoBackendRunner), Executor::new(1), 1);
        let worker = pool.worker().await.unwrap();
        let waiting = tokio::spawn({
            let pool = pool.clone();
            async move { pool.worker().await.map(drop) }
        });
        pool.close();
        assert_eq!(waiting.await.unwrap(), Err(PoolClosed));
        drop(worker);
    }

    #[tokio::test]
    async fn without_a_backend_validation_answers_ih1003_naming_the_model() {
        let pool = WorkerPool::new(Arc::new(NoBackendRunner), Executor::new(1), 1);
        let error = pool.validate(request()).await.unwrap_err();
        assert_eq!(error.code, ErrorCode::Ih1003);
        assert!(
            error.message().contains("inter-2-audio"),
            "{}",
            error.message()
        );
    }
}
