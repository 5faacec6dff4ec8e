//! The upload routes and job reads: `POST /v2/upload/analyze` (a job),
//! `GET /v2/upload/jobs/{job_id}` and `POST /v1/upload/analyze`
//! (synchronous), and the task that carries a job through its states.
//!
//! A submission goes: scope `service.upload`; quota and budget already used
//! up (`ih3003`, `ih3004`, `ih3006`); a job slot (`ih1002`); the streamed
//! form, checked (`ih4001`, `ih4003`, `ih4005`, `ih4020`, `ih2003`); the
//! runner's media validation (`ih4002`, `ih4004`, `ih4007`, `ih5001`,
//! `ih5002`, `ih5008`, `ih1003`); the media's duration charged to the
//! account and the token (`ih3003`, `ih3004`, `ih3006`); then the job is
//! recorded (`ih1003` if the store fails) and handed to a worker. Charges are
//! given back when the analysis fails.
//!
//! A 202 answers the envelope as recorded at submission, `queued`, as the
//! interface's response table says; later states are read from the job.
//!
//! On a store that shares its queue (PostgreSQL), the job is recorded with
//! its media instead of being handed to a local worker, and every instance
//! runs [`claim_jobs`]: whichever has a free worker first takes it. A
//! submitter's `wait_seconds` then reads the job from the store until it
//! ends, woken early when this instance ended it and otherwise every
//! [`QUEUE_POLL`], so it works wherever the job runs.

use crate::app::{json_response, App, Caller};
use crate::clock::{utc_day, Clock};
use crate::http_error::store_unavailable;
use crate::http_error::{Body, HttpError};
use crate::ids::{is_job_id, new_job_id, CorrelationId};
use crate::jobs::{
    JobInput, JobSlot, PoolClosed, UploadFile, UploadRequest, UploadRoute, ValidatedMedia, Worker,
    WorkerPool,
};
use crate::limits::quota_refusal;
use crate::store::{ClaimedJob, JobRecord, JobStore, NewJob, QueuedMedia, QuotaOutcome};
use crate::tokens::charge_video_budget;
use crate::upload_form::{read_form, RawUploadForm};
use attune_core::feedback::not_requested;
use attune_core::upload::{v1_parts, v1_result};
use attune_core::wire::{AnalysisResult, Timestamp, UploadJobResponse, UploadJobStatus};
use attune_core::{access, backlog, billing};
use attune_core::{ErrorCode, ServiceError};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use std::sync::Arc;
use std::time::Duration;
use time::Date;
use tokio::sync::oneshot;
use tokio::task::JoinSet;
use tracing::Instrument;

/// How long a job stays readable after submission.
pub const JOB_LIFETIME_SECONDS: i64 = 3600;

/// On a shared queue: how often an idle instance looks for queued jobs, and
/// how often a waiting submitter reads a job another instance may be running.
/// Submissions and job ends on the same instance wake them at once.
pub const QUEUE_POLL: Duration = Duration::from_millis(250);

/// What an analysis was charged, to give back if it fails.
#[derive(Debug, Clone)]
struct Charge {
    account_id: i64,
    day: Date,
    seconds: f64,
    token_id: Option<String>,
}

impl Charge {
    async fn refund(&self, app: &App) {
        if let Err(error) = app
            .services
            .usage
            .refund_analysis_seconds(self.account_id, self.day, self.seconds)
            .await
        {
            tracing::error!(%error, account_id = self.account_id, "usage refund failed");
        }
        if let Some(token_id) = &self.token_id {
            if let Err(error) = app
                .services
                .tokens
                .refund_video_seconds(token_id, self.seconds)
                .await
            {
                tracing::error!(%error, %token_id, "token budget refund failed");
            }
        }
    }
}

/// Refuses before the body is read when the account's quotas or the token's
/// budget are already used up.
async fn check_remaining(app: &App, caller: &Caller) -> Result<(), HttpError> {
    let principal = &caller.principal;
    if let Some(grant) = principal.token() {
        if billing::is_spent(grant.video_seconds_left) {
            return Err(HttpError::new(billing::upload_refused()));
        }
    }
    let usage = app
        .services
        .usage
        .usage(principal.account_id(), utc_day(caller.now))
        .await
        .map_err(|error| store_unavailable(&error))?;
    let limits = principal.account().limits;
    if usage.total_seconds >= limits.analysis_quota_seconds as f64 {
        quota_refusal(QuotaOutcome::TotalExceeded, caller.now)?;
    }
    if usage.day_seconds >= limits.daily_quota_seconds as f64 {
        quota_refusal(QuotaOutcome::DailyExceeded, caller.now)?;
    }
    Ok(())
}

/// Charges `seconds` of analysis to the token's budget and the account's
/// quotas, all or nothing.
async fn charge(app: &App, caller: &Caller, seconds: f64) -> Result<Charge, HttpError> {
    let principal = &caller.principal;
    let charge = Charge {
        account_id: principal.account_id(),
        day: utc_day(caller.now),
        seconds,
        token_id: principal.token().map(|grant| grant.id.clone()),
    };
    if let Some(token_id) = &charge.token_id {
        charge_video_budget(app.services.tokens.as_ref(), token_id, seconds).await?;
    }
    let outcome = app
        .services
        .usage
        .charge_analysis_seconds(charge.account_id, charge.day, seconds)
        .await;
    let refused = match outcome {
        Ok(QuotaOutcome::Granted) => return Ok(charge),
        Ok(outcome) => quota_refusal(outcome, caller.now).err(),
        Err(error) => Some(HttpError::new(store_unavailable(&error))),
    };
    if let Some(token_id) = &charge.token_id {
        if let Err(error) = app
            .services
            .tokens
            .refund_video_seconds(token_id, seconds)
            .await
        {
            tracing::error!(%error, %token_id, "token budget refund failed");
        }
    }
    Err(refused.expect("a refused charge has an error"))
}

/// The largest file the caller may upload: the deployment's limit, or the
/// client token's `max_bytes` when smaller.
fn file_limit(app: &App, caller: &Caller) -> u64 {
    caller
        .principal
        .token()
        .and_then(|grant| grant.caps.max_bytes)
        .map_or(app.max_upload_bytes, |cap| cap.min(app.max_upload_bytes))
}

/// The job envelope of a record.
fn envelope(record: &JobRecord, docs_url: &str) -> UploadJobResponse {
    UploadJobResponse {
        job_id: record.id.clone(),
        status: record.status,
        model: record.model,
        created_at: record.created_at,
        expires_at: record.expires_at,
        status_url: UploadJobResponse::status_url_for(&record.id),
        result: match record.status {
            UploadJobStatus::Completed => record.result.clone(),
            _ => None,
        },
        error: match (record.status, &record.error) {
            (UploadJobStatus::Failed, Some(error)) => {
                Some(error.to_response(&record.correlation_id, docs_url))
            }
            _ => None,
        },
    }
}

/// `POST /v2/upload/analyze`.
pub(crate) async fn submit_v2(
    app: &App,
    caller: &Caller,
    correlation_id: &CorrelationId,
    request: Request<Incoming>,
) -> Result<Response<Body>, HttpError> {
    let principal = &caller.principal;
    access::check_upload(principal.scopes())?;
    check_remaining(app, caller).await?;
    let slot = app.pool.reserve()?;
    let (parts, body) = request.into_parts();
    let mut model_check = |form: &RawUploadForm| match form.model.is_empty() {
        true => Ok(()),
        false => form.v2_model(principal).map(drop),
    };
    let form = read_form(
        body,
        &parts.headers,
        file_limit(app, caller),
        &mut model_check,
    )
    .await?;
    let upload = form.check_v2(principal)?;
    let (upload, media) = app.pool.validate(upload).await?;
    let charge = charge(app, caller, media.duration_seconds).await?;

    let created_at = caller.now;
    let job = NewJob {
        id: new_job_id(),
        account_id: principal.account_id(),
        model: upload.model,
        correlation_id: correlation_id.as_str().to_owned(),
        created_at,
        expires_at: created_at.plus_seconds(JOB_LIFETIME_SECONDS),
        billed_seconds: charge.seconds,
        billed_day: charge.day,
        token_id: charge.token_id.clone(),
    };
    if app.services.jobs.shares_queue() {
        return enqueue_shared(app, slot, job, upload, media, charge).await;
    }
    let record = match app.services.jobs.create_job(job).await {
        Ok(record) => record,
        Err(error) => {
            charge.refund(app).await;
            return Err(store_unavailable(&error).into());
        }
    };
    job_recorded(app, &record, media).await;

    let wait = upload.wait;
    let finished = spawn_job(
        app,
        slot,
        correlation_id,
        JobInput {
            job_id: Some(record.id.clone()),
            request: upload,
            media,
        },
    );
    if !wait.is_zero() && matches!(tokio::time::timeout(wait, finished).await, Ok(Ok(()))) {
        match app.services.jobs.job(&record.id).await {
            Ok(Some(done)) if done.status.is_terminal() => {
                return Ok(json_response(
                    StatusCode::OK,
                    &envelope(&done, &app.docs_url),
                ));
            }
            Ok(_) => {}
            Err(error) => return Err(store_unavailable(&error).into()),
        }
    }
    Ok(json_response(
        StatusCode::ACCEPTED,
        &envelope(&record, &app.docs_url),
    ))
}

/// Purges expired jobs and logs a new one, after it is recorded.
async fn job_recorded(app: &App, record: &JobRecord, media: ValidatedMedia) {
    if let Err(error) = app.services.jobs.purge_expired(record.created_at).await {
        tracing::warn!(%error, "expired jobs not purged");
    }
    tracing::info!(
        job_id = %record.id,
        model = %record.model,
        duration_seconds = media.duration_seconds,
        "job queued"
    );
}

/// The rest of a submission on a shared queue: the job and its media go to
/// the store for any instance to claim, and `wait_seconds` reads it there.
async fn enqueue_shared(
    app: &App,
    slot: JobSlot,
    job: NewJob,
    upload: UploadRequest,
    media: ValidatedMedia,
    charge: Charge,
) -> Result<Response<Body>, HttpError> {
    let wait = upload.wait;
    let queued = QueuedMedia {
        bytes: upload.file.bytes,
        file_name: upload.file.file_name,
        content_type: upload.file.content_type,
        include: upload.include,
        duration_seconds: media.duration_seconds,
    };
    let record = match app.services.jobs.enqueue_job(job, queued).await {
        Ok(record) => record,
        Err(error) => {
            charge.refund(app).await;
            return Err(store_unavailable(&error).into());
        }
    };
    // The upload is in the store now; the slot bounded what this instance
    // holds in memory, and that is nothing any more.
    drop(slot);
    app.queue.submitted.notify_one();
    job_recorded(app, &record, media).await;
    if !wait.is_zero() {
        if let Some(done) = wait_for_end(app, &record.id, wait).await? {
            return Ok(json_response(
                StatusCode::OK,
                &envelope(&done, &app.docs_url),
            ));
        }
    }
    Ok(json_response(
        StatusCode::ACCEPTED,
        &envelope(&record, &app.docs_url),
    ))
}

/// Reads job `id` until it ends or `wait` passes: `None` if it did not end
/// in time.
async fn wait_for_end(app: &App, id: &str, wait: Duration) -> Result<Option<JobRecord>, HttpError> {
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        // Registered before the read, so an end recorded between the read
        // and the pause still wakes this submitter.
        let ended = app.queue.ended.notified();
        tokio::pin!(ended);
        ended.as_mut().enable();
        match app.services.jobs.job(id).await {
            Ok(Some(record)) if record.status.is_terminal() => return Ok(Some(record)),
            Ok(_) => {}
            Err(error) => return Err(store_unavailable(&error).into()),
        }
        let now = tokio::time::Instant::now();
        if now >= deadline {
            return Ok(None);
        }
        tokio::select! {
            () = ended => {}
            () = tokio::time::sleep((deadline - now).min(QUEUE_POLL)) => {}
        }
    }
}

/// An instance's claimer on a shared queue: whenever a worker is free, takes
/// the oldest queued job from the store and runs it. Ends once the pool
/// closes at shutdown, after the jobs it claimed have ended; jobs still
/// queued stay in the store for the other instances.
pub(crate) async fn claim_jobs(app: Arc<App>) {
    let mut running = JoinSet::new();
    loop {
        let Ok(worker) = app.pool.worker().await else {
            break;
        };
        while running.try_join_next().is_some() {}
        let submitted = app.queue.submitted.notified();
        tokio::pin!(submitted);
        submitted.as_mut().enable();
        match app.services.jobs.claim_job(app.services.clock.now()).await {
            Ok(Some(job)) => {
                let span = tracing::info_span!("job", correlation_id = %job.correlation_id);
                running.spawn(run_claimed(Arc::clone(&app), worker, job).instrument(span));
            }
            Ok(None) => {
                drop(worker);
                tokio::select! {
                    () = submitted => {}
                    () = tokio::time::sleep(QUEUE_POLL) => {}
                }
            }
            Err(error) => {
                drop(worker);
                tracing::error!(%error, "cannot claim a queued job");
                tokio::time::sleep(QUEUE_POLL).await;
            }
        }
    }
    while running.join_next().await.is_some() {}
}

/// Runs a job claimed from the shared queue (already `running` here) and
/// records its end.
async fn run_claimed(app: Arc<App>, worker: Worker, job: ClaimedJob) {
    tracing::info!(job_id = %job.id, "job claimed");
    let ClaimedJob {
        id,
        model,
        media,
        created_at,
        ..
    } = job;
    // Accepted on whichever instance, waited in the shared queue until now;
    // clocks of two machines may disagree a little, so never below zero.
    let waited = app.services.clock.now().unix_millis() - created_at.unix_millis();
    app.metrics
        .observe_queue_wait(Duration::from_millis(u64::try_from(waited).unwrap_or(0)));
    let input = JobInput {
        job_id: Some(id.clone()),
        request: UploadRequest {
            route: UploadRoute::V2,
            model,
            file: UploadFile {
                bytes: media.bytes,
                file_name: media.file_name,
                content_type: media.content_type,
            },
            include: media.include,
            wait: Duration::ZERO,
            goal_dimensions: Vec::new(),
            conversation_context: None,
        },
        media: ValidatedMedia {
            duration_seconds: media.duration_seconds,
        },
    };
    let outcome = app.pool.run(&worker, input).await;
    drop(worker);
    let jobs = app.services.jobs.as_ref();
    record_end(jobs, &id, outcome, app.services.clock.now()).await;
    app.queue.ended.notify_waiters();
}

/// Starts the task that runs a recorded job; the receiver resolves once its
/// end state is recorded. The task logs under the submitting request's
/// correlation id, which the job's error quotes.
fn spawn_job(
    app: &App,
    slot: JobSlot,
    correlation_id: &CorrelationId,
    input: JobInput,
) -> oneshot::Receiver<()> {
    let (finished, receiver) = oneshot::channel();
    let jobs = Arc::clone(&app.services.jobs);
    let clock = Arc::clone(&app.services.clock);
    let pool = app.pool.clone();
    let metrics = Arc::clone(&app.metrics);
    let accepted = std::time::Instant::now();
    let span = tracing::info_span!("job", correlation_id = %correlation_id);
    tokio::spawn(
        async move {
            let wait = || metrics.observe_queue_wait(accepted.elapsed());
            run_job(jobs.as_ref(), clock.as_ref(), &pool, slot, input, wait).await;
            let _ = finished.send(());
        }
        .instrument(span),
    );
    receiver
}

/// Carries a job from `queued` to its end state.
/// `started` is called once a worker takes the job, to record its wait.
/// The job's `slot` is given back before its end state is recorded: a client
/// that reads `completed` and submits at once finds the slot free.
async fn run_job(
    jobs: &dyn JobStore,
    clock: &dyn Clock,
    pool: &WorkerPool,
    slot: JobSlot,
    input: JobInput,
    started: impl FnOnce(),
) {
    let Some(id) = input.job_id.clone() else {
        return;
    };
    let worker = match pool.worker().await {
        Ok(worker) => {
            started();
            worker
        }
        Err(PoolClosed) => {
            // Shutting down: the job will not run; say so now rather than at
            // the next start.
            drop(slot);
            record_end(
                jobs,
                &id,
                Err(ServiceError::new(ErrorCode::Ih1004)),
                clock.now(),
            )
            .await;
            return;
        }
    };
    match jobs.mark_running(&id, clock.now()).await {
        Ok(true) => {}
        Ok(false) => {
            tracing::warn!(job_id = %id, "job no longer queued; not running it");
            return;
        }
        // The outcome may still be recordable; the analysis is worth running.
        Err(error) => tracing::error!(%error, job_id = %id, "job not marked running"),
    }
    let outcome = pool.run(&worker, input).await;
    drop(worker);
    drop(slot);
    record_end(jobs, &id, outcome, clock.now()).await;
}

/// First pause before recording a job's outcome again after the store refused it.
const RECORD_RETRY_FIRST_PAUSE: std::time::Duration = std::time::Duration::from_millis(100);

/// Longest pause between two attempts to record an outcome.
const RECORD_RETRY_MAX_PAUSE: std::time::Duration = std::time::Duration::from_secs(5);

/// How long an outcome is retried: as long as a job stays readable (`expires_at`).
const RECORD_RETRY_FOR: std::time::Duration = std::time::Duration::from_secs(3600);

async fn record_end(
    jobs: &dyn JobStore,
    id: &str,
    outcome: Result<crate::jobs::JobOutput, ServiceError>,
    at: Timestamp,
) {
    // A store that cannot write (a full disk, a lost database) may come back: the outcome
    // is kept and retried, with a growing pause, rather than leaving the job `running`
    // until the next restart fails it with `ih1004`.
    let mut pause = RECORD_RETRY_FIRST_PAUSE;
    let started = std::time::Instant::now();
    let recorded = loop {
        let recorded = match &outcome {
            Ok(output) => {
                jobs.mark_completed(id, &output.result, &output.speaker_turns, at)
                    .await
            }
            Err(error) => jobs.mark_failed(id, error, at).await,
        };
        match recorded {
            Err(error) if started.elapsed() < RECORD_RETRY_FOR => {
                tracing::warn!(%error, job_id = %id, retry_in_ms = pause.as_millis() as u64, "job outcome not recorded yet");
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(RECORD_RETRY_MAX_PAUSE);
            }
            recorded => break recorded,
        }
    };
    match (recorded, &outcome) {
        (Ok(true), Ok(_)) => tracing::info!(job_id = %id, "job completed"),
        (Ok(true), Err(error)) => {
            tracing::info!(job_id = %id, error_id = %error.code, "job failed");
        }
        (Ok(false), _) => {
            tracing::warn!(job_id = %id, "job already ended elsewhere; outcome dropped")
        }
        (Err(error), _) => tracing::error!(%error, job_id = %id, "job outcome not recorded"),
    }
}

fn job_not_found() -> HttpError {
    HttpError::new(ErrorCode::Ih4021)
}

/// `GET /v2/upload/jobs/{job_id}`: the envelope of a job of the caller's
/// account that has not expired; `ih4021` for anything else, alike.
pub(crate) async fn read_job(
    app: &App,
    caller: &Caller,
    job_id: &str,
) -> Result<Response<Body>, HttpError> {
    let record = readable_job(app, caller, job_id).await?;
    Ok(json_response(
        StatusCode::OK,
        &envelope(&record, &app.docs_url),
    ))
}

/// The job `job_id` if the caller may read it (the upload scope, its own
/// account, not expired); `ih4021` for anything else, alike. Shared by the
/// job route and its HTML report.
pub(crate) async fn readable_job(
    app: &App,
    caller: &Caller,
    job_id: &str,
) -> Result<JobRecord, HttpError> {
    access::check_upload(caller.principal.scopes())?;
    if !is_job_id(job_id) {
        return Err(job_not_found());
    }
    let record = app
        .services
        .jobs
        .job(job_id)
        .await
        .map_err(|error| store_unavailable(&error))?;
    match record {
        Some(record)
            if record.account_id == caller.principal.account_id()
                && caller.now < record.expires_at =>
        {
            Ok(record)
        }
        _ => Err(job_not_found()),
    }
}

/// `POST /v1/upload/analyze`: the same checks, the same runner, run while
/// the request waits.
pub(crate) async fn analyze_v1(
    app: &App,
    caller: &Caller,
    request: Request<Incoming>,
) -> Result<Response<Body>, HttpError> {
    access::check_upload(caller.principal.scopes())?;
    check_remaining(app, caller).await?;
    let _slot = app.pool.reserve()?;
    let (parts, body) = request.into_parts();
    let form = read_form(body, &parts.headers, file_limit(app, caller), &mut |_| {
        Ok(())
    })
    .await?;
    let upload = form.check_v1()?;
    let (upload, media) = app.pool.validate(upload).await?;
    let charge = charge(app, caller, media.duration_seconds).await?;
    match run_v1(app, upload, media).await {
        Ok(result) => Ok(json_response(StatusCode::OK, &result)),
        Err(error) => {
            charge.refund(app).await;
            Err(error)
        }
    }
}

async fn run_v1(
    app: &App,
    upload: UploadRequest,
    media: crate::jobs::ValidatedMedia,
) -> Result<AnalysisResult, HttpError> {
    let worker = app
        .pool
        .worker()
        .await
        .map_err(|PoolClosed| HttpError::new(backlog::shutting_down()))?;
    let sections = upload.sections();
    let result = app
        .pool
        .run(
            &worker,
            JobInput {
                job_id: None,
                request: upload.clone(),
                media,
            },
        )
        .await?
        .result;
    let parts = v1_parts(&result.windows, result.duration_seconds, sections);
    let (parts, feedback) = match not_requested(
        &upload.goal_dimensions,
        upload.conversation_context.as_deref(),
    ) {
        Some(none) => (parts, none),
        None => {
            let (_, parts, feedback) = app.pool.feedback(upload, parts).await?;
            (parts, feedback)
        }
    };
    drop(worker);
    Ok(v1_result(parts, feedback))
}
